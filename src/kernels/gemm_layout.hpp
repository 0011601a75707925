// Every GEMM a schedule asks for, C = alpha op_a(A) op_b(B) + beta C with A,
// B and C each stored column- or row-major, becomes one column-major BLAS
// call: a row-major matrix is the column-major storage of its transpose, and
// a row-major C is computed as C^T = op_b(B)^T op_a(A)^T. N and T swap
// where an operand's order differs from C's; a conjugate transpose (C)
// would become a conjugate without transpose, which BLAS does not have:
// gemm_is_one_call() says whether a GEMM avoids that (plans check every GEMM).
#pragma once

#include <cstdint>

#include "core/problem.hpp"
#include "exec/bindings.hpp"

namespace weave::internal::kernels {

struct ColumnMajorGemm {
  Op op_left = Op::N, op_right = Op::N;
  int64_t m = 0, n = 0, k = 0;
  const void* left = nullptr;
  int64_t ld_left = 1;
  const void* right = nullptr;
  int64_t ld_right = 1;
  void* out = nullptr;
  int64_t ld_out = 1;
};

// The op BLAS applies to an operand stored in the other order than C.
inline Op other_order(Op op) { return op == Op::N ? Op::T : op == Op::T ? Op::N : Op::C; }

inline ColumnMajorGemm to_column_major(const exec::MatrixRef& a, Op op_a, const exec::MatrixRef& b, Op op_b,
                                       const exec::MatrixRef& c) {
  const bool a_col = a.order == Order::ColMajor, b_col = b.order == Order::ColMajor;
  ColumnMajorGemm g;
  const int64_t k = op_a == Op::N ? a.cols : a.rows;
  g.k = k;
  g.out = c.data;
  g.ld_out = c.ld;
  if (c.order == Order::ColMajor) {
    g.m = c.rows;
    g.n = c.cols;
    g.op_left = a_col ? op_a : other_order(op_a);
    g.op_right = b_col ? op_b : other_order(op_b);
    g.left = a.data;
    g.ld_left = a.ld;
    g.right = b.data;
    g.ld_right = b.ld;
  } else {
    g.m = c.cols;
    g.n = c.rows;
    g.op_left = b_col ? other_order(op_b) : op_b;
    g.op_right = a_col ? other_order(op_a) : op_a;
    g.left = b.data;
    g.ld_left = b.ld;
    g.right = a.data;
    g.ld_right = a.ld;
  }
  return g;
}

// Columns [col0, col0 + cols) of op(X) as a MatrixRef of the stored X.
inline exec::MatrixRef op_columns(exec::MatrixRef x, Op op, int64_t col0, int64_t cols) {
  const bool along_stored_cols = op == Op::N;  // op(X) columns are X's columns for op N, X's rows for op T
  const int64_t element =
      along_stored_cols ? (x.order == Order::ColMajor ? col0 * x.ld : col0) : (x.order == Order::ColMajor ? col0 : col0 * x.ld);
  x.data = static_cast<char*>(x.data) + element * static_cast<int64_t>(dtype_size(x.dtype));
  if (along_stored_cols)
    x.cols = cols;
  else
    x.rows = cols;
  return x;
}

// Rows [row0, row0 + rows) of op(X) as a MatrixRef of the stored X: the
// columns of op(X)^T, whose elements lie where X's do (op(X)^T is X, or its
// conjugate, for op T and C, and X^T for op N).
inline exec::MatrixRef op_rows(exec::MatrixRef x, Op op, int64_t row0, int64_t rows) {
  return op_columns(x, op == Op::N ? Op::T : Op::N, row0, rows);
}

}  // namespace weave::internal::kernels
