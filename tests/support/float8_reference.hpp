// The tests' own reading of the FP8 formats and of the scale layouts
// (doc/fp8.md), written from the format definitions, not from the library's
// code: decoding by the formula value = (-1)^s 2^(e - bias) (1 + m / 2^M)
// (subnormals 2^(1 - bias) m / 2^M), encoding by finding the nearest of
// the decoded values (ties to the even mantissa, the sign kept, zeros
// included), saturating beyond the largest finite value. Plain and
// obviously right: the oracle of the library's bit-level code.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "weave/weave.h"

namespace weave_test {

struct Float8Spec {
  int exponent_bits, mantissa_bits, bias;
  bool ieee_specials;  // E5M2: all-ones exponent = inf/NaN; E4M3: only all-ones is NaN
  double max_finite;
};
constexpr Float8Spec kE4M3{4, 3, 7, false, 448.0};
constexpr Float8Spec kE5M2{5, 2, 15, true, 57344.0};

inline double reference_decode(const Float8Spec& f, unsigned code) {
  const bool negative = (code & 0x80u) != 0;
  const unsigned e = (code >> f.mantissa_bits) & ((1u << f.exponent_bits) - 1);
  const unsigned m = code & ((1u << f.mantissa_bits) - 1);
  const unsigned e_max = (1u << f.exponent_bits) - 1, m_max = (1u << f.mantissa_bits) - 1;
  double value;
  if (f.ieee_specials && e == e_max)
    value = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  else if (!f.ieee_specials && e == e_max && m == m_max)
    value = std::numeric_limits<double>::quiet_NaN();
  else if (e == 0)
    value = std::ldexp(static_cast<double>(m) / (1u << f.mantissa_bits), 1 - f.bias);
  else
    value = std::ldexp(1.0 + static_cast<double>(m) / (1u << f.mantissa_bits), static_cast<int>(e) - f.bias);
  return negative ? -value : value;
}

// Every code's value, decoded once per format.
inline const std::array<double, 256>& reference_values(const Float8Spec& f) {
  static const auto table = [](const Float8Spec& spec) {
    std::array<double, 256> values{};
    for (unsigned code = 0; code < 256; ++code) values[code] = reference_decode(spec, code);
    return values;
  };
  static const std::array<double, 256> e4m3 = table(kE4M3), e5m2 = table(kE5M2);
  return f.exponent_bits == 4 ? e4m3 : e5m2;
}

// The non-negative finite values with their codes, ascending (one code per
// value: +0 for zero).
inline const std::vector<std::pair<double, unsigned>>& reference_magnitudes(const Float8Spec& f) {
  static const auto sorted = [](const Float8Spec& spec) {
    std::vector<std::pair<double, unsigned>> v;
    for (unsigned code = 0; code < 128; ++code) {
      const double value = reference_values(spec)[code];
      if (std::isfinite(value)) v.emplace_back(value, code);
    }
    std::sort(v.begin(), v.end());
    return v;
  };
  static const std::vector<std::pair<double, unsigned>> e4m3 = sorted(kE4M3), e5m2 = sorted(kE5M2);
  return f.exponent_bits == 4 ? e4m3 : e5m2;
}

inline unsigned reference_encode(const Float8Spec& f, double x) {
  if (std::isnan(x)) return 0x7Fu;
  const unsigned sign = std::signbit(x) ? 0x80u : 0u;
  const double magnitude = std::min(std::fabs(x), f.max_finite);
  // The nearest of the two neighbours of |x|; on a tie the even mantissa.
  const std::vector<std::pair<double, unsigned>>& values = reference_magnitudes(f);
  auto above = std::lower_bound(values.begin(), values.end(), std::make_pair(magnitude, 0u));
  if (above == values.end()) --above;
  unsigned code = above->second;
  if (above != values.begin()) {
    const auto below = above - 1;
    const double down = magnitude - below->first, up = above->first - magnitude;
    if (down < up || (down == up && (below->second & 1u) == 0)) code = below->second;
  }
  return code | sign;
}

// AG-GEMM's wire-type quantization of one row as doc/fp8.md states the
// rule, in float32: amax over the row (NaN if any element is), scale =
// amax / 448 (1 when that is 0; the quiet NaN 0x7FC00000 for a NaN amax),
// each element divided by the scale in float32, then rounded to e4m3.
inline float reference_row_scale(const std::vector<float>& row) {
  float amax = 0.0f;
  for (float x : row) {
    if (std::isnan(x)) {
      uint32_t bits = 0x7fc00000u;
      float nan = 0;
      std::memcpy(&nan, &bits, sizeof nan);
      return nan;
    }
    amax = std::max(amax, std::fabs(x));
  }
  const float scale = amax / 448.0f;
  return scale == 0.0f ? 1.0f : scale;
}
inline std::vector<unsigned> reference_quantize_row(const std::vector<float>& row, float scale) {
  std::vector<unsigned> codes;
  for (float x : row) codes.push_back(reference_encode(kE4M3, static_cast<double>(x / scale)));
  return codes;
}

// The scale layouts of doc/fp8.md for a block whose op form is outer x
// inner (inner = K): how many scale elements the block has, and where the
// scale of its element (i, k) is.
inline int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline int64_t reference_scale_elements(weave_scale_mode_t mode, int64_t outer, int64_t inner) {
  if (outer == 0 || inner == 0) return 0;
  switch (mode) {
    case WEAVE_SCALE_NONE: return 0;
    case WEAVE_SCALE_TENSOR: return 1;
    case WEAVE_SCALE_ROW_WISE: return outer;
    case WEAVE_SCALE_BLOCK_1X128: return outer * div_up(inner, 128);
    case WEAVE_SCALE_BLOCK_128X128: return div_up(outer, 128) * div_up(div_up(inner, 128), 4) * 4;
    case WEAVE_SCALE_MXFP8: return div_up(outer, 128) * div_up(div_up(inner, 32), 4) * 512;
  }
  return 0;
}

inline int64_t reference_scale_index(weave_scale_mode_t mode, int64_t i, int64_t k, int64_t outer, int64_t inner) {
  switch (mode) {
    case WEAVE_SCALE_NONE:
    case WEAVE_SCALE_TENSOR: return 0;
    case WEAVE_SCALE_ROW_WISE: return i;
    case WEAVE_SCALE_BLOCK_1X128: return (k / 128) * outer + i;
    case WEAVE_SCALE_BLOCK_128X128: return (i / 128) * (div_up(div_up(inner, 128), 4) * 4) + k / 128;
    case WEAVE_SCALE_MXFP8: {
      const int64_t band = i / 128, row = i % 128, block = k / 32;
      return band * (div_up(div_up(inner, 32), 4) * 512) + (block / 4) * 512 + (row % 32) * 16 + (row / 32) * 4 +
             block % 4;
    }
  }
  return 0;
}

}  // namespace weave_test
