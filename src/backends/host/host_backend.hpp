// The host compute backend: GEMMs through the Fortran BLAS interface, split
// into column tiles so the executor can keep communication moving between
// them; element-wise kernels on a Kokkos host execution-space instance.
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
  // cut into 32-wide tiles half its time again (4 ranks on 2 cores); 128
  // brought it within noise of the uncut GEMM and left the 1-D operations'
  // host benchmark where it was.
  int64_t min_tile = 128;
};

class HostBackend final : public exec::ComputeBackend {
 public:
  HostBackend(std::size_t workspace_bytes, HostBackendOptions options);
  ~HostBackend() override;

  std::string name() const override;
  bool asynchronous() const override { return false; }
  void* workspace() override { return workspace_; }

  void gemm(const plan::GemmOp& op, int lane, const exec::Bindings& bindings, const exec::Scalars& scalars,
            const exec::ProgressHook& progress) override;
  void epilogue(const plan::EpilogueOp& op, int lane, const exec::Bindings& bindings,
                const exec::Scalars& scalars) override;
  void rearrange(const plan::RearrangeOp& op, int lane, const exec::Bindings& bindings) override;

 private:
  void* workspace_ = nullptr;
  HostBackendOptions options_;
};

}  // namespace weave::internal::host
