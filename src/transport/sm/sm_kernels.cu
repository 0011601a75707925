#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>

#include "backends/cuda/cuda_check.hpp"
#include "backends/cuda/type_dispatch.cuh"
#include "core/error.hpp"
#include "kernels/numeric.hpp"
#include "transport/sm/sm_kernels.hpp"

namespace weave::internal::transport::sm {

namespace {

using plan::kMaxPeerSumTerms;

// Every thread fences its own writes at system scope, the CTA meets, and
// its first thread counts the CTA out. True in the first thread of the CTA
// that counted last: every CTA's writes are then visible everywhere.
__device__ bool last_cta_done(unsigned* counter) {
  __threadfence_system();
  __syncthreads();
  bool last = false;
  if (threadIdx.x == 0) {
    last = atomicAdd(counter, 1u) == gridDim.x - 1;
    if (last) {
      __threadfence_system();
      *counter = 0;  // for the next kernel on the stream
    }
  }
  return last;
}

// The first thread waits for every flag given (all against one deadline
// from the kernel's start); the CTA then learns whether they all came.
__device__ bool wait_in_cta(const DeviceWaitState& waits, uint32_t* const* flags, const int* peers, int count,
                            int step, const int* steps) {
  __shared__ int go;
  if (threadIdx.x == 0) {
    const uint64_t start = global_time_ns();
    int ok = 1;
    for (int i = 0; i < count && ok; ++i)
      if (flags[i]) ok = wait_for_flag(waits, flags[i], 1u, start, steps ? steps[i] : step, peers[i]);
    go = ok;
  }
  __syncthreads();
  return go != 0;
}

// Bytes from src to dst by every thread of the grid: 16-byte words four at
// a time when both ends allow it (four loads in flight per thread before
// any store), else byte by byte.
__device__ void copy_bytes(void* dst, const void* src, int64_t bytes) {
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t threads = static_cast<int64_t>(gridDim.x) * blockDim.x;
  auto* out = static_cast<unsigned char*>(dst);
  const auto* in = static_cast<const unsigned char*>(src);
  int64_t done = 0;
  if ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) % 16 == 0) {
    constexpr int kUnroll = 8;
    const int64_t words = bytes / 16;
    auto* out16 = reinterpret_cast<uint4*>(dst);
    const auto* in16 = reinterpret_cast<const uint4*>(src);
    for (int64_t first = thread; first < words; first += threads * kUnroll) {
      uint4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (first + u * threads < words) v[u] = in16[first + u * threads];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (first + u * threads < words) out16[first + u * threads] = v[u];
    }
    done = words * 16;
  }
  for (int64_t i = done + thread; i < bytes; i += threads) out[i] = in[i];
}

__global__ void push_kernel(PushWork work, unsigned* counter, DeviceWaitState waits) {
  const bool go = wait_in_cta(waits, work.clear_flag, work.peer, work.count, -1, work.step);
  if (go)
    for (int i = 0; i < work.count; ++i) copy_bytes(work.dst[i], work.src[i], work.bytes[i]);
  if (!last_cta_done(counter) || wait_given_up(waits)) return;
  for (int i = 0; i < work.count; ++i) store_release(work.clear_flag[i], 0u);
  __threadfence_system();
  for (int i = 0; i < work.count; ++i) store_release(work.data_flag[i], 1u);
}

// A load that bypasses L1 (a peer's memory is not coherent with this SM's
// L1), for any element type of 2, 4 or 8 bytes, or a vector of 16.
template <class T>
__device__ T load_global(const T* at) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16, "unsupported size");
  T value;
  if constexpr (sizeof(T) == 2) {
    const unsigned short bits = __ldcg(reinterpret_cast<const unsigned short*>(at));
    memcpy(&value, &bits, 2);
  } else if constexpr (sizeof(T) == 4) {
    const unsigned bits = __ldcg(reinterpret_cast<const unsigned*>(at));
    memcpy(&value, &bits, 4);
  } else if constexpr (sizeof(T) == 8) {
    const unsigned long long bits = __ldcg(reinterpret_cast<const unsigned long long*>(at));
    memcpy(&value, &bits, 8);
  } else {
    const uint4 bits = __ldcg(reinterpret_cast<const uint4*>(at));
    memcpy(&value, &bits, 16);
  }
  return value;
}

template <class T, int V>
struct alignas(sizeof(T) * V) Vector {
  T lane[V];
};

template <class Dst, class Src>
struct PeerSumArgs {
  using Acc = typename kernels::Arithmetic<Dst>::type;
  Dst* dst;
  int64_t dst_ld;
  bool dst_row_major;
  Dst* copy;
  int term_count;
  const Src* terms[kMaxPeerSumTerms];
  uint32_t* ready_flag[kMaxPeerSumTerms];
  uint32_t* release_flag[kMaxPeerSumTerms];
  int term_peer[kMaxPeerSumTerms];
  int step;
  const Dst* bias;
  int64_t bias_stride;
  Acc src_scale, dst_scale;
  int64_t rows, cols;
};

// Terms are loaded this many at a time, all before any is added, so that
// many loads are in flight without a register for every possible term.
constexpr int kTermsPerGroup = 2;
// Each thread sums this many independent vectors of the output at once
// (grid-stride apart), issuing every one of their loads before it adds any:
// a read of a peer's memory over NVLink takes microseconds, so the bytes in
// flight, not the SMs' arithmetic, bound the kernel (one vector per thread:
// GEMM-AR 8192^3 on 2 H100s at 2.73 x its limit on 16 CTAs; these: 2.50).
// Vectors of 8 elements (16-bit types) keep 2 per thread: 4 would need
// more registers than 512 threads per CTA may have.
template <int V>
constexpr int kVectorsPerThread = V >= 8 ? 2 : 4;

// V > 1: V neighbouring elements of a row at once (dst row-major, every row
// of every operand starting on a 16-byte boundary). V == 1: one element at
// a time in the terms' row-major order, dst in any layout. Either way the
// arithmetic is the shared element-wise functor's (kernels/epilogue.hpp), in
// its order: the terms summed first to last, then scaled, then beta * dst,
// then bias.
template <class Dst, class Src, int V>
__global__ void __launch_bounds__(kThreadsPerCta)
    peer_sum_kernel(PeerSumArgs<Dst, Src> a, unsigned* counter, DeviceWaitState waits) {
  using Acc = typename PeerSumArgs<Dst, Src>::Acc;
  constexpr int U = kVectorsPerThread<V>;
  const bool go = wait_in_cta(waits, a.ready_flag, a.term_peer, a.term_count, a.step, nullptr);
  if (go) {
    const uint64_t per_row = static_cast<uint64_t>(a.cols / V);
    const uint64_t total = per_row * static_cast<uint64_t>(a.rows);
    const uint64_t stride = static_cast<uint64_t>(blockDim.x) * gridDim.x;
    for (uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; first < total;
         first += stride * U) {
      int64_t row[U], col[U], at[U];  // at: the element's offset in every term and in copy
      bool valid[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const uint64_t index = first + u * stride;
        valid[u] = index < total;
        row[u] = valid[u] ? static_cast<int64_t>(index / per_row) : 0;
        col[u] = valid[u] ? static_cast<int64_t>(index - static_cast<uint64_t>(row[u]) * per_row) * V : 0;
        at[u] = row[u] * a.cols + col[u];
      }
      Acc sum[U][V];
#pragma unroll
      for (int group = 0; group < kMaxPeerSumTerms; group += kTermsPerGroup) {
        if (group >= a.term_count) break;
        Vector<Src, V> loaded[U][kTermsPerGroup];
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
          for (int g = 0; g < kTermsPerGroup; ++g)
            if (valid[u] && group + g < a.term_count)
              loaded[u][g] = load_global(reinterpret_cast<const Vector<Src, V>*>(a.terms[group + g] + at[u]));
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
          for (int g = 0; g < kTermsPerGroup; ++g) {
            if (group + g >= a.term_count) break;
#pragma unroll
            for (int e = 0; e < V; ++e) {
              const Acc term = kernels::load_as<Acc>(loaded[u][g].lane[e]);
              sum[u][e] = group + g == 0 ? term : sum[u][e] + term;
            }
          }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (!valid[u]) break;
        const int64_t i = row[u], j = col[u];
        Acc result[V];
#pragma unroll
        for (int e = 0; e < V; ++e) result[e] = a.src_scale * sum[u][e];
        if constexpr (V > 1) {
          Dst* const out = a.dst + i * a.dst_ld + j;
          if (a.dst_scale != Acc(0)) {
            const Vector<Dst, V> old = *reinterpret_cast<const Vector<Dst, V>*>(out);
#pragma unroll
            for (int e = 0; e < V; ++e) result[e] += a.dst_scale * kernels::load_as<Acc>(old.lane[e]);
          }
          Vector<Dst, V> stored;
#pragma unroll
          for (int e = 0; e < V; ++e) {
            if (a.bias) result[e] += kernels::load_as<Acc>(a.bias[(j + e) * a.bias_stride]);
            stored.lane[e] = kernels::store_as<Dst>(result[e]);
          }
          *reinterpret_cast<Vector<Dst, V>*>(out) = stored;
          if (a.copy) *reinterpret_cast<Vector<Dst, V>*>(a.copy + at[u]) = stored;
        } else {
          Dst* const out = a.dst + (a.dst_row_major ? i * a.dst_ld + j : i + j * a.dst_ld);
          if (a.dst_scale != Acc(0)) result[0] += a.dst_scale * kernels::load_as<Acc>(*out);
          if (a.bias) result[0] += kernels::load_as<Acc>(a.bias[j * a.bias_stride]);
          const Dst stored = kernels::store_as<Dst>(result[0]);
          *out = stored;
          if (a.copy) a.copy[at[u]] = stored;
        }
      }
    }
  }
  if (!last_cta_done(counter) || wait_given_up(waits)) return;
  for (int t = 0; t < a.term_count; ++t)
    if (a.ready_flag[t]) store_release(a.ready_flag[t], 0u);
  __threadfence_system();
  for (int t = 0; t < a.term_count; ++t)
    if (a.release_flag[t]) store_release(a.release_flag[t], 1u);
}

template <class Dst, class Src>
constexpr int kVectorWidth = static_cast<int>(16 / (sizeof(Dst) > sizeof(Src) ? sizeof(Dst) : sizeof(Src)));

// The sums read C's type and write C's type (products travel in C's type).
template <class Visit>
bool visit_type_pair(DType dst, DType term, Visit&& visit) {
  return dst == term && cuda::visit_same_type(dst, visit);
}

bool aligned(const void* pointer) { return reinterpret_cast<std::uintptr_t>(pointer) % 16 == 0; }

// CTAs worth launching for `work_items` items of kThreadsPerCta each, at
// most the budget.
unsigned ctas_for(int64_t work_items, int budget) {
  const int64_t wanted = (work_items + kThreadsPerCta - 1) / kThreadsPerCta;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(budget, wanted)));
}

}  // namespace

void launch_push(const PushWork& work, int ctas, unsigned* counter, const DeviceWaitState& waits,
                 cudaStream_t stream) {
  if (work.count == 0) return;
  int64_t words = 0;
  for (int i = 0; i < work.count; ++i) words += (work.bytes[i] + 15) / 16;
  push_kernel<<<ctas_for(words / 4, ctas), kThreadsPerCta, 0, stream>>>(work, counter, waits);
  WEAVE_CUDA_CHECK(cudaGetLastError());
}

bool peer_sum_supported(DType dst, DType term) {
  return visit_type_pair(dst, term, [](auto) {});
}

void prepare_push() {
  cudaFuncAttributes attributes{};
  WEAVE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, push_kernel));
}

void prepare_peer_sum(DType dst, DType term) {
  cudaFuncAttributes attributes{};
  const bool known = visit_type_pair(dst, term, [&](auto pair) {
    using Dst = typename decltype(pair)::dst;
    using Src = typename decltype(pair)::src;
    WEAVE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, peer_sum_kernel<Dst, Src, 1>));
    WEAVE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, peer_sum_kernel<Dst, Src, kVectorWidth<Dst, Src>>));
  });
  if (!known)
    fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the SM transport has no kernel summing ", dtype_name(term), " into ",
         dtype_name(dst));
}

void launch_peer_sum(const PeerSumLaunch& launch, int ctas, unsigned* counter, const DeviceWaitState& waits,
                     cudaStream_t stream) {
  if (launch.term_count < 1 || launch.term_count > kMaxPeerSumTerms)
    fail(WEAVE_ERROR_INTERNAL, "a peer sum of ", launch.term_count, " terms");
  const bool known = visit_type_pair(launch.dst_type, launch.term_type, [&](auto pair) {
    using Dst = typename decltype(pair)::dst;
    using Src = typename decltype(pair)::src;
    PeerSumArgs<Dst, Src> a{};
    using Acc = typename PeerSumArgs<Dst, Src>::Acc;
    a.dst = static_cast<Dst*>(launch.dst);
    a.dst_ld = launch.dst_ld;
    a.dst_row_major = launch.dst_row_major;
    a.copy = static_cast<Dst*>(launch.copy);
    a.term_count = launch.term_count;
    for (int t = 0; t < launch.term_count; ++t) {
      a.terms[t] = static_cast<const Src*>(launch.terms[t]);
      a.ready_flag[t] = launch.ready_flag[t];
      a.release_flag[t] = launch.release_flag[t];
      a.term_peer[t] = launch.term_peer[t];
    }
    a.step = launch.step;
    a.bias = static_cast<const Dst*>(launch.bias);
    a.bias_stride = launch.bias_stride;
    a.src_scale = static_cast<Acc>(launch.src_scale);
    a.dst_scale = static_cast<Acc>(launch.dst_scale);
    a.rows = launch.rows;
    a.cols = launch.cols;
    constexpr int V = kVectorWidth<Dst, Src>;
    bool vector = a.dst_row_major && a.cols % V == 0 && a.dst_ld % V == 0 && aligned(a.dst) &&
                  (!a.copy || aligned(a.copy));
    for (int t = 0; t < a.term_count; ++t) vector = vector && aligned(a.terms[t]);
    if (vector) {
      peer_sum_kernel<Dst, Src, V>
          <<<ctas_for(a.rows * (a.cols / V) / kVectorsPerThread<V>, ctas), kThreadsPerCta, 0, stream>>>(a, counter,
                                                                                                    waits);
    } else {
      peer_sum_kernel<Dst, Src, 1>
          <<<ctas_for(a.rows * a.cols / kVectorsPerThread<1>, ctas), kThreadsPerCta, 0, stream>>>(a, counter, waits);
    }
    WEAVE_CUDA_CHECK(cudaGetLastError());
  });
  if (!known)
    fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the SM transport has no kernel summing ", dtype_name(launch.term_type),
         " into ", dtype_name(launch.dst_type));
}

}  // namespace weave::internal::transport::sm
