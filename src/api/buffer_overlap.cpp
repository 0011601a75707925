#include "api/buffer_overlap.hpp"

#include <algorithm>

namespace weave::internal {

namespace {

// Floor and ceiling of a / b for b > 0, either sign of a.
int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && a < 0 ? 1 : 0); }
int64_t ceil_div_signed(int64_t a, int64_t b) { return a / b + (a % b != 0 && a > 0 ? 1 : 0); }

// Whether the single run [start, start + width) (offsets from y's base)
// meets a run of y: some j in [0, y.count) with j * stride in
// (start - y.width, start + width).
bool run_meets(int64_t start, int64_t width, const StridedBytes& y) {
  if (y.count == 1 || y.stride <= 0) return start < y.width && start + width > 0;
  const int64_t first = std::max<int64_t>(0, floor_div(start - y.width, y.stride) + 1);
  const int64_t last = std::min<int64_t>(y.count - 1, ceil_div_signed(start + width, y.stride) - 1);
  return first <= last;
}

}  // namespace

StridedBytes block_bytes(const void* base, const LocalBlock& block, int64_t element_size) {
  const bool column_major = block.order == Order::ColMajor;
  const int64_t inner = column_major ? block.rows : block.cols, outer = column_major ? block.cols : block.rows;
  if (inner == 0 || outer == 0) return StridedBytes{};
  return StridedBytes{base, inner * element_size, block.ld * element_size, outer};
}

StridedBytes contiguous_bytes(const void* base, int64_t elements, int64_t element_size) {
  if (elements <= 0) return StridedBytes{};
  return StridedBytes{base, elements * element_size, elements * element_size, 1};
}

bool share_bytes(const StridedBytes& x, const StridedBytes& y) {
  if (x.empty() || y.empty()) return false;
  // Byte addresses as integers (the blocks' extents fit int64_t: the
  // execute's checks bounded them).
  const auto address = [](const void* p) { return static_cast<int64_t>(reinterpret_cast<std::uintptr_t>(p)); };
  const int64_t x0 = address(x.base), y0 = address(y.base);
  const int64_t x_end = x0 + (x.count - 1) * x.stride + x.width, y_end = y0 + (y.count - 1) * y.stride + y.width;
  if (x_end <= y0 || y_end <= x0) return false;  // spans apart: the common case, decided at once
  // Same stride: x's run i meets y's run j where the offset between them
  // falls in y's window; one run of x against y covers every i at once.
  if (x.stride == y.stride && x.count > 1 && y.count > 1) {
    // Runs i of x and j of y meet iff (x0 - y0) + t * stride in (-x.width, y.width), t = i - j in
    // [-(y.count - 1), x.count - 1].
    const int64_t d = x0 - y0, s = x.stride;
    const int64_t first = std::max<int64_t>(-(y.count - 1), floor_div(-x.width - d, s) + 1);
    const int64_t last = std::min<int64_t>(x.count - 1, ceil_div_signed(y.width - d, s) - 1);
    return first <= last;
  }
  // Otherwise run by run over the one with fewer runs (only where the spans
  // overlap, which buffers of one execute rarely do).
  const StridedBytes& few = x.count <= y.count ? x : y;
  const StridedBytes& many = x.count <= y.count ? y : x;
  const int64_t offset = address(few.base) - address(many.base);
  for (int64_t i = 0; i < few.count; ++i)
    if (run_meets(offset + i * few.stride, few.width, many)) return true;
  return false;
}

}  // namespace weave::internal
