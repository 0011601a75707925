// Whether two buffers of an execute share bytes (api/buffer_overlap.hpp),
// against a byte-by-byte oracle: every pair of small strided blocks at
// offsets around one another in one array, equal and different strides,
// column- and row-major, and blocks interleaved in one padded array.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "api/buffer_overlap.hpp"

namespace {

using weave::internal::block_bytes;
using weave::internal::LocalBlock;
using weave::internal::Order;
using weave::internal::share_bytes;
using weave::internal::StridedBytes;

// The oracle: mark x's bytes in an array, look for y's.
bool share_bytes_by_marking(const StridedBytes& x, const StridedBytes& y, const char* array, int64_t size) {
  if (x.empty() || y.empty()) return false;
  std::vector<char> marked(static_cast<size_t>(size), 0);
  for (int64_t i = 0; i < x.count; ++i)
    for (int64_t b = 0; b < x.width; ++b) marked[static_cast<size_t>(static_cast<const char*>(x.base) - array + i * x.stride + b)] = 1;
  for (int64_t i = 0; i < y.count; ++i)
    for (int64_t b = 0; b < y.width; ++b)
      if (marked[static_cast<size_t>(static_cast<const char*>(y.base) - array + i * y.stride + b)]) return true;
  return false;
}

TEST(BufferOverlap, AgreesWithMarkingEveryByte) {
  std::mt19937_64 rng(7);
  std::vector<char> array(4096);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  int overlapping = 0, apart = 0;
  for (int trial = 0; trial < 200000; ++trial) {
    StridedBytes x, y;
    for (StridedBytes* s : {&x, &y}) {
      s->width = pick(1, 12);
      s->count = pick(1, 9);
      s->stride = trial % 3 == 0 ? 16 : s->width + pick(0, 20);  // a third with one stride for both
      s->base = array.data() + pick(0, 600);
    }
    const bool expected = share_bytes_by_marking(x, y, array.data(), static_cast<int64_t>(array.size()));
    ASSERT_EQ(share_bytes(x, y), expected) << "x: +" << static_cast<const char*>(x.base) - array.data() << " "
                                            << x.count << " x " << static_cast<int64_t>(x.width) << " / "
                                            << static_cast<int64_t>(x.stride) << "; y: +"
                                            << static_cast<const char*>(y.base) - array.data() << " " << y.count
                                            << " x " << static_cast<int64_t>(y.width) << " / "
                                            << static_cast<int64_t>(y.stride);
    ASSERT_EQ(share_bytes(y, x), expected);
    (expected ? overlapping : apart)++;
  }
  EXPECT_GT(overlapping, 10000);
  EXPECT_GT(apart, 10000);
}

TEST(BufferOverlap, BlocksInOnePaddedArray) {
  std::vector<double> array(20 * 10);
  // A in rows 0-9, C in rows 10-19 of a column-major 20 x 10 array (ld 20): apart.
  const LocalBlock half{10, 10, 20, Order::ColMajor};
  EXPECT_FALSE(share_bytes(block_bytes(array.data(), half, 8), block_bytes(array.data() + 10, half, 8)));
  // C one row lower: its first row is A's last.
  EXPECT_TRUE(share_bytes(block_bytes(array.data(), half, 8), block_bytes(array.data() + 9, half, 8)));
  // The same array, C as a row-major 10 x 20 whose rows are A's columns.
  const LocalBlock rows{10, 20, 20, Order::RowMajor};
  EXPECT_TRUE(share_bytes(block_bytes(array.data(), half, 8), block_bytes(array.data(), rows, 8)));
  // An empty block shares nothing, wherever it points.
  const LocalBlock empty{0, 10, 20, Order::ColMajor};
  EXPECT_FALSE(share_bytes(block_bytes(array.data(), half, 8), block_bytes(array.data(), empty, 8)));
  // One buffer passed as both.
  EXPECT_TRUE(share_bytes(block_bytes(array.data(), half, 8), block_bytes(array.data(), half, 8)));
}

// Leading dimensions whose bytes do not fit 64 bits (the elements do):
// no overflow (the sanitizers' build checks), and the answer of the first
// run alone where the others lie beyond any address.
TEST(BufferOverlap, HugeLeadingDimensions) {
  std::vector<float> array(64);
  const LocalBlock one_column{8, 1, INT64_MAX, Order::ColMajor};
  const LocalBlock two_columns{8, 2, INT64_MAX / 2, Order::ColMajor};
  const LocalBlock small{8, 1, 8, Order::ColMajor};
  EXPECT_TRUE(share_bytes(block_bytes(array.data(), one_column, 4), block_bytes(array.data() + 4, small, 4)));
  EXPECT_FALSE(share_bytes(block_bytes(array.data(), one_column, 4), block_bytes(array.data() + 8, small, 4)));
  EXPECT_TRUE(share_bytes(block_bytes(array.data(), two_columns, 4), block_bytes(array.data() + 7, small, 4)));
  EXPECT_FALSE(share_bytes(block_bytes(array.data(), two_columns, 4), block_bytes(array.data() + 16, small, 4)));
  EXPECT_TRUE(share_bytes(block_bytes(array.data(), two_columns, 4), block_bytes(array.data(), two_columns, 4)));
}

}  // namespace
