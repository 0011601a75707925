#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backends/cuda/cuda_check.hpp"
#include "backends/cuda/epilogue_launcher.hpp"
#include "backends/cuda/type_dispatch.cuh"
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

// Elements one thread of the vector kernel handles: 16 bytes of the wider
// of the two types, read and written with single 16-byte accesses.
template <class Dst, class Src>
constexpr int kVectorWidth = static_cast<int>(16 / (sizeof(Dst) > sizeof(Src) ? sizeof(Dst) : sizeof(Src)));

template <class T, int V>
struct alignas(sizeof(T) * V) Vector {
  T lane[V];
};

template <class T, int V>
__device__ Vector<T, V> load_vector(const T* at) {
  return *reinterpret_cast<const Vector<T, V>*>(at);
}

// The same arithmetic as the functor's value() and store(), in the same
// order (sources summed first to last, then beta * dst, then bias), for V
// neighbouring elements
// along dst's contiguous dimension at once. Used when src is stored in the
// same order as dst and every row (or column) start is aligned to V
// elements: then each source is read with one 16-byte load per thread, all
// issued before any arithmetic. The scalar kernel reads 2-byte elements one
// load at a time, which a trace showed at well under half the memory
// bandwidth for the direct algorithm's sums.
template <class Dst, class Src, int V>
__global__ void epilogue_vector_kernel(kernels::EpilogueFunctor<Dst, Src> f) {
  using Acc = typename kernels::EpilogueFunctor<Dst, Src>::Acc;
  using kernels::kMaxMoreSources;
  using kernels::load_as;
  const uint64_t vectors_per_line = static_cast<uint64_t>(f.minor_extent() / V);
  const uint64_t total = vectors_per_line * static_cast<uint64_t>(f.major_extent());
  const bool narrow = total <= 0xffffffffull;  // 32-bit division is much cheaper
  for (uint64_t index = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; index < total;
       index += static_cast<uint64_t>(blockDim.x) * gridDim.x) {
    const uint64_t major = narrow ? static_cast<uint32_t>(index) / static_cast<uint32_t>(vectors_per_line)
                                  : index / vectors_per_line;
    const int64_t minor = static_cast<int64_t>(index - major * vectors_per_line) * V;
    const int64_t line = static_cast<int64_t>(major);
    Acc result[V];
#pragma unroll
    for (int e = 0; e < V; ++e) result[e] = 0;
    if (f.src) {
      const int64_t at = line * f.src_ld + minor;  // src has dst's order
      Vector<Src, V> first = load_vector<Src, V>(f.src + at);
      Vector<Src, V> more[kMaxMoreSources];
#pragma unroll
      for (int q = 0; q < kMaxMoreSources; ++q)
        if (q < f.more_count) more[q] = load_vector<Src, V>(f.more[q] + at);
#pragma unroll
      for (int e = 0; e < V; ++e) {
        Acc sum = load_as<Acc>(first.lane[e]);
#pragma unroll
        for (int q = 0; q < kMaxMoreSources; ++q)
          if (q < f.more_count) sum += load_as<Acc>(more[q].lane[e]);
        if (f.conjugate_src) sum = kernels::conjugate(sum);
        result[e] = f.src_scale * sum;
      }
    }
    Dst* const out = f.dst + line * f.dst_ld + minor;
    if (f.dst_scale != Acc(0)) {
      const Vector<Dst, V> old = load_vector<Dst, V>(out);
#pragma unroll
      for (int e = 0; e < V; ++e) result[e] += f.dst_scale * load_as<Acc>(old.lane[e]);
    }
    if (f.bias) {
      if (!f.dst_row_major) {  // one bias entry for the whole line (a column)
        const Acc bias = f.bias_at(line);
#pragma unroll
        for (int e = 0; e < V; ++e) result[e] += bias;
      } else if (f.bias_stride == 1) {  // bias runs along the contiguous dimension, adjacent entries
        const Vector<Dst, V> bias = load_vector<Dst, V>(f.bias + minor);
#pragma unroll
        for (int e = 0; e < V; ++e) result[e] += load_as<Acc>(bias.lane[e]);
      } else {  // entries bias_stride apart (column-major bias, ld > 1): one by one
#pragma unroll
        for (int e = 0; e < V; ++e) result[e] += f.bias_at(minor + e);
      }
    }
    Vector<Dst, V> stored;
#pragma unroll
    for (int e = 0; e < V; ++e) stored.lane[e] = kernels::store_as<Dst>(result[e]);
    *reinterpret_cast<Vector<Dst, V>*>(out) = stored;
  }
}

bool aligned(const void* pointer, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(pointer) % bytes == 0;
}

// Whether the vector kernel applies: src (if any) in dst's order, whole
// vectors per line, and every line of every operand starting on a vector
// (the bias only where it is read as vectors: adjacent entries along a
// row-major dst).
template <class Dst, class Src>
bool vector_kernel_applies(const kernels::EpilogueFunctor<Dst, Src>& f) {
  constexpr int V = kVectorWidth<Dst, Src>;
  const std::size_t dst_vector = sizeof(Dst) * V, src_vector = sizeof(Src) * V;
  if (f.minor_extent() % V != 0 || f.dst_ld % V != 0 || !aligned(f.dst, dst_vector)) return false;
  if (f.src) {
    if (f.src_row_major != f.dst_row_major || f.src_ld % V != 0 || !aligned(f.src, src_vector)) return false;
    for (int q = 0; q < f.more_count; ++q)
      if (!aligned(f.more[q], src_vector)) return false;
  }
  return !f.bias || !f.dst_row_major || f.bias_stride != 1 || aligned(f.bias, dst_vector);
}

// Calls visit(TypePair<Dst, Src>{}) for a supported pair; false otherwise.
template <class Visit>
bool visit_type_pair(DType dst, DType src, Visit&& visit) {
  if (dst == src) return visit_same_type(dst, visit) || visit_complex_type(dst, visit);
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
    using Dst = typename Pair::dst;
    using Src = typename Pair::src;
    cudaFuncAttributes attributes{};
    WEAVE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, epilogue_kernel<Dst, Src>));
    WEAVE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, epilogue_vector_kernel<Dst, Src, kVectorWidth<Dst, Src>>));
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
    functor.bias_stride = launch.bias_stride;
    functor.src_scale = kernels::ScalarOf<Acc>::make(launch.src_scale, launch.src_scale_imag);
    functor.dst_scale = kernels::ScalarOf<Acc>::make(launch.dst_scale, launch.dst_scale_imag);
    functor.conjugate_src = launch.conjugate_src;
    functor.rows = launch.rows;
    functor.cols = launch.cols;
    if (vector_kernel_applies(functor)) {
      constexpr int V = kVectorWidth<Dst, Src>;
      const int64_t vectors = functor.minor_extent() / V * functor.major_extent();
      const auto blocks =
          static_cast<unsigned>(std::min(kMaxVectorBlocks, (vectors + kThreadsPerBlock - 1) / kThreadsPerBlock));
      epilogue_vector_kernel<Dst, Src, V><<<blocks, kThreadsPerBlock, 0, stream>>>(functor);
      WEAVE_CUDA_CHECK(cudaGetLastError());
      return;
    }
    const int64_t tile = static_cast<int64_t>(kThreadsPerBlock) * kElementsPerThread;
    const dim3 blocks(static_cast<unsigned>(std::min(kMaxBlocksX, (functor.minor_extent() + tile - 1) / tile)),
                      static_cast<unsigned>(std::min(kMaxBlocksY, functor.major_extent())));
    epilogue_kernel<Dst, Src><<<blocks, kThreadsPerBlock, 0, stream>>>(functor);
    WEAVE_CUDA_CHECK(cudaGetLastError());
  });
  if (!known) unsupported(launch.dst_type, launch.src_type);
}

}  // namespace weave::internal::cuda
