! The Fortran module against the library, at any number of ranks: both
! communicator kinds, every argument form, real(4) and real(8) results
! against a reference computed here, and the error paths (exact status codes,
! messages, no hang when one rank alone passes a bad argument).
! Prints PASS or FAIL on rank 0 and fails the test on any failed check.
program fortran_binding_test
  use, intrinsic :: iso_c_binding, only: c_int64_t, c_loc, c_associated, c_null_ptr
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64, error_unit
  use mpi
#if WEAVE_FORTRAN_HAVE_MPI_F08
  use mpi_f08, only: MPI_Comm, MPI_COMM_WORLD_F08 => MPI_COMM_WORLD
#endif
  use weave
  implicit none

  integer :: rank, nranks, ierror, failures, all_failures

  call MPI_Init(ierror)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierror)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierror)
  failures = 0

  call test_library_queries()
  call test_grid_errors()
  call test_grids()
  call test_count_lengths()
  call test_queries_without_stat()
  call test_gemm_ar_real32()
  call test_gemm_rs_float8()
  call test_ag_gemm_real64_descriptors()
  call test_gemm_block_cyclic_complex128()
  call test_execute_errors()

  call MPI_Allreduce(failures, all_failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierror)
  if (rank == 0) print '(a, ": Fortran binding on ", i0, " ranks, ", i0, " failed checks")', &
    merge("PASS", "FAIL", all_failures == 0), nranks, all_failures
  call MPI_Finalize(ierror)
  if (all_failures /= 0) error stop 1

contains

  subroutine check(condition, what)
    logical, intent(in) :: condition
    character(len=*), intent(in) :: what
    if (.not. condition) then
      failures = failures + 1
      write (error_unit, '("rank ", i0, ": check failed: ", a, " (last error: ", a, ")")') rank, what, &
        weave_last_error()
    end if
  end subroutine check

  subroutine check_status(stat, expected, what)
    integer, intent(in) :: stat, expected
    character(len=*), intent(in) :: what
    call check(stat == expected, what // ": got " // weave_status_string(stat) // ", expected " // &
               weave_status_string(expected))
  end subroutine check_status

  ! Per-rank counts 1, 3, 5, ... except a rank of every three with none.
  function uneven_counts(offset) result(counts)
    integer, intent(in) :: offset
    integer :: counts(nranks), r
    do r = 0, nranks - 1
      counts(r + 1) = merge(0, 2 * r + offset, mod(r, 3) == 1)
    end do
  end function uneven_counts

  ! Matrix entries: multiples of 1/16 between -1.0625 and 1, never zero, and
  ! exactly representable, so a copied matrix can be compared bit for bit
  ! however the compiler evaluates this (a vectorised sin, say, would not be).
  pure real(real64) function entry(which, i, j)
    integer, intent(in) :: which, i, j
    entry = (real(mod(7 * which + 3 * i + 5 * j + 11 * i * j, 17), real64) - 8.5_real64) / 8
  end function entry

  subroutine test_library_queries()
    integer :: major, minor, patch, stat
    call weave_get_version(major, minor, patch, stat)
    call check_status(stat, WEAVE_SUCCESS, "weave_get_version")
    call check(major == WEAVE_VERSION_MAJOR .and. minor == WEAVE_VERSION_MINOR .and. &
               patch == WEAVE_VERSION_PATCH, "library version equals the module's WEAVE_VERSION_*")
    call check(index(weave_build_features(), "host") > 0, "weave_build_features names host")
    call check(weave_dtype_size(WEAVE_FLOAT8_E4M3) == 1 .and. weave_dtype_size(WEAVE_BFLOAT16) == 2 .and. &
               weave_dtype_size(WEAVE_FLOAT64) == 8 .and. weave_dtype_size(0) == 0, "weave_dtype_size")
    call check(weave_status_string(WEAVE_ERROR_INVALID_COUNTS) == "WEAVE_ERROR_INVALID_COUNTS", &
               "weave_status_string")
  end subroutine test_library_queries

  subroutine test_grid_errors()
    type(weave_grid_t) :: grid
    integer :: stat
    call weave_grid_create(MPI_COMM_WORLD, nranks + 1, 1, grid, stat)
    call check_status(stat, WEAVE_ERROR_INVALID_VALUE, "grid of the wrong shape")
    call check(.not. c_associated(grid%handle), "failed grid create leaves a null handle")
    call check(index(weave_last_error(), "ranks") > 0, "the message says what is wrong: " // weave_last_error())
    call weave_grid_create(MPI_COMM_NULL, 1, 1, grid, stat)
    call check_status(stat, WEAVE_ERROR_NULL_ARGUMENT, "grid over MPI_COMM_NULL")
  end subroutine test_grid_errors

  subroutine test_grids()
    type(weave_grid_t) :: grid
    integer :: stat, prows, pcols, row, col, size, group_rank, comm, comparison
#if WEAVE_FORTRAN_HAVE_MPI_F08
    type(MPI_Comm) :: comm_f08
#endif
    call weave_grid_create(MPI_COMM_WORLD, 1, nranks, grid, stat)
    call check_status(stat, WEAVE_SUCCESS, "grid from an integer communicator")
    call weave_grid_shape(grid, prows, pcols, stat)
    call check(stat == WEAVE_SUCCESS .and. prows == 1 .and. pcols == nranks, "weave_grid_shape")
    call weave_grid_coords(grid, row, col, stat)
    call check(stat == WEAVE_SUCCESS .and. row == 0 .and. col == rank, "weave_grid_coords")
    call weave_grid_group(grid, WEAVE_GROUP_ROW, size, group_rank, stat)
    call check(stat == WEAVE_SUCCESS .and. size == nranks .and. group_rank == rank, "weave_grid_group(ROW)")
    call weave_grid_group(grid, WEAVE_GROUP_COLUMN, size, group_rank, stat)
    call check(stat == WEAVE_SUCCESS .and. size == 1 .and. group_rank == 0, "weave_grid_group(COLUMN)")
    call weave_grid_group_comm(grid, WEAVE_GROUP_GRID, comm, stat)
    call check_status(stat, WEAVE_SUCCESS, "weave_grid_group_comm (integer)")
    call MPI_Comm_compare(comm, MPI_COMM_WORLD, comparison, ierror)
    call check(comparison == MPI_CONGRUENT, "the grid communicator is a duplicate of MPI_COMM_WORLD")
    call weave_grid_group_comm(grid, 7, comm, stat)
    call check_status(stat, WEAVE_ERROR_INVALID_VALUE, "weave_grid_group_comm with a bad group")
    call check(comm == MPI_COMM_NULL, "a failed weave_grid_group_comm returns MPI_COMM_NULL")
    call weave_grid_destroy(grid, stat)
    call check(stat == WEAVE_SUCCESS .and. .not. c_associated(grid%handle), "destroy nulls the handle")
    call weave_grid_destroy(grid, stat)
    call check_status(stat, WEAVE_SUCCESS, "destroying a null grid")

#if WEAVE_FORTRAN_HAVE_MPI_F08
    call weave_grid_create(MPI_COMM_WORLD_F08, nranks, 1, grid, stat)
    call check_status(stat, WEAVE_SUCCESS, "grid from type(MPI_Comm)")
    call weave_grid_group_comm(grid, WEAVE_GROUP_COLUMN, comm_f08, stat)
    call check_status(stat, WEAVE_SUCCESS, "weave_grid_group_comm (type(MPI_Comm))")
    call MPI_Comm_compare(comm_f08%MPI_VAL, MPI_COMM_WORLD, comparison, ierror)
    call check(comparison == MPI_CONGRUENT, "the column communicator of a P x 1 grid spans MPI_COMM_WORLD")
    call weave_grid_destroy(grid)
#endif
  end subroutine test_grids

  subroutine test_count_lengths()
    type(weave_grid_t) :: grid
    type(weave_matrix_t) :: m
    integer :: stat, counts(nranks + 1), i
    integer(int64) :: rows, cols
    character(len=:), allocatable :: message
    counts = 1
    call weave_grid_create(MPI_COMM_WORLD, nranks, 1, grid, stat)
    call check_status(stat, WEAVE_SUCCESS, "grid")

    ! Every rank passes one count too many.
    call weave_matrix_create(grid, nranks + 1, 3, WEAVE_FLOAT64, WEAVE_DIST_BLOCK_ROW, m, stat, row_counts=counts)
    call check_status(stat, WEAVE_ERROR_INVALID_COUNTS, "row_counts one entry too long")
    call check(index(weave_last_error(), "row_counts has") > 0, "the count length's message: " // weave_last_error())
    call check(.not. c_associated(m%handle), "failed matrix create leaves a null handle")

    ! A later failure replaces that message.
    call weave_matrix_local_shape(m, rows, cols, stat)
    call check_status(stat, WEAVE_ERROR_NULL_ARGUMENT, "query of a null matrix")
    call check(index(weave_last_error(), "row_counts has") == 0, "the library's message is the newest")

    ! Only rank 0 passes a wrong length, the others valid counts: every rank
    ! fails with rank 0's status and message, none waits forever.
    if (rank == 0) then
      call weave_matrix_create(grid, 3, nranks, WEAVE_FLOAT64, WEAVE_DIST_BLOCK_COLUMN, m, stat, &
                               col_counts=counts(1:nranks + 1))
    else
      call weave_matrix_create(grid, 3, nranks, WEAVE_FLOAT64, WEAVE_DIST_BLOCK_COLUMN, m, stat, &
                               col_counts=counts(1:nranks))
    end if
    call check_status(stat, WEAVE_ERROR_INVALID_COUNTS, "col_counts too long on rank 0 only")
    message = weave_last_error()
    call check(index(message, "rank 0: ") > 0 .and. index(message, "col_counts has") > 0, &
               "every rank has rank 0's message: " // message)

    ! BLOCK_2D counts follow the grid's rows and columns; the library checks the values.
    call weave_matrix_create(grid, nranks, 2, WEAVE_FLOAT64, WEAVE_DIST_BLOCK_2D, m, stat, &
                             row_counts=counts(1:nranks), col_counts=[2])
    call check_status(stat, WEAVE_SUCCESS, "BLOCK_2D with one count per grid row and column")
    call weave_matrix_destroy(m)
    call weave_matrix_create(grid, nranks, 2, WEAVE_FLOAT64, WEAVE_DIST_BLOCK_2D, m, stat, col_counts=[1, 1])
    call check_status(stat, WEAVE_ERROR_INVALID_COUNTS, "BLOCK_2D col_counts longer than the grid's columns")
    call weave_matrix_create(grid, 5_int64, 2_int64, WEAVE_FLOAT64, WEAVE_DIST_BLOCK_ROW, m, stat, &
                             row_counts=[(0_int64, i = 1, nranks)])
    call check_status(stat, WEAVE_ERROR_INVALID_COUNTS, "counts of the right length but the wrong sum")
    call weave_grid_destroy(grid)
  end subroutine test_count_lengths

  ! Without stat nothing stops the program; outputs are zero or empty.
  subroutine test_queries_without_stat()
    type(weave_matrix_t) :: m
    type(weave_plan_t) :: plan
    type(weave_plan_info_t) :: info
    integer(int64) :: rows, cols, ld
    character(len=:), allocatable :: text
    rows = 99
    cols = 99
    call weave_matrix_local_shape(m, rows, cols)
    call check(rows == 0 .and. cols == 0, "outputs of a failed query are zero")
    call weave_matrix_ld(m, ld)
    call check(ld == 0, "ld of a failed query is zero")
    call weave_plan_describe(plan, text)
    call check(len(text) == 0, "text of a failed describe is empty")
    call weave_plan_get_info(plan, info)
    call check(info%steps == 0 .and. info%group_size == 0, "info of a failed query is zero")
    call check(len(weave_last_error()) > 0, "the message waits in weave_last_error")
  end subroutine test_queries_without_stat

  ! GEMM-AR in real(4) from argument forms: C (M x N, on every rank) =
  ! alpha sum_q A_q B_q + beta C + bias, K split unevenly. B has a padded
  ! leading dimension (its padding holds NaN, which must not be read); C is
  ! a non-contiguous section (the compiler copies it in and out).
  subroutine test_gemm_ar_real32()
    integer, parameter :: m_rows = 7, n_cols = 5
    type(weave_grid_t) :: grid
    type(weave_matrix_t) :: a, b, c, bias
    type(weave_plan_t) :: plan
    type(weave_plan_info_t) :: info
    integer :: k_counts(nranks), k_total, k0, k_local, stat, i, j, l
    integer(int64) :: elements
    real(real32), allocatable :: a_local(:, :), b_local(:, :), c_storage(:, :), bias_local(:)
    integer(int64) :: b_ld
    real(real64) :: expected, scale
    real(real32), parameter :: alpha = 0.5, beta = -2.0
    character(len=:), allocatable :: text

    k_counts = uneven_counts(1)
    k_total = sum(k_counts)
    k0 = sum(k_counts(1:rank))
    k_local = k_counts(rank + 1)
    call weave_grid_create(MPI_COMM_WORLD, nranks, 1, grid, stat)
    call weave_matrix_create(grid, m_rows, k_total, WEAVE_FLOAT32, WEAVE_DIST_BLOCK_COLUMN, a, stat, &
                             col_counts=k_counts)
    call check_status(stat, WEAVE_SUCCESS, "A from default-integer arguments")
    call weave_matrix_create(grid, k_total, n_cols, WEAVE_FLOAT32, WEAVE_DIST_BLOCK_ROW, b, stat, &
                             row_counts=k_counts, ld=k_local + 1)
    call check_status(stat, WEAVE_SUCCESS, "B with an explicit ld")
    call weave_matrix_ld(b, b_ld)
    call check(b_ld == k_local + 1, "weave_matrix_ld")
    call weave_matrix_create(grid, m_rows, n_cols, WEAVE_FLOAT32, WEAVE_DIST_REPLICATED, c, stat)
    call weave_matrix_create(grid, 1, n_cols, WEAVE_FLOAT32, WEAVE_DIST_REPLICATED, bias, stat)
    call weave_matrix_local_elements(a, elements)
    call check(elements == merge(int(m_rows, int64) * k_local, 0_int64, k_local > 0), "A's local elements")

    call weave_plan_create(grid, WEAVE_GEMM_AR, a, b, c, plan, stat, bias=bias, algorithm=WEAVE_ALGORITHM_RING, &
                           chunks_per_shard=2)
    call check_status(stat, WEAVE_SUCCESS, "GEMM-AR plan from arguments")
    call weave_plan_describe(plan, text, stat)
    call check(stat == WEAVE_SUCCESS .and. index(text, "GEMM-AR") > 0, "describe: " // text)
    call weave_plan_get_info(plan, info, stat)
    call check(stat == WEAVE_SUCCESS .and. info%group_size == nranks .and. info%group_rank == rank .and. &
               info%steps > 0 .and. info%backend == WEAVE_BACKEND_HOST, "plan info")
    ! One rank has nothing to communicate: the plan is a local GEMM, whatever was asked.
    if (nranks > 1) call check(info%algorithm == WEAVE_ALGORITHM_RING .and. info%chunks_per_shard == 2, &
                               "plan info: the requested ring and chunks")

    allocate(a_local(m_rows, k_local), b_local(k_local + 1, n_cols), c_storage(m_rows + 2, n_cols))
    allocate(bias_local(n_cols))
    b_local = real(ieee_nan(), real32)
    do j = 1, k_local
      do i = 1, m_rows
        a_local(i, j) = real(entry(0, i - 1, k0 + j - 1), real32)
      end do
    end do
    do j = 1, n_cols
      do i = 1, k_local
        b_local(i, j) = real(entry(1, k0 + i - 1, j - 1), real32)
      end do
      bias_local(j) = real(entry(2, 0, j - 1), real32)
      c_storage(:, j) = real(entry(3, 0, j - 1), real32)   ! C0(i, j) = entry(3, 0, j)
    end do
    ! The leading m_rows rows of c_storage are C; the section is not contiguous.
    call weave_execute(plan, alpha, a_local, b_local, beta, c_storage(1:m_rows, :), stat, bias=bias_local)
    call check_status(stat, WEAVE_SUCCESS, "execute real(4)")
    do j = 1, n_cols
      do i = 1, m_rows
        expected = beta * entry(3, 0, j - 1) + entry(2, 0, j - 1)
        scale = abs(expected)
        do l = 1, k_total
          expected = expected + alpha * entry(0, i - 1, l - 1) * entry(1, l - 1, j - 1)
          scale = scale + abs(alpha * entry(0, i - 1, l - 1) * entry(1, l - 1, j - 1))
        end do
        call check(abs(c_storage(i, j) - expected) <= 4 * (k_total + 2) * epsilon(1.0_real32) * scale, &
                   "GEMM-AR real(4) result")
      end do
      call check(all(c_storage(m_rows + 1:, j) == real(entry(3, 0, j - 1), real32)), &
                 "rows beyond C's rows are untouched")
    end do

    call weave_plan_write_trace(plan, "unused-%r.json", stat)
    call check_status(stat, WEAVE_ERROR_INVALID_VALUE, "write_trace without WEAVE_FLAG_TRACE")

    ! Arrays of the wrong kind, or too small on one rank: an error on every
    ! rank, and C untouched.
    call check(info%a_type == WEAVE_FLOAT32 .and. info%c_type == WEAVE_FLOAT32 .and. &
               info%bias_type == WEAVE_FLOAT32, "plan info: element types")
    block
      real(real64), allocatable :: a64(:, :), b64(:, :), c64(:, :)
      real(real32), allocatable :: c_small(:)
      allocate(a64(m_rows, k_local), b64(k_local + 1, n_cols), c64(m_rows, n_cols))
      a64 = 1
      b64 = 1
      c64 = -3
      call weave_execute(plan, 1.0_real64, a64, b64, 0.0_real64, c64, stat)
      call check_status(stat, WEAVE_ERROR_UNSUPPORTED_TYPE, "execute with real(8) arrays on a real(4) plan")
      call check(index(weave_last_error(), "f32") > 0, "the message names the type: " // weave_last_error())
      call check(all(c64 == -3), "real(8) C untouched")
      ! C one element short on the last rank only.
      allocate(c_small(m_rows * n_cols - merge(1, 0, rank == nranks - 1)))
      c_small = -3
      call weave_execute(plan, alpha, a_local, b_local, beta, c_small, stat, bias=bias_local)
      call check_status(stat, WEAVE_ERROR_INVALID_VALUE, "execute with C one element short on one rank")
      call check(all(c_small == -3), "short C untouched")
    end block

    call weave_plan_destroy(plan)
    call check(.not. c_associated(plan%handle), "plan destroy nulls the handle")
    call weave_matrix_destroy(a)
    call weave_matrix_destroy(b)
    call weave_matrix_destroy(c)
    call weave_matrix_destroy(bias)
    call weave_grid_destroy(grid)
  end subroutine test_gemm_ar_real32

  ! GEMM-RS with FP8 A and B (integer(int8) bytes, e4m3) and their scales,
  ! into a real(4) C: A's row-wise scales and B's tensor-wise scale differ
  ! on every rank (each rank's product uses its own K-slice's scales).
  subroutine test_gemm_rs_float8()
    use, intrinsic :: iso_c_binding, only: c_int8_t
    integer, parameter :: m_rows = 6, n_cols = 4
    integer(c_int8_t), parameter :: e4m3_one = int(z'38', c_int8_t), e4m3_two = int(z'40', c_int8_t)
    type(weave_grid_t) :: grid
    type(weave_matrix_t) :: a, b, c
    type(weave_plan_t) :: plan
    type(weave_plan_info_t) :: info
    integer :: k_counts(nranks), k_total, k_local, m_counts(nranks), m0, stat, i, j, q
    integer(c_int8_t), allocatable :: a_local(:, :), b_local(:, :)
    real(real32), allocatable :: c_local(:, :), a_scale(:), b_scale(:)
    real(real64) :: expected

    k_counts = uneven_counts(2)
    k_total = sum(k_counts)
    k_local = k_counts(rank + 1)
    m_counts = m_rows / nranks
    m_counts(nranks) = m_rows - sum(m_counts(1:nranks - 1))
    m0 = sum(m_counts(1:rank))
    call weave_grid_create(MPI_COMM_WORLD, nranks, 1, grid, stat)
    call weave_matrix_create(grid, m_rows, k_total, WEAVE_FLOAT8_E4M3, WEAVE_DIST_BLOCK_COLUMN, a, stat, &
                             col_counts=k_counts, scale_mode=WEAVE_SCALE_ROW_WISE)
    call check_status(stat, WEAVE_SUCCESS, "FP8 A with row-wise scales")
    call weave_matrix_create(grid, k_total, n_cols, WEAVE_FLOAT8_E4M3, WEAVE_DIST_BLOCK_ROW, b, stat, &
                             row_counts=k_counts, scale_mode=WEAVE_SCALE_TENSOR)
    call weave_matrix_create(grid, m_rows, n_cols, WEAVE_FLOAT32, WEAVE_DIST_BLOCK_ROW, c, stat, &
                             row_counts=m_counts)
    call weave_plan_create(grid, WEAVE_GEMM_RS, a, b, c, plan, stat)
    call check_status(stat, WEAVE_SUCCESS, "FP8 GEMM-RS plan")
    call weave_plan_get_info(plan, info, stat)
    call check(info%a_type == WEAVE_FLOAT8_E4M3 .and. info%a_scale_mode == WEAVE_SCALE_ROW_WISE .and. &
               info%b_scale_mode == WEAVE_SCALE_TENSOR .and. &
               info%a_scale_elements == merge(m_rows, 0, k_local > 0) .and. &
               info%b_scale_elements == merge(1, 0, k_local > 0), "plan info of the FP8 plan")

    allocate(a_local(m_rows, k_local), b_local(k_local, n_cols), c_local(m_counts(rank + 1), n_cols))
    allocate(a_scale(m_rows), b_scale(1))
    a_local = e4m3_one
    b_local = e4m3_two
    do i = 1, m_rows
      a_scale(i) = real(i, real32)
    end do
    b_scale(1) = real(rank + 1, real32)
    c_local = -1
    call weave_execute(plan, 1.0, a_local, b_local, 0.0, c_local, stat, a_scale=a_scale, b_scale=b_scale)
    call check_status(stat, WEAVE_SUCCESS, "FP8 execute with int8 arrays")
    do j = 1, n_cols
      do i = 1, m_counts(rank + 1)
        ! sum over ranks q of K_q x (1 x row scale) x (2 x (q + 1))
        expected = 0
        do q = 1, nranks
          expected = expected + real(k_counts(q), real64) * real(m0 + i, real64) * 2.0_real64 * real(q, real64)
        end do
        call check(abs(c_local(i, j) - expected) <= 1e-5_real64 * expected, "FP8 GEMM-RS result")
      end do
    end do
    call weave_plan_destroy(plan)
    call weave_matrix_destroy(a)
    call weave_matrix_destroy(b)
    call weave_matrix_destroy(c)
    call weave_grid_destroy(grid)
  end subroutine test_gemm_rs_float8

  ! AG-GEMM in real(8) from bind(C) descriptors, with the gathered A handed
  ! back; then the same plan through weave_execute_ex and through addresses.
  subroutine test_ag_gemm_real64_descriptors()
    integer, parameter :: k_inner = 4, n_per_rank = 3
    type(weave_grid_t) :: grid
    type(weave_matrix_desc_t) :: desc
    type(weave_plan_desc_t) :: plan_desc
    type(weave_matrix_t) :: a, b, c
    type(weave_plan_t) :: plan
    type(weave_execute_args_t) :: args
    integer(c_int64_t), target :: m_counts(nranks)
    integer :: stat, m_total, m0, m_local, i, j, l
    real(real64), allocatable, target :: a_local(:, :), b_local(:, :), c_local(:, :), c_again(:, :), gathered(:, :)
    real(real64) :: expected

    m_counts = uneven_counts(2)
    m_total = int(sum(m_counts))
    m0 = int(sum(m_counts(1:rank)))
    m_local = int(m_counts(rank + 1))
    call weave_grid_create(MPI_COMM_WORLD, nranks, 1, grid, stat)

    desc%rows = m_total
    desc%cols = k_inner
    desc%dtype = WEAVE_FLOAT64
    desc%distribution = WEAVE_DIST_BLOCK_ROW
    desc%row_counts = c_loc(m_counts)
    call weave_matrix_create(grid, desc, a, stat)
    call check_status(stat, WEAVE_SUCCESS, "A from a weave_matrix_desc_t")
    desc = weave_matrix_desc_t(rows=k_inner, cols=n_per_rank * nranks, dtype=WEAVE_FLOAT64, &
                               distribution=WEAVE_DIST_BLOCK_COLUMN)
    call weave_matrix_create(grid, desc, b, stat)
    desc%rows = m_total
    call weave_matrix_create(grid, desc, c, stat)
    call check_status(stat, WEAVE_SUCCESS, "C from a weave_matrix_desc_t")

    plan_desc%operation = WEAVE_AG_GEMM
    plan_desc%a = a
    plan_desc%b = b
    plan_desc%c = c
    plan_desc%flags = WEAVE_FLAG_GATHERED_OUTPUT
    call weave_plan_create(grid, plan_desc, plan, stat)
    call check_status(stat, WEAVE_SUCCESS, "AG-GEMM plan from a weave_plan_desc_t")

    allocate(a_local(m_local, k_inner), b_local(k_inner, n_per_rank), c_local(m_total, n_per_rank))
    allocate(c_again(m_total, n_per_rank), gathered(m_total, k_inner))
    do j = 1, k_inner
      do i = 1, m_local
        a_local(i, j) = entry(4, m0 + i - 1, j - 1)
      end do
    end do
    do j = 1, n_per_rank
      do i = 1, k_inner
        b_local(i, j) = entry(5, i - 1, rank * n_per_rank + j - 1)
      end do
    end do
    c_local = ieee_nan()
    gathered = ieee_nan()
    call weave_execute(plan, 1.0_real64, a_local, b_local, 0.0_real64, c_local, stat, gathered_a=gathered)
    call check_status(stat, WEAVE_SUCCESS, "execute real(8) with gathered_a")
    do j = 1, n_per_rank
      do i = 1, m_total
        expected = 0
        do l = 1, k_inner
          expected = expected + entry(4, i - 1, l - 1) * entry(5, l - 1, rank * n_per_rank + j - 1)
        end do
        call check(abs(c_local(i, j) - expected) <= 8 * k_inner * epsilon(1.0_real64), "AG-GEMM real(8) result")
      end do
    end do
    do j = 1, k_inner
      do i = 1, m_total
        call check(gathered(i, j) == entry(4, i - 1, j - 1), "gathered A equals the global A")
      end do
    end do

    ! The same product through the struct and through addresses.
    c_again = ieee_nan()
    args%alpha = 1
    args%a = c_null_ptr
    if (m_local > 0) args%a = c_loc(a_local)
    args%b = c_loc(b_local)
    args%c = c_loc(c_again)
    args%gathered_a = c_loc(gathered)
    call weave_execute_ex(plan, args, stat)
    call check(stat == WEAVE_SUCCESS .and. all(c_again == c_local), "weave_execute_ex gives the same C")
    c_again = ieee_nan()
    call weave_execute(plan, 1.0_real64, args%a, c_loc(b_local), 0.0_real64, c_loc(c_again), stat, &
                       gathered_a=c_loc(gathered))
    call check(stat == WEAVE_SUCCESS .and. all(c_again == c_local), "execute by address gives the same C")

    ! gathered_a is required by this plan: every rank reports it.
    call weave_execute(plan, 1.0_real64, a_local, b_local, 0.0_real64, c_local, stat)
    call check_status(stat, WEAVE_ERROR_NULL_ARGUMENT, "missing gathered_a")

    call weave_plan_destroy(plan)
    call weave_matrix_destroy(a)
    call weave_matrix_destroy(b)
    call weave_matrix_destroy(c)
    call weave_grid_destroy(grid)
  end subroutine test_ag_gemm_real64_descriptors

  ! Arguments execute checks, reported through stat on every rank.
  ! WEAVE_GEMM of complex(8) block-cyclic matrices (blocks of 2 rows dealt
  ! round the grid rows of an nranks x 1 grid from grid row 1 mod nranks),
  ! C = alpha A B^H + beta C with complex alpha and beta, against a product
  ! computed here.
  subroutine test_gemm_block_cyclic_complex128()
    integer, parameter :: m = 7, n = 5, k = 6, mb = 2
    type(weave_grid_t) :: grid
    type(weave_matrix_t) :: a, b, c
    type(weave_plan_t) :: plan
    integer :: stat, rsrc, i, j, l, gi
    integer(int64) :: local_rows, local_cols, ld
    complex(real64), allocatable :: a_local(:, :), b_local(:, :), c_local(:, :)
    complex(real64) :: expected
    complex(real64), parameter :: alpha = (0.5_real64, -1.0_real64), beta = (0.25_real64, 0.75_real64)

    rsrc = mod(1, nranks)
    call weave_grid_create(MPI_COMM_WORLD, nranks, 1, grid, stat)
    call weave_matrix_create(grid, m, k, WEAVE_COMPLEX128, WEAVE_DIST_BLOCK_CYCLIC, a, stat, mb=mb, nb=k, rsrc=rsrc)
    call check_status(stat, WEAVE_SUCCESS, "block-cyclic complex A")
    call weave_matrix_create(grid, n, k, WEAVE_COMPLEX128, WEAVE_DIST_BLOCK_CYCLIC, b, stat, mb=mb, nb=k)
    call weave_matrix_create(grid, m, n, WEAVE_COMPLEX128, WEAVE_DIST_BLOCK_CYCLIC, c, stat, mb=mb, nb=n, rsrc=rsrc)
    call check_status(stat, WEAVE_SUCCESS, "block-cyclic complex C")
    call weave_plan_create(grid, WEAVE_GEMM, a, b, c, plan, stat, op_b=WEAVE_OP_C)
    call check_status(stat, WEAVE_SUCCESS, "WEAVE_GEMM plan, op_b = WEAVE_OP_C")

    call weave_matrix_local_shape(a, local_rows, local_cols)
    allocate(a_local(max(1_int64, local_rows), k))
    do j = 1, k
      do i = 1, int(local_rows)
        gi = global_row(i, rsrc)
        a_local(i, j) = cmplx(entry(6, gi, j - 1), entry(7, gi, j - 1), real64)
      end do
    end do
    call weave_matrix_local_shape(b, local_rows, local_cols)
    allocate(b_local(max(1_int64, local_rows), k))
    do j = 1, k
      do i = 1, int(local_rows)
        gi = global_row(i, 0)
        b_local(i, j) = cmplx(entry(8, gi, j - 1), entry(9, gi, j - 1), real64)
      end do
    end do
    call weave_matrix_local_shape(c, local_rows, local_cols)
    call weave_matrix_ld(c, ld)
    allocate(c_local(max(1_int64, ld), n))
    do j = 1, n
      do i = 1, int(local_rows)
        c_local(i, j) = cmplx(entry(10, global_row(i, rsrc), j - 1), 0.5_real64, real64)
      end do
    end do
    call weave_execute(plan, alpha, a_local, b_local, beta, c_local, stat)
    call check_status(stat, WEAVE_SUCCESS, "execute complex(8)")
    do j = 1, n
      do i = 1, int(local_rows)
        gi = global_row(i, rsrc)
        expected = 0
        do l = 1, k
          expected = expected + cmplx(entry(6, gi, l - 1), entry(7, gi, l - 1), real64) * &
                     conjg(cmplx(entry(8, j - 1, l - 1), entry(9, j - 1, l - 1), real64))
        end do
        expected = alpha * expected + beta * cmplx(entry(10, gi, j - 1), 0.5_real64, real64)
        call check(abs(c_local(i, j) - expected) <= 16 * k * epsilon(1.0_real64), "WEAVE_GEMM complex(8) result")
      end do
    end do
    call weave_plan_destroy(plan)
    call weave_matrix_destroy(a)
    call weave_matrix_destroy(b)
    call weave_matrix_destroy(c)
    call weave_grid_destroy(grid)
  end subroutine test_gemm_block_cyclic_complex128

  ! The global row (0-based) of local row i of a block-cyclic matrix in
  ! blocks of 2 rows dealt round the nranks grid rows from grid row `source`.
  integer function global_row(i, source)
    integer, intent(in) :: i, source
    integer, parameter :: mb = 2
    global_row = ((i - 1) / mb * nranks + mod(nranks + rank - source, nranks)) * mb + mod(i - 1, mb)
  end function global_row

  subroutine test_execute_errors()
    type(weave_grid_t) :: grid
    type(weave_matrix_t) :: a, b, c, bias
    type(weave_plan_t) :: plan
    integer :: stat
    real(real64) :: a_local(2, 2), b_local(2, 3), c_local(2, 3), bias_local(3)
    a_local = 1
    b_local = 1
    c_local = 0
    bias_local = 0
    call weave_grid_create(MPI_COMM_WORLD, nranks, 1, grid, stat)
    call weave_matrix_create(grid, 2, 2 * nranks, WEAVE_FLOAT64, WEAVE_DIST_REPLICATED, a, stat)
    call weave_matrix_create(grid, 2 * nranks, 3, WEAVE_FLOAT64, WEAVE_DIST_BLOCK_ROW, b, stat)
    call weave_matrix_create(grid, 2, 3, WEAVE_FLOAT64, WEAVE_DIST_REPLICATED, c, stat)
    call weave_plan_create(grid, WEAVE_GEMM_AR, a, b, c, plan, stat)
    if (nranks > 1) then
      call check_status(stat, WEAVE_ERROR_DISTRIBUTION_MISMATCH, "GEMM-AR with A not split by columns")
      call check(.not. c_associated(plan%handle), "failed plan create leaves a null handle")
    else
      call check_status(stat, WEAVE_SUCCESS, "on one rank every distribution is local")
      call weave_plan_destroy(plan)
    end if
    call weave_matrix_destroy(a)
    call weave_matrix_create(grid, 2, 2 * nranks, WEAVE_FLOAT64, WEAVE_DIST_BLOCK_COLUMN, a, stat)
    call weave_matrix_create(grid, 1, 3, WEAVE_FLOAT64, WEAVE_DIST_REPLICATED, bias, stat)
    call weave_plan_create(grid, WEAVE_GEMM_AR, a, b, c, plan, stat, bias=bias)
    call check_status(stat, WEAVE_SUCCESS, "GEMM-AR plan with bias")
    call weave_execute(plan, 1.0_real64, a_local, b_local, 0.0_real64, c_local, stat)
    call check_status(stat, WEAVE_ERROR_NULL_ARGUMENT, "execute without the plan's bias")
    call weave_execute(plan, 1.0_real64, a_local, b_local, 0.0_real64, c_local, stat, bias=bias_local)
    call check(stat == WEAVE_SUCCESS .and. all(abs(c_local - 2 * nranks) <= 1e-12_real64), "GEMM-AR of ones")
    call weave_plan_destroy(plan)
    call weave_matrix_destroy(a)
    call weave_matrix_destroy(b)
    call weave_matrix_destroy(c)
    call weave_matrix_destroy(bias)
    call weave_grid_destroy(grid)
  end subroutine test_execute_errors

  ! A quiet NaN, to poison outputs before a call (an unwritten element fails).
  real(real64) function ieee_nan()
    use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan
    ieee_nan = ieee_value(1.0_real64, ieee_quiet_nan)
  end function ieee_nan
end program fortran_binding_test
