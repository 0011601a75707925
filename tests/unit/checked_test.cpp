// core/checked.hpp: size arithmetic that reports what does not fit int64_t
// as WEAVE_ERROR_INVALID_VALUE naming the quantity, instead of wrapping.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "expect_error.hpp"

namespace weave::internal {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

template <class Body>
void expect_overflow(Body&& body, std::initializer_list<const char*> words) {
  weave_test::expect_error(body, WEAVE_ERROR_INVALID_VALUE, words);
}

TEST(Checked, ResultsThatFitAreExact) {
  EXPECT_EQ(checked_add(kMax - 1, 1, "x"), kMax);
  EXPECT_EQ(checked_add(kMin, kMax, "x"), -1);
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31, "x"), int64_t{1} << 62);
  EXPECT_EQ(checked_mul(kMax, 1, "x"), kMax);
  EXPECT_EQ(checked_mul(0, kMax, "x"), 0);
  EXPECT_EQ(checked_mul(-3, 5, "x"), -15);
  EXPECT_EQ(checked_mul_add(kMax / 2, 2, 1, "x"), kMax);
  EXPECT_EQ(checked_narrow<int>(std::numeric_limits<int>::max(), "x"), std::numeric_limits<int>::max());
  EXPECT_EQ(checked_narrow<int>(-5, "x"), -5);
}

TEST(Checked, OverflowNamesTheQuantityAndItsOperands) {
  expect_overflow([] { checked_add(kMax, 1, "the sum of ", "row_counts"); },
                  {"the sum of row_counts", "9223372036854775807 + 1", "64 bits"});
  expect_overflow([] { checked_add(kMin, -1, "an offset"); }, {"an offset", "-9223372036854775808 + -1"});
  expect_overflow([] { checked_mul(int64_t{1} << 32, int64_t{1} << 32, "the elements of ", 'C'); },
                  {"the elements of C", "4294967296 * 4294967296"});
  expect_overflow([] { checked_mul(kMin, -1, "x"); }, {"x = "});
  expect_overflow([] { checked_mul(-(int64_t{1} << 32), int64_t{1} << 32, "negative"); }, {"negative"});
  // The product fits, the sum does not; and the product does not.
  expect_overflow([] { checked_mul_add(kMax / 2, 2, 2, "extent"); }, {"extent", " + 2"});
  expect_overflow([] { checked_mul_add(int64_t{1} << 62, 4, 0, "extent"); }, {"extent", "* 4"});
  expect_overflow([] { checked_narrow<int>(int64_t{1} << 31, "a tag"); }, {"a tag = 2147483648", "32 bits"});
  expect_overflow([] { checked_narrow<int>(-(int64_t{1} << 31) - 1, "a count"); }, {"a count"});
}

}  // namespace
}  // namespace weave::internal
