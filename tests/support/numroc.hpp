// ScaLAPACK's NUMROC as the tests compute it, apart from the library's own
// (core/axis_layout): how many of n indices, cut into blocks of nb and
// dealt round `procs` processes from `source` (-1: every process holds all),
// process p holds.
#pragma once

#include <cstdint>

namespace weave_test {

inline int64_t numroc(int64_t n, int64_t nb, int p, int source, int procs) {
  if (source < 0) return n;
  const int distance = (procs + p - source) % procs;
  int64_t count = n / nb / procs * nb;
  const int64_t extra = n / nb % procs;
  if (distance < extra) count += nb;
  if (distance == extra) count += n % nb;
  return count;
}

}  // namespace weave_test
