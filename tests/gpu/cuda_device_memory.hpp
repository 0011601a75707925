// Device memory for the case runner (support/case_runner.hpp) on CUDA: one
// GPU per rank (the rank's index on its node), buffers from cudaMalloc, and
// executes enqueued on a stream of the test's own, waited for afterwards.
// The graph-capture and stream-ordering tests derive from it and change only
// how an execute is issued.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "support/case_runner.hpp"

namespace weave_gpu_test {

// Throws std::runtime_error naming the call and CUDA's error string.
void check_cuda(cudaError_t code, const char* call);
#define WEAVE_TEST_CUDA(call) ::weave_gpu_test::check_cuda((call), #call)

// Selects device (node-local rank) for this rank; false with the reason when
// there is no GPU or fewer GPUs than ranks on this node. Collective over
// MPI_COMM_WORLD.
bool select_device_for_rank(int* device, std::string* why_not);

class CudaDeviceMemory : public weave_test::DeviceMemory {
 public:
  ~CudaDeviceMemory() override;
  bool attach(std::string* why_not) override;
  void* allocate(std::size_t bytes) override;
  void release(void* pointer) override;
  void upload(void* device, const void* host, std::size_t bytes) override;
  void download(void* host, const void* device, std::size_t bytes) override;
  // Enqueues on stream() and waits for the stream.
  weave_status_t execute(weave_plan_t plan, const weave_execute_args_t& args) override;

  cudaStream_t stream() const { return stream_; }

 private:
  int device_ = -1;
  cudaStream_t stream_ = nullptr;
};

}  // namespace weave_gpu_test
