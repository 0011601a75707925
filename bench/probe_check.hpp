// The probes' (weave-remote-output-probe, weave-copy-rate-probe) one way of
// handling a CUDA or cuBLASLt failure: say what failed and exit; and the
// cuBLASLt preference both take.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
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

// A cuBLASLt preference allowing `workspace_bytes` of workspace.
inline cublasLtMatmulPreference_t preference_with_workspace(std::size_t workspace_bytes) {
  cublasLtMatmulPreference_t preference = nullptr;
  check(cublasLtMatmulPreferenceCreate(&preference), "preference");
  check(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                             sizeof(workspace_bytes)),
        "preference");
  return preference;
}
