// The FP8 test matrix on device memory (support/case_lists.hpp,
// fp8_device_cases): FP8 A and B with their scales in cuBLASLt's FP8 GEMMs,
// and AG-GEMM's wire type quantized on the GPU, one GPU per rank, each case
// checked against the oracle. Exits with 77 (skipped) without a GPU per rank.
// Usage: weave_fp8_operations_device_test [--quick] [--seed S].
#include "cuda_device_memory.hpp"
#include "device_case_list.hpp"
#include "support/case_lists.hpp"

int main(int argc, char** argv) {
  weave_gpu_test::CudaDeviceMemory memory;
  return weave_gpu_test::run_device_case_list(argc, argv, weave_test::fp8_cases, memory);
}
