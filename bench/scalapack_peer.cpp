#include "scalapack_peer.hpp"

#include <mpi.h>

#include <limits>
#include <stdexcept>
#include <string>

#if WEAVE_BENCH_SCALAPACK
extern "C" {
void Cblacs_get(int context, int what, int* value);
void Cblacs_gridinit(int* context, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int context);
// The four share ScaLAPACK's argument list; alpha and beta point to the
// routine's scalar type.
using PgemmFunction = void(const char*, const char*, const int*, const int*, const int*, const void*, const void*,
                           const int*, const int*, const int*, const void*, const int*, const int*, const int*,
                           const void*, void*, const int*, const int*, const int*);
PgemmFunction pdgemm_, psgemm_, pzgemm_, pcgemm_;
}
#endif

namespace bench {

namespace {

int to_int(int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max())
    throw std::runtime_error(std::string("ScaLAPACK's ") + what + " does not fit its int: " + std::to_string(v));
  return static_cast<int>(v);
}

}  // namespace

#if WEAVE_BENCH_SCALAPACK

bool PblasGemm::available() { return true; }

PblasGemm::PblasGemm(int nprow, int npcol) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Cblacs_get(0, 0, &context_);
  Cblacs_gridinit(&context_, "R", nprow, npcol);
  int r = 0, c = 0, myrow = -1, mycol = -1;
  Cblacs_gridinfo(context_, &r, &c, &myrow, &mycol);
  if (myrow != rank / npcol || mycol != rank % npcol)
    throw std::runtime_error("BLACS placed process " + std::to_string(rank) + " at (" + std::to_string(myrow) + ", " +
                             std::to_string(mycol) + "), not where Weave's row-major grid has it");
}

PblasGemm::~PblasGemm() { Cblacs_gridexit(context_); }

void PblasGemm::multiply(weave_dtype_t t, int64_t m, int64_t n, int64_t k, int64_t mb, int64_t nb, Operand a,
                         Operand b, void* c, int64_t ldc) const {
  const int im = to_int(m, "M"), in = to_int(n, "N"), ik = to_int(k, "K"), imb = to_int(mb, "MB"),
            inb = to_int(nb, "NB");
  const int one = 1;
  const int desca[9] = {1, context_, im, ik, imb, inb, 0, 0, to_int(a.ld, "LLD")};
  const int descb[9] = {1, context_, ik, in, imb, inb, 0, 0, to_int(b.ld, "LLD")};
  const int descc[9] = {1, context_, im, in, imb, inb, 0, 0, to_int(ldc, "LLD")};
  // (1, 0) and (0, 0) in every scalar type: real, or (real, imaginary).
  const double alpha_d[2] = {1, 0}, beta_d[2] = {0, 0};
  const float alpha_f[2] = {1, 0}, beta_f[2] = {0, 0};
  const bool single = t == WEAVE_FLOAT32 || t == WEAVE_COMPLEX64;
  PgemmFunction* gemm = t == WEAVE_FLOAT64     ? pdgemm_
                        : t == WEAVE_FLOAT32   ? psgemm_
                        : t == WEAVE_COMPLEX128 ? pzgemm_
                        : t == WEAVE_COMPLEX64  ? pcgemm_
                                                : nullptr;
  if (!gemm) throw std::runtime_error("ScaLAPACK multiplies f32, f64, c64 and c128 only");
  gemm("N", "N", &im, &in, &ik, single ? static_cast<const void*>(alpha_f) : alpha_d, a.data, &one, &one, desca,
       b.data, &one, &one, descb, single ? static_cast<const void*>(beta_f) : beta_d, c, &one, &one, descc);
}

#else

bool PblasGemm::available() { return false; }
PblasGemm::PblasGemm(int, int) { throw std::runtime_error("this weave-bench was built without ScaLAPACK"); }
PblasGemm::~PblasGemm() = default;
void PblasGemm::multiply(weave_dtype_t, int64_t, int64_t, int64_t, int64_t, int64_t, Operand, Operand, void*,
                         int64_t) const {
  (void)to_int;
  throw std::runtime_error("this weave-bench was built without ScaLAPACK");
}

#endif

}  // namespace bench
