// Weave's element types as CUDA's C++ types, for the CUDA sources that
// instantiate a kernel per type: visit(TypePair<Dst, Src>{}) calls a
// generic lambda with the pair of types.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/dtype.hpp"
#include "kernels/numeric.hpp"

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

// visit(TypePair<T, T>{}) for the complex types (kernels::Complex, laid
// out as cuComplex); false for the others. Apart from visit_same_type, so
// kernels that sum only real types (the SM transport's) are not made for
// complex ones.
template <class Visit>
bool visit_complex_type(DType type, Visit&& visit) {
  switch (type) {
    case DType::C64: visit(TypePair<kernels::Complex<float>, kernels::Complex<float>>{}); return true;
    case DType::C128: visit(TypePair<kernels::Complex<double>, kernels::Complex<double>>{}); return true;
    default: return false;
  }
}

// Calls visit(TypePair<Dst, Src>{}) for a pair the element-wise step
// converts between (epilogue_launcher.hpp lists them); false otherwise.
template <class Visit>
bool visit_epilogue_types(DType dst, DType src, Visit&& visit) {
  if (dst == src) return visit_same_type(dst, visit) || visit_complex_type(dst, visit);
  if (src == DType::F32 && dst == DType::F16) {
    visit(TypePair<__half, float>{});
    return true;
  }
  if (src == DType::F32 && dst == DType::BF16) {
    visit(TypePair<__nv_bfloat16, float>{});
    return true;
  }
  if (src == DType::F16 && dst == DType::F32) {
    visit(TypePair<float, __half>{});
    return true;
  }
  if (src == DType::BF16 && dst == DType::F32) {
    visit(TypePair<float, __nv_bfloat16>{});
    return true;
  }
  return false;
}

}  // namespace weave::internal::cuda
