#include "transport/peer/stream_signals.hpp"

#include <cuda.h>

#include "backends/cuda/cuda_check.hpp"
#include "core/error.hpp"

namespace weave::internal::transport {

namespace {

void* driver_entry_point(const char* symbol) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t code = cudaGetDriverEntryPointByVersion(symbol, &function, 12000, cudaEnableDefault, &found);
  if (code != cudaSuccess || found != cudaDriverEntryPointSuccess || !function)
    fail(WEAVE_ERROR_UNSUPPORTED, "the CUDA driver does not provide ", symbol,
         ", which peer transports signal with; use the nccl transport");
  return function;
}

void check_driver(int code, const char* call) {
  if (code != CUDA_SUCCESS)
    fail(WEAVE_ERROR_CUDA, call, " failed with CUDA driver error ", code, " on device ", cuda::current_device_or_none());
}

}  // namespace

StreamSignals::StreamSignals() {
  // Drivers of CUDA 12 and later support 32-bit stream memory operations on
  // every device; an older driver lacks the entry points and is refused here.
  write_ = reinterpret_cast<WriteValue>(driver_entry_point("cuStreamWriteValue32"));
  wait_ = reinterpret_cast<WaitValue>(driver_entry_point("cuStreamWaitValue32"));
}

void StreamSignals::write(cudaStream_t stream, uint32_t* flag, uint32_t value) const {
  check_driver(write_(stream, reinterpret_cast<unsigned long long>(flag), value, CU_STREAM_WRITE_VALUE_DEFAULT),
               "cuStreamWriteValue32");
}

void StreamSignals::wait_equal(cudaStream_t stream, uint32_t* flag, uint32_t value) const {
  check_driver(wait_(stream, reinterpret_cast<unsigned long long>(flag), value, CU_STREAM_WAIT_VALUE_EQ),
               "cuStreamWaitValue32");
}

}  // namespace weave::internal::transport
