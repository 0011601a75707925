// Small kernels the GPU tests enqueue around an execute on the caller's
// stream (plain C++ interface; the kernels are in test_kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace weave_gpu_test {

// Keeps the stream busy for about `nanoseconds`, so work enqueued after it
// visibly starts late.
void launch_delay(long long nanoseconds, cudaStream_t stream);

// A kernel (not a copy engine) copying `bytes` from src to dst.
void launch_copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);

}  // namespace weave_gpu_test
