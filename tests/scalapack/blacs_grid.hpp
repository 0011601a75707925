// What the ScaLAPACK tests need of ScaLAPACK itself (its C-callable
// Fortran names), and a BLACS grid that lives as long as a test.
#pragma once

#include <mpi.h>

#include "support/numroc.hpp"

extern "C" {
void Cblacs_pinfo(int* mypnum, int* nprocs);
void Cblacs_get(int context, int what, int* value);
void Cblacs_gridinit(int* context, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int context);
void pdgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const double* alpha,
             const double* a, const int* ia, const int* ja, const int* desca, const double* b, const int* ib,
             const int* jb, const int* descb, const double* beta, double* c, const int* ic, const int* jc,
             const int* descc);
void pzgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const void* alpha,
             const void* a, const int* ia, const int* ja, const int* desca, const void* b, const int* ib, const int* jb,
             const int* descb, const void* beta, void* c, const int* ic, const int* jc, const int* descc);
void pcgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const void* alpha,
             const void* a, const int* ia, const int* ja, const int* desca, const void* b, const int* ib, const int* jb,
             const int* descb, const void* beta, void* c, const int* ic, const int* jc, const int* descc);
void psgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const float* alpha,
             const float* a, const int* ia, const int* ja, const int* desca, const float* b, const int* ib,
             const int* jb, const int* descb, const float* beta, float* c, const int* ic, const int* jc,
             const int* descc);
}

namespace weave_test {

// A BLACS grid of nprow x npcol over all processes, in `order` ("R": row-major, "C": column-major).
class BlacsGrid {
 public:
  BlacsGrid(int nprow, int npcol, const char* order) {
    Cblacs_get(0, 0, &context_);
    Cblacs_gridinit(&context_, order, nprow, npcol);
    Cblacs_gridinfo(context_, &nprow_, &npcol_, &myrow_, &mycol_);
  }
  ~BlacsGrid() { Cblacs_gridexit(context_); }
  BlacsGrid(const BlacsGrid&) = delete;
  BlacsGrid& operator=(const BlacsGrid&) = delete;
  int context() const { return context_; }
  int nprow() const { return nprow_; }
  int npcol() const { return npcol_; }
  int myrow() const { return myrow_; }
  int mycol() const { return mycol_; }

 private:
  int context_ = -1, nprow_ = 0, npcol_ = 0, myrow_ = -1, mycol_ = -1;
};

// ScaLAPACK's NUMROC, the tests' own, in ScaLAPACK's int.
inline int local_count(int n, int nb, int p, int source, int procs) {
  return static_cast<int>(numroc(n, nb, p, source, procs));
}

}  // namespace weave_test
