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
  // A GEMM is cut into column tiles of roughly this many flops when the
  // executor wants progress calls between tiles.
  double tile_flops = 4.0e7;
  // Tiles this many times larger when no transfer is in flight (the calls
  // between them then only send arrival notices).
  double idle_tile_factor = 64;
  // No tile narrower than this many columns (BLAS slows down on narrower
  // ones: 32-column tiles made GEMMs 2 x slower on a 2-core machine).
  int64_t min_tile_columns = 128;
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

 private:
  void* workspace_ = nullptr;
  HostBackendOptions options_;
};

}  // namespace weave::internal::host
