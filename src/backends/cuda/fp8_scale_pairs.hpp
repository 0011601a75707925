// The pairs of scale modes the CUDA backend's FP8 GEMMs can be given, A's
// and B's either way round (every allowed pair is symmetric, so it does
// not matter which operand cuBLASLt sees as its A). Measured with
// weave-fp8-support on sm_90 (H200, cuBLASLt 13.1, doc/fp8.md): cuBLASLt
// multiplies the matching pairs but 128x128 x 128x128, and 1x128 with
// 128x128; it refuses the other mixed pairs, and for row-wise x 128x128 it
// aborted the process, so nothing outside this list may reach it. Weave
// adds tensor-wise x row-wise (the tensor-wise scale written out per row,
// scale_broadcast.hpp). MXFP8 pairs with MXFP8 alone, from sm_100.
// Header-only and free of CUDA so the host's unit tests check it.
#pragma once

#include "core/dtype.hpp"

namespace weave::internal::cuda {

inline bool scale_modes_multiply(ScaleMode a, ScaleMode b, int compute_capability) {
  using S = ScaleMode;
  auto pair = [&](S x, S y) { return (a == x && b == y) || (a == y && b == x); };
  if (a == S::None || b == S::None) return false;
  if (a == S::Mxfp8 || b == S::Mxfp8) return pair(S::Mxfp8, S::Mxfp8) && compute_capability >= 100;
  return a == b ? a != S::Block128x128 : pair(S::Block1x128, S::Block128x128) || pair(S::Tensor, S::RowWise);
}

}  // namespace weave::internal::cuda
