// One element-wise step of a launch, dispatched to the code that runs it:
// on_vector(kernels::VectorEpilogue<Dst, Src>) where the vector step
// applies (kernels/epilogue_vector.hpp), on_scalar(EpilogueFunctor<Dst, Src>)
// otherwise. Shared by Weave's own CUDA kernels (epilogue_launcher.cu) and
// Kokkos' CUDA execution space (kokkos_lanes.cpp). False for a type pair
// without a kernel.
#pragma once

#include "backends/cuda/epilogue_launcher.hpp"
#include "backends/cuda/type_dispatch.cuh"
#include "kernels/epilogue.hpp"
#include "kernels/epilogue_vector.hpp"

namespace weave::internal::cuda {

template <class OnVector, class OnScalar>
bool dispatch_epilogue(const EpilogueLaunch& launch, OnVector&& on_vector, OnScalar&& on_scalar) {
  return visit_epilogue_types(launch.dst_type, launch.src_type, [&](auto pair) {
    using Dst = typename decltype(pair)::dst;
    using Src = typename decltype(pair)::src;
    const kernels::EpilogueFunctor<Dst, Src> functor = make_epilogue_functor<Dst, Src>(launch);
    if (kernels::vector_step_applies(functor))
      on_vector(kernels::VectorEpilogue<Dst, Src>(functor));
    else
      on_scalar(functor);
  });
}

}  // namespace weave::internal::cuda
