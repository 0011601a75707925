// The CUDA backend's entry points (cuda_entry.hpp) in a build with CUDA.
#include "backends/cuda/cuda_entry.hpp"

#include <dlfcn.h>

#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cuda_check.hpp"

namespace weave::internal::cuda {

std::unique_ptr<exec::ComputeBackend> make_cuda_backend(const plan::Schedule& schedule, const Problem&,
                                                        const CudaBackendOptions& options) {
  return std::make_unique<CudaBackend>(schedule, options);
}

bool is_device_pointer(const void* pointer) {
  // The caller may be capturing a CUDA graph in global or thread-local mode,
  // where a call CUDA deems potentially unsafe would fail and invalidate the
  // capture. A pointer query touches no stream, so it runs in relaxed mode.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  const bool exchanged = cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
  cudaPointerAttributes attributes{};
  const cudaError_t code = cudaPointerGetAttributes(&attributes, pointer);
  if (exchanged) cudaThreadExchangeStreamCaptureMode(&mode);
  if (code != cudaSuccess) {
    // No usable GPU (or a pointer CUDA has never heard of): not device memory.
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

bool stream_is_capturing(void* stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t code = cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &status);
  // The legacy default stream cannot be asked while another stream captures
  // in global mode; either way, this execute would be part of a capture.
  if (code == cudaErrorStreamCaptureImplicit) {
    cudaGetLastError();
    return true;
  }
  if (code != cudaSuccess) fail_cuda(code, "cudaStreamIsCapturing(stream)", __FILE__, __LINE__);
  return status != cudaStreamCaptureStatusNone;
}

void synchronize(void* stream) {
  WEAVE_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

void fill_device_bytes(void* pointer, int value, std::size_t bytes) {
  WEAVE_CUDA_CHECK(cudaMemset(pointer, value, bytes));
}

std::shared_ptr<void> allocate_device_bytes(std::size_t bytes) {
  void* pointer = nullptr;
  WEAVE_CUDA_CHECK(cudaMalloc(&pointer, bytes));
  return std::shared_ptr<void>(pointer, [](void* p) { cudaFree(p); });
}

std::size_t free_device_bytes() {
  std::size_t free = 0, total = 0;
  WEAVE_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

bool process_uses_cuda() {
  // The driver library is loaded only once something in the process has used
  // CUDA; RTLD_NOLOAD finds it without loading it, and cuCtxGetCurrent then
  // tells whether this thread has a context, without creating one.
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!driver) return false;
  using GetCurrent = int (*)(void**);
  bool active = false;
  if (auto get_current = reinterpret_cast<GetCurrent>(dlsym(driver, "cuCtxGetCurrent"))) {
    void* context = nullptr;
    active = get_current(&context) == 0 && context != nullptr;
  }
  dlclose(driver);
  return active;
}

}  // namespace weave::internal::cuda
