/* The C side of fortran_layout_test: sizes and field offsets of weave.h's
 * structs as the C compiler lays them out, and the values of its constants,
 * looked up by name. */
#include <stddef.h>
#include <string.h>

#include "weave/weave.h"

long long weave_layout_probe(const char* name);

#define CONSTANT(name) {#name, (long long)(name)}
#define SIZE(type) {"sizeof(" #type ")", (long long)sizeof(type)}
#define FIELD(type, field) {#type "." #field, (long long)offsetof(type, field)}

static const struct {
  const char* name;
  long long value;
} entries[] = {
    SIZE(weave_grid_t), SIZE(weave_matrix_t), SIZE(weave_plan_t),
    SIZE(weave_matrix_desc_t), FIELD(weave_matrix_desc_t, struct_size),
    FIELD(weave_matrix_desc_t, rows), FIELD(weave_matrix_desc_t, cols), FIELD(weave_matrix_desc_t, dtype),
    FIELD(weave_matrix_desc_t, distribution), FIELD(weave_matrix_desc_t, group),
    FIELD(weave_matrix_desc_t, row_counts), FIELD(weave_matrix_desc_t, col_counts), FIELD(weave_matrix_desc_t, ld),
    FIELD(weave_matrix_desc_t, order), FIELD(weave_matrix_desc_t, memory), FIELD(weave_matrix_desc_t, scale_mode),
    FIELD(weave_matrix_desc_t, mb), FIELD(weave_matrix_desc_t, nb), FIELD(weave_matrix_desc_t, rsrc),
    FIELD(weave_matrix_desc_t, csrc), FIELD(weave_matrix_desc_t, row_start), FIELD(weave_matrix_desc_t, col_start),
    SIZE(weave_plan_desc_t), FIELD(weave_plan_desc_t, struct_size),
    FIELD(weave_plan_desc_t, operation), FIELD(weave_plan_desc_t, group), FIELD(weave_plan_desc_t, op_a),
    FIELD(weave_plan_desc_t, op_b), FIELD(weave_plan_desc_t, a), FIELD(weave_plan_desc_t, b),
    FIELD(weave_plan_desc_t, c), FIELD(weave_plan_desc_t, bias), FIELD(weave_plan_desc_t, algorithm),
    FIELD(weave_plan_desc_t, backend), FIELD(weave_plan_desc_t, transport), FIELD(weave_plan_desc_t, direction),
    FIELD(weave_plan_desc_t, chunks_per_shard), FIELD(weave_plan_desc_t, compute_streams),
    FIELD(weave_plan_desc_t, progress), FIELD(weave_plan_desc_t, timeout_ms), FIELD(weave_plan_desc_t, flags),
    FIELD(weave_plan_desc_t, wire_type), FIELD(weave_plan_desc_t, reserved),
    SIZE(weave_execute_args_t), FIELD(weave_execute_args_t, struct_size),
    FIELD(weave_execute_args_t, alpha), FIELD(weave_execute_args_t, beta), FIELD(weave_execute_args_t, a),
    FIELD(weave_execute_args_t, b), FIELD(weave_execute_args_t, c), FIELD(weave_execute_args_t, bias),
    FIELD(weave_execute_args_t, gathered_a), FIELD(weave_execute_args_t, ld_gathered_a),
    FIELD(weave_execute_args_t, stream), FIELD(weave_execute_args_t, buffer_checks),
    FIELD(weave_execute_args_t, a_type), FIELD(weave_execute_args_t, b_type), FIELD(weave_execute_args_t, c_type),
    FIELD(weave_execute_args_t, bias_type), FIELD(weave_execute_args_t, gathered_a_type),
    FIELD(weave_execute_args_t, a_elements), FIELD(weave_execute_args_t, b_elements),
    FIELD(weave_execute_args_t, c_elements), FIELD(weave_execute_args_t, bias_elements),
    FIELD(weave_execute_args_t, gathered_a_elements), FIELD(weave_execute_args_t, a_scale),
    FIELD(weave_execute_args_t, b_scale), FIELD(weave_execute_args_t, gathered_a_scale),
    FIELD(weave_execute_args_t, a_scale_elements), FIELD(weave_execute_args_t, b_scale_elements),
    FIELD(weave_execute_args_t, gathered_a_scale_elements), FIELD(weave_execute_args_t, alpha_imag),
    FIELD(weave_execute_args_t, beta_imag),
    SIZE(weave_plan_info_t), FIELD(weave_plan_info_t, struct_size),
    FIELD(weave_plan_info_t, algorithm), FIELD(weave_plan_info_t, backend), FIELD(weave_plan_info_t, transport),
    FIELD(weave_plan_info_t, direction), FIELD(weave_plan_info_t, progress),
    FIELD(weave_plan_info_t, chunks_per_shard), FIELD(weave_plan_info_t, compute_streams),
    FIELD(weave_plan_info_t, group_size), FIELD(weave_plan_info_t, group_rank),
    FIELD(weave_plan_info_t, workspace_bytes), FIELD(weave_plan_info_t, steps),
    FIELD(weave_plan_info_t, a_type), FIELD(weave_plan_info_t, b_type), FIELD(weave_plan_info_t, c_type),
    FIELD(weave_plan_info_t, bias_type), FIELD(weave_plan_info_t, status),
    FIELD(weave_plan_info_t, a_scale_mode), FIELD(weave_plan_info_t, b_scale_mode),
    FIELD(weave_plan_info_t, a_scale_elements), FIELD(weave_plan_info_t, b_scale_elements),
    FIELD(weave_plan_info_t, gathered_a_scale_elements), FIELD(weave_plan_info_t, wire_type),
    CONSTANT(WEAVE_VERSION_MAJOR), CONSTANT(WEAVE_VERSION_MINOR), CONSTANT(WEAVE_VERSION_PATCH),
    CONSTANT(WEAVE_SUCCESS), CONSTANT(WEAVE_ERROR_NULL_ARGUMENT), CONSTANT(WEAVE_ERROR_INVALID_VALUE),
    CONSTANT(WEAVE_ERROR_INVALID_COUNTS), CONSTANT(WEAVE_ERROR_INVALID_LEADING_DIMENSION),
    CONSTANT(WEAVE_ERROR_SHAPE_MISMATCH), CONSTANT(WEAVE_ERROR_DISTRIBUTION_MISMATCH),
    CONSTANT(WEAVE_ERROR_UNSUPPORTED_TYPE), CONSTANT(WEAVE_ERROR_RANK_MISMATCH), CONSTANT(WEAVE_ERROR_NOT_COMPILED),
    CONSTANT(WEAVE_ERROR_UNSUPPORTED), CONSTANT(WEAVE_ERROR_POINTER_KIND), CONSTANT(WEAVE_ERROR_TIMEOUT),
    CONSTANT(WEAVE_ERROR_OUT_OF_MEMORY), CONSTANT(WEAVE_ERROR_MPI), CONSTANT(WEAVE_ERROR_CUDA),
    CONSTANT(WEAVE_ERROR_CUBLAS), CONSTANT(WEAVE_ERROR_NCCL), CONSTANT(WEAVE_ERROR_UCX),
    CONSTANT(WEAVE_ERROR_PLAN_FAILED), CONSTANT(WEAVE_ERROR_INTERNAL),
    CONSTANT(WEAVE_CHECK_TYPES), CONSTANT(WEAVE_CHECK_ELEMENTS),
    CONSTANT(WEAVE_FLOAT32), CONSTANT(WEAVE_FLOAT64), CONSTANT(WEAVE_FLOAT16), CONSTANT(WEAVE_BFLOAT16),
    CONSTANT(WEAVE_FLOAT8_E4M3), CONSTANT(WEAVE_FLOAT8_E5M2),
    CONSTANT(WEAVE_SCALE_NONE), CONSTANT(WEAVE_SCALE_TENSOR), CONSTANT(WEAVE_SCALE_ROW_WISE),
    CONSTANT(WEAVE_SCALE_BLOCK_1X128), CONSTANT(WEAVE_SCALE_BLOCK_128X128), CONSTANT(WEAVE_SCALE_MXFP8),
    CONSTANT(WEAVE_COMPLEX64), CONSTANT(WEAVE_COMPLEX128),
    CONSTANT(WEAVE_DIST_REPLICATED), CONSTANT(WEAVE_DIST_BLOCK_ROW), CONSTANT(WEAVE_DIST_BLOCK_COLUMN),
    CONSTANT(WEAVE_DIST_BLOCK_2D), CONSTANT(WEAVE_DIST_BLOCK_CYCLIC),
    CONSTANT(WEAVE_GROUP_GRID), CONSTANT(WEAVE_GROUP_ROW), CONSTANT(WEAVE_GROUP_COLUMN),
    CONSTANT(WEAVE_ORDER_COLUMN_MAJOR), CONSTANT(WEAVE_ORDER_ROW_MAJOR),
    CONSTANT(WEAVE_MEMORY_HOST), CONSTANT(WEAVE_MEMORY_DEVICE),
    CONSTANT(WEAVE_OP_N), CONSTANT(WEAVE_OP_T), CONSTANT(WEAVE_OP_C),
    CONSTANT(WEAVE_AG_GEMM), CONSTANT(WEAVE_GEMM_RS), CONSTANT(WEAVE_GEMM_AR), CONSTANT(WEAVE_GEMM),
    CONSTANT(WEAVE_ALGORITHM_AUTO), CONSTANT(WEAVE_ALGORITHM_RING), CONSTANT(WEAVE_ALGORITHM_SEQUENTIAL),
    CONSTANT(WEAVE_ALGORITHM_DIRECT), CONSTANT(WEAVE_ALGORITHM_PIPELINED), CONSTANT(WEAVE_ALGORITHM_HIERARCHICAL),
    CONSTANT(WEAVE_ALGORITHM_SUMMA),
    CONSTANT(WEAVE_BACKEND_AUTO), CONSTANT(WEAVE_BACKEND_HOST), CONSTANT(WEAVE_BACKEND_CUDA),
    CONSTANT(WEAVE_TRANSPORT_AUTO), CONSTANT(WEAVE_TRANSPORT_MPI), CONSTANT(WEAVE_TRANSPORT_NCCL),
    CONSTANT(WEAVE_TRANSPORT_UCX), CONSTANT(WEAVE_TRANSPORT_COPY_ENGINE), CONSTANT(WEAVE_TRANSPORT_SM),
    CONSTANT(WEAVE_DIRECTION_AUTO), CONSTANT(WEAVE_DIRECTION_FORWARD), CONSTANT(WEAVE_DIRECTION_BACKWARD),
    CONSTANT(WEAVE_DIRECTION_BIDIRECTIONAL),
    CONSTANT(WEAVE_PROGRESS_AUTO), CONSTANT(WEAVE_PROGRESS_TILES), CONSTANT(WEAVE_PROGRESS_THREAD),
    CONSTANT(WEAVE_FLAG_NONE), CONSTANT(WEAVE_FLAG_ALLOW_TF32), CONSTANT(WEAVE_FLAG_GATHERED_OUTPUT),
    CONSTANT(WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE), CONSTANT(WEAVE_FLAG_TRACE), CONSTANT(WEAVE_FLAG_NO_EXECUTE_CHECK),
    CONSTANT(WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE),
};

/* The value recorded under `name`, or -1 when the name is unknown. */
long long weave_layout_probe(const char* name) {
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; ++i)
    if (strcmp(entries[i].name, name) == 0) return entries[i].value;
  return -1;
}
