#include "cli/progress_bar.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace emo::cli {
namespace {

constexpr auto kRedrawEvery = std::chrono::milliseconds(100);

/// Columns of the terminal on `fd` (TIOCGWINSZ), else $COLUMNS, else 80.
int terminal_columns(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* c = std::getenv("COLUMNS"); c != nullptr && std::atoi(c) > 0) return std::atoi(c);
  return 80;
}

/// Writes all of `text` to `fd`, ignoring errors (progress is best effort).
void write_all(int fd, const std::string& text) {
  std::size_t at = 0;
  while (at < text.size()) {
    const ssize_t n = ::write(fd, text.data() + at, text.size() - at);
    if (n <= 0) return;
    at += static_cast<std::size_t>(n);
  }
}

}  // namespace

ProgressBar::ProgressBar(int fd, bool quiet) : fd_(fd), enabled_(!quiet && ::isatty(fd) == 1) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(std::string_view stage, std::int64_t done, std::int64_t total) {
  if (!enabled_ || (stage == stage_ && done == done_ && total == total_)) return;  // nothing new
  const bool new_stage = stage != stage_;
  stage_ = stage;
  done_ = done;
  total_ = total;
  pending_ = true;
  if (new_stage || done >= total || std::chrono::steady_clock::now() - last_draw_ >= kRedrawEvery) draw();
}

void ProgressBar::draw() {
  // One column short of the width: a full last column makes some terminals wrap.
  const int width = terminal_columns(fd_) - 1;
  // "\033[K" clears the rest of a longer previous line.
  write_all(fd_, "\r" + progress_line(prefix_, stage_, done_, total_, width) + "\033[K");
  drawn_ = true;
  pending_ = false;
  last_draw_ = std::chrono::steady_clock::now();
}

void ProgressBar::finish() {
  if (!enabled_ || !drawn_) return;
  if (pending_) draw();
  write_all(fd_, "\n");
  drawn_ = false;
  stage_.clear();
}

}  // namespace emo::cli
