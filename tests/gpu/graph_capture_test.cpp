// Execute captured into a CUDA graph: for every operation, element type
// (FP8 with its scales, and AG-GEMM's wire type, included) and algorithm (the rings' transfers, the sequential algorithms' NCCL
// collectives, the direct reductions' transfers or sums read from peers),
// the first execute of a plan is captured
// (global capture mode) on the caller's stream and launched, then the graph
// is replayed twice with fresh random A, B, C and bias written into the same
// buffers; every run is checked against the oracle. That capture is refused
// for a plan whose transport the host drives is checked by
// device_argument_test. Exits with 77 (skipped) without a GPU per rank.
#include <cstdio>

#include "device_case_list.hpp"
#include "graph_device_memory.hpp"
#include "support/case_runner.hpp"

namespace {

std::vector<weave_test::Case> graph_cases(const weave_test::CaseListOptions& options, std::mt19937_64&) {
  std::vector<weave_test::Case> cases;
  int counter = 0;
  for (weave_operation_t operation : {WEAVE_AG_GEMM, WEAVE_GEMM_RS, WEAVE_GEMM_AR})
    for (weave_dtype_t type : options.types)
      for (weave_algorithm_t algorithm : {WEAVE_ALGORITHM_RING, WEAVE_ALGORITHM_SEQUENTIAL, WEAVE_ALGORITHM_DIRECT}) {
        weave_test::Case c;
        c.operation = operation;
        c.dtype = type;
        c.algorithm = algorithm;
        c.m = 24 + counter % 5;
        c.n = 20 + counter % 3;
        c.k = 16 + counter % 7;
        c.shards = counter % 2 ? weave_test::Shards::Uneven : weave_test::Shards::Balanced;
        c.op_a = counter % 3 == 1 ? WEAVE_OP_T : WEAVE_OP_N;
        c.chunks = 2;
        c.bias = counter % 2 == 0;
        c.beta = counter % 3 == 0 ? 0.0 : 0.5;
        c.alpha = 1.25;
        c.gathered = operation == WEAVE_AG_GEMM && counter % 4 == 0;
        c.repeats = 3;
        c.fresh_inputs = true;
        cases.push_back(c);
        ++counter;
      }
  // FP8 with scales: the scales' pointers are captured, their contents
  // (fresh every replay, like the data) are read at every replay; and
  // AG-GEMM's wire type, quantized inside the graph.
  for (weave_operation_t operation : {WEAVE_AG_GEMM, WEAVE_GEMM_RS, WEAVE_GEMM_AR})
    for (weave_algorithm_t algorithm : {WEAVE_ALGORITHM_RING, WEAVE_ALGORITHM_SEQUENTIAL, WEAVE_ALGORITHM_DIRECT}) {
      for (bool wire : {false, true}) {
        if (wire && operation != WEAVE_AG_GEMM) continue;
        weave_test::Case c;
        c.operation = operation;
        c.algorithm = algorithm;
        c.dtype = WEAVE_BFLOAT16;
        c.a_type = wire ? WEAVE_BFLOAT16 : WEAVE_FLOAT8_E4M3;
        c.b_type = WEAVE_FLOAT8_E4M3;
        c.a_scale = wire ? WEAVE_SCALE_NONE : WEAVE_SCALE_ROW_WISE;
        c.b_scale = WEAVE_SCALE_TENSOR;
        c.wire_type = wire ? WEAVE_FLOAT8_E4M3 : weave_dtype_t{};
        c.op_b = WEAVE_OP_T;  // K-contiguous operands, as FP8 kernels take them
        c.order_a = c.order_b = c.order_c = WEAVE_ORDER_ROW_MAJOR;
        c.count_unit = 16;
        c.m = 64 * weave_test::g_size;
        c.n = 32 * weave_test::g_size;
        c.k = 64 * weave_test::g_size;
        c.shards = weave_test::Shards::Uneven;
        c.chunks = 2;
        c.bias = true;
        c.bias_ld_padding = 0;
        c.order_bias = WEAVE_ORDER_ROW_MAJOR;
        c.beta = 0.5;
        c.gathered = operation == WEAVE_AG_GEMM;
        c.repeats = 3;
        c.fresh_inputs = true;
        cases.push_back(c);
      }
    }
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  weave_gpu_test::GraphDeviceMemory memory;
  const int status = weave_gpu_test::run_device_case_list(argc, argv, graph_cases, memory);
  if (status != 0) return status;
  // Every case captured once and replayed twice; anything else means the
  // cases did not run through graphs as they should.
  if (memory.captures() == 0 || memory.replays() != 2 * memory.captures()) {
    std::fprintf(stderr, "expected every capture to be replayed twice: %d captures, %d replays\n", memory.captures(),
                 memory.replays());
    return 1;
  }
  return 0;
}
