// Kokkos' CUDA execution space on the CUDA backend's streams. Where Weave is
// built against a Kokkos with its CUDA backend (KOKKOS_ENABLE_CUDA), the
// element-wise steps of device plans run as Kokkos kernels: one
// Kokkos::Cuda instance per plan stream, made with the plan, so execute
// only enqueues (and stays capturable into a CUDA graph). Against a Kokkos
// without CUDA (e.g. Debian's Serial Kokkos 3.4) the steps run as Weave's
// own CUDA kernels (epilogue_launcher.cu) and this class is never made.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "backends/cuda/epilogue_launcher.hpp"

namespace weave::internal::cuda {

class KokkosLanes {
 public:
  // Whether the Kokkos Weave was built against has a CUDA execution space.
  static bool available();

  // Initializes Kokkos if needed (on the current device) and makes one
  // execution-space instance per stream.
  explicit KokkosLanes(const std::vector<cudaStream_t>& streams);
  ~KokkosLanes();
  KokkosLanes(const KokkosLanes&) = delete;
  KokkosLanes& operator=(const KokkosLanes&) = delete;

  // Enqueues the element-wise step on the instance of `stream` (one of the
  // streams given at construction); nothing for an empty dst.
  void launch(const EpilogueLaunch& launch, cudaStream_t stream) const;

 private:
  struct Instances;
  std::unique_ptr<Instances> instances_;
};

}  // namespace weave::internal::cuda
