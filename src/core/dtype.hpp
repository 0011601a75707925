// Element types: one table, one row per type. Everything the library needs
// to know about a type is a column of its row (size, name, what its
// products are summed in, which backends run it, which scale modes it
// takes, where in a plan it may stand, what it may be multiplied with and
// into); code asks the table, never a list of types of its own. A new type
// is a new row (and its kernels), not a change of the planner's logic.
#pragma once

#include <cstddef>
#include <cstdint>

#include "weave/weave.h"

namespace weave::internal {

enum class DType : int {
  F32 = WEAVE_FLOAT32,
  F64 = WEAVE_FLOAT64,
  F16 = WEAVE_FLOAT16,
  BF16 = WEAVE_BFLOAT16,
  E4M3 = WEAVE_FLOAT8_E4M3,
  E5M2 = WEAVE_FLOAT8_E5M2,
  C64 = WEAVE_COMPLEX64,
  C128 = WEAVE_COMPLEX128,
  // Not a weave_dtype_t: the unsigned power-of-two exponents (E8M0) of
  // MXFP8's block scales, one byte each. Only scale buffers have it.
  UE8M0 = 100,
};

// How the scales of a scaled (FP8) operand apply (weave_scale_mode_t;
// layouts in doc/fp8.md, kernels/scales.hpp).
enum class ScaleMode : int {
  None = WEAVE_SCALE_NONE,
  Tensor = WEAVE_SCALE_TENSOR,
  RowWise = WEAVE_SCALE_ROW_WISE,
  Block1x128 = WEAVE_SCALE_BLOCK_1X128,
  Block128x128 = WEAVE_SCALE_BLOCK_128X128,
  Mxfp8 = WEAVE_SCALE_MXFP8,
};
constexpr unsigned scale_bit(ScaleMode m) { return 1u << static_cast<int>(m); }

// Where a type may stand in a plan (bits of DTypeRow::roles).
enum DTypeRole : unsigned {
  kRoleA = 1u << 0,
  kRoleB = 1u << 1,
  kRoleC = 1u << 2,
  kRoleBias = 1u << 3,
  kRoleWire = 1u << 4,   // what AG-GEMM may quantize A into before it travels
  kRoleScale = 1u << 5,  // the element type of a scale buffer
};

// How a backend runs a type.
enum class Support : uint8_t {
  No,
  Native,    // the backend's own arithmetic in that type
  Emulated,  // decoded to float32 and multiplied there: a correctness path, not a fast one
};

struct DTypeRow {
  DType type;
  const char* name;        // "f32": describe, messages
  const char* enumerator;  // "WEAVE_FLOAT32": messages that tell a caller what to write
  std::size_t size;        // bytes per element
  DType accumulation;      // what products and partial sums of it are summed in
  unsigned roles;          // DTypeRole bits
  Support host, cuda;      // the backends
  // weave_scale_mode_t values its descriptors may carry (scale_bit); an
  // unscaled type takes WEAVE_SCALE_NONE only, a scaled one needs a mode.
  unsigned scale_modes;
  bool scaled;             // its values mean nothing without their scales (FP8)
  double max_finite;       // largest finite value (quantization saturates there)
  // With this type as A: the types B may have, and the types C (and the
  // bias) may have (bits 1 << weave_dtype_t).
  unsigned b_partners;
  unsigned outputs;
  // What the CUDA backend needs of the device (compute capability, major *
  // 10 + minor); 0: any device the backend runs on.
  int cuda_min_compute;
  // A complex type is a pair (real, imaginary) of its component type, which
  // is how its sums travel and are reduced (component by component); a
  // real type is its own single component.
  DType component;
  int components;
  // A GEMM's peak rate on GPUs with A of this type, relative to bf16's
  // (Hopper's dense tensor-core rates: FP8 2; f32 without TF32, f64 and
  // the complex types run at about a fifteenth). Planner rules measured in
  // bf16 scale a GEMM's time by it.
  double gpu_gemm_rate;
};

// Bit of a weave_dtype_t in the partner masks (internal types have none).
constexpr unsigned type_bit(DType t) { return static_cast<int>(t) < 32 ? 1u << static_cast<int>(t) : 0u; }

namespace dtype_table_detail {
constexpr unsigned kAllScaleModes = scale_bit(ScaleMode::Tensor) | scale_bit(ScaleMode::RowWise) |
                                    scale_bit(ScaleMode::Block1x128) | scale_bit(ScaleMode::Block128x128) |
                                    scale_bit(ScaleMode::Mxfp8);
constexpr unsigned kOperand = kRoleA | kRoleB | kRoleC | kRoleBias;
constexpr unsigned kFp8Outputs = type_bit(DType::BF16) | type_bit(DType::F16) | type_bit(DType::F32);
}  // namespace dtype_table_detail

// The table. FP8 pairs are those cuBLASLt multiplies: e4m3 with e4m3 or
// e5m2, e5m2 with e4m3 (not e5m2 with e5m2); CUDA runs FP8 from sm_89.
inline constexpr DTypeRow kDTypeTable[] = {
    // type      name    enumerator              size accumulation roles
    {DType::F32, "f32", "WEAVE_FLOAT32", 4, DType::F32, dtype_table_detail::kOperand, Support::Native,
     Support::Native, scale_bit(ScaleMode::None), false, 3.4028234663852886e38, type_bit(DType::F32),
     type_bit(DType::F32), 0, DType::F32, 1, 1.0 / 15},
    {DType::F64, "f64", "WEAVE_FLOAT64", 8, DType::F64, dtype_table_detail::kOperand, Support::Native,
     Support::Native, scale_bit(ScaleMode::None), false, 1.7976931348623157e308, type_bit(DType::F64),
     type_bit(DType::F64), 0, DType::F64, 1, 1.0 / 15},
    {DType::F16, "f16", "WEAVE_FLOAT16", 2, DType::F32, dtype_table_detail::kOperand, Support::Emulated,
     Support::Native, scale_bit(ScaleMode::None), false, 65504.0, type_bit(DType::F16), type_bit(DType::F16), 0, DType::F16, 1, 1.0},
    {DType::BF16, "bf16", "WEAVE_BFLOAT16", 2, DType::F32, dtype_table_detail::kOperand | kRoleWire,
     Support::Emulated, Support::Native, scale_bit(ScaleMode::None), false, 3.3895313892515355e38,
     type_bit(DType::BF16), type_bit(DType::BF16), 0, DType::BF16, 1, 1.0},
    {DType::E4M3, "e4m3", "WEAVE_FLOAT8_E4M3", 1, DType::F32, kRoleA | kRoleB | kRoleWire, Support::Emulated,
     Support::Native, dtype_table_detail::kAllScaleModes, true, 448.0,
     type_bit(DType::E4M3) | type_bit(DType::E5M2), dtype_table_detail::kFp8Outputs, 89, DType::E4M3, 1, 2.0},
    {DType::E5M2, "e5m2", "WEAVE_FLOAT8_E5M2", 1, DType::F32, kRoleA | kRoleB, Support::Emulated, Support::Native,
     dtype_table_detail::kAllScaleModes, true, 57344.0, type_bit(DType::E4M3), dtype_table_detail::kFp8Outputs, 89, DType::E5M2, 1, 2.0},
    {DType::UE8M0, "ue8m0", "(MXFP8 scale)", 1, DType::F32, kRoleScale, Support::No, Support::Native,
     scale_bit(ScaleMode::None), false, 1.7014118346046923e38, 0, 0, 100, DType::UE8M0, 1, 0.0},
    // Complex: BLAS cgemm/zgemm on the host, cuBLASLt on the GPU; the
    // largest finite value is that of each component.
    {DType::C64, "c64", "WEAVE_COMPLEX64", 8, DType::C64, dtype_table_detail::kOperand, Support::Native,
     Support::Native, scale_bit(ScaleMode::None), false, 3.4028234663852886e38, type_bit(DType::C64),
     type_bit(DType::C64), 0, DType::F32, 2, 1.0 / 15},
    {DType::C128, "c128", "WEAVE_COMPLEX128", 16, DType::C128, dtype_table_detail::kOperand, Support::Native,
     Support::Native, scale_bit(ScaleMode::None), false, 1.7976931348623157e308, type_bit(DType::C128),
     type_bit(DType::C128), 0, DType::F64, 2, 1.0 / 15},
};

// The row of a type; null for an int that names none (callers' values).
constexpr const DTypeRow* find_dtype_row(int t) {
  for (const DTypeRow& row : kDTypeTable)
    if (static_cast<int>(row.type) == t) return &row;
  return nullptr;
}
const DTypeRow& dtype_row(DType t);  // every DType has a row

inline std::size_t dtype_size(DType t) { return dtype_row(t).size; }
inline const char* dtype_name(DType t) { return dtype_row(t).name; }
// What products and partial sums of `t` are summed in: float32 for the
// 16-bit and FP8 types, the type itself otherwise.
inline DType accumulation_type(DType t) { return dtype_row(t).accumulation; }
inline bool is_scaled(DType t) { return dtype_row(t).scaled; }
inline bool is_complex(DType t) { return dtype_row(t).components == 2; }
inline DType component_type(DType t) { return dtype_row(t).component; }
inline int components(DType t) { return dtype_row(t).components; }
inline double gpu_gemm_rate(DType t) { return dtype_row(t).gpu_gemm_rate; }

// Whether `t` is a weave_dtype_t a caller may put in a descriptor.
inline bool is_valid_dtype(int t) {
  const DTypeRow* row = find_dtype_row(t);
  return row && (row->roles & ~kRoleScale) != 0;
}
// "WEAVE_FLOAT32, WEAVE_FLOAT64, ..." (the callable types, in table order).
const char* dtype_enumerators();

const char* scale_mode_name(ScaleMode m);
inline bool is_valid_scale_mode(int m) { return m >= WEAVE_SCALE_NONE && m <= WEAVE_SCALE_MXFP8; }

}  // namespace weave::internal
