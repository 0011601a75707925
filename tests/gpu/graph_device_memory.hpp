// Executes through a CUDA graph: the first execute of a plan is captured on
// the test's stream (global capture mode, the strictest) and launched; every
// later execute of that plan replays the graph, so a case with repeats and
// fresh inputs checks replays against the oracle on new data in the same
// buffers.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda_device_memory.hpp"

namespace weave_gpu_test {

class GraphDeviceMemory : public CudaDeviceMemory {
 public:
  ~GraphDeviceMemory() override;
  weave_status_t execute(weave_plan_t plan, const weave_execute_args_t& args) override;
  void plan_finished(weave_plan_t plan) override;

  int captures() const { return captures_; }
  int replays() const { return replays_; }

 private:
  void drop_graph();

  weave_plan_t plan_ = nullptr;  // the plan the graph was captured from
  weave_execute_args_t captured_args_{};
  cudaGraphExec_t graph_ = nullptr;
  int captures_ = 0, replays_ = 0;
};

}  // namespace weave_gpu_test
