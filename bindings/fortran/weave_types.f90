! Handles and descriptor structs of weave.h as interoperable derived types.
!
! Each bind(C) type has the components of its C struct in the same order and
! with the same C types (enums are int), so the Fortran compiler lays it out
! exactly as the C compiler does, padding included; tests/fortran_layout_test
! compares sizes and offsets with the C side. Default initialisation gives the
! struct the C API asks for: struct_size set to the C struct's sizeof (the
! layout test checks that it is), every other field zero, meaning "default" or
! "automatic".
module weave_types
  use, intrinsic :: iso_c_binding, only: c_ptr, c_null_ptr, c_int, c_int32_t, c_int64_t, c_double, c_size_t
  implicit none
  private
  public :: weave_grid_t, weave_matrix_t, weave_plan_t
  public :: weave_matrix_desc_t, weave_plan_desc_t, weave_execute_args_t, weave_plan_info_t

  ! Opaque handles. A distinct type per handle, so passing a matrix where a
  ! grid is expected is a compile-time error. `handle` is null until created
  ! and again after destroy (c_associated(x%handle) tells which).
  type, bind(C) :: weave_grid_t
    type(c_ptr) :: handle = c_null_ptr
  end type weave_grid_t

  type, bind(C) :: weave_matrix_t
    type(c_ptr) :: handle = c_null_ptr
  end type weave_matrix_t

  type, bind(C) :: weave_plan_t
    type(c_ptr) :: handle = c_null_ptr
  end type weave_plan_t

  ! weave_matrix_desc_t. row_counts / col_counts point at integer(c_int64_t)
  ! arrays (c_loc of a target array); weave_matrix_create copies them.
  type, bind(C) :: weave_matrix_desc_t
    integer(c_size_t) :: struct_size = 120  ! sizeof(weave_matrix_desc_t)
    integer(c_int64_t) :: rows = 0
    integer(c_int64_t) :: cols = 0
    integer(c_int) :: dtype = 0            ! WEAVE_FLOAT32, ...
    integer(c_int) :: distribution = 0     ! WEAVE_DIST_*
    integer(c_int) :: group = 0            ! WEAVE_GROUP_*
    type(c_ptr) :: row_counts = c_null_ptr
    type(c_ptr) :: col_counts = c_null_ptr
    integer(c_int64_t) :: ld = 0
    integer(c_int) :: order = 0            ! WEAVE_ORDER_*
    integer(c_int) :: memory = 0           ! WEAVE_MEMORY_*
    integer(c_int) :: scale_mode = 0       ! WEAVE_SCALE_*: FP8 types need one
    ! WEAVE_DIST_BLOCK_CYCLIC: ScaLAPACK's MB_, NB_, RSRC_, CSRC_ and the
    ! 0-based start (IA - 1, JA - 1) of the matrix in the local arrays.
    integer(c_int64_t) :: mb = 0
    integer(c_int64_t) :: nb = 0
    integer(c_int32_t) :: rsrc = 0
    integer(c_int32_t) :: csrc = 0
    integer(c_int64_t) :: row_start = 0
    integer(c_int64_t) :: col_start = 0
  end type weave_matrix_desc_t

  ! weave_plan_desc_t. The matrix fields are handles (a struct holding one
  ! pointer has the layout of the pointer).
  type, bind(C) :: weave_plan_desc_t
    integer(c_size_t) :: struct_size = 104  ! sizeof(weave_plan_desc_t)
    integer(c_int) :: operation = 0        ! WEAVE_AG_GEMM, WEAVE_GEMM_RS, WEAVE_GEMM_AR
    integer(c_int) :: group = 0
    integer(c_int) :: op_a = 0             ! WEAVE_OP_N, WEAVE_OP_T
    integer(c_int) :: op_b = 0
    type(weave_matrix_t) :: a
    type(weave_matrix_t) :: b
    type(weave_matrix_t) :: c
    type(weave_matrix_t) :: bias           ! optional: null handle for none
    integer(c_int) :: algorithm = 0
    integer(c_int) :: backend = 0
    integer(c_int) :: transport = 0
    integer(c_int) :: direction = 0
    integer(c_int32_t) :: chunks_per_shard = 0
    integer(c_int32_t) :: compute_streams = 0
    integer(c_int) :: progress = 0
    integer(c_int32_t) :: timeout_ms = 0
    integer(c_int32_t) :: flags = 0        ! ior of WEAVE_FLAG_*
    integer(c_int) :: wire_type = 0        ! AG-GEMM: WEAVE_FLOAT8_E4M3 or WEAVE_BFLOAT16 (doc/fp8.md); 0: as stored
    integer(c_int32_t) :: reserved = 0
  end type weave_plan_desc_t

  ! weave_execute_args_t. Buffers are addresses (c_loc of a target array, or
  ! a device pointer); alpha and beta start at zero as in C.
  type, bind(C) :: weave_execute_args_t
    integer(c_size_t) :: struct_size = 208  ! sizeof(weave_execute_args_t)
    real(c_double) :: alpha = 0
    real(c_double) :: beta = 0
    type(c_ptr) :: a = c_null_ptr
    type(c_ptr) :: b = c_null_ptr
    type(c_ptr) :: c = c_null_ptr
    type(c_ptr) :: bias = c_null_ptr
    type(c_ptr) :: gathered_a = c_null_ptr
    integer(c_int64_t) :: ld_gathered_a = 0
    type(c_ptr) :: stream = c_null_ptr     ! a cudaStream_t; null for host plans
    ! What the typed interfaces were handed (weave_execute sets them), so a
    ! wrong element type or too small an array fails on every rank.
    integer(c_int32_t) :: buffer_checks = 0  ! ior(WEAVE_CHECK_TYPES, WEAVE_CHECK_ELEMENTS)
    integer(c_int) :: a_type = 0
    integer(c_int) :: b_type = 0
    integer(c_int) :: c_type = 0
    integer(c_int) :: bias_type = 0
    integer(c_int) :: gathered_a_type = 0
    integer(c_int64_t) :: a_elements = 0
    integer(c_int64_t) :: b_elements = 0
    integer(c_int64_t) :: c_elements = 0
    integer(c_int64_t) :: bias_elements = 0
    integer(c_int64_t) :: gathered_a_elements = 0
    ! The scales of FP8 operands (real(4) arrays, c_loc, or device pointers;
    ! layouts in doc/fp8.md), and how many each holds.
    type(c_ptr) :: a_scale = c_null_ptr
    type(c_ptr) :: b_scale = c_null_ptr
    type(c_ptr) :: gathered_a_scale = c_null_ptr
    integer(c_int64_t) :: a_scale_elements = 0
    integer(c_int64_t) :: b_scale_elements = 0
    integer(c_int64_t) :: gathered_a_scale_elements = 0
    ! Complex plans: the imaginary parts of alpha and beta.
    real(c_double) :: alpha_imag = 0
    real(c_double) :: beta_imag = 0
  end type weave_execute_args_t

  ! weave_plan_info_t: what a plan resolved its automatic choices to.
  type, bind(C) :: weave_plan_info_t
    integer(c_size_t) :: struct_size = 128  ! sizeof(weave_plan_info_t)
    integer(c_int) :: algorithm = 0
    integer(c_int) :: backend = 0
    integer(c_int) :: transport = 0
    integer(c_int) :: direction = 0
    integer(c_int) :: progress = 0
    integer(c_int32_t) :: chunks_per_shard = 0
    integer(c_int32_t) :: compute_streams = 0
    integer(c_int32_t) :: group_size = 0
    integer(c_int32_t) :: group_rank = 0
    integer(c_int64_t) :: workspace_bytes = 0
    integer(c_int64_t) :: steps = 0
    integer(c_int) :: a_type = 0             ! element types of the plan's matrices
    integer(c_int) :: b_type = 0
    integer(c_int) :: c_type = 0
    integer(c_int) :: bias_type = 0          ! 0: the plan has no bias
    integer(c_int) :: status = 0             ! WEAVE_SUCCESS while the plan can execute
    integer(c_int) :: a_scale_mode = 0       ! WEAVE_SCALE_* of A and B
    integer(c_int) :: b_scale_mode = 0
    integer(c_int64_t) :: a_scale_elements = 0  ! scales of this rank's blocks, and of the gathered A
    integer(c_int64_t) :: b_scale_elements = 0
    integer(c_int64_t) :: gathered_a_scale_elements = 0
    integer(c_int) :: wire_type = 0          ! what A's rows travel as
  end type weave_plan_info_t
end module weave_types
