// The one JSON string quoting (core/json_text.h) against RFC 8259 §7 and the Unicode Standard's
// Table 3-7, one escape class at a time, with expected strings written out by hand; then a second
// method: nlohmann::json parses every quoted string back to the input (valid UTF-8), or to the
// input with U+FFFD for each ill-formed byte.
#include "core/json_text.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace emo {
namespace {

using namespace std::string_literals;

TEST(JsonQuote, PlainTextIsOnlyQuoted) {
  EXPECT_EQ(json_quote(""), R"("")");
  EXPECT_EQ(json_quote("gemm_128x64 [fp16]"), R"("gemm_128x64 [fp16]")");
}

TEST(JsonQuote, QuoteAndBackslashGetABackslash) {
  EXPECT_EQ(json_quote(R"(a"b\c)"), R"("a\"b\\c")");
  EXPECT_EQ(json_quote(R"(\")"), R"("\\\"")");
}

TEST(JsonQuote, SolidusAndDelAreNotEscaped) {
  // RFC 8259 §7: "/" may be escaped, need not be; DEL (0x7F) is not a control character there.
  EXPECT_EQ(json_quote("a/b"), R"("a/b")");
  EXPECT_EQ(json_quote("\x7f"), "\"\x7f\"");
}

TEST(JsonQuote, EveryControlCharacterIsAUnicodeEscape) {
  EXPECT_EQ(json_quote("\0"s), R"("\u0000")");
  EXPECT_EQ(json_quote("\x01\x1f"), R"("\u0001\u001f")");
  EXPECT_EQ(json_quote("a\tb\nc\rd\be\ff"), R"("a\u0009b\u000ac\u000dd\u0008e\u000cf")");
  EXPECT_EQ(json_quote(" "), R"(" ")");  // 0x20 is the first character that needs nothing
}

TEST(JsonQuote, WellFormedUtf8PassesThrough) {
  EXPECT_EQ(json_quote("caf\xC3\xA9"), "\"caf\xC3\xA9\"");                   // U+00E9, 2 bytes
  EXPECT_EQ(json_quote("\xE2\x82\xAC"), "\"\xE2\x82\xAC\"");                  // U+20AC, 3 bytes
  EXPECT_EQ(json_quote("\xF0\x9F\x98\x80"), "\"\xF0\x9F\x98\x80\"");          // U+1F600, 4 bytes
  EXPECT_EQ(json_quote("\xED\x9F\xBF\xEE\x80\x80"), "\"\xED\x9F\xBF\xEE\x80\x80\"");  // U+D7FF, U+E000
  EXPECT_EQ(json_quote("\xF4\x8F\xBF\xBF"), "\"\xF4\x8F\xBF\xBF\"");          // U+10FFFF, the last
}

TEST(JsonQuote, EachIllFormedByteBecomesAReplacementCharacter) {
  const std::string r = "\xEF\xBF\xBD";  // U+FFFD
  EXPECT_EQ(json_quote("bad\xFFz"), "\"bad" + r + "z\"");
  EXPECT_EQ(json_quote("\x80"), "\"" + r + "\"");                   // a stray continuation byte
  EXPECT_EQ(json_quote("\xC0\xAF"), "\"" + r + r + "\"");           // overlong "/"
  EXPECT_EQ(json_quote("\xE0\x80\xAF"), "\"" + r + r + r + "\"");   // overlong 3-byte "/"
  EXPECT_EQ(json_quote("\xED\xA0\x80"), "\"" + r + r + r + "\"");   // surrogate U+D800
  EXPECT_EQ(json_quote("\xF4\x90\x80\x80"), "\"" + r + r + r + r + "\"");  // U+110000
  EXPECT_EQ(json_quote("x\xE2\x82"), "\"x" + r + r + "\"");         // cut short at the end
  EXPECT_EQ(json_quote("\xE2\x82x"), "\"" + r + r + "x\"");         // cut short by an ASCII byte
}

/// The quoted text parsed back by a second JSON implementation.
std::string parsed(const std::string& quoted) { return nlohmann::json::parse(quoted).get<std::string>(); }

TEST(JsonQuote, ASecondParserReadsBackEveryByte) {
  for (int b = 0; b < 256; ++b) {
    const std::string one(1, static_cast<char>(b));
    const std::string expected = b < 0x80 ? one : "\xEF\xBF\xBD";  // a lone byte >= 0x80 is ill-formed
    EXPECT_EQ(parsed(json_quote(one)), expected) << "byte " << b;
  }
  const std::string mixed = "k\"\\/\n\x01 \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\x7f";
  EXPECT_EQ(parsed(json_quote(mixed)), mixed);
}

}  // namespace
}  // namespace emo
