// One GEMM step of a schedule, prepared for cuBLASLt at plan creation so that
// execute only resolves pointers and enqueues: the matmul descriptor, the
// three matrix layouts and a heuristic algorithm, for any storage orders
// (kernels::to_column_major maps them to one column-major product).
//
// FP8 operands (scaled) carry their scale modes into cuBLASLt's
// CUBLASLT_MATMUL_DESC_{A,B}_SCALE_MODE and their scales' pointers, set at
// every enqueue (so a captured graph keeps the pointers of its capture),
// into _SCALE_POINTER; they accumulate in float32. Where the schedule adds
// a bias to the GEMM's output right after it, and cuBLASLt can do it in the
// GEMM's epilogue (FP8 GEMMs into a row-major 16-bit C with a tight bias of
// C's type: cuBLASLt's bias runs along the rows of its column-major D, our
// C's columns only when C is row-major), the GEMM adds it and the
// backend skips the separate step.
//
// A GEMM with an addend (GemmOp::has_addend) hands cuBLASLt the addend as
// its C and the step's c as its D, with beta = 1: cuBLASLt takes an
// out-of-place C of D's type, shape and order with its own leading
// dimension. Where the execute's beta is not zero, beta * c is first added
// into the addend by the element-wise kernel (the step's scratch).
//
// cuBLASLt algorithms may need aligned pointers. Regions of the workspace
// have known alignment; the caller's pointers are only known at execute, so
// two algorithms are prepared: one for the alignment the regions have when
// the caller's buffers start 256-byte aligned (as cudaMalloc returns them),
// and one that needs only element alignment, used when a pointer is less
// aligned than the first assumes. cuBLASLt must have the first (or plan
// creation fails); without the second, an execute with less aligned
// pointers fails and says so.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include <string>

#include "backends/cuda/gemm_tuning.hpp"
#include "exec/bindings.hpp"
#include "kernels/gemm_layout.hpp"
#include "plan/schedule.hpp"

namespace weave::internal::cuda {

// What a GEMM step amounts to, from its shape alone.
enum class GemmWork {
  None,       // C is empty
  ScaleOnly,  // K == 0: C = beta * C, an element-wise step
  Matmul,     // a cuBLASLt matmul
};
GemmWork gemm_work(const plan::GemmOp& op);

// The device a GEMM runs on, for what its types and scale modes need.
struct GemmDevice {
  int index = 0;
  int compute_capability = 0;  // major * 10 + minor
  const char* name = "";
};

class CublasLtGemm {
 public:
  // `op` must be GemmWork::Matmul. Each lane's cuBLASLt workspace holds
  // `workspace_bytes`. `sm_count_target` > 0 asks cuBLASLt for a kernel
  // sized for that many SMs (its persistent kernels then leave the others
  // free); 0: every SM of the device. `bias`: the bias step that follows
  // the GEMM (C += bias on the GEMM's C), for the GEMM to do in its
  // epilogue where it can (fused_bias() says whether it does).
  // `placeholder` is device memory (any, at least 256 bytes) whose address
  // stands in for the scales' while cuBLASLt's heuristic is asked: it
  // refuses scales per row or per block (INVALID_VALUE, on sm_90 with
  // cuBLASLt 13.1) when their pointers are still unset, and the real ones
  // come only at execute.
  // `tune`: time cuBLASLt's candidate algorithms and keep the fastest
  // (gemm_tuning.hpp; WEAVE_GEMM_TUNING=on), else its heuristic's first.
  CublasLtGemm(cublasLtHandle_t handle, const plan::Schedule& schedule, const plan::GemmOp& op, bool allow_tf32,
               std::size_t workspace_bytes, const GemmDevice& device, int32_t sm_count_target = 0,
               const plan::EpilogueOp* bias = nullptr, const void* placeholder = nullptr, bool tune = false);
  bool fused_bias() const { return bias_ != nullptr; }
  // What tuning did for the algorithm of aligned pointers.
  const TuningOutcome& tuning() const { return tuning_; }
  // Whether a tensor-wise scale is written out per row before every run
  // (tensor-wise against row-wise scales, a pair cuBLASLt has no kernel for).
  bool broadcasts_scale() const { return staged_[0].always || staged_[1].always; }
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  void enqueue(const exec::Bindings& bindings, const exec::Scalars& scalars, void* workspace,
               cudaStream_t stream) const;

 private:
  // Operands in cuBLASLt's order: A (left), B (right), and C = D (the output).
  enum Operand { kLeft = 0, kRight, kOut, kOperands };
  struct Algorithm {
    bool found = false;
    cublasLtMatmulAlgo_t algo{};
    std::array<uint32_t, kOperands> alignment{};  // bytes every pointer must be aligned to
  };
  // cuBLASLt's best algorithm for pointers with these alignments (found is
  // false when it has none): its heuristic's first, or with tuning the
  // fastest of its candidates when `tune` (the algorithm of aligned
  // pointers).
  Algorithm choose(const std::array<uint32_t, kOperands>& alignment, bool tune);
  // The scratch buffers a timing run of this matmul needs.
  TuningBuffers tuning_buffers() const;
  void set_scale_modes(const GemmDevice& device, const exec::MatrixRef& left, const exec::MatrixRef& right);
  void choose_algorithms(const plan::Schedule& schedule, DType in, DType out);
  void release() noexcept;

  cublasLtHandle_t handle_ = nullptr;
  const plan::GemmOp& op_;
  kernels::ColumnMajorGemm shape_;  // pointers unset; checked against execute's
  bool double_scalars_ = false;     // alpha/beta are double (f64) or float
  bool swapped_ = false;            // C is row-major: cuBLASLt's A is our B
  const plan::EpilogueOp* bias_ = nullptr;  // the bias step done in the epilogue, if any
  // GemmOp::has_addend: cuBLASLt's C is the addend (its own layout, same
  // order as D), read with beta = 1; D is the step's c.
  cublasLtMatrixLayout_t addend_layout_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  cublasLtMatmulDesc_t desc_ = nullptr;
  std::array<cublasLtMatrixLayout_t, kOperands> layouts_{};
  Algorithm aligned_, element_aligned_;
  bool tune_ = false;
  TuningOutcome tuning_;
  // Everything but the alignments that tells this matmul apart from others
  // of the process (the tuning cache's key).
  std::string description_;
  std::array<DType, kOperands> types_{};  // left, right, out
  const void* placeholder_ = nullptr;
  // Scales cuBLASLt reads from this GEMM's own device memory instead of
  // the plan's (scale_broadcast.hpp), per operand (left, right):
  //   - a tensor-wise scale against row-wise ones, written out per row of
  //     its operand (cuBLASLt multiplies only matching pairs), always;
  //   - any other tensor-wise scale, copied where its pointer at execute is
  //     not 16-byte aligned (one float per shard lies 4 bytes from the next
  //     in gathered scales; on H200 cuBLASLt answered NOT_SUPPORTED for it);
  //   - row-wise scales, copied whole where their pointer at execute is not
  //     16-byte aligned (the schedule reads slices in place from 16 bytes
  //     on; a caller's vector may start anywhere).
  struct StagedScale {
    int64_t count = 0;       // floats written: 0 (none), 1 or the outer extent
    bool always = false;     // every execute (broadcast), or only when misaligned
    bool copy = false;       // the vector copied as it is (row-wise), not one float broadcast
    float* buffer = nullptr; // cudaMalloc'd at plan creation
  };
  std::array<StagedScale, 2> staged_{};
};

}  // namespace weave::internal::cuda
