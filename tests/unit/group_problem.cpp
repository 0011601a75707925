#include "group_problem.hpp"

#include <algorithm>
#include <sstream>

namespace weave_test {

using weave::internal::Op;
using weave::internal::Operation;
using weave::internal::Order;

std::string GroupCase::name() const {
  std::ostringstream out;
  out << weave::internal::operation_name(operation) << " " << weave::internal::dtype_name(dtype);
  if (ab_type)
    out << " A,B=" << weave::internal::dtype_name(*ab_type) << " scales " << weave::internal::scale_mode_name(a_scale) << ", "
        << weave::internal::scale_mode_name(b_scale);
  if (wire_type) out << " wire " << weave::internal::dtype_name(*wire_type);
  out << " P=" << ranks << " M=" << m
      << " N=" << n << " K=" << k << " op=" << weave::internal::op_name(op_a) << weave::internal::op_name(op_b)
      << " order=" << (order_a == Order::ColMajor ? 'C' : 'R') << (order_b == Order::ColMajor ? 'C' : 'R')
      << (order_c == Order::ColMajor ? 'C' : 'R') << " " << shards_name(shards) << " bias=" << bias
      << " pad=" << ld_padding;
  return out.str();
}

namespace {

weave::internal::LocalBlock block(int64_t rows, int64_t cols, Order order, int64_t padding) {
  weave::internal::LocalBlock b;
  b.rows = rows;
  b.cols = cols;
  b.order = order;
  b.ld = weave::internal::min_leading_dimension(rows, cols, order) + padding;
  return b;
}

// A stored block holding `op_rows x op_cols` of op(X).
weave::internal::LocalBlock stored_block(Op op, int64_t op_rows, int64_t op_cols, Order order, int64_t padding) {
  return op == Op::N ? block(op_rows, op_cols, order, padding) : block(op_cols, op_rows, order, padding);
}

}  // namespace

std::vector<int64_t> m_counts(const GroupCase& c) {
  if (c.operation == Operation::GemmAr) return weave::internal::Split::balanced(c.m, c.ranks).counts();
  return make_counts(c.m, c.ranks, c.shards);
}

std::vector<int64_t> n_counts(const GroupCase& c) {
  if (c.operation != Operation::AgGemm) return {c.n};
  return make_counts(c.n, c.ranks, other_shards(c.shards));
}

std::vector<int64_t> k_counts(const GroupCase& c) {
  if (c.operation == Operation::AgGemm) return {c.k};
  return make_counts(c.k, c.ranks, other_shards(c.shards));
}

std::vector<weave::internal::Problem> make_group_problems(const GroupCase& c) {
  const int P = c.ranks;
  const bool ag = c.operation == Operation::AgGemm;
  const weave::internal::Split ms = weave::internal::Split::from_counts(m_counts(c), c.m, "M counts");
  const weave::internal::Split ns = weave::internal::Split::from_counts(n_counts(c), c.n, "N counts");
  const weave::internal::Split ks = weave::internal::Split::from_counts(k_counts(c), c.k, "K counts");
  std::vector<weave::internal::Problem> problems;
  for (int r = 0; r < P; ++r) {
    weave::internal::Problem p;
    p.operation = c.operation;
    p.op_a = c.op_a;
    p.op_b = c.op_b;
    p.m = c.m;
    p.n = c.n;
    p.k = c.k;
    p.dtype = p.c_type = p.bias_type = c.dtype;
    // With a wire type, A is stored in dtype and ab_type is B's.
    p.b_type = c.ab_type.value_or(c.dtype);
    p.a_type = c.wire_type ? c.dtype : p.b_type;
    p.a_scale = c.a_scale;
    p.b_scale = c.b_scale;
    p.wire_type = c.wire_type.value_or(p.a_type);
    p.wire_scale = !c.wire_type ? c.a_scale
                   : weave::internal::is_scaled(*c.wire_type) ? weave::internal::ScaleMode::RowWise
                                                              : weave::internal::ScaleMode::None;
    p.group_size = P;
    p.group_rank = r;
    p.m_split = ms;
    p.n_split = ns;
    p.k_split = ks;
    // The local extents of op(A), op(B) and C (DESIGN.md section 1).
    const int64_t a_rows = ag ? ms.count(r) : c.m, a_cols = ag ? c.k : ks.count(r);
    const int64_t b_rows = ag ? c.k : ks.count(r), b_cols = ag ? ns.count(r) : c.n;
    const int64_t c_rows = c.operation == Operation::GemmRs ? ms.count(r) : c.m;
    const int64_t c_cols = ag ? ns.count(r) : c.n;
    p.a = stored_block(c.op_a, a_rows, a_cols, c.order_a, c.ld_padding);
    p.b = stored_block(c.op_b, b_rows, b_cols, c.order_b, c.ld_padding);
    p.c = block(c_rows, c_cols, c.order_c, c.ld_padding);
    p.has_bias = c.bias;
    if (c.bias) p.bias = block(1, c_cols, Order::ColMajor, 0);
    // The scales of the blocks, in op form: op(A) outer (rows) x K, op(B) K x outer (columns).
    p.a_scales = weave::internal::scale_layout(c.a_scale, a_rows, a_cols);
    p.b_scales = weave::internal::scale_layout(c.b_scale, b_cols, b_rows);
    // As make_problem sets them: the chunk unit, and GEMM-AR's balanced
    // rows in it.
    p.chunk_unit = weave::internal::chunk_unit_of(p);
    if (c.operation == Operation::GemmAr) p.m_split = weave::internal::Split::balanced(c.m, P, p.chunk_unit);
    problems.push_back(p);
  }
  return problems;
}

namespace {

std::string grid_matrix_name(const GridMatrix& x) {
  std::ostringstream out;
  if (x.mb == 0)
    out << "2d";
  else
    out << x.mb << "x" << x.nb << "@" << x.rsrc << "," << x.csrc;
  if (x.row_start || x.col_start) out << "+" << x.row_start << "," << x.col_start;
  if (x.order == Order::RowMajor) out << "R";
  if (x.ld_padding) out << "p" << x.ld_padding;
  return out.str();
}

weave::internal::AxisLayout grid_axis(int64_t extent, int64_t block, int source, int64_t start, int procs) {
  if (block == 0)
    return weave::internal::AxisLayout::counts(weave::internal::Split::balanced(extent, procs));
  if (source < 0) return weave::internal::AxisLayout::replicated(extent, procs, block);
  return weave::internal::AxisLayout::cyclic(extent, block, source, procs, start);
}

weave::internal::GridLayout grid_layout(const GridMatrix& x, int64_t rows, int64_t cols, int prows, int pcols) {
  return {grid_axis(rows, x.mb, x.rsrc, x.row_start, prows), grid_axis(cols, x.nb, x.csrc, x.col_start, pcols)};
}

// The local array of rank (row, col): up to the matrix's last local row and
// column, as weave_matrix_local_shape says.
weave::internal::LocalBlock local_array(const weave::internal::GridLayout& l, const GridMatrix& x, int row, int col) {
  const int64_t rows = l.rows.is_replicated() ? l.rows.extent() : l.rows.local_end(row);
  const int64_t cols = l.cols.is_replicated() ? l.cols.extent() : l.cols.local_end(col);
  return block(rows, cols, x.order, x.ld_padding);
}

}  // namespace

std::string GridCase::name() const {
  std::ostringstream out;
  out << "GEMM " << weave::internal::dtype_name(dtype) << " " << prows << "x" << pcols << " M=" << m << " N=" << n
      << " K=" << k << " op=" << weave::internal::op_name(op_a) << weave::internal::op_name(op_b)
      << " A=" << grid_matrix_name(a) << " B=" << grid_matrix_name(b) << " C=" << grid_matrix_name(c);
  if (has_bias) out << " bias=" << grid_matrix_name(bias);
  return out.str();
}

std::vector<weave::internal::Problem> make_grid_problems(const GridCase& c) {
  const int P = c.prows * c.pcols;
  weave::internal::GridOperands grid;
  grid.prows = c.prows;
  grid.pcols = c.pcols;
  const bool at = c.op_a != Op::N, bt = c.op_b != Op::N;
  grid.a = grid_layout(c.a, at ? c.k : c.m, at ? c.m : c.k, c.prows, c.pcols);
  grid.b = grid_layout(c.b, bt ? c.n : c.k, bt ? c.k : c.n, c.prows, c.pcols);
  grid.c = grid_layout(c.c, c.m, c.n, c.prows, c.pcols);
  if (c.has_bias) grid.bias = grid_layout(c.bias, 1, c.n, c.prows, c.pcols);
  std::vector<weave::internal::Problem> problems;
  for (int r = 0; r < P; ++r) {
    weave::internal::Problem p;
    p.operation = Operation::Gemm;
    p.op_a = c.op_a;
    p.op_b = c.op_b;
    p.m = c.m;
    p.n = c.n;
    p.k = c.k;
    p.dtype = p.a_type = p.b_type = p.c_type = p.bias_type = c.dtype;
    p.group_size = P;
    p.group_rank = r;
    p.m_split = weave::internal::Split::whole(c.m);
    p.n_split = weave::internal::Split::whole(c.n);
    p.k_split = weave::internal::Split::whole(c.k);
    p.grid = grid;
    const int row = grid.row_of(r), col = grid.col_of(r);
    p.a = local_array(grid.a, c.a, row, col);
    p.b = local_array(grid.b, c.b, row, col);
    p.c = local_array(grid.c, c.c, row, col);
    p.has_bias = c.has_bias;
    if (c.has_bias) p.bias = local_array(grid.bias, c.bias, row, col);
    problems.push_back(p);
  }
  return problems;
}

}  // namespace weave_test
