// AG-GEMM's wire-type quantization, written once for the host (Kokkos) and
// GPUs (the CUDA launcher), so that both produce the same bytes. The rule,
// for one row x_1 .. x_K of op(A) (doc/fp8.md), all in float32 arithmetic
// with round-to-nearest-even:
//
//   amax  = max_k |x_k|                (NaN if any x_k is NaN)
//   scale = amax / max_finite          (448 for e4m3); 1 when that is 0
//                                      (amax = 0, or amax / 448 underflows)
//   q_k   = encode(x_k / scale)        x_k / scale rounded to float32, then to
//                                      the nearest e4m3 (ties to even),
//                                      saturating at +-448; NaN -> 0x7F
//
// So an infinite amax gives scale inf (finite x_k become zeros, infinite
// ones NaN), a NaN amax the scale 0x7FC00000 (NaN; every q_k NaN). A wire
// type without scales (bf16) is x_k rounded to it.
#pragma once

#include <cstdint>

#include "kernels/float8.hpp"
#include "kernels/function_qualifiers.hpp"
#include "kernels/numeric.hpp"

namespace weave::internal::kernels {

// The scale of a row from its amax; a NaN amax gives the quiet NaN
// 0x7FC00000 (whatever NaN the amax was), so every backend writes one.
WEAVE_FUNCTION float quantization_scale(float amax, float max_finite) {
  if (amax != amax) return float_of(0x7fc00000u);
  const float scale = amax / max_finite;
  return scale == 0.0f ? 1.0f : scale;
}

// The amax of two partial amaxes (or a partial amax and |x|): NaN wins.
WEAVE_FUNCTION float combine_amax(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return b > a ? b : a;
}

// Rows of op(src) (rows x cols, op = transposed or not) into rows of
// op(dst) in Dst (Float8E4M3 with scales, or a 16-bit type without), one
// scale per row into `scales` (null for a type without scales).
template <class Src, class Dst>
struct QuantizeRowsFunctor {
  const Src* src = nullptr;
  int64_t src_ld = 1;
  bool src_row_major = false;
  Dst* dst = nullptr;
  int64_t dst_ld = 1;
  bool dst_row_major = false;
  bool transposed = false;  // op(X) = X^T for both
  float* scales = nullptr;
  float max_finite = 448.0f;
  int64_t rows = 0, cols = 0;

  WEAVE_FUNCTION int64_t size() const { return rows; }

  // Storage index of op-form element (i, k) in a matrix of this order and ld.
  WEAVE_FUNCTION static int64_t at(int64_t i, int64_t k, int64_t ld, bool row_major, bool transposed) {
    const int64_t r = transposed ? k : i, c = transposed ? i : k;
    return row_major ? r * ld + c : r + c * ld;
  }
  WEAVE_FUNCTION float load(int64_t i, int64_t k) const {
    return load_as<float>(src[at(i, k, src_ld, src_row_major, transposed)]);
  }
  // Element (i, k) once its row's scale is known.
  WEAVE_FUNCTION void store(int64_t i, int64_t k, float scale) const {
    const float x = load(i, k);
    dst[at(i, k, dst_ld, dst_row_major, transposed)] = store_as<Dst>(scales ? x / scale : x);
  }
  // A whole row (host launches; GPUs split the row's work over threads).
  WEAVE_FUNCTION void operator()(int64_t i) const {
    float scale = 1.0f;
    if (scales) {
      float amax = 0.0f;
      for (int64_t k = 0; k < cols; ++k) {
        const float x = load(i, k);
        amax = combine_amax(amax, x < 0.0f ? -x : x);
      }
      scale = quantization_scale(amax, max_finite);
      scales[i] = scale;
    }
    for (int64_t k = 0; k < cols; ++k) store(i, k, scale);
  }
};

}  // namespace weave::internal::kernels
