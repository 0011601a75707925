! Weave for Fortran: `use weave`.
!
! Every function of weave.h has a subroutine of the same name here, with
! Fortran types: handles are type(weave_grid_t), type(weave_matrix_t),
! type(weave_plan_t); communicators are `integer` (use mpi) or
! type(MPI_Comm) (use mpi_f08); host matrices are ordinary column-major
! real(4) or real(8) arrays of any rank; device buffers are type(c_ptr).
! Fortran has no FP8 type: FP8 matrices on the host are integer(int8)
! arrays holding the FP8 bytes (with real(4) scales and a real(4) C), and
! every other combination (bf16 or f16 C, device memory) passes type(c_ptr)
! addresses.
! The descriptor structs of weave.h are available as bind(C) types for code
! that prefers to fill them, and friendlier forms take optional arguments.
!
! Errors. Nothing here stops the program. Every subroutine reports its
! weave_status_t through `stat` (WEAVE_SUCCESS = 0); weave_last_error()
! returns the message. `stat` is required where ignoring a failure would let
! the program go on with a handle that does not exist or an output that was
! not computed: creating grids, matrices and plans, and executing. It is
! optional for queries, destroy and write_trace; when it is absent and the
! call fails, outputs are set to zero, "" or a null handle and the message
! waits in weave_last_error().
!
! Collective subroutines (weave_grid_create, weave_matrix_create,
! weave_plan_create, weave_execute, weave_execute_ex) must be called by every
! rank of the grid (of the operation's group for execute); they fail on every
! rank together.
module weave
  use, intrinsic :: iso_c_binding, only: c_ptr, c_null_ptr, c_int, c_int8_t, c_int32_t, c_int64_t, c_float, c_double, &
    c_float_complex, c_double_complex, c_loc
  use weave_constants
  use weave_types
  use weave_c_api
#if WEAVE_FORTRAN_HAVE_MPI_F08
  use mpi_f08, only: MPI_Comm
#endif
  implicit none
  private

  ! --- types ---------------------------------------------------------------
  public :: weave_grid_t, weave_matrix_t, weave_plan_t
  public :: weave_matrix_desc_t, weave_plan_desc_t, weave_execute_args_t, weave_plan_info_t

  ! --- procedures ----------------------------------------------------------
  public :: weave_status_string, weave_last_error, weave_get_version, weave_build_features
  public :: weave_report_argument_error
  public :: weave_dtype_size
  public :: weave_grid_create, weave_grid_destroy, weave_grid_shape, weave_grid_coords
  public :: weave_grid_group, weave_grid_group_comm
  public :: weave_matrix_create, weave_matrix_destroy, weave_matrix_local_shape
  public :: weave_matrix_local_offset, weave_matrix_ld, weave_matrix_local_elements
  public :: weave_plan_create, weave_plan_destroy, weave_plan_describe, weave_plan_get_info
  public :: weave_execute, weave_execute_ex, weave_plan_write_trace

  ! --- constants (weave_constants) -------------------------------------------
  public :: WEAVE_VERSION_MAJOR, WEAVE_VERSION_MINOR, WEAVE_VERSION_PATCH
  public :: WEAVE_SUCCESS, WEAVE_ERROR_NULL_ARGUMENT, WEAVE_ERROR_INVALID_VALUE, WEAVE_ERROR_INVALID_COUNTS
  public :: WEAVE_ERROR_INVALID_LEADING_DIMENSION, WEAVE_ERROR_SHAPE_MISMATCH
  public :: WEAVE_ERROR_DISTRIBUTION_MISMATCH, WEAVE_ERROR_UNSUPPORTED_TYPE, WEAVE_ERROR_RANK_MISMATCH
  public :: WEAVE_ERROR_NOT_COMPILED, WEAVE_ERROR_UNSUPPORTED, WEAVE_ERROR_POINTER_KIND, WEAVE_ERROR_TIMEOUT
  public :: WEAVE_ERROR_OUT_OF_MEMORY, WEAVE_ERROR_MPI, WEAVE_ERROR_CUDA, WEAVE_ERROR_CUBLAS
  public :: WEAVE_ERROR_NCCL, WEAVE_ERROR_UCX, WEAVE_ERROR_PLAN_FAILED, WEAVE_ERROR_INTERNAL
  public :: WEAVE_FLOAT32, WEAVE_FLOAT64, WEAVE_FLOAT16, WEAVE_BFLOAT16, WEAVE_FLOAT8_E4M3, WEAVE_FLOAT8_E5M2
  public :: WEAVE_COMPLEX64, WEAVE_COMPLEX128
  public :: WEAVE_SCALE_NONE, WEAVE_SCALE_TENSOR, WEAVE_SCALE_ROW_WISE, WEAVE_SCALE_BLOCK_1X128
  public :: WEAVE_SCALE_BLOCK_128X128, WEAVE_SCALE_MXFP8
  public :: WEAVE_DIST_REPLICATED, WEAVE_DIST_BLOCK_ROW, WEAVE_DIST_BLOCK_COLUMN, WEAVE_DIST_BLOCK_2D
  public :: WEAVE_DIST_BLOCK_CYCLIC
  public :: WEAVE_GROUP_GRID, WEAVE_GROUP_ROW, WEAVE_GROUP_COLUMN
  public :: WEAVE_ORDER_COLUMN_MAJOR, WEAVE_ORDER_ROW_MAJOR
  public :: WEAVE_MEMORY_HOST, WEAVE_MEMORY_DEVICE
  public :: WEAVE_OP_N, WEAVE_OP_T, WEAVE_OP_C
  public :: WEAVE_AG_GEMM, WEAVE_GEMM_RS, WEAVE_GEMM_AR, WEAVE_GEMM
  public :: WEAVE_ALGORITHM_AUTO, WEAVE_ALGORITHM_RING, WEAVE_ALGORITHM_SEQUENTIAL, &
    WEAVE_ALGORITHM_DIRECT, WEAVE_ALGORITHM_PIPELINED, WEAVE_ALGORITHM_HIERARCHICAL, &
    WEAVE_ALGORITHM_SUMMA
  public :: WEAVE_BACKEND_AUTO, WEAVE_BACKEND_HOST, WEAVE_BACKEND_CUDA
  public :: WEAVE_TRANSPORT_AUTO, WEAVE_TRANSPORT_MPI, WEAVE_TRANSPORT_NCCL, WEAVE_TRANSPORT_UCX
  public :: WEAVE_TRANSPORT_COPY_ENGINE, WEAVE_TRANSPORT_SM
  public :: WEAVE_DIRECTION_AUTO, WEAVE_DIRECTION_FORWARD, WEAVE_DIRECTION_BACKWARD
  public :: WEAVE_DIRECTION_BIDIRECTIONAL
  public :: WEAVE_PROGRESS_AUTO, WEAVE_PROGRESS_TILES, WEAVE_PROGRESS_THREAD
  public :: WEAVE_FLAG_NONE, WEAVE_FLAG_ALLOW_TF32, WEAVE_FLAG_GATHERED_OUTPUT
  public :: WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE, WEAVE_FLAG_TRACE, WEAVE_FLAG_NO_EXECUTE_CHECK, &
    WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE
  public :: WEAVE_CHECK_TYPES, WEAVE_CHECK_ELEMENTS

  ! --- generic interfaces ------------------------------------------------------
  ! The communicator as `integer` (use mpi) or type(MPI_Comm) (use mpi_f08).
  interface weave_grid_create
    module procedure grid_create_integer_comm
#if WEAVE_FORTRAN_HAVE_MPI_F08
    module procedure grid_create_mpi_f08
#endif
  end interface weave_grid_create

  interface weave_grid_group_comm
    module procedure grid_group_comm_integer
#if WEAVE_FORTRAN_HAVE_MPI_F08
    module procedure grid_group_comm_mpi_f08
#endif
  end interface weave_grid_group_comm

  ! From a filled weave_matrix_desc_t, or from arguments: sizes either all
  ! default integer or all integer(int64).
  interface weave_matrix_create
    module procedure matrix_create_from_desc
    module procedure matrix_create_default_integer
    module procedure matrix_create_int64
  end interface weave_matrix_create

  ! From a filled weave_plan_desc_t, or from arguments.
  interface weave_plan_create
    module procedure plan_create_from_desc
    module procedure plan_create_from_arguments
  end interface weave_plan_create

  ! Host arrays (real(4), real(8), complex(4) or complex(8), any rank; FP8
  ! as integer(int8) with a real(4) C), or addresses (device memory, and
  ! 16-bit C).
  interface weave_execute
    module procedure execute_real64
    module procedure execute_real32
    module procedure execute_complex128
    module procedure execute_complex64
    module procedure execute_float8_real32
    module procedure execute_address_alpha_real64
    module procedure execute_address_alpha_real32
  end interface weave_execute


contains

  ! ===========================================================================
  ! Status, errors, library
  ! ===========================================================================

  ! The name of a status code, e.g. "WEAVE_ERROR_INVALID_COUNTS".
  function weave_status_string(status) result(name)
    integer, intent(in) :: status
    character(len=:), allocatable :: name
    name = fortran_string(c_weave_status_string(int(status, c_int)))
  end function weave_status_string

  ! The message of the last failed Weave call on this thread ("" if none).
  function weave_last_error() result(message)
    character(len=:), allocatable :: message
    message = fortran_string(c_weave_last_error())
  end function weave_last_error

  ! For wrappers that check what the library cannot see: an error this rank
  ! found in the arguments of the collective call it makes next on this
  ! thread, which then fails on every rank of the call with the lowest
  ! failing rank's status and message (weave.h says more). Not collective.
  subroutine weave_report_argument_error(status, message, stat)
    integer, intent(in) :: status
    character(len=*), intent(in) :: message
    integer, intent(out), optional :: stat
    call finish(c_weave_report_argument_error(int(status, c_int), c_string(message)), stat)
  end subroutine weave_report_argument_error

  ! What this build of the library contains, e.g. "host,mpi,kokkos-4.3.1".
  function weave_build_features() result(features)
    character(len=:), allocatable :: features
    features = fortran_string(c_weave_build_features())
  end function weave_build_features

  ! Bytes per element of an element type (WEAVE_FLOAT32, ..., WEAVE_FLOAT8_E4M3:
  ! 1); 0 for a value that is no type. For sizing type(c_ptr) buffers.
  function weave_dtype_size(dtype) result(bytes)
    integer, intent(in) :: dtype
    integer(c_int64_t) :: bytes
    bytes = int(c_weave_dtype_size(int(dtype, c_int)), c_int64_t)
  end function weave_dtype_size

  ! The library's version (WEAVE_VERSION_* are the headers' version).
  subroutine weave_get_version(major, minor, patch, stat)
    integer, intent(out) :: major, minor, patch
    integer, intent(out), optional :: stat
    integer(c_int) :: status, c_major, c_minor, c_patch
    status = c_weave_get_version(c_major, c_minor, c_patch)
    if (status /= WEAVE_SUCCESS) then
      c_major = 0
      c_minor = 0
      c_patch = 0
    end if
    major = c_major
    minor = c_minor
    patch = c_patch
    call finish(status, stat)
  end subroutine weave_get_version

  ! ===========================================================================
  ! Grid
  ! ===========================================================================

  ! Collective over comm, which is duplicated. prows * pcols = its size.
  subroutine grid_create_integer_comm(comm, prows, pcols, grid, stat)
    integer, intent(in) :: comm
    integer, intent(in) :: prows, pcols
    type(weave_grid_t), intent(out) :: grid
    integer, intent(out) :: stat
    integer(c_int) :: status
    status = c_weave_grid_create_fortran(int(comm, c_int), int(prows, c_int), int(pcols, c_int), grid%handle)
    if (status /= WEAVE_SUCCESS) grid%handle = c_null_ptr
    call finish(status, stat)
  end subroutine grid_create_integer_comm

#if WEAVE_FORTRAN_HAVE_MPI_F08
  subroutine grid_create_mpi_f08(comm, prows, pcols, grid, stat)
    type(MPI_Comm), intent(in) :: comm
    integer, intent(in) :: prows, pcols
    type(weave_grid_t), intent(out) :: grid
    integer, intent(out) :: stat
    call grid_create_integer_comm(comm%MPI_VAL, prows, pcols, grid, stat)
  end subroutine grid_create_mpi_f08
#endif

  ! Not collective. Plans created from the grid stay valid. Nulls the handle.
  subroutine weave_grid_destroy(grid, stat)
    type(weave_grid_t), intent(inout) :: grid
    integer, intent(out), optional :: stat
    integer(c_int) :: status
    status = c_weave_grid_destroy(grid%handle)
    grid%handle = c_null_ptr
    call finish(status, stat)
  end subroutine weave_grid_destroy

  subroutine weave_grid_shape(grid, prows, pcols, stat)
    type(weave_grid_t), intent(in) :: grid
    integer, intent(out) :: prows, pcols
    integer, intent(out), optional :: stat
    integer(c_int) :: status, c_prows, c_pcols
    status = c_weave_grid_shape(grid%handle, c_prows, c_pcols)
    if (status /= WEAVE_SUCCESS) then
      c_prows = 0
      c_pcols = 0
    end if
    prows = c_prows
    pcols = c_pcols
    call finish(status, stat)
  end subroutine weave_grid_shape

  ! This rank's grid row and column (0-based, as in C).
  subroutine weave_grid_coords(grid, row, col, stat)
    type(weave_grid_t), intent(in) :: grid
    integer, intent(out) :: row, col
    integer, intent(out), optional :: stat
    integer(c_int) :: status, c_row, c_col
    status = c_weave_grid_coords(grid%handle, c_row, c_col)
    if (status /= WEAVE_SUCCESS) then
      c_row = 0
      c_col = 0
    end if
    row = c_row
    col = c_col
    call finish(status, stat)
  end subroutine weave_grid_coords

  ! Size of, and this rank's index (0-based) in, one of its groups.
  subroutine weave_grid_group(grid, group, size, rank, stat)
    type(weave_grid_t), intent(in) :: grid
    integer, intent(in) :: group
    integer, intent(out) :: size, rank
    integer, intent(out), optional :: stat
    integer(c_int) :: status, c_size, c_rank
    status = c_weave_grid_group(grid%handle, int(group, c_int), c_size, c_rank)
    if (status /= WEAVE_SUCCESS) then
      c_size = 0
      c_rank = 0
    end if
    size = c_size
    rank = c_rank
    call finish(status, stat)
  end subroutine weave_grid_group

  ! The (duplicated) communicator of a group, owned by the grid: do not free
  ! it. MPI_COMM_NULL on failure.
  subroutine grid_group_comm_integer(grid, group, comm, stat)
    type(weave_grid_t), intent(in) :: grid
    integer, intent(in) :: group
    integer, intent(out) :: comm
    integer, intent(out), optional :: stat
    integer(c_int) :: status, c_comm
    status = c_weave_grid_group_comm_fortran(grid%handle, int(group, c_int), c_comm)
    comm = c_comm
    call finish(status, stat)
  end subroutine grid_group_comm_integer

#if WEAVE_FORTRAN_HAVE_MPI_F08
  subroutine grid_group_comm_mpi_f08(grid, group, comm, stat)
    type(weave_grid_t), intent(in) :: grid
    integer, intent(in) :: group
    type(MPI_Comm), intent(out) :: comm
    integer, intent(out), optional :: stat
    call grid_group_comm_integer(grid, group, comm%MPI_VAL, stat)
  end subroutine grid_group_comm_mpi_f08
#endif

  ! ===========================================================================
  ! Matrix descriptors
  ! ===========================================================================

  ! Collective over the grid. desc%row_counts / desc%col_counts, if set, are
  ! c_loc of integer(c_int64_t) arrays with one entry per part.
  subroutine matrix_create_from_desc(grid, desc, matrix, stat)
    type(weave_grid_t), intent(in) :: grid
    type(weave_matrix_desc_t), intent(in), target :: desc
    type(weave_matrix_t), intent(out) :: matrix
    integer, intent(out) :: stat
    integer(c_int) :: status
    status = c_weave_matrix_create(grid%handle, c_loc(desc), matrix%handle)
    if (status /= WEAVE_SUCCESS) matrix%handle = c_null_ptr
    call finish(status, stat)
  end subroutine matrix_create_from_desc

  ! Collective over the grid. Absent optional arguments take the C defaults:
  ! balanced counts, tight ld, the whole grid, column-major, host memory,
  ! no scale mode (FP8 types need one). WEAVE_DIST_BLOCK_CYCLIC takes mb, nb (required there), rsrc, csrc
  ! (default 0: grid row and column 0 hold the first block) as ScaLAPACK's
  ! descriptor does; a submatrix start is set through the descriptor form.
  subroutine matrix_create_default_integer(grid, rows, cols, dtype, distribution, matrix, stat, &
                                           row_counts, col_counts, ld, group, order, memory, scale_mode, mb, nb, rsrc, csrc)
    type(weave_grid_t), intent(in) :: grid
    integer, intent(in) :: rows, cols
    integer, intent(in) :: dtype, distribution
    type(weave_matrix_t), intent(out) :: matrix
    integer, intent(out) :: stat
    integer, intent(in), optional :: row_counts(:), col_counts(:)
    integer, intent(in), optional :: ld
    integer, intent(in), optional :: group, order, memory, scale_mode
    integer, intent(in), optional :: mb, nb, rsrc, csrc
    integer(c_int64_t), allocatable :: row_counts64(:), col_counts64(:)
    integer(c_int64_t) :: ld64

    if (present(row_counts)) row_counts64 = int(row_counts, c_int64_t)
    if (present(col_counts)) col_counts64 = int(col_counts, c_int64_t)
    ld64 = 0
    if (present(ld)) ld64 = ld
    call create_matrix(grid, int(rows, c_int64_t), int(cols, c_int64_t), dtype, distribution, matrix, stat, &
                       row_counts64, col_counts64, ld64, value_or_zero(group), value_or_zero(order), &
                       value_or_zero(memory), value_or_zero(scale_mode), int(value_or_zero(mb), c_int64_t), &
                       int(value_or_zero(nb), c_int64_t), value_or_zero(rsrc), value_or_zero(csrc))
  end subroutine matrix_create_default_integer

  subroutine matrix_create_int64(grid, rows, cols, dtype, distribution, matrix, stat, &
                                 row_counts, col_counts, ld, group, order, memory, scale_mode, mb, nb, rsrc, csrc)
    type(weave_grid_t), intent(in) :: grid
    integer(c_int64_t), intent(in) :: rows, cols
    integer, intent(in) :: dtype, distribution
    type(weave_matrix_t), intent(out) :: matrix
    integer, intent(out) :: stat
    integer(c_int64_t), intent(in), optional :: row_counts(:), col_counts(:)
    integer(c_int64_t), intent(in), optional :: ld
    integer, intent(in), optional :: group, order, memory, scale_mode
    integer(c_int64_t), intent(in), optional :: mb, nb
    integer, intent(in), optional :: rsrc, csrc
    integer(c_int64_t), allocatable :: row_counts64(:), col_counts64(:)
    integer(c_int64_t) :: ld64, mb64, nb64

    if (present(row_counts)) row_counts64 = row_counts
    if (present(col_counts)) col_counts64 = col_counts
    ld64 = 0
    if (present(ld)) ld64 = ld
    mb64 = 0
    if (present(mb)) mb64 = mb
    nb64 = 0
    if (present(nb)) nb64 = nb
    call create_matrix(grid, rows, cols, dtype, distribution, matrix, stat, row_counts64, col_counts64, ld64, &
                       value_or_zero(group), value_or_zero(order), value_or_zero(memory), value_or_zero(scale_mode), &
                       mb64, nb64, value_or_zero(rsrc), value_or_zero(csrc))
  end subroutine matrix_create_int64

  ! The common part of the argument forms. The C API reads one count per
  ! part through a bare pointer, so the length of a Fortran count array is
  ! checked here first. A rank that finds a wrong length still enters the
  ! collective call, having handed the library what it found
  ! (weave_report_argument_error): every rank then returns
  ! WEAVE_ERROR_INVALID_COUNTS with the lowest such rank's message, and no
  ! other rank is left waiting in it.
  subroutine create_matrix(grid, rows, cols, dtype, distribution, matrix, stat, row_counts, col_counts, ld, &
                           group, order, memory, scale_mode, mb, nb, rsrc, csrc)
    type(weave_grid_t), intent(in) :: grid
    integer(c_int64_t), intent(in) :: rows, cols
    integer, intent(in) :: dtype, distribution
    type(weave_matrix_t), intent(out) :: matrix
    integer, intent(out) :: stat
    integer(c_int64_t), allocatable, target, intent(in) :: row_counts(:), col_counts(:)
    integer(c_int64_t), intent(in) :: ld
    integer, intent(in) :: group, order, memory, scale_mode
    integer(c_int64_t), intent(in) :: mb, nb
    integer, intent(in) :: rsrc, csrc
    type(weave_matrix_desc_t), target :: desc
    character(len=:), allocatable :: problem
    integer :: row_parts, col_parts
    integer(c_int) :: status

    call count_lengths(grid, distribution, group, row_parts, col_parts)
    problem = length_problem("row_counts", row_counts, row_parts, distribution)
    if (len(problem) == 0) problem = length_problem("col_counts", col_counts, col_parts, distribution)
    if (len(problem) > 0) then
      status = c_weave_report_argument_error(int(WEAVE_ERROR_INVALID_COUNTS, c_int), &
                                             c_string("weave_matrix_create: " // problem))
      status = c_weave_matrix_create(grid%handle, c_null_ptr, matrix%handle)
      matrix%handle = c_null_ptr
      call finish(status, stat)
      return
    end if

    desc%rows = rows
    desc%cols = cols
    desc%dtype = int(dtype, c_int)
    desc%distribution = int(distribution, c_int)
    desc%group = int(group, c_int)
    if (allocated(row_counts)) desc%row_counts = c_loc(row_counts)
    if (allocated(col_counts)) desc%col_counts = c_loc(col_counts)
    desc%ld = ld
    desc%order = int(order, c_int)
    desc%memory = int(memory, c_int)
    desc%scale_mode = int(scale_mode, c_int)
    desc%mb = mb
    desc%nb = nb
    desc%rsrc = int(rsrc, c_int32_t)
    desc%csrc = int(csrc, c_int32_t)
    status = c_weave_matrix_create(grid%handle, c_loc(desc), matrix%handle)
    if (status /= WEAVE_SUCCESS) matrix%handle = c_null_ptr
    call finish(status, stat)
  end subroutine create_matrix

  ! How many entries row_counts and col_counts need for a distribution: one
  ! per rank of the matrix's group (BLOCK_ROW rows, BLOCK_COLUMN columns), one
  ! per grid row / grid column (BLOCK_2D); 0 where the dimension is not split
  ! (the library rejects counts there); -1 where an invalid argument makes the
  ! number unknown (the library reports that argument).
  subroutine count_lengths(grid, distribution, group, row_parts, col_parts)
    type(weave_grid_t), intent(in) :: grid
    integer, intent(in) :: distribution, group
    integer, intent(out) :: row_parts, col_parts
    integer(c_int) :: size, rank, prows, pcols

    row_parts = -1
    col_parts = -1
    select case (distribution)
    case (WEAVE_DIST_REPLICATED)
      row_parts = 0
      col_parts = 0
    case (WEAVE_DIST_BLOCK_ROW, WEAVE_DIST_BLOCK_COLUMN)
      if (c_weave_grid_group(grid%handle, int(group, c_int), size, rank) /= WEAVE_SUCCESS) return
      row_parts = 0
      col_parts = 0
      if (distribution == WEAVE_DIST_BLOCK_ROW) row_parts = size
      if (distribution == WEAVE_DIST_BLOCK_COLUMN) col_parts = size
    case (WEAVE_DIST_BLOCK_2D)
      if (c_weave_grid_shape(grid%handle, prows, pcols) /= WEAVE_SUCCESS) return
      row_parts = prows
      col_parts = pcols
    end select
  end subroutine count_lengths

  ! "" when a count array fits, else what is wrong with it.
  function length_problem(name, counts, parts, distribution) result(problem)
    character(len=*), intent(in) :: name
    integer(c_int64_t), allocatable, intent(in) :: counts(:)
    integer, intent(in) :: parts, distribution
    character(len=:), allocatable :: problem
    character(len=24) :: have, need

    problem = ""
    if (.not. allocated(counts) .or. parts <= 0) return
    if (size(counts) == parts) return
    write (have, '(i0)') size(counts)
    write (need, '(i0)') parts
    if (distribution == WEAVE_DIST_BLOCK_2D .and. name == "row_counts") then
      problem = name // " has " // trim(have) // " entries but a BLOCK_2D matrix needs " // trim(need) // &
                " (one per grid row)"
    else if (distribution == WEAVE_DIST_BLOCK_2D) then
      problem = name // " has " // trim(have) // " entries but a BLOCK_2D matrix needs " // trim(need) // &
                " (one per grid column)"
    else
      problem = name // " has " // trim(have) // " entries but this matrix is split over " // trim(need) // &
                " ranks (its group); pass one count per rank"
    end if
  end function length_problem

  ! Not collective. Plans created with the matrix stay valid. Nulls the handle.
  subroutine weave_matrix_destroy(matrix, stat)
    type(weave_matrix_t), intent(inout) :: matrix
    integer, intent(out), optional :: stat
    integer(c_int) :: status
    status = c_weave_matrix_destroy(matrix%handle)
    matrix%handle = c_null_ptr
    call finish(status, stat)
  end subroutine weave_matrix_destroy

  ! This rank's block: rows x cols.
  subroutine weave_matrix_local_shape(matrix, rows, cols, stat)
    type(weave_matrix_t), intent(in) :: matrix
    integer(c_int64_t), intent(out) :: rows, cols
    integer, intent(out), optional :: stat
    integer(c_int) :: status
    status = c_weave_matrix_local_shape(matrix%handle, rows, cols)
    if (status /= WEAVE_SUCCESS) then
      rows = 0
      cols = 0
    end if
    call finish(status, stat)
  end subroutine weave_matrix_local_shape

  ! Where this rank's block starts in the global matrix (0-based offsets).
  subroutine weave_matrix_local_offset(matrix, row_offset, col_offset, stat)
    type(weave_matrix_t), intent(in) :: matrix
    integer(c_int64_t), intent(out) :: row_offset, col_offset
    integer, intent(out), optional :: stat
    integer(c_int) :: status
    status = c_weave_matrix_local_offset(matrix%handle, row_offset, col_offset)
    if (status /= WEAVE_SUCCESS) then
      row_offset = 0
      col_offset = 0
    end if
    call finish(status, stat)
  end subroutine weave_matrix_local_offset

  subroutine weave_matrix_ld(matrix, ld, stat)
    type(weave_matrix_t), intent(in) :: matrix
    integer(c_int64_t), intent(out) :: ld
    integer, intent(out), optional :: stat
    integer(c_int) :: status
    status = c_weave_matrix_ld(matrix%handle, ld)
    if (status /= WEAVE_SUCCESS) ld = 0
    call finish(status, stat)
  end subroutine weave_matrix_ld

  ! Elements to allocate for this rank's block.
  subroutine weave_matrix_local_elements(matrix, elements, stat)
    type(weave_matrix_t), intent(in) :: matrix
    integer(c_int64_t), intent(out) :: elements
    integer, intent(out), optional :: stat
    integer(c_int) :: status
    status = c_weave_matrix_local_elements(matrix%handle, elements)
    if (status /= WEAVE_SUCCESS) elements = 0
    call finish(status, stat)
  end subroutine weave_matrix_local_elements

  ! ===========================================================================
  ! Plans
  ! ===========================================================================

  ! Collective over the grid.
  subroutine plan_create_from_desc(grid, desc, plan, stat)
    type(weave_grid_t), intent(in) :: grid
    type(weave_plan_desc_t), intent(in) :: desc
    type(weave_plan_t), intent(out) :: plan
    integer, intent(out) :: stat
    integer(c_int) :: status
    status = c_weave_plan_create(grid%handle, desc, plan%handle)
    if (status /= WEAVE_SUCCESS) plan%handle = c_null_ptr
    call finish(status, stat)
  end subroutine plan_create_from_desc

  ! Collective over the grid. Absent optional arguments mean "default" or
  ! "automatic", as zero fields of weave_plan_desc_t do.
  subroutine plan_create_from_arguments(grid, operation, a, b, c, plan, stat, bias, op_a, op_b, group, &
                                        algorithm, backend, transport, direction, chunks_per_shard, &
                                        compute_streams, progress, timeout_ms, flags, wire_type)
    type(weave_grid_t), intent(in) :: grid
    integer, intent(in) :: operation
    type(weave_matrix_t), intent(in) :: a, b, c
    type(weave_plan_t), intent(out) :: plan
    integer, intent(out) :: stat
    type(weave_matrix_t), intent(in), optional :: bias
    integer, intent(in), optional :: op_a, op_b, group, algorithm, backend, transport, direction
    integer, intent(in), optional :: chunks_per_shard, compute_streams, progress, timeout_ms, flags, wire_type
    type(weave_plan_desc_t) :: desc

    desc%operation = int(operation, c_int)
    desc%a = a
    desc%b = b
    desc%c = c
    if (present(bias)) desc%bias = bias
    desc%op_a = value_or_zero(op_a)
    desc%op_b = value_or_zero(op_b)
    desc%group = value_or_zero(group)
    desc%algorithm = value_or_zero(algorithm)
    desc%backend = value_or_zero(backend)
    desc%transport = value_or_zero(transport)
    desc%direction = value_or_zero(direction)
    desc%chunks_per_shard = value_or_zero(chunks_per_shard)
    desc%compute_streams = value_or_zero(compute_streams)
    desc%progress = value_or_zero(progress)
    desc%timeout_ms = value_or_zero(timeout_ms)
    desc%flags = value_or_zero(flags)
    desc%wire_type = value_or_zero(wire_type)
    call plan_create_from_desc(grid, desc, plan, stat)
  end subroutine plan_create_from_arguments

  ! Not collective. Nulls the handle.
  subroutine weave_plan_destroy(plan, stat)
    type(weave_plan_t), intent(inout) :: plan
    integer, intent(out), optional :: stat
    integer(c_int) :: status
    status = c_weave_plan_destroy(plan%handle)
    plan%handle = c_null_ptr
    call finish(status, stat)
  end subroutine weave_plan_destroy

  ! One line saying what the plan will do.
  subroutine weave_plan_describe(plan, text, stat)
    type(weave_plan_t), intent(in) :: plan
    character(len=:), allocatable, intent(out) :: text
    integer, intent(out), optional :: stat
    type(c_ptr) :: c_text
    integer(c_int) :: status
    status = c_weave_plan_describe(plan%handle, c_text)
    if (status /= WEAVE_SUCCESS) c_text = c_null_ptr
    text = fortran_string(c_text)
    call finish(status, stat)
  end subroutine weave_plan_describe

  ! What the plan resolved its automatic choices to.
  subroutine weave_plan_get_info(plan, info, stat)
    type(weave_plan_t), intent(in) :: plan
    type(weave_plan_info_t), intent(out) :: info
    integer, intent(out), optional :: stat
    integer(c_int) :: status
    info = weave_plan_info_t()  ! struct_size set, every other field zero
    status = c_weave_plan_get_info(plan%handle, info)
    if (status /= WEAVE_SUCCESS) info = weave_plan_info_t()
    call finish(status, stat)
  end subroutine weave_plan_get_info

  ! Write the trace of the last execute (plan created with WEAVE_FLAG_TRACE)
  ! as Chrome trace JSON; "%r" in path becomes the rank in the grid.
  subroutine weave_plan_write_trace(plan, path, stat)
    type(weave_plan_t), intent(in) :: plan
    character(len=*), intent(in) :: path
    integer, intent(out), optional :: stat
    call finish(c_weave_plan_write_trace(plan%handle, c_string(path)), stat)
  end subroutine weave_plan_write_trace

  ! ===========================================================================
  ! Execute
  ! ===========================================================================
  ! C <- alpha * product + beta * C + bias, collective over the operation's
  ! group. Host arrays are this rank's local blocks, stored as their matrix
  ! descriptors say (column-major with the descriptor's ld by default); pass
  ! contiguous arrays (a non-contiguous section is copied in and out). A rank
  ! whose block is empty may pass a zero-size array. bias must be present
  ! exactly when the plan has one. gathered_a (WEAVE_FLAG_GATHERED_OUTPUT)
  ! receives the gathered A.

  subroutine execute_real64(plan, alpha, a, b, beta, c, stat, bias, gathered_a, ld_gathered_a)
    type(weave_plan_t), intent(in) :: plan
    real(c_double), intent(in) :: alpha, beta
    real(c_double), intent(in), target, contiguous :: a(..), b(..)
    real(c_double), intent(inout), target, contiguous :: c(..)
    integer, intent(out) :: stat
    real(c_double), intent(in), target, contiguous, optional :: bias(..)
    real(c_double), intent(inout), target, contiguous, optional :: gathered_a(..)
    integer(c_int64_t), intent(in), optional :: ld_gathered_a
    type(weave_execute_args_t) :: args

    args%alpha = alpha
    args%beta = beta
    call execute_arrays(plan, args, WEAVE_FLOAT64, a, b, c, stat, bias, gathered_a, ld_gathered_a)
  end subroutine execute_real64

  subroutine execute_real32(plan, alpha, a, b, beta, c, stat, bias, gathered_a, ld_gathered_a)
    type(weave_plan_t), intent(in) :: plan
    real(c_float), intent(in) :: alpha, beta
    real(c_float), intent(in), target, contiguous :: a(..), b(..)
    real(c_float), intent(inout), target, contiguous :: c(..)
    integer, intent(out) :: stat
    real(c_float), intent(in), target, contiguous, optional :: bias(..)
    real(c_float), intent(inout), target, contiguous, optional :: gathered_a(..)
    integer(c_int64_t), intent(in), optional :: ld_gathered_a
    type(weave_execute_args_t) :: args

    args%alpha = alpha
    args%beta = beta
    call execute_arrays(plan, args, WEAVE_FLOAT32, a, b, c, stat, bias, gathered_a, ld_gathered_a)
  end subroutine execute_real32

  ! Complex arrays (complex(8), complex(4)) with complex alpha and beta,
  ! which travel in args%alpha, args%alpha_imag, args%beta, args%beta_imag.
  subroutine execute_complex128(plan, alpha, a, b, beta, c, stat, bias, gathered_a, ld_gathered_a)
    type(weave_plan_t), intent(in) :: plan
    complex(c_double_complex), intent(in) :: alpha, beta
    complex(c_double_complex), intent(in), target, contiguous :: a(..), b(..)
    complex(c_double_complex), intent(inout), target, contiguous :: c(..)
    integer, intent(out) :: stat
    complex(c_double_complex), intent(in), target, contiguous, optional :: bias(..)
    complex(c_double_complex), intent(inout), target, contiguous, optional :: gathered_a(..)
    integer(c_int64_t), intent(in), optional :: ld_gathered_a
    type(weave_execute_args_t) :: args

    args%alpha = real(alpha, c_double)
    args%alpha_imag = aimag(alpha)
    args%beta = real(beta, c_double)
    args%beta_imag = aimag(beta)
    call execute_arrays(plan, args, WEAVE_COMPLEX128, a, b, c, stat, bias, gathered_a, ld_gathered_a)
  end subroutine execute_complex128

  subroutine execute_complex64(plan, alpha, a, b, beta, c, stat, bias, gathered_a, ld_gathered_a)
    type(weave_plan_t), intent(in) :: plan
    complex(c_float_complex), intent(in) :: alpha, beta
    complex(c_float_complex), intent(in), target, contiguous :: a(..), b(..)
    complex(c_float_complex), intent(inout), target, contiguous :: c(..)
    integer, intent(out) :: stat
    complex(c_float_complex), intent(in), target, contiguous, optional :: bias(..)
    complex(c_float_complex), intent(inout), target, contiguous, optional :: gathered_a(..)
    integer(c_int64_t), intent(in), optional :: ld_gathered_a
    type(weave_execute_args_t) :: args

    args%alpha = real(alpha, c_double)
    args%alpha_imag = real(aimag(alpha), c_double)
    args%beta = real(beta, c_double)
    args%beta_imag = real(aimag(beta), c_double)
    call execute_arrays(plan, args, WEAVE_COMPLEX64, a, b, c, stat, bias, gathered_a, ld_gathered_a)
  end subroutine execute_complex64

  ! What the typed executes share once they have set the scalars: the
  ! arrays' addresses, and their element type and sizes for the library to
  ! check (the typed interfaces above guarantee the type).
  subroutine execute_arrays(plan, args, dtype, a, b, c, stat, bias, gathered_a, ld_gathered_a)
    type(weave_plan_t), intent(in) :: plan
    type(weave_execute_args_t), intent(inout) :: args
    integer(c_int), intent(in) :: dtype
    type(*), intent(in), target, contiguous :: a(..), b(..)
    type(*), intent(inout), target, contiguous :: c(..)
    integer, intent(out) :: stat
    type(*), intent(in), target, contiguous, optional :: bias(..)
    type(*), intent(inout), target, contiguous, optional :: gathered_a(..)
    integer(c_int64_t), intent(in), optional :: ld_gathered_a

    args%a = address_of(a)
    args%b = address_of(b)
    args%c = address_of(c)
    call set_buffer_checks(args, dtype, size(a, kind=c_int64_t), size(b, kind=c_int64_t), size(c, kind=c_int64_t))
    if (present(bias)) then
      args%bias = address_of(bias)
      args%bias_elements = size(bias, kind=c_int64_t)
    end if
    if (present(gathered_a)) then
      args%gathered_a = address_of(gathered_a)
      args%gathered_a_elements = size(gathered_a, kind=c_int64_t)
    end if
    if (present(ld_gathered_a)) args%ld_gathered_a = ld_gathered_a
    call weave_execute_ex(plan, args, stat)
  end subroutine execute_arrays

  ! Buffers by address: device memory (a device plan enqueues on stream, a
  ! cudaStream_t, and returns at once), or host memory through c_loc.
  ! FP8 operands take their scales as a_scale, b_scale (and gathered_a_scale
  ! with the gathered output), addresses of float32 arrays.
  subroutine execute_address_alpha_real64(plan, alpha, a, b, beta, c, stat, bias, stream, gathered_a, &
                                          ld_gathered_a, a_scale, b_scale, gathered_a_scale)
    type(weave_plan_t), intent(in) :: plan
    real(c_double), intent(in) :: alpha, beta
    type(c_ptr), intent(in) :: a, b, c
    integer, intent(out) :: stat
    type(c_ptr), intent(in), optional :: bias, stream, gathered_a
    integer(c_int64_t), intent(in), optional :: ld_gathered_a
    type(c_ptr), intent(in), optional :: a_scale, b_scale, gathered_a_scale
    type(weave_execute_args_t) :: args

    args%alpha = alpha
    args%beta = beta
    args%a = a
    args%b = b
    args%c = c
    if (present(bias)) args%bias = bias
    if (present(stream)) args%stream = stream
    if (present(gathered_a)) args%gathered_a = gathered_a
    if (present(ld_gathered_a)) args%ld_gathered_a = ld_gathered_a
    if (present(a_scale)) args%a_scale = a_scale
    if (present(b_scale)) args%b_scale = b_scale
    if (present(gathered_a_scale)) args%gathered_a_scale = gathered_a_scale
    call weave_execute_ex(plan, args, stat)
  end subroutine execute_address_alpha_real64

  ! As above with real(4) alpha and beta (for float32 data).
  subroutine execute_address_alpha_real32(plan, alpha, a, b, beta, c, stat, bias, stream, gathered_a, &
                                          ld_gathered_a, a_scale, b_scale, gathered_a_scale)
    type(weave_plan_t), intent(in) :: plan
    real(c_float), intent(in) :: alpha, beta
    type(c_ptr), intent(in) :: a, b, c
    integer, intent(out) :: stat
    type(c_ptr), intent(in), optional :: bias, stream, gathered_a
    integer(c_int64_t), intent(in), optional :: ld_gathered_a
    type(c_ptr), intent(in), optional :: a_scale, b_scale, gathered_a_scale
    call execute_address_alpha_real64(plan, real(alpha, c_double), a, b, real(beta, c_double), c, stat, &
                                      bias, stream, gathered_a, ld_gathered_a, a_scale, b_scale, gathered_a_scale)
  end subroutine execute_address_alpha_real32

  ! FP8 on the host: A and B (and the gathered A) hold FP8 bytes in
  ! integer(int8) arrays, their scales real(4) arrays laid out as doc/fp8.md
  ! says, C and bias real(4). The FP8 format is the plan's (e4m3 or e5m2);
  ! the arrays' sizes are checked against the plan on every rank.
  subroutine execute_float8_real32(plan, alpha, a, b, beta, c, stat, a_scale, b_scale, bias, gathered_a, &
                                   gathered_a_scale, ld_gathered_a)
    type(weave_plan_t), intent(in) :: plan
    real(c_float), intent(in) :: alpha, beta
    integer(c_int8_t), intent(in), target, contiguous :: a(..), b(..)
    real(c_float), intent(inout), target, contiguous :: c(..)
    integer, intent(out) :: stat
    real(c_float), intent(in), target, contiguous :: a_scale(..), b_scale(..)
    real(c_float), intent(in), target, contiguous, optional :: bias(..)
    integer(c_int8_t), intent(inout), target, contiguous, optional :: gathered_a(..)
    real(c_float), intent(inout), target, contiguous, optional :: gathered_a_scale(..)
    integer(c_int64_t), intent(in), optional :: ld_gathered_a
    type(weave_execute_args_t) :: args

    args%alpha = alpha
    args%beta = beta
    args%a = address_of(a)
    args%b = address_of(b)
    args%c = address_of(c)
    args%a_scale = address_of(a_scale)
    args%b_scale = address_of(b_scale)
    ! Types: C and bias are float32; the int8 arrays may be either FP8 format (0: not checked).
    call set_buffer_checks(args, WEAVE_FLOAT32, size(a, kind=c_int64_t), size(b, kind=c_int64_t), &
                           size(c, kind=c_int64_t))
    args%a_type = 0
    args%b_type = 0
    args%gathered_a_type = 0
    args%a_scale_elements = size(a_scale, kind=c_int64_t)
    args%b_scale_elements = size(b_scale, kind=c_int64_t)
    if (present(bias)) then
      args%bias = address_of(bias)
      args%bias_elements = size(bias, kind=c_int64_t)
    end if
    if (present(gathered_a)) then
      args%gathered_a = address_of(gathered_a)
      args%gathered_a_elements = size(gathered_a, kind=c_int64_t)
    end if
    if (present(gathered_a_scale)) then
      args%gathered_a_scale = address_of(gathered_a_scale)
      args%gathered_a_scale_elements = size(gathered_a_scale, kind=c_int64_t)
    end if
    if (present(ld_gathered_a)) args%ld_gathered_a = ld_gathered_a
    call weave_execute_ex(plan, args, stat)
  end subroutine execute_float8_real32

  ! The typed arrays' element type and sizes, which the library checks
  ! against the plan on every rank before anything is read or written.
  subroutine set_buffer_checks(args, dtype, a_elements, b_elements, c_elements)
    type(weave_execute_args_t), intent(inout) :: args
    integer(c_int), intent(in) :: dtype
    integer(c_int64_t), intent(in) :: a_elements, b_elements, c_elements
    args%buffer_checks = ior(WEAVE_CHECK_TYPES, WEAVE_CHECK_ELEMENTS)
    args%a_type = dtype
    args%b_type = dtype
    args%c_type = dtype
    args%bias_type = dtype
    args%gathered_a_type = dtype
    args%a_elements = a_elements
    args%b_elements = b_elements
    args%c_elements = c_elements
  end subroutine set_buffer_checks

  ! Every argument of weave_execute_ex in one struct.
  subroutine weave_execute_ex(plan, args, stat)
    type(weave_plan_t), intent(in) :: plan
    type(weave_execute_args_t), intent(in) :: args
    integer, intent(out) :: stat
    call finish(c_weave_execute_ex(plan%handle, args), stat)
  end subroutine weave_execute_ex

  ! ===========================================================================
  ! Helpers
  ! ===========================================================================

  ! Hands a status to the caller's stat (the message waits in
  ! weave_last_error()).
  subroutine finish(status, stat)
    integer(c_int), intent(in) :: status
    integer, intent(out), optional :: stat
    if (present(stat)) stat = status
  end subroutine finish

  ! An optional enumeration argument, or 0 ("default") when absent.
  pure function value_or_zero(value) result(resolved)
    integer, intent(in), optional :: value
    integer(c_int) :: resolved
    resolved = 0
    if (present(value)) resolved = int(value, c_int)
  end function value_or_zero

  ! The address of a contiguous host array, or null when it is empty (c_loc
  ! needs a nonzero size; the library accepts null for an empty block).
  ! The address of an array's first element, or null for an empty one.
  function address_of(x) result(address)
    type(*), intent(in), target, contiguous :: x(..)
    type(c_ptr) :: address
    address = c_null_ptr
    if (size(x) > 0) address = c_loc(x)
  end function address_of
end module weave
