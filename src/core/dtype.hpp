// Element types and the type partial sums accumulate in.
#pragma once

#include <cstddef>

#include "weave/weave.h"

namespace weave::internal {

enum class DType : int { F32 = WEAVE_FLOAT32, F64 = WEAVE_FLOAT64, F16 = WEAVE_FLOAT16, BF16 = WEAVE_BFLOAT16 };

inline std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F64: return 8;
    case DType::F16: return 2;
    case DType::BF16: return 2;
  }
  return 0;
}

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
  }
  return "?";
}

// 16-bit types sum their partial products in float32 and round once at the end.
inline DType accumulation_type(DType t) {
  return (t == DType::F16 || t == DType::BF16) ? DType::F32 : t;
}

inline bool is_valid_dtype(int t) { return t >= WEAVE_FLOAT32 && t <= WEAVE_BFLOAT16; }

}  // namespace weave::internal
