// The host compute backend: GEMMs through the Fortran BLAS interface, split
// into column tiles so the executor can keep communication moving between
// them; element-wise kernels on a Kokkos host execution-space instance.
//
// float32 and float64 GEMMs run in BLAS as they are. The types BLAS has no
// arithmetic for (float16, bfloat16, the FP8 types with their scales) are
// emulated: each operand is decoded to float32 with its scales applied
// (kernels/dequantize.hpp), multiplied by sgemm, and a 16-bit C is rounded
// from the float32 result once. It is a correctness path (every FP8 plan
// runs on a machine without a GPU, against the same oracle), not a fast one.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "exec/compute_backend.hpp"

namespace weave::internal::host {

struct HostBackendOptions {
  // A GEMM is cut into tiles (of columns, or of rows where C is taller than
  // wide) of roughly this many flops when the executor wants progress calls
  // between tiles.
  double tile_flops = 4.0e7;
  // ... and at least this many rows or columns wide: BLAS packs the other
  // operand again for every tile, which cost a 1024 x 1024 x 2048 f64 GEMM
  // cut into 32-wide tiles half its time again (4 ranks on 2 cores), and
  // 32-column tiles made GEMMs 2 x slower on a 2-core machine; 128 brought
  // it within noise of the uncut GEMM and left the 1-D operations' host
  // benchmark where it was.
  int64_t min_tile = 128;
  // Tiles this many times larger when no transfer is in flight (the calls
  // between them then only send arrival notices).
  double idle_tile_factor = 64;
};

class HostBackend final : public exec::ComputeBackend {
 public:
  // Allocates the schedule's workspace and the float32 scratch its
  // emulated GEMMs need; `schedule` must outlive the backend.
  HostBackend(const plan::Schedule& schedule, HostBackendOptions options);
  ~HostBackend() override;

  std::string name() const override;
  bool asynchronous() const override { return false; }
  void* workspace() override { return workspace_; }

  void gemm(const plan::GemmOp& op, int lane, const exec::Bindings& bindings, const exec::Scalars& scalars,
            const exec::ProgressHook& progress) override;
  void epilogue(const plan::EpilogueOp& op, int lane, const exec::Bindings& bindings,
                const exec::Scalars& scalars) override;
  void quantize(const plan::QuantizeOp& op, int lane, const exec::Bindings& bindings) override;

  // Whether a GEMM step of these types runs in BLAS as it is (else emulated).
  static bool native(const plan::Schedule& schedule, const plan::GemmOp& op);
  void rearrange(const plan::RearrangeOp& op, int lane, const exec::Bindings& bindings) override;

 private:
  void emulated_gemm(const plan::GemmOp& op, const exec::Bindings& bindings, const exec::Scalars& scalars,
                     const exec::ProgressHook& progress);

  void* workspace_ = nullptr;
  float* scratch_ = nullptr;  // emulated GEMMs: decoded A, decoded B, float32 C
  bool emulates_ = false;
  HostBackendOptions options_;
};

}  // namespace weave::internal::host
