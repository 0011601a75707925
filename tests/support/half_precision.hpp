// Host-side float16 and bfloat16 storage for the tests, independent of
// CUDA's headers: conversions from and to float with round-to-nearest-even,
// the rounding the GPU kernels use. The oracle works on values rounded
// through these, so it sees exactly the inputs the library multiplies.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace weave_test {

inline uint32_t float_bits(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float float_from_bits(uint32_t bits) {
  float value = 0;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

inline uint16_t float_to_half_bits(float value) {
  const uint32_t x = float_bits(value);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;    // NaN
  if (magnitude >= 0x47800000u) return sign | 0x7c00u;   // >= 65536 (and inf): inf
  if (magnitude < 0x38800000u) {
    // Below the smallest normal half (2^-14): a multiple of 2^-24, rounded
    // to nearest even by the default floating-point rounding mode.
    const float units = std::nearbyint(std::fabs(value) * 16777216.0f);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(units));
  }
  const uint32_t exponent = (magnitude >> 23) - 127 + 15, mantissa = magnitude & 0x7fffffu;
  uint32_t half = (exponent << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // a carry may reach inf, as it should
  return static_cast<uint16_t>(sign | half);
}

inline float half_bits_to_float(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu, mantissa = half & 0x3ffu;
  if (exponent == 0) {
    const float value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  if (exponent == 31) return float_from_bits(sign | 0x7f800000u | (mantissa << 13));
  return float_from_bits(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

inline uint16_t float_to_bfloat16_bits(float value) {
  const uint32_t x = float_bits(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7fc0u);  // NaN
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

inline float bfloat16_bits_to_float(uint16_t value) { return float_from_bits(static_cast<uint32_t>(value) << 16); }

}  // namespace weave_test
