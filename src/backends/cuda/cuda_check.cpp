#include "backends/cuda/cuda_check.hpp"

#include <string>

namespace weave::internal::cuda {

namespace {

std::string device_text() {
  const int device = current_device_or_none();
  return device >= 0 ? str("device ", device) : std::string("no usable device");
}

}  // namespace

int current_device_or_none() {
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();  // leave no error behind for the caller's next CUDA call
    return -1;
  }
  return device;
}

void fail_cuda(cudaError_t code, const char* call, const char* file, int line) {
  // Clear the (non-sticky) error so it does not resurface in an unrelated call.
  cudaGetLastError();
  const weave_status_t status = code == cudaErrorMemoryAllocation ? WEAVE_ERROR_OUT_OF_MEMORY : WEAVE_ERROR_CUDA;
  fail(status, call, " failed on ", device_text(), ": ", cudaGetErrorString(code), " (", cudaGetErrorName(code),
       ", ", file, ":", line, ")");
}

void fail_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  const weave_status_t weave_status = status == CUBLAS_STATUS_ALLOC_FAILED ? WEAVE_ERROR_OUT_OF_MEMORY
                                                                           : WEAVE_ERROR_CUBLAS;
  fail(weave_status, call, " failed on ", device_text(), ": ", cublasLtGetStatusString(status), " (",
       cublasLtGetStatusName(status), ", ", file, ":", line, ")");
}

DeviceGuard::DeviceGuard(int device) {
  WEAVE_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) {
    WEAVE_CUDA_CHECK(cudaSetDevice(device));
    switched_ = true;
  }
}

DeviceGuard::DeviceGuard(int device, std::nothrow_t) noexcept {
  switched_ = cudaGetDevice(&previous_) == cudaSuccess && previous_ != device && cudaSetDevice(device) == cudaSuccess;
}

DeviceGuard::~DeviceGuard() {
  if (switched_) cudaSetDevice(previous_);  // a destructor reports nothing; the device was valid before
}

}  // namespace weave::internal::cuda
