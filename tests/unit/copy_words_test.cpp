// Plain copies in the widest words the layouts allow (kernels/copy_words.hpp):
// the word chosen, and, over every small geometry (orders, leading
// dimensions with gaps, offsets that misalign the start, element sizes 1 to
// 16), a copy made with the chosen words (the shared CopyFunctor, as both
// backends run it) equals the element-by-element copy and leaves every byte
// outside the destination block as it was.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/copy.hpp"
#include "kernels/copy_words.hpp"

namespace weave_test {
namespace {

using weave::internal::kernels::CopyFunctor;
using weave::internal::kernels::CopyGeometry;
using weave::internal::kernels::widest_word_copy;
using weave::internal::kernels::WordCopy;

template <class Word>
void run_copy(const WordCopy& w, void* dst, const void* src) {
  const CopyFunctor<Word> f = weave::internal::kernels::word_copy_functor<Word>(w, dst, src);
  for (int64_t index = 0; index < f.size(); ++index) f(index);
}

void copy_in_words(const WordCopy& w, void* dst, const void* src) {
  const bool known =
      weave::internal::kernels::visit_word(w.word_bytes, [&](auto word) { run_copy<decltype(word)>(w, dst, src); });
  EXPECT_TRUE(known) << "word of " << w.word_bytes << " bytes";
}

TEST(CopyWords, WidestWordTheLayoutsAllow) {
  alignas(16) static uint8_t dst[4096], src[4096];
  CopyGeometry g;
  g.element_bytes = 2;
  g.dst = dst;
  g.src = src;
  g.dst_row_major = g.src_row_major = true;
  g.rows = 4;
  g.cols = 64;
  g.dst_ld = g.src_ld = 64;  // contiguous: one run of 256 elements
  WordCopy w = widest_word_copy(g);
  EXPECT_EQ(w.word_bytes, 16u);
  EXPECT_EQ(w.rows, 1);
  EXPECT_EQ(w.cols, 32);
  g.dst_ld = 72;  // runs apart, strides of 144 bytes: 16 bytes divide them
  w = widest_word_copy(g);
  EXPECT_EQ(w.word_bytes, 16u);
  EXPECT_EQ(w.rows, 4);
  EXPECT_EQ(w.cols, 8);
  EXPECT_EQ(w.dst_ld, 9);
  EXPECT_EQ(w.src_ld, 8);
  g.dst_ld = 66;  // a 132-byte stride: 4-byte words
  EXPECT_EQ(widest_word_copy(g).word_bytes, 4u);
  g.src = src + 2;  // a start 2 bytes off
  EXPECT_EQ(widest_word_copy(g).word_bytes, 2u);
  g.src = src;
  g.dst_ld = 64;
  g.cols = 63;  // 126-byte runs apart (ld 64 > 63)
  EXPECT_EQ(widest_word_copy(g).word_bytes, 2u);
  g.src_row_major = false;  // a transposition: single elements
  g.src_ld = 4;
  w = widest_word_copy(g);
  EXPECT_EQ(w.word_bytes, 2u);
  EXPECT_EQ(w.rows, 4);
  EXPECT_EQ(w.cols, 63);
  EXPECT_FALSE(w.src_row_major);
}

TEST(CopyWords, EveryGeometryCopiesTheSameBytes) {
  constexpr std::size_t kBytes = 4096;
  alignas(16) static uint8_t src[kBytes], expected[kBytes], got[kBytes];
  for (std::size_t i = 0; i < kBytes; ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  int cases = 0, widened = 0;
  for (std::size_t element : {1u, 2u, 4u, 8u, 16u})
    for (bool dst_rm : {false, true})
      for (bool src_rm : {false, true})
        for (int64_t rows : {1, 2, 3, 8})
          for (int64_t cols : {1, 4, 7, 16})
            for (int64_t dst_gap : {0, 1, 8})
              for (int64_t src_gap : {0, 3, 16})
                for (std::size_t dst_off : {0u, 1u, 16u})
                  for (std::size_t src_off : {0u, 8u}) {
                    // Offsets in elements, so every element stays aligned to
                    // its size, as a schedule's regions are.
                    const int64_t dst_ld = (dst_rm ? cols : rows) + dst_gap;
                    const int64_t src_ld = (src_rm ? cols : rows) + src_gap;
                    const std::size_t dst_span = static_cast<std::size_t>(dst_ld * (dst_rm ? rows : cols)) * element;
                    const std::size_t src_span = static_cast<std::size_t>(src_ld * (src_rm ? rows : cols)) * element;
                    if (dst_off * element + dst_span > kBytes || src_off * element + src_span > kBytes) continue;
                    std::memset(expected, 0xA5, kBytes);
                    std::memset(got, 0xA5, kBytes);
                    uint8_t* e = expected + dst_off * element;
                    uint8_t* d = got + dst_off * element;
                    const uint8_t* s = src + src_off * element;
                    for (int64_t i = 0; i < rows; ++i)
                      for (int64_t j = 0; j < cols; ++j)
                        std::memcpy(e + (dst_rm ? i * dst_ld + j : i + j * dst_ld) * element,
                                    s + (src_rm ? i * src_ld + j : i + j * src_ld) * element, element);
                    CopyGeometry g{element, d, dst_ld, dst_rm, s, src_ld, src_rm, rows, cols};
                    const WordCopy w = widest_word_copy(g);
                    ASSERT_GE(w.word_bytes, element);
                    ASSERT_EQ(reinterpret_cast<uintptr_t>(d) % w.word_bytes, 0u);
                    ASSERT_EQ(reinterpret_cast<uintptr_t>(s) % w.word_bytes, 0u);
                    copy_in_words(w, d, s);
                    ASSERT_EQ(std::memcmp(expected, got, kBytes), 0)
                        << element << "-byte elements, " << rows << " x " << cols << ", dst "
                        << (dst_rm ? "row" : "col") << "-major ld " << dst_ld << " +" << dst_off << ", src "
                        << (src_rm ? "row" : "col") << "-major ld " << src_ld << " +" << src_off << ", words of "
                        << w.word_bytes;
                    ++cases;
                    if (w.word_bytes > element) ++widened;
                  }
  EXPECT_GT(cases, 3000);
  EXPECT_GT(widened, 500) << "the geometries include many that widen";
}

}  // namespace
}  // namespace weave_test
