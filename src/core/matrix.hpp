// A distributed matrix descriptor: global shape, element type, how it is
// split over the grid, and this rank's local block.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/axis_layout.hpp"
#include "core/checked.hpp"
#include "core/dtype.hpp"
#include "core/grid.hpp"
#include "core/split.hpp"
#include "weave/weave.h"

namespace weave::internal {

enum class Order { ColMajor = WEAVE_ORDER_COLUMN_MAJOR, RowMajor = WEAVE_ORDER_ROW_MAJOR };
enum class Memory { Host = WEAVE_MEMORY_HOST, Device = WEAVE_MEMORY_DEVICE };

inline const char* order_name(Order o) { return o == Order::ColMajor ? "column-major" : "row-major"; }
inline const char* memory_name(Memory m) { return m == Memory::Host ? "host" : "device"; }
const char* distribution_name(weave_distribution_t d);

struct MatrixDesc {
  std::shared_ptr<GridState> grid;
  int64_t rows = 0, cols = 0;
  DType dtype = DType::F64;
  weave_distribution_t distribution = WEAVE_DIST_REPLICATED;
  weave_group_t group = WEAVE_GROUP_GRID;
  // Over the parts the distribution uses: group ranks for BLOCK_ROW/COLUMN,
  // grid rows/columns for BLOCK_2D, a single part for an unsplit dimension.
  Split row_split, col_split;
  Order order = Order::ColMajor;
  Memory memory = Memory::Host;
  ScaleMode scale_mode = ScaleMode::None;  // FP8 types: how their scales apply
  // BLOCK_CYCLIC: how the rows lie along the grid rows and the columns along
  // the grid columns (BLOCK_2D and REPLICATED matrices have such axes too,
  // see grid_axes).
  AxisLayout row_axis, col_axis;
  // This rank's block: for BLOCK_CYCLIC the extent of the local array up
  // to the matrix's last local row and column (see weave.h).
  int64_t local_rows = 0, local_cols = 0, row_offset = 0, col_offset = 0, ld = 1;

  // Elements to allocate for the local block (make_matrix checked that
  // they and their bytes fit int64_t).
  int64_t local_elements() const;
};

// Validates `desc` on this rank (throws weave::internal::Error) and fills a MatrixDesc.
// `name` ("A", "matrix") prefixes error messages. Local; weave_matrix_create
// wraps it in agree_on_errors and a cross-rank agreement check.
MatrixDesc make_matrix(const std::shared_ptr<GridState>& grid, const weave_matrix_desc_t& desc,
                       const std::string& name);

// How a matrix lies along the grid's rows and columns, for operations over
// the whole 2-D grid: BLOCK_CYCLIC as described, BLOCK_2D as one block per
// grid row and column, REPLICATED as replicated along both. False for the
// 1-D distributions (BLOCK_ROW, BLOCK_COLUMN), which split over a group's
// ranks rather than a grid dimension.
bool grid_axes(const MatrixDesc& m, AxisLayout* rows, AxisLayout* cols);

// Leading dimension rule for a local block stored in `order`.
int64_t min_leading_dimension(int64_t local_rows, int64_t local_cols, Order order);

// Elements a rows x cols block stored in `order` with leading dimension ld
// spans: ld * (cols - 1) + rows column-major, ld * (rows - 1) + cols
// row-major, 0 when empty. WEAVE_ERROR_INVALID_VALUE naming `quantity` when
// that does not fit int64_t.
template <class... Quantity>
int64_t block_elements(int64_t rows, int64_t cols, int64_t ld, Order order, const Quantity&... quantity) {
  if (rows == 0 || cols == 0) return 0;
  return order == Order::ColMajor ? checked_mul_add(ld, cols - 1, rows, quantity...)
                                  : checked_mul_add(ld, rows - 1, cols, quantity...);
}

}  // namespace weave::internal
