! The bind(C) types of the Fortran module must have the sizes and field
! offsets of weave.h's structs, and its constants the values of weave.h's
! enumerators. The C side (layout_probe.c) reports what the C compiler did.
! No MPI is needed; prints PASS or FAIL and fails the test on a mismatch.
program fortran_layout_test
  use, intrinsic :: iso_c_binding, only: c_char, c_int64_t, c_intptr_t, c_ptr, c_loc, c_sizeof, c_null_char
  use weave
  implicit none

  interface
    function weave_layout_probe(name) bind(C, name="weave_layout_probe") result(value)
      import :: c_char, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name
      integer(c_int64_t) :: value
    end function weave_layout_probe
  end interface

  type(weave_grid_t) :: grid
  type(weave_plan_t) :: plan
  type(weave_matrix_desc_t), target :: md
  type(weave_plan_desc_t), target :: pd
  type(weave_execute_args_t), target :: ea
  type(weave_plan_info_t), target :: info
  integer :: failures, checked

  failures = 0
  checked = 0

  call expect("sizeof(weave_grid_t)", int(c_sizeof(grid), c_int64_t))
  call expect("sizeof(weave_matrix_t)", int(c_sizeof(pd%a), c_int64_t))
  call expect("sizeof(weave_plan_t)", int(c_sizeof(plan), c_int64_t))

  call expect("sizeof(weave_matrix_desc_t)", int(c_sizeof(md), c_int64_t))
  call expect("sizeof(weave_matrix_desc_t)", int(md%struct_size, c_int64_t))
  call expect("weave_matrix_desc_t.struct_size", offset(c_loc(md%struct_size), c_loc(md)))
  call expect("weave_matrix_desc_t.rows", offset(c_loc(md%rows), c_loc(md)))
  call expect("weave_matrix_desc_t.cols", offset(c_loc(md%cols), c_loc(md)))
  call expect("weave_matrix_desc_t.dtype", offset(c_loc(md%dtype), c_loc(md)))
  call expect("weave_matrix_desc_t.distribution", offset(c_loc(md%distribution), c_loc(md)))
  call expect("weave_matrix_desc_t.group", offset(c_loc(md%group), c_loc(md)))
  call expect("weave_matrix_desc_t.row_counts", offset(c_loc(md%row_counts), c_loc(md)))
  call expect("weave_matrix_desc_t.col_counts", offset(c_loc(md%col_counts), c_loc(md)))
  call expect("weave_matrix_desc_t.ld", offset(c_loc(md%ld), c_loc(md)))
  call expect("weave_matrix_desc_t.order", offset(c_loc(md%order), c_loc(md)))
  call expect("weave_matrix_desc_t.memory", offset(c_loc(md%memory), c_loc(md)))
  call expect("weave_matrix_desc_t.scale_mode", offset(c_loc(md%scale_mode), c_loc(md)))
  call expect("weave_matrix_desc_t.mb", offset(c_loc(md%mb), c_loc(md)))
  call expect("weave_matrix_desc_t.nb", offset(c_loc(md%nb), c_loc(md)))
  call expect("weave_matrix_desc_t.rsrc", offset(c_loc(md%rsrc), c_loc(md)))
  call expect("weave_matrix_desc_t.csrc", offset(c_loc(md%csrc), c_loc(md)))
  call expect("weave_matrix_desc_t.row_start", offset(c_loc(md%row_start), c_loc(md)))
  call expect("weave_matrix_desc_t.col_start", offset(c_loc(md%col_start), c_loc(md)))

  call expect("sizeof(weave_plan_desc_t)", int(c_sizeof(pd), c_int64_t))
  call expect("sizeof(weave_plan_desc_t)", int(pd%struct_size, c_int64_t))
  call expect("weave_plan_desc_t.struct_size", offset(c_loc(pd%struct_size), c_loc(pd)))
  call expect("weave_plan_desc_t.operation", offset(c_loc(pd%operation), c_loc(pd)))
  call expect("weave_plan_desc_t.group", offset(c_loc(pd%group), c_loc(pd)))
  call expect("weave_plan_desc_t.op_a", offset(c_loc(pd%op_a), c_loc(pd)))
  call expect("weave_plan_desc_t.op_b", offset(c_loc(pd%op_b), c_loc(pd)))
  call expect("weave_plan_desc_t.a", offset(c_loc(pd%a), c_loc(pd)))
  call expect("weave_plan_desc_t.b", offset(c_loc(pd%b), c_loc(pd)))
  call expect("weave_plan_desc_t.c", offset(c_loc(pd%c), c_loc(pd)))
  call expect("weave_plan_desc_t.bias", offset(c_loc(pd%bias), c_loc(pd)))
  call expect("weave_plan_desc_t.algorithm", offset(c_loc(pd%algorithm), c_loc(pd)))
  call expect("weave_plan_desc_t.backend", offset(c_loc(pd%backend), c_loc(pd)))
  call expect("weave_plan_desc_t.transport", offset(c_loc(pd%transport), c_loc(pd)))
  call expect("weave_plan_desc_t.direction", offset(c_loc(pd%direction), c_loc(pd)))
  call expect("weave_plan_desc_t.chunks_per_shard", offset(c_loc(pd%chunks_per_shard), c_loc(pd)))
  call expect("weave_plan_desc_t.compute_streams", offset(c_loc(pd%compute_streams), c_loc(pd)))
  call expect("weave_plan_desc_t.progress", offset(c_loc(pd%progress), c_loc(pd)))
  call expect("weave_plan_desc_t.timeout_ms", offset(c_loc(pd%timeout_ms), c_loc(pd)))
  call expect("weave_plan_desc_t.flags", offset(c_loc(pd%flags), c_loc(pd)))
  call expect("weave_plan_desc_t.wire_type", offset(c_loc(pd%wire_type), c_loc(pd)))
  call expect("weave_plan_desc_t.reserved", offset(c_loc(pd%reserved), c_loc(pd)))

  call expect("sizeof(weave_execute_args_t)", int(c_sizeof(ea), c_int64_t))
  call expect("sizeof(weave_execute_args_t)", int(ea%struct_size, c_int64_t))
  call expect("weave_execute_args_t.struct_size", offset(c_loc(ea%struct_size), c_loc(ea)))
  call expect("weave_execute_args_t.alpha", offset(c_loc(ea%alpha), c_loc(ea)))
  call expect("weave_execute_args_t.beta", offset(c_loc(ea%beta), c_loc(ea)))
  call expect("weave_execute_args_t.a", offset(c_loc(ea%a), c_loc(ea)))
  call expect("weave_execute_args_t.b", offset(c_loc(ea%b), c_loc(ea)))
  call expect("weave_execute_args_t.c", offset(c_loc(ea%c), c_loc(ea)))
  call expect("weave_execute_args_t.bias", offset(c_loc(ea%bias), c_loc(ea)))
  call expect("weave_execute_args_t.gathered_a", offset(c_loc(ea%gathered_a), c_loc(ea)))
  call expect("weave_execute_args_t.ld_gathered_a", offset(c_loc(ea%ld_gathered_a), c_loc(ea)))
  call expect("weave_execute_args_t.stream", offset(c_loc(ea%stream), c_loc(ea)))
  call expect("weave_execute_args_t.buffer_checks", offset(c_loc(ea%buffer_checks), c_loc(ea)))
  call expect("weave_execute_args_t.a_type", offset(c_loc(ea%a_type), c_loc(ea)))
  call expect("weave_execute_args_t.b_type", offset(c_loc(ea%b_type), c_loc(ea)))
  call expect("weave_execute_args_t.c_type", offset(c_loc(ea%c_type), c_loc(ea)))
  call expect("weave_execute_args_t.bias_type", offset(c_loc(ea%bias_type), c_loc(ea)))
  call expect("weave_execute_args_t.gathered_a_type", offset(c_loc(ea%gathered_a_type), c_loc(ea)))
  call expect("weave_execute_args_t.a_elements", offset(c_loc(ea%a_elements), c_loc(ea)))
  call expect("weave_execute_args_t.b_elements", offset(c_loc(ea%b_elements), c_loc(ea)))
  call expect("weave_execute_args_t.c_elements", offset(c_loc(ea%c_elements), c_loc(ea)))
  call expect("weave_execute_args_t.bias_elements", offset(c_loc(ea%bias_elements), c_loc(ea)))
  call expect("weave_execute_args_t.gathered_a_elements", offset(c_loc(ea%gathered_a_elements), c_loc(ea)))
  call expect("weave_execute_args_t.a_scale", offset(c_loc(ea%a_scale), c_loc(ea)))
  call expect("weave_execute_args_t.b_scale", offset(c_loc(ea%b_scale), c_loc(ea)))
  call expect("weave_execute_args_t.gathered_a_scale", offset(c_loc(ea%gathered_a_scale), c_loc(ea)))
  call expect("weave_execute_args_t.a_scale_elements", offset(c_loc(ea%a_scale_elements), c_loc(ea)))
  call expect("weave_execute_args_t.b_scale_elements", offset(c_loc(ea%b_scale_elements), c_loc(ea)))
  call expect("weave_execute_args_t.gathered_a_scale_elements", offset(c_loc(ea%gathered_a_scale_elements), c_loc(ea)))
  call expect("weave_execute_args_t.alpha_imag", offset(c_loc(ea%alpha_imag), c_loc(ea)))
  call expect("weave_execute_args_t.beta_imag", offset(c_loc(ea%beta_imag), c_loc(ea)))

  call expect("sizeof(weave_plan_info_t)", int(c_sizeof(info), c_int64_t))
  call expect("sizeof(weave_plan_info_t)", int(info%struct_size, c_int64_t))
  call expect("weave_plan_info_t.struct_size", offset(c_loc(info%struct_size), c_loc(info)))
  call expect("weave_plan_info_t.algorithm", offset(c_loc(info%algorithm), c_loc(info)))
  call expect("weave_plan_info_t.backend", offset(c_loc(info%backend), c_loc(info)))
  call expect("weave_plan_info_t.transport", offset(c_loc(info%transport), c_loc(info)))
  call expect("weave_plan_info_t.direction", offset(c_loc(info%direction), c_loc(info)))
  call expect("weave_plan_info_t.progress", offset(c_loc(info%progress), c_loc(info)))
  call expect("weave_plan_info_t.chunks_per_shard", offset(c_loc(info%chunks_per_shard), c_loc(info)))
  call expect("weave_plan_info_t.compute_streams", offset(c_loc(info%compute_streams), c_loc(info)))
  call expect("weave_plan_info_t.group_size", offset(c_loc(info%group_size), c_loc(info)))
  call expect("weave_plan_info_t.group_rank", offset(c_loc(info%group_rank), c_loc(info)))
  call expect("weave_plan_info_t.workspace_bytes", offset(c_loc(info%workspace_bytes), c_loc(info)))
  call expect("weave_plan_info_t.steps", offset(c_loc(info%steps), c_loc(info)))
  call expect("weave_plan_info_t.a_type", offset(c_loc(info%a_type), c_loc(info)))
  call expect("weave_plan_info_t.b_type", offset(c_loc(info%b_type), c_loc(info)))
  call expect("weave_plan_info_t.c_type", offset(c_loc(info%c_type), c_loc(info)))
  call expect("weave_plan_info_t.bias_type", offset(c_loc(info%bias_type), c_loc(info)))
  call expect("weave_plan_info_t.status", offset(c_loc(info%status), c_loc(info)))
  call expect("weave_plan_info_t.a_scale_mode", offset(c_loc(info%a_scale_mode), c_loc(info)))
  call expect("weave_plan_info_t.b_scale_mode", offset(c_loc(info%b_scale_mode), c_loc(info)))
  call expect("weave_plan_info_t.a_scale_elements", offset(c_loc(info%a_scale_elements), c_loc(info)))
  call expect("weave_plan_info_t.b_scale_elements", offset(c_loc(info%b_scale_elements), c_loc(info)))
  call expect("weave_plan_info_t.gathered_a_scale_elements", offset(c_loc(info%gathered_a_scale_elements), c_loc(info)))
  call expect("weave_plan_info_t.wire_type", offset(c_loc(info%wire_type), c_loc(info)))

  call expect("WEAVE_VERSION_MAJOR", int(WEAVE_VERSION_MAJOR, c_int64_t))
  call expect("WEAVE_VERSION_MINOR", int(WEAVE_VERSION_MINOR, c_int64_t))
  call expect("WEAVE_VERSION_PATCH", int(WEAVE_VERSION_PATCH, c_int64_t))
  call expect("WEAVE_SUCCESS", int(WEAVE_SUCCESS, c_int64_t))
  call expect("WEAVE_ERROR_NULL_ARGUMENT", int(WEAVE_ERROR_NULL_ARGUMENT, c_int64_t))
  call expect("WEAVE_ERROR_INVALID_VALUE", int(WEAVE_ERROR_INVALID_VALUE, c_int64_t))
  call expect("WEAVE_ERROR_INVALID_COUNTS", int(WEAVE_ERROR_INVALID_COUNTS, c_int64_t))
  call expect("WEAVE_ERROR_INVALID_LEADING_DIMENSION", int(WEAVE_ERROR_INVALID_LEADING_DIMENSION, c_int64_t))
  call expect("WEAVE_ERROR_SHAPE_MISMATCH", int(WEAVE_ERROR_SHAPE_MISMATCH, c_int64_t))
  call expect("WEAVE_ERROR_DISTRIBUTION_MISMATCH", int(WEAVE_ERROR_DISTRIBUTION_MISMATCH, c_int64_t))
  call expect("WEAVE_ERROR_UNSUPPORTED_TYPE", int(WEAVE_ERROR_UNSUPPORTED_TYPE, c_int64_t))
  call expect("WEAVE_ERROR_RANK_MISMATCH", int(WEAVE_ERROR_RANK_MISMATCH, c_int64_t))
  call expect("WEAVE_ERROR_NOT_COMPILED", int(WEAVE_ERROR_NOT_COMPILED, c_int64_t))
  call expect("WEAVE_ERROR_UNSUPPORTED", int(WEAVE_ERROR_UNSUPPORTED, c_int64_t))
  call expect("WEAVE_ERROR_POINTER_KIND", int(WEAVE_ERROR_POINTER_KIND, c_int64_t))
  call expect("WEAVE_ERROR_TIMEOUT", int(WEAVE_ERROR_TIMEOUT, c_int64_t))
  call expect("WEAVE_ERROR_OUT_OF_MEMORY", int(WEAVE_ERROR_OUT_OF_MEMORY, c_int64_t))
  call expect("WEAVE_ERROR_MPI", int(WEAVE_ERROR_MPI, c_int64_t))
  call expect("WEAVE_ERROR_CUDA", int(WEAVE_ERROR_CUDA, c_int64_t))
  call expect("WEAVE_ERROR_CUBLAS", int(WEAVE_ERROR_CUBLAS, c_int64_t))
  call expect("WEAVE_ERROR_NCCL", int(WEAVE_ERROR_NCCL, c_int64_t))
  call expect("WEAVE_ERROR_UCX", int(WEAVE_ERROR_UCX, c_int64_t))
  call expect("WEAVE_ERROR_PLAN_FAILED", int(WEAVE_ERROR_PLAN_FAILED, c_int64_t))
  call expect("WEAVE_ERROR_INTERNAL", int(WEAVE_ERROR_INTERNAL, c_int64_t))
  call expect("WEAVE_CHECK_TYPES", int(WEAVE_CHECK_TYPES, c_int64_t))
  call expect("WEAVE_CHECK_ELEMENTS", int(WEAVE_CHECK_ELEMENTS, c_int64_t))
  call expect("WEAVE_FLOAT32", int(WEAVE_FLOAT32, c_int64_t))
  call expect("WEAVE_FLOAT64", int(WEAVE_FLOAT64, c_int64_t))
  call expect("WEAVE_FLOAT16", int(WEAVE_FLOAT16, c_int64_t))
  call expect("WEAVE_BFLOAT16", int(WEAVE_BFLOAT16, c_int64_t))
  call expect("WEAVE_FLOAT8_E4M3", int(WEAVE_FLOAT8_E4M3, c_int64_t))
  call expect("WEAVE_FLOAT8_E5M2", int(WEAVE_FLOAT8_E5M2, c_int64_t))
  call expect("WEAVE_SCALE_NONE", int(WEAVE_SCALE_NONE, c_int64_t))
  call expect("WEAVE_SCALE_TENSOR", int(WEAVE_SCALE_TENSOR, c_int64_t))
  call expect("WEAVE_SCALE_ROW_WISE", int(WEAVE_SCALE_ROW_WISE, c_int64_t))
  call expect("WEAVE_SCALE_BLOCK_1X128", int(WEAVE_SCALE_BLOCK_1X128, c_int64_t))
  call expect("WEAVE_SCALE_BLOCK_128X128", int(WEAVE_SCALE_BLOCK_128X128, c_int64_t))
  call expect("WEAVE_SCALE_MXFP8", int(WEAVE_SCALE_MXFP8, c_int64_t))
  call expect("WEAVE_COMPLEX64", int(WEAVE_COMPLEX64, c_int64_t))
  call expect("WEAVE_COMPLEX128", int(WEAVE_COMPLEX128, c_int64_t))
  call expect("WEAVE_DIST_REPLICATED", int(WEAVE_DIST_REPLICATED, c_int64_t))
  call expect("WEAVE_DIST_BLOCK_ROW", int(WEAVE_DIST_BLOCK_ROW, c_int64_t))
  call expect("WEAVE_DIST_BLOCK_COLUMN", int(WEAVE_DIST_BLOCK_COLUMN, c_int64_t))
  call expect("WEAVE_DIST_BLOCK_2D", int(WEAVE_DIST_BLOCK_2D, c_int64_t))
  call expect("WEAVE_DIST_BLOCK_CYCLIC", int(WEAVE_DIST_BLOCK_CYCLIC, c_int64_t))
  call expect("WEAVE_GROUP_GRID", int(WEAVE_GROUP_GRID, c_int64_t))
  call expect("WEAVE_GROUP_ROW", int(WEAVE_GROUP_ROW, c_int64_t))
  call expect("WEAVE_GROUP_COLUMN", int(WEAVE_GROUP_COLUMN, c_int64_t))
  call expect("WEAVE_ORDER_COLUMN_MAJOR", int(WEAVE_ORDER_COLUMN_MAJOR, c_int64_t))
  call expect("WEAVE_ORDER_ROW_MAJOR", int(WEAVE_ORDER_ROW_MAJOR, c_int64_t))
  call expect("WEAVE_MEMORY_HOST", int(WEAVE_MEMORY_HOST, c_int64_t))
  call expect("WEAVE_MEMORY_DEVICE", int(WEAVE_MEMORY_DEVICE, c_int64_t))
  call expect("WEAVE_OP_N", int(WEAVE_OP_N, c_int64_t))
  call expect("WEAVE_OP_T", int(WEAVE_OP_T, c_int64_t))
  call expect("WEAVE_OP_C", int(WEAVE_OP_C, c_int64_t))
  call expect("WEAVE_AG_GEMM", int(WEAVE_AG_GEMM, c_int64_t))
  call expect("WEAVE_GEMM_RS", int(WEAVE_GEMM_RS, c_int64_t))
  call expect("WEAVE_GEMM_AR", int(WEAVE_GEMM_AR, c_int64_t))
  call expect("WEAVE_GEMM", int(WEAVE_GEMM, c_int64_t))
  call expect("WEAVE_ALGORITHM_AUTO", int(WEAVE_ALGORITHM_AUTO, c_int64_t))
  call expect("WEAVE_ALGORITHM_RING", int(WEAVE_ALGORITHM_RING, c_int64_t))
  call expect("WEAVE_ALGORITHM_SEQUENTIAL", int(WEAVE_ALGORITHM_SEQUENTIAL, c_int64_t))
  call expect("WEAVE_ALGORITHM_DIRECT", int(WEAVE_ALGORITHM_DIRECT, c_int64_t))
  call expect("WEAVE_ALGORITHM_PIPELINED", int(WEAVE_ALGORITHM_PIPELINED, c_int64_t))
  call expect("WEAVE_ALGORITHM_HIERARCHICAL", int(WEAVE_ALGORITHM_HIERARCHICAL, c_int64_t))
  call expect("WEAVE_ALGORITHM_SUMMA", int(WEAVE_ALGORITHM_SUMMA, c_int64_t))
  call expect("WEAVE_BACKEND_AUTO", int(WEAVE_BACKEND_AUTO, c_int64_t))
  call expect("WEAVE_BACKEND_HOST", int(WEAVE_BACKEND_HOST, c_int64_t))
  call expect("WEAVE_BACKEND_CUDA", int(WEAVE_BACKEND_CUDA, c_int64_t))
  call expect("WEAVE_TRANSPORT_AUTO", int(WEAVE_TRANSPORT_AUTO, c_int64_t))
  call expect("WEAVE_TRANSPORT_MPI", int(WEAVE_TRANSPORT_MPI, c_int64_t))
  call expect("WEAVE_TRANSPORT_NCCL", int(WEAVE_TRANSPORT_NCCL, c_int64_t))
  call expect("WEAVE_TRANSPORT_UCX", int(WEAVE_TRANSPORT_UCX, c_int64_t))
  call expect("WEAVE_TRANSPORT_COPY_ENGINE", int(WEAVE_TRANSPORT_COPY_ENGINE, c_int64_t))
  call expect("WEAVE_TRANSPORT_SM", int(WEAVE_TRANSPORT_SM, c_int64_t))
  call expect("WEAVE_DIRECTION_AUTO", int(WEAVE_DIRECTION_AUTO, c_int64_t))
  call expect("WEAVE_DIRECTION_FORWARD", int(WEAVE_DIRECTION_FORWARD, c_int64_t))
  call expect("WEAVE_DIRECTION_BACKWARD", int(WEAVE_DIRECTION_BACKWARD, c_int64_t))
  call expect("WEAVE_DIRECTION_BIDIRECTIONAL", int(WEAVE_DIRECTION_BIDIRECTIONAL, c_int64_t))
  call expect("WEAVE_PROGRESS_AUTO", int(WEAVE_PROGRESS_AUTO, c_int64_t))
  call expect("WEAVE_PROGRESS_TILES", int(WEAVE_PROGRESS_TILES, c_int64_t))
  call expect("WEAVE_PROGRESS_THREAD", int(WEAVE_PROGRESS_THREAD, c_int64_t))
  call expect("WEAVE_FLAG_NONE", int(WEAVE_FLAG_NONE, c_int64_t))
  call expect("WEAVE_FLAG_ALLOW_TF32", int(WEAVE_FLAG_ALLOW_TF32, c_int64_t))
  call expect("WEAVE_FLAG_GATHERED_OUTPUT", int(WEAVE_FLAG_GATHERED_OUTPUT, c_int64_t))
  call expect("WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE", int(WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE, c_int64_t))
  call expect("WEAVE_FLAG_TRACE", int(WEAVE_FLAG_TRACE, c_int64_t))
  call expect("WEAVE_FLAG_NO_EXECUTE_CHECK", int(WEAVE_FLAG_NO_EXECUTE_CHECK, c_int64_t))
  call expect("WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE", int(WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE, c_int64_t))

  if (failures == 0) then
    print '("PASS: ", i0, " sizes, offsets and constants agree with weave.h")', checked
  else
    print '("FAIL: ", i0, " of ", i0, " sizes, offsets and constants differ from weave.h")', failures, checked
    error stop 1
  end if

contains

  subroutine expect(name, fortran_value)
    character(len=*), intent(in) :: name
    integer(c_int64_t), intent(in) :: fortran_value
    integer(c_int64_t) :: c_value
    checked = checked + 1
    c_value = weave_layout_probe(name // c_null_char)
    if (c_value /= fortran_value) then
      failures = failures + 1
      print '("mismatch: ", a, ": C says ", i0, ", Fortran says ", i0)', name, c_value, fortran_value
    end if
  end subroutine expect

  ! Byte distance from base to field.
  integer(c_int64_t) function offset(field, base)
    type(c_ptr), intent(in) :: field, base
    offset = transfer(field, 0_c_intptr_t) - transfer(base, 0_c_intptr_t)
  end function offset
end program fortran_layout_test
