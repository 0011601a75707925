#include <algorithm>

#include "backends/cuda/cuda_check.hpp"
#include "backends/cuda/quantize_launcher.hpp"
#include "kernels/quantize.hpp"

namespace weave::internal::cuda {

namespace {

constexpr int kThreadsPerBlock = 256;
constexpr int64_t kMaxBlocks = 65535;

template <class T>
struct Tag {
  using type = T;
};

// Rows of op(src), a block each: every thread takes every blockDim-th
// element of the row (neighbouring threads, neighbouring elements of a
// K-contiguous row), the block combines the amaxes, then quantizes.
template <class Src, class Dst>
__global__ void quantize_rows_kernel(kernels::QuantizeRowsFunctor<Src, Dst> f) {
  __shared__ float partial[kThreadsPerBlock];
  for (int64_t i = blockIdx.x; i < f.rows; i += gridDim.x) {
    float scale = 1.0f;
    if (f.scales) {
      float amax = 0.0f;
      for (int64_t k = threadIdx.x; k < f.cols; k += blockDim.x) {
        const float x = f.load(i, k);
        amax = kernels::combine_amax(amax, x < 0.0f ? -x : x);
      }
      partial[threadIdx.x] = amax;
      __syncthreads();
      for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride)
          partial[threadIdx.x] = kernels::combine_amax(partial[threadIdx.x], partial[threadIdx.x + stride]);
        __syncthreads();
      }
      scale = kernels::quantization_scale(partial[0], f.max_finite);
      if (threadIdx.x == 0) f.scales[i] = scale;
      __syncthreads();  // partial is reused by the next row
    }
    for (int64_t k = threadIdx.x; k < f.cols; k += blockDim.x) f.store(i, k, scale);
  }
}

// The pairs a wire type takes: f32, f16, bf16 into e4m3 or bf16 (the
// bit-level types on both sides, so the rounding is the shared code's).
template <class Visit>
bool visit_quantize_pair(DType dst, DType src, Visit&& visit) {
  auto with_source = [&](auto dst_tag) {
    switch (src) {
      case DType::F32: visit(Tag<float>{}, dst_tag); return true;
      case DType::F16: visit(Tag<kernels::Float16Bits>{}, dst_tag); return true;
      case DType::BF16: visit(Tag<kernels::BFloat16Bits>{}, dst_tag); return true;
      default: return false;
    }
  };
  if (dst == DType::E4M3) return with_source(Tag<kernels::Float8E4M3>{});
  if (dst == DType::BF16 && src != DType::BF16) return with_source(Tag<kernels::BFloat16Bits>{});
  return false;
}

}  // namespace

bool quantize_supported(DType dst, DType src) {
  return visit_quantize_pair(dst, src, [](auto, auto) {});
}

void prepare_quantize(DType dst, DType src) {
  const bool known = visit_quantize_pair(dst, src, [](auto s, auto d) {
    cudaFuncAttributes attributes{};
    WEAVE_CUDA_CHECK(cudaFuncGetAttributes(
        &attributes, quantize_rows_kernel<typename decltype(s)::type, typename decltype(d)::type>));
  });
  if (!known)
    fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the CUDA backend cannot quantize ", dtype_name(src), " into ", dtype_name(dst));
}

void launch_quantize(const QuantizeLaunch& launch, cudaStream_t stream) {
  if (launch.rows == 0) return;
  const bool known = visit_quantize_pair(launch.dst_type, launch.src_type, [&](auto s, auto d) {
    using Src = typename decltype(s)::type;
    using Dst = typename decltype(d)::type;
    kernels::QuantizeRowsFunctor<Src, Dst> f;
    f.src = static_cast<const Src*>(launch.src);
    f.src_ld = launch.src_ld;
    f.src_row_major = launch.src_row_major;
    f.dst = static_cast<Dst*>(launch.dst);
    f.dst_ld = launch.dst_ld;
    f.dst_row_major = launch.dst_row_major;
    f.transposed = launch.transposed;
    f.scales = launch.scales;
    f.max_finite = launch.max_finite;
    f.rows = launch.rows;
    f.cols = launch.cols;
    const auto blocks = static_cast<unsigned>(std::min(kMaxBlocks, launch.rows));
    quantize_rows_kernel<Src, Dst><<<blocks, kThreadsPerBlock, 0, stream>>>(f);
    WEAVE_CUDA_CHECK(cudaGetLastError());
  });
  if (!known)
    fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the CUDA backend cannot quantize ", dtype_name(launch.src_type), " into ",
         dtype_name(launch.dst_type));
}

}  // namespace weave::internal::cuda
