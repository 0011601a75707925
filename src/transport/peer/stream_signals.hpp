// Cross-GPU signals in stream order, without kernels: CUDA's stream memory
// operations (cuStreamWriteValue32 / cuStreamWaitValue32) run in the GPU's
// front end and take no SMs. They are driver-API calls; Weave resolves them
// through the runtime (cudaGetDriverEntryPointByVersion) so that libweave
// does not link the driver library and still loads on machines without one.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace weave::internal::transport {

class StreamSignals {
 public:
  // Resolves the entry points; throws WEAVE_ERROR_UNSUPPORTED if the driver
  // or the device cannot do stream memory operations.
  StreamSignals();

  // *flag = value once everything before it on `stream` has completed (and is
  // visible to the flag's reader: the write is preceded by a memory fence).
  void write(cudaStream_t stream, uint32_t* flag, uint32_t value) const;
  // Work after this on `stream` starts once *flag == value.
  void wait_equal(cudaStream_t stream, uint32_t* flag, uint32_t value) const;

 private:
  using WriteValue = int (*)(void* stream, unsigned long long address, unsigned int value, unsigned int flags);
  using WaitValue = int (*)(void* stream, unsigned long long address, unsigned int value, unsigned int flags);
  WriteValue write_ = nullptr;
  WaitValue wait_ = nullptr;
};

}  // namespace weave::internal::transport
