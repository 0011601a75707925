// WEAVE_GEMM (support/case_lists.hpp, gemm_cases) on device memory, one GPU
// per rank: every grid shape of the ranks, block-cyclic layouts, SUMMA and
// its sequential variant, checked against the oracle. Exits with 77
// (skipped) without a GPU per rank.
// Usage: weave_gemm_device_test [--quick] [--seed S] [--types LIST].
#include "cuda_device_memory.hpp"
#include "device_case_list.hpp"
#include "support/case_lists.hpp"

int main(int argc, char** argv) {
  weave_gpu_test::CudaDeviceMemory memory;
  return weave_gpu_test::run_device_case_list(argc, argv, weave_test::gemm_cases, memory);
}
