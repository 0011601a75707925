// The element types: the type table's rows, the library's FP8 and 16-bit
// conversions bit for bit against the tests' own reading of the formats
// (support/float8_reference.hpp, support/half_precision.hpp), and the scale
// layouts against the tests' reading of doc/fp8.md; which pairs of scale
// modes the CUDA backend hands to cuBLASLt.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "backends/cuda/fp8_scale_pairs.hpp"
#include "core/dtype.hpp"
#include "core/scale_layout.hpp"
#include "kernels/dequantize.hpp"
#include "kernels/numeric.hpp"
#include "kernels/quantize.hpp"
#include "kernels/scales.hpp"
#include "support/float8_reference.hpp"
#include "support/half_precision.hpp"

namespace weave_test {
namespace {

using weave::internal::DType;
using weave::internal::ScaleMode;
namespace kernels = weave::internal::kernels;

uint32_t bits(float x) {
  uint32_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// Equal as values, NaN with NaN, and zeros with their sign.
bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

TEST(TypeTable, EveryPublicTypeHasOneRow) {
  std::set<std::string> names;
  for (int t = WEAVE_FLOAT32; t <= WEAVE_COMPLEX128; ++t) {
    ASSERT_TRUE(weave::internal::is_valid_dtype(t)) << t;
    const weave::internal::DTypeRow& row = weave::internal::dtype_row(static_cast<DType>(t));
    EXPECT_TRUE(names.insert(row.name).second) << row.name << " twice";
    EXPECT_GT(row.size, 0u);
    EXPECT_NE(row.host, weave::internal::Support::No) << row.name << ": every type runs on the host";
    EXPECT_NE(row.cuda, weave::internal::Support::No) << row.name;
    // A scaled type takes the FP8 modes and no "none"; an unscaled one only "none".
    EXPECT_EQ(row.scaled, (row.scale_modes & weave::internal::scale_bit(ScaleMode::None)) == 0) << row.name;
    // Every operand type has a GPU GEMM rate relative to bf16's (planner rules scale by it).
    EXPECT_GT(row.gpu_gemm_rate, 0.0) << row.name;
  }
  EXPECT_EQ(weave::internal::gpu_gemm_rate(DType::BF16), 1.0);
  EXPECT_EQ(weave::internal::gpu_gemm_rate(DType::E4M3), 2.0);
  EXPECT_EQ(weave::internal::gpu_gemm_rate(DType::E5M2), 2.0);
  for (int t : {0, 9, 100, -1}) EXPECT_FALSE(weave::internal::is_valid_dtype(t)) << t;
  // Complex types are pairs of their component type.
  EXPECT_EQ(weave::internal::dtype_size(DType::C64), 8u);
  EXPECT_EQ(weave::internal::dtype_size(DType::C128), 16u);
  EXPECT_EQ(weave::internal::component_type(DType::C64), DType::F32);
  EXPECT_EQ(weave::internal::component_type(DType::C128), DType::F64);
  EXPECT_EQ(weave::internal::components(DType::C128), 2);
  EXPECT_EQ(weave::internal::components(DType::F64), 1);
  EXPECT_EQ(weave::internal::accumulation_type(DType::C64), DType::C64);
  EXPECT_EQ(weave::internal::dtype_size(DType::E4M3), 1u);
  EXPECT_EQ(weave::internal::dtype_size(DType::E5M2), 1u);
  EXPECT_EQ(weave::internal::accumulation_type(DType::E4M3), DType::F32);
  EXPECT_EQ(weave::internal::accumulation_type(DType::BF16), DType::F32);
  EXPECT_EQ(weave::internal::accumulation_type(DType::F64), DType::F64);
}

// weave_dtype_size reads the table: every type's size, 0 for a value that is no type.
TEST(TypeTable, PublicSizes) {
  EXPECT_EQ(weave_dtype_size(WEAVE_FLOAT64), 8u);
  EXPECT_EQ(weave_dtype_size(WEAVE_FLOAT32), 4u);
  EXPECT_EQ(weave_dtype_size(WEAVE_FLOAT16), 2u);
  EXPECT_EQ(weave_dtype_size(WEAVE_BFLOAT16), 2u);
  EXPECT_EQ(weave_dtype_size(WEAVE_FLOAT8_E4M3), 1u);
  EXPECT_EQ(weave_dtype_size(WEAVE_FLOAT8_E5M2), 1u);
  EXPECT_EQ(weave_dtype_size(WEAVE_COMPLEX64), 8u);
  EXPECT_EQ(weave_dtype_size(WEAVE_COMPLEX128), 16u);
  for (int t : {0, -1, 100}) EXPECT_EQ(weave_dtype_size(static_cast<weave_dtype_t>(t)), 0u) << t;
}

TEST(TypeTable, PairsAndOutputs) {
  using weave::internal::dtype_row;
  using weave::internal::type_bit;
  // cuBLASLt's FP8 pairs: not e5m2 with e5m2.
  EXPECT_TRUE(dtype_row(DType::E4M3).b_partners & type_bit(DType::E5M2));
  EXPECT_TRUE(dtype_row(DType::E5M2).b_partners & type_bit(DType::E4M3));
  EXPECT_FALSE(dtype_row(DType::E5M2).b_partners & type_bit(DType::E5M2));
  // FP8 products into bf16, f16, f32; never into FP8 or f64.
  for (DType fp8 : {DType::E4M3, DType::E5M2}) {
    const unsigned outputs = dtype_row(fp8).outputs;
    EXPECT_TRUE(outputs & type_bit(DType::BF16));
    EXPECT_TRUE(outputs & type_bit(DType::F16));
    EXPECT_TRUE(outputs & type_bit(DType::F32));
    EXPECT_FALSE(outputs & (type_bit(DType::E4M3) | type_bit(DType::E5M2) | type_bit(DType::F64)));
    EXPECT_FALSE(dtype_row(fp8).roles & (weave::internal::kRoleC | weave::internal::kRoleBias));
  }
  // The other types multiply themselves into themselves.
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    EXPECT_EQ(dtype_row(t).b_partners, type_bit(t));
    EXPECT_EQ(dtype_row(t).outputs, type_bit(t));
  }
  // The wire types of AG-GEMM: e4m3 and bf16.
  EXPECT_TRUE(dtype_row(DType::E4M3).roles & weave::internal::kRoleWire);
  EXPECT_TRUE(dtype_row(DType::BF16).roles & weave::internal::kRoleWire);
  EXPECT_FALSE(dtype_row(DType::E5M2).roles & weave::internal::kRoleWire);
}

// Every code of both formats decodes to the value the format defines.
// The CUDA backend's allowed pairs of scale modes, either way round: what
// cuBLASLt multiplied on sm_90 (doc/fp8.md), tensor-wise x row-wise by
// broadcasting, MXFP8 pairs from sm_100; nothing else (row-wise x 128x128
// made cuBLASLt abort).
TEST(TypeTable, Fp8ScalePairsTheCudaBackendRuns) {
  using weave::internal::ScaleMode;
  using weave::internal::cuda::scale_modes_multiply;
  const ScaleMode T = ScaleMode::Tensor, R = ScaleMode::RowWise, V = ScaleMode::Block1x128,
                  B = ScaleMode::Block128x128, M = ScaleMode::Mxfp8;
  const std::set<std::pair<ScaleMode, ScaleMode>> hopper = {{T, T}, {R, R}, {V, V}, {V, B}, {B, V}, {T, R}, {R, T}};
  for (ScaleMode a : {T, R, V, B, M, ScaleMode::None})
    for (ScaleMode b : {T, R, V, B, M, ScaleMode::None}) {
      EXPECT_EQ(scale_modes_multiply(a, b, 90), hopper.count({a, b}) == 1)
          << static_cast<int>(a) << " x " << static_cast<int>(b);
      EXPECT_EQ(scale_modes_multiply(a, b, 100), hopper.count({a, b}) == 1 || (a == M && b == M))
          << static_cast<int>(a) << " x " << static_cast<int>(b);
    }
}

TEST(Float8, DecodesEveryCode) {
  for (unsigned code = 0; code < 256; ++code) {
    const auto c = static_cast<uint8_t>(code);
    EXPECT_TRUE(same_value(kernels::decode_float8<kernels::E4M3Format>(c), reference_decode(kE4M3, code)))
        << "e4m3 code " << code;
    EXPECT_TRUE(same_value(kernels::decode_float8<kernels::E5M2Format>(c), reference_decode(kE5M2, code)))
        << "e5m2 code " << code;
  }
}

// The float32 values where rounding decides: every FP8 value, the
// midpoints between neighbours, the float32 numbers next to both, values
// beyond the largest finite one, specials, and random bit patterns.
std::vector<float> rounding_probes(const Float8Spec& spec) {
  std::vector<float> probes = {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                               std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                               std::numeric_limits<float>::min(), 1e30f, -1e-30f};
  std::vector<double> values;
  for (unsigned code = 0; code < 128; ++code)
    if (std::isfinite(reference_decode(spec, code))) values.push_back(reference_decode(spec, code));
  std::sort(values.begin(), values.end());
  values.push_back(2.0 * values.back() - values[values.size() - 2]);  // the next value the format lacks
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::vector<double> points{values[i]};
    if (i + 1 < values.size()) points.push_back((values[i] + values[i + 1]) / 2);
    for (double p : points)
      for (float sign : {1.0f, -1.0f}) {
        const float x = sign * static_cast<float>(p);
        probes.push_back(x);
        probes.push_back(std::nextafter(x, std::numeric_limits<float>::infinity()));
        probes.push_back(std::nextafter(x, -std::numeric_limits<float>::infinity()));
      }
  }
  std::mt19937 rng(12345);
  for (int i = 0; i < 200000; ++i) {
    float x = 0;
    const uint32_t b = rng();
    std::memcpy(&x, &b, sizeof x);
    probes.push_back(x);
    probes.push_back(std::ldexp(static_cast<float>(rng() % 100000) / 100000.0f, static_cast<int>(rng() % 40) - 24));
  }
  return probes;
}

TEST(Float8, EncodesToTheNearestEvenSaturating) {
  for (const Float8Spec* spec : {&kE4M3, &kE5M2}) {
    const bool e4m3 = spec == &kE4M3;
    int mismatches = 0;
    for (float x : rounding_probes(*spec)) {
      const unsigned got = e4m3 ? kernels::encode_float8<kernels::E4M3Format>(x)
                                : kernels::encode_float8<kernels::E5M2Format>(x);
      const unsigned want = reference_encode(*spec, x);
      if (got != want && mismatches++ < 5)
        ADD_FAILURE() << (e4m3 ? "e4m3" : "e5m2") << " encode(" << x << ", bits 0x" << std::hex << bits(x)
                      << ") = 0x" << got << ", expected 0x" << want;
    }
    EXPECT_EQ(mismatches, 0);
  }
}

TEST(Float8, EveryFiniteCodeSurvivesARoundTrip) {
  for (unsigned code = 0; code < 256; ++code) {
    const auto c = static_cast<uint8_t>(code);
    const float e4m3 = kernels::decode_float8<kernels::E4M3Format>(c);
    const float e5m2 = kernels::decode_float8<kernels::E5M2Format>(c);
    if (!std::isnan(e4m3)) {
      EXPECT_EQ(kernels::encode_float8<kernels::E4M3Format>(e4m3), code);
    }
    if (std::isfinite(e5m2)) {
      EXPECT_EQ(kernels::encode_float8<kernels::E5M2Format>(e5m2), code);
    }
  }
  EXPECT_EQ(kernels::encode_float8<kernels::E4M3Format>(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(kernels::encode_float8<kernels::E4M3Format>(1e9f), 0x7E);    // saturates at 448
  EXPECT_EQ(kernels::encode_float8<kernels::E4M3Format>(-1e9f), 0xFE);
  EXPECT_EQ(kernels::encode_float8<kernels::E5M2Format>(std::numeric_limits<float>::infinity()), 0x7B);  // 57344
}

// The host backend's 16-bit conversions against the tests' own.
TEST(SixteenBit, HostConversionsMatchTheReference) {
  std::mt19937 rng(777);
  std::vector<float> probes = {0.0f, -0.0f, 65504.0f, 65520.0f, 65519.99f, 1e-8f, 5.9604645e-8f, 2.9802322e-8f,
                               std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  for (int i = 0; i < 300000; ++i) {
    float x = 0;
    const uint32_t b = rng();
    std::memcpy(&x, &b, sizeof x);
    probes.push_back(x);
    probes.push_back(std::ldexp(static_cast<float>(rng() % 1000000) / 1000000.0f, static_cast<int>(rng() % 50) - 30));
  }
  for (float x : probes) {
    EXPECT_EQ(kernels::float_to_half_bits(x), float_to_half_bits(x)) << x;
    EXPECT_EQ(kernels::float_to_bfloat16_bits(x), float_to_bfloat16_bits(x)) << x;
  }
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto b = static_cast<uint16_t>(h);
    EXPECT_TRUE(same_value(kernels::half_bits_to_float(b), half_bits_to_float(b))) << h;
    EXPECT_TRUE(same_value(kernels::bfloat16_bits_to_float(b), bfloat16_bits_to_float(b))) << h;
  }
}

// The library's layouts (core/scale_layout.hpp, kernels/scales.hpp) against
// the tests' reading of doc/fp8.md: sizes, and where every element's scale is.
TEST(ScaleLayouts, SizesAndPositions) {
  const std::pair<ScaleMode, weave_scale_mode_t> modes[] = {
      {ScaleMode::Tensor, WEAVE_SCALE_TENSOR},
      {ScaleMode::RowWise, WEAVE_SCALE_ROW_WISE},
      {ScaleMode::Block1x128, WEAVE_SCALE_BLOCK_1X128},
      {ScaleMode::Block128x128, WEAVE_SCALE_BLOCK_128X128},
      {ScaleMode::Mxfp8, WEAVE_SCALE_MXFP8}};
  for (const auto& [mode, public_mode] : modes)
    for (int64_t outer : {0, 1, 5, 127, 128, 129, 300})
      for (int64_t inner : {0, 1, 31, 32, 33, 128, 129, 300, 520}) {
        SCOPED_TRACE(testing::Message() << weave::internal::scale_mode_name(mode) << " " << outer << " x " << inner);
        const weave::internal::ScaleLayout layout = weave::internal::scale_layout(mode, outer, inner);
        ASSERT_EQ(layout.elements(), reference_scale_elements(public_mode, outer, inner));
        if (layout.empty()) continue;
        for (int64_t i = 0; i < outer; i += 1 + outer / 40)
          for (int64_t k = 0; k < inner; k += 1 + inner / 60) {
            const int64_t at = kernels::scale_offset(mode, i, k, layout.ld);
            ASSERT_EQ(at, reference_scale_index(public_mode, i, k, outer, inner)) << "element " << i << ", " << k;
            ASSERT_LT(at, layout.elements());
          }
      }
}

// E8M0 scale bytes: 2^(e - 127), 0xFF NaN.
TEST(ScaleLayouts, E8M0Values) {
  for (int e = 0; e < 255; ++e) {
    const uint8_t byte = static_cast<uint8_t>(e);
    EXPECT_EQ(kernels::scale_value(&byte, 0, true), std::ldexp(1.0f, e - 127)) << e;
  }
  const uint8_t nan = 0xFF;
  EXPECT_TRUE(std::isnan(kernels::scale_value(&nan, 0, true)));
}

// The host emulation's decoding: FP8 values times their scales, every
// mode, with the operand transposed or not.
TEST(Dequantize, AppliesEveryScaleMode) {
  const int64_t rows = 130, cols = 200;  // op form: several 128-bands of rows and 128-blocks of K
  std::mt19937 rng(99);
  std::vector<kernels::Float8E4M3> stored(static_cast<std::size_t>(rows * cols));
  for (auto& x : stored) x.bits = static_cast<uint8_t>(rng() % 0x7F);  // finite, non-negative
  const std::pair<ScaleMode, weave_scale_mode_t> modes[] = {{ScaleMode::RowWise, WEAVE_SCALE_ROW_WISE},
                                                            {ScaleMode::Block1x128, WEAVE_SCALE_BLOCK_1X128},
                                                            {ScaleMode::Block128x128, WEAVE_SCALE_BLOCK_128X128}};
  for (bool transposed : {false, true})
    for (const auto& [mode, public_mode] : modes) {
      const weave::internal::ScaleLayout layout = weave::internal::scale_layout(mode, rows, cols);
      std::vector<float> scales(static_cast<std::size_t>(layout.elements()));
      for (float& s : scales) s = std::ldexp(1.0f, static_cast<int>(rng() % 9) - 4);
      std::vector<float> out(static_cast<std::size_t>(rows * cols), -1.0f);
      kernels::DequantizeFunctor<kernels::Float8E4M3> f;
      f.dst = out.data();
      f.dst_ld = rows;
      f.src = stored.data();
      f.src_ld = transposed ? cols : rows;  // column-major X: rows x cols, or cols x rows transposed
      f.transposed = transposed;
      f.rows = rows;
      f.cols = cols;
      f.scale_mode = mode;
      f.scales = scales.data();
      f.scale_ld = layout.ld;
      for (int64_t index = 0; index < f.size(); ++index) f(index);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t k = 0; k < cols; ++k) {
          const auto& x = stored[static_cast<std::size_t>(transposed ? k + i * cols : i + k * rows)];
          const double want = reference_decode(kE4M3, x.bits) *
                              scales[static_cast<std::size_t>(reference_scale_index(public_mode, i, k, rows, cols))];
          ASSERT_EQ(out[static_cast<std::size_t>(i + k * rows)], want) << i << ", " << k;
        }
    }
}

// The wire-type quantization, codes and scales bit for bit against the
// rule as doc/fp8.md states it: random rows, rows of zeros, rows whose amax
// / 448 underflows (scale 1), subnormal scales, rows with NaN or infinity,
// negative zeros; each row stored row-major and transposed.
TEST(Quantize, FollowsTheDocumentedRuleBitForBit) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::mt19937 rng(4242);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::vector<float>> rows;
  for (int r = 0; r < 200; ++r) {
    std::vector<float> row(static_cast<std::size_t>(1 + rng() % 300));
    const float magnitude = std::ldexp(1.0f, static_cast<int>(rng() % 60) - 30);
    for (float& x : row) x = normal(rng) * magnitude;
    rows.push_back(row);
  }
  rows.push_back(std::vector<float>(17, 0.0f));
  rows.push_back({0.0f, -0.0f, 0.0f});
  rows.push_back({1e-44f, -3e-45f, 0.0f});           // amax / 448 underflows to 0: scale 1
  rows.push_back({3e-42f, 1e-43f, -2e-42f});         // a subnormal scale
  rows.push_back({1.0f, nan, 3.0f});
  rows.push_back({1.0f, inf, -2.0f, -inf});
  rows.push_back({448.0f, -448.0f, 447.99f, 1e-30f});
  rows.push_back({3.4e38f, -1.0f, 1.0f});
  for (const std::vector<float>& row : rows)
    for (bool transposed : {false, true}) {
      const int64_t cols = static_cast<int64_t>(row.size());
      std::vector<kernels::Float8E4M3> codes(row.size());
      float scale = -1.0f;
      kernels::QuantizeRowsFunctor<float, kernels::Float8E4M3> f;
      f.src = row.data();
      f.src_ld = transposed ? cols : 1;  // one row: row-major ld cols, or a column (op T) of a column-major K x 1
      f.src_row_major = !transposed;
      f.dst = codes.data();
      f.dst_ld = transposed ? cols : 1;
      f.dst_row_major = !transposed;
      f.transposed = transposed;
      f.scales = &scale;
      f.rows = 1;
      f.cols = cols;
      f(0);
      const float want_scale = reference_row_scale(row);
      ASSERT_EQ(bits(scale), bits(want_scale)) << "scale of a row starting " << row[0];
      const std::vector<unsigned> want = reference_quantize_row(row, want_scale);
      for (std::size_t k = 0; k < row.size(); ++k)
        ASSERT_EQ(codes[k].bits, want[k]) << "element " << k << " = " << row[k] << " (scale " << scale << ")";
    }
}

// A wire type without scales: bf16 rounded from float32.
TEST(Quantize, Bfloat16WireIsRounding) {
  const std::vector<float> row = {1.0f, 1.00390625f, 1.01171875f, -3.3e-39f, 65504.0f};
  std::vector<kernels::BFloat16Bits> out(row.size());
  kernels::QuantizeRowsFunctor<float, kernels::BFloat16Bits> f;
  f.src = row.data();
  f.src_ld = static_cast<int64_t>(row.size());
  f.src_row_major = true;
  f.dst = out.data();
  f.dst_ld = static_cast<int64_t>(row.size());
  f.dst_row_major = true;
  f.rows = 1;
  f.cols = static_cast<int64_t>(row.size());
  f(0);
  for (std::size_t k = 0; k < row.size(); ++k) EXPECT_EQ(out[k].bits, float_to_bfloat16_bits(row[k])) << k;
}

}  // namespace
}  // namespace weave_test
