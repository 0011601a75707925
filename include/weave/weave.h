/*
 * Weave: distributed matrix multiplication with communication woven into
 * computation (AllGather-GEMM, GEMM-ReduceScatter, GEMM-AllReduce).
 *
 * This is the C API. Every other interface (C++, Fortran, Kokkos) is a thin
 * layer over it. Conventions, in the style of nccl.h:
 *   - every function returns a weave_status_t (WEAVE_SUCCESS == 0);
 *   - on failure, weave_last_error() returns a thread-local message that says
 *     which argument was wrong, its rank-local value, and on which rank;
 *   - outputs are the last arguments;
 *   - handles are opaque pointers; destroying NULL is a no-op;
 *   - the library never calls exit, abort or MPI_Abort.
 *
 * Collective functions (grid, matrix and plan creation, execute) must be
 * called by every rank of the grid; they agree on errors, so a bad argument
 * on one rank is reported on every rank instead of hanging the others.
 *
 * Matrices are stored per rank, column-major by default (BLAS/Fortran), with a
 * local leading dimension; row-major storage is a per-matrix choice.
 */
#ifndef WEAVE_WEAVE_H
#define WEAVE_WEAVE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "weave/weave_version.h"

/* Only the C API is exported from the shared library. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Enumerations are declared with WEAVE_ENUM. In C++ their underlying type is
 * fixed to int, so any int a caller stores in an enum-typed field is a value
 * of that type and the library can reject it with an error (without a fixed
 * type, an out-of-range value would be undefined behaviour before it could be
 * checked). The layout is that of a C enum: four bytes, int-compatible. */
#ifdef __cplusplus
#define WEAVE_ENUM(name) enum name : int
#else
#define WEAVE_ENUM(name) enum name
#endif

/* Every public struct begins with `struct_size`, the sizeof the caller's
 * header gave it, so that later versions of Weave can append fields without
 * breaking programs built against an earlier header (as NCCL's ncclConfig_t).
 * Fields beyond an older caller's size take their zero defaults; a size that
 * no version of the struct ever had is WEAVE_ERROR_INVALID_VALUE. In C, start
 * from the initializer macro (WEAVE_MATRIX_DESC_INIT, ...) or set
 * .struct_size = sizeof(the struct); in C++ the field defaults to the size. */
#ifdef __cplusplus
#define WEAVE_STRUCT_SIZE_FIELD(type) size_t struct_size = sizeof(type)
#else
#define WEAVE_STRUCT_SIZE_FIELD(type) size_t struct_size
#endif

/* An initializer with struct_size set and every other field zero (in C++
 * the default member initializer sets the size). */
#ifdef __cplusplus
#define WEAVE_STRUCT_INIT(type) {}
#else
#define WEAVE_STRUCT_INIT(type) {.struct_size = sizeof(type)}
#endif

/* The entry points that take a sized struct have the symbol names below.
 * Programs built against Weave 0.1's header, whose structs had no
 * struct_size, call the unsuffixed names, which the library keeps with
 * 0.1's layouts; this header sends every call to the sized ones. */
#define weave_matrix_create weave_matrix_create_v2
#define weave_plan_create weave_plan_create_v2
#define weave_plan_get_info weave_plan_get_info_v2
#define weave_execute_ex weave_execute_ex_v2

/* ------------------------------------------------------------------------ */
/* Status codes                                                             */
/* ------------------------------------------------------------------------ */

typedef WEAVE_ENUM(weave_status_t) {
  WEAVE_SUCCESS = 0,
  WEAVE_ERROR_NULL_ARGUMENT = 1,          /* a required handle or pointer is NULL */
  WEAVE_ERROR_INVALID_VALUE = 2,          /* enum out of range, negative size, bad option */
  WEAVE_ERROR_INVALID_COUNTS = 3,         /* counts: wrong length, negative, wrong sum */
  WEAVE_ERROR_INVALID_LEADING_DIMENSION = 4,
  WEAVE_ERROR_SHAPE_MISMATCH = 5,         /* A, B, C, bias shapes do not fit the operation */
  WEAVE_ERROR_DISTRIBUTION_MISMATCH = 6,  /* a distribution does not fit the operation */
  WEAVE_ERROR_UNSUPPORTED_TYPE = 7,       /* element type not supported by the backend */
  WEAVE_ERROR_RANK_MISMATCH = 8,          /* ranks passed different arguments */
  WEAVE_ERROR_NOT_COMPILED = 9,           /* backend or transport not built; message names the CMake option */
  WEAVE_ERROR_UNSUPPORTED = 10,           /* the requested configuration cannot run */
  WEAVE_ERROR_POINTER_KIND = 11,          /* host pointer where a device pointer is needed, or the reverse */
  WEAVE_ERROR_TIMEOUT = 12,               /* a peer did not answer in time */
  WEAVE_ERROR_OUT_OF_MEMORY = 13,
  WEAVE_ERROR_MPI = 14,
  WEAVE_ERROR_CUDA = 15,
  WEAVE_ERROR_CUBLAS = 16,
  WEAVE_ERROR_NCCL = 17,
  WEAVE_ERROR_UCX = 18,
  WEAVE_ERROR_PLAN_FAILED = 19,           /* an earlier execute failed; destroy the plan */
  WEAVE_ERROR_INTERNAL = 20
} weave_status_t;

/* A static, human-readable name for a status code. */
const char* weave_status_string(weave_status_t status);

/* The message of the last failed call on this thread ("" if none). The text
 * stays valid until the next Weave call on this thread. */
const char* weave_last_error(void);

/* For language bindings and wrappers that check what the C API cannot see
 * (the length of a Fortran count array, the extents of a Kokkos View): an
 * error this rank found in the arguments of the collective call it makes
 * next on this thread (weave_grid_create, weave_matrix_create,
 * weave_plan_create, weave_execute*). That call fails on every rank of the
 * call as a bad argument does: every rank returns the lowest failing rank's
 * status and message, within the timeout (with WEAVE_FLAG_NO_EXECUTE_CHECK,
 * execute fails on this rank alone). The next Weave call on this thread,
 * whichever it is, consumes the record. Not collective. `status` is an
 * error (not WEAVE_SUCCESS) and `message` is not NULL, else
 * WEAVE_ERROR_INVALID_VALUE (or NULL_ARGUMENT) and nothing is recorded. */
weave_status_t weave_report_argument_error(weave_status_t status, const char* message);

/* Library version (also available at compile time as WEAVE_VERSION_*). */
weave_status_t weave_get_version(int* major, int* minor, int* patch);

/* Comma-separated list of what this build contains, e.g.
 * "host,mpi,kokkos-3.4.01,cuda,nccl,copy_engine,sm,ucx": always host, mpi and
 * kokkos-<version> (with -cuda where Kokkos has its CUDA backend), then the
 * optional backends and transports compiled in. The string is static. */
const char* weave_build_features(void);

/* ------------------------------------------------------------------------ */
/* Enumerations                                                             */
/* ------------------------------------------------------------------------ */

/* Element types. Zero is "not set" so a zero-initialised descriptor is caught.
 * A, B, C and bias each have their own; the pairs that fit are in
 * doc/api-reference.md (an unfitting pair is an error at plan creation). */
typedef WEAVE_ENUM(weave_dtype_t) {
  WEAVE_FLOAT32 = 1,
  WEAVE_FLOAT64 = 2,
  WEAVE_FLOAT16 = 3,       /* accumulates in float32; emulated on the host backend */
  WEAVE_BFLOAT16 = 4,      /* accumulates in float32; emulated on the host backend */
  WEAVE_FLOAT8_E4M3 = 5,   /* OCP FP8 E4M3 (no infinities, largest finite 448): A and B only, with a
                              scale mode; C and bias in bf16, f16 or f32 (doc/fp8.md) */
  WEAVE_FLOAT8_E5M2 = 6,   /* OCP FP8 E5M2 (largest finite 57344): likewise */
  WEAVE_COMPLEX64 = 7,     /* (real, imaginary) float32 pairs: C's float complex, Fortran's complex */
  WEAVE_COMPLEX128 = 8     /* (real, imaginary) float64 pairs: C's double complex, Fortran's complex(8) */
} weave_dtype_t;

/* Bytes per element of `dtype` (1 for FP8, 2 for f16 and bf16, ...); 0 for a
 * value that is no element type. Read from the library's type table. */
size_t weave_dtype_size(weave_dtype_t dtype);

/* How the scales of an FP8 matrix apply; the scales themselves are float32
 * buffers handed to weave_execute_ex (layouts: doc/fp8.md). Each mode is
 * stated for op(A), an M x K matrix, and op(B), K x N; "outer" is M for A
 * and N for B. Scales are distributed like the data they scale: every
 * rank gives the scales of its own local block. */
typedef WEAVE_ENUM(weave_scale_mode_t) {
  WEAVE_SCALE_NONE = 0,           /* unscaled types (not FP8) */
  WEAVE_SCALE_TENSOR = 1,         /* one float32 for the local block */
  WEAVE_SCALE_ROW_WISE = 2,       /* one float32 per row of op(A) / per column of op(B) (cuBLASLt's outer
                                     vector, PyTorch's "row-wise") */
  WEAVE_SCALE_BLOCK_1X128 = 3,    /* one float32 per 1 x 128 block along K (cuBLASLt's VEC128_32F) */
  WEAVE_SCALE_BLOCK_128X128 = 4,  /* one float32 per 128 x 128 block (cuBLASLt's BLK128x128_32F) */
  WEAVE_SCALE_MXFP8 = 5           /* one E8M0 byte per 1 x 32 block along K (cuBLASLt's VEC32_UE8M0):
                                     GPUs of compute capability 10.0 and later only */
} weave_scale_mode_t;

/* How a global matrix is split over the grid. */
typedef WEAVE_ENUM(weave_distribution_t) {
  WEAVE_DIST_REPLICATED = 1,   /* every rank of the group holds the whole matrix */
  WEAVE_DIST_BLOCK_ROW = 2,    /* rows split over the ranks of the matrix's group */
  WEAVE_DIST_BLOCK_COLUMN = 3, /* columns split over the ranks of the matrix's group */
  WEAVE_DIST_BLOCK_2D = 4,     /* rows split over grid rows, columns over grid columns */
  WEAVE_DIST_BLOCK_CYCLIC = 5  /* 2-D block-cyclic as ScaLAPACK's: mb x nb blocks dealt round the grid
                                  rows and columns from (rsrc, csrc); see weave_matrix_desc_t */
} weave_distribution_t;

/* A set of ranks of a grid: the whole grid (in row-major rank order), the
 * ranks of one grid row, or the ranks of one grid column. An operation on a
 * 2-D grid runs within every row (or column) independently, at the same time. */
typedef WEAVE_ENUM(weave_group_t) {
  WEAVE_GROUP_GRID = 0,
  WEAVE_GROUP_ROW = 1,     /* ranks sharing my grid row: size = grid columns */
  WEAVE_GROUP_COLUMN = 2   /* ranks sharing my grid column: size = grid rows */
} weave_group_t;

typedef WEAVE_ENUM(weave_order_t) {
  WEAVE_ORDER_COLUMN_MAJOR = 0,  /* element (i, j) at i + j * ld */
  WEAVE_ORDER_ROW_MAJOR = 1      /* element (i, j) at i * ld + j */
} weave_order_t;

typedef WEAVE_ENUM(weave_memory_t) {
  WEAVE_MEMORY_HOST = 0,
  WEAVE_MEMORY_DEVICE = 1        /* CUDA device memory of the rank's current device */
} weave_memory_t;

typedef WEAVE_ENUM(weave_op_t) {
  WEAVE_OP_N = 0,  /* op(X) = X   */
  WEAVE_OP_T = 1,  /* op(X) = X^T */
  WEAVE_OP_C = 2   /* op(X) = X^H, the conjugate transpose (X^T for real types) */
} weave_op_t;

typedef WEAVE_ENUM(weave_operation_t) {
  WEAVE_AG_GEMM = 1,  /* C(M x N_r)  = alpha AllGather_rows(op(A)) op(B) + beta C + bias */
  WEAVE_GEMM_RS = 2,  /* C(M_r x N)  = rows M_r of alpha sum_q op(A_q) op(B_q) + beta C + bias */
  WEAVE_GEMM_AR = 3,  /* C(M x N)    = alpha sum_q op(A_q) op(B_q) + beta C + bias, on every rank */
  WEAVE_GEMM = 4      /* C(M x N)    = alpha op(A) op(B) + beta C + bias with A, B, C each distributed
                         over the whole P_r x P_c grid (block-cyclic or 2-D block, as pdgemm) */
} weave_operation_t;

typedef WEAVE_ENUM(weave_algorithm_t) {
  WEAVE_ALGORITHM_AUTO = 0, /* automatic: host plans, and device AG-GEMM whose group spans several nodes, take
                               what the model predicts fastest from a calibration at plan creation (an overlapped
                               plan only when predicted 10% faster than the sequential one); device GEMM-RS and
                               GEMM-AR across nodes of several GPUs each take the pipelined plan over a link
                               calibrated at 16 GB/s or more (from 64 GFLOP per rank) and the hierarchical plan
                               over a slower one (from 32 GFLOP per rank), with one GPU per node or calibration
                               off the sequential plan; otherwise, and with calibration off, the ring; the direct algorithm for GEMM-RS and GEMM-AR over the
                               copy-engine and SM transports; the sequential algorithm for one rank, for device
                               plans below 64 GFLOP per rank, for device GEMM-RS and GEMM-AR over NCCL, and for
                               device AG-GEMM over NCCL below 1 TFLOP per rank; WEAVE_GEMM: SUMMA */
  WEAVE_ALGORITHM_RING = 1,        /* overlapped ring: chunk s+1 travels while chunk s is multiplied */
  WEAVE_ALGORITHM_SEQUENTIAL = 2,  /* one collective, then one GEMM (or GEMM then collective) */
  WEAVE_ALGORITHM_DIRECT = 3,      /* GEMM-RS/GEMM-AR: each rank sends every other rank its product for
                                      that rank's rows, in C's type; the owner sums in float32.
                                      AG-GEMM: each rank sends its rows to every other rank at once,
                                      nothing forwarded */
  WEAVE_ALGORITHM_PIPELINED = 4,   /* a chain of per-chunk collectives (all-gather, reduce-scatter,
                                      all-reduce), chunk k+1's in flight while chunk k is multiplied:
                                      keeps the collective library's own algorithms (networks) */
  WEAVE_ALGORITHM_HIERARCHICAL = 5, /* groups spanning several multi-rank nodes: an exchange within each
                                      node and one between nodes, the inter-node transfer of chunk k
                                      beside the intra-node exchange of chunk k-1 and the GEMMs */
  WEAVE_ALGORITHM_SUMMA = 6        /* WEAVE_GEMM: the panels of op(A) and op(B) along K are broadcast
                                      along grid rows and columns, panel k+1 travelling while panel k
                                      is multiplied */
} weave_algorithm_t;

typedef WEAVE_ENUM(weave_backend_t) {
  WEAVE_BACKEND_AUTO = 0, /* automatic: from the matrices' memory, host memory HOST, device memory CUDA */
  WEAVE_BACKEND_HOST = 1,
  WEAVE_BACKEND_CUDA = 2
} weave_backend_t;

typedef WEAVE_ENUM(weave_transport_t) {
  WEAVE_TRANSPORT_AUTO = 0, /* automatic: MPI for host plans; for device plans, when the group's GPUs share
                               one node with peer access, the SM transport where its measured rule prefers it
                               and the copy engines elsewhere, NCCL otherwise */
  WEAVE_TRANSPORT_MPI = 1,
  WEAVE_TRANSPORT_NCCL = 2,
  WEAVE_TRANSPORT_UCX = 3,
  WEAVE_TRANSPORT_COPY_ENGINE = 4, /* intra-node CUDA peer copies, no SMs taken */
  WEAVE_TRANSPORT_SM = 5           /* intra-node SM-driven peer transfers on a bounded number of SMs;
                                      reductions sum where they read */
} weave_transport_t;

typedef WEAVE_ENUM(weave_direction_t) {
  WEAVE_DIRECTION_AUTO = 0, /* automatic: forward for host plans, bidirectional for device plans, except a
                               GEMM-RS or GEMM-AR ring with one chunk per shard asked for, which runs forward */
  WEAVE_DIRECTION_FORWARD = 1,       /* rank r sends to r+1 */
  WEAVE_DIRECTION_BACKWARD = 2,      /* rank r sends to r-1 */
  WEAVE_DIRECTION_BIDIRECTIONAL = 3  /* half of every shard each way */
} weave_direction_t;

/* How the host keeps communication moving while BLAS runs. */
typedef WEAVE_ENUM(weave_progress_t) {
  WEAVE_PROGRESS_AUTO = 0, /* automatic: a progress thread where MPI allows it (MPI_THREAD_SERIALIZED or
                              higher, for transports that call MPI) and each rank has 2 or more hardware
                              threads of its node; tiles otherwise */
  WEAVE_PROGRESS_TILES = 1,   /* GEMMs split into tiles, progress between tiles (any MPI thread level) */
  WEAVE_PROGRESS_THREAD = 2   /* a progress thread (needs MPI_THREAD_SERIALIZED or higher) */
} weave_progress_t;

/* Plan flags (bitwise or). */
enum {
  WEAVE_FLAG_NONE = 0,
  WEAVE_FLAG_ALLOW_TF32 = 1,             /* float32 GEMMs may use TF32 tensor cores */
  WEAVE_FLAG_GATHERED_OUTPUT = 2,        /* AG-GEMM also returns the gathered A (weave_execute_ex) */
  WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE = 4,  /* 16-bit partial sums travel in C's type (faster, rounds each hop) */
  WEAVE_FLAG_TRACE = 8,                  /* record a per-step trace (weave_plan_write_trace) */
  WEAVE_FLAG_NO_EXECUTE_CHECK = 16,      /* skip the per-execute agreement check between ranks */
  WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE = 32  /* 16-bit GEMM-RS/AR move float32 where the direct, pipelined
                                                  and hierarchical algorithms move products in C's type */
};

/* ------------------------------------------------------------------------ */
/* Grid                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct weave_grid_s* weave_grid_t;

/* Collective over comm. comm is duplicated; prows * pcols must equal its size.
 * Rank r of comm sits at grid row r / pcols, grid column r % pcols. A 1-D grid
 * is P x 1 or 1 x P. */
weave_status_t weave_grid_create(MPI_Comm comm, int prows, int pcols, weave_grid_t* grid);

/* As weave_grid_create, for a Fortran communicator handle (bindings use it). */
weave_status_t weave_grid_create_fortran(MPI_Fint comm, int prows, int pcols, weave_grid_t* grid);

/* Not collective. Plans created from the grid stay valid after it is destroyed. */
weave_status_t weave_grid_destroy(weave_grid_t grid);

weave_status_t weave_grid_shape(weave_grid_t grid, int* prows, int* pcols);
weave_status_t weave_grid_coords(weave_grid_t grid, int* row, int* col);
/* Size of, and this rank's index in, one of its groups. */
weave_status_t weave_grid_group(weave_grid_t grid, weave_group_t group, int* size, int* rank);
/* The (duplicated) communicator of a group; owned by the grid, do not free. */
weave_status_t weave_grid_group_comm(weave_grid_t grid, weave_group_t group, MPI_Comm* comm);

/* ------------------------------------------------------------------------ */
/* Matrix descriptors                                                       */
/* ------------------------------------------------------------------------ */

typedef struct weave_matrix_s* weave_matrix_t;

/* What a distributed matrix looks like. Start from WEAVE_MATRIX_DESC_INIT,
 * then set at least rows, cols, dtype and distribution; every other zero field
 * means the default written next to it. */
typedef struct weave_matrix_desc_t {
  WEAVE_STRUCT_SIZE_FIELD(struct weave_matrix_desc_t);  /* sizeof(weave_matrix_desc_t) */
  int64_t rows;                      /* global rows (of one group's matrix)          */
  int64_t cols;                      /* global columns                               */
  weave_dtype_t dtype;
  weave_distribution_t distribution;
  weave_group_t group;               /* ranks a BLOCK_ROW / BLOCK_COLUMN / REPLICATED
                                        matrix is spread over; default: the grid     */
  const int64_t* row_counts;         /* rows per rank (BLOCK_ROW: one per group rank,
                                        BLOCK_2D: one per grid row); NULL: balanced  */
  const int64_t* col_counts;         /* columns per rank, likewise; NULL: balanced   */
  int64_t ld;                        /* local leading dimension; 0: tight            */
  weave_order_t order;               /* default column-major                         */
  weave_memory_t memory;             /* default host                                 */
  /* Appended with FP8 support (an older struct_size leaves them zero). */
  weave_scale_mode_t scale_mode;     /* FP8 types: how their scales apply (required);
                                        other types: WEAVE_SCALE_NONE               */
  /* Appended with 2-D block-cyclic support. WEAVE_DIST_BLOCK_CYCLIC only (zero otherwise): ScaLAPACK's descriptor, with
   * 0-based positions. The matrix's rows are cut into blocks of mb rows
   * (the last one may be smaller), dealt round the grid rows starting at
   * grid row rsrc; its columns likewise (nb, csrc) round the grid columns.
   * Each rank stores the blocks it holds one after another, as
   * ScaLAPACK's numroc counts them, in a local array with leading dimension
   * ld (ScaLAPACK's LLD). A source of -1 means every grid row (column)
   * holds every row (column), as PBLAS reads a negative source. */
  int64_t mb;                        /* rows per block (MB_), > 0                    */
  int64_t nb;                        /* columns per block (NB_), > 0                 */
  int32_t rsrc;                      /* grid row of the first block (RSRC_), or -1   */
  int32_t csrc;                      /* grid column of the first block (CSRC_), or -1 */
  int64_t row_start;                 /* the matrix is rows [row_start, row_start +   */
  int64_t col_start;                 /* rows) and columns [col_start, col_start +
                                        cols) of the block-cyclic matrix held in the
                                        local arrays (ScaLAPACK's IA - 1, JA - 1);
                                        0, 0: the whole of it                        */
} weave_matrix_desc_t;

/* A descriptor with its struct_size set and every other field zero:
 *   weave_matrix_desc_t d = WEAVE_MATRIX_DESC_INIT;  d.rows = ...; */
#define WEAVE_MATRIX_DESC_INIT WEAVE_STRUCT_INIT(weave_matrix_desc_t)

/* Collective over the grid. Counts are copied. */
weave_status_t weave_matrix_create(weave_grid_t grid, const weave_matrix_desc_t* desc,
                                   weave_matrix_t* matrix);
weave_status_t weave_matrix_destroy(weave_matrix_t matrix);

/* This rank's block: its extent, its position in the global matrix, its
 * leading dimension, and the number of elements to allocate for it.
 * BLOCK_CYCLIC: the extent is that of the local array from its first
 * element to the matrix's last local row and column (with row_start or
 * col_start > 0 this includes the local rows and columns before the
 * matrix); the position is the global row and column, within the matrix,
 * of the first of its rows and columns this rank holds (rows and cols when
 * it holds none). */
weave_status_t weave_matrix_local_shape(weave_matrix_t matrix, int64_t* rows, int64_t* cols);
weave_status_t weave_matrix_local_offset(weave_matrix_t matrix, int64_t* row_offset,
                                         int64_t* col_offset);
weave_status_t weave_matrix_ld(weave_matrix_t matrix, int64_t* ld);
weave_status_t weave_matrix_local_elements(weave_matrix_t matrix, int64_t* elements);

/* ------------------------------------------------------------------------ */
/* Plans                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct weave_plan_s* weave_plan_t;

/* One distributed multiplication. Start from WEAVE_PLAN_DESC_INIT, set
 * operation, a, b, c; every other zero field means "automatic" or "default". Environment
 * variables WEAVE_ALGORITHM, WEAVE_TRANSPORT, WEAVE_CHUNKS, WEAVE_DIRECTION,
 * WEAVE_PROGRESS, WEAVE_COMPUTE_STREAMS, WEAVE_TIMEOUT override the automatic
 * choices only; WEAVE_COMM_PRIORITY, WEAVE_SM_MARGIN, WEAVE_SM_TRANSPORT_CTAS,
 * WEAVE_ALL_REDUCE and WEAVE_DEVICE_WAIT tune GPU plans (see
 * doc/api-reference.md). */
typedef struct weave_plan_desc_t {
  WEAVE_STRUCT_SIZE_FIELD(struct weave_plan_desc_t);  /* sizeof(weave_plan_desc_t) */
  weave_operation_t operation;
  weave_group_t group;          /* the ranks the operation runs over; default: the grid */
  weave_op_t op_a;
  weave_op_t op_b;
  weave_matrix_t a;
  weave_matrix_t b;
  weave_matrix_t c;
  weave_matrix_t bias;          /* optional: 1 x N, columns distributed like C's */
  weave_algorithm_t algorithm;
  weave_backend_t backend;
  weave_transport_t transport;
  weave_direction_t direction;
  int32_t chunks_per_shard;     /* pipelining depth: chunks each shard is cut into; 0: auto */
  int32_t compute_streams;      /* GPU compute streams; 0: auto */
  weave_progress_t progress;    /* host progress mechanism */
  int32_t timeout_ms;           /* give up waiting for a peer; 0: default (300 s), <0: never */
  int32_t flags;                /* WEAVE_FLAG_* */
  /* Appended with FP8 support (an older struct_size leaves it zero). */
  weave_dtype_t wire_type;      /* AG-GEMM: what A's rows travel and are multiplied in, when narrower
                                   than A's type: WEAVE_FLOAT8_E4M3 (each row quantized once, before it is
                                   sent, with a row-wise scale from its amax: doc/fp8.md) or
                                   WEAVE_BFLOAT16 (rounded); 0: as stored */
  int32_t reserved;             /* 0. (wire_type alone would lie in the padding after flags, leaving
                                   sizeof unchanged, and struct_size could not tell the versions apart) */
} weave_plan_desc_t;

#define WEAVE_PLAN_DESC_INIT WEAVE_STRUCT_INIT(weave_plan_desc_t)

/* Collective over the grid. Checks that every rank passed the same
 * arguments, picks algorithm, transport and chunking, and allocates every
 * workspace. Descriptors may be destroyed afterwards. */
weave_status_t weave_plan_create(weave_grid_t grid, const weave_plan_desc_t* desc,
                                 weave_plan_t* plan);
weave_status_t weave_plan_destroy(weave_plan_t plan);

/* One line saying what the plan will do (operation, algorithm, backend,
 * transport, chunks, per-rank shapes). Owned by the plan. Printed at plan
 * creation when WEAVE_LOG=info (rank 0) or WEAVE_LOG=debug (every rank). */
weave_status_t weave_plan_describe(weave_plan_t plan, const char** text);

/* What the plan resolved its automatic choices to. */
typedef struct weave_plan_info_t {
  WEAVE_STRUCT_SIZE_FIELD(struct weave_plan_info_t);  /* set by the caller: sizeof(weave_plan_info_t) */
  weave_algorithm_t algorithm;
  weave_backend_t backend;
  weave_transport_t transport;
  weave_direction_t direction;
  weave_progress_t progress;   /* host plans */
  int32_t chunks_per_shard;
  int32_t compute_streams;
  int32_t group_size;
  int32_t group_rank;
  int64_t workspace_bytes;
  int64_t steps;               /* steps in this rank's schedule */
  weave_dtype_t a_type;        /* the element types of the plan's matrices (bias_type 0: no bias), */
  weave_dtype_t b_type;        /* so typed interfaces (C++, Fortran, Kokkos) can check the buffers */
  weave_dtype_t c_type;        /* they are handed against the plan */
  weave_dtype_t bias_type;
  weave_status_t status;       /* WEAVE_SUCCESS while the plan can execute; WEAVE_ERROR_TIMEOUT once a
                                  device-side wait of an earlier execute gave up (certain after the
                                  caller synchronized with that execute's stream); WEAVE_ERROR_PLAN_FAILED
                                  after another failed execute. Destroy a plan that is not SUCCESS. */
  /* Appended with FP8 support (an older struct_size leaves them zero). */
  weave_scale_mode_t a_scale_mode;  /* the scale modes of A and B (WEAVE_SCALE_NONE: unscaled) */
  weave_scale_mode_t b_scale_mode;
  int64_t a_scale_elements;         /* scale elements (float32; bytes for MXFP8) of this rank's */
  int64_t b_scale_elements;         /* blocks of A and B, and of the gathered A */
  int64_t gathered_a_scale_elements;
  weave_dtype_t wire_type;          /* what A's rows travel as (AG-GEMM; A's type without a wire type) */
} weave_plan_info_t;
#define WEAVE_PLAN_INFO_INIT WEAVE_STRUCT_INIT(weave_plan_info_t)
/* Writes the first info->struct_size bytes of what the plan resolved. */
weave_status_t weave_plan_get_info(weave_plan_t plan, weave_plan_info_t* info);

/* Run the plan: C <- alpha * product + beta * C + bias (real alpha and beta;
 * complex ones through weave_execute_ex's alpha_imag and beta_imag). Collective over the
 * operation's group. a, b, c, bias are this rank's local blocks as described
 * by the plan's descriptors (bias may be NULL only if the plan has none; c is
 * not read when beta == 0). Host plans return when C is complete (stream must
 * be NULL). Device plans enqueue on stream (a cudaStream_t; NULL is the
 * default stream) after the work already on it and return without waiting;
 * with the NCCL, copy-engine or SM transport the call can be captured in a
 * CUDA graph. May be called any number of times. */
weave_status_t weave_execute(weave_plan_t plan, double alpha, const void* a, const void* b,
                             double beta, void* c, const void* bias, void* stream);

typedef struct weave_execute_args_t {
  WEAVE_STRUCT_SIZE_FIELD(struct weave_execute_args_t);  /* sizeof(weave_execute_args_t) */
  double alpha;
  double beta;
  const void* a;
  const void* b;
  void* c;
  const void* bias;
  void* gathered_a;        /* WEAVE_FLAG_GATHERED_OUTPUT: receives the gathered A, stored
                              like A (op N: M x K, op T: K x M) in A's order */
  int64_t ld_gathered_a;   /* 0: tight */
  void* stream;
  /* Typed interfaces (C++, Fortran, Kokkos) say what they were handed, so
   * that a buffer of another element type, or with fewer elements than the
   * plan's local block needs, is an error on every rank of the group before
   * anything is read or written. Plain C callers leave these zero. */
  int32_t buffer_checks;   /* WEAVE_CHECK_TYPES | WEAVE_CHECK_ELEMENTS: which fields below are set */
  weave_dtype_t a_type;    /* element types of a, b, c, bias, gathered_a (0: that one unchecked) */
  weave_dtype_t b_type;
  weave_dtype_t c_type;
  weave_dtype_t bias_type;
  weave_dtype_t gathered_a_type;
  int64_t a_elements;      /* elements each buffer holds */
  int64_t b_elements;
  int64_t c_elements;
  int64_t bias_elements;
  int64_t gathered_a_elements;
  /* Appended with FP8 support: the scales of FP8 operands, this rank's (doc/fp8.md has
   * every mode's layout; weave_plan_info_t's *_scale_elements their sizes),
   * in the plan's memory, float32 (MXFP8: E8M0 bytes). The pointers may
   * change between executes; a captured CUDA graph keeps the ones it was
   * captured with (their contents may change between replays). */
  const void* a_scale;     /* required when A is scaled and this rank's block is not empty */
  const void* b_scale;     /* likewise for B */
  void* gathered_a_scale;  /* WEAVE_FLAG_GATHERED_OUTPUT of a scaled A: receives the gathered A's scales */
  int64_t a_scale_elements;  /* WEAVE_CHECK_ELEMENTS: scale elements each buffer holds */
  int64_t b_scale_elements;
  int64_t gathered_a_scale_elements;
  /* Appended with complex support. Complex plans: alpha = alpha + i alpha_imag, beta = beta + i beta_imag
   * (zero for real plans, where a non-zero imaginary part is an error).
   * weave_execute passes real alpha and beta. */
  double alpha_imag;
  double beta_imag;
} weave_execute_args_t;

/* weave_execute_args_t.buffer_checks (bitwise or). */
enum {
  WEAVE_CHECK_TYPES = 1,    /* a_type ... gathered_a_type are set */
  WEAVE_CHECK_ELEMENTS = 2  /* a_elements ... gathered_a_elements are set */
};
#define WEAVE_EXECUTE_ARGS_INIT WEAVE_STRUCT_INIT(weave_execute_args_t)
weave_status_t weave_execute_ex(weave_plan_t plan, const weave_execute_args_t* args);

/* Write the trace of the last execute (plan created with WEAVE_FLAG_TRACE)
 * as Chrome trace JSON, one file per rank: path may contain "%r", replaced by
 * the rank in the grid. */
weave_status_t weave_plan_write_trace(weave_plan_t plan, const char* path);

#ifdef __cplusplus
}
#endif

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif /* WEAVE_WEAVE_H */
