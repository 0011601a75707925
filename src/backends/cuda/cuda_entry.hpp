// Entry points of the CUDA backend. When Weave is built without CUDA,
// cuda_stub.cpp provides them and they report WEAVE_ERROR_NOT_COMPILED.
#pragma once

#include <memory>

#include "core/problem.hpp"
#include "exec/compute_backend.hpp"
#include "plan/schedule.hpp"

namespace weave::internal::cuda {

struct CudaBackendOptions {
  bool allow_tf32 = false;
  bool trace = false;  // timing events around every step
  bool comm_high_priority = true;  // the communication stream at the device's highest priority
  // SMs the GEMMs leave free for what runs beside them (NCCL's kernels,
  // element-wise steps); 0: every SM. The planner sets it for overlapped
  // schedules only.
  int gemm_sm_margin = 0;
  // Time cuBLASLt's candidate algorithms at plan creation (gemm_tuning.hpp).
  bool gemm_tuning = false;
  // FP8 GEMMs with row-wise scales on CUTLASS's kernel where this build has
  // it and it fits (cutlass_fp8_gemm.hpp; WEAVE_FP8_GEMM=cutlass); false:
  // cuBLASLt alone.
  bool cutlass_fp8 = false;
  // That kernel's swizzle (WEAVE_CUTLASS_SWIZZLE); 0: its rule.
  int cutlass_swizzle = 0;
};

std::unique_ptr<exec::ComputeBackend> make_cuda_backend(const plan::Schedule& schedule, const Problem& problem,
                                                        const CudaBackendOptions& options);

// Whether `pointer` is CUDA device (or managed) memory. Always false without CUDA.
bool is_device_pointer(const void* pointer);

// Whether this process already has a CUDA context on the calling thread.
// Host plans check their pointers only then: asking CUDA about a pointer
// would otherwise create a context (and take GPU memory) in every rank of a
// CPU-only program that happens to run on a GPU node.
bool process_uses_cuda();

// Whether `stream` is being captured into a CUDA graph.
bool stream_is_capturing(void* stream);

// Waits until the work enqueued on `stream` (null: the legacy default
// stream) has run (plan creation's calibration times it).
void synchronize(void* stream);

// Sets `bytes` bytes of device memory at `pointer` to `value`, synchronously.
void fill_device_bytes(void* pointer, int value, std::size_t bytes);

// `bytes` of device memory on the current device, freed when the last
// owner lets go (plan creation's trials run on such scratch buffers).
std::shared_ptr<void> allocate_device_bytes(std::size_t bytes);

// The current device's free memory in bytes (cudaMemGetInfo).
std::size_t free_device_bytes();

}  // namespace weave::internal::cuda
