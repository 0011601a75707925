// A CUDA build on a machine without a GPU: creating a device plan fails
// cleanly at plan creation, on every rank, with WEAVE_ERROR_CUDA and CUDA's
// own message (no crash, no hang). Exits with 77 (skipped) where a GPU is
// present; the gpu tests cover device plans there.
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <cstdio>
#include <string>

#include "support/case_runner.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
  cudaGetLastError();
  int most_devices = 0;
  MPI_Allreduce(&devices, &most_devices, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (most_devices > 0) {
    if (rank == 0) std::printf("SKIPPED: this machine has a GPU; the gpu tests cover device plans\n");
    MPI_Finalize();
    return weave_test::kSkipExitCode;
  }

  int ok = 1;
  weave_grid_t grid = nullptr;
  weave_matrix_t a = nullptr, b = nullptr, c = nullptr;
  weave_plan_t plan = nullptr;
  // AG-GEMM of 8 x 8 f32 matrices in device memory.
  auto describe = [&](weave_distribution_t distribution, weave_matrix_t* matrix) {
    weave_matrix_desc_t d{};
    d.dtype = WEAVE_FLOAT32;
    d.memory = WEAVE_MEMORY_DEVICE;
    d.rows = 8;
    d.cols = 8;
    d.distribution = distribution;
    return weave_matrix_create(grid, &d, matrix) == WEAVE_SUCCESS;
  };
  if (weave_grid_create(MPI_COMM_WORLD, size, 1, &grid) != WEAVE_SUCCESS || !describe(WEAVE_DIST_BLOCK_ROW, &a) ||
      !describe(WEAVE_DIST_BLOCK_COLUMN, &b) || !describe(WEAVE_DIST_BLOCK_COLUMN, &c)) {
    std::fprintf(stderr, "rank %d: setup failed: %s\n", rank, weave_last_error());
    ok = 0;
  } else {
    weave_plan_desc_t pd{};
    pd.operation = WEAVE_AG_GEMM;
    pd.a = a;
    pd.b = b;
    pd.c = c;
    const weave_status_t status = weave_plan_create(grid, &pd, &plan);
    const std::string message = weave_last_error();
    if (status != WEAVE_ERROR_CUDA || message.find("cuda") == std::string::npos || plan != nullptr) {
      std::fprintf(stderr, "rank %d: device plan without a GPU: got %s (%s), expected WEAVE_ERROR_CUDA with CUDA's "
                   "message\n", rank, weave_status_string(status), message.c_str());
      ok = 0;
    } else if (rank == 0) {
      std::printf("device plan without a GPU: %s: %s\n", weave_status_string(status), message.c_str());
    }
  }
  weave_plan_destroy(plan);
  weave_matrix_destroy(a);
  weave_matrix_destroy(b);
  weave_matrix_destroy(c);
  weave_grid_destroy(grid);
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s: device plan creation without a GPU on %d ranks\n", all_ok ? "PASSED" : "FAILED", size);
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
