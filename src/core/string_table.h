// Interned strings: each distinct string is stored once and named by a dense 32-bit id.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace emo {

using StringId = std::uint32_t;

/// Append-only string interner. Id 0 is always the empty string. Views returned by view() stay
/// valid for the table's lifetime (strings live in stable arena blocks, never moved).
///
/// Example: StringTable t; t.intern("gemm") == t.intern("gemm") -> same id; t.view(id) == "gemm".
class StringTable {
 public:
  StringTable();
  StringTable(StringTable&&) noexcept = default;
  StringTable& operator=(StringTable&&) noexcept = default;
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;

  /// Returns the id of `s`, adding it if new. Amortised O(|s|).
  StringId intern(std::string_view s);
  /// Returns the id of `s` or kNotFound.
  StringId find(std::string_view s) const noexcept;
  std::string_view view(StringId id) const { return views_.at(id); }
  std::size_t size() const noexcept { return views_.size(); }
  /// Bytes held (arena + index), for memory accounting.
  std::size_t memory_bytes() const noexcept;

  static constexpr StringId kNotFound = 0xffffffffu;

 private:
  const char* store(std::string_view s);
  void grow_index();

  std::vector<std::unique_ptr<char[]>> blocks_;
  std::size_t block_used_ = 0;
  std::size_t block_size_ = 0;
  std::vector<std::string_view> views_;
  // Open addressing, linear probing; slot = id + 1 (0 = empty); hashes cached beside the slots.
  std::vector<std::uint32_t> slots_;
  std::vector<std::uint64_t> hashes_;
};

}  // namespace emo
