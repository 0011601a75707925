// Built instead of the CUDA backend when WEAVE_ENABLE_CUDA is OFF.
#include "backends/cuda/cuda_entry.hpp"
#include "core/error.hpp"

namespace weave::internal::cuda {

std::unique_ptr<exec::ComputeBackend> make_cuda_backend(const plan::Schedule&, const Problem&,
                                                        const CudaBackendOptions&) {
  fail(WEAVE_ERROR_NOT_COMPILED, "the CUDA backend is not compiled into this Weave; rebuild with -DWEAVE_ENABLE_CUDA=ON");
}

bool is_device_pointer(const void*) { return false; }

bool stream_is_capturing(void*) { return false; }

bool process_uses_cuda() { return false; }

void synchronize(void*) {
  fail(WEAVE_ERROR_NOT_COMPILED, "the CUDA backend is not compiled into this Weave; rebuild with -DWEAVE_ENABLE_CUDA=ON");
}

void fill_device_bytes(void*, int, std::size_t) {
  fail(WEAVE_ERROR_NOT_COMPILED, "the CUDA backend is not compiled into this Weave; rebuild with -DWEAVE_ENABLE_CUDA=ON");
}

std::shared_ptr<void> allocate_device_bytes(std::size_t) {
  fail(WEAVE_ERROR_NOT_COMPILED, "the CUDA backend is not compiled into this Weave; rebuild with -DWEAVE_ENABLE_CUDA=ON");
}

std::size_t free_device_bytes() { return 0; }

}  // namespace weave::internal::cuda
