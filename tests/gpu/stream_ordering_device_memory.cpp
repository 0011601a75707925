#include "stream_ordering_device_memory.hpp"

#include <stdexcept>

#include "test_kernels.hpp"

namespace weave_gpu_test {

namespace {
// Long enough that GEMMs started without waiting would surely run first.
constexpr long long kDelayNanoseconds = 20'000'000;
}  // namespace

StreamOrderingDeviceMemory::~StreamOrderingDeviceMemory() {
  for (auto& [pointer, buffer] : buffers_) {
    cudaFree(buffer.staging);
    cudaFree(buffer.result);
    cudaFree(const_cast<void*>(pointer));
  }
}

void* StreamOrderingDeviceMemory::allocate(std::size_t bytes) {
  void* pointer = CudaDeviceMemory::allocate(bytes);
  Buffer buffer;
  buffer.bytes = bytes;
  buffer.staging = CudaDeviceMemory::allocate(bytes);
  buffer.result = CudaDeviceMemory::allocate(bytes);
  buffers_[pointer] = buffer;
  return pointer;
}

void StreamOrderingDeviceMemory::release(void* pointer) {
  auto found = buffers_.find(pointer);
  if (found != buffers_.end()) {
    cudaFree(found->second.staging);
    cudaFree(found->second.result);
    buffers_.erase(found);
  }
  CudaDeviceMemory::release(pointer);
}

void StreamOrderingDeviceMemory::upload(void* device, const void* host, std::size_t bytes) {
  const Buffer& buffer = buffers_.at(device);
  CudaDeviceMemory::upload(buffer.staging, host, bytes);
  // All-ones bytes are NaN in every floating-point type.
  WEAVE_TEST_CUDA(cudaMemsetAsync(device, 0xff, bytes, stream()));
  WEAVE_TEST_CUDA(cudaStreamSynchronize(stream()));
}

void StreamOrderingDeviceMemory::download(void* host, const void* device, std::size_t bytes) {
  CudaDeviceMemory::download(host, buffers_.at(device).result, bytes);
}

weave_status_t StreamOrderingDeviceMemory::execute(weave_plan_t plan, const weave_execute_args_t& args) {
  launch_delay(kDelayNanoseconds, stream());
  for (auto& [pointer, buffer] : buffers_) launch_copy(const_cast<void*>(pointer), buffer.staging, buffer.bytes, stream());
  weave_execute_args_t on_stream = args;
  on_stream.stream = stream();
  const weave_status_t status = weave_execute_ex(plan, &on_stream);
  for (auto& [pointer, buffer] : buffers_) launch_copy(buffer.result, pointer, buffer.bytes, stream());
  WEAVE_TEST_CUDA(cudaStreamSynchronize(stream()));
  return status;
}

}  // namespace weave_gpu_test
