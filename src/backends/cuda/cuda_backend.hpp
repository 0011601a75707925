// The CUDA compute backend: the plan's lanes are CUDA streams of the device
// that was current when the plan was created. Everything execute needs is
// made at plan creation: one non-blocking stream per compute lane and one for
// communication (at the highest priority, so transfers are not queued behind
// GEMMs), an event per schedule step plus fork/join events, the workspace, a
// cuBLASLt workspace per lane that multiplies, and every GEMM prepared for
// cuBLASLt. Execute only enqueues; it never synchronizes the host.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cuda/cublaslt_gemm.hpp"
#include "backends/cuda/cuda_entry.hpp"
#include "backends/cuda/cutlass_fp8_gemm.hpp"
#include "backends/cuda/kokkos_lanes.hpp"
#include "exec/compute_backend.hpp"

namespace weave::internal::cuda {

class CudaBackend final : public exec::ComputeBackend {
 public:
  // `schedule` must outlive the backend (the plan owns both).
  CudaBackend(const plan::Schedule& schedule, const CudaBackendOptions& options);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string name() const override;
  bool asynchronous() const override { return true; }
  void* workspace() override { return workspace_; }

  void begin(void* caller_stream) override;
  void end(void* caller_stream) override;
  void gemm(const plan::GemmOp& op, int lane, const exec::Bindings& bindings, const exec::Scalars& scalars,
            const exec::ProgressHook& progress) override;
  void epilogue(const plan::EpilogueOp& op, int lane, const exec::Bindings& bindings,
                const exec::Scalars& scalars) override;
  void quantize(const plan::QuantizeOp& op, int lane, const exec::Bindings& bindings) override;
  void rearrange(const plan::RearrangeOp& op, int lane, const exec::Bindings& bindings) override;
  void record(int event, int lane) override;
  void record_on_stream(int event, void* stream) override;
  void wait(int lane, int event) override;
  bool query(int event) override;
  void* lane_stream(int lane) override;
  void mark_timing(int step, int lane, bool end) override;
  void mark_timing_on_stream(int step, void* stream, bool end) override;
  void collect_timings(exec::Trace& trace, const plan::Schedule& schedule) override;

 private:
  void create_streams_and_events();
  void prepare_steps();
  const plan::EpilogueOp* bias_step_after(std::size_t gemm) const;
  cudaStream_t stream(int lane) const;
  void release() noexcept;

  const plan::Schedule& schedule_;
  CudaBackendOptions options_;
  int device_ = -1;
  std::string device_name_;
  int device_sms_ = 0;
  int gemm_sms_ = 0;  // SMs the GEMMs are sized for; 0: all (no margin)
  // GEMM tuning (options_.gemm_tuning), for name(): GEMMs tuned, those that
  // took another algorithm than the heuristic's first, and the largest
  // gain measured against it.
  int tuned_gemms_ = 0, retuned_gemms_ = 0;
  double tuning_gain_ = 0;
  int candidates_min_ = -1, candidates_max_ = 0;  // heuristic answers per tuned GEMM
  std::string tuning_why_not_;                    // why a GEMM was not timed (the last reason)
  // Compute lanes 0..n-1, then the communication lane: all of them start
  // after the caller's stream (fork) and the caller's stream after them (join).
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> step_events_;
  cudaEvent_t fork_event_ = nullptr;
  std::vector<cudaEvent_t> join_events_;  // one per stream
  // Tracing only: timing events before and after every step, and the fork.
  std::vector<cudaEvent_t> timing_events_;
  cudaEvent_t timing_origin_ = nullptr;
  void* workspace_ = nullptr;
  cublasLtHandle_t cublas_ = nullptr;
  std::vector<void*> cublas_workspaces_;  // per compute lane; null where the lane never multiplies
  // GEMM steps by the address of their op in the schedule (what gemm() is
  // handed): what each needs, and its cuBLASLt plan where it multiplies.
  struct PreparedGemm {
    GemmWork work = GemmWork::None;
    std::unique_ptr<CublasLtGemm> matmul;
    // CUTLASS's row-wise scaled FP8 kernel, tried first where it fits
    // (cutlass_fp8_gemm.hpp); matmul runs where it does not.
    std::unique_ptr<CutlassFp8Gemm> cutlass;
  };
  std::unordered_map<const plan::GemmOp*, PreparedGemm> prepared_;
  // Kokkos::Cuda instances on streams_ where Kokkos has CUDA: the
  // element-wise steps run there; null: Weave's own CUDA kernels run them.
  std::unique_ptr<KokkosLanes> kokkos_lanes_;
  // Bias steps whose GEMM adds the bias in its epilogue: nothing to enqueue.
  std::set<const plan::EpilogueOp*> fused_bias_steps_;
  int broadcast_scale_gemms_ = 0;  // GEMMs whose tensor-wise scale goes out per row (describe)
  // Row-wise scaled FP8 GEMMs prepared for CUTLASS's kernel, those left to
  // cuBLASLt and why the last of them was (describe).
  int cutlass_gemms_ = 0, rowwise_fp8_on_cublaslt_ = 0;
  int cutlass_swizzle_min_ = 0, cutlass_swizzle_max_ = 0;  // over the GEMMs on CUTLASS's kernel
  std::string cutlass_why_not_;
  GemmDevice gemm_device_;
};

}  // namespace weave::internal::cuda
