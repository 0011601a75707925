// main() of the GPU tests that steer each rank's stream by hand and need
// two ranks or more (one GPU each): MPI, the device, a 1-D grid over every
// rank and a stream of the test's own; the test's cases report through
// agree(). Exits with 77 (skipped) with fewer ranks or GPUs, 1 when a case
// failed on some rank.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <string>

#include "weave/weave.h"

namespace weave_gpu_test {

int peer_test_rank();
int peer_test_size();

// Whether every rank saw `ok`: prints the case on rank 0, and `why` on
// each rank where it failed. Collective over MPI_COMM_WORLD.
bool agree(bool ok, const std::string& what, const std::string& why);

int run_peer_test(int argc, char** argv, const std::function<void(weave_grid_t grid, cudaStream_t stream)>& cases);

}  // namespace weave_gpu_test
