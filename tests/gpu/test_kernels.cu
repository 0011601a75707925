#include "cuda_device_memory.hpp"
#include "test_kernels.hpp"

namespace weave_gpu_test {

namespace {

__global__ void delay_kernel(long long nanoseconds) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (static_cast<long long>(now - start) < nanoseconds);
}

__global__ void copy_kernel(unsigned char* dst, const unsigned char* src, std::size_t bytes) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < bytes; i += stride)
    dst[i] = src[i];
}

}  // namespace

void launch_delay(long long nanoseconds, cudaStream_t stream) {
  delay_kernel<<<1, 1, 0, stream>>>(nanoseconds);
  WEAVE_TEST_CUDA(cudaGetLastError());
}

void launch_copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  const std::size_t threads = 256, blocks = (bytes + threads - 1) / threads;
  copy_kernel<<<static_cast<unsigned>(blocks < 1024 ? blocks : 1024), static_cast<unsigned>(threads), 0, stream>>>(
      static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), bytes);
  WEAVE_TEST_CUDA(cudaGetLastError());
}

}  // namespace weave_gpu_test
