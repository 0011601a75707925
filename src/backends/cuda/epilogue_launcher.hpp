// Runs the shared element-wise functor (kernels/epilogue.hpp) on a CUDA
// stream: dst = src_scale * (src + more...) + dst_scale * dst + bias, for every pair of
// element types a schedule produces on a GPU: (T, T) for f64, f32, f16 and
// bf16, (f16, f32), (bf16, f32) where float32 partial sums are rounded once
// into a 16-bit C, and (f32, f16), (f32, bf16) where the direct algorithm
// sums 16-bit products into a float32 sum first (more products than one pass
// takes). Plain C++ interface, so only the launcher is CUDA source.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"
#include "core/matrix.hpp"
#include "kernels/copy_words.hpp"
#include "kernels/epilogue.hpp"

namespace weave::internal::cuda {

struct EpilogueLaunch {
  DType dst_type = DType::F64;
  void* dst = nullptr;
  int64_t dst_ld = 1;
  bool dst_row_major = false;
  DType src_type = DType::F64;  // dst_type when there is no src
  const void* src = nullptr;    // null: no src term
  int64_t src_ld = 1;
  bool src_row_major = false;
  const void* more[kernels::kMaxMoreSources] = {};  // further sources laid out like src, added to it
  int more_count = 0;
  const void* bias = nullptr;   // null: no bias; dst_type, one entry per column, bias_stride apart
  int64_t bias_stride = 1;
  double src_scale = 1.0;
  double dst_scale = 0.0;       // dst is not read when zero
  double src_scale_imag = 0.0;  // complex types: the scales' imaginary parts
  double dst_scale_imag = 0.0;
  bool conjugate_src = false;   // complex types: the sources' sum conjugated (a copy of op(X) with op C)
  int64_t rows = 0, cols = 0;
};

// A launch's dst and src as the matrices lie (type, leading dimension,
// order; the extent is dst's); callers add scales, sources and the bias.
template <class Matrix>
void set_destination(EpilogueLaunch& launch, const Matrix& dst) {
  launch.dst_type = dst.dtype;
  launch.dst = dst.data;
  launch.dst_ld = dst.ld;
  launch.dst_row_major = dst.order == Order::RowMajor;
  launch.src_type = dst.dtype;
  launch.rows = dst.rows;
  launch.cols = dst.cols;
}
template <class Matrix>
void set_source(EpilogueLaunch& launch, const Matrix& src) {
  launch.src_type = src.dtype;
  launch.src = src.data;
  launch.src_ld = src.ld;
  launch.src_row_major = src.order == Order::RowMajor;
}
// dst = src.
template <class Matrix>
EpilogueLaunch launch_between(const Matrix& dst, const Matrix& src) {
  EpilogueLaunch launch;
  set_destination(launch, dst);
  set_source(launch, src);
  return launch;
}

// The element-wise functor of a launch, for the CUDA kernels and for Kokkos'
// CUDA execution space alike.
template <class Dst, class Src>
kernels::EpilogueFunctor<Dst, Src> make_epilogue_functor(const EpilogueLaunch& launch) {
  kernels::EpilogueFunctor<Dst, Src> functor;
  using Acc = typename kernels::EpilogueFunctor<Dst, Src>::Acc;
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
  return functor;
}

// Whether there is a kernel for this (dst, src) pair.
bool epilogue_supported(DType dst, DType src);

// Loads the kernel of a (dst, src) pair now: CUDA loads kernels lazily, and
// doing it at plan creation keeps execute free of loading (and capturable).
void prepare_epilogue(DType dst, DType src);

// Enqueues the kernel on `stream`; nothing for an empty dst.
void launch_epilogue(const EpilogueLaunch& launch, cudaStream_t stream);

// A plain copy between any two layouts, bits unchanged, of elements of
// `element_bytes` (1, 2, 4, 8 or 16): the packing, unpacking and gathered
// outputs of every type, FP8 and scales included (kernels/copy.hpp), moved
// in the widest words the layouts allow (kernels/copy_words.hpp).
using CopyLaunch = kernels::CopyGeometry;
void prepare_copy(std::size_t element_bytes);
void launch_copy(const CopyLaunch& launch, cudaStream_t stream);

}  // namespace weave::internal::cuda
