// WEAVE_FUNCTION marks code callable on the host and on a GPU: Kokkos's own
// qualifier when Kokkos is in scope (so the functors run on any Kokkos
// execution space), __host__ __device__ under nvcc without Kokkos, plain
// inline otherwise.
#pragma once

#if defined(KOKKOS_INLINE_FUNCTION)
#define WEAVE_FUNCTION KOKKOS_INLINE_FUNCTION
#elif defined(__CUDACC__)
#define WEAVE_FUNCTION __host__ __device__ inline
#else
#define WEAVE_FUNCTION inline
#endif

// Unrolls the next loop in device code; nothing for the host compiler, which
// also compiles WEAVE_FUNCTIONs and does not know the pragma.
#if defined(__CUDA_ARCH__)
#define WEAVE_UNROLL _Pragma("unroll")
#else
#define WEAVE_UNROLL
#endif
