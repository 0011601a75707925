// The probes' (weave-remote-output-probe, weave-copy-rate-probe) one way of
// handling a CUDA or cuBLASLt failure: say what failed and exit.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

inline void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
  std::exit(1);
}

inline void check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::fprintf(stderr, "%s: cuBLAS status %d\n", what, static_cast<int>(status));
  std::exit(1);
}
