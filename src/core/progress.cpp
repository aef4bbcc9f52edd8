#include "core/progress.h"

#include <algorithm>

#include <fmt/format.h>

namespace emo {

void Progress::start(std::string_view stage, std::int64_t total) {
  stage_ = stage;
  done_ = 0;
  total_ = std::max<std::int64_t>(1, total);
  report();
}

void Progress::expect(std::int64_t n) {
  if (stage_.empty() || done_ + n <= total_) return;
  total_ = done_ + n;
  report();
}

void Progress::step(std::int64_t n) {
  if (stage_.empty()) return;
  done_ += std::max<std::int64_t>(0, n);
  total_ = std::max(total_, done_);
  report();
}

void Progress::finish() {
  if (stage_.empty()) return;
  done_ = total_;
  report();
}

void Progress::report() const {
  if (sink_ != nullptr) sink_->update(stage_, done_, total_);
}

std::string progress_line(std::string_view prefix, std::string_view stage, std::int64_t done, std::int64_t total,
                          int width) {
  constexpr int kMaxCells = 30, kMinCells = 10;
  const std::string head = prefix.empty() ? std::string(stage) : fmt::format("{} {}", prefix, stage);
  const std::string counts = fmt::format("{}/{}", done, total);
  const int fixed = static_cast<int>(head.size() + counts.size()) + 4;  // " [" and "] "
  const int cells = std::min(kMaxCells, width - fixed);
  std::string line;
  if (cells >= kMinCells) {
    const std::int64_t filled = total > 0 ? std::clamp<std::int64_t>(done * cells / total, 0, cells) : 0;
    line = fmt::format("{} [{}{}] {}", head, std::string(static_cast<std::size_t>(filled), '#'),
                       std::string(static_cast<std::size_t>(cells - filled), '.'), counts);
  } else {
    line = fmt::format("{} {}", head, counts);
  }
  if (static_cast<int>(line.size()) > width) line.resize(static_cast<std::size_t>(std::max(0, width)));
  return line;
}

}  // namespace emo
