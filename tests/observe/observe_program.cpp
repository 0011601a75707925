// Two plans (AG-GEMM and GEMM-RS, f64 on the host), each executed twice,
// with no tracing or logging asked for in the code: what WEAVE_LOG and
// WEAVE_TRACE show of it comes from the environment alone. Prints PASS on
// rank 0; a failed call prints its message and exits 1.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "weave/weave.hpp"

namespace {

std::vector<double> buffer(const weave::Matrix& m, double value) {
  return std::vector<double>(static_cast<std::size_t>(std::max<int64_t>(1, m.local_elements())), value);
}

void run_twice(const weave::Grid& grid, weave_operation_t operation) {
  const int64_t M = 24, N = 16, K = 20;
  const weave_dtype_t t = WEAVE_FLOAT64;
  const bool ag = operation == WEAVE_AG_GEMM;
  weave::Matrix a(grid, ag ? weave::block_rows(M, K, t) : weave::block_cols(M, K, t));
  weave::Matrix b(grid, ag ? weave::block_cols(K, N, t) : weave::block_rows(K, N, t));
  weave::Matrix c(grid, ag ? weave::block_cols(M, N, t) : weave::block_rows(M, N, t));
  weave::Plan plan(grid, weave::PlanDesc(operation, a, b, c));
  std::vector<double> A = buffer(a, 1.0), B = buffer(b, 2.0), C = buffer(c, 0.0);
  for (int execute = 0; execute < 2; ++execute) plan.execute<double>(1.0, A.data(), B.data(), 0.0, C.data());
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, status = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    weave::Grid grid(MPI_COMM_WORLD);
    run_twice(grid, WEAVE_AG_GEMM);
    run_twice(grid, WEAVE_GEMM_RS);
  } catch (const weave::Error& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    status = 1;
  }
  if (rank == 0 && status == 0) std::printf("PASS\n");
  MPI_Finalize();
  return status;
}
