// The plain copy dst = src between two bound matrices of one element type,
// as both backends hand it to the copy (kernels/copy_words.hpp).
#pragma once

#include "core/dtype.hpp"
#include "exec/bindings.hpp"
#include "kernels/copy_words.hpp"

namespace weave::internal::kernels {

inline CopyGeometry copy_geometry(const exec::MatrixRef& dst, const exec::MatrixRef& src) {
  CopyGeometry g;
  g.element_bytes = dtype_size(dst.dtype);
  g.dst = dst.data;
  g.dst_ld = dst.ld;
  g.dst_row_major = dst.order == Order::RowMajor;
  g.src = src.data;
  g.src_ld = src.ld;
  g.src_row_major = src.order == Order::RowMajor;
  g.rows = dst.rows;
  g.cols = dst.cols;
  return g;
}

}  // namespace weave::internal::kernels
