// The MPI test matrix (support/case_lists.hpp, sweep_cases) on device
// memory, in all four element types, one GPU per rank, each case checked
// against the oracle. Exits with 77 (skipped) without a GPU per rank.
// Usage: weave_operations_device_test [--quick] [--seed S] [--types LIST].
#include "cuda_device_memory.hpp"
#include "device_case_list.hpp"
#include "support/case_lists.hpp"

int main(int argc, char** argv) {
  weave_gpu_test::CudaDeviceMemory memory;
  return weave_gpu_test::run_device_case_list(argc, argv, weave_test::sweep_cases, memory);
}
