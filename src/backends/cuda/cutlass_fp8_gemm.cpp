#include "backends/cuda/cutlass_fp8_gemm.hpp"

#include <cstdint>

#include "backends/cuda/cuda_check.hpp"
#include "core/error.hpp"

namespace weave::internal::cuda {

namespace {

using exec::layout_of;

bool aligned16(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer) % 16 == 0; }

// The length of a vector region whose entries are contiguous, or -1.
int64_t contiguous_length(const exec::MatrixRef& v) {
  if (v.rows == 0 || v.cols == 0) return 0;
  if (v.cols == 1) return v.rows == 1 || v.order == Order::ColMajor || v.ld == 1 ? v.rows : -1;
  if (v.rows == 1) return v.column_stride() == 1 ? v.cols : -1;
  return -1;
}

}  // namespace

std::unique_ptr<CutlassFp8Gemm> CutlassFp8Gemm::prepare(const plan::Schedule& schedule, const plan::GemmOp& op,
                                                        const GemmDevice& device, int sm_count, int swizzle,
                                                        bool bias_in_epilogue, std::string* why_not) {
  auto no = [&](const std::string& why) -> std::unique_ptr<CutlassFp8Gemm> {
    if (why_not) *why_not = why;
    return nullptr;
  };
  if (!rowwise_fp8_compiled()) return no("built without CUTLASS (WEAVE_CUTLASS_DIR)");
  if (device.compute_capability != 90) return no(str("sm_", device.compute_capability, " is not sm_90"));
  const exec::MatrixRef a = layout_of(schedule, op.a), b = layout_of(schedule, op.b), c = layout_of(schedule, op.c);
  if (a.dtype != DType::E4M3 || b.dtype != DType::E4M3 || (c.dtype != DType::BF16 && c.dtype != DType::F32))
    return no(str(dtype_name(a.dtype), " x ", dtype_name(b.dtype), " -> ", dtype_name(c.dtype),
                  " is not e4m3 x e4m3 -> bf16 or f32"));
  if (op.a_scale.mode != ScaleMode::RowWise || op.b_scale.mode != ScaleMode::RowWise)
    return no(str(scale_mode_name(op.a_scale.mode), " and ", scale_mode_name(op.b_scale.mode),
                  " scales are not row-wise"));
  if (op.beta == plan::Scalar::One) return no("the GEMM accumulates into C");
  if (op.has_addend) return no("the GEMM adds a received product (cuBLASLt reads it as its C)");
  if (bias_in_epilogue) return no("cuBLASLt adds the bias in this GEMM's epilogue");
  if (c.order != Order::RowMajor) return no("C is column-major");
  if (op.op_a == Op::C || op.op_b == Op::C) return no("a conjugate transpose");
  const bool a_t = op.op_a == Op::T, b_t = op.op_b == Op::T;
  // K contiguous in op(A) and in op(B).
  if ((a.order == Order::RowMajor) == a_t) return no("op(A) does not have K contiguous");
  if ((b.order == Order::ColMajor) == b_t) return no("op(B) does not have K contiguous");
  RowwiseFp8Shape shape;
  shape.m = a_t ? a.cols : a.rows;
  shape.k = a_t ? a.rows : a.cols;
  shape.n = b_t ? b.rows : b.cols;
  if ((b_t ? b.cols : b.rows) != shape.k || c.rows != shape.m || c.cols != shape.n)
    fail(WEAVE_ERROR_INTERNAL, "a GEMM step's operand shapes do not agree");
  shape.lda = a.ld;
  shape.ldb = b.ld;
  shape.ldd = c.ld;
  shape.f32_out = c.dtype == DType::F32;
  // The SMs the persistent kernel spreads over, asked once here rather than
  // by CUTLASS at every execute.
  shape.sm_count = sm_count;
  if (shape.sm_count <= 0)
    WEAVE_CUDA_CHECK(cudaDeviceGetAttribute(&shape.sm_count, cudaDevAttrMultiProcessorCount, device.index));
  shape.swizzle = swizzle > 0 ? swizzle : rowwise_fp8_swizzle(shape);
  if (contiguous_length(layout_of(schedule, op.a_scale.region)) != shape.m ||
      contiguous_length(layout_of(schedule, op.b_scale.region)) != shape.n)
    return no("a scale vector is not contiguous");
  const std::string unsupported = rowwise_fp8_unsupported(shape);
  if (!unsupported.empty()) return no(str("CUTLASS's kernel does not run it: ", unsupported));
  std::unique_ptr<CutlassFp8Gemm> gemm(new CutlassFp8Gemm(op, shape));
  if (const std::size_t bytes = rowwise_fp8_workspace_bytes(shape); bytes > 0)
    WEAVE_CUDA_CHECK(cudaMalloc(&gemm->workspace_, bytes));
  return gemm;
}

CutlassFp8Gemm::~CutlassFp8Gemm() {
  if (workspace_) cudaFree(workspace_);
}

bool CutlassFp8Gemm::enqueue(const exec::Bindings& bindings, const exec::Scalars& scalars,
                             cudaStream_t stream) const {
  if (scalars.value(op_.alpha) != 1.0 || scalars.value(op_.beta) != 0.0) return false;
  const exec::MatrixRef a = bindings.resolve(op_.a), b = bindings.resolve(op_.b), c = bindings.resolve(op_.c);
  const void* a_scale = bindings.resolve(op_.a_scale.region).data;
  const void* b_scale = bindings.resolve(op_.b_scale.region).data;
  if (a.ld != shape_.lda || b.ld != shape_.ldb || c.ld != shape_.ldd || c.rows != shape_.m || c.cols != shape_.n)
    fail(WEAVE_ERROR_INTERNAL, "a GEMM's shape at execute differs from the one prepared at plan creation");
  if (!aligned16(a.data) || !aligned16(b.data) || !aligned16(c.data) || !aligned16(a_scale) || !aligned16(b_scale))
    return false;
  const std::string failed = rowwise_fp8_enqueue(shape_, a.data, b.data, static_cast<const float*>(a_scale),
                                                 static_cast<const float*>(b_scale), c.data, workspace_, stream);
  if (!failed.empty())
    fail(WEAVE_ERROR_CUDA, "CUTLASS's row-wise scaled FP8 GEMM (m=", shape_.m, " n=", shape_.n, " k=", shape_.k,
         ") failed: ", failed);
  return true;
}

}  // namespace weave::internal::cuda
