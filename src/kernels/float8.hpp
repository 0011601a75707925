// The two OCP FP8 formats, bit for bit, on the host and on GPUs (the same
// code, so a value quantized on either is the same byte):
//
//   E4M3 ("e4m3fn"): sign, 4 exponent bits (bias 7), 3 mantissa bits. No
//     infinities; S.1111.111 is NaN; largest finite 448, smallest
//     subnormal 2^-9.
//   E5M2: sign, 5 exponent bits (bias 15), 2 mantissa bits, IEEE-like:
//     S.11111.00 is infinity, S.11111.xx (xx != 0) NaN; largest finite
//     57344, smallest subnormal 2^-16.
//
// Decoding is exact (every FP8 value is a float32). Encoding rounds a
// float32 to the nearest FP8 value, ties to the even mantissa, and
// saturates: what would round beyond the largest finite value (infinities
// included) becomes that value with its sign; NaN becomes 0x7F.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/function_qualifiers.hpp"

namespace weave::internal::kernels {

WEAVE_FUNCTION uint32_t bits_of(float value) {
  uint32_t bits = 0;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}
WEAVE_FUNCTION float float_of(uint32_t bits) {
  float value = 0;
  memcpy(&value, &bits, sizeof value);
  return value;
}

// An FP8 format: exponent and mantissa bits, bias, and whether its all-ones
// exponent holds infinities (E5M2) or values (E4M3, whose only NaN is all ones).
template <int ExponentBits, int MantissaBits, bool IeeeSpecials>
struct Float8Format {
  static constexpr int kExponentBits = ExponentBits, kMantissaBits = MantissaBits;
  static constexpr int kBias = (1 << (ExponentBits - 1)) - 1;
  static constexpr bool kIeeeSpecials = IeeeSpecials;
  static constexpr uint32_t kExponentMask = (1u << ExponentBits) - 1, kMantissaMask = (1u << MantissaBits) - 1;
  // Magnitude code of the largest finite value: E4M3 0x7E (448), E5M2 0x7B (57344).
  static constexpr uint32_t kMaxCode = IeeeSpecials ? ((kExponentMask - 1) << MantissaBits) | kMantissaMask
                                                    : (kExponentMask << MantissaBits) | (kMantissaMask - 1);
  static constexpr uint8_t kNaN = 0x7F;
};
using E4M3Format = Float8Format<4, 3, false>;
using E5M2Format = Float8Format<5, 2, true>;

template <class Format>
WEAVE_FUNCTION float decode_float8(uint8_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24;
  const uint32_t exponent = (code >> Format::kMantissaBits) & Format::kExponentMask;
  const uint32_t mantissa = code & Format::kMantissaMask;
  const bool all_ones = exponent == Format::kExponentMask;
  const bool nan = Format::kIeeeSpecials ? (all_ones && mantissa != 0) : (all_ones && mantissa == Format::kMantissaMask);
  if (nan) return float_of(sign | 0x7fc00000u);
  if (Format::kIeeeSpecials && all_ones) return float_of(sign | 0x7f800000u);
  if (exponent == 0) {
    // Subnormal: mantissa units of 2^(1 - bias - mantissa bits), exact in float.
    const float unit = float_of(static_cast<uint32_t>(127 + 1 - Format::kBias - Format::kMantissaBits) << 23);
    const float value = static_cast<float>(mantissa) * unit;
    return float_of(sign | bits_of(value));
  }
  return float_of(sign | ((exponent - Format::kBias + 127) << 23) | (mantissa << (23 - Format::kMantissaBits)));
}

template <class Format>
WEAVE_FUNCTION uint8_t encode_float8(float value) {
  const uint32_t bits = bits_of(value);
  const uint32_t sign = (bits >> 24) & 0x80u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return Format::kNaN;
  constexpr int kShift = 23 - Format::kMantissaBits;
  // The largest finite value and the midpoint above it (ties there round
  // to the even neighbour beyond it, which does not exist: saturate).
  const uint32_t max_bits = ((((Format::kMaxCode >> Format::kMantissaBits) - Format::kBias + 127)) << 23) |
                            ((Format::kMaxCode & Format::kMantissaMask) << kShift);
  const uint32_t beyond = max_bits + (1u << (kShift - 1));
  if (magnitude >= beyond) {
    // Exactly halfway rounds to the even mantissa: the maximum when its
    // mantissa is even (E4M3's 448 = 1.110b x 2^8), else the next binade (saturated too).
    return static_cast<uint8_t>(sign | Format::kMaxCode);
  }
  const int exponent = static_cast<int>(magnitude >> 23) - 127;
  if (exponent < 1 - Format::kBias) {
    // Below the smallest normal: a multiple of the subnormal unit, rounded
    // to nearest even in integer arithmetic on the float's bits.
    if (magnitude < 0x00800000u) return static_cast<uint8_t>(sign);  // float subnormals are far below FP8's
    const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;  // value = significand * 2^(exponent - 23)
    // units = value / 2^(1 - bias - mantissa bits) = significand * 2^(exponent - 23 - (1 - bias - mbits))
    const int right = 23 - (exponent - (1 - Format::kBias - Format::kMantissaBits));
    if (right >= 32) return static_cast<uint8_t>(sign);
    const uint32_t units = significand >> right, rest = significand & ((1u << right) - 1), half = 1u << (right - 1);
    const uint32_t rounded = units + ((rest > half || (rest == half && (units & 1u))) ? 1u : 0u);
    return static_cast<uint8_t>(sign | rounded);  // 2^mbits units is the smallest normal's code
  }
  const uint32_t mantissa = magnitude & 0x7fffffu;
  uint32_t code = (static_cast<uint32_t>(exponent + Format::kBias) << Format::kMantissaBits) | (mantissa >> kShift);
  const uint32_t rest = mantissa & ((1u << kShift) - 1), half = 1u << (kShift - 1);
  if (rest > half || (rest == half && (code & 1u))) ++code;  // a carry into the exponent is right
  return static_cast<uint8_t>(sign | code);
}

}  // namespace weave::internal::kernels
