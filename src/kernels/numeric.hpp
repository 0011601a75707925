// Conversions between storage types and the arithmetic type of the
// element-wise kernels. 16-bit types exist only where CUDA's headers do.
#pragma once

#include "kernels/function_qualifiers.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace weave::internal::kernels {

// A complex number as WEAVE_COMPLEX64 and WEAVE_COMPLEX128 store it: the
// real part, then the imaginary part (C's _Complex, Fortran's COMPLEX,
// cuComplex and std::complex all lay it out so). The same type on the host
// and on a GPU, where std::complex is not available.
template <class R>
struct Complex {
  R re = 0, im = 0;
  Complex() = default;
  WEAVE_FUNCTION Complex(R real) : re(real), im(0) {}  // NOLINT: a real number is a complex one
  WEAVE_FUNCTION Complex(R real, R imaginary) : re(real), im(imaginary) {}
  WEAVE_FUNCTION Complex& operator+=(const Complex& o) {
    re += o.re;
    im += o.im;
    return *this;
  }
};
template <class R>
WEAVE_FUNCTION Complex<R> operator+(Complex<R> a, const Complex<R>& b) {
  return a += b;
}
template <class R>
WEAVE_FUNCTION Complex<R> operator*(const Complex<R>& a, const Complex<R>& b) {
  return Complex<R>(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
template <class R>
WEAVE_FUNCTION bool operator!=(const Complex<R>& a, const Complex<R>& b) {
  return a.re != b.re || a.im != b.im;
}

// The conjugate; a real number is its own.
template <class R>
WEAVE_FUNCTION Complex<R> conjugate(const Complex<R>& x) {
  return Complex<R>(x.re, -x.im);
}
WEAVE_FUNCTION float conjugate(float x) { return x; }
WEAVE_FUNCTION double conjugate(double x) { return x; }

template <class T>
struct Arithmetic {
  using type = float;  // float32 for float32 and the 16-bit types
};
template <>
struct Arithmetic<double> {
  using type = double;
};
template <class R>
struct Arithmetic<Complex<R>> {
  using type = Complex<R>;
};

// A scalar (real, imaginary) in the arithmetic type A; real types drop
// the imaginary part (the planner refuses one that is not zero).
template <class A>
struct ScalarOf {
  WEAVE_FUNCTION static A make(double re, double) { return static_cast<A>(re); }
};
template <class R>
struct ScalarOf<Complex<R>> {
  WEAVE_FUNCTION static Complex<R> make(double re, double im) {
    return Complex<R>(static_cast<R>(re), static_cast<R>(im));
  }
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
