#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backends/cuda/cuda_check.hpp"
#include "backends/cuda/epilogue_dispatch.cuh"
#include "backends/cuda/epilogue_launcher.hpp"
#include "kernels/copy.hpp"
#include "kernels/copy_words.hpp"

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
// The vector kernel's grid-stride loop: enough blocks to fill every SM of
// the largest GPUs several times over.
constexpr int64_t kMaxVectorBlocks = 4096;

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

// A grid-stride loop over the vector step's indices.
template <class Dst, class Src>
__global__ void epilogue_vector_kernel(kernels::VectorEpilogue<Dst, Src> step) {
  const uint64_t total = step.total();
  for (uint64_t index = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; index < total;
       index += static_cast<uint64_t>(blockDim.x) * gridDim.x)
    step(index);
}

[[noreturn]] void unsupported(DType dst, DType src) {
  fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the CUDA backend has no element-wise kernel writing ", dtype_name(dst),
       " from ", dtype_name(src));
}

}  // namespace

bool epilogue_supported(DType dst, DType src) {
  return visit_epilogue_types(dst, src, [](auto) {});
}

void prepare_epilogue(DType dst, DType src) {
  const bool known = visit_epilogue_types(dst, src, [](auto pair) {
    using Pair = decltype(pair);
    using Dst = typename Pair::dst;
    using Src = typename Pair::src;
    cudaFuncAttributes attributes{};
    WEAVE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, epilogue_kernel<Dst, Src>));
    WEAVE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, epilogue_vector_kernel<Dst, Src>));
  });
  if (!known) unsupported(dst, src);
}

void launch_epilogue(const EpilogueLaunch& launch, cudaStream_t stream) {
  if (launch.rows == 0 || launch.cols == 0) return;
  const bool known = dispatch_epilogue(
      launch,
      [&](const auto& step) {
        const auto vectors = static_cast<int64_t>(step.total());
        const auto blocks =
            static_cast<unsigned>(std::min(kMaxVectorBlocks, (vectors + kThreadsPerBlock - 1) / kThreadsPerBlock));
        epilogue_vector_kernel<<<blocks, kThreadsPerBlock, 0, stream>>>(step);
        WEAVE_CUDA_CHECK(cudaGetLastError());
      },
      [&](const auto& functor) {
        const int64_t tile = static_cast<int64_t>(kThreadsPerBlock) * kElementsPerThread;
        const dim3 blocks(static_cast<unsigned>(std::min(kMaxBlocksX, (functor.minor_extent() + tile - 1) / tile)),
                          static_cast<unsigned>(std::min(kMaxBlocksY, functor.major_extent())));
        epilogue_kernel<<<blocks, kThreadsPerBlock, 0, stream>>>(functor);
        WEAVE_CUDA_CHECK(cudaGetLastError());
      });
  if (!known) unsupported(launch.dst_type, launch.src_type);
}

namespace {

template <class Word>
__global__ void copy_kernel(kernels::CopyFunctor<Word> f) {
  const int64_t minor_extent = f.minor_extent(), major_extent = f.major_extent();
  for (int64_t major = blockIdx.y; major < major_extent; major += gridDim.y)
    for (int64_t minor = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; minor < minor_extent;
         minor += static_cast<int64_t>(blockDim.x) * gridDim.x)
      f.apply(minor, major);
}

}  // namespace

void prepare_copy(std::size_t element_bytes) {
  // Every word a copy of such elements may move in (launch_copy widens).
  for (std::size_t word_bytes = element_bytes; word_bytes <= 16; word_bytes *= 2)
    if (!kernels::visit_word(word_bytes, [](auto word) {
          cudaFuncAttributes attributes{};
          WEAVE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, copy_kernel<decltype(word)>));
        }))
      fail(WEAVE_ERROR_INTERNAL, "no copy kernel for ", word_bytes, "-byte words");
}

void launch_copy(const CopyLaunch& launch, cudaStream_t stream) {
  if (launch.rows == 0 || launch.cols == 0) return;
  // In the widest words the layouts allow (kernels/copy_words.hpp).
  const kernels::WordCopy w = kernels::widest_word_copy(launch);
  const bool known = kernels::visit_word(w.word_bytes, [&](auto word) {
    using Word = decltype(word);
    const kernels::CopyFunctor<Word> f = kernels::word_copy_functor<Word>(w, launch.dst, launch.src);
    const dim3 blocks(static_cast<unsigned>(std::min(kMaxBlocksX, (f.minor_extent() + kThreadsPerBlock - 1) / kThreadsPerBlock)),
                      static_cast<unsigned>(std::min(kMaxBlocksY, f.major_extent())));
    copy_kernel<Word><<<blocks, kThreadsPerBlock, 0, stream>>>(f);
    WEAVE_CUDA_CHECK(cudaGetLastError());
  });
  if (!known) fail(WEAVE_ERROR_INTERNAL, "no copy kernel for ", w.word_bytes, "-byte words");
}

}  // namespace weave::internal::cuda
