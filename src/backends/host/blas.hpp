// The Fortran BLAS GEMM entry points, which every BLAS (OpenBLAS, MKL, BLIS,
// Cray LibSci, reference) provides, unlike cblas.h. Trailing size_t
// arguments are the hidden lengths of the character arguments that
// gfortran-compiled BLAS expects.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weave::internal::host {

#if defined(WEAVE_BLAS_ILP64)
using blas_int = int64_t;
#else
using blas_int = int32_t;
#endif

}  // namespace weave::internal::host

extern "C" {
void sgemm_(const char* transa, const char* transb, const weave::internal::host::blas_int* m, const weave::internal::host::blas_int* n,
            const weave::internal::host::blas_int* k, const float* alpha, const float* a, const weave::internal::host::blas_int* lda,
            const float* b, const weave::internal::host::blas_int* ldb, const float* beta, float* c,
            const weave::internal::host::blas_int* ldc, std::size_t transa_len, std::size_t transb_len);
void dgemm_(const char* transa, const char* transb, const weave::internal::host::blas_int* m, const weave::internal::host::blas_int* n,
            const weave::internal::host::blas_int* k, const double* alpha, const double* a, const weave::internal::host::blas_int* lda,
            const double* b, const weave::internal::host::blas_int* ldb, const double* beta, double* c,
            const weave::internal::host::blas_int* ldc, std::size_t transa_len, std::size_t transb_len);
// Complex: scalars and elements are (real, imaginary) pairs, passed as
// pointers to their first component.
void cgemm_(const char* transa, const char* transb, const weave::internal::host::blas_int* m, const weave::internal::host::blas_int* n,
            const weave::internal::host::blas_int* k, const float* alpha, const float* a, const weave::internal::host::blas_int* lda,
            const float* b, const weave::internal::host::blas_int* ldb, const float* beta, float* c,
            const weave::internal::host::blas_int* ldc, std::size_t transa_len, std::size_t transb_len);
void zgemm_(const char* transa, const char* transb, const weave::internal::host::blas_int* m, const weave::internal::host::blas_int* n,
            const weave::internal::host::blas_int* k, const double* alpha, const double* a, const weave::internal::host::blas_int* lda,
            const double* b, const weave::internal::host::blas_int* ldb, const double* beta, double* c,
            const weave::internal::host::blas_int* ldc, std::size_t transa_len, std::size_t transb_len);
}
