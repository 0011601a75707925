#include "peer_test_harness.hpp"

#include <mpi.h>

#include <cstdio>
#include <exception>

#include "cuda_device_memory.hpp"
#include "support/case_runner.hpp"

namespace weave_gpu_test {

namespace {
int g_rank = 0, g_size = 1, g_failures = 0;
}  // namespace

int peer_test_rank() { return g_rank; }
int peer_test_size() { return g_size; }

bool agree(bool ok, const std::string& what, const std::string& why) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!ok) std::fprintf(stderr, "rank %d: %s: %s\n", g_rank, what.c_str(), why.c_str());
  if (g_rank == 0) std::printf("%s %s\n", all ? "ok  " : "FAIL", what.c_str());
  if (!all) ++g_failures;
  return all == 1;
}

int run_peer_test(int argc, char** argv, const std::function<void(weave_grid_t grid, cudaStream_t stream)>& cases) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  int device = -1;
  std::string why_not;
  int usable = select_device_for_rank(&device, &why_not) && g_size >= 2 ? 1 : 0, all = 0;
  if (g_size < 2) why_not = "needs two ranks or more";
  MPI_Allreduce(&usable, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (g_rank == 0) std::printf("SKIPPED: %s\n", why_not.empty() ? "another rank has no GPU" : why_not.c_str());
    MPI_Finalize();
    return weave_test::kSkipExitCode;
  }
  weave_grid_t grid = nullptr;
  cudaStream_t stream = nullptr;
  try {
    if (weave_grid_create(MPI_COMM_WORLD, g_size, 1, &grid) != WEAVE_SUCCESS)
      throw std::runtime_error(std::string("weave_grid_create: ") + weave_last_error());
    WEAVE_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cases(grid, stream);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", g_rank, e.what());
    ++g_failures;
  }
  if (stream) cudaStreamDestroy(stream);
  weave_grid_destroy(grid);
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
  MPI_Finalize();
  return failures ? 1 : 0;
}

}  // namespace weave_gpu_test
