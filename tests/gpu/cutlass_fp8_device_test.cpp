// Row-wise scaled FP8 GEMMs on CUTLASS's kernel (backends/cuda/
// cutlass_fp8_gemm.hpp, asked for with WEAVE_FP8_GEMM=cutlass, which ctest
// sets): AG-GEMM, GEMM-RS and GEMM-AR in a linear layer's layout (row-major
// X [M, K] times W [N, K] transposed, e4m3 with row-wise scales, bf16 C,
// products in bf16 or float32) and shapes the kernel runs, each checked
// against the oracle, and each plan's describe saying its GEMMs run on
// CUTLASS's kernel (so the cases cannot pass on cuBLASLt alone). Skipped
// (exit 77) where the build has no CUTLASS or a rank's GPU is not sm_90.
// Usage: WEAVE_FP8_GEMM=cutlass weave_cutlass_fp8_device_test [--quick] [--seed S].
#include <cstring>
#include <string>
#include <vector>

#include "cuda_device_memory.hpp"
#include "device_case_list.hpp"
#include "support/case_lists.hpp"

namespace {

class CutlassDeviceMemory : public weave_gpu_test::CudaDeviceMemory {
 public:
  bool attach(std::string* why_not) override {
    if (!std::strstr(weave_build_features(), "cutlass-fp8")) {
      *why_not = "this Weave was built without CUTLASS (WEAVE_CUTLASS_DIR)";
      return false;
    }
    if (!CudaDeviceMemory::attach(why_not)) return false;
    int device = 0, major = 0, minor = 0;
    WEAVE_TEST_CUDA(cudaGetDevice(&device));
    WEAVE_TEST_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    WEAVE_TEST_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    if (major != 9 || minor != 0) {
      *why_not = "CUTLASS's kernel is built for sm_90a, this GPU is sm_" + std::to_string(major * 10 + minor);
      return false;
    }
    return true;
  }
};

std::vector<weave_test::Case> cutlass_cases(const weave_test::CaseListOptions&, std::mt19937_64&) {
  using weave_test::Case;
  const int P = weave_test::g_size;
  std::vector<Case> cases;
  const weave_operation_t operations[] = {WEAVE_AG_GEMM, WEAVE_GEMM_RS, WEAVE_GEMM_AR};
  for (weave_operation_t op : operations)
    for (int variant = 0; variant < 3; ++variant) {
      Case c;
      c.operation = op;
      c.a_type = c.b_type = WEAVE_FLOAT8_E4M3;
      c.a_scale = c.b_scale = WEAVE_SCALE_ROW_WISE;
      c.dtype = WEAVE_BFLOAT16;
      c.op_a = WEAVE_OP_N;
      c.op_b = WEAVE_OP_T;
      c.order_a = c.order_b = c.order_c = WEAVE_ORDER_ROW_MAJOR;
      c.count_unit = 16;
      // Few rows (the small tile) and many (the large one, with edges);
      // products in bf16 (AG-GEMM, the direct reductions) or in float32
      // (the other reduction plans' partial sums).
      c.m = variant == 0 ? 64 * P : 16 * (40 * P + 3);
      c.n = 128 * P + (variant == 2 ? 64 : 0);
      c.k = 128 * P + 16 * variant;
      // Balanced: every rank multiplies something (an empty shard has no
      // GEMM to name in its describe).
      c.shards = weave_test::Shards::Balanced;
      c.chunks = 1 + variant % 2;
      c.algorithm = variant == 1 && op != WEAVE_AG_GEMM ? WEAVE_ALGORITHM_DIRECT : WEAVE_ALGORITHM_AUTO;
      c.gathered = op == WEAVE_AG_GEMM && variant == 1;
      c.repeats = 2;
      c.fresh_inputs = true;
      c.expect_in_describe = "on CUTLASS's kernel";
      cases.push_back(c);
    }
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  CutlassDeviceMemory memory;
  return weave_gpu_test::run_device_case_list(argc, argv, cutlass_cases, memory);
}
