// ScaLAPACK's p?gemm as weave-bench's peer for WEAVE_GEMM: the same local
// arrays, described to ScaLAPACK by its 9-integer descriptors over a BLACS
// grid laid out as Weave's (row-major). Linked only into the benchmark, and
// only where ScaLAPACK was found; elsewhere available() is false.
#pragma once

#include <cstdint>

#include "weave/weave.h"

namespace bench {

class PblasGemm {
 public:
  static bool available();
  // A BLACS grid of nprow x npcol over MPI_COMM_WORLD; collective. Throws
  // where BLACS places this process elsewhere than Weave's grid does
  // (process p at row p / npcol, column p % npcol).
  PblasGemm(int nprow, int npcol);
  ~PblasGemm();
  PblasGemm(const PblasGemm&) = delete;
  PblasGemm& operator=(const PblasGemm&) = delete;

  // C <- A B (alpha 1, beta 0; A M x K, B K x N, C M x N), every matrix in
  // mb x nb blocks from process (0, 0), its local array column-major with
  // the given leading dimension: pdgemm, psgemm, pzgemm or pcgemm by `t`.
  struct Operand {
    const void* data;
    int64_t ld;
  };
  void multiply(weave_dtype_t t, int64_t m, int64_t n, int64_t k, int64_t mb, int64_t nb, Operand a, Operand b,
                void* c, int64_t ldc) const;

 private:
  int context_ = -1;
};

}  // namespace bench
