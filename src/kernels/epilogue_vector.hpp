// The element-wise step (kernels/epilogue.hpp) for V neighbouring elements
// along dst's contiguous dimension at once, with single 16-byte loads and
// stores: used on GPUs when src is stored in the same order as dst and every
// row (or column) start is aligned to V elements. Each source is then read
// with one 16-byte load per thread, all issued before any arithmetic (the
// scalar step reads 2-byte elements one load at a time, which a trace showed
// at well under half the memory bandwidth for the direct algorithm's sums).
// The same arithmetic as the functor's value() and store(), in the same
// order: sources summed first to last, then beta * dst, then bias.
//
// VectorEpilogue is called once per vector index, by CUDA's own kernel
// (backends/cuda/epilogue_launcher.cu) or by Kokkos on its CUDA execution
// space (backends/cuda/kokkos_lanes.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/epilogue.hpp"

namespace weave::internal::kernels {

// Elements one call handles: 16 bytes of the wider of the two types.
template <class Dst, class Src>
constexpr int kVectorWidth = static_cast<int>(16 / (sizeof(Dst) > sizeof(Src) ? sizeof(Dst) : sizeof(Src)));

template <class T, int V>
struct alignas(sizeof(T) * V) Vector {
  T lane[V];
};

template <class T, int V>
WEAVE_FUNCTION Vector<T, V> load_vector(const T* at) {
  return *reinterpret_cast<const Vector<T, V>*>(at);
}

inline bool aligned_to(const void* pointer, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(pointer) % bytes == 0;
}

// Whether the vector step applies: src (if any) in dst's order, whole
// vectors per line, and every line of every operand starting on a vector
// (the bias only where it is read as vectors: adjacent entries along a
// row-major dst).
template <class Dst, class Src>
bool vector_step_applies(const EpilogueFunctor<Dst, Src>& f) {
  constexpr int V = kVectorWidth<Dst, Src>;
  const std::size_t dst_vector = sizeof(Dst) * V, src_vector = sizeof(Src) * V;
  if (f.minor_extent() % V != 0 || f.dst_ld % V != 0 || !aligned_to(f.dst, dst_vector)) return false;
  if (f.src) {
    if (f.src_row_major != f.dst_row_major || f.src_ld % V != 0 || !aligned_to(f.src, src_vector)) return false;
    for (int q = 0; q < f.more_count; ++q)
      if (!aligned_to(f.more[q], src_vector)) return false;
  }
  return !f.bias || !f.dst_row_major || f.bias_stride != 1 || aligned_to(f.bias, dst_vector);
}

template <class Dst, class Src, int V = kVectorWidth<Dst, Src>>
struct VectorEpilogue {
  using Acc = typename EpilogueFunctor<Dst, Src>::Acc;

  EpilogueFunctor<Dst, Src> f;
  uint64_t vectors_per_line = 0;
  bool narrow = true;  // 32-bit division is much cheaper

  explicit VectorEpilogue(const EpilogueFunctor<Dst, Src>& functor)
      : f(functor),
        vectors_per_line(static_cast<uint64_t>(functor.minor_extent() / V)),
        narrow(total() <= 0xffffffffull) {}

  // Calls to cover dst: one per vector.
  WEAVE_FUNCTION uint64_t total() const { return vectors_per_line * static_cast<uint64_t>(f.major_extent()); }

  WEAVE_FUNCTION void operator()(uint64_t index) const {
    const uint64_t major = narrow ? static_cast<uint32_t>(index) / static_cast<uint32_t>(vectors_per_line)
                                  : index / vectors_per_line;
    const int64_t minor = static_cast<int64_t>(index - major * vectors_per_line) * V;
    const int64_t line = static_cast<int64_t>(major);
    Acc result[V];
WEAVE_UNROLL
    for (int e = 0; e < V; ++e) result[e] = 0;
    if (f.src) {
      const int64_t at = line * f.src_ld + minor;  // src has dst's order
      Vector<Src, V> first = load_vector<Src, V>(f.src + at);
      Vector<Src, V> more[kMaxMoreSources];
WEAVE_UNROLL
      for (int q = 0; q < kMaxMoreSources; ++q)
        if (q < f.more_count) more[q] = load_vector<Src, V>(f.more[q] + at);
WEAVE_UNROLL
      for (int e = 0; e < V; ++e) {
        Acc sum = load_as<Acc>(first.lane[e]);
WEAVE_UNROLL
        for (int q = 0; q < kMaxMoreSources; ++q)
          if (q < f.more_count) sum += load_as<Acc>(more[q].lane[e]);
        if (f.conjugate_src) sum = conjugate(sum);
        result[e] = f.src_scale * sum;
      }
    }
    Dst* const out = f.dst + line * f.dst_ld + minor;
    if (f.dst_scale != Acc(0)) {
      const Vector<Dst, V> old = load_vector<Dst, V>(out);
WEAVE_UNROLL
      for (int e = 0; e < V; ++e) result[e] += f.dst_scale * load_as<Acc>(old.lane[e]);
    }
    if (f.bias) {
      if (!f.dst_row_major) {  // one bias entry for the whole line (a column)
        const Acc bias = f.bias_at(line);
WEAVE_UNROLL
        for (int e = 0; e < V; ++e) result[e] += bias;
      } else if (f.bias_stride == 1) {  // bias runs along the contiguous dimension, adjacent entries
        const Vector<Dst, V> bias = load_vector<Dst, V>(f.bias + minor);
WEAVE_UNROLL
        for (int e = 0; e < V; ++e) result[e] += load_as<Acc>(bias.lane[e]);
      } else {  // entries bias_stride apart (column-major bias, ld > 1): one by one
WEAVE_UNROLL
        for (int e = 0; e < V; ++e) result[e] += f.bias_at(minor + e);
      }
    }
    Vector<Dst, V> stored;
WEAVE_UNROLL
    for (int e = 0; e < V; ++e) stored.lane[e] = store_as<Dst>(result[e]);
    *reinterpret_cast<Vector<Dst, V>*>(out) = stored;
  }
};

}  // namespace weave::internal::kernels
