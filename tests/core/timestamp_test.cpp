#include "core/timestamp.h"

#include <gtest/gtest.h>

#include <limits>

namespace emo::trace {
namespace {

TEST(ParseUsToNs, KeepsNanosecondsOfEpochMicroseconds) {
  // 19 significant digits: a double would round this to ...689.047 +- 0.125 us.
  EXPECT_EQ(parse_us_to_ns("1712195495519689.047"), 1712195495519689047LL);
  EXPECT_EQ(parse_us_to_ns("1712195495519689.999"), 1712195495519689999LL);
  EXPECT_NE(static_cast<std::int64_t>(1712195495519689.047 * 1000.0), 1712195495519689047LL)
      << "the double path is expected to be inexact; if it is exact this test proves nothing";
}

TEST(ParseUsToNs, IntegersFractionsAndExponents) {
  EXPECT_EQ(parse_us_to_ns("0"), 0);
  EXPECT_EQ(parse_us_to_ns("2"), 2000);
  EXPECT_EQ(parse_us_to_ns("4.928"), 4928);
  EXPECT_EQ(parse_us_to_ns("30669.0"), 30669000);
  EXPECT_EQ(parse_us_to_ns("1.5e3"), 1500000);
  EXPECT_EQ(parse_us_to_ns("1E-3"), 1);
  EXPECT_EQ(parse_us_to_ns("-3.25"), -3250);
  EXPECT_EQ(parse_us_to_ns("12 "), 12000);  // simdjson raw tokens may carry whitespace
}

TEST(ParseUsToNs, RoundsSubNanosecondDigitsHalfAwayFromZero) {
  EXPECT_EQ(parse_us_to_ns("0.0005"), 1);
  EXPECT_EQ(parse_us_to_ns("0.0004999"), 0);
  EXPECT_EQ(parse_us_to_ns("-0.0005"), -1);
  EXPECT_EQ(parse_us_to_ns("1.2345678"), 1235);
}

TEST(ParseUsToNs, RejectsNonNumbersAndOverflow) {
  for (const char* bad : {"", "-", "abc", "\"12\"", "1.", ".5", "1e", "1.2.3", "12abc", "true",
                          "1e400", "99999999999999999999"}) {
    EXPECT_FALSE(parse_us_to_ns(bad).has_value()) << bad;
  }
  // INT64_MAX ns = 9223372036854775.807 us fits; one ns more does not.
  EXPECT_EQ(parse_us_to_ns("9223372036854775.807"), std::numeric_limits<std::int64_t>::max());
  EXPECT_FALSE(parse_us_to_ns("9223372036854775.808").has_value());
}

TEST(ParseInt64, Basics) {
  EXPECT_EQ(parse_int64("-12"), -12);
  EXPECT_EQ(parse_int64("4294967295"), 4294967295LL);
  EXPECT_FALSE(parse_int64("12x").has_value());
  EXPECT_FALSE(parse_int64("").has_value());
}

}  // namespace
}  // namespace emo::trace
