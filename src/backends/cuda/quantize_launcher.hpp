// Runs the wire-type quantization (kernels/quantize.hpp) on a CUDA stream:
// one block per row of op(src), which finds the row's amax together, then
// writes its scale and its quantized values. The arithmetic is the shared
// functor's, so the bytes are those the host backend writes. Plain C++
// interface; only the launcher is CUDA source.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.hpp"

namespace weave::internal::cuda {

struct QuantizeLaunch {
  DType src_type = DType::F32, dst_type = DType::E4M3;
  const void* src = nullptr;
  int64_t src_ld = 1;
  bool src_row_major = false;
  void* dst = nullptr;
  int64_t dst_ld = 1;
  bool dst_row_major = false;
  bool transposed = false;  // rows of op(X) = columns of X
  float* scales = nullptr;  // one per row; null for a wire type without scales
  float max_finite = 448.0f;
  int64_t rows = 0, cols = 0;  // of op(src)
};

// Whether there is a kernel quantizing `src` into `dst`.
bool quantize_supported(DType dst, DType src);
// Loads that kernel now (CUDA loads lazily; execute may be captured).
void prepare_quantize(DType dst, DType src);
void launch_quantize(const QuantizeLaunch& launch, cudaStream_t stream);

}  // namespace weave::internal::cuda
