#include "backends/cuda/scale_broadcast.hpp"

#include "backends/cuda/cuda_check.hpp"

namespace weave::internal::cuda {

namespace {

__global__ void broadcast_scale(float* dst, const float* src, int64_t count) {
  const float value = *src;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = value;
}

constexpr int kThreads = 256;

}  // namespace

void launch_broadcast_scale(float* dst, const float* src, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  broadcast_scale<<<static_cast<unsigned>(blocks < 1024 ? blocks : 1024), kThreads, 0, stream>>>(dst, src, count);
  WEAVE_CUDA_CHECK(cudaGetLastError());
}

void prepare_broadcast_scale() {
  cudaFuncAttributes attributes{};
  WEAVE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, broadcast_scale));
}

}  // namespace weave::internal::cuda
