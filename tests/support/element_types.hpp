// The element types as the tests store them on the host: sizes, loading
// and storing one element as a double (FP8 through the tests' own reading
// of the formats, support/float8_reference.hpp), the rounding a value goes
// through when stored, and the roundoffs the oracle's tolerance is built of.
// kScaleE8M0 stands for MXFP8's scale bytes (2^(e - 127)), which are no
// weave_dtype_t.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <complex>
#include <cstring>

#include "support/float8_reference.hpp"
#include "support/half_precision.hpp"
#include "weave/weave.h"

namespace weave_test {

constexpr weave_dtype_t kScaleE8M0 = static_cast<weave_dtype_t>(100);

inline std::size_t element_size(weave_dtype_t t) {
  switch (t) {
    case WEAVE_FLOAT64: return 8;
    case WEAVE_FLOAT32: return 4;
    case WEAVE_FLOAT16:
    case WEAVE_BFLOAT16: return 2;
    case WEAVE_FLOAT8_E4M3:
    case WEAVE_FLOAT8_E5M2: return 1;
    case WEAVE_COMPLEX64: return 8;
    case WEAVE_COMPLEX128: return 16;
  }
  return t == kScaleE8M0 ? 1 : 0;
}

inline bool is_complex_type(weave_dtype_t t) { return t == WEAVE_COMPLEX64 || t == WEAVE_COMPLEX128; }
// A complex element's two parts are of this type.
inline weave_dtype_t component_of(weave_dtype_t t) {
  return t == WEAVE_COMPLEX64 ? WEAVE_FLOAT32 : t == WEAVE_COMPLEX128 ? WEAVE_FLOAT64 : t;
}

inline bool is_16bit(weave_dtype_t t) { return t == WEAVE_FLOAT16 || t == WEAVE_BFLOAT16; }
inline bool is_fp8(weave_dtype_t t) { return t == WEAVE_FLOAT8_E4M3 || t == WEAVE_FLOAT8_E5M2; }
inline const Float8Spec& float8_spec(weave_dtype_t t) { return t == WEAVE_FLOAT8_E4M3 ? kE4M3 : kE5M2; }

inline const char* dtype_short_name(weave_dtype_t t) {
  switch (t) {
    case WEAVE_FLOAT32: return "f32";
    case WEAVE_FLOAT64: return "f64";
    case WEAVE_FLOAT16: return "f16";
    case WEAVE_BFLOAT16: return "bf16";
    case WEAVE_FLOAT8_E4M3: return "e4m3";
    case WEAVE_FLOAT8_E5M2: return "e5m2";
    case WEAVE_COMPLEX64: return "c64";
    case WEAVE_COMPLEX128: return "c128";
  }
  return "?";
}

inline void store_element(void* base, int64_t index, weave_dtype_t t, double value) {
  unsigned char* at = static_cast<unsigned char*>(base) + index * static_cast<int64_t>(element_size(t));
  switch (t) {
    case WEAVE_COMPLEX64:
    case WEAVE_COMPLEX128:  // (value, 0)
      store_element(base, 2 * index, component_of(t), value);
      store_element(base, 2 * index + 1, component_of(t), 0.0);
      return;
    case WEAVE_FLOAT64: std::memcpy(at, &value, 8); return;
    case WEAVE_FLOAT32: {
      const float f = static_cast<float>(value);
      std::memcpy(at, &f, 4);
      return;
    }
    case WEAVE_FLOAT16: {
      const uint16_t h = float_to_half_bits(static_cast<float>(value));
      std::memcpy(at, &h, 2);
      return;
    }
    case WEAVE_BFLOAT16: {
      const uint16_t b = float_to_bfloat16_bits(static_cast<float>(value));
      std::memcpy(at, &b, 2);
      return;
    }
    case WEAVE_FLOAT8_E4M3:
    case WEAVE_FLOAT8_E5M2:
      *at = static_cast<unsigned char>(reference_encode(float8_spec(t), value));
      return;
  }
  if (t == kScaleE8M0) *at = std::isnan(value) ? 0xFF : static_cast<unsigned char>(std::ilogb(value) + 127);
}

// The real part of a complex element.
inline double load_element(const void* base, int64_t index, weave_dtype_t t) {
  const unsigned char* at = static_cast<const unsigned char*>(base) + index * static_cast<int64_t>(element_size(t));
  switch (t) {
    case WEAVE_COMPLEX64:
    case WEAVE_COMPLEX128: return load_element(base, 2 * index, component_of(t));
    case WEAVE_FLOAT64: {
      double d = 0;
      std::memcpy(&d, at, 8);
      return d;
    }
    case WEAVE_FLOAT32: {
      float f = 0;
      std::memcpy(&f, at, 4);
      return f;
    }
    case WEAVE_FLOAT16: {
      uint16_t h = 0;
      std::memcpy(&h, at, 2);
      return half_bits_to_float(h);
    }
    case WEAVE_BFLOAT16: {
      uint16_t b = 0;
      std::memcpy(&b, at, 2);
      return bfloat16_bits_to_float(b);
    }
    case WEAVE_FLOAT8_E4M3:
    case WEAVE_FLOAT8_E5M2: return reference_decode(float8_spec(t), *at);
  }
  if (t == kScaleE8M0) return *at == 0xFF ? std::nan("") : std::ldexp(1.0, static_cast<int>(*at) - 127);
  return 0.0;
}

// Any element as a complex number (a real type's has no imaginary part;
// a real type stores the real part alone).
inline void store_value(void* base, int64_t index, weave_dtype_t t, std::complex<double> value) {
  if (!is_complex_type(t)) return store_element(base, index, t, value.real());
  store_element(base, 2 * index, component_of(t), value.real());
  store_element(base, 2 * index + 1, component_of(t), value.imag());
}
inline std::complex<double> load_value(const void* base, int64_t index, weave_dtype_t t) {
  if (!is_complex_type(t)) return load_element(base, index, t);
  return {load_element(base, 2 * index, component_of(t)), load_element(base, 2 * index + 1, component_of(t))};
}

// The value `value` becomes when stored as `t`.
inline double round_to(weave_dtype_t t, double value) {
  unsigned char storage[16];
  store_element(storage, 0, t, value);
  return load_element(storage, 0, t);
}
inline std::complex<double> round_to(weave_dtype_t t, std::complex<double> value) {
  unsigned char storage[16];
  store_value(storage, 0, t, value);
  return load_value(storage, 0, t);
}

// Unit roundoff of the arithmetic a type's products and sums are done in:
// float32 for float32 and the 16-bit types (fp32 accumulation), float64 for
// float64. With TF32 tensor cores, float32 inputs keep 10 mantissa bits.
// Complex types: twice their component's, for the two products and the sum
// in each complex product.
inline double accumulation_roundoff(weave_dtype_t t, bool tf32) {
  if (t == WEAVE_COMPLEX128) return 0x1p-52;
  if (t == WEAVE_COMPLEX64) return 0x1p-23;
  if (t == WEAVE_FLOAT64) return 0x1p-53;
  if (t == WEAVE_FLOAT32 && tf32) return 0x1p-11;
  return 0x1p-24;
}

// Unit roundoff of storing a result in a type narrower than the arithmetic.
inline double output_roundoff(weave_dtype_t t) {
  return t == WEAVE_FLOAT16 ? 0x1p-11 : t == WEAVE_BFLOAT16 ? 0x1p-8 : 0.0;
}

// Half the spacing of a type's subnormal numbers: the absolute error of
// storing a result that small, which no error relative to the result covers
// (a float16 C of 6.4e-6 is a multiple of 2^-24 = 6e-8).
inline double output_underflow(weave_dtype_t t) {
  t = component_of(t);
  return t == WEAVE_FLOAT16 ? 0x1p-25 : t == WEAVE_BFLOAT16 ? 0x1p-134 : t == WEAVE_FLOAT32 ? 0x1p-150 : 0.0;
}

}  // namespace weave_test
