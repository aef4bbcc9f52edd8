#include "core/file_io.h"

#include <libdeflate.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"

namespace emo {

PaddedBuffer::PaddedBuffer(std::size_t size)
    : data_(new char[size + kPadding]), size_(size) {
  std::memset(data_.get() + size, 0, kPadding);
}

void PaddedBuffer::shrink(std::size_t new_size) {
  if (new_size > size_) throw std::logic_error("PaddedBuffer::shrink cannot grow");
  size_ = new_size;
  std::memset(data_.get() + size_, 0, kPadding);
}

bool is_gzip(std::string_view bytes) noexcept {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

PaddedBuffer read_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw InputError(path, errno == ENOENT ? "no such file" : std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) throw InputError(path, "is a directory, not a trace file");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw InputError(path, fmt::format("cannot open: {}", std::strerror(errno)));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> guard(f, &std::fclose);
  PaddedBuffer buf(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  while (got < buf.size()) {
    const std::size_t n = std::fread(buf.data() + got, 1, buf.size() - got, f);
    if (n == 0) break;
    got += n;
  }
  if (std::ferror(f)) throw InputError(path, fmt::format("read error: {}", std::strerror(errno)));
  buf.shrink(got);  // the file may have shrunk since stat
  return buf;
}

namespace {

struct DecompressorDeleter {
  void operator()(libdeflate_decompressor* d) const noexcept { libdeflate_free_decompressor(d); }
};

}  // namespace

PaddedBuffer gunzip(std::string_view in, const std::string& path) {
  if (in.size() < 18) throw InputError(path, "truncated gzip stream (shorter than a gzip header)");
  std::unique_ptr<libdeflate_decompressor, DecompressorDeleter> d(libdeflate_alloc_decompressor());
  if (!d) throw std::bad_alloc();

  // Sum the ISIZE trailers is not possible for multi-member files without parsing, so start
  // from the last member's ISIZE (exact for the common single-member file) and grow on demand.
  const auto* tail = reinterpret_cast<const unsigned char*>(in.data() + in.size() - 4);
  std::size_t guess = static_cast<std::size_t>(tail[0]) | static_cast<std::size_t>(tail[1]) << 8 |
                      static_cast<std::size_t>(tail[2]) << 16 |
                      static_cast<std::size_t>(tail[3]) << 24;
  // Deflate cannot expand more than 1032:1, so a trailer beyond that is garbage (truncation).
  guess = std::clamp<std::size_t>(guess, in.size() * 4, in.size() * 1032);

  for (;;) {
    PaddedBuffer out(guess);
    std::size_t in_pos = 0;
    std::size_t out_pos = 0;
    bool too_small = false;
    while (in_pos < in.size()) {
      std::size_t in_used = 0;
      std::size_t out_got = 0;
      const auto rc = libdeflate_gzip_decompress_ex(
          d.get(), in.data() + in_pos, in.size() - in_pos, out.data() + out_pos,
          out.size() - out_pos, &in_used, &out_got);
      if (rc == LIBDEFLATE_INSUFFICIENT_SPACE) {
        too_small = true;
        break;
      }
      if (rc != LIBDEFLATE_SUCCESS) {
        // libdeflate cannot tell truncation from corruption; the trailer check makes truncated
        // files the common BAD_DATA case, so name both.
        throw InputError(path, fmt::format("truncated or corrupt gzip stream (member at byte {})",
                                           in_pos));
      }
      in_pos += in_used;
      out_pos += out_got;
      // Trailing zero padding after the last member (some writers add it) ends the stream.
      while (in_pos < in.size() && in[in_pos] == '\0') ++in_pos;
      if (in_pos < in.size() && !is_gzip(in.substr(in_pos))) {
        throw InputError(path, fmt::format("garbage after gzip member at byte {}", in_pos));
      }
    }
    if (!too_small) {
      out.shrink(out_pos);
      return out;
    }
    guess = guess * 2 + (1 << 20);
  }
}

PaddedBuffer read_maybe_gzip(const std::string& path) {
  PaddedBuffer raw = read_file(path);
  if (is_gzip(raw.view())) return gunzip(raw.view(), path);
  return raw;
}

}  // namespace emo
