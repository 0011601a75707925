// Builds the weave::internal::Problem of every rank of a group directly, without MPI:
// make_problem needs descriptors on an MPI grid, but a Problem is a plain
// struct, so schedule tests fill its splits and local blocks themselves,
// following the contract (DESIGN.md section 1) rather than the library's
// descriptor code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/problem.hpp"
#include "support/oracle.hpp"

namespace weave_test {

// One group-level multiplication, the same on every rank of the group.
struct GroupCase {
  weave::internal::Operation operation = weave::internal::Operation::AgGemm;
  weave::internal::Op op_a = weave::internal::Op::N, op_b = weave::internal::Op::N;
  int64_t m = 0, n = 0, k = 0;
  weave::internal::DType dtype = weave::internal::DType::F64;  // C's, and A's and B's unless ab_type is set
  // A and B of a type of their own (FP8), with their scale modes.
  std::optional<weave::internal::DType> ab_type;
  weave::internal::ScaleMode a_scale = weave::internal::ScaleMode::None, b_scale = weave::internal::ScaleMode::None;
  // AG-GEMM's wire type (A, stored in dtype, quantized into it; e4m3 rows
  // with row-wise scales); ab_type is then B's type alone.
  std::optional<weave::internal::DType> wire_type;
  int ranks = 1;
  // How the split dimensions are cut: M (AG-GEMM, GEMM-RS) follows `shards`,
  // N and K follow a different pattern so a mix-up of the two shows.
  Shards shards = Shards::Balanced;
  weave::internal::Order order_a = weave::internal::Order::ColMajor, order_b = weave::internal::Order::ColMajor,
               order_c = weave::internal::Order::ColMajor;
  bool bias = false;
  int64_t ld_padding = 0;  // added to every tight leading dimension of A, B, C

  std::string name() const;
};

// The counts of each split dimension over the group.
std::vector<int64_t> m_counts(const GroupCase& c);
std::vector<int64_t> n_counts(const GroupCase& c);
std::vector<int64_t> k_counts(const GroupCase& c);

// problems[r] is the Problem of group rank r.
std::vector<weave::internal::Problem> make_group_problems(const GroupCase& c);

// One matrix of a WEAVE_GEMM over a P_r x P_c grid: block-cyclic with
// blocks mb x nb from grid (rsrc, csrc) (-1: replicated along that grid
// dimension), starting at (row_start, col_start) of its local arrays; or,
// with mb = nb = 0, one balanced block per grid row and column (BLOCK_2D).
struct GridMatrix {
  int64_t mb = 0, nb = 0;
  int rsrc = 0, csrc = 0;
  int64_t row_start = 0, col_start = 0;
  weave::internal::Order order = weave::internal::Order::ColMajor;
  int64_t ld_padding = 0;
};

struct GridCase {
  int prows = 1, pcols = 1;
  int64_t m = 0, n = 0, k = 0;
  weave::internal::Op op_a = weave::internal::Op::N, op_b = weave::internal::Op::N;
  weave::internal::DType dtype = weave::internal::DType::F64;
  GridMatrix a, b, c, bias;  // A and B as stored (K x M for op(A) = A^T)
  bool has_bias = false;

  std::string name() const;
};

// problems[r] is the WEAVE_GEMM Problem of grid rank r (row-major).
std::vector<weave::internal::Problem> make_grid_problems(const GridCase& c);

}  // namespace weave_test
