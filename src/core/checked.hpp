// Size arithmetic that cannot wrap. Every element count, byte count, offset
// and sum that Weave derives from a caller's sizes goes through these: a
// result that does not fit int64_t is WEAVE_ERROR_INVALID_VALUE with a
// message naming the quantity and its operands, never a wrapped number
// (a wrapped size is a small allocation and an access far outside it).
//
// The quantity's name is given as message parts (formatted only on failure):
//   checked_mul(ld, cols - 1, "local elements of ", name)
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "core/error.hpp"

namespace weave::internal {

// int64_t byte counts are handed to allocators and memcpy as size_t.
static_assert(std::numeric_limits<int64_t>::max() <= std::numeric_limits<std::size_t>::max(),
              "every int64_t byte count must be representable as a size_t");

template <class... Quantity>
int64_t checked_add(int64_t a, int64_t b, const Quantity&... quantity) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum))
    fail(WEAVE_ERROR_INVALID_VALUE, quantity..., " = ", a, " + ", b, " does not fit in 64 bits");
  return sum;
}

template <class... Quantity>
int64_t checked_mul(int64_t a, int64_t b, const Quantity&... quantity) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product))
    fail(WEAVE_ERROR_INVALID_VALUE, quantity..., " = ", a, " * ", b, " does not fit in 64 bits");
  return product;
}

// a * b + c, the extent of a strided block (ld * (cols - 1) + rows).
template <class... Quantity>
int64_t checked_mul_add(int64_t a, int64_t b, int64_t c, const Quantity&... quantity) {
  int64_t product = 0, sum = 0;
  if (__builtin_mul_overflow(a, b, &product) || __builtin_add_overflow(product, c, &sum))
    fail(WEAVE_ERROR_INVALID_VALUE, quantity..., " = ", a, " * ", b, " + ", c, " does not fit in 64 bits");
  return sum;
}

// A value that must fit a narrower integer type (an int tag, an int count).
template <class Narrow, class... Quantity>
Narrow checked_narrow(int64_t value, const Quantity&... quantity) {
  if (value < static_cast<int64_t>(std::numeric_limits<Narrow>::min()) ||
      value > static_cast<int64_t>(std::numeric_limits<Narrow>::max()))
    fail(WEAVE_ERROR_INVALID_VALUE, quantity..., " = ", value, " does not fit in ", 8 * sizeof(Narrow), " bits");
  return static_cast<Narrow>(value);
}

}  // namespace weave::internal
