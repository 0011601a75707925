#include "backends/cuda/cublaslt_gemm.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/cuda/cuda_check.hpp"
#include "backends/cuda/epilogue_launcher.hpp"
#include "backends/cuda/fp8_scale_pairs.hpp"
#include "backends/cuda/scale_broadcast.hpp"
#include "core/error.hpp"

namespace weave::internal::cuda {

namespace {

constexpr uint32_t kMaxAlignment = 256;  // what cuBLASLt asks for at most (and cudaMalloc gives)

// Heuristic answers a tuned GEMM times (gemm_tuning.hpp).
constexpr int kTuningCandidates = 8;

using exec::layout_of;

// Byte offset of a region's first element from a 256-byte aligned base:
// the caller's buffer, or the workspace.
uint64_t offset_from_aligned_base(const plan::Schedule& schedule, const plan::Region& region) {
  return static_cast<uint64_t>(schedule.offset_from_binding(region));
}

uint32_t alignment_of(uint64_t address) {
  if (address == 0) return kMaxAlignment;
  const uint64_t lowest_bit = address & (~address + 1);
  return lowest_bit >= kMaxAlignment ? kMaxAlignment : static_cast<uint32_t>(lowest_bit);
}

uint32_t alignment_of(const void* pointer) { return alignment_of(reinterpret_cast<uintptr_t>(pointer)); }

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::F64: return CUDA_R_64F;
    case DType::F32: return CUDA_R_32F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::E4M3: return CUDA_R_8F_E4M3;
    case DType::E5M2: return CUDA_R_8F_E5M2;
    case DType::UE8M0: return CUDA_R_8F_UE8M0;
    case DType::C64: return CUDA_C_32F;
    case DType::C128: return CUDA_C_64F;
  }
  fail(WEAVE_ERROR_INTERNAL, "unknown element type ", static_cast<int>(t));
}

cublasOperation_t cublas_op(Op op) { return op == Op::N ? CUBLAS_OP_N : op == Op::T ? CUBLAS_OP_T : CUBLAS_OP_C; }

// The preference object of one heuristic query, freed on every path.
struct Preference {
  cublasLtMatmulPreference_t handle = nullptr;
  Preference() { WEAVE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&handle)); }
  ~Preference() { cublasLtMatmulPreferenceDestroy(handle); }
  template <class T>
  void set(cublasLtMatmulPreferenceAttributes_t attribute, T value) {
    WEAVE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(handle, attribute, &value, sizeof value));
  }
};

}  // namespace

GemmWork gemm_work(const plan::GemmOp& op) {
  if (op.c.empty()) return GemmWork::None;
  const int64_t k = op.op_a == Op::N ? op.a.cols : op.a.rows;
  return k == 0 ? GemmWork::ScaleOnly : GemmWork::Matmul;
}

CublasLtGemm::CublasLtGemm(cublasLtHandle_t handle, const plan::Schedule& schedule, const plan::GemmOp& op,
                           bool allow_tf32, std::size_t workspace_bytes, const GemmDevice& device,
                           int32_t sm_count_target, const plan::EpilogueOp* bias, const void* placeholder, bool tune)
    : handle_(handle), op_(op), workspace_bytes_(workspace_bytes), tune_(tune), placeholder_(placeholder) {
  const exec::MatrixRef a = layout_of(schedule, op.a), b = layout_of(schedule, op.b), c = layout_of(schedule, op.c);
  shape_ = kernels::to_column_major(a, op.op_a, b, op.op_b, c);
  if (gemm_work(op) != GemmWork::Matmul)
    fail(WEAVE_ERROR_INTERNAL, "a GEMM with an empty C or K = 0 was handed to cuBLASLt");
  // The left operand is A unless C is row-major (then the product is
  // computed transposed and B comes first).
  swapped_ = c.order == Order::RowMajor;
  const exec::MatrixRef& left = swapped_ ? b : a;
  const exec::MatrixRef& right = swapped_ ? a : b;
  const bool scaled = op.a_scale.scaled() || op.b_scale.scaled();

  // Types: unscaled inputs in one type, the output in that type, or in
  // float32 when 16-bit products are partial sums; FP8 inputs (each its
  // own format) into bf16, f16 or f32.
  const DType in = a.dtype, out = c.dtype;
  types_ = {left.dtype, right.dtype, out};
  const bool supported = scaled      ? is_scaled(a.dtype) && is_scaled(b.dtype) &&
                                      (out == DType::BF16 || out == DType::F16 || out == DType::F32)
                         : a.dtype != b.dtype ? false
                         : in == DType::F64 || in == DType::F32 || is_complex(in) ? out == in
                                              : (out == in || out == DType::F32);
  if (!supported)
    fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the CUDA backend cannot multiply ", dtype_name(a.dtype), " by ",
         dtype_name(b.dtype), " into a ", dtype_name(out), " result");
  // f64 computes in f64; everything else (FP8 included) in f32 (TF32
  // tensor cores for f32 only when the plan allows them).
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  // Complex: computed in its component type, with complex scalars.
  if (in == DType::F64 || in == DType::C128) {
    compute = CUBLAS_COMPUTE_64F;
    scale = in == DType::C128 ? CUDA_C_64F : CUDA_R_64F;
    double_scalars_ = true;
  } else if (in == DType::C64) {
    scale = CUDA_C_32F;
  } else if (in == DType::F32 && allow_tf32) {
    compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  }

  try {
    WEAVE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc_, compute, scale));
    const cublasOperation_t trans_left = cublas_op(shape_.op_left), trans_right = cublas_op(shape_.op_right);
    WEAVE_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &trans_left, sizeof trans_left));
    WEAVE_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &trans_right, sizeof trans_right));
    // Set before the heuristic query, which then picks (and sizes) kernels
    // for that many SMs.
    if (sm_count_target > 0)
      WEAVE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET,
                                                        &sm_count_target, sizeof sm_count_target));
    if (scaled) {
      set_scale_modes(device, left, right);
      if (placeholder) {
        WEAVE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &placeholder,
                                                          sizeof placeholder));
        WEAVE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &placeholder,
                                                          sizeof placeholder));
      }
    }
    // Stored shapes of the column-major operands.
    const uint64_t m = static_cast<uint64_t>(shape_.m), n = static_cast<uint64_t>(shape_.n),
                   k = static_cast<uint64_t>(shape_.k);
    const bool left_n = shape_.op_left == Op::N, right_n = shape_.op_right == Op::N;
    WEAVE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layouts_[kLeft], cuda_type(left.dtype), left_n ? m : k,
                                                  left_n ? k : m, shape_.ld_left));
    WEAVE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layouts_[kRight], cuda_type(right.dtype), right_n ? k : n,
                                                  right_n ? n : k, shape_.ld_right));
    WEAVE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layouts_[kOut], cuda_type(out), m, n, shape_.ld_out));
    std::string addend_description;
    if (op.has_addend) {
      const exec::MatrixRef addend = layout_of(schedule, op.addend);
      addend_description = str(" addend ld ", addend.ld);
      if (addend.dtype != out || addend.order != c.order || addend.rows != c.rows || addend.cols != c.cols)
        fail(WEAVE_ERROR_INTERNAL, "a GEMM's addend (", dtype_name(addend.dtype), ", ", order_name(addend.order), ", ",
             addend.rows, " x ", addend.cols, ") does not match its C (", dtype_name(out), ", ", order_name(c.order),
             ", ", c.rows, " x ", c.cols, ")");
      WEAVE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&addend_layout_, cuda_type(out), m, n, addend.ld));
      // Timing candidates runs them with C = D; the heuristic's first stands.
      tune_ = false;
    }
    description_ = str("device ", device.index, " m ", m, " n ", n, " k ", k, " ld ", shape_.ld_left, " ",
                       shape_.ld_right, " ", shape_.ld_out, " ops ", op_name(shape_.op_left), op_name(shape_.op_right),
                       " types ", dtype_name(left.dtype), " ", dtype_name(right.dtype), " ", dtype_name(out),
                       " compute ", static_cast<int>(compute), " sms ", sm_count_target, addend_description);
    if (scaled)
      description_ += str(" scales ", scale_mode_name((swapped_ ? op.b_scale : op.a_scale).mode), " ",
                          scale_mode_name((swapped_ ? op.a_scale : op.b_scale).mode));

    // The bias in the epilogue: FP8 GEMMs into a row-major 16-bit C, a
    // tight bias of C's type (cuBLASLt adds a packed vector along the rows
    // of its column-major D: our C's columns when C is row-major).
    const bool bias_fits = bias && scaled && swapped_ && (out == DType::BF16 || out == DType::F16) &&
                           schedule.buffer(bias->bias).dtype == out &&
                           (bias->bias.cols <= 1 || layout_of(schedule, bias->bias).column_stride() == 1);
    if (bias_fits) {
      const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
      const int32_t bias_type = cuda_type(out);
      WEAVE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
      WEAVE_CUBLAS_CHECK(
          cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type));
      bias_ = bias;
      choose_algorithms(schedule, in, out);
      if (!aligned_.found) {
        // No kernel with the bias: the separate step adds it.
        const cublasLtEpilogue_t plain = CUBLASLT_EPILOGUE_DEFAULT;
        WEAVE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &plain, sizeof plain));
        bias_ = nullptr;
      }
    }
    if (!bias_) choose_algorithms(schedule, in, out);
    if (!aligned_.found)
      fail(WEAVE_ERROR_UNSUPPORTED, "cuBLASLt has no algorithm for a ", dtype_name(left.dtype), " x ",
           dtype_name(right.dtype), " -> ", dtype_name(out), " GEMM m=", shape_.m, " n=", shape_.n, " k=", shape_.k,
           " (cuBLASLt's A ", op_name(shape_.op_left), ", B ", op_name(shape_.op_right), ")",
           scaled ? str(" with ", scale_mode_name((swapped_ ? op.b_scale : op.a_scale).mode), " and ",
                        scale_mode_name((swapped_ ? op.a_scale : op.b_scale).mode), " scales")
                  : std::string(),
           " with leading dimensions ", shape_.ld_left, ", ", shape_.ld_right, ", ", shape_.ld_out,
           " and pointer alignments ", aligned_.alignment[kLeft], ", ", aligned_.alignment[kRight], ", ",
           aligned_.alignment[kOut], " bytes on device ", device.index, " (", device.name, ", sm_",
           device.compute_capability, ")",
           scaled ? "; FP8 GEMMs need K, the leading dimensions and every shard's and chunk's bytes to be "
                    "multiples of 16 (doc/fp8.md)"
                  : "");
  } catch (...) {
    release();
    throw;
  }
}

namespace {

int32_t cublas_scale_mode(ScaleMode mode) {
  switch (mode) {
    case ScaleMode::None:
    case ScaleMode::Tensor: return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
    case ScaleMode::RowWise: return CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    case ScaleMode::Block1x128: return CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    case ScaleMode::Block128x128: return CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    case ScaleMode::Mxfp8: return CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0;
  }
  return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
}

}  // namespace

// What the device needs to run the FP8 GEMM, checked by name (the type
// table's minimum compute capability, MXFP8's sm_100, Hopper's K-major
// operands), then the scale modes of cuBLASLt's A (our left operand) and B.
void CublasLtGemm::set_scale_modes(const GemmDevice& device, const exec::MatrixRef& left,
                                   const exec::MatrixRef& right) {
  const plan::ScaleOperand& left_scale = swapped_ ? op_.b_scale : op_.a_scale;
  const plan::ScaleOperand& right_scale = swapped_ ? op_.a_scale : op_.b_scale;
  for (const exec::MatrixRef* x : {&left, &right}) {
    const DTypeRow& row = dtype_row(x->dtype);
    if (device.compute_capability < row.cuda_min_compute)
      fail(WEAVE_ERROR_UNSUPPORTED, row.name, " GEMMs need a GPU of compute capability ", row.cuda_min_compute / 10,
           ".", row.cuda_min_compute % 10, " or later; device ", device.index, " (", device.name, ") is sm_",
           device.compute_capability);
  }
  for (const plan::ScaleOperand* s : {&left_scale, &right_scale})
    if (s->mode == ScaleMode::Mxfp8 && device.compute_capability < 100)
      fail(WEAVE_ERROR_UNSUPPORTED, "MXFP8 scales (1x32 blocks, E8M0; cuBLASLt's VEC32_UE8M0) run on GPUs of compute "
           "capability 10.0 and later; device ", device.index, " (", device.name, ") is sm_",
           device.compute_capability, ": use 1x128 or row-wise scales there");
  // Before sm_100 cuBLASLt's FP8 kernels take only "TN": both operands
  // stored K-contiguous.
  if (device.compute_capability < 100 && !(shape_.op_left == Op::T && shape_.op_right == Op::N))
    fail(WEAVE_ERROR_UNSUPPORTED, "FP8 GEMMs on sm_", device.compute_capability, " (device ", device.index, ", ",
         device.name, ") need both operands K-contiguous: A row-major with op_a N or column-major with op_a T, B "
         "column-major with op_b N or row-major with op_b T (PyTorch's x @ w.T of row-major tensors); this GEMM's ",
         shape_.op_left == Op::T ? "B" : "A", " is not (doc/fp8.md)");
  // Only the pairs of scale modes cuBLASLt has kernels for reach it: asked
  // for row-wise x 128x128 scales, cuBLASLt 13.1 aborted the process on
  // sm_90, and it refuses the other mixed pairs (weave-fp8-support's table
  // in doc/fp8.md). All allowed pairs are symmetric, so A's and B's modes
  // name them in either order.
  if (!scale_modes_multiply(left_scale.mode, right_scale.mode, device.compute_capability))
    fail(WEAVE_ERROR_UNSUPPORTED, "cuBLASLt has no FP8 GEMM for ", scale_mode_name(op_.a_scale.mode), " scales on A with ",
         scale_mode_name(op_.b_scale.mode), " scales on B; it multiplies tensor-wise x tensor-wise, row-wise x "
         "row-wise, 1x128 x 1x128 and 1x128 x 128x128 (either way round), ",
         device.compute_capability >= 100 ? "MXFP8 x MXFP8, " : "",
         "and Weave adds tensor-wise x row-wise (doc/fp8.md); device ", device.index, " (", device.name, ") is sm_",
         device.compute_capability);
  int32_t left_mode = cublas_scale_mode(left_scale.mode), right_mode = cublas_scale_mode(right_scale.mode);
  // Tensor-wise against row-wise: cuBLASLt multiplies only matching pairs,
  // so the tensor-wise scale goes out per row of its operand; any other
  // tensor-wise scale gets an aligned float to be copied into (enqueue).
  const ScaleMode modes[2] = {left_scale.mode, right_scale.mode};
  const int64_t outer[2] = {shape_.m, shape_.n};  // rows of cuBLASLt's op(A), columns of its op(B)
  int32_t* cublas_modes[2] = {&left_mode, &right_mode};
  for (int side = 0; side < 2; ++side) {
    // Row-wise scales whose pointer at execute is less than 16-byte aligned
    // (a caller's vector that starts anywhere; schedules read slices in
    // place from 16 bytes on): copied whole into aligned memory first.
    if (modes[side] == ScaleMode::RowWise && outer[side] > 0) {
      StagedScale& staged = staged_[static_cast<std::size_t>(side)];
      staged.copy = true;
      staged.count = outer[side];
      WEAVE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&staged.buffer),
                                  static_cast<std::size_t>(staged.count) * sizeof(float)));
      continue;
    }
    if (modes[side] != ScaleMode::Tensor) continue;
    StagedScale& staged = staged_[static_cast<std::size_t>(side)];
    staged.always = modes[1 - side] == ScaleMode::RowWise;
    staged.count = staged.always ? outer[side] : 1;
    if (staged.always) *cublas_modes[side] = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    WEAVE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&staged.buffer),
                                static_cast<std::size_t>(staged.count) * sizeof(float)));
    prepare_broadcast_scale();
  }
  WEAVE_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &left_mode, sizeof left_mode));
  WEAVE_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &right_mode, sizeof right_mode));
}

void CublasLtGemm::choose_algorithms(const plan::Schedule& schedule, DType in, DType out) {
  const uint64_t left_offset = offset_from_aligned_base(schedule, swapped_ ? op_.b : op_.a);
  const uint64_t right_offset = offset_from_aligned_base(schedule, swapped_ ? op_.a : op_.b);
  const uint64_t out_offset = offset_from_aligned_base(schedule, op_.c);
  // cuBLASLt's C and D take one alignment here: the lesser of c's and the addend's.
  uint32_t out_alignment_bytes = alignment_of(out_offset);
  if (op_.has_addend)
    out_alignment_bytes = std::min(out_alignment_bytes, alignment_of(offset_from_aligned_base(schedule, op_.addend)));
  aligned_ = choose({alignment_of(left_offset), alignment_of(right_offset), out_alignment_bytes}, tune_);
  if (!aligned_.found) return;
  // The fallback for pointers that are less aligned at execute: each
  // element's own size, but 16 bytes for FP8 operands (cuBLASLt's FP8
  // kernels take no less: on H200 an FP8 GEMM found no algorithm for 1-byte
  // alignment, and chunks of FP8 rows start at any multiple of 16 bytes).
  const uint32_t in_size = static_cast<uint32_t>(dtype_size(in)), out_size = static_cast<uint32_t>(dtype_size(out));
  const uint32_t in_alignment = in_size == 1 ? 16u : in_size;
  const uint32_t out_alignment = in_size == 1 ? std::max(out_size, 16u) : out_size;
  const std::array<uint32_t, kOperands> element_alignment{in_alignment, in_alignment, out_alignment};
  element_aligned_ = element_alignment == aligned_.alignment ? aligned_ : choose(element_alignment, false);
}

CublasLtGemm::~CublasLtGemm() { release(); }

void CublasLtGemm::release() noexcept {
  for (StagedScale& staged : staged_) {
    if (staged.buffer) cudaFree(staged.buffer);
    staged = StagedScale{};
  }
  for (cublasLtMatrixLayout_t& layout : layouts_)
    if (layout) {
      cublasLtMatrixLayoutDestroy(layout);
      layout = nullptr;
    }
  if (addend_layout_) {
    cublasLtMatrixLayoutDestroy(addend_layout_);
    addend_layout_ = nullptr;
  }
  if (desc_) {
    cublasLtMatmulDescDestroy(desc_);
    desc_ = nullptr;
  }
}

TuningBuffers CublasLtGemm::tuning_buffers() const {
  auto bytes = [](int64_t rows_or_ld, int64_t cols, DType t) {
    return static_cast<std::size_t>(rows_or_ld) * static_cast<std::size_t>(cols) * dtype_size(t);
  };
  const bool left_n = shape_.op_left == Op::N, right_n = shape_.op_right == Op::N;
  TuningBuffers b;
  b.left = bytes(shape_.ld_left, left_n ? shape_.k : shape_.m, types_[kLeft]);
  b.right = bytes(shape_.ld_right, right_n ? shape_.n : shape_.k, types_[kRight]);
  b.out = bytes(shape_.ld_out, shape_.n, types_[kOut]);
  // Scales: at most one float per 32 elements along K of every row or
  // column, plus a band of 128 (every mode of core/scale_layout.hpp fits).
  const plan::ScaleOperand& left_scale = swapped_ ? op_.b_scale : op_.a_scale;
  const plan::ScaleOperand& right_scale = swapped_ ? op_.a_scale : op_.b_scale;
  const std::size_t per_row = static_cast<std::size_t>(shape_.k / 32 + 2) * sizeof(float);
  if (left_scale.scaled()) b.left_scales = static_cast<std::size_t>(shape_.m + 128) * per_row;
  if (right_scale.scaled()) b.right_scales = static_cast<std::size_t>(shape_.n + 128) * per_row;
  if (bias_) b.bias = static_cast<std::size_t>(shape_.m) * dtype_size(types_[kOut]);
  b.workspace = workspace_bytes_;
  return b;
}

CublasLtGemm::Algorithm CublasLtGemm::choose(const std::array<uint32_t, kOperands>& alignment, bool tune) {
  Preference preference;
  preference.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(workspace_bytes_));
  preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment[kLeft]);
  preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment[kRight]);
  preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment[kOut]);
  preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment[kOut]);
  // Split-K partial sums only in the compute type: the in-place and
  // output-type schemes add them up in C's type, rounding a 16-bit C more
  // than once (seen on H200 as a bf16 result more than half a unit off).
  preference.set(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE));
  std::vector<cublasLtMatmulHeuristicResult_t> results(tune ? kTuningCandidates : 1);
  int found = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      handle_, desc_, layouts_[kLeft], layouts_[kRight], addend_layout_ ? addend_layout_ : layouts_[kOut],
      layouts_[kOut], preference.handle,
      static_cast<int>(results.size()), results.data(), &found);
  Algorithm algorithm;
  algorithm.alignment = alignment;
  // None for this configuration. cuBLASLt answers INVALID_VALUE rather than
  // NOT_SUPPORTED for some scaled FP8 configurations it has no kernel for
  // (seen on H200 with row-wise and 1x128 scales): the caller then reports
  // the configuration as unsupported, naming types, scales and alignments.
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE) return algorithm;
  WEAVE_CUBLAS_CHECK(status);
  algorithm.found = found > 0;
  if (!algorithm.found) return algorithm;
  results.resize(static_cast<std::size_t>(found));
  int chosen = 0;
  if (tune) {
    chosen = choose_by_timing(handle_, desc_, layouts_, results, tuning_buffers(), double_scalars_,
                              str(description_, bias_ ? " bias" : "", " alignments ", alignment[kLeft], " ",
                                  alignment[kRight], " ", alignment[kOut]),
                              &tuning_);
    // Back to what the heuristic queries saw; execute sets the real ones.
    auto reset = [&](cublasLtMatmulDescAttributes_t attribute, const void* pointer) {
      WEAVE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, attribute, &pointer, sizeof pointer));
    };
    if (op_.a_scale.scaled() || op_.b_scale.scaled()) {
      reset(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, placeholder_);
      reset(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, placeholder_);
    }
    if (bias_) reset(CUBLASLT_MATMUL_DESC_BIAS_POINTER, nullptr);
  }
  algorithm.algo = results[static_cast<std::size_t>(chosen)].algo;
  return algorithm;
}

void CublasLtGemm::enqueue(const exec::Bindings& bindings, const exec::Scalars& scalars, void* workspace,
                           cudaStream_t stream) const {
  const exec::MatrixRef a = bindings.resolve(op_.a), b = bindings.resolve(op_.b), c = bindings.resolve(op_.c);
  const kernels::ColumnMajorGemm g = kernels::to_column_major(a, op_.op_a, b, op_.op_b, c);
  if (g.m != shape_.m || g.n != shape_.n || g.k != shape_.k || g.ld_left != shape_.ld_left ||
      g.ld_right != shape_.ld_right || g.ld_out != shape_.ld_out)
    fail(WEAVE_ERROR_INTERNAL, "a GEMM's shape at execute (m=", g.m, " n=", g.n, " k=", g.k,
         ") differs from the one prepared at plan creation (m=", shape_.m, " n=", shape_.n, " k=", shape_.k, ")");
  const exec::MatrixRef addend = op_.has_addend ? bindings.resolve(op_.addend) : exec::MatrixRef{};
  const std::array<uint32_t, kOperands> actual{
      alignment_of(g.left), alignment_of(g.right),
      addend.data ? std::min(alignment_of(g.out), alignment_of(addend.data)) : alignment_of(g.out)};
  // Whether these pointers are as aligned as `a` was chosen for.
  auto fits = [&](const Algorithm& a) {
    for (int i = 0; i < kOperands; ++i)
      if (actual[i] < a.alignment[i]) return false;
    return true;
  };
  const Algorithm& algorithm = fits(aligned_) ? aligned_ : element_aligned_;
  if (!algorithm.found || !fits(algorithm))
    fail(WEAVE_ERROR_UNSUPPORTED, "a GEMM's pointers are aligned to only ", actual[kLeft], ", ", actual[kRight], ", ",
         actual[kOut], " bytes, and cuBLASLt has no algorithm for that (it needs ", aligned_.alignment[kLeft], ", ",
         aligned_.alignment[kRight], ", ", aligned_.alignment[kOut],
         "); pass buffers that start 256-byte aligned, as cudaMalloc returns them");

  // Pointers that may change between executes: set at every enqueue, so a
  // captured graph keeps those of its capture.
  auto set_pointer = [&](cublasLtMatmulDescAttributes_t attribute, const void* pointer) {
    WEAVE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, attribute, &pointer, sizeof pointer));
  };
  const plan::ScaleOperand& left_scale = swapped_ ? op_.b_scale : op_.a_scale;
  const plan::ScaleOperand& right_scale = swapped_ ? op_.a_scale : op_.b_scale;
  const void* left_scales = left_scale.scaled() ? bindings.resolve(left_scale.region).data : nullptr;
  const void* right_scales = right_scale.scaled() ? bindings.resolve(right_scale.region).data : nullptr;
  const void** scales[2] = {&left_scales, &right_scales};
  for (int side = 0; side < 2; ++side) {
    const StagedScale& staged = staged_[static_cast<std::size_t>(side)];
    if (!staged.buffer || !*scales[side] || (!staged.always && alignment_of(*scales[side]) >= 16)) continue;
    if (staged.copy)
      WEAVE_CUDA_CHECK(cudaMemcpyAsync(staged.buffer, *scales[side],
                                       static_cast<std::size_t>(staged.count) * sizeof(float),
                                       cudaMemcpyDeviceToDevice, stream));
    else
      launch_broadcast_scale(staged.buffer, static_cast<const float*>(*scales[side]), staged.count, stream);
    *scales[side] = staged.buffer;
  }
  if (left_scales) set_pointer(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, left_scales);
  if (right_scales) set_pointer(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, right_scales);
  if (bias_) set_pointer(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bindings.resolve(bias_->bias).data);
  // Scalars in the scale type: (real, imaginary) for complex types, of
  // which cuBLASLt reads the first part alone for real ones.
  const exec::ScalarValue a_value = scalars.complex_value(op_.alpha), b_value = scalars.complex_value(op_.beta);
  const double alpha[2] = {a_value.re, a_value.im}, beta[2] = {b_value.re, b_value.im};
  const float alpha_f[2] = {static_cast<float>(a_value.re), static_cast<float>(a_value.im)};
  const float beta_f[2] = {static_cast<float>(b_value.re), static_cast<float>(b_value.im)};
  const void* alpha_ptr = double_scalars_ ? static_cast<const void*>(alpha) : static_cast<const void*>(alpha_f);
  const void* beta_ptr = double_scalars_ ? static_cast<const void*>(beta) : static_cast<const void*>(beta_f);
  if (op_.has_addend) {
    // C = the addend, beta = 1; beta * c enters the addend first.
    if (b_value.re != 0.0 || b_value.im != 0.0) {
      EpilogueLaunch add = launch_between(addend, c);
      add.src_scale = b_value.re;
      add.src_scale_imag = b_value.im;
      add.dst_scale = 1.0;
      launch_epilogue(add, stream);
    }
    const double one[2] = {1.0, 0.0};
    const float one_f[2] = {1.0f, 0.0f};
    const void* one_ptr = double_scalars_ ? static_cast<const void*>(one) : static_cast<const void*>(one_f);
    WEAVE_CUBLAS_CHECK(cublasLtMatmul(handle_, desc_, alpha_ptr, g.left, layouts_[kLeft], g.right, layouts_[kRight],
                                      one_ptr, addend.data, addend_layout_, g.out, layouts_[kOut], &algorithm.algo,
                                      workspace, workspace_bytes_, stream));
    return;
  }
  WEAVE_CUBLAS_CHECK(cublasLtMatmul(handle_, desc_, alpha_ptr, g.left, layouts_[kLeft], g.right, layouts_[kRight],
                                    beta_ptr, g.out, layouts_[kOut], g.out, layouts_[kOut], &algorithm.algo,
                                    workspace, workspace_bytes_, stream));
}

}  // namespace weave::internal::cuda
