#include "core/matrix.hpp"

#include <algorithm>
#include <vector>

#include "core/enum_value.hpp"
#include "core/error.hpp"

namespace weave::internal {

const char* distribution_name(weave_distribution_t d) {
  switch (d) {
    case WEAVE_DIST_REPLICATED: return "REPLICATED";
    case WEAVE_DIST_BLOCK_ROW: return "BLOCK_ROW";
    case WEAVE_DIST_BLOCK_COLUMN: return "BLOCK_COLUMN";
    case WEAVE_DIST_BLOCK_2D: return "BLOCK_2D";
    case WEAVE_DIST_BLOCK_CYCLIC: return "BLOCK_CYCLIC";
  }
  return "?";
}

int64_t min_leading_dimension(int64_t local_rows, int64_t local_cols, Order order) {
  return std::max<int64_t>(1, order == Order::ColMajor ? local_rows : local_cols);
}

int64_t MatrixDesc::local_elements() const {
  return block_elements(local_rows, local_cols, ld, order, "local elements");
}

namespace {

std::vector<int64_t> copy_counts(const int64_t* counts, int parts) {
  return std::vector<int64_t>(counts, counts + parts);
}

// Split of n over `parts`, from user counts if given, else balanced.
Split split_of(const int64_t* counts, int64_t n, int parts, const std::string& what) {
  if (!counts) return Split::balanced(n, parts);
  return Split::from_counts(copy_counts(counts, parts), n, what);
}

void require_no_counts(const int64_t* counts, const std::string& what, weave_distribution_t d) {
  if (counts)
    fail(WEAVE_ERROR_INVALID_COUNTS, what, " must be NULL for a ", distribution_name(d),
         " matrix (that dimension is not split)");
}

// The fields only BLOCK_CYCLIC reads must be zero elsewhere: a value there
// would be a layout the caller believes in and Weave ignores.
void require_no_cyclic_fields(const weave_matrix_desc_t& desc, const std::string& name, weave_distribution_t d) {
  if (desc.mb || desc.nb || desc.rsrc || desc.csrc || desc.row_start || desc.col_start)
    fail(WEAVE_ERROR_INVALID_VALUE, name, ".mb, .nb, .rsrc, .csrc, .row_start and .col_start are for "
         "WEAVE_DIST_BLOCK_CYCLIC; they must be 0 for a ", distribution_name(d), " matrix (they are ", desc.mb, ", ",
         desc.nb, ", ", desc.rsrc, ", ", desc.csrc, ", ", desc.row_start, ", ", desc.col_start, ")");
}

// One dimension of a block-cyclic descriptor: `n` indices from `start`,
// blocks of `block` from grid process `source` (or -1) of `procs`.
AxisLayout cyclic_axis(int64_t n, int64_t block, int32_t source, int64_t start, int procs, const std::string& name,
                       const char* block_field, const char* source_field, const char* start_field, const char* grid) {
  if (block <= 0)
    fail(WEAVE_ERROR_INVALID_VALUE, name, ".", block_field, " = ", block,
         " must be positive for a BLOCK_CYCLIC matrix (the block size, ScaLAPACK's ",
         block_field[0] == 'm' ? "MB_" : "NB_", ")");
  if (source < -1 || source >= procs)
    fail(WEAVE_ERROR_INVALID_VALUE, name, ".", source_field, " = ", source, " is not a grid ", grid, " of this ",
         procs, "-", grid, " grid dimension (0 to ", procs - 1, ", or -1 for every ", grid, ")");
  if (start < 0) fail(WEAVE_ERROR_INVALID_VALUE, name, ".", start_field, " = ", start, " is negative");
  checked_add(start, n, "the last index of ", name, " (", start_field, " ", start, " + extent ", n, ")");
  if (source == -1) return AxisLayout::replicated(n, procs, block, start);
  return AxisLayout::cyclic(n, block, source, procs, start);
}

}  // namespace

MatrixDesc make_matrix(const std::shared_ptr<GridState>& grid, const weave_matrix_desc_t& desc,
                       const std::string& name) {
  MatrixDesc m;
  m.grid = grid;
  if (desc.rows < 0) fail(WEAVE_ERROR_INVALID_VALUE, name, ".rows = ", desc.rows, " is negative");
  if (desc.cols < 0) fail(WEAVE_ERROR_INVALID_VALUE, name, ".cols = ", desc.cols, " is negative");
  // Enumerations are validated as integers before they become enums.
  const int dtype = enum_value(desc.dtype), order = enum_value(desc.order), memory = enum_value(desc.memory);
  const int distribution = enum_value(desc.distribution), scale_mode = enum_value(desc.scale_mode);
  if (!is_valid_dtype(dtype))
    fail(WEAVE_ERROR_UNSUPPORTED_TYPE, name, ".dtype = ", dtype, dtype == 0 ? " (not set)" : "",
         " is not a weave_dtype_t (", dtype_enumerators(), ")");
  if (!is_valid_scale_mode(scale_mode))
    fail(WEAVE_ERROR_INVALID_VALUE, name, ".scale_mode = ", scale_mode, " is not a weave_scale_mode_t");
  // A scale mode must fit the type: scaled (FP8) types need one, the others take none.
  const DTypeRow& type_row = dtype_row(static_cast<DType>(dtype));
  if (!(type_row.scale_modes & scale_bit(static_cast<ScaleMode>(scale_mode)))) {
    if (type_row.scaled)
      fail(WEAVE_ERROR_INVALID_VALUE, name, ".dtype = ", type_row.enumerator, " needs a scale_mode (WEAVE_SCALE_TENSOR, "
           "_ROW_WISE, _BLOCK_1X128, _BLOCK_128X128 or _MXFP8): its values mean nothing without their scales");
    fail(WEAVE_ERROR_INVALID_VALUE, name, ".scale_mode = ", scale_mode_name(static_cast<ScaleMode>(scale_mode)),
         " but ", name, ".dtype = ", type_row.enumerator, " is not scaled (scale modes are for the FP8 types); "
         "leave scale_mode WEAVE_SCALE_NONE");
  }
  if (order != WEAVE_ORDER_COLUMN_MAJOR && order != WEAVE_ORDER_ROW_MAJOR)
    fail(WEAVE_ERROR_INVALID_VALUE, name, ".order = ", order, " is not a weave_order_t");
  if (memory != WEAVE_MEMORY_HOST && memory != WEAVE_MEMORY_DEVICE)
    fail(WEAVE_ERROR_INVALID_VALUE, name, ".memory = ", memory, " is not a weave_memory_t");
  if (distribution < WEAVE_DIST_REPLICATED || distribution > WEAVE_DIST_BLOCK_CYCLIC)
    fail(WEAVE_ERROR_INVALID_VALUE, name, ".distribution = ", distribution, distribution == 0 ? " (not set)" : "",
         " is not a weave_distribution_t (WEAVE_DIST_REPLICATED, _BLOCK_ROW, _BLOCK_COLUMN, _BLOCK_2D, "
         "_BLOCK_CYCLIC)");
  const GroupView group = grid->group(enum_value(desc.group));  // validates the group
  m.rows = desc.rows;
  m.cols = desc.cols;
  m.dtype = static_cast<DType>(dtype);
  m.distribution = static_cast<weave_distribution_t>(distribution);
  m.group = group.kind;
  m.order = static_cast<Order>(order);
  m.memory = static_cast<Memory>(memory);
  m.scale_mode = static_cast<ScaleMode>(scale_mode);

  const std::string rc = name + ".row_counts", cc = name + ".col_counts";
  int row_part = 0, col_part = 0;
  if (m.distribution != WEAVE_DIST_BLOCK_CYCLIC) require_no_cyclic_fields(desc, name, m.distribution);
  switch (m.distribution) {
    case WEAVE_DIST_REPLICATED:
      require_no_counts(desc.row_counts, rc, m.distribution);
      require_no_counts(desc.col_counts, cc, m.distribution);
      m.row_split = Split::whole(desc.rows);
      m.col_split = Split::whole(desc.cols);
      break;
    case WEAVE_DIST_BLOCK_ROW:
      require_no_counts(desc.col_counts, cc, m.distribution);
      m.row_split = split_of(desc.row_counts, desc.rows, group.size, rc);
      m.col_split = Split::whole(desc.cols);
      row_part = group.rank;
      break;
    case WEAVE_DIST_BLOCK_COLUMN:
      require_no_counts(desc.row_counts, rc, m.distribution);
      m.row_split = Split::whole(desc.rows);
      m.col_split = split_of(desc.col_counts, desc.cols, group.size, cc);
      col_part = group.rank;
      break;
    case WEAVE_DIST_BLOCK_2D:
      m.row_split = split_of(desc.row_counts, desc.rows, grid->prows(), rc);
      m.col_split = split_of(desc.col_counts, desc.cols, grid->pcols(), cc);
      row_part = grid->row();
      col_part = grid->col();
      break;
    case WEAVE_DIST_BLOCK_CYCLIC:
      require_no_counts(desc.row_counts, rc, m.distribution);
      require_no_counts(desc.col_counts, cc, m.distribution);
      if (group.kind != WEAVE_GROUP_GRID)
        fail(WEAVE_ERROR_INVALID_VALUE, name, ".group = ", group_name(group.kind),
             ": a BLOCK_CYCLIC matrix lies over the whole grid (leave .group WEAVE_GROUP_GRID)");
      m.row_axis = cyclic_axis(desc.rows, desc.mb, desc.rsrc, desc.row_start, grid->prows(), name, "mb", "rsrc",
                               "row_start", "row");
      m.col_axis = cyclic_axis(desc.cols, desc.nb, desc.csrc, desc.col_start, grid->pcols(), name, "nb", "csrc",
                               "col_start", "column");
      break;
    default:
      fail(WEAVE_ERROR_INTERNAL, name, ".distribution was validated above");
  }
  if (m.distribution == WEAVE_DIST_BLOCK_CYCLIC) {
    // The local array from its start to the matrix's last local row and
    // column; the position is that of the first global row and column held.
    const int r = grid->row(), c = grid->col();
    m.local_rows = m.row_axis.local_end(r);
    m.local_cols = m.col_axis.local_end(c);
    m.row_offset = m.row_axis.count(r) > 0 ? m.row_axis.global_index(r, m.row_axis.local_begin(r)) : m.rows;
    m.col_offset = m.col_axis.count(c) > 0 ? m.col_axis.global_index(c, m.col_axis.local_begin(c)) : m.cols;
  } else {
    m.local_rows = m.row_split.count(row_part);
    m.local_cols = m.col_split.count(col_part);
    m.row_offset = m.row_split.offset(row_part);
    m.col_offset = m.col_split.offset(col_part);
  }

  const int64_t min_ld = min_leading_dimension(m.local_rows, m.local_cols, m.order);
  if (desc.ld < 0) fail(WEAVE_ERROR_INVALID_LEADING_DIMENSION, name, ".ld = ", desc.ld, " is negative");
  m.ld = desc.ld == 0 ? min_ld : desc.ld;
  if (m.ld < min_ld)
    fail(WEAVE_ERROR_INVALID_LEADING_DIMENSION, name, ".ld = ", desc.ld, " is smaller than the local ",
         m.order == Order::ColMajor ? "rows" : "columns", " (", min_ld, ") of this ",
         order_name(m.order), " ", m.local_rows, " x ", m.local_cols, " block");
  // What the caller allocates, in elements and in bytes, must be a number:
  // a wrapped count would be a small allocation that the plan writes past.
  const int64_t elements = block_elements(m.local_rows, m.local_cols, m.ld, m.order, "the local elements of ", name,
                                          " (", order_name(m.order), " ", m.local_rows, " x ", m.local_cols,
                                          " block, ld ", m.ld, ")");
  checked_mul(elements, static_cast<int64_t>(dtype_size(m.dtype)), "the local bytes of ", name, " (", elements, " ",
              dtype_name(m.dtype), " elements)");
  return m;
}

bool grid_axes(const MatrixDesc& m, AxisLayout* rows, AxisLayout* cols) {
  const GridState& grid = *m.grid;
  const int prows = grid.prows(), pcols = grid.pcols();
  switch (m.distribution) {
    case WEAVE_DIST_BLOCK_CYCLIC:
      *rows = m.row_axis;
      *cols = m.col_axis;
      return true;
    case WEAVE_DIST_BLOCK_2D:
      *rows = AxisLayout::counts(m.row_split);
      *cols = AxisLayout::counts(m.col_split);
      return true;
    case WEAVE_DIST_REPLICATED:
      *rows = AxisLayout::replicated(m.rows, prows);
      *cols = AxisLayout::replicated(m.cols, pcols);
      return true;
    case WEAVE_DIST_BLOCK_ROW:
      // Rows split along a grid column (or a grid of one column), the same
      // in every grid column.
      if (m.group != WEAVE_GROUP_COLUMN && !(m.group == WEAVE_GROUP_GRID && pcols == 1)) return false;
      *rows = AxisLayout::counts(m.row_split);
      *cols = AxisLayout::replicated(m.cols, pcols);
      return true;
    case WEAVE_DIST_BLOCK_COLUMN:
      if (m.group != WEAVE_GROUP_ROW && !(m.group == WEAVE_GROUP_GRID && prows == 1)) return false;
      *rows = AxisLayout::replicated(m.rows, prows);
      *cols = AxisLayout::counts(m.col_split);
      return true;
  }
  return false;
}

}  // namespace weave::internal
