! The enumerations, flags and version numbers of weave.h as Fortran named
! constants. C enums are int, so every constant is integer(c_int); the values
! must match include/weave/weave.h (tests/fortran_layout_test checks them).
! Users reach them through `use weave`.
module weave_constants
  use, intrinsic :: iso_c_binding, only: c_int
  implicit none
  public

  ! Version of the headers this module was compiled with (weave_get_version
  ! returns the library's own).
  integer(c_int), parameter :: WEAVE_VERSION_MAJOR = WEAVE_FORTRAN_VERSION_MAJOR
  integer(c_int), parameter :: WEAVE_VERSION_MINOR = WEAVE_FORTRAN_VERSION_MINOR
  integer(c_int), parameter :: WEAVE_VERSION_PATCH = WEAVE_FORTRAN_VERSION_PATCH

  ! weave_status_t
  integer(c_int), parameter :: WEAVE_SUCCESS = 0
  integer(c_int), parameter :: WEAVE_ERROR_NULL_ARGUMENT = 1
  integer(c_int), parameter :: WEAVE_ERROR_INVALID_VALUE = 2
  integer(c_int), parameter :: WEAVE_ERROR_INVALID_COUNTS = 3
  integer(c_int), parameter :: WEAVE_ERROR_INVALID_LEADING_DIMENSION = 4
  integer(c_int), parameter :: WEAVE_ERROR_SHAPE_MISMATCH = 5
  integer(c_int), parameter :: WEAVE_ERROR_DISTRIBUTION_MISMATCH = 6
  integer(c_int), parameter :: WEAVE_ERROR_UNSUPPORTED_TYPE = 7
  integer(c_int), parameter :: WEAVE_ERROR_RANK_MISMATCH = 8
  integer(c_int), parameter :: WEAVE_ERROR_NOT_COMPILED = 9
  integer(c_int), parameter :: WEAVE_ERROR_UNSUPPORTED = 10
  integer(c_int), parameter :: WEAVE_ERROR_POINTER_KIND = 11
  integer(c_int), parameter :: WEAVE_ERROR_TIMEOUT = 12
  integer(c_int), parameter :: WEAVE_ERROR_OUT_OF_MEMORY = 13
  integer(c_int), parameter :: WEAVE_ERROR_MPI = 14
  integer(c_int), parameter :: WEAVE_ERROR_CUDA = 15
  integer(c_int), parameter :: WEAVE_ERROR_CUBLAS = 16
  integer(c_int), parameter :: WEAVE_ERROR_NCCL = 17
  integer(c_int), parameter :: WEAVE_ERROR_UCX = 18
  integer(c_int), parameter :: WEAVE_ERROR_PLAN_FAILED = 19
  integer(c_int), parameter :: WEAVE_ERROR_INTERNAL = 20

  ! weave_dtype_t
  integer(c_int), parameter :: WEAVE_FLOAT32 = 1
  integer(c_int), parameter :: WEAVE_FLOAT64 = 2
  integer(c_int), parameter :: WEAVE_FLOAT16 = 3
  integer(c_int), parameter :: WEAVE_BFLOAT16 = 4
  integer(c_int), parameter :: WEAVE_FLOAT8_E4M3 = 5
  integer(c_int), parameter :: WEAVE_FLOAT8_E5M2 = 6

  ! weave_scale_mode_t
  integer(c_int), parameter :: WEAVE_SCALE_NONE = 0
  integer(c_int), parameter :: WEAVE_SCALE_TENSOR = 1
  integer(c_int), parameter :: WEAVE_SCALE_ROW_WISE = 2
  integer(c_int), parameter :: WEAVE_SCALE_BLOCK_1X128 = 3
  integer(c_int), parameter :: WEAVE_SCALE_BLOCK_128X128 = 4
  integer(c_int), parameter :: WEAVE_SCALE_MXFP8 = 5
  integer(c_int), parameter :: WEAVE_COMPLEX64 = 7
  integer(c_int), parameter :: WEAVE_COMPLEX128 = 8

  ! weave_distribution_t
  integer(c_int), parameter :: WEAVE_DIST_REPLICATED = 1
  integer(c_int), parameter :: WEAVE_DIST_BLOCK_ROW = 2
  integer(c_int), parameter :: WEAVE_DIST_BLOCK_COLUMN = 3
  integer(c_int), parameter :: WEAVE_DIST_BLOCK_2D = 4
  integer(c_int), parameter :: WEAVE_DIST_BLOCK_CYCLIC = 5

  ! weave_group_t
  integer(c_int), parameter :: WEAVE_GROUP_GRID = 0
  integer(c_int), parameter :: WEAVE_GROUP_ROW = 1
  integer(c_int), parameter :: WEAVE_GROUP_COLUMN = 2

  ! weave_order_t
  integer(c_int), parameter :: WEAVE_ORDER_COLUMN_MAJOR = 0
  integer(c_int), parameter :: WEAVE_ORDER_ROW_MAJOR = 1

  ! weave_memory_t
  integer(c_int), parameter :: WEAVE_MEMORY_HOST = 0
  integer(c_int), parameter :: WEAVE_MEMORY_DEVICE = 1

  ! weave_op_t
  integer(c_int), parameter :: WEAVE_OP_N = 0
  integer(c_int), parameter :: WEAVE_OP_T = 1
  integer(c_int), parameter :: WEAVE_OP_C = 2

  ! weave_operation_t
  integer(c_int), parameter :: WEAVE_AG_GEMM = 1
  integer(c_int), parameter :: WEAVE_GEMM_RS = 2
  integer(c_int), parameter :: WEAVE_GEMM_AR = 3
  integer(c_int), parameter :: WEAVE_GEMM = 4

  ! weave_algorithm_t
  integer(c_int), parameter :: WEAVE_ALGORITHM_AUTO = 0
  integer(c_int), parameter :: WEAVE_ALGORITHM_RING = 1
  integer(c_int), parameter :: WEAVE_ALGORITHM_SEQUENTIAL = 2
  integer(c_int), parameter :: WEAVE_ALGORITHM_DIRECT = 3
  integer(c_int), parameter :: WEAVE_ALGORITHM_PIPELINED = 4
  integer(c_int), parameter :: WEAVE_ALGORITHM_HIERARCHICAL = 5
  integer(c_int), parameter :: WEAVE_ALGORITHM_SUMMA = 6

  ! weave_backend_t
  integer(c_int), parameter :: WEAVE_BACKEND_AUTO = 0
  integer(c_int), parameter :: WEAVE_BACKEND_HOST = 1
  integer(c_int), parameter :: WEAVE_BACKEND_CUDA = 2

  ! weave_transport_t
  integer(c_int), parameter :: WEAVE_TRANSPORT_AUTO = 0
  integer(c_int), parameter :: WEAVE_TRANSPORT_MPI = 1
  integer(c_int), parameter :: WEAVE_TRANSPORT_NCCL = 2
  integer(c_int), parameter :: WEAVE_TRANSPORT_UCX = 3
  integer(c_int), parameter :: WEAVE_TRANSPORT_COPY_ENGINE = 4
  integer(c_int), parameter :: WEAVE_TRANSPORT_SM = 5

  ! weave_direction_t
  integer(c_int), parameter :: WEAVE_DIRECTION_AUTO = 0
  integer(c_int), parameter :: WEAVE_DIRECTION_FORWARD = 1
  integer(c_int), parameter :: WEAVE_DIRECTION_BACKWARD = 2
  integer(c_int), parameter :: WEAVE_DIRECTION_BIDIRECTIONAL = 3

  ! weave_progress_t
  integer(c_int), parameter :: WEAVE_PROGRESS_AUTO = 0
  integer(c_int), parameter :: WEAVE_PROGRESS_TILES = 1
  integer(c_int), parameter :: WEAVE_PROGRESS_THREAD = 2

  ! Plan flags (combine with ior).
  integer(c_int), parameter :: WEAVE_FLAG_NONE = 0
  integer(c_int), parameter :: WEAVE_FLAG_ALLOW_TF32 = 1
  integer(c_int), parameter :: WEAVE_FLAG_GATHERED_OUTPUT = 2
  integer(c_int), parameter :: WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE = 4
  integer(c_int), parameter :: WEAVE_FLAG_TRACE = 8
  integer(c_int), parameter :: WEAVE_FLAG_NO_EXECUTE_CHECK = 16
  integer(c_int), parameter :: WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE = 32

  ! weave_execute_args_t%buffer_checks
  integer(c_int), parameter :: WEAVE_CHECK_TYPES = 1
  integer(c_int), parameter :: WEAVE_CHECK_ELEMENTS = 2
end module weave_constants
