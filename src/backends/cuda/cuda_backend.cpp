#include "backends/cuda/cuda_backend.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include "backends/cuda/cuda_check.hpp"
#include "backends/cuda/epilogue_launcher.hpp"
#include "backends/cuda/kokkos_lanes.hpp"
#include "backends/cuda/quantize_launcher.hpp"
#include "kernels/copy_geometry.hpp"
#include "kernels/rearrange.hpp"
#include "core/error.hpp"

namespace weave::internal::cuda {

namespace {

// cuBLASLt's scratch space per lane: what NVIDIA recommends for Hopper, and
// more than enough for the kernels earlier GPUs pick.
constexpr std::size_t kCublasWorkspaceBytes = std::size_t(32) << 20;

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

}  // namespace

CudaBackend::CudaBackend(const plan::Schedule& schedule, const CudaBackendOptions& options)
    : schedule_(schedule), options_(options) {
  // The device current now (the caller's choice) is the plan's device.
  WEAVE_CUDA_CHECK(cudaGetDevice(&device_));
  try {
    cudaDeviceProp properties{};
    WEAVE_CUDA_CHECK(cudaGetDeviceProperties(&properties, device_));
    device_name_ = properties.name;
    device_sms_ = properties.multiProcessorCount;
    gemm_device_.index = device_;
    gemm_device_.compute_capability = properties.major * 10 + properties.minor;
    gemm_device_.name = device_name_.c_str();
    if (options_.gemm_sm_margin > 0) gemm_sms_ = std::max(1, device_sms_ - options_.gemm_sm_margin);
    create_streams_and_events();
    if (KokkosLanes::available()) kokkos_lanes_ = std::make_unique<KokkosLanes>(streams_);
    if (schedule_.workspace_bytes > 0)
      WEAVE_CUDA_CHECK(cudaMalloc(&workspace_, static_cast<std::size_t>(schedule_.workspace_bytes)));
    WEAVE_CUBLAS_CHECK(cublasLtCreate(&cublas_));
    prepare_steps();
  } catch (...) {
    release();
    throw;
  }
}

CudaBackend::~CudaBackend() { release(); }

void CudaBackend::create_streams_and_events() {
  // Larger numbers are lower priorities; communication gets the greatest
  // unless asked otherwise (WEAVE_COMM_PRIORITY=normal), and so does a
  // compute lane that runs no GEMM: its kernels are short copies that feed
  // transfers (WEAVE_GEMM's placement of the panels each band sends), which
  // should not queue behind GEMM blocks not yet started. (A GEMM already
  // running on every SM is not preempted: in a trace of WEAVE_GEMM 16384^3
  // on 2 H200s a placement launched beside a running GEMM still waited for
  // its end, doc/performance.md; not measured apart from that.)
  int least = 0, greatest = 0;
  WEAVE_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  if (!options_.comm_high_priority) greatest = least;
  const std::size_t lanes = static_cast<std::size_t>(schedule_.compute_lanes);
  const std::vector<bool> multiplies = schedule_.lanes_that_multiply();
  streams_.assign(lanes + 1, nullptr);
  for (std::size_t lane = 0; lane <= lanes; ++lane)
    WEAVE_CUDA_CHECK(cudaStreamCreateWithPriority(&streams_[lane], cudaStreamNonBlocking,
                                                  lane == lanes || !multiplies[lane] ? greatest : least));

  step_events_.assign(schedule_.steps.size(), nullptr);
  for (cudaEvent_t& e : step_events_) WEAVE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  WEAVE_CUDA_CHECK(cudaEventCreateWithFlags(&fork_event_, cudaEventDisableTiming));
  join_events_.assign(streams_.size(), nullptr);
  for (cudaEvent_t& e : join_events_) WEAVE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  if (options_.trace) {
    timing_events_.assign(2 * schedule_.steps.size(), nullptr);
    for (cudaEvent_t& e : timing_events_) WEAVE_CUDA_CHECK(cudaEventCreate(&e));
    WEAVE_CUDA_CHECK(cudaEventCreate(&timing_origin_));
  }
}

// Prepares every compute step, so execute finds each GEMM's cuBLASLt plan
// and each element-wise kernel already loaded, and so an unsupported type
// combination is reported at plan creation.
void CudaBackend::prepare_steps() {
  std::set<std::pair<DType, DType>> kernels;
  std::set<std::size_t> copy_sizes;
  const std::size_t lanes = streams_.size() - 1;
  std::vector<bool> lane_multiplies(lanes, false);
  std::vector<std::pair<const plan::GemmOp*, const plan::EpilogueOp*>> matmul_steps;  // with a bias to fuse
  for (std::size_t i = 0; i < schedule_.steps.size(); ++i) {
    const plan::Step& step = schedule_.steps[i];
    if (step.kind() == plan::StepKind::Gemm) {
      const auto& op = std::get<plan::GemmOp>(step.op);
      const GemmWork work = gemm_work(op);
      prepared_[&op].work = work;
      // K == 0, or beta * C entering an addend: the element-wise kernel.
      if (work == GemmWork::ScaleOnly || (work == GemmWork::Matmul && op.has_addend)) {
        const DType c = schedule_.buffer(op.c).dtype;
        kernels.insert({c, c});
      }
      if (work == GemmWork::Matmul) {
        matmul_steps.emplace_back(&op, bias_step_after(i));
        lane_multiplies.at(static_cast<std::size_t>(step.lane)) = true;
      }
    } else if (step.kind() == plan::StepKind::Quantize) {
      const auto& op = std::get<plan::QuantizeOp>(step.op);
      prepare_quantize(schedule_.buffer(op.dst).dtype, schedule_.buffer(op.src).dtype);
    } else if (step.kind() == plan::StepKind::Epilogue) {
      const auto& op = std::get<plan::EpilogueOp>(step.op);
      const DType dst = schedule_.buffer(op.dst).dtype;
      const DType src = op.has_src ? schedule_.buffer(op.src).dtype : dst;
      if (op.plain_copy() && src == dst) {
        copy_sizes.insert(dtype_size(dst));
        continue;
      }
      if (!epilogue_supported(dst, src))
        fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "step '", step.label, "' converts ", dtype_name(src), " to ",
             dtype_name(dst), ", which the CUDA backend has no kernel for");
      kernels.insert({dst, src});
    } else if (step.kind() == plan::StepKind::Rearrange) {
      const DType t = schedule_.buffer(std::get<plan::RearrangeOp>(step.op).dst).dtype;
      copy_sizes.insert(dtype_size(t));  // the rectangles that keep their order (rearrange)
      if (!epilogue_supported(t, t))
        fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "step '", step.label, "' copies ", dtype_name(t),
             ", which the CUDA backend has no kernel for");
      kernels.insert({t, t});
    }
  }
  for (const auto& [dst, src] : kernels) prepare_epilogue(dst, src);
  for (std::size_t bytes : copy_sizes) prepare_copy(bytes);

  cublas_workspaces_.assign(lanes, nullptr);
  for (std::size_t lane = 0; lane < lane_multiplies.size(); ++lane)
    if (lane_multiplies[lane]) WEAVE_CUDA_CHECK(cudaMalloc(&cublas_workspaces_[lane], kCublasWorkspaceBytes));
  // A cuBLAS workspace stands in for the scales' address while cuBLASLt
  // picks each scaled GEMM's algorithm (cublaslt_gemm.hpp).
  const void* placeholder = nullptr;
  for (void* w : cublas_workspaces_)
    if (w && !placeholder) placeholder = w;
  for (const auto& [op, bias] : matmul_steps) {
    prepared_[op].matmul = std::make_unique<CublasLtGemm>(cublas_, schedule_, *op, options_.allow_tf32,
                                                          kCublasWorkspaceBytes, gemm_device_, gemm_sms_, bias,
                                                          placeholder, options_.gemm_tuning);
    if (prepared_[op].matmul->fused_bias()) fused_bias_steps_.insert(bias);
    const TuningOutcome& tuned = prepared_[op].matmul->tuning();
    if (options_.gemm_tuning) {
      candidates_min_ = candidates_min_ < 0 ? tuned.candidates : std::min(candidates_min_, tuned.candidates);
      candidates_max_ = std::max(candidates_max_, tuned.candidates);
      if (!tuned.why_not.empty()) tuning_why_not_ = tuned.why_not;
    }
    if (tuned.timed || tuned.remembered) {
      ++tuned_gemms_;
      if (tuned.chosen != 0) ++retuned_gemms_;
      if (tuned.timed && tuned.chosen != 0 && tuned.first_ms > 0)
        tuning_gain_ = std::max(tuning_gain_, 1 - tuned.chosen_ms / tuned.first_ms);
    }
    if (prepared_[op].matmul->broadcasts_scale()) ++broadcast_scale_gemms_;
    if (options_.cutlass_fp8 && op->a_scale.mode == ScaleMode::RowWise && op->b_scale.mode == ScaleMode::RowWise) {
      std::string why_not;
      prepared_[op].cutlass = CutlassFp8Gemm::prepare(schedule_, *op, gemm_device_, gemm_sms_, options_.cutlass_swizzle,
                                                      prepared_[op].matmul->fused_bias(), &why_not);
      if (prepared_[op].cutlass) {
        const int swizzle = prepared_[op].cutlass->swizzle();
        cutlass_swizzle_min_ = cutlass_gemms_ == 0 ? swizzle : std::min(cutlass_swizzle_min_, swizzle);
        cutlass_swizzle_max_ = std::max(cutlass_swizzle_max_, swizzle);
        ++cutlass_gemms_;
      } else {
        ++rowwise_fp8_on_cublaslt_;
        cutlass_why_not_ = why_not;
      }
    }
  }
}

// The step that adds the bias to what GEMM step `gemm` wrote, right after
// it on its lane and depending on it alone (C += bias), or null.
const plan::EpilogueOp* CudaBackend::bias_step_after(std::size_t gemm) const {
  const plan::Step& g = schedule_.steps[gemm];
  const auto& product = std::get<plan::GemmOp>(g.op);
  for (std::size_t j = gemm + 1; j < schedule_.steps.size(); ++j) {
    const plan::Step& s = schedule_.steps[j];
    if (s.lane != g.lane) continue;
    const auto* e = std::get_if<plan::EpilogueOp>(&s.op);
    const plan::Region& c = product.c;
    if (!e || e->has_src || !e->has_bias || e->dst_scale != plan::Scalar::One || s.deps != std::vector<int>{static_cast<int>(gemm)} ||
        e->dst.buffer != c.buffer || e->dst.row0 != c.row0 || e->dst.col0 != c.col0 || e->dst.rows != c.rows ||
        e->dst.cols != c.cols)
      return nullptr;
    return e;  // the next step on the lane is the bias step, or there is none to fuse
  }
  return nullptr;
}

void CudaBackend::release() noexcept {
  if (device_ < 0) return;
  const DeviceGuard guard(device_, std::nothrow);
  // Work of an execute may still be running: let it finish before its
  // memory goes (stream destruction alone would not wait).
  for (cudaStream_t s : streams_)
    if (s) cudaStreamSynchronize(s);
  kokkos_lanes_.reset();
  prepared_.clear();
  if (cublas_) cublasLtDestroy(cublas_);
  cublas_ = nullptr;
  for (void*& w : cublas_workspaces_)
    if (w) cudaFree(w);
  cublas_workspaces_.clear();
  if (workspace_) cudaFree(workspace_);
  workspace_ = nullptr;
  for (cudaEvent_t e : step_events_)
    if (e) cudaEventDestroy(e);
  step_events_.clear();
  for (cudaEvent_t e : join_events_)
    if (e) cudaEventDestroy(e);
  join_events_.clear();
  if (fork_event_) cudaEventDestroy(fork_event_);
  fork_event_ = nullptr;
  for (cudaEvent_t e : timing_events_)
    if (e) cudaEventDestroy(e);
  timing_events_.clear();
  if (timing_origin_) cudaEventDestroy(timing_origin_);
  timing_origin_ = nullptr;
  for (cudaStream_t s : streams_)
    if (s) cudaStreamDestroy(s);
  streams_.clear();
  cudaGetLastError();  // errors while tearing down are not the caller's next call's
}

std::string CudaBackend::name() const {
  return str("cuda (device ", device_, " ", device_name_, ", cuBLASLt", options_.allow_tf32 ? ", TF32 allowed" : "",
             gemm_sms_ > 0 ? str(", GEMMs sized for ", gemm_sms_, " of ", device_sms_, " SMs") : std::string(),
             kokkos_lanes_ ? ", element-wise steps on Kokkos::Cuda" : "",
             fused_bias_steps_.empty() ? std::string()
                                       : str(", ", fused_bias_steps_.size(), " GEMMs add the bias in their epilogue"),
             broadcast_scale_gemms_ == 0
                 ? std::string()
                 : str(", ", broadcast_scale_gemms_, " GEMMs write a tensor-wise scale out per row (cuBLASLt has no "
                       "tensor-wise x row-wise kernel)"),
             cutlass_gemms_ == 0 ? std::string()
                                 : str(", ", cutlass_gemms_, " row-wise scaled FP8 GEMMs on CUTLASS's kernel (alpha 1 "
                                       "and 16-byte aligned pointers at execute, else cuBLASLt; swizzle ",
                                       cutlass_swizzle_min_ == cutlass_swizzle_max_
                                           ? std::to_string(cutlass_swizzle_max_)
                                           : str(cutlass_swizzle_min_, "-", cutlass_swizzle_max_),
                                       options_.cutlass_swizzle > 0 ? ", asked for" : ", 8 where M and N >= 4096",
                                       ")"),
             rowwise_fp8_on_cublaslt_ == 0
                 ? std::string()
                 : str(", ", rowwise_fp8_on_cublaslt_, " row-wise scaled FP8 GEMMs on cuBLASLt (", cutlass_why_not_,
                       ")"),
             !options_.gemm_tuning
                 ? std::string()
                 : str(", GEMM tuning: ", tuned_gemms_, " GEMMs tuned by timing, ", retuned_gemms_,
                       " took another than the heuristic's first algorithm",
                       tuning_gain_ > 0 ? str(" (up to ", static_cast<int>(tuning_gain_ * 100 + 0.5), "% faster)")
                                        : std::string(),
                       ", ", candidates_min_ < 0 ? 0 : candidates_min_, "-", candidates_max_,
                       " candidates from the heuristic",
                       tuning_why_not_.empty() ? std::string() : str(", not timed where: ", tuning_why_not_)),
             ")");
}

cudaStream_t CudaBackend::stream(int lane) const {
  const std::size_t lanes = streams_.size() - 1;
  if (lane == plan::kCommLane) return streams_[lanes];
  if (lane < 0 || static_cast<std::size_t>(lane) >= lanes)
    fail(WEAVE_ERROR_INTERNAL, "lane ", lane, " is not a lane of this plan (", lanes, " compute lanes)");
  return streams_[static_cast<std::size_t>(lane)];
}

void CudaBackend::begin(void* caller_stream) {
  DeviceGuard guard(device_);
  // Every lane starts after the work already on the caller's stream.
  WEAVE_CUDA_CHECK(cudaEventRecord(fork_event_, as_stream(caller_stream)));
  if (timing_origin_) WEAVE_CUDA_CHECK(cudaEventRecord(timing_origin_, as_stream(caller_stream)));
  for (cudaStream_t s : streams_) WEAVE_CUDA_CHECK(cudaStreamWaitEvent(s, fork_event_, 0));
}

void CudaBackend::end(void* caller_stream) {
  DeviceGuard guard(device_);
  // The caller's stream continues after every lane, which also rejoins all
  // lanes to the caller's stream when it is being captured into a graph.
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    WEAVE_CUDA_CHECK(cudaEventRecord(join_events_[i], streams_[i]));
    WEAVE_CUDA_CHECK(cudaStreamWaitEvent(as_stream(caller_stream), join_events_[i], 0));
  }
}

void CudaBackend::gemm(const plan::GemmOp& op, int lane, const exec::Bindings& bindings,
                       const exec::Scalars& scalars, const exec::ProgressHook&) {
  DeviceGuard guard(device_);
  const auto prepared = prepared_.find(&op);
  if (prepared == prepared_.end()) fail(WEAVE_ERROR_INTERNAL, "a GEMM step was not prepared at plan creation");
  switch (prepared->second.work) {
    case GemmWork::None:
      return;  // nothing to enqueue; the executor's events still order the lane
    case GemmWork::ScaleOnly: {
      // K == 0: the product is zero and C = beta * C [+ addend] (C not read
      // when beta == 0).
      plan::EpilogueOp scale;
      scale.dst = op.c;
      scale.dst_scale = op.beta;
      scale.has_src = op.has_addend;
      scale.src = op.addend;
      epilogue(scale, lane, bindings, scalars);
      return;
    }
    case GemmWork::Matmul:
      if (prepared->second.cutlass && prepared->second.cutlass->enqueue(bindings, scalars, stream(lane))) return;
      prepared->second.matmul->enqueue(bindings, scalars, cublas_workspaces_.at(static_cast<std::size_t>(lane)),
                                       stream(lane));
      return;
  }
}

void CudaBackend::epilogue(const plan::EpilogueOp& op, int lane, const exec::Bindings& bindings,
                           const exec::Scalars& scalars) {
  DeviceGuard guard(device_);
  if (fused_bias_steps_.count(&op)) return;  // its GEMM added the bias
  const exec::MatrixRef dst = bindings.resolve(op.dst);
  if (dst.rows == 0 || dst.cols == 0) return;
  if (op.plain_copy()) {
    const exec::MatrixRef src = bindings.resolve(op.src);
    if (src.dtype == dst.dtype) {
      launch_copy(kernels::copy_geometry(dst, src), stream(lane));
      return;
    }
  }
  EpilogueLaunch launch;
  set_destination(launch, dst);
  if (op.has_src) {
    const exec::MatrixRef src = bindings.resolve(op.src);
    set_source(launch, src);
    if (op.more_src.size() > static_cast<std::size_t>(kernels::kMaxMoreSources))
      fail(WEAVE_ERROR_INTERNAL, "element-wise step with ", op.more_src.size() + 1, " sources; the kernel sums at most ",
           kernels::kMaxMoreSources + 1);
    for (const plan::Region& r : op.more_src) launch.more[launch.more_count++] = bindings.resolve(r).data;
  }
  if (op.has_bias) {
    const exec::MatrixRef bias = bindings.resolve(op.bias);
    launch.bias = bias.data;
    launch.bias_stride = bias.column_stride();
  }
  const exec::ScalarValue src_scale = scalars.complex_value(op.src_scale), dst_scale = scalars.complex_value(op.dst_scale);
  launch.src_scale = src_scale.re;
  launch.src_scale_imag = src_scale.im;
  launch.dst_scale = dst_scale.re;
  launch.dst_scale_imag = dst_scale.im;
  launch.conjugate_src = op.conjugate_src;
  if (kokkos_lanes_)
    kokkos_lanes_->launch(launch, stream(lane));
  else
    launch_epilogue(launch, stream(lane));
}

void CudaBackend::quantize(const plan::QuantizeOp& op, int lane, const exec::Bindings& bindings) {
  DeviceGuard guard(device_);
  const exec::MatrixRef src = bindings.resolve(op.src), dst = bindings.resolve(op.dst);
  QuantizeLaunch launch;
  launch.src_type = src.dtype;
  launch.dst_type = dst.dtype;
  launch.src = src.data;
  launch.src_ld = src.ld;
  launch.src_row_major = src.order == Order::RowMajor;
  launch.dst = dst.data;
  launch.dst_ld = dst.ld;
  launch.dst_row_major = dst.order == Order::RowMajor;
  launch.transposed = op.op == Op::T;
  if (op.has_scales) launch.scales = static_cast<float*>(bindings.resolve(op.scales).data);
  launch.max_finite = static_cast<float>(dtype_row(dst.dtype).max_finite);
  launch.rows = op.op == Op::N ? src.rows : src.cols;
  launch.cols = op.op == Op::N ? src.cols : src.rows;
  launch_quantize(launch, stream(lane));
}

// One launch per rectangle: rearrangements move operands between layouts
// once per execute, in as few rectangles as the layouts allow. A rectangle
// that keeps its storage order and is not conjugated is a plain copy, in
// the widest words its layout allows (as the host backend does); the others
// go through the element-wise kernel.
void CudaBackend::rearrange(const plan::RearrangeOp& op, int lane, const exec::Bindings& bindings) {
  DeviceGuard guard(device_);
  const bool conjugate = op.src_op == Op::C;
  kernels::for_each_rectangle(op, bindings, [&](const exec::MatrixRef& dst, const exec::MatrixRef& src) {
    if (!conjugate && src.order == dst.order && src.dtype == dst.dtype) {
      launch_copy(kernels::copy_geometry(dst, src), stream(lane));
      return;
    }
    EpilogueLaunch launch = launch_between(dst, src);
    launch.conjugate_src = op.src_op == Op::C;
    if (kokkos_lanes_)
      kokkos_lanes_->launch(launch, stream(lane));
    else
      launch_epilogue(launch, stream(lane));
  });
}

void CudaBackend::record(int event, int lane) { record_on_stream(event, stream(lane)); }

void CudaBackend::record_on_stream(int event, void* stream) {
  DeviceGuard guard(device_);
  WEAVE_CUDA_CHECK(cudaEventRecord(step_events_.at(static_cast<std::size_t>(event)), as_stream(stream)));
}

void CudaBackend::wait(int lane, int event) {
  DeviceGuard guard(device_);
  WEAVE_CUDA_CHECK(cudaStreamWaitEvent(stream(lane), step_events_.at(static_cast<std::size_t>(event)), 0));
}

bool CudaBackend::query(int event) {
  DeviceGuard guard(device_);
  const cudaError_t status = cudaEventQuery(step_events_.at(static_cast<std::size_t>(event)));
  if (status == cudaSuccess) return true;
  if (status == cudaErrorNotReady) return false;
  fail_cuda(status, "cudaEventQuery(step event)", __FILE__, __LINE__);
}

void* CudaBackend::lane_stream(int lane) { return stream(lane); }

void CudaBackend::mark_timing(int step, int lane, bool end) { mark_timing_on_stream(step, stream(lane), end); }

void CudaBackend::mark_timing_on_stream(int step, void* stream, bool end) {
  if (timing_events_.empty()) return;
  DeviceGuard guard(device_);
  WEAVE_CUDA_CHECK(
      cudaEventRecord(timing_events_.at(2 * static_cast<std::size_t>(step) + (end ? 1 : 0)), as_stream(stream)));
}

void CudaBackend::collect_timings(exec::Trace& trace, const plan::Schedule& schedule) {
  if (timing_events_.empty()) return;
  DeviceGuard guard(device_);
  WEAVE_CUDA_CHECK(cudaEventSynchronize(timing_origin_));
  for (std::size_t i = 0; i < schedule.steps.size(); ++i) {
    float start = 0, end = 0;
    // Steps of a communication batch share the first step's events, except
    // those that complete on a transport's own stream (events of their own).
    // Waits for the step (an event never recorded is complete at once).
    if (cudaEventSynchronize(timing_events_[2 * i + 1]) != cudaSuccess ||
        cudaEventElapsedTime(&start, timing_origin_, timing_events_[2 * i]) != cudaSuccess ||
        cudaEventElapsedTime(&end, timing_origin_, timing_events_[2 * i + 1]) != cudaSuccess) {
      cudaGetLastError();  // not recorded in the last execute
      continue;
    }
    const plan::Step& s = schedule.steps[i];
    const std::string track = s.is_comm() ? "communication stream" : str("compute stream ", s.lane);
    trace.add(static_cast<int>(i), track, s.label, start * 1000.0, end * 1000.0);
  }
}

}  // namespace weave::internal::cuda
