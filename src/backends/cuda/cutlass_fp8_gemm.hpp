// One GEMM step of a schedule run by CUTLASS's row-wise scaled FP8 kernel
// (cutlass_rowwise_fp8.hpp) where it fits, prepared at plan creation beside
// the step's cuBLASLt plan, which runs whenever this one does not.
//
// It fits: e4m3 A and B with row-wise scales (one float per row of op(A),
// one per column of op(B)), a row-major bf16 or float32 C, op(A) and op(B)
// with K contiguous (row-major A not transposed, or column-major A
// transposed; B the other way round: a linear layer's X [M, K] times its
// weight W [N, K] transposed), no bias in the GEMM's epilogue, an sm_90
// device, and shapes CUTLASS's kernel can run. At execute it runs when
// alpha is 1, beta is 0 (C is not read) and every pointer is 16-byte
// aligned; otherwise the step's cuBLASLt plan runs, so the choice never
// changes whether a plan works, only which kernel multiplies.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "backends/cuda/cublaslt_gemm.hpp"
#include "backends/cuda/cutlass_rowwise_fp8.hpp"
#include "exec/bindings.hpp"
#include "plan/schedule.hpp"

namespace weave::internal::cuda {

class CutlassFp8Gemm {
 public:
  // The prepared GEMM, or null with `why_not` saying why it does not fit.
  // `swizzle` 0: the kernel's rule (rowwise_fp8_swizzle).
  static std::unique_ptr<CutlassFp8Gemm> prepare(const plan::Schedule& schedule, const plan::GemmOp& op,
                                                 const GemmDevice& device, int sm_count, int swizzle,
                                                 bool bias_in_epilogue, std::string* why_not);
  ~CutlassFp8Gemm();
  CutlassFp8Gemm(const CutlassFp8Gemm&) = delete;
  CutlassFp8Gemm& operator=(const CutlassFp8Gemm&) = delete;

  // Enqueues the GEMM and returns true, or returns false (enqueuing
  // nothing) where this execute's alpha or pointers do not fit.
  bool enqueue(const exec::Bindings& bindings, const exec::Scalars& scalars, cudaStream_t stream) const;

  // The tiles CTAs launched one after another take side by side.
  int swizzle() const { return shape_.swizzle; }

 private:
  CutlassFp8Gemm(const plan::GemmOp& op, const RowwiseFp8Shape& shape) : op_(op), shape_(shape) {}

  const plan::GemmOp& op_;
  RowwiseFp8Shape shape_;
  void* workspace_ = nullptr;  // cudaMalloc'd at plan creation where the kernel needs one
};

}  // namespace weave::internal::cuda
