// Weave's element types as CUDA's C++ types, for the CUDA sources that
// instantiate a kernel per type: visit(TypePair<Dst, Src>{}) calls a
// generic lambda with the pair of types.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/dtype.hpp"

namespace weave::internal::cuda {

template <class Dst, class Src>
struct TypePair {
  using dst = Dst;
  using src = Src;
};

// visit(TypePair<T, T>{}) with T the CUDA type of `type`; false for none.
template <class Visit>
bool visit_same_type(DType type, Visit&& visit) {
  switch (type) {
    case DType::F64: visit(TypePair<double, double>{}); return true;
    case DType::F32: visit(TypePair<float, float>{}); return true;
    case DType::F16: visit(TypePair<__half, __half>{}); return true;
    case DType::BF16: visit(TypePair<__nv_bfloat16, __nv_bfloat16>{}); return true;
    default: return false;  // FP8 values are copied as bytes, never summed
  }
}

}  // namespace weave::internal::cuda
