// The kernels of cutlass_rowwise_fp8_kernel.cuh with a float32 output (the
// products of plans whose partial sums travel in float32), compiled apart
// from the bf16 ones so that the two compile in parallel.
#include "backends/cuda/cutlass_rowwise_fp8_kernel.cuh"

namespace weave::internal::cuda::rowwise_fp8 {

std::string unsupported_f32(const RowwiseFp8Shape& s) {
  return rowwise_fp8_tile(s) == RowwiseFp8Tile::Small ? unsupported<SmallKernel<float>>(s)
                                                      : unsupported<LargeKernel<float>>(s);
}

std::size_t workspace_f32(const RowwiseFp8Shape& s) {
  return rowwise_fp8_tile(s) == RowwiseFp8Tile::Small ? workspace<SmallKernel<float>>(s)
                                                      : workspace<LargeKernel<float>>(s);
}

std::string enqueue_f32(const RowwiseFp8Shape& s, const void* a, const void* b, const float* a_scale,
                        const float* b_scale, void* d, void* work, cudaStream_t stream) {
  return rowwise_fp8_tile(s) == RowwiseFp8Tile::Small
             ? enqueue<SmallKernel<float>>(s, a, b, a_scale, b_scale, d, work, stream)
             : enqueue<LargeKernel<float>>(s, a, b, a_scale, b_scale, d, work, stream);
}

}  // namespace weave::internal::cuda::rowwise_fp8
