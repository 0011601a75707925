// A rearrangement step (plan::RearrangeOp) as the rectangles it copies:
// every row run times every column run, each a strided block of op(src)
// and of dst. Backends copy each rectangle with their element-wise kernel.
#pragma once

#include <cstdint>

#include "core/problem.hpp"
#include "exec/bindings.hpp"
#include "plan/schedule.hpp"

namespace weave::internal::kernels {

// The transpose of `x` as a view of the same memory: rows and columns
// swapped, storage order flipped.
inline exec::MatrixRef transposed(exec::MatrixRef x) {
  std::swap(x.rows, x.cols);
  x.order = x.order == Order::ColMajor ? Order::RowMajor : Order::ColMajor;
  return x;
}

// Rows [row0, row0 + rows) and columns [col0, col0 + cols) of `x`.
inline exec::MatrixRef sub_block(exec::MatrixRef x, int64_t row0, int64_t col0, int64_t rows, int64_t cols) {
  const int64_t element = x.order == Order::ColMajor ? row0 + col0 * x.ld : row0 * x.ld + col0;
  x.data = static_cast<char*>(x.data) + element * static_cast<int64_t>(dtype_size(x.dtype));
  x.rows = rows;
  x.cols = cols;
  return x;
}

// Calls copy(dst_block, src_block) for every rectangle of `op`, with
// src_block a block of op(src) (for op T or C a transposed view; a
// conjugation is the caller's to apply).
template <class Copy>
void for_each_rectangle(const plan::RearrangeOp& op, const exec::Bindings& bindings, Copy&& copy) {
  const exec::MatrixRef dst = bindings.resolve(op.dst);
  exec::MatrixRef src = bindings.resolve(op.src);
  if (op.src_op != Op::N) src = transposed(src);
  for (const plan::IndexRun& r : op.rows)
    for (const plan::IndexRun& c : op.cols)
      if (r.length > 0 && c.length > 0)
        copy(sub_block(dst, r.dst, c.dst, r.length, c.length), sub_block(src, r.src, c.src, r.length, c.length));
}

}  // namespace weave::internal::kernels
