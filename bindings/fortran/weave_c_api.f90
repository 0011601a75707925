! Interfaces to the C functions of weave.h (and of weave_fortran_support.c),
! one for one. Handles travel as type(c_ptr) by value, outputs by reference,
! status codes come back as integer(c_int). The public module `weave` wraps
! these; users do not call them directly.
module weave_c_api
  use, intrinsic :: iso_c_binding, only: c_ptr, c_int, c_int64_t, c_char, c_size_t, &
                                         c_associated, c_f_pointer
  use weave_types, only: weave_matrix_desc_t, weave_plan_desc_t, weave_execute_args_t, weave_plan_info_t
  implicit none
  private
  public :: c_weave_status_string, c_weave_get_version, c_weave_build_features, c_weave_dtype_size
  public :: c_weave_grid_create_fortran, c_weave_grid_destroy, c_weave_grid_shape, c_weave_grid_coords
  public :: c_weave_grid_group, c_weave_grid_group_comm_fortran
  public :: c_weave_matrix_create, c_weave_matrix_destroy, c_weave_matrix_local_shape
  public :: c_weave_matrix_local_offset, c_weave_matrix_ld, c_weave_matrix_local_elements
  public :: c_weave_plan_create, c_weave_plan_destroy, c_weave_plan_describe, c_weave_plan_get_info
  public :: c_weave_execute_ex, c_weave_plan_write_trace
  public :: c_weave_last_error, c_weave_report_argument_error
  public :: fortran_string, c_string

  interface
    ! --- status and library ------------------------------------------------
    function c_weave_status_string(status) bind(C, name="weave_status_string") result(text)
      import :: c_int, c_ptr
      integer(c_int), value :: status
      type(c_ptr) :: text
    end function c_weave_status_string

    function c_weave_get_version(major, minor, patch) bind(C, name="weave_get_version") result(status)
      import :: c_int
      integer(c_int), intent(out) :: major, minor, patch
      integer(c_int) :: status
    end function c_weave_get_version

    function c_weave_build_features() bind(C, name="weave_build_features") result(text)
      import :: c_ptr
      type(c_ptr) :: text
    end function c_weave_build_features

    function c_weave_dtype_size(dtype) bind(C, name="weave_dtype_size") result(bytes)
      import :: c_int, c_size_t
      integer(c_int), value :: dtype
      integer(c_size_t) :: bytes
    end function c_weave_dtype_size

    ! --- grid ---------------------------------------------------------------
    ! comm is an MPI_Fint (a Fortran communicator handle, as `use mpi` and
    ! MPI_Comm%MPI_VAL give it).
    function c_weave_grid_create_fortran(comm, prows, pcols, grid) &
        bind(C, name="weave_grid_create_fortran") result(status)
      import :: c_int, c_ptr
      integer(c_int), value :: comm, prows, pcols
      type(c_ptr), intent(out) :: grid
      integer(c_int) :: status
    end function c_weave_grid_create_fortran

    function c_weave_grid_destroy(grid) bind(C, name="weave_grid_destroy") result(status)
      import :: c_int, c_ptr
      type(c_ptr), value :: grid
      integer(c_int) :: status
    end function c_weave_grid_destroy

    function c_weave_grid_shape(grid, prows, pcols) bind(C, name="weave_grid_shape") result(status)
      import :: c_int, c_ptr
      type(c_ptr), value :: grid
      integer(c_int), intent(out) :: prows, pcols
      integer(c_int) :: status
    end function c_weave_grid_shape

    function c_weave_grid_coords(grid, row, col) bind(C, name="weave_grid_coords") result(status)
      import :: c_int, c_ptr
      type(c_ptr), value :: grid
      integer(c_int), intent(out) :: row, col
      integer(c_int) :: status
    end function c_weave_grid_coords

    function c_weave_grid_group(grid, group, size, rank) bind(C, name="weave_grid_group") result(status)
      import :: c_int, c_ptr
      type(c_ptr), value :: grid
      integer(c_int), value :: group
      integer(c_int), intent(out) :: size, rank
      integer(c_int) :: status
    end function c_weave_grid_group

    ! weave_grid_group_comm with the communicator converted to an MPI_Fint
    ! (weave_fortran_support.c).
    function c_weave_grid_group_comm_fortran(grid, group, comm) &
        bind(C, name="weave_fortran_grid_group_comm") result(status)
      import :: c_int, c_ptr
      type(c_ptr), value :: grid
      integer(c_int), value :: group
      integer(c_int), intent(out) :: comm
      integer(c_int) :: status
    end function c_weave_grid_group_comm_fortran

    ! --- matrices -----------------------------------------------------------
    ! desc is passed by reference, or as c_null_ptr through the c_ptr form
    ! below (the binding uses that to fail collectively).
    function c_weave_matrix_create(grid, desc, matrix) bind(C, name="weave_matrix_create_v2") result(status)
      import :: c_int, c_ptr
      type(c_ptr), value :: grid
      type(c_ptr), value :: desc
      type(c_ptr), intent(out) :: matrix
      integer(c_int) :: status
    end function c_weave_matrix_create

    function c_weave_matrix_destroy(matrix) bind(C, name="weave_matrix_destroy") result(status)
      import :: c_int, c_ptr
      type(c_ptr), value :: matrix
      integer(c_int) :: status
    end function c_weave_matrix_destroy

    function c_weave_matrix_local_shape(matrix, rows, cols) bind(C, name="weave_matrix_local_shape") result(status)
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: matrix
      integer(c_int64_t), intent(out) :: rows, cols
      integer(c_int) :: status
    end function c_weave_matrix_local_shape

    function c_weave_matrix_local_offset(matrix, row_offset, col_offset) &
        bind(C, name="weave_matrix_local_offset") result(status)
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: matrix
      integer(c_int64_t), intent(out) :: row_offset, col_offset
      integer(c_int) :: status
    end function c_weave_matrix_local_offset

    function c_weave_matrix_ld(matrix, ld) bind(C, name="weave_matrix_ld") result(status)
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: matrix
      integer(c_int64_t), intent(out) :: ld
      integer(c_int) :: status
    end function c_weave_matrix_ld

    function c_weave_matrix_local_elements(matrix, elements) &
        bind(C, name="weave_matrix_local_elements") result(status)
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: matrix
      integer(c_int64_t), intent(out) :: elements
      integer(c_int) :: status
    end function c_weave_matrix_local_elements

    ! --- plans --------------------------------------------------------------
    function c_weave_plan_create(grid, desc, plan) bind(C, name="weave_plan_create_v2") result(status)
      import :: c_int, c_ptr, weave_plan_desc_t
      type(c_ptr), value :: grid
      type(weave_plan_desc_t), intent(in) :: desc
      type(c_ptr), intent(out) :: plan
      integer(c_int) :: status
    end function c_weave_plan_create

    function c_weave_plan_destroy(plan) bind(C, name="weave_plan_destroy") result(status)
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
      integer(c_int) :: status
    end function c_weave_plan_destroy

    function c_weave_plan_describe(plan, text) bind(C, name="weave_plan_describe") result(status)
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
      type(c_ptr), intent(out) :: text
      integer(c_int) :: status
    end function c_weave_plan_describe

    function c_weave_plan_get_info(plan, info) bind(C, name="weave_plan_get_info_v2") result(status)
      import :: c_int, c_ptr, weave_plan_info_t
      type(c_ptr), value :: plan
      type(weave_plan_info_t), intent(inout) :: info  ! struct_size in, the rest out
      integer(c_int) :: status
    end function c_weave_plan_get_info

    function c_weave_execute_ex(plan, args) bind(C, name="weave_execute_ex_v2") result(status)
      import :: c_int, c_ptr, weave_execute_args_t
      type(c_ptr), value :: plan
      type(weave_execute_args_t), intent(in) :: args
      integer(c_int) :: status
    end function c_weave_execute_ex

    function c_weave_plan_write_trace(plan, path) bind(C, name="weave_plan_write_trace") result(status)
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: plan
      character(kind=c_char), dimension(*), intent(in) :: path
      integer(c_int) :: status
    end function c_weave_plan_write_trace

    ! --- errors ------------------------------------------------------------
    function c_weave_last_error() bind(C, name="weave_last_error") result(text)
      import :: c_ptr
      type(c_ptr) :: text
    end function c_weave_last_error

    function c_weave_report_argument_error(status, message) bind(C, name="weave_report_argument_error") &
        result(result_status)
      import :: c_int, c_char
      integer(c_int), value :: status
      character(kind=c_char), dimension(*), intent(in) :: message
      integer(c_int) :: result_status
    end function c_weave_report_argument_error

    function c_strlen(text) bind(C, name="strlen") result(length)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: text
      integer(c_size_t) :: length
    end function c_strlen
  end interface

contains

  ! A copy of a NUL-terminated C string ("" for a null pointer).
  function fortran_string(text) result(copy)
    type(c_ptr), intent(in) :: text
    character(len=:), allocatable :: copy
    character(kind=c_char), pointer :: chars(:)
    integer :: length, i

    if (.not. c_associated(text)) then
      copy = ""
      return
    end if
    length = int(c_strlen(text))
    call c_f_pointer(text, chars, [length])
    allocate(character(len=length) :: copy)
    do i = 1, length
      copy(i:i) = chars(i)
    end do
  end function fortran_string

  ! A NUL-terminated copy of a Fortran string, trailing blanks removed.
  function c_string(text) result(copy)
    character(len=*), intent(in) :: text
    character(kind=c_char, len=:), allocatable :: copy
    copy = trim(text) // char(0)
  end function c_string
end module weave_c_api
