// FP8 GEMMs with row-wise scales from CUTLASS (cutlass_rowwise_fp8.hpp says
// why): the entry points, and the kernels with a bf16 output (those with a
// float32 output are in cutlass_rowwise_fp8_f32.cu). Compiled for sm_90a only
// (wgmma and TMA), in an object library of its own.
#include "backends/cuda/cutlass_rowwise_fp8_kernel.cuh"

namespace weave::internal::cuda {

using namespace rowwise_fp8;

bool rowwise_fp8_compiled() { return true; }

RowwiseFp8Tile rowwise_fp8_tile(const RowwiseFp8Shape& shape) {
  return shape.m <= 128 ? RowwiseFp8Tile::Small : RowwiseFp8Tile::Large;
}

std::string rowwise_fp8_unsupported(const RowwiseFp8Shape& s) {
  constexpr int64_t kMaxInt = 2147483647;
  const int64_t d_unit = s.f32_out ? 4 : 8;  // 16 bytes of D
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) return "an empty dimension";
  if (s.m > kMaxInt || s.n > kMaxInt || s.k > kMaxInt) return "a dimension beyond 32-bit integers";
  if (s.k % 16 != 0 || s.lda % 16 != 0 || s.ldb % 16 != 0)
    return "K or a leading dimension of A or B not a multiple of 16";
  if (s.n % d_unit != 0 || s.ldd % d_unit != 0) return "N or D's leading dimension not a multiple of 16 bytes";
  // The scale vectors are read four floats at a time.
  if (s.m % 4 != 0) return "M not a multiple of 4";
  if (s.lda < s.k || s.ldb < s.k || s.ldd < s.n) return "a leading dimension shorter than its rows";
  if (s.f32_out) return unsupported_f32(s);
  using D = cutlass::bfloat16_t;
  return rowwise_fp8_tile(s) == RowwiseFp8Tile::Small ? unsupported<SmallKernel<D>>(s)
                                                      : unsupported<LargeKernel<D>>(s);
}

std::size_t rowwise_fp8_workspace_bytes(const RowwiseFp8Shape& s) {
  if (s.f32_out) return workspace_f32(s);
  using D = cutlass::bfloat16_t;
  return rowwise_fp8_tile(s) == RowwiseFp8Tile::Small ? workspace<SmallKernel<D>>(s) : workspace<LargeKernel<D>>(s);
}

std::string rowwise_fp8_enqueue(const RowwiseFp8Shape& s, const void* a, const void* b, const float* a_scale,
                                const float* b_scale, void* d, void* work, cudaStream_t stream) {
  if (s.f32_out) return enqueue_f32(s, a, b, a_scale, b_scale, d, work, stream);
  using D = cutlass::bfloat16_t;
  return rowwise_fp8_tile(s) == RowwiseFp8Tile::Small
             ? enqueue<SmallKernel<D>>(s, a, b, a_scale, b_scale, d, work, stream)
             : enqueue<LargeKernel<D>>(s, a, b, a_scale, b_scale, d, work, stream);
}

}  // namespace weave::internal::cuda
