// FP8 GEMMs with row-wise scales on Hopper from CUTLASS, beside cuBLASLt's.
//
// cuBLASLt 13.1 has one kernel for e4m3 x e4m3 with row-wise (outer-vector)
// scales on sm_90 (its heuristic offers no other, doc/performance.md); it
// timed 5-12% slower in weave-bench than PyTorch's row-wise scaled GEMM,
// which was taken for a CUTLASS 3 kernel with the scales applied in its
// epilogue (PyTorch 2.11 turned out to run the same cuBLASLt kernel on
// sm_90). This is that construction: a TMA warp-specialized sm_90a mainloop
// with FP8 accumulation promoted to float32 (no fast accumulation, as
// cuBLASLt by default), and an epilogue that multiplies each accumulator by
// its row's scale of A and its column's scale of B and rounds once to the
// output type (bf16, or float32 for the products of plans whose partial
// sums travel in float32).
//
// Built only where CMake is given CUTLASS's headers (WEAVE_CUTLASS_DIR; the
// nvidia-cutlass wheel on PyPI carries them): elsewhere rowwise_fp8_compiled()
// is false and every GEMM stays with cuBLASLt. This header needs no CUTLASS.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace weave::internal::cuda {

// D [m x n] = (a_scale[i] * b_scale[j] * sum_k A[i, k] B[k, j]) in bf16 or
// float32 (f32_out),
// A e4m3 with K contiguous (row i at a + i * lda), B e4m3 with K contiguous
// (column j at b + j * ldb), D row-major (row i at d + i * ldd), the scales
// float32 vectors of m and n entries.
struct RowwiseFp8Shape {
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldd = 0;
  bool f32_out = false;  // D in float32, else bf16
  int sm_count = 0;  // SMs the persistent kernel spreads over; 0: all of the device's
  // Tiles that CTAs launched one after another take side by side across the
  // raster (CUTLASS's max_swizzle_size: 1, 2, 4 or 8), so that the tiles
  // running at once share more rows of A and columns of B in L2.
  int swizzle = 1;
};

// The swizzle PyTorch's row-wise kernel takes: 8 where M and N are both
// 4096 or more, else 1.
inline int rowwise_fp8_swizzle(const RowwiseFp8Shape& shape) { return shape.m >= 4096 && shape.n >= 4096 ? 8 : 1; }

// The kernel's tile: small for few rows (decode-like shapes), large else.
enum class RowwiseFp8Tile { Small, Large };

// Whether this build carries the CUTLASS kernels.
bool rowwise_fp8_compiled();

// The tile a shape runs with.
RowwiseFp8Tile rowwise_fp8_tile(const RowwiseFp8Shape& shape);

// Empty when the kernel runs this shape (its dimensions, leading
// dimensions and the alignment TMA needs), else why not.
std::string rowwise_fp8_unsupported(const RowwiseFp8Shape& shape);

// Device memory the kernel needs beside its operands (bytes), allocated
// once at plan creation.
std::size_t rowwise_fp8_workspace_bytes(const RowwiseFp8Shape& shape);

// Enqueues one GEMM on `stream`. Every pointer 16-byte aligned (the caller
// checks, and runs cuBLASLt otherwise). Returns an empty string or what
// failed.
std::string rowwise_fp8_enqueue(const RowwiseFp8Shape& shape, const void* a, const void* b, const float* a_scale,
                                const float* b_scale, void* d, void* workspace, cudaStream_t stream);

}  // namespace weave::internal::cuda
