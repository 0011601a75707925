#include "backends/cuda/kokkos_lanes.hpp"

#include <Kokkos_Core.hpp>

#include "backends/host/kokkos_runtime.hpp"
#include "core/error.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include "backends/cuda/epilogue_dispatch.cuh"
#endif

namespace weave::internal::cuda {

#if defined(KOKKOS_ENABLE_CUDA)

struct KokkosLanes::Instances {
  std::vector<cudaStream_t> streams;
  std::vector<Kokkos::Cuda> spaces;  // spaces[i] runs on streams[i]
};

bool KokkosLanes::available() { return true; }

KokkosLanes::KokkosLanes(const std::vector<cudaStream_t>& streams) : instances_(std::make_unique<Instances>()) {
  host::ensure_kokkos_initialized();
  instances_->streams = streams;
  instances_->spaces.reserve(streams.size());
  for (cudaStream_t stream : streams) instances_->spaces.emplace_back(stream);
}

KokkosLanes::~KokkosLanes() = default;

void KokkosLanes::launch(const EpilogueLaunch& launch, cudaStream_t stream) const {
  if (launch.rows == 0 || launch.cols == 0) return;
  std::size_t lane = 0;
  while (lane < instances_->streams.size() && instances_->streams[lane] != stream) ++lane;
  if (lane == instances_->streams.size()) fail(WEAVE_ERROR_INTERNAL, "element-wise step on a stream the plan does not own");
  const Kokkos::Cuda& space = instances_->spaces[lane];
  using Range = Kokkos::RangePolicy<Kokkos::Cuda, Kokkos::IndexType<int64_t>>;
  const bool known = dispatch_epilogue(
      launch,
      [&](const auto& step) {
        Kokkos::parallel_for("weave::epilogue_vector", Range(space, 0, static_cast<int64_t>(step.total())), step);
      },
      [&](const auto& functor) { Kokkos::parallel_for("weave::epilogue", Range(space, 0, functor.size()), functor); });
  if (!known)
    fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "no element-wise kernel writes ", dtype_name(launch.dst_type), " from ",
         dtype_name(launch.src_type));
}

#else  // a Kokkos without CUDA: Weave's own CUDA kernels run the steps

struct KokkosLanes::Instances {};

bool KokkosLanes::available() { return false; }

KokkosLanes::KokkosLanes(const std::vector<cudaStream_t>&) {
  fail(WEAVE_ERROR_INTERNAL, "Weave was built against a Kokkos without CUDA");
}

KokkosLanes::~KokkosLanes() = default;

void KokkosLanes::launch(const EpilogueLaunch&, cudaStream_t) const {
  fail(WEAVE_ERROR_INTERNAL, "Weave was built against a Kokkos without CUDA");
}

#endif

}  // namespace weave::internal::cuda
