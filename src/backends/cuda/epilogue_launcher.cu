#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "backends/cuda/cuda_check.hpp"
#include "backends/cuda/epilogue_launcher.hpp"
#include "kernels/epilogue.hpp"

namespace weave::internal::cuda {

namespace {

constexpr int kThreadsPerBlock = 256;
// Elements per thread and pass: their reads are issued before any write, so
// several are in flight at once (one element per thread left the kernel at
// about a quarter of the memory bandwidth).
constexpr int kElementsPerThread = 4;
// Grid limits: x over dst's contiguous dimension, y over its strided one;
// grid-stride loops cover larger matrices.
constexpr int64_t kMaxBlocksX = 1024;
constexpr int64_t kMaxBlocksY = 65535;

// Threads of a block walk dst's contiguous dimension (coalesced), blocks in
// y its strided dimension: no division per element.
template <class Dst, class Src>
__global__ void epilogue_kernel(kernels::EpilogueFunctor<Dst, Src> functor) {
  using Acc = typename kernels::EpilogueFunctor<Dst, Src>::Acc;
  const int64_t minor_extent = functor.minor_extent(), major_extent = functor.major_extent();
  const int64_t tile = static_cast<int64_t>(blockDim.x) * kElementsPerThread;
  for (int64_t major = blockIdx.y; major < major_extent; major += gridDim.y)
    for (int64_t first = static_cast<int64_t>(blockIdx.x) * tile + threadIdx.x; first < minor_extent;
         first += tile * gridDim.x) {
      Acc values[kElementsPerThread];
#pragma unroll
      for (int e = 0; e < kElementsPerThread; ++e) {
        const int64_t minor = first + e * static_cast<int64_t>(blockDim.x);
        if (minor < minor_extent) values[e] = functor.value(minor, major);
      }
#pragma unroll
      for (int e = 0; e < kElementsPerThread; ++e) {
        const int64_t minor = first + e * static_cast<int64_t>(blockDim.x);
        if (minor < minor_extent) functor.store(minor, major, values[e]);
      }
    }
}

template <class Dst, class Src>
struct TypePair {
  using dst = Dst;
  using src = Src;
};

// Calls visit(TypePair<Dst, Src>{}) for a supported pair; false otherwise.
template <class Visit>
bool visit_type_pair(DType dst, DType src, Visit&& visit) {
  if (dst == src) {
    switch (dst) {
      case DType::F64: visit(TypePair<double, double>{}); return true;
      case DType::F32: visit(TypePair<float, float>{}); return true;
      case DType::F16: visit(TypePair<__half, __half>{}); return true;
      case DType::BF16: visit(TypePair<__nv_bfloat16, __nv_bfloat16>{}); return true;
    }
    return false;
  }
  if (src == DType::F32 && dst == DType::F16) {
    visit(TypePair<__half, float>{});
    return true;
  }
  if (src == DType::F32 && dst == DType::BF16) {
    visit(TypePair<__nv_bfloat16, float>{});
    return true;
  }
  if (src == DType::F16 && dst == DType::F32) {
    visit(TypePair<float, __half>{});
    return true;
  }
  if (src == DType::BF16 && dst == DType::F32) {
    visit(TypePair<float, __nv_bfloat16>{});
    return true;
  }
  return false;
}

[[noreturn]] void unsupported(DType dst, DType src) {
  fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the CUDA backend has no element-wise kernel writing ", dtype_name(dst),
       " from ", dtype_name(src));
}

}  // namespace

bool epilogue_supported(DType dst, DType src) {
  return visit_type_pair(dst, src, [](auto) {});
}

void prepare_epilogue(DType dst, DType src) {
  const bool known = visit_type_pair(dst, src, [](auto pair) {
    using Pair = decltype(pair);
    cudaFuncAttributes attributes{};
    WEAVE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, epilogue_kernel<typename Pair::dst, typename Pair::src>));
  });
  if (!known) unsupported(dst, src);
}

void launch_epilogue(const EpilogueLaunch& launch, cudaStream_t stream) {
  if (launch.rows == 0 || launch.cols == 0) return;
  const bool known = visit_type_pair(launch.dst_type, launch.src_type, [&](auto pair) {
    using Dst = typename decltype(pair)::dst;
    using Src = typename decltype(pair)::src;
    kernels::EpilogueFunctor<Dst, Src> functor;
    using Acc = typename decltype(functor)::Acc;
    functor.dst = static_cast<Dst*>(launch.dst);
    functor.dst_ld = launch.dst_ld;
    functor.dst_row_major = launch.dst_row_major;
    functor.src = static_cast<const Src*>(launch.src);
    functor.src_ld = launch.src_ld;
    functor.src_row_major = launch.src_row_major;
    functor.more_count = launch.more_count;
    for (int q = 0; q < launch.more_count; ++q) functor.more[q] = static_cast<const Src*>(launch.more[q]);
    functor.bias = static_cast<const Dst*>(launch.bias);
    functor.src_scale = static_cast<Acc>(launch.src_scale);
    functor.dst_scale = static_cast<Acc>(launch.dst_scale);
    functor.rows = launch.rows;
    functor.cols = launch.cols;
    const int64_t tile = static_cast<int64_t>(kThreadsPerBlock) * kElementsPerThread;
    const dim3 blocks(static_cast<unsigned>(std::min(kMaxBlocksX, (functor.minor_extent() + tile - 1) / tile)),
                      static_cast<unsigned>(std::min(kMaxBlocksY, functor.major_extent())));
    epilogue_kernel<Dst, Src><<<blocks, kThreadsPerBlock, 0, stream>>>(functor);
    WEAVE_CUDA_CHECK(cudaGetLastError());
  });
  if (!known) unsupported(launch.dst_type, launch.src_type);
}

}  // namespace weave::internal::cuda
