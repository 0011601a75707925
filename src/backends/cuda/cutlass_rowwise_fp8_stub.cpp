// Built instead of cutlass_rowwise_fp8.cu where CMake has no CUTLASS
// (WEAVE_CUTLASS_DIR unset): no GEMM runs on it, every one on cuBLASLt.
#include "backends/cuda/cutlass_rowwise_fp8.hpp"

namespace weave::internal::cuda {

bool rowwise_fp8_compiled() { return false; }

RowwiseFp8Tile rowwise_fp8_tile(const RowwiseFp8Shape&) { return RowwiseFp8Tile::Large; }

std::string rowwise_fp8_unsupported(const RowwiseFp8Shape&) { return "built without CUTLASS"; }

std::size_t rowwise_fp8_workspace_bytes(const RowwiseFp8Shape&) { return 0; }

std::string rowwise_fp8_enqueue(const RowwiseFp8Shape&, const void*, const void*, const float*, const float*, void*,
                                void*, cudaStream_t) {
  return "built without CUTLASS";
}

}  // namespace weave::internal::cuda
