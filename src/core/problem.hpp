// The validated, group-level statement of one distributed multiplication:
// which operation, the global sizes M, N, K within the operation's group, how
// each of them is split over the group's ranks, and this rank's local blocks.
// Everything downstream (planning, execution) reads a Problem, never the
// user's descriptors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/axis_layout.hpp"
#include "core/dtype.hpp"
#include "core/grid.hpp"
#include "core/matrix.hpp"
#include "core/scale_layout.hpp"
#include "core/split.hpp"
#include "weave/weave.h"

namespace weave::internal {

enum class Operation { AgGemm = WEAVE_AG_GEMM, GemmRs = WEAVE_GEMM_RS, GemmAr = WEAVE_GEMM_AR, Gemm = WEAVE_GEMM };
// op(X): X, its transpose, or its conjugate transpose (complex types only;
// plans turn WEAVE_OP_C of real types into T).
enum class Op { N = WEAVE_OP_N, T = WEAVE_OP_T, C = WEAVE_OP_C };

const char* operation_name(Operation op);
inline const char* op_name(Op op) { return op == Op::N ? "N" : op == Op::T ? "T" : "C"; }

// Whether C = op_a(A) op_b(B), each stored in its order, is one BLAS (or
// cuBLAS) GEMM: a conjugate-transposed operand stored in the other order
// than C would need a conjugate without transpose, which BLAS lacks.
inline bool gemm_is_one_call(Op op_a, Order a, Op op_b, Order b, Order c) {
  return (op_a != Op::C || a == c) && (op_b != Op::C || b == c);
}

// How a matrix looks within the operation's group.
enum class SplitDim { None, Rows, Cols };

struct GroupMatrix {
  int64_t rows = 0, cols = 0;  // the group's global matrix
  SplitDim split_dim = SplitDim::None;
  Split split;                 // over the group's ranks along split_dim
};

// The stored local block of one operand.
struct LocalBlock {
  int64_t rows = 0, cols = 0, ld = 1;
  Order order = Order::ColMajor;
};

// How a matrix lies over the whole P_r x P_c grid (WEAVE_GEMM): its rows
// along the grid rows, its columns along the grid columns.
struct GridLayout {
  AxisLayout rows, cols;
};

// WEAVE_GEMM's operands over the grid. Group rank r sits at grid row
// r / pcols, column r % pcols. A and B as stored (not op(A), op(B)); bias
// is 1 x N.
struct GridOperands {
  int prows = 1, pcols = 1;
  GridLayout a, b, c, bias;
  int row_of(int rank) const { return rank / pcols; }
  int col_of(int rank) const { return rank % pcols; }
  int rank_at(int row, int col) const { return row * pcols + col; }
};

struct Problem {
  Operation operation = Operation::AgGemm;
  Op op_a = Op::N, op_b = Op::N;
  int64_t m = 0, n = 0, k = 0;  // within the group
  DType dtype = DType::F64;  // the element type of C: what products and finished rows travel in
  // Each operand's own element type (bias_type is C's when there is no bias).
  DType a_type = DType::F64, b_type = DType::F64, c_type = DType::F64, bias_type = DType::F64;
  // Scaled (FP8) operands: how their scales apply, and the layout of the
  // scales of this rank's blocks (core/scale_layout.hpp); empty otherwise.
  ScaleMode a_scale = ScaleMode::None, b_scale = ScaleMode::None;
  ScaleLayout a_scales, b_scales;
  // What A's rows travel and are multiplied in, with the scales they carry
  // there: A's own type and scales, or AG-GEMM's wire type, into which
  // every rank quantizes its rows once before they travel (quantized();
  // kernels/quantize.hpp).
  DType wire_type = DType::F64;
  ScaleMode wire_scale = ScaleMode::None;
  bool quantized() const { return wire_type != a_type; }
  // A or B carries scales (FP8).
  bool scaled() const { return a_scale != ScaleMode::None || b_scale != ScaleMode::None; }
  Memory memory = Memory::Host;
  weave_group_t group = WEAVE_GROUP_GRID;
  int group_size = 1, group_rank = 0, group_index = 0;
  // Splits over the group's ranks:
  //   AG-GEMM: m_split = rows of op(A), n_split = columns of op(B) and C.
  //   GEMM-RS: m_split = rows of C,      k_split = columns of op(A), rows of op(B).
  //   GEMM-AR: m_split = balanced rows of C (how the ring divides the work),
  //            k_split as for GEMM-RS.
  Split m_split, n_split, k_split;
  // Chunks of op(A)'s rows (AG-GEMM) or of C's rows (the reductions), and
  // GEMM-AR's balanced row split, begin on multiples of this many rows
  // counted from their shard's start: 16 for FP8 GEMMs, 128 where A's
  // scales cover 128-row bands, else 1 (problem.cpp says why).
  int64_t chunk_unit = 1;
  LocalBlock a, b, c, bias;
  bool has_bias = false;
  // WEAVE_GEMM: the layouts over the whole grid (the group); the local
  // blocks above are the local arrays (see MatrixDesc).
  GridOperands grid;

  // The arguments every rank of the group must agree on.
  std::vector<Argument> agreement_fields() const;
  // "AG-GEMM f64 M=1000 N=512 K=300, op(A)=N op(B)=T"; with types of
  // their own: "AG-GEMM e4m3(row-wise) x e4m3(row-wise) -> bf16 M=...".
  std::string summary() const;
  // "f64", or "e4m3(row-wise) x e5m2(tensor-wise) -> bf16".
  std::string types() const;
};

// What Problem::chunk_unit is for `p` (its types, scale modes and wire
// type set): 128, 16 or 1 (problem.cpp says why).
int64_t chunk_unit_of(const Problem& p);

// Resolves a matrix to what it is within `group` (a BLOCK_2D matrix becomes
// the panel of my grid row or column). Throws on a distribution that cannot
// be used over this group.
GroupMatrix resolve_in_group(const MatrixDesc& m, const GroupView& group, const std::string& name);

// Validates the operation's arguments on this rank and builds the Problem
// over `grid`, the plan's (every operand must be created on it). bias may
// be null; wire_type is the plan descriptor's (a weave_dtype_t as an int,
// 0: none).
Problem make_problem(const GridState& grid, Operation operation, weave_group_t group_kind, Op op_a, Op op_b,
                     const MatrixDesc& a, const MatrixDesc& b, const MatrixDesc& c,
                     const MatrixDesc* bias, int wire_type = 0);

}  // namespace weave::internal
