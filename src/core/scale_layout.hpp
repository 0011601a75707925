// The layout of the scales of one block of a scaled (FP8) operand, stated
// for the block in op form: `outer` x `inner`, where inner is K (columns of
// op(A), rows of op(B)) and outer the other dimension (rows of op(A),
// columns of op(B)). It is cuBLASLt's layout for each mode (doc/fp8.md),
// so a block's scales can be handed to cuBLASLt as they are:
//
//   tensor       1 x 1                                       one float32
//   row-wise     outer x 1                                   scale(i) at i
//   1x128        outer x ceil(inner/128), outer fastest      scale(i, kb) at kb * outer + i
//   128x128      ceil(outer/128) x round_up(ceil(inner/128), 4), K-blocks fastest (each row padded to a
//                multiple of 4 entries, which are not read): scale(ib, kb) at ib * ld + kb
//   MXFP8        E8M0 bytes in tiles of 128 rows x 4 K-blocks (512 bytes), tiles of one 128-row band
//                side by side: for element (i, k), kb = k / 32,
//                byte at (i / 128) * ld + (kb / 4) * 512 + (i % 32) * 16 + ((i % 128) / 32) * 4 + kb % 4,
//                ld = ceil(ceil(inner/32) / 4) * 512
//
// An empty block (outer or inner 0) has no scales. A band of rows of a
// block has its own scales at a region of the block's: rows of the layout
// for the modes with one scale row per outer row, whole 128-row bands for
// the 128x128 and MXFP8 modes (`outer_rows` outer rows per layout row).
#pragma once

#include <cstdint>

#include "core/checked.hpp"
#include "core/dtype.hpp"
#include "core/matrix.hpp"

namespace weave::internal {

struct ScaleLayout {
  ScaleMode mode = ScaleMode::None;
  int64_t rows = 0, cols = 0, ld = 1;
  Order order = Order::ColMajor;
  DType dtype = DType::F32;
  // Outer rows of the operand per row of the layout: 1, or 128 for the
  // block-band modes; 0 for tensor-wise (its one scale serves every row).
  int64_t outer_rows = 1;

  bool empty() const { return rows == 0 || cols == 0; }
  // Elements from the first to the last (what a caller allocates).
  int64_t elements() const { return block_elements(rows, cols, ld, order, "the scale elements"); }
};

inline int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

inline ScaleLayout scale_layout(ScaleMode mode, int64_t outer, int64_t inner) {
  ScaleLayout s;
  s.mode = mode;
  if (mode == ScaleMode::None || outer == 0 || inner == 0) return s;
  switch (mode) {
    case ScaleMode::None: break;
    case ScaleMode::Tensor:
      s.rows = s.cols = 1;
      s.outer_rows = 0;
      break;
    case ScaleMode::RowWise:
      s.rows = outer;
      s.cols = 1;
      s.ld = outer;
      break;
    case ScaleMode::Block1x128:
      s.rows = outer;
      s.cols = ceil_div(inner, 128);
      s.ld = outer;
      break;
    case ScaleMode::Block128x128:
      s.rows = ceil_div(outer, 128);
      s.cols = ceil_div(ceil_div(inner, 128), 4) * 4;
      s.ld = s.cols;
      s.order = Order::RowMajor;
      s.outer_rows = 128;
      break;
    case ScaleMode::Mxfp8:
      s.rows = ceil_div(outer, 128);
      s.cols = checked_mul(ceil_div(ceil_div(inner, 32), 4), 512, "the MXFP8 scale bytes of a row band");
      s.ld = s.cols;
      s.order = Order::RowMajor;
      s.dtype = DType::UE8M0;
      s.outer_rows = 128;
      break;
  }
  return s;
}

}  // namespace weave::internal
