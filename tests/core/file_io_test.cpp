#include "core/file_io.h"

#include <gtest/gtest.h>
#include <libdeflate.h>

#include <fstream>
#include <string>

#include "test_data.h"
#include "core/error.h"

namespace emo::trace {
namespace {

std::string gzip(const std::string& text) {
  libdeflate_compressor* c = libdeflate_alloc_compressor(6);
  std::string out(libdeflate_gzip_compress_bound(c, text.size()), '\0');
  out.resize(libdeflate_gzip_compress(c, text.data(), text.size(), out.data(), out.size()));
  libdeflate_free_compressor(c);
  return out;
}

void write(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

TEST(FileIo, GunzipSingleAndMultiMember) {
  const std::string a = "{\"traceEvents\": [";
  const std::string b = "]}";
  const std::string one = gzip(a + b);
  EXPECT_EQ(gunzip(one, "x.gz").view(), a + b);
  const std::string two = gzip(a) + gzip(b);  // concatenated members, as `cat a.gz b.gz`
  EXPECT_EQ(gunzip(two, "x.gz").view(), a + b);
}

TEST(FileIo, GunzipGrowsTheOutputWhenTheLastMemberIsSmall) {
  // The output size is guessed from the last member's ISIZE (here 1 byte): the buffer must grow.
  const std::string big(3 << 20, 'a');
  const std::string z = gzip(big) + gzip("b");
  const PaddedBuffer out = gunzip(z, "multi.gz");
  ASSERT_EQ(out.size(), big.size() + 1);
  EXPECT_EQ(out.view().substr(big.size() - 2), "aab");
}

TEST(FileIo, LyingTrailerIsCorrupt) {
  std::string big(3 << 20, 'a');
  std::string z = gzip(big);
  z[z.size() - 4] = 1;  // lie about ISIZE: libdeflate then reports a size mismatch or we grow
  z[z.size() - 3] = 0;
  z[z.size() - 2] = 0;
  z[z.size() - 1] = 0;
  // The ISIZE field is part of the format check, so a lying trailer is corrupt input.
  EXPECT_THROW(gunzip(z, "lie.gz"), InputError);
}

TEST(FileIo, TruncatedGzipIsAnInputErrorNamingTheFile) {
  const std::string z = gzip(std::string(10000, 'x') + "{}");
  try {
    gunzip(std::string_view(z).substr(0, z.size() / 2), "half.json.gz");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "half.json.gz");
    EXPECT_NE(std::string(e.what()).find("half.json.gz: "), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("gzip"), std::string::npos);
  }
}

TEST(FileIo, MissingFileAndDirectory) {
  const auto dir = emo::testing::scratch_dir("file_io");
  EXPECT_THROW(read_file((dir / "absent.json").string()), InputError);
  try {
    read_file(dir.string());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("directory"), std::string::npos) << e.what();
  }
}

TEST(FileIo, ReadMaybeGzipDetectsByContentNotName) {
  const auto dir = emo::testing::scratch_dir("file_io_detect");
  write(dir / "plain.gz", "[]");  // named .gz but plain
  write(dir / "packed.json", gzip("[1]"));  // named .json but gzip
  EXPECT_EQ(read_maybe_gzip((dir / "plain.gz").string()).view(), "[]");
  EXPECT_EQ(read_maybe_gzip((dir / "packed.json").string()).view(), "[1]");
}

TEST(FileIo, PaddingIsZeroAfterShrink) {
  PaddedBuffer b(100);
  for (std::size_t i = 0; i < 100; ++i) b.data()[i] = 'x';
  b.shrink(10);
  for (std::size_t i = 10; i < 10 + PaddedBuffer::kPadding; ++i) EXPECT_EQ(b.data()[i], '\0');
}

TEST(OneLine, FlattensAndClips) {
  EXPECT_EQ(one_line("a\nb\tc"), "a b c");
  EXPECT_EQ(one_line(std::string(500, 'y'), 10), std::string(10, 'y') + "...");
}

}  // namespace
}  // namespace emo::trace
