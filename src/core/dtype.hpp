// Element types and the type partial sums accumulate in.
#pragma once

#include <cstddef>

#include "weave/weave.h"

namespace weave::internal {

enum class DType : int {
  F32 = WEAVE_FLOAT32,
  F64 = WEAVE_FLOAT64,
  F16 = WEAVE_FLOAT16,
  BF16 = WEAVE_BFLOAT16,
  C64 = WEAVE_COMPLEX64,
  C128 = WEAVE_COMPLEX128
};

inline std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F64: return 8;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::C64: return 8;
    case DType::C128: return 16;
  }
  return 0;
}

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::C64: return "c64";
    case DType::C128: return "c128";
  }
  return "?";
}

// 16-bit types sum their partial products in float32 and round once at the end.
inline DType accumulation_type(DType t) {
  return (t == DType::F16 || t == DType::BF16) ? DType::F32 : t;
}

// Complex types: a pair (real, imaginary) of their component type, which
// is how sums of them travel and are reduced (component by component).
inline bool is_complex(DType t) { return t == DType::C64 || t == DType::C128; }
inline DType component_type(DType t) {
  return t == DType::C64 ? DType::F32 : t == DType::C128 ? DType::F64 : t;
}
inline int components(DType t) { return is_complex(t) ? 2 : 1; }

inline bool is_valid_dtype(int t) {
  return (t >= WEAVE_FLOAT32 && t <= WEAVE_BFLOAT16) || t == WEAVE_COMPLEX64 || t == WEAVE_COMPLEX128;
}

}  // namespace weave::internal
