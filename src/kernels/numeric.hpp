// Conversions between storage types and the arithmetic type of the
// element-wise kernels. 16-bit types exist only where CUDA's headers do.
#pragma once

#include "kernels/function_qualifiers.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace weave::internal::kernels {

template <class T>
struct Arithmetic {
  using type = float;  // float32 for float32 and the 16-bit types
};
template <>
struct Arithmetic<double> {
  using type = double;
};

template <class A, class T>
WEAVE_FUNCTION A load_as(const T& value) {
  return static_cast<A>(value);
}
template <class T, class A>
WEAVE_FUNCTION T store_as(A value) {
  return static_cast<T>(value);
}

#if defined(__CUDACC__)
template <>
WEAVE_FUNCTION float load_as<float, __half>(const __half& value) {
  return __half2float(value);
}
template <>
WEAVE_FUNCTION float load_as<float, __nv_bfloat16>(const __nv_bfloat16& value) {
  return __bfloat162float(value);
}
template <>
WEAVE_FUNCTION __half store_as<__half, float>(float value) {
  return __float2half_rn(value);
}
template <>
WEAVE_FUNCTION __nv_bfloat16 store_as<__nv_bfloat16, float>(float value) {
  return __float2bfloat16_rn(value);
}
#endif

}  // namespace weave::internal::kernels
