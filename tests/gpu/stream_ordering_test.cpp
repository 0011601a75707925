// Execute is ordered on the caller's stream with no host synchronization:
// the inputs are written by a kernel on the stream right before
// weave_execute and the results read by a kernel right after it
// (stream_ordering_device_memory.hpp), for every operation and algorithm
// (the reductions' direct algorithm too), checked against the oracle. Exits with 77 (skipped) without a GPU per rank.
#include "device_case_list.hpp"
#include "stream_ordering_device_memory.hpp"
#include "support/case_runner.hpp"

namespace {

std::vector<weave_test::Case> ordering_cases(const weave_test::CaseListOptions& options, std::mt19937_64&) {
  std::vector<weave_test::Case> cases;
  int counter = 0;
  for (weave_operation_t operation : {WEAVE_AG_GEMM, WEAVE_GEMM_RS, WEAVE_GEMM_AR})
    for (weave_dtype_t type : options.types)
      for (weave_algorithm_t algorithm : {WEAVE_ALGORITHM_RING, WEAVE_ALGORITHM_SEQUENTIAL, WEAVE_ALGORITHM_DIRECT}) {
        weave_test::Case c;
        c.operation = operation;
        c.dtype = type;
        c.algorithm = algorithm;
        c.m = 40 + counter % 3;
        c.n = 24;
        c.k = 32 + counter % 5;
        c.shards = weave_test::Shards::Uneven;
        c.chunks = 2;
        c.bias = true;
        c.beta = counter % 2 ? 0.0 : -0.5;
        c.gathered = operation == WEAVE_AG_GEMM;
        c.repeats = 2;
        cases.push_back(c);
        ++counter;
      }
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  weave_gpu_test::StreamOrderingDeviceMemory memory;
  return weave_gpu_test::run_device_case_list(argc, argv, ordering_cases, memory);
}
