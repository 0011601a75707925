#include "core/problem.hpp"

#include "core/error.hpp"

namespace weave::internal {

const char* operation_name(Operation op) {
  switch (op) {
    case Operation::AgGemm: return "AG-GEMM";
    case Operation::GemmRs: return "GEMM-RS";
    case Operation::GemmAr: return "GEMM-AR";
    case Operation::Gemm: return "GEMM";
  }
  return "?";
}

namespace {

const char* split_name(SplitDim d) {
  switch (d) {
    case SplitDim::None: return "not split (replicated)";
    case SplitDim::Rows: return "split by rows";
    case SplitDim::Cols: return "split by columns";
  }
  return "?";
}

// op(X) of a group matrix: a transpose swaps the shape and the split dimension.
GroupMatrix apply_op(GroupMatrix g, Op op) {
  if (op == Op::N) return g;
  std::swap(g.rows, g.cols);
  if (g.split_dim == SplitDim::Rows)
    g.split_dim = SplitDim::Cols;
  else if (g.split_dim == SplitDim::Cols)
    g.split_dim = SplitDim::Rows;
  return g;
}

// The split of `g` along `wanted` over `parts` ranks. A group of one rank
// accepts any distribution (everything is local); otherwise the distribution
// must split the wanted dimension.
Split require_split(const GroupMatrix& g, SplitDim wanted, int parts, const std::string& name,
                    const std::string& why) {
  const int64_t extent = wanted == SplitDim::Rows ? g.rows : g.cols;
  if (parts == 1) return Split::whole(extent);
  if (g.split_dim != wanted)
    fail(WEAVE_ERROR_DISTRIBUTION_MISMATCH, name, " must be ", split_name(wanted), " over the group (",
         why, ") but it is ", split_name(g.split_dim));
  return g.split;
}

void require_unsplit(const GroupMatrix& g, int parts, const std::string& name, const std::string& why) {
  if (parts > 1 && g.split_dim != SplitDim::None)
    fail(WEAVE_ERROR_DISTRIBUTION_MISMATCH, name, " must be replicated over the group (", why,
         ") but it is ", split_name(g.split_dim));
}

void require_extent(int64_t actual, int64_t expected, const std::string& what,
                    const std::string& expected_what) {
  if (actual != expected)
    fail(WEAVE_ERROR_SHAPE_MISMATCH, what, " = ", actual, " but ", expected_what, " = ", expected);
}

void require_same_split(const Split& a, const Split& b, const std::string& a_name,
                        const std::string& b_name) {
  if (a != b)
    fail(WEAVE_ERROR_DISTRIBUTION_MISMATCH, a_name, " counts ", format_counts(a.counts()), " differ from ",
         b_name, " counts ", format_counts(b.counts()), "; they must be split the same way");
}

// The element types of a product, from the type table: A's row says which
// types B and C (and the bias, C's type) may have. An unfitting pair is
// named with both types.
// `a_what` names A's type in messages: "A", or "A's wire type".
void check_types_fit(DType a, const char* a_what, DType b, DType c, const DType* bias) {
  const DTypeRow& ra = dtype_row(a);
  if (!(ra.roles & kRoleA)) fail(WEAVE_ERROR_UNSUPPORTED_TYPE, a_what, " is ", ra.name, ", which cannot be A");
  if (!(ra.b_partners & type_bit(b))) {
    std::string partners;
    for (const DTypeRow& row : kDTypeTable)
      if (ra.b_partners & type_bit(row.type)) partners += str(partners.empty() ? "" : " or ", row.name);
    fail(WEAVE_ERROR_UNSUPPORTED_TYPE, a_what, " is ", ra.name, " and B is ", dtype_name(b),
         ", which do not multiply: with A ", ra.name, ", B must be ", partners);
  }
  if (!(ra.outputs & type_bit(c))) {
    std::string outputs;
    for (const DTypeRow& row : kDTypeTable)
      if (ra.outputs & type_bit(row.type)) outputs += str(outputs.empty() ? "" : ", ", row.name);
    fail(WEAVE_ERROR_UNSUPPORTED_TYPE, a_what, " is ", ra.name, " and C is ", dtype_name(c), ": a product of ",
         ra.name, " operands is stored in ", outputs);
  }
  if (bias && *bias != c)
    fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "bias is ", dtype_name(*bias), " but C is ", dtype_name(c),
         "; bias must have C's element type");
}

LocalBlock local_block(const MatrixDesc& m) {
  return LocalBlock{m.local_rows, m.local_cols, m.ld, m.order};
}

// The checks every operation makes of its operands: one grid, one element
// type, one memory space. Fills the types and memory of `p`.
// AG-GEMM's wire type: narrower than A's (unscaled, float) type, one of the
// table's wire types; e4m3 rows carry row-wise scales, bf16 rows none.
DType resolve_wire_type(int wire_type, Operation operation, DType a) {
  if (wire_type == 0) return a;
  if (!is_valid_dtype(wire_type))
    fail(WEAVE_ERROR_INVALID_VALUE, "wire_type = ", wire_type, " is not a weave_dtype_t");
  const DTypeRow& w = dtype_row(static_cast<DType>(wire_type));
  std::string wire_types;
  for (const DTypeRow& row : kDTypeTable)
    if (row.roles & kRoleWire) wire_types += str(wire_types.empty() ? "" : " or ", row.enumerator);
  if (!(w.roles & kRoleWire))
    fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "wire_type = ", w.enumerator, " is not a wire type (", wire_types, ")");
  if (operation != Operation::AgGemm)
    fail(WEAVE_ERROR_UNSUPPORTED, "wire_type is for AG-GEMM, whose A travels; ", operation_name(operation),
         " moves products (in C's type, or float32 partial sums)");
  const DTypeRow& ra = dtype_row(a);
  if (ra.scaled || ra.accumulation != DType::F32 || ra.size <= w.size)
    fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "A is ", ra.name, " and wire_type is ", w.name, ": a wire type is narrower "
         "than A's type, which is f32, f16 or bf16 (A is quantized into it)");
  return w.type;
}

void check_operands_alike(Problem& p, const GridState& grid, const MatrixDesc& a, const MatrixDesc& b,
                          const MatrixDesc& c, const MatrixDesc* bias, int wire_type) {
  // The operands lie on the grid the plan is made on, not on another
  // (whose ranks would be waited for), nor on one destroyed.
  std::string elsewhere;
  int count = 0;
  for (const auto& [name, m] : {std::pair<const char*, const MatrixDesc*>{"A", &a}, {"B", &b}, {"C", &c},
                                {"bias", bias}})
    if (m && m->grid.get() != &grid) elsewhere += str(count++ ? ", " : "", name);
  if (count)
    fail(WEAVE_ERROR_INVALID_VALUE, elsewhere, count == 1 ? " was" : " were", " created on another grid than the ",
         "plan's (weave_plan_create's grid); a plan's matrices must be created on its grid");
  // A's rows are multiplied in the wire type when there is one.
  p.wire_type = resolve_wire_type(wire_type, p.operation, a.dtype);
  p.wire_scale = p.wire_type == a.dtype ? a.scale_mode
                 : is_scaled(p.wire_type) ? ScaleMode::RowWise
                                          : ScaleMode::None;
  check_types_fit(p.wire_type, p.wire_type == a.dtype ? "A" : "A's wire type", b.dtype, c.dtype,
                  bias ? &bias->dtype : nullptr);
  p.dtype = c.dtype;
  p.a_type = a.dtype;
  p.b_type = b.dtype;
  p.c_type = c.dtype;
  p.bias_type = bias ? bias->dtype : c.dtype;
  p.a_scale = a.scale_mode;
  p.b_scale = b.scale_mode;
  if (a.memory != c.memory || b.memory != c.memory || (bias && bias->memory != c.memory))
    fail(WEAVE_ERROR_POINTER_KIND, "A, B, C", bias ? " and bias" : "",
         " must live in one memory space; A is ", memory_name(a.memory), ", B is ", memory_name(b.memory),
         ", C is ", memory_name(c.memory), bias ? ", bias is " : "", bias ? memory_name(bias->memory) : "");
  p.memory = c.memory;
}

// Plans walk an axis block by block (panels, what moves where): at most
// this many blocks along one axis of a WEAVE_GEMM matrix, so a plan's work
// and memory stay bounded (4M blocks of one element each is a 4M x 4M
// matrix in blocks of one).
constexpr int64_t kMaxAxisBlocks = int64_t{1} << 22;

void require_few_blocks(const AxisLayout& axis, const std::string& name, const char* block_field) {
  if (axis.kind() != AxisLayout::Kind::Cyclic) return;
  const int64_t blocks = axis.extent() / axis.block() + 2;  // a partial block at each end at most
  if (blocks > kMaxAxisBlocks)
    fail(WEAVE_ERROR_UNSUPPORTED, name, " has ", axis.extent(), " ", block_field[0] == 'm' ? "rows" : "columns",
         " in blocks of ", axis.block(), " (", block_field, "): more than ", kMaxAxisBlocks,
         " blocks, which WEAVE_GEMM does not plan for; use larger blocks");
}

// A matrix of WEAVE_GEMM as it lies over the grid.
GridLayout grid_layout(const MatrixDesc& m, const std::string& name) {
  GridLayout g;
  if (!grid_axes(m, &g.rows, &g.cols))
    fail(WEAVE_ERROR_DISTRIBUTION_MISMATCH, name, " is ", distribution_name(m.distribution), " over the ",
         group_name(m.group), " of a ", m.grid->prows(), " x ", m.grid->pcols(),
         " grid, which does not lie along the grid's rows and columns; WEAVE_GEMM takes BLOCK_CYCLIC, BLOCK_2D "
         "and REPLICATED matrices (and BLOCK_ROW over grid columns, BLOCK_COLUMN over grid rows)");
  require_few_blocks(g.rows, name, "mb");
  require_few_blocks(g.cols, name, "nb");
  return g;
}

// WEAVE_GEMM: A, B and C each over the whole grid.
Problem make_grid_problem(const GridState& grid, weave_group_t group_kind, Op op_a, Op op_b, const MatrixDesc& a,
                          const MatrixDesc& b, const MatrixDesc& c, const MatrixDesc* bias, int wire_type) {
  Problem p;
  p.operation = Operation::Gemm;
  p.op_a = op_a;
  p.op_b = op_b;
  if (group_kind != WEAVE_GROUP_GRID)
    fail(WEAVE_ERROR_DISTRIBUTION_MISMATCH, "WEAVE_GEMM runs over the whole grid, its matrices lying along the "
         "grid's rows and columns; leave the plan's group WEAVE_GROUP_GRID (it is ", group_name(group_kind), ")");
  const GroupView group = grid.group(WEAVE_GROUP_GRID);
  p.group = WEAVE_GROUP_GRID;
  p.group_size = group.size;
  p.group_rank = group.rank;
  check_operands_alike(p, grid, a, b, c, bias, wire_type);
  if (is_scaled(a.dtype) || is_scaled(b.dtype))
    fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "WEAVE_GEMM does not take scaled (FP8) operands; A is ", dtype_name(a.dtype),
         ", B is ", dtype_name(b.dtype), " (FP8 runs in AG-GEMM, GEMM-RS and GEMM-AR)");

  p.grid.prows = grid.prows();
  p.grid.pcols = grid.pcols();
  p.grid.a = grid_layout(a, "A");
  p.grid.b = grid_layout(b, "B");
  p.grid.c = grid_layout(c, "C");
  const std::string op_a_name = str("op(A) (op_a=", op_name(op_a), ")");
  const std::string op_b_name = str("op(B) (op_b=", op_name(op_b), ")");
  p.m = op_a == Op::N ? a.rows : a.cols;
  p.k = op_a == Op::N ? a.cols : a.rows;
  p.n = op_b == Op::N ? b.cols : b.rows;
  require_extent(op_b == Op::N ? b.rows : b.cols, p.k, "rows of " + op_b_name, "columns of " + op_a_name + " (K)");
  require_extent(c.rows, p.m, "rows of C", "rows of " + op_a_name + " (M)");
  require_extent(c.cols, p.n, "columns of C", "columns of " + op_b_name + " (N)");
  p.m_split = Split::whole(p.m);
  p.n_split = Split::whole(p.n);
  p.k_split = Split::whole(p.k);
  if (bias) {
    require_extent(bias->rows, 1, "rows of bias", "one row (bias is 1 x N)");
    require_extent(bias->cols, p.n, "columns of bias", "columns of C (N)");
    p.grid.bias = grid_layout(*bias, "bias");
    p.has_bias = true;
    p.bias = local_block(*bias);
  }
  p.a = local_block(a);
  p.b = local_block(b);
  p.c = local_block(c);
  return p;
}

// The numbers that pin down how one axis lies (every rank of the grid must
// see the same).
void add_axis_fields(std::vector<Argument>& fields, const std::string& name, const AxisLayout& axis) {
  fields.push_back({str(name, " layout"), static_cast<int64_t>(axis.kind())});
  fields.push_back({str(name, " block"), axis.block()});
  fields.push_back({str(name, " source"), axis.source()});
  fields.push_back({str(name, " start"), axis.start()});
  for (int p = 0; p < axis.procs(); ++p) fields.push_back({str(name, " count[", p, "]"), axis.count(p)});
}

}  // namespace

GroupMatrix resolve_in_group(const MatrixDesc& m, const GroupView& group, const std::string& name) {
  GroupMatrix g;
  g.rows = m.rows;
  g.cols = m.cols;
  // A group of one rank holding the whole matrix in its local array, from
  // the array's start: whatever the distribution and its group, the
  // operation has it all here (a BLOCK_CYCLIC matrix on a 1 x 1 grid, one
  // over GROUP_ROW where the plan's whole grid is one rank).
  if (group.size == 1 && m.local_rows == m.rows && m.local_cols == m.cols) return g;
  auto require_group = [&] {
    if (m.group != group.kind)
      fail(WEAVE_ERROR_DISTRIBUTION_MISMATCH, name, " is ", distribution_name(m.distribution), " over the ",
           group_name(m.group), " but the operation runs over the ", group_name(group.kind),
           "; create ", name, " with .group equal to the plan's group");
  };
  switch (m.distribution) {
    case WEAVE_DIST_REPLICATED:
      break;
    case WEAVE_DIST_BLOCK_ROW:
      require_group();
      g.split_dim = SplitDim::Rows;
      g.split = m.row_split;
      break;
    case WEAVE_DIST_BLOCK_COLUMN:
      require_group();
      g.split_dim = SplitDim::Cols;
      g.split = m.col_split;
      break;
    case WEAVE_DIST_BLOCK_2D: {
      const GridState& grid = *m.grid;
      // Within a grid row the matrix is the row panel of that grid row, split
      // by columns; within a grid column, the column panel split by rows.
      weave_group_t kind = group.kind;
      if (kind == WEAVE_GROUP_GRID) {
        if (grid.pcols() == 1)
          kind = WEAVE_GROUP_COLUMN;
        else if (grid.prows() == 1)
          kind = WEAVE_GROUP_ROW;
        else
          fail(WEAVE_ERROR_DISTRIBUTION_MISMATCH, name, " is BLOCK_2D on a ", grid.prows(), " x ",
               grid.pcols(), " grid; an operation over the whole grid needs a 1-D distribution. "
               "Run the operation over WEAVE_GROUP_ROW or WEAVE_GROUP_COLUMN instead");
      }
      if (kind == WEAVE_GROUP_ROW) {
        g.rows = m.row_split.count(grid.row());
        g.split_dim = SplitDim::Cols;
        g.split = m.col_split;
      } else {
        g.cols = m.col_split.count(grid.col());
        g.split_dim = SplitDim::Rows;
        g.split = m.row_split;
      }
      break;
    }
    case WEAVE_DIST_BLOCK_CYCLIC:
      fail(WEAVE_ERROR_DISTRIBUTION_MISMATCH, name, " is BLOCK_CYCLIC, a layout over the whole 2-D grid; "
           "AG-GEMM, GEMM-RS and GEMM-AR take 1-D distributions. Multiply block-cyclic matrices with WEAVE_GEMM");
    default:
      fail(WEAVE_ERROR_INTERNAL, "unknown distribution");
  }
  return g;
}

// Rows a chunk of op(A) or C begins on (Problem::chunk_unit): the 128-row
// bands of 128x128 and MXFP8 scales on A, 16 rows for any other FP8 GEMM
// (cuBLASLt's FP8 kernels take the rows of a column-major result, and the
// outer extent of their operands, in multiples of 16), else 1.
int64_t chunk_unit_of(const Problem& p) {
  const ScaleMode a_mode = p.quantized() ? p.wire_scale : p.a_scale;
  if (a_mode == ScaleMode::Block128x128 || a_mode == ScaleMode::Mxfp8) return 128;
  const DType multiplied = p.quantized() ? p.wire_type : p.a_type;
  return dtype_size(multiplied) == 1 || dtype_size(p.b_type) == 1 ? 16 : 1;
}

Problem make_problem(const GridState& grid, Operation operation, weave_group_t group_kind, Op op_a, Op op_b,
                     const MatrixDesc& a, const MatrixDesc& b, const MatrixDesc& c,
                     const MatrixDesc* bias, int wire_type) {
  // The conjugate transpose of a real matrix is its transpose.
  if (!is_complex(a.dtype)) {
    if (op_a == Op::C) op_a = Op::T;
    if (op_b == Op::C) op_b = Op::T;
  }
  if (operation == Operation::Gemm) return make_grid_problem(grid, group_kind, op_a, op_b, a, b, c, bias, wire_type);
  Problem p;
  p.operation = operation;
  p.op_a = op_a;
  p.op_b = op_b;
  const GroupView group = grid.group(group_kind);
  p.group = group_kind;
  p.group_size = group.size;
  p.group_rank = group.rank;
  p.group_index = group.index;
  const int P = group.size;

  check_operands_alike(p, grid, a, b, c, bias, wire_type);
  p.chunk_unit = chunk_unit_of(p);  // needs the types and scale modes just checked

  const std::string op_a_name = str("op(A) (op_a=", op_name(op_a), ")");
  const std::string op_b_name = str("op(B) (op_b=", op_name(op_b), ")");
  const GroupMatrix ga = apply_op(resolve_in_group(a, group, "A"), op_a);
  const GroupMatrix gb = apply_op(resolve_in_group(b, group, "B"), op_b);
  const GroupMatrix gc = resolve_in_group(c, group, "C");

  p.m = ga.rows;
  p.k = ga.cols;
  p.n = gb.cols;
  require_extent(gb.rows, p.k, "rows of " + op_b_name, "columns of " + op_a_name + " (K)");
  require_extent(gc.rows, p.m, "rows of C", "rows of " + op_a_name + " (M)");
  require_extent(gc.cols, p.n, "columns of C", "columns of " + op_b_name + " (N)");

  Split c_col_split = Split::whole(p.n);
  switch (operation) {
    case Operation::AgGemm: {
      const std::string why = "AG-GEMM gathers the rows of op(A)";
      p.m_split = require_split(ga, SplitDim::Rows, P, op_a_name, why);
      p.n_split = require_split(gb, SplitDim::Cols, P, op_b_name, "AG-GEMM keeps op(B) split by columns");
      c_col_split = require_split(gc, SplitDim::Cols, P, "C", "AG-GEMM's C is split like op(B)'s columns");
      require_same_split(p.n_split, c_col_split, "columns of op(B)", "columns of C");
      p.k_split = Split::whole(p.k);
      break;
    }
    case Operation::Gemm: fail(WEAVE_ERROR_INTERNAL, "WEAVE_GEMM has its own problem");
    case Operation::GemmRs:
    case Operation::GemmAr: {
      const char* op = operation == Operation::GemmRs ? "GEMM-RS" : "GEMM-AR";
      p.k_split = require_split(ga, SplitDim::Cols, P, op_a_name, str(op, " splits K"));
      Split kb = require_split(gb, SplitDim::Rows, P, op_b_name, str(op, " splits K"));
      require_same_split(p.k_split, kb, "columns of op(A)", "rows of op(B)");
      p.n_split = Split::whole(p.n);
      if (operation == Operation::GemmRs) {
        p.m_split = require_split(gc, SplitDim::Rows, P, "C", "GEMM-RS scatters the rows of C");
      } else {
        require_unsplit(gc, P, "C", "GEMM-AR leaves the whole C on every rank");
        p.m_split = Split::balanced(p.m, P, p.chunk_unit);
      }
      break;
    }
  }

  if (bias) {
    const GroupMatrix gbias = resolve_in_group(*bias, group, "bias");
    require_extent(gbias.rows, 1, "rows of bias", "one row (bias is 1 x N)");
    require_extent(gbias.cols, p.n, "columns of bias", "columns of C (N)");
    if (operation == Operation::AgGemm) {
      Split bs = require_split(gbias, SplitDim::Cols, P, "bias", "its columns follow C's columns");
      require_same_split(bs, c_col_split, "columns of bias", "columns of C");
    } else {
      require_unsplit(gbias, P, "bias", "C has all N columns on every rank");
    }
    p.has_bias = true;
    p.bias = local_block(*bias);
  }
  p.a = local_block(a);
  p.b = local_block(b);
  p.c = local_block(c);
  // The scales of my blocks, in op form: op(A) is outer (rows) x K, op(B) is K x outer (columns).
  const bool a_n = op_a == Op::N, b_n = op_b == Op::N;
  p.a_scales = scale_layout(p.a_scale, a_n ? p.a.rows : p.a.cols, a_n ? p.a.cols : p.a.rows);
  p.b_scales = scale_layout(p.b_scale, b_n ? p.b.cols : p.b.rows, b_n ? p.b.rows : p.b.cols);
  return p;
}

std::vector<Argument> Problem::agreement_fields() const {
  std::vector<Argument> fields = {
      {"operation", static_cast<int64_t>(operation)},
      {"op_a", static_cast<int64_t>(op_a)},
      {"op_b", static_cast<int64_t>(op_b)},
      {"M", m},
      {"N", n},
      {"K", k},
      {"dtype of C", static_cast<int64_t>(c_type)},
      {"dtype of A", static_cast<int64_t>(a_type)},
      {"dtype of B", static_cast<int64_t>(b_type)},
      {"scale mode of A", static_cast<int64_t>(a_scale)},
      {"scale mode of B", static_cast<int64_t>(b_scale)},
      {"wire type", static_cast<int64_t>(wire_type)},
      {"memory", static_cast<int64_t>(memory)},
      {"bias present", has_bias ? 1 : 0},
  };
  auto add_split = [&](const char* name, const Split& s) {
    for (int i = 0; i < s.parts(); ++i) fields.push_back({str(name, "[", i, "]"), s.count(i)});
  };
  add_split("M counts", m_split);
  add_split("N counts", n_split);
  add_split("K counts", k_split);
  if (operation == Operation::Gemm) {
    const std::pair<const char*, const GridLayout*> operands[] = {{"A", &grid.a}, {"B", &grid.b}, {"C", &grid.c}};
    for (const auto& [name, layout] : operands) {
      add_axis_fields(fields, str(name, " rows"), layout->rows);
      add_axis_fields(fields, str(name, " columns"), layout->cols);
    }
    if (has_bias) add_axis_fields(fields, "bias columns", grid.bias.cols);
  }
  return fields;
}

std::string Problem::types() const {
  if (a_type == c_type && b_type == c_type) return dtype_name(c_type);
  auto operand = [](DType t, ScaleMode s) {
    return s == ScaleMode::None ? std::string(dtype_name(t)) : str(dtype_name(t), "(", scale_mode_name(s), ")");
  };
  const std::string a = quantized() ? str(dtype_name(a_type), " as ", operand(wire_type, wire_scale))
                                    : operand(a_type, a_scale);
  return str(a, " x ", operand(b_type, b_scale), " -> ", dtype_name(c_type));
}

std::string Problem::summary() const {
  return str(operation_name(operation), " ", types(), " M=", m, " N=", n, " K=", k, " op(A)=", op_name(op_a),
             " op(B)=", op_name(op_b), has_bias ? " +bias" : "");
}

}  // namespace weave::internal
