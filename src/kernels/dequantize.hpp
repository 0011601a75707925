// Decodes a region of an operand into float32 with its scales applied:
// dst(i, l) = value(op(X)(i, l)) * scale(i, l), dst column-major. The host
// backend's emulation of the types it has no arithmetic for (FP8 and the
// 16-bit types) runs BLAS sgemm on what this writes. For op(A) the outer
// index of a scale is the row i, for op(B) the column l (kernels/scales.hpp).
#pragma once

#include <cstdint>

#include "kernels/numeric.hpp"
#include "kernels/scales.hpp"

namespace weave::internal::kernels {

template <class Src>
struct DequantizeFunctor {
  float* dst = nullptr;
  int64_t dst_ld = 1;
  const Src* src = nullptr;  // the stored X
  int64_t src_ld = 1;
  bool src_row_major = false;
  bool transposed = false;  // op(X) = X^T
  int64_t rows = 0, cols = 0;  // of op(X)
  ScaleMode scale_mode = ScaleMode::None;
  const void* scales = nullptr;  // the region's first scale
  int64_t scale_ld = 1;
  bool scales_e8m0 = false;
  bool outer_is_row = true;  // op(A): a scale's outer index is the row; op(B): the column

  WEAVE_FUNCTION int64_t size() const { return rows * cols; }

  WEAVE_FUNCTION void operator()(int64_t index) const {
    const int64_t i = index % rows, l = index / rows;
    const int64_t si = transposed ? l : i, sj = transposed ? i : l;  // in the stored X
    float value = load_as<float>(src[src_row_major ? si * src_ld + sj : si + sj * src_ld]);
    if (scale_mode != ScaleMode::None) {
      const int64_t outer = outer_is_row ? i : l, inner = outer_is_row ? l : i;
      value *= scale_value(scales, scale_offset(scale_mode, outer, inner, scale_ld), scales_e8m0);
    }
    dst[i + l * dst_ld] = value;
  }
};

}  // namespace weave::internal::kernels
