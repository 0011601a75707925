// Conversions between storage types and the arithmetic type of the
// element-wise kernels. Under nvcc the 16-bit types are CUDA's __half and
// __nv_bfloat16; everywhere, types that C++ has no arithmetic for are also
// stored as their bits (Float16Bits, BFloat16Bits for the host backend,
// Float8E4M3 and Float8E5M2 on both sides), converted with round to
// nearest even.
#pragma once

#include <cstdint>

#include "kernels/float8.hpp"
#include "kernels/function_qualifiers.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace weave::internal::kernels {

struct Float16Bits {
  uint16_t bits;
};
struct BFloat16Bits {
  uint16_t bits;
};
struct Float8E4M3 {
  uint8_t bits;
};
struct Float8E5M2 {
  uint8_t bits;
};

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
  using type = float;  // float32 for float32, the 16-bit and the FP8 types
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

// float16: 5 exponent bits (bias 15), 10 mantissa bits, IEEE specials.
WEAVE_FUNCTION float half_bits_to_float(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu, mantissa = half & 0x3ffu;
  if (exponent == 0x1f) return float_of(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) return float_of(sign | bits_of(static_cast<float>(mantissa) * float_of(103u << 23)));  // * 2^-24
  return float_of(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}
WEAVE_FUNCTION uint16_t float_to_half_bits(float value) {
  const uint32_t x = bits_of(value);
  const uint32_t sign = (x >> 16) & 0x8000u, magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to 2^16 or beyond: inf
  const int exponent = static_cast<int>(magnitude >> 23) - 127;
  if (exponent < -14) {
    // Subnormal half: a multiple of 2^-24, rounded to nearest even.
    if (exponent < -25) return static_cast<uint16_t>(sign);
    const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
    const int right = 23 - (exponent + 24);
    const uint32_t units = significand >> right, rest = significand & ((1u << right) - 1), half = 1u << (right - 1);
    return static_cast<uint16_t>(sign | (units + ((rest > half || (rest == half && (units & 1u))) ? 1u : 0u)));
  }
  uint32_t code = (static_cast<uint32_t>(exponent + 15) << 10) | ((magnitude & 0x7fffffu) >> 13);
  const uint32_t rest = magnitude & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (code & 1u))) ++code;
  return static_cast<uint16_t>(sign | code);
}
// bfloat16: the upper half of a float32, rounded to nearest even.
WEAVE_FUNCTION float bfloat16_bits_to_float(uint16_t value) { return float_of(static_cast<uint32_t>(value) << 16); }
WEAVE_FUNCTION uint16_t float_to_bfloat16_bits(float value) {
  const uint32_t x = bits_of(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7fc0u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

template <>
WEAVE_FUNCTION float load_as<float, Float16Bits>(const Float16Bits& value) {
  return half_bits_to_float(value.bits);
}
template <>
WEAVE_FUNCTION Float16Bits store_as<Float16Bits, float>(float value) {
  return Float16Bits{float_to_half_bits(value)};
}
template <>
WEAVE_FUNCTION float load_as<float, BFloat16Bits>(const BFloat16Bits& value) {
  return bfloat16_bits_to_float(value.bits);
}
template <>
WEAVE_FUNCTION BFloat16Bits store_as<BFloat16Bits, float>(float value) {
  return BFloat16Bits{float_to_bfloat16_bits(value)};
}
template <>
WEAVE_FUNCTION float load_as<float, Float8E4M3>(const Float8E4M3& value) {
  return decode_float8<E4M3Format>(value.bits);
}
template <>
WEAVE_FUNCTION Float8E4M3 store_as<Float8E4M3, float>(float value) {
  return Float8E4M3{encode_float8<E4M3Format>(value)};
}
template <>
WEAVE_FUNCTION float load_as<float, Float8E5M2>(const Float8E5M2& value) {
  return decode_float8<E5M2Format>(value.bits);
}
template <>
WEAVE_FUNCTION Float8E5M2 store_as<Float8E5M2, float>(float value) {
  return Float8E5M2{encode_float8<E5M2Format>(value)};
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
