// The element-wise kernel of every backend, written once:
//   dst(i,j) = src_scale * src(i,j) + dst_scale * dst(i,j) + bias(j)
// It finishes reductions (beta * C and bias enter here, once), adds bias
// after a GEMM, packs and unpacks chunks, and converts between types and
// storage orders. One call per element index, in dst's storage order so
// neighbouring indices touch neighbouring dst elements.
#pragma once

#include <cstdint>

#include "kernels/numeric.hpp"

namespace weave::internal::kernels {

template <class Dst, class Src>
struct EpilogueFunctor {
  using Acc = typename Arithmetic<Dst>::type;

  Dst* dst = nullptr;
  int64_t dst_ld = 1;
  bool dst_row_major = false;
  const Src* src = nullptr;  // null: no src term
  int64_t src_ld = 1;
  bool src_row_major = false;
  const Dst* bias = nullptr;  // null: no bias; one entry per column
  Acc src_scale = 1;
  Acc dst_scale = 0;  // dst is not read when zero (it may hold NaN)
  int64_t rows = 0, cols = 0;

  WEAVE_FUNCTION int64_t size() const { return rows * cols; }

  // Extent of dst along its contiguous (minor) and strided (major) dimension.
  WEAVE_FUNCTION int64_t minor_extent() const { return dst_row_major ? cols : rows; }
  WEAVE_FUNCTION int64_t major_extent() const { return dst_row_major ? rows : cols; }

  // One element by flat index in dst's storage order (host launches).
  WEAVE_FUNCTION void operator()(int64_t index) const {
    const int64_t minor = index % minor_extent(), major = index / minor_extent();
    apply(minor, major);
  }

  // One element by its position along dst's minor and major dimension
  // (GPU launches index both directly, without a division per element).
  WEAVE_FUNCTION void apply(int64_t minor, int64_t major) const {
    const int64_t i = dst_row_major ? major : minor;
    const int64_t j = dst_row_major ? minor : major;
    Acc value = 0;
    if (src) value = src_scale * load_as<Acc>(src[src_row_major ? i * src_ld + j : i + j * src_ld]);
    Dst& out = dst[dst_row_major ? i * dst_ld + j : i + j * dst_ld];
    if (dst_scale != Acc(0)) value += dst_scale * load_as<Acc>(out);
    if (bias) value += load_as<Acc>(bias[j]);
    out = store_as<Dst>(value);
  }
};

}  // namespace weave::internal::kernels
