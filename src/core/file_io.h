// Reading whole files into memory, with transparent gzip decompression.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace emo {

/// Bytes that stay readable `kPadding` bytes past size() (simdjson reads up to 64 bytes beyond
/// the end of a document). The padding is zero-filled. Move-only.
class PaddedBuffer {
 public:
  static constexpr std::size_t kPadding = 64;

  PaddedBuffer() = default;
  explicit PaddedBuffer(std::size_t size);  ///< Uninitialised content, zeroed padding.
  PaddedBuffer(PaddedBuffer&& other) noexcept
      : data_(std::move(other.data_)), size_(std::exchange(other.size_, 0)) {}
  PaddedBuffer& operator=(PaddedBuffer&& other) noexcept {
    data_ = std::move(other.data_);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }

  char* data() noexcept { return data_.get(); }
  const char* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return size_; }
  std::string_view view() const noexcept { return {data_.get(), size_}; }
  /// Shrinks the logical size (the allocation stays); re-zeroes the padding after the new end.
  void shrink(std::size_t new_size);

 private:
  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0;
};

/// True when `bytes` starts with the gzip magic 1f 8b.
bool is_gzip(std::string_view bytes) noexcept;

/// Reads `path` completely. Throws emo::InputError (missing file, directory, read error).
PaddedBuffer read_file(const std::string& path);

/// Decompresses a gzip stream (one or more members, RFC 1952) with libdeflate.
/// `path` only names the file in errors. Throws emo::InputError when the stream is truncated or
/// corrupt. Output size is taken from the ISIZE trailer and grown when that is wrong (> 4 GiB).
PaddedBuffer gunzip(std::string_view compressed, const std::string& path);

/// read_file, then gunzip when the content (not the name) is gzip.
PaddedBuffer read_maybe_gzip(const std::string& path);

}  // namespace emo
