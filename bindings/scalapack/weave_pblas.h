/*
 * ScaLAPACK's PBLAS GEMM entry points over Weave's WEAVE_GEMM: a code that
 * calls pdgemm changes one name.
 *
 *   pdgemm_(&ta, &tb, &m, &n, &k, &alpha, a, &ia, &ja, desca, b, &ib, &jb, descb, &beta, c, &ic, &jc, descc);
 *   weave_pdgemm(&ta, &tb, &m, &n, &k, &alpha, a, &ia, &ja, desca, b, &ib, &jb, descb, &beta, c, &ic, &jc, descc);
 *
 * The arguments are ScaLAPACK's, passed as ScaLAPACK's C callers pass them
 * (every one by address): transa and transb are 'N', 'T' or 'C'; m, n, k
 * the sizes of sub(C) = C(ic:ic+m-1, jc:jc+n-1), op(sub(A)) (m x k) and
 * op(sub(B)) (k x n); ia, ja, ib, jb, ic, jc are 1-based; the descriptors
 * are ScaLAPACK's 9 integers (DTYPE_ = 1, CTXT_, M_, N_, MB_, NB_, RSRC_,
 * CSRC_, LLD_), all three in one BLACS context; a, b, c are this process's
 * local arrays. Fortran programs call the same names as subroutines with
 * the same argument list (CALL WEAVE_PDGEMM(...)).
 *
 * Collective over the context's grid, as pdgemm is; a process outside the
 * grid returns at once. The grid may be over all processes or some of them
 * (BLACS_GRIDINIT, BLACS_GRIDMAP): Weave's grid is made from the
 * communicator that BLACS_GET(ICTXT, 10, ...) names, which the reference
 * BLACS makes of the grid's own processes. Where a BLACS names a wider one,
 * a grid that does not span it is WEAVE_ERROR_UNSUPPORTED on each of its
 * processes, found without waiting for the others. The first call with a
 * set of descriptors creates a Weave plan, which later calls with the same
 * arguments reuse (the 32 most recently used are kept).
 *
 * Arguments ScaLAPACK would refuse (a descriptor type other than 1, block
 * sizes below 1, a source process outside the grid, LLD_ below the local
 * rows, descriptors of different contexts, a submatrix outside its matrix,
 * a trans that is not N, T or C) are an error on every process of the grid,
 * and nothing is written; so is every error Weave reports, a NULL argument
 * on any process (WEAVE_ERROR_NULL_ARGUMENT), and arguments that differ
 * between processes (WEAVE_ERROR_RANK_MISMATCH: every argument but LLD_ and
 * CTXT_ must be the same on all). Every wait for the other processes is
 * bounded by WEAVE_TIMEOUT (300 s by default): a process that does not call
 * costs the others WEAVE_ERROR_TIMEOUT, after which the grid is exited
 * (BLACS_GRIDEXIT) and made again. The C functions
 * return the status (weave_pblas_last_error() says why); every entry point
 * also prints the message on stderr from grid process (0, 0), as PBLAS's
 * PXERBLA does, since a Fortran subroutine has no status to return.
 *
 * Integers are C int (ScaLAPACK built with 32-bit integers). Complex
 * scalars and elements (weave_pzgemm, weave_pcgemm) are pairs (real,
 * imaginary) of double or float, as Fortran's COMPLEX*16 and COMPLEX.
 */
#ifndef WEAVE_WEAVE_PBLAS_H
#define WEAVE_WEAVE_PBLAS_H

#include "weave/weave.h"

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#ifdef __cplusplus
extern "C" {
#endif

weave_status_t weave_pdgemm(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                            const double* alpha, const double* a, const int* ia, const int* ja, const int* desca,
                            const double* b, const int* ib, const int* jb, const int* descb, const double* beta,
                            double* c, const int* ic, const int* jc, const int* descc);

weave_status_t weave_psgemm(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                            const float* alpha, const float* a, const int* ia, const int* ja, const int* desca,
                            const float* b, const int* ib, const int* jb, const int* descb, const float* beta,
                            float* c, const int* ic, const int* jc, const int* descc);

/* Complex: alpha and beta point to (real, imaginary) pairs; a, b and c
 * hold such pairs (double complex / float complex, COMPLEX*16 / COMPLEX). */
weave_status_t weave_pzgemm(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                            const double* alpha, const void* a, const int* ia, const int* ja, const int* desca,
                            const void* b, const int* ib, const int* jb, const int* descb, const double* beta, void* c,
                            const int* ic, const int* jc, const int* descc);

weave_status_t weave_pcgemm(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                            const float* alpha, const void* a, const int* ia, const int* ja, const int* desca,
                            const void* b, const int* ib, const int* jb, const int* descb, const float* beta, void* c,
                            const int* ic, const int* jc, const int* descc);

/* The message of the last failed call on this thread ("" if none). */
const char* weave_pblas_last_error(void);

/* Destroys every cached plan, matrix and grid now (collective over nothing;
 * also done when MPI is finalized). */
void weave_pblas_release(void);

#ifdef __cplusplus
}
#endif

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif /* WEAVE_WEAVE_PBLAS_H */
