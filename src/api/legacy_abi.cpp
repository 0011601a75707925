// The entry points of Weave 0.1's ABI. Before its structs had struct_size,
// programs called weave_matrix_create, weave_plan_create, weave_plan_get_info
// and weave_execute_ex with the layouts below; weave.h now sends calls to the
// sized entry points (..._v2), and these symbols keep the programs built
// against the 0.1 header working: each converts its 0.1 struct and calls the
// sized function.
#include <cstdint>

#include "weave/weave.h"

// This file defines the unsuffixed symbols themselves.
#undef weave_matrix_create
#undef weave_plan_create
#undef weave_plan_get_info
#undef weave_execute_ex

namespace {

// Weave 0.1's structs, field for field.
struct MatrixDesc01 {
  int64_t rows;
  int64_t cols;
  weave_dtype_t dtype;
  weave_distribution_t distribution;
  weave_group_t group;
  const int64_t* row_counts;
  const int64_t* col_counts;
  int64_t ld;
  weave_order_t order;
  weave_memory_t memory;
};

struct PlanDesc01 {
  weave_operation_t operation;
  weave_group_t group;
  weave_op_t op_a;
  weave_op_t op_b;
  weave_matrix_t a;
  weave_matrix_t b;
  weave_matrix_t c;
  weave_matrix_t bias;
  weave_algorithm_t algorithm;
  weave_backend_t backend;
  weave_transport_t transport;
  weave_direction_t direction;
  int32_t chunks_per_shard;
  int32_t compute_streams;
  weave_progress_t progress;
  int32_t timeout_ms;
  int32_t flags;
};

struct PlanInfo01 {
  weave_algorithm_t algorithm;
  weave_backend_t backend;
  weave_transport_t transport;
  weave_direction_t direction;
  weave_progress_t progress;
  int32_t chunks_per_shard;
  int32_t compute_streams;
  int32_t group_size;
  int32_t group_rank;
  int64_t workspace_bytes;
  int64_t steps;
};

struct ExecuteArgs01 {
  double alpha;
  double beta;
  const void* a;
  const void* b;
  void* c;
  const void* bias;
  void* gathered_a;
  int64_t ld_gathered_a;
  void* stream;
};

// The layouts every 0.1 program was built with (LP64).
static_assert(sizeof(MatrixDesc01) == 64 && sizeof(PlanDesc01) == 88 && sizeof(PlanInfo01) == 56 &&
                  sizeof(ExecuteArgs01) == 72,
              "Weave 0.1's struct layouts must not change");

}  // namespace

#define WEAVE_LEGACY_EXPORT extern "C" __attribute__((visibility("default")))

WEAVE_LEGACY_EXPORT weave_status_t weave_matrix_create(weave_grid_t grid, const MatrixDesc01* desc,
                                                       weave_matrix_t* matrix) {
  if (!desc) return weave_matrix_create_v2(grid, nullptr, matrix);
  weave_matrix_desc_t d{};
  d.rows = desc->rows;
  d.cols = desc->cols;
  d.dtype = desc->dtype;
  d.distribution = desc->distribution;
  d.group = desc->group;
  d.row_counts = desc->row_counts;
  d.col_counts = desc->col_counts;
  d.ld = desc->ld;
  d.order = desc->order;
  d.memory = desc->memory;
  return weave_matrix_create_v2(grid, &d, matrix);
}

WEAVE_LEGACY_EXPORT weave_status_t weave_plan_create(weave_grid_t grid, const PlanDesc01* desc, weave_plan_t* plan) {
  if (!desc) return weave_plan_create_v2(grid, nullptr, plan);
  weave_plan_desc_t d{};
  d.operation = desc->operation;
  d.group = desc->group;
  d.op_a = desc->op_a;
  d.op_b = desc->op_b;
  d.a = desc->a;
  d.b = desc->b;
  d.c = desc->c;
  d.bias = desc->bias;
  d.algorithm = desc->algorithm;
  d.backend = desc->backend;
  d.transport = desc->transport;
  d.direction = desc->direction;
  d.chunks_per_shard = desc->chunks_per_shard;
  d.compute_streams = desc->compute_streams;
  d.progress = desc->progress;
  d.timeout_ms = desc->timeout_ms;
  d.flags = desc->flags;
  return weave_plan_create_v2(grid, &d, plan);
}

WEAVE_LEGACY_EXPORT weave_status_t weave_plan_get_info(weave_plan_t plan, PlanInfo01* info) {
  if (!info) return weave_plan_get_info_v2(plan, nullptr);
  weave_plan_info_t i{};
  const weave_status_t status = weave_plan_get_info_v2(plan, &i);
  if (status != WEAVE_SUCCESS) return status;
  info->algorithm = i.algorithm;
  info->backend = i.backend;
  info->transport = i.transport;
  info->direction = i.direction;
  info->progress = i.progress;
  info->chunks_per_shard = i.chunks_per_shard;
  info->compute_streams = i.compute_streams;
  info->group_size = i.group_size;
  info->group_rank = i.group_rank;
  info->workspace_bytes = i.workspace_bytes;
  info->steps = i.steps;
  return WEAVE_SUCCESS;
}

WEAVE_LEGACY_EXPORT weave_status_t weave_execute_ex(weave_plan_t plan, const ExecuteArgs01* args) {
  if (!args) return weave_execute_ex_v2(plan, nullptr);
  weave_execute_args_t a{};
  a.alpha = args->alpha;
  a.beta = args->beta;
  a.a = args->a;
  a.b = args->b;
  a.c = args->c;
  a.bias = args->bias;
  a.gathered_a = args->gathered_a;
  a.ld_gathered_a = args->ld_gathered_a;
  a.stream = args->stream;
  return weave_execute_ex_v2(plan, &a);
}
