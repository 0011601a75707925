// Whether two of an execute's buffers share bytes. A local block is the
// bytes it reads or writes, not the span from its first to its last
// element: `count` runs of `width` bytes, `stride` bytes apart (the
// columns of a column-major block, the rows of a row-major one). Two
// blocks interleaved in one padded array (the rows of A above those of C,
// say) touch no common byte and do not overlap.
#pragma once

#include <cstdint>

#include "core/problem.hpp"  // LocalBlock

namespace weave::internal {

struct StridedBytes {
  const void* base = nullptr;
  // count runs of width bytes, stride apart (stride >= width); in 128 bits,
  // as bytes of a block need not fit 64 (its elements do)
  __int128 width = 0, stride = 0;
  int64_t count = 0;
  bool empty() const { return !base || width <= 0 || count <= 0; }
};

// The bytes of a local block of `element_size`-byte elements at `base`.
StridedBytes block_bytes(const void* base, const LocalBlock& block, int64_t element_size);
// `elements` contiguous elements (scales).
StridedBytes contiguous_bytes(const void* base, int64_t elements, int64_t element_size);

// True when some byte lies in both.
bool share_bytes(const StridedBytes& x, const StridedBytes& y);

}  // namespace weave::internal
