#include "api/buffer_overlap.hpp"

#include <algorithm>
#include <cstdint>

namespace weave::internal {

namespace {

// Byte arithmetic in 128 bits: a block's width, stride and span come from
// the caller's sizes and ld, which are checked as element counts, not as
// bytes, and an address plus a span need not fit 64 bits (an ld near
// INT64_MAX over two columns is refused elsewhere or never reached; here
// it must not overflow).
using Wide = __int128;

// Floor and ceiling of a / b for b > 0, either sign of a.
Wide floor_div(Wide a, Wide b) { return a / b - (a % b != 0 && a < 0 ? 1 : 0); }
Wide ceil_div(Wide a, Wide b) { return a / b + (a % b != 0 && a > 0 ? 1 : 0); }

Wide address(const void* p) { return static_cast<Wide>(reinterpret_cast<std::uintptr_t>(p)); }

// Whether the run [start, start + width) (offsets from y's base) meets a
// run of y: some j in [0, y.count) with j * stride in (start - y.width,
// start + width).
bool run_meets(Wide start, Wide width, const StridedBytes& y) {
  if (y.count == 1) return start < y.width && start + width > 0;
  const Wide first = std::max<Wide>(0, floor_div(start - y.width, y.stride) + 1);
  const Wide last = std::min<Wide>(y.count - 1, ceil_div(start + width, y.stride) - 1);
  return first <= last;
}

}  // namespace

StridedBytes block_bytes(const void* base, const LocalBlock& block, int64_t element_size) {
  const bool column_major = block.order == Order::ColMajor;
  const int64_t inner = column_major ? block.rows : block.cols, outer = column_major ? block.cols : block.rows;
  if (inner <= 0 || outer <= 0 || element_size <= 0) return StridedBytes{};
  StridedBytes s;
  s.base = base;
  s.width = static_cast<Wide>(inner) * element_size;
  // One run: its stride is never used (and a huge ld need not be one).
  s.stride = outer == 1 ? s.width : std::max<Wide>(static_cast<Wide>(block.ld) * element_size, s.width);
  s.count = outer;
  return s;
}

StridedBytes contiguous_bytes(const void* base, int64_t elements, int64_t element_size) {
  if (elements <= 0 || element_size <= 0) return StridedBytes{};
  StridedBytes s;
  s.base = base;
  s.width = s.stride = static_cast<Wide>(elements) * element_size;
  s.count = 1;
  return s;
}

bool share_bytes(const StridedBytes& x, const StridedBytes& y) {
  if (x.empty() || y.empty()) return false;
  const Wide x0 = address(x.base), y0 = address(y.base);
  const Wide x_end = x0 + (x.count - 1) * x.stride + x.width, y_end = y0 + (y.count - 1) * y.stride + y.width;
  if (x_end <= y0 || y_end <= x0) return false;  // spans apart: the common case, decided at once
  // Same stride: runs i of x and j of y meet iff (x0 - y0) + t * stride lies
  // in (-x.width, y.width), t = i - j in [-(y.count - 1), x.count - 1].
  if (x.stride == y.stride && x.count > 1 && y.count > 1) {
    const Wide d = x0 - y0, s = x.stride;
    const Wide first = std::max<Wide>(-(y.count - 1), floor_div(-x.width - d, s) + 1);
    const Wide last = std::min<Wide>(x.count - 1, ceil_div(y.width - d, s) - 1);
    return first <= last;
  }
  // Otherwise run by run over the one with fewer runs (only where the spans
  // overlap, which an execute's buffers rarely do).
  const StridedBytes& few = x.count <= y.count ? x : y;
  const StridedBytes& many = x.count <= y.count ? y : x;
  const Wide offset = address(few.base) - address(many.base);
  for (int64_t i = 0; i < few.count; ++i)
    if (run_meets(offset + i * few.stride, few.width, many)) return true;
  return false;
}

}  // namespace weave::internal
