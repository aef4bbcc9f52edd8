// The progress bar of long commands (`emo optimize`): one line on stderr, redrawn in place
// ("\r", at most ~10 times a second, clipped to the terminal's width), drawn only when stderr is a
// terminal and --quiet was not given; finished with a newline. Never on stdout, whose JSON
// (`--json -`) or text stays as it is.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/progress.h"

namespace emo::cli {

class ProgressBar final : public ProgressSink {
 public:
  /// A bar on file descriptor `fd`, enabled when `fd` is a terminal (isatty) and not `quiet`.
  ProgressBar(int fd, bool quiet);
  ~ProgressBar() override;  ///< finish()
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  bool enabled() const { return enabled_; }
  /// Text before the stage, e.g. "optimize [2/3]".
  void set_prefix(std::string prefix) { prefix_ = std::move(prefix); }
  /// Redraws the line when the stage changes, the stage ends, or 100 ms have passed since the
  /// last draw.
  void update(std::string_view stage, std::int64_t done, std::int64_t total) override;
  /// Draws the last state (when not drawn yet) and ends the line with a newline, when anything
  /// was drawn since the last finish(); call it before writing other output to the terminal.
  void finish();

 private:
  void draw();
  int fd_;
  bool enabled_;
  bool drawn_ = false;    ///< A line is on screen without its newline.
  bool pending_ = false;  ///< The last update is not drawn yet.
  std::string prefix_, stage_;
  std::int64_t done_ = 0, total_ = 0;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace emo::cli
