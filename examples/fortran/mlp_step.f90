! One tensor-parallel MLP step with Weave's Fortran module, in real(8):
!
!   H = X W1 + b1     AG-GEMM: X (tokens x hidden) is split by tokens; W1
!                     (hidden x ffn), H and b1 are split by ffn columns
!   A = gelu(H)       element-wise, on each rank's columns of H
!   Y = A W2 + b2     GEMM-RS: W2 (ffn x hidden) is split by ffn rows; each
!                     rank gets its tokens' rows of Y; b2 is replicated
!
! Shards are uneven on purpose (one rank of every three holds no tokens).
! Every rank builds the same global matrices from a formula, takes its shard,
! and checks its rows of Y against a reference computed in quadruple
! precision where the compiler has it.
!
!   mpiexec -n 3 ./weave_example_mlp_fortran
program mlp_step
  use, intrinsic :: iso_fortran_env, only: int64, real64, error_unit
  use mpi_f08
  use weave
  implicit none

  integer, parameter :: hidden = 16
  ! The reference's precision: quadruple where available, else double.
  integer, parameter :: wide = max(selected_real_kind(30), real64)
  integer :: rank, nranks, r, stat
  integer(int64), allocatable :: tokens(:), ffn(:)
  integer(int64) :: n_tokens, n_ffn, failures, all_failures
  real(real64) :: worst, all_worst
  type(weave_grid_t) :: grid
  type(weave_matrix_t) :: x, w1, b1, h, w2, b2, y
  type(weave_plan_t) :: up, down
  real(real64), allocatable :: x_local(:, :), w1_local(:, :), b1_local(:, :), h_local(:, :)
  real(real64), allocatable :: w2_local(:, :), b2_local(:, :), y_local(:, :)
  character(len=:), allocatable :: text
  logical :: passed

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)

  ! Global sizes and per-rank counts (rank r is element r of the arrays).
  allocate(tokens(0:nranks - 1), ffn(0:nranks - 1))
  do r = 0, nranks - 1
    tokens(r) = merge(0, 5 + 3 * r, mod(r, 3) == 1)
    ffn(r) = 6 + 4 * (nranks - 1 - r)
  end do
  n_tokens = sum(tokens)
  n_ffn = sum(ffn)
  passed = .false.

  ! A failed call ends the block on every rank (collective calls fail on
  ! every rank together); cleanup follows it.
  step: block
    call weave_grid_create(MPI_COMM_WORLD, nranks, 1, grid, stat)
    if (failed(stat, "weave_grid_create")) exit step

    ! Descriptors: every rank passes the same global sizes and counts.
    call weave_matrix_create(grid, n_tokens, int(hidden, int64), WEAVE_FLOAT64, WEAVE_DIST_BLOCK_ROW, x, stat, &
                             row_counts=tokens)
    if (failed(stat, "weave_matrix_create(x)")) exit step
    call weave_matrix_create(grid, int(hidden, int64), n_ffn, WEAVE_FLOAT64, WEAVE_DIST_BLOCK_COLUMN, w1, stat, &
                             col_counts=ffn)
    if (failed(stat, "weave_matrix_create(w1)")) exit step
    call weave_matrix_create(grid, n_tokens, n_ffn, WEAVE_FLOAT64, WEAVE_DIST_BLOCK_COLUMN, h, stat, &
                             col_counts=ffn)
    if (failed(stat, "weave_matrix_create(h)")) exit step
    call weave_matrix_create(grid, 1_int64, n_ffn, WEAVE_FLOAT64, WEAVE_DIST_BLOCK_COLUMN, b1, stat, &
                             col_counts=ffn)
    if (failed(stat, "weave_matrix_create(b1)")) exit step
    call weave_matrix_create(grid, n_ffn, int(hidden, int64), WEAVE_FLOAT64, WEAVE_DIST_BLOCK_ROW, w2, stat, &
                             row_counts=ffn)
    if (failed(stat, "weave_matrix_create(w2)")) exit step
    call weave_matrix_create(grid, 1_int64, int(hidden, int64), WEAVE_FLOAT64, WEAVE_DIST_REPLICATED, b2, stat)
    if (failed(stat, "weave_matrix_create(b2)")) exit step
    call weave_matrix_create(grid, n_tokens, int(hidden, int64), WEAVE_FLOAT64, WEAVE_DIST_BLOCK_ROW, y, stat, &
                             row_counts=tokens)
    if (failed(stat, "weave_matrix_create(y)")) exit step

    ! Plans: built once, executed for every step of a real model.
    call weave_plan_create(grid, WEAVE_AG_GEMM, x, w1, h, up, stat, bias=b1)
    if (failed(stat, "weave_plan_create(up)")) exit step
    call weave_plan_create(grid, WEAVE_GEMM_RS, h, w2, y, down, stat, bias=b2)
    if (failed(stat, "weave_plan_create(down)")) exit step
    if (rank == 0) then
      call weave_plan_describe(up, text)
      print '(a)', "up:   " // text
      call weave_plan_describe(down, text)
      print '(a)', "down: " // text
    end if

    call allocate_block(x, x_local, 0)
    call allocate_block(w1, w1_local, 1)
    call allocate_block(b1, b1_local, 2)
    call allocate_block(h, h_local, -1)
    call allocate_block(w2, w2_local, 3)
    call allocate_block(b2, b2_local, 4)
    call allocate_block(y, y_local, -1)

    ! The step.
    call weave_execute(up, 1.0_real64, x_local, w1_local, 0.0_real64, h_local, stat, bias=b1_local)
    if (failed(stat, "weave_execute(up)")) exit step
    h_local = gelu(h_local)
    call weave_execute(down, 1.0_real64, h_local, w2_local, 0.0_real64, y_local, stat, bias=b2_local)
    if (failed(stat, "weave_execute(down)")) exit step

    call check(y, y_local, failures, worst)
    call MPI_Allreduce(failures, all_failures, 1, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD)
    call MPI_Allreduce(worst, all_worst, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD)
    passed = all_failures == 0
    if (rank == 0) then
      print '(a, ": MLP step on ", i0, " ranks, ", i0, " tokens, hidden ", i0, ", ffn ", i0, ": ", i0, &
            & " wrong elements, largest error ", es9.3, " of the allowed bound")', &
            merge("PASS", "FAIL", passed), nranks, n_tokens, hidden, n_ffn, all_failures, all_worst
    end if
  end block step

  ! Destroying null handles does nothing.
  call weave_plan_destroy(up)
  call weave_plan_destroy(down)
  call weave_matrix_destroy(x)
  call weave_matrix_destroy(w1)
  call weave_matrix_destroy(b1)
  call weave_matrix_destroy(h)
  call weave_matrix_destroy(w2)
  call weave_matrix_destroy(b2)
  call weave_matrix_destroy(y)
  call weave_grid_destroy(grid)
  call MPI_Finalize()
  if (.not. passed) error stop 1

contains

  ! True (after printing the library's message) when a Weave call failed.
  logical function failed(stat, what)
    integer, intent(in) :: stat
    character(len=*), intent(in) :: what
    failed = stat /= WEAVE_SUCCESS
    if (failed) write (error_unit, '("rank ", i0, ": ", a, " failed: ", a, ": ", a)') &
      rank, what, weave_status_string(stat), weave_last_error()
  end function failed

  ! Global element (i, j), 0-based, of the matrix numbered `which`: smooth, in [-1, 1].
  elemental real(wide) function entry(which, i, j)
    integer, intent(in) :: which
    integer(int64), intent(in) :: i, j
    entry = real(sin(0.37_real64 * real(i + 1, real64) + 1.91_real64 * real(j + 1, real64) &
                     + 0.5_real64 * which), wide)
  end function entry

  elemental real(real64) function gelu(v)
    real(real64), intent(in) :: v
    gelu = real(gelu_wide(real(v, wide)), real64)
  end function gelu

  elemental real(wide) function gelu_wide(v)
    real(wide), intent(in) :: v
    real(wide), parameter :: sqrt_2_over_pi = 0.79788456080286535587989211986876_wide
    gelu_wide = 0.5_wide * v * (1.0_wide + tanh(sqrt_2_over_pi * (v + 0.044715_wide * v**3)))
  end function gelu_wide

  ! This rank's block of a matrix as a column-major array of leading
  ! dimension ld, filled from global matrix `which` (left zero if which < 0).
  subroutine allocate_block(m, block, which)
    type(weave_matrix_t), intent(in) :: m
    real(real64), allocatable, intent(out) :: block(:, :)
    integer, intent(in) :: which
    integer(int64) :: rows, cols, row0, col0, ld, i, j
    call weave_matrix_local_shape(m, rows, cols)
    call weave_matrix_local_offset(m, row0, col0)
    call weave_matrix_ld(m, ld)
    allocate(block(ld, cols), source=0.0_real64)
    if (which < 0) return
    do j = 1, cols
      do i = 1, rows
        block(i, j) = real(entry(which, row0 + i - 1, col0 + j - 1), real64)
      end do
    end do
  end subroutine allocate_block

  ! Compares this rank's rows of Y with the reference, element by element,
  ! against k * eps(real64) times the magnitudes that enter each element.
  subroutine check(y, y_local, failures, worst)
    type(weave_matrix_t), intent(in) :: y
    real(real64), intent(in) :: y_local(:, :)
    integer(int64), intent(out) :: failures
    real(real64), intent(out) :: worst
    integer(int64) :: rows, cols, row0, col0, i, j, k, l
    real(wide) :: act(n_ffn), act_scale(n_ffn), hk, scale, expected
    real(real64) :: tolerance, error, allowed

    call weave_matrix_local_shape(y, rows, cols)
    call weave_matrix_local_offset(y, row0, col0)
    tolerance = 4 * (hidden + n_ffn) * epsilon(1.0_real64)
    failures = 0
    worst = 0
    do i = 1, rows
      do k = 1, n_ffn
        hk = entry(2, 0_int64, k - 1)
        scale = abs(hk)
        do l = 1, hidden
          hk = hk + entry(0, row0 + i - 1, l - 1) * entry(1, l - 1, k - 1)
          scale = scale + abs(entry(0, row0 + i - 1, l - 1) * entry(1, l - 1, k - 1))
        end do
        act(k) = gelu_wide(hk)
        act_scale(k) = abs(act(k)) + scale
      end do
      do j = 1, cols
        expected = entry(4, 0_int64, j - 1)
        scale = abs(expected)
        do k = 1, n_ffn
          expected = expected + act(k) * entry(3, k - 1, j - 1)
          scale = scale + act_scale(k) * abs(entry(3, k - 1, j - 1))
        end do
        error = real(abs(y_local(i, j) - expected), real64)
        allowed = tolerance * real(scale, real64)
        if (.not. (error <= allowed)) failures = failures + 1  ! also catches NaN
        worst = max(worst, error / allowed)
      end do
    end do
  end subroutine check
end program mlp_step
