// Checks that an execute is ordered on the caller's stream, without any host
// synchronization around it: the inputs reach their buffers only through a
// kernel on the caller's stream that runs right before weave_execute (after
// a delay, so an execute that did not wait for the stream would read the NaN
// the buffers hold until then), and the results are read back by a kernel
// enqueued right after weave_execute (which sees unfinished results unless
// the execute made the stream wait for all its work). The host waits once,
// after all of it is enqueued.
#pragma once

#include <map>

#include "cuda_device_memory.hpp"

namespace weave_gpu_test {

class StreamOrderingDeviceMemory : public CudaDeviceMemory {
 public:
  ~StreamOrderingDeviceMemory() override;
  void* allocate(std::size_t bytes) override;
  void release(void* pointer) override;
  // Writes the staging copy; the buffer itself gets NaN until the execute.
  void upload(void* device, const void* host, std::size_t bytes) override;
  // Reads what the kernel after the execute copied out.
  void download(void* host, const void* device, std::size_t bytes) override;
  weave_status_t execute(weave_plan_t plan, const weave_execute_args_t& args) override;

 private:
  struct Buffer {
    std::size_t bytes = 0;
    void* staging = nullptr;  // the uploaded contents, waiting for the kernel before the execute
    void* result = nullptr;   // what the kernel after the execute read
  };
  std::map<const void*, Buffer> buffers_;
};

}  // namespace weave_gpu_test
