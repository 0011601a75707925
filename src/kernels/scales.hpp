// Where the scale of one element of a scaled (FP8) operand is, for the
// layouts of core/scale_layout.hpp (doc/fp8.md), on the host and on GPUs.
#pragma once

#include <cstdint>

#include "core/dtype.hpp"
#include "kernels/float8.hpp"
#include "kernels/function_qualifiers.hpp"

namespace weave::internal::kernels {

// The offset, from the first scale of a block's scales, of the scale of
// op-form element (outer, inner) of that block (outer: its row of op(A),
// or column of op(B); inner: its index along K); `ld` is the layout's.
WEAVE_FUNCTION int64_t scale_offset(ScaleMode mode, int64_t outer, int64_t inner, int64_t ld) {
  switch (mode) {
    case ScaleMode::None:
    case ScaleMode::Tensor: return 0;
    case ScaleMode::RowWise: return outer;
    case ScaleMode::Block1x128: return (inner / 128) * ld + outer;
    case ScaleMode::Block128x128: return (outer / 128) * ld + inner / 128;
    case ScaleMode::Mxfp8: {
      const int64_t block = inner / 32;
      return (outer / 128) * ld + (block / 4) * 512 + (outer % 32) * 16 + ((outer % 128) / 32) * 4 + block % 4;
    }
  }
  return 0;
}

// The value of a scale: a float32, or an E8M0 byte (2^(e - 127); 0xFF is NaN).
WEAVE_FUNCTION float scale_value(const void* scales, int64_t offset, bool e8m0) {
  if (!e8m0) return static_cast<const float*>(scales)[offset];
  const uint32_t e = static_cast<const uint8_t*>(scales)[offset];
  if (e == 0xffu) return float_of(0x7fc00000u);
  if (e == 0) return float_of(0x00400000u);  // 2^-127: a float32 subnormal
  return float_of(e << 23);
}

}  // namespace weave::internal::kernels
