// What the ScaLAPACK tests need of ScaLAPACK itself (its C-callable
// Fortran names), and a BLACS grid that lives as long as a test.
#pragma once

#include <mpi.h>

#include <vector>

#include "support/numroc.hpp"

extern "C" {
void Cblacs_pinfo(int* mypnum, int* nprocs);
void Cblacs_get(int context, int what, int* value);
void Cblacs_gridinit(int* context, const char* order, int nprow, int npcol);
void Cblacs_gridmap(int* context, int* usermap, int ldumap, int nprow, int npcol);
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

// A BLACS grid of nprow x npcol, in `order` ("R": row-major, "C": column-major), over the first
// nprow * npcol processes (all of them, or a subset); or, given `processes` (MPI_COMM_WORLD ranks,
// row-major over the grid), over those. Collective over all processes. A process outside the grid
// gets context -1 and -1 for the rest, as BLACS gives it.
class BlacsGrid {
 public:
  BlacsGrid(int nprow, int npcol, const char* order) {
    Cblacs_get(0, 0, &context_);
    Cblacs_gridinit(&context_, order, nprow, npcol);
    Cblacs_gridinfo(context_, &nprow_, &npcol_, &myrow_, &mycol_);
  }
  BlacsGrid(int nprow, int npcol, std::vector<int> processes) {
    std::vector<int> map(processes.size());  // BLACS_GRIDMAP's USERMAP is column-major
    for (int r = 0; r < nprow; ++r)
      for (int c = 0; c < npcol; ++c)
        map[static_cast<size_t>(r + c * nprow)] = processes[static_cast<size_t>(r * npcol + c)];
    Cblacs_get(0, 0, &context_);
    Cblacs_gridmap(&context_, map.data(), nprow, nprow, npcol);
    Cblacs_gridinfo(context_, &nprow_, &npcol_, &myrow_, &mycol_);
  }
  ~BlacsGrid() {
    if (context_ >= 0) Cblacs_gridexit(context_);  // BLACS refuses to exit context -1
  }
  bool in_grid() const { return myrow_ >= 0 && mycol_ >= 0; }
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
