// A tensor-wise FP8 scale (one float32) written out as one scale per row
// of op(X): what cuBLASLt needs where one operand is scaled row-wise and
// the other tensor-wise, a pair it has no kernel for (measured on sm_90
// with cuBLASLt 13.1: it multiplies only matching pairs, doc/fp8.md). The
// copy is a kernel on the GEMM's stream, so it is stream-ordered and
// captured with the plan. Plain C++ interface; the launcher is CUDA source.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace weave::internal::cuda {

// dst[i] = *src for i in [0, count), on `stream`.
void launch_broadcast_scale(float* dst, const float* src, int64_t count, cudaStream_t stream);
// Loads the kernel now (CUDA loads lazily; execute may be captured).
void prepare_broadcast_scale();

}  // namespace weave::internal::cuda
