// Random problems (support/case_lists.hpp, random_cases) on device memory,
// in all four element types, one GPU per rank, each checked against the
// oracle. Exits with 77 (skipped) without a GPU per rank.
// Usage: weave_random_shapes_device_test [--quick] [--seed S] [--types LIST].
#include "cuda_device_memory.hpp"
#include "device_case_list.hpp"
#include "support/case_lists.hpp"

int main(int argc, char** argv) {
  weave_gpu_test::CudaDeviceMemory memory;
  return weave_gpu_test::run_device_case_list(argc, argv, weave_test::random_cases, memory);
}
