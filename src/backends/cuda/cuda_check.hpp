// CUDA runtime and cuBLAS calls inside Weave go through WEAVE_CUDA_CHECK and
// WEAVE_CUBLAS_CHECK, so a failure becomes a weave::internal::Error naming the call,
// the device and the library's own error string. DeviceGuard makes the
// plan's device current for the duration of a scope.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <new>

#include "core/error.hpp"

namespace weave::internal::cuda {

[[noreturn]] void fail_cuda(cudaError_t code, const char* call, const char* file, int line);
[[noreturn]] void fail_cublas(cublasStatus_t status, const char* call, const char* file, int line);

// The current device, or -1 when there is none (for messages).
int current_device_or_none();

// Makes `device` current and restores the previous device on scope exit, so
// a plan runs on the device it was created on whatever the caller's current
// device is, and the caller's choice is left as it was.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  // For teardown, which reports nothing: if `device` cannot be made current,
  // the guard does nothing and the work runs on the current device.
  DeviceGuard(int device, std::nothrow_t) noexcept;
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  bool switched_ = false;
};

}  // namespace weave::internal::cuda

#define WEAVE_CUDA_CHECK(call)                                                                        \
  do {                                                                                                \
    cudaError_t weave_cuda_code_ = (call);                                                            \
    if (weave_cuda_code_ != cudaSuccess) ::weave::internal::cuda::fail_cuda(weave_cuda_code_, #call, __FILE__, __LINE__); \
  } while (0)

#define WEAVE_CUBLAS_CHECK(call)                                                                       \
  do {                                                                                                 \
    cublasStatus_t weave_cublas_status_ = (call);                                                      \
    if (weave_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                                 \
      ::weave::internal::cuda::fail_cublas(weave_cublas_status_, #call, __FILE__, __LINE__);                     \
  } while (0)
