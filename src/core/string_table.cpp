#include "core/string_table.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace emo {
namespace {

constexpr std::size_t kMinBlock = 64 * 1024;

std::uint64_t hash_of(std::string_view s) noexcept { return std::hash<std::string_view>{}(s); }

}  // namespace

StringTable::StringTable() : slots_(1024, 0u) { intern(""); }

const char* StringTable::store(std::string_view s) {
  if (s.empty()) return "";
  if (blocks_.empty() || block_used_ + s.size() > block_size_) {
    block_size_ = std::max(kMinBlock, s.size());
    blocks_.emplace_back(new char[block_size_]);
    block_used_ = 0;
  }
  char* dst = blocks_.back().get() + block_used_;
  std::memcpy(dst, s.data(), s.size());
  block_used_ += s.size();
  return dst;
}

void StringTable::grow_index() {
  std::vector<std::uint32_t> slots(slots_.size() * 2, 0u);
  const std::size_t mask = slots.size() - 1;
  for (std::uint32_t id = 0; id < views_.size(); ++id) {
    std::size_t i = hashes_[id] & mask;
    while (slots[i] != 0) i = (i + 1) & mask;
    slots[i] = id + 1;
  }
  slots_.swap(slots);
}

StringId StringTable::find(std::string_view s) const noexcept {
  const std::uint64_t h = hash_of(s);
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    const std::uint32_t slot = slots_[i];
    if (slot == 0) return kNotFound;
    if (hashes_[slot - 1] == h && views_[slot - 1] == s) return slot - 1;
  }
}

StringId StringTable::intern(std::string_view s) {
  const std::uint64_t h = hash_of(s);
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = h & mask;
  for (;; i = (i + 1) & mask) {
    const std::uint32_t slot = slots_[i];
    if (slot == 0) break;
    if (hashes_[slot - 1] == h && views_[slot - 1] == s) return slot - 1;
  }
  const auto id = static_cast<StringId>(views_.size());
  views_.emplace_back(store(s), s.size());
  hashes_.push_back(h);
  slots_[i] = id + 1;
  if (views_.size() * 2 > slots_.size()) grow_index();
  return id;
}

std::size_t StringTable::memory_bytes() const noexcept {
  return blocks_.size() * block_size_ + views_.capacity() * sizeof(std::string_view) +
         slots_.capacity() * sizeof(std::uint32_t) + hashes_.capacity() * sizeof(std::uint64_t);
}

}  // namespace emo
