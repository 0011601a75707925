// The CUTLASS kernels of cutlass_rowwise_fp8.hpp, one template for both
// output types; each output type is instantiated in a .cu of its own so the
// two compile in parallel (cutlass_rowwise_fp8.cu: bf16,
// cutlass_rowwise_fp8_f32.cu: float32).
#pragma once

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>

#include <string>
#include <type_traits>

#include "backends/cuda/cutlass_rowwise_fp8.hpp"

namespace weave::internal::cuda::rowwise_fp8 {

using namespace cute;

template <class TileShape, class ClusterShape, bool Cooperative, class ElementD_>
struct RowwiseKernel {
  using ElementA = cutlass::float_e4m3_t;
  using ElementB = cutlass::float_e4m3_t;
  using ElementD = ElementD_;
  using LayoutA = cutlass::layout::RowMajor;     // K contiguous
  using LayoutB = cutlass::layout::ColumnMajor;  // K contiguous
  using LayoutD = cutlass::layout::RowMajor;
  static constexpr int kAlignmentA = 16, kAlignmentB = 16;  // 16 bytes each
  static constexpr int kAlignmentD = 16 / static_cast<int>(sizeof(ElementD));

  using MainloopSchedule = std::conditional_t<Cooperative, cutlass::gemm::KernelTmaWarpSpecializedCooperative,
                                              cutlass::gemm::KernelTmaWarpSpecializedPingpong>;
  using EpilogueSchedule = std::conditional_t<Cooperative, cutlass::epilogue::TmaWarpSpecializedCooperative,
                                              cutlass::epilogue::TmaWarpSpecialized>;

  // D = round(a_scale[row] * (b_scale[column] * accumulator)) in D's type.
  using Accumulator = cutlass::epilogue::fusion::Sm90AccFetch;
  using ScaleOfB = cutlass::epilogue::fusion::Sm90RowBroadcast<0, TileShape, float, float, Stride<_0, _1, _0>>;
  using ScaleOfA = cutlass::epilogue::fusion::Sm90ColBroadcast<0, TileShape, float, float, Stride<_1, _0, _0>>;
  using TimesB = cutlass::epilogue::fusion::Sm90Compute<cutlass::multiplies, float, float,
                                                        cutlass::FloatRoundStyle::round_to_nearest>;
  using TimesA = cutlass::epilogue::fusion::Sm90Compute<cutlass::multiplies, ElementD, float,
                                                        cutlass::FloatRoundStyle::round_to_nearest>;
  using ScaledByB = cutlass::epilogue::fusion::Sm90EVT<TimesB, ScaleOfB, Accumulator>;
  using Scaled = cutlass::epilogue::fusion::Sm90EVT<TimesA, ScaleOfA, ScaledByB>;

  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, LayoutD, kAlignmentD, ElementD, LayoutD,
      kAlignmentD, EpilogueSchedule, Scaled>::CollectiveOp;

  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, LayoutA, kAlignmentA, ElementB, LayoutB,
      kAlignmentB, float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

  static typename Gemm::Arguments arguments(const RowwiseFp8Shape& s, const void* a, const void* b,
                                            const float* a_scale, const float* b_scale, void* d) {
    using StrideA = typename Gemm::GemmKernel::StrideA;
    using StrideB = typename Gemm::GemmKernel::StrideB;
    using StrideD = typename Gemm::GemmKernel::StrideD;
    const int m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
    // (outer stride, 1, batch stride): one matrix each, leading dimensions
    // as given.
    StrideA stride_a{};
    StrideB stride_b{};
    StrideD stride_d{};
    get<0>(stride_a) = s.lda;
    get<0>(stride_b) = s.ldb;
    get<0>(stride_d) = s.ldd;
    cutlass::KernelHardwareInfo hardware;
    cudaGetDevice(&hardware.device_id);
    hardware.sm_count = s.sm_count > 0 ? s.sm_count
                                       : cutlass::KernelHardwareInfo::query_device_multiprocessor_count(
                                             hardware.device_id);
    typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                  {m, n, k, 1},
                                  {static_cast<const ElementA*>(a), stride_a, static_cast<const ElementB*>(b), stride_b},
                                  {{}, nullptr, stride_d, static_cast<ElementD*>(d), stride_d},
                                  hardware};
    // The epilogue tree's arguments, children first: {A's scales, {B's
    // scales, accumulator, multiply}, multiply}.
    args.epilogue.thread = {{a_scale}, {{b_scale}, {}, {}}, {}};
    args.scheduler.max_swizzle_size = s.swizzle;
    return args;
  }
};

// Few rows: 64-row tiles, two consumer warp groups taking turns (PyTorch's
// choice for such shapes). Else 128 x 128 tiles, the two warp groups
// cooperating on each, in clusters of two along M: the FP8 mainloop keeps
// a second set of float32 accumulators (it promotes the tensor cores' sums
// every few k-blocks, cuBLASLt's default accuracy), and 128 x 256 tiles
// spilled them (measured 3 x slower on H100s).
template <class ElementD>
using SmallKernel = RowwiseKernel<Shape<_64, _128, _128>, Shape<_1, _1, _1>, false, ElementD>;
template <class ElementD>
using LargeKernel = RowwiseKernel<Shape<_128, _128, _128>, Shape<_2, _1, _1>, true, ElementD>;

template <class K>
std::string unsupported(const RowwiseFp8Shape& s) {
  typename K::Gemm gemm;
  // Placeholder addresses (16-byte aligned): can_implement looks at shapes
  // and strides.
  alignas(16) static const char placeholder[16] = {};
  auto args = K::arguments(s, placeholder, placeholder, reinterpret_cast<const float*>(placeholder),
                           reinterpret_cast<const float*>(placeholder), const_cast<char*>(placeholder));
  const cutlass::Status status = gemm.can_implement(args);
  if (status != cutlass::Status::kSuccess) return cutlassGetStatusString(status);
  return {};
}

template <class K>
std::size_t workspace(const RowwiseFp8Shape& s) {
  auto args = K::arguments(s, nullptr, nullptr, nullptr, nullptr, nullptr);
  return K::Gemm::get_workspace_size(args);
}

template <class K>
std::string enqueue(const RowwiseFp8Shape& s, const void* a, const void* b, const float* a_scale,
                    const float* b_scale, void* d, void* work, cudaStream_t stream) {
  typename K::Gemm gemm;
  auto args = K::arguments(s, a, b, a_scale, b_scale, d);
  cutlass::Status status = gemm.initialize(args, work, stream);
  if (status == cutlass::Status::kSuccess) status = gemm.run(stream);
  if (status != cutlass::Status::kSuccess) return cutlassGetStatusString(status);
  return {};
}

// What one output type's .cu defines.
std::string unsupported_f32(const RowwiseFp8Shape& s);
std::size_t workspace_f32(const RowwiseFp8Shape& s);
std::string enqueue_f32(const RowwiseFp8Shape& s, const void* a, const void* b, const float* a_scale,
                        const float* b_scale, void* d, void* work, cudaStream_t stream);

}  // namespace weave::internal::cuda::rowwise_fp8
