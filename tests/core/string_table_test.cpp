#include "core/string_table.h"

#include <gtest/gtest.h>

#include <string>

namespace emo::trace {
namespace {

TEST(StringTable, InternsOnceAndViewsStayValid) {
  StringTable t;
  EXPECT_EQ(t.intern(""), 0u);
  const StringId gemm = t.intern("gemm");
  std::string_view first_view = t.view(gemm);
  // Force several index growths and arena blocks.
  for (int i = 0; i < 100000; ++i) t.intern("kernel_" + std::to_string(i));
  EXPECT_EQ(t.intern("gemm"), gemm);
  EXPECT_EQ(t.view(gemm), "gemm");
  EXPECT_EQ(first_view.data(), t.view(gemm).data()) << "views must not move";
  EXPECT_EQ(t.size(), 100002u);
  EXPECT_EQ(t.view(t.find("kernel_99999")), "kernel_99999");
  EXPECT_EQ(t.find("absent"), StringTable::kNotFound);
}

TEST(StringTable, LongStringsLargerThanABlock) {
  StringTable t;
  const std::string big(200000, 'x');
  const StringId id = t.intern(big);
  EXPECT_EQ(t.view(id), big);
  EXPECT_EQ(t.intern(big), id);
  EXPECT_EQ(t.view(t.intern("after")), "after");
}

}  // namespace
}  // namespace emo::trace
