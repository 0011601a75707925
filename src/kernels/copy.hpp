// A plain copy, dst(i,j) = src(i,j) bit for bit, between any two layouts
// (orders and leading dimensions): the packing, unpacking and gathered
// outputs of a schedule, for every element type alike (a Word of the
// type's size), FP8 and scale bytes included.
#pragma once

#include <cstdint>

#include "kernels/function_qualifiers.hpp"

namespace weave::internal::kernels {

// The unit a 16-byte element (complex128) is copied in.
struct alignas(16) Word16 {
  uint64_t half[2];
};

template <class Word>
struct CopyFunctor {
  Word* dst = nullptr;
  int64_t dst_ld = 1;
  bool dst_row_major = false;
  const Word* src = nullptr;
  int64_t src_ld = 1;
  bool src_row_major = false;
  int64_t rows = 0, cols = 0;

  WEAVE_FUNCTION int64_t size() const { return rows * cols; }
  // Extent of dst along its contiguous (minor) dimension.
  WEAVE_FUNCTION int64_t minor_extent() const { return dst_row_major ? cols : rows; }
  WEAVE_FUNCTION int64_t major_extent() const { return dst_row_major ? rows : cols; }

  // One element by flat index in dst's storage order.
  WEAVE_FUNCTION void operator()(int64_t index) const { apply(index % minor_extent(), index / minor_extent()); }
  WEAVE_FUNCTION void apply(int64_t minor, int64_t major) const {
    const int64_t i = dst_row_major ? major : minor, j = dst_row_major ? minor : major;
    dst[dst_row_major ? i * dst_ld + j : i + j * dst_ld] = src[src_row_major ? i * src_ld + j : i + j * src_ld];
  }
};

}  // namespace weave::internal::kernels
