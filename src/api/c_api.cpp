// The C API boundary: every entry point runs its body under `guarded`, which
// turns exceptions into a status code and the thread-local message.
#include <new>

#include "api/handles.hpp"
#include "api/live_handles.hpp"
#include "api/struct_size.hpp"
#include "backends/host/kokkos_runtime.hpp"
#include "core/abandoned_work.hpp"
#include "core/dtype.hpp"
#include "core/enum_value.hpp"
#include "core/error.hpp"
#include "core/mpi_check.hpp"
#include "weave/weave.h"
#include "weave_features.h"

using namespace weave::internal;

namespace {

template <class Body>
weave_status_t guarded(Body&& body) noexcept {
  // Work that earlier timeouts left in flight: release what has completed.
  reap_abandoned_work();
  // A binding's recorded error is for this call alone, whichever it is.
  struct DropPending {
    ~DropPending() { drop_pending_argument_error(); }
  } drop_pending;
  try {
    body();
    return WEAVE_SUCCESS;
  } catch (const Error& e) {
    set_last_error(e.names_its_rank() ? std::string(e.what()) : naming_world_rank(e.what()));
    return e.status();
  } catch (const std::bad_alloc&) {
    set_last_error("out of host memory");
    return WEAVE_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error(std::string("internal error: ") + e.what());
    return WEAVE_ERROR_INTERNAL;
  } catch (...) {
    set_last_error("internal error: unknown exception");
    return WEAVE_ERROR_INTERNAL;
  }
}

template <class T>
void require(const T* pointer, const char* name) {
  if (!pointer) fail(WEAVE_ERROR_NULL_ARGUMENT, name, " is NULL");
}

void require_mpi_initialized() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    fail(WEAVE_ERROR_MPI, "MPI has been finalized (a Weave grid can only be created between MPI_Init and "
         "MPI_Finalize)");
  if (!initialized) fail(WEAVE_ERROR_MPI, "MPI is not initialized (call MPI_Init before creating a Weave grid)");
}

}  // namespace

extern "C" {

const char* weave_status_string(weave_status_t status) { return status_name(enum_value(status)); }

const char* weave_last_error(void) { return last_error(); }

weave_status_t weave_report_argument_error(weave_status_t status, const char* message) {
  // Not under `guarded`, which drops what a call recorded when it returns.
  const int value = enum_value(status);
  if (!message) {
    set_last_error("message is NULL");
    return WEAVE_ERROR_NULL_ARGUMENT;
  }
  if (value <= WEAVE_SUCCESS || value > WEAVE_ERROR_INTERNAL) {
    set_last_error(str("status = ", value, " is not an error status (1 to ", static_cast<int>(WEAVE_ERROR_INTERNAL),
                       ")"));
    return WEAVE_ERROR_INVALID_VALUE;
  }
  set_pending_argument_error(status, message);
  return WEAVE_SUCCESS;
}

size_t weave_dtype_size(weave_dtype_t dtype) {
  const int value = enum_value(dtype);
  return is_valid_dtype(value) ? dtype_size(static_cast<DType>(value)) : 0;
}

weave_status_t weave_get_version(int* major, int* minor, int* patch) {
  return guarded([&] {
    require(major, "major");
    require(minor, "minor");
    require(patch, "patch");
    *major = WEAVE_VERSION_MAJOR;
    *minor = WEAVE_VERSION_MINOR;
    *patch = WEAVE_VERSION_PATCH;
  });
}

const char* weave_build_features(void) { return WEAVE_BUILD_FEATURES; }

weave_status_t weave_grid_create(MPI_Comm comm, int prows, int pcols, weave_grid_t* grid) {
  return guarded([&] {
    if (grid) *grid = nullptr;
    require_mpi_initialized();
    int world_rank = -1;
    WEAVE_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
    remember_world_rank(world_rank);
    if (comm == MPI_COMM_NULL) fail(WEAVE_ERROR_NULL_ARGUMENT, "comm is MPI_COMM_NULL");
    int size = 0;
    WEAVE_MPI_CHECK(MPI_Comm_size(comm, &size));
    // Shape errors are the same on every rank that passes the same shape;
    // a rank passing a different one is caught too. A NULL output on one
    // rank is reported on all of them, so none is left waiting.
    auto handle = std::make_unique<weave_grid_s>();
    handle->state = GridState::create(comm, prows, pcols, [&] {
      raise_pending_argument_error();
      require(grid, "grid");
      if (prows < 1 || pcols < 1)
        fail(WEAVE_ERROR_INVALID_VALUE, "grid shape ", prows, " x ", pcols, " must be positive");
      if (static_cast<long long>(prows) * pcols != size)
        fail(WEAVE_ERROR_INVALID_VALUE, "grid shape ", prows, " x ", pcols, " = ", static_cast<long long>(prows) * pcols,
             " ranks, but the communicator has ", size);
      host::ensure_kokkos_initialized();
    });
    adopt(handle.get());
    *grid = handle.release();
  });
}

weave_status_t weave_grid_create_fortran(MPI_Fint comm, int prows, int pcols, weave_grid_t* grid) {
  return weave_grid_create(MPI_Comm_f2c(comm), prows, pcols, grid);
}

weave_status_t weave_grid_destroy(weave_grid_t grid) {
  return guarded([&] {
    if (release_handle(grid, HandleKind::Grid, "grid")) delete grid;
  });
}

weave_status_t weave_grid_shape(weave_grid_t grid, int* prows, int* pcols) {
  return guarded([&] {
    require_live(grid, "grid");
    require(prows, "prows");
    require(pcols, "pcols");
    *prows = grid->state->prows();
    *pcols = grid->state->pcols();
  });
}

weave_status_t weave_grid_coords(weave_grid_t grid, int* row, int* col) {
  return guarded([&] {
    require_live(grid, "grid");
    require(row, "row");
    require(col, "col");
    *row = grid->state->row();
    *col = grid->state->col();
  });
}

weave_status_t weave_grid_group(weave_grid_t grid, weave_group_t group, int* size, int* rank) {
  return guarded([&] {
    require_live(grid, "grid");
    require(size, "size");
    require(rank, "rank");
    const GroupView view = grid->state->group(enum_value(group));
    *size = view.size;
    *rank = view.rank;
  });
}

weave_status_t weave_grid_group_comm(weave_grid_t grid, weave_group_t group, MPI_Comm* comm) {
  return guarded([&] {
    require_live(grid, "grid");
    require(comm, "comm");
    *comm = grid->state->group(enum_value(group)).comm;
  });
}

weave_status_t weave_matrix_create(weave_grid_t grid, const weave_matrix_desc_t* desc, weave_matrix_t* matrix) {
  return guarded([&] {
    require_live(grid, "grid");
    if (matrix) *matrix = nullptr;
    const std::shared_ptr<GridState>& state = grid->state;
    auto handle = std::make_unique<weave_matrix_s>();
    std::string malformed;
    state->begin_call(wait_bounds_before_agreement(0, &malformed), "weave_matrix_create");
    agree_on_errors(state->channel(), [&] {
      raise_pending_argument_error();
      if (!malformed.empty()) fail(WEAVE_ERROR_INVALID_VALUE, malformed);
      require(matrix, "matrix");
      require(desc, "desc");
      handle->desc = make_matrix(state, read_sized(desc, "desc"), "matrix");
    });
    // Everything but the leading dimension is the same on every rank.
    agree_on_errors(state->channel(), [&] {
      const MatrixDesc& m = handle->desc;
      std::vector<Argument> fields = {{"rows", m.rows},
                                      {"cols", m.cols},
                                      {"dtype", static_cast<int64_t>(m.dtype)},
                                      {"distribution", m.distribution},
                                      {"group", m.group},
                                      {"order", static_cast<int64_t>(m.order)},
                                      {"memory", static_cast<int64_t>(m.memory)},
                                      {"scale_mode", static_cast<int64_t>(m.scale_mode)}};
      for (int i = 0; i < m.row_split.parts(); ++i) fields.push_back({str("row_counts[", i, "]"), m.row_split.count(i)});
      for (int i = 0; i < m.col_split.parts(); ++i) fields.push_back({str("col_counts[", i, "]"), m.col_split.count(i)});
      if (m.distribution == WEAVE_DIST_BLOCK_CYCLIC) {
        auto add_axis = [&](const AxisLayout& axis, const char* block, const char* source, const char* start) {
          fields.push_back({block, axis.block()});
          fields.push_back({source, axis.is_replicated() ? -1 : axis.source()});
          fields.push_back({start, axis.start()});
        };
        add_axis(m.row_axis, "mb", "rsrc", "row_start");
        add_axis(m.col_axis, "nb", "csrc", "col_start");
      }
      check_same_on_all_ranks(state->channel(), fields, "weave_matrix_create");
    });
    adopt(handle.get());
    *matrix = handle.release();
  });
}

weave_status_t weave_matrix_destroy(weave_matrix_t matrix) {
  return guarded([&] {
    if (release_handle(matrix, HandleKind::Matrix, "matrix")) delete matrix;
  });
}

weave_status_t weave_matrix_local_shape(weave_matrix_t matrix, int64_t* rows, int64_t* cols) {
  return guarded([&] {
    require_live(matrix, "matrix");
    require(rows, "rows");
    require(cols, "cols");
    *rows = matrix->desc.local_rows;
    *cols = matrix->desc.local_cols;
  });
}

weave_status_t weave_matrix_local_offset(weave_matrix_t matrix, int64_t* row_offset, int64_t* col_offset) {
  return guarded([&] {
    require_live(matrix, "matrix");
    require(row_offset, "row_offset");
    require(col_offset, "col_offset");
    *row_offset = matrix->desc.row_offset;
    *col_offset = matrix->desc.col_offset;
  });
}

weave_status_t weave_matrix_ld(weave_matrix_t matrix, int64_t* ld) {
  return guarded([&] {
    require_live(matrix, "matrix");
    require(ld, "ld");
    *ld = matrix->desc.ld;
  });
}

weave_status_t weave_matrix_local_elements(weave_matrix_t matrix, int64_t* elements) {
  return guarded([&] {
    require_live(matrix, "matrix");
    require(elements, "elements");
    *elements = matrix->desc.local_elements();
  });
}

weave_status_t weave_plan_create(weave_grid_t grid, const weave_plan_desc_t* desc, weave_plan_t* plan) {
  return guarded([&] {
    require_live(grid, "grid");
    if (plan) *plan = nullptr;
    // A NULL desc or output on one rank must not leave the others in plan creation.
    // The plan's own timeout bounds its creation; a descriptor the checks
    // below reject creates under the default.
    int32_t timeout_ms = 0;
    if (desc) {
      try {
        timeout_ms = read_sized(desc, "desc").timeout_ms;
      } catch (const Error&) {
      }
    }
    // A malformed WEAVE_TIMEOUT is reported by Plan::create, inside its first
    // agreement.
    grid->state->begin_call(wait_bounds_before_agreement(timeout_ms, nullptr), "weave_plan_create");
    weave_plan_desc_t sized{};
    agree_on_errors(grid->state->channel(), [&] {
      raise_pending_argument_error();
      require(plan, "plan");
      require(desc, "desc");
      sized = read_sized(desc, "desc");
    });
    auto handle = std::make_unique<weave_plan_s>();
    handle->plan = Plan::create(grid->state, sized);
    adopt(handle.get());
    *plan = handle.release();
  });
}

weave_status_t weave_plan_destroy(weave_plan_t plan) {
  return guarded([&] {
    if (release_handle(plan, HandleKind::Plan, "plan")) delete plan;
  });
}

weave_status_t weave_plan_describe(weave_plan_t plan, const char** text) {
  return guarded([&] {
    require_live(plan, "plan");
    require(text, "text");
    *text = plan->plan->description().c_str();
  });
}

weave_status_t weave_plan_get_info(weave_plan_t plan, weave_plan_info_t* info) {
  return guarded([&] {
    require_live(plan, "plan");
    require(info, "info");
    write_sized(info, plan->plan->info(), "info");
  });
}

weave_status_t weave_execute(weave_plan_t plan, double alpha, const void* a, const void* b, double beta, void* c,
                             const void* bias, void* stream) {
  weave_execute_args_t args{};
  args.alpha = alpha;
  args.beta = beta;
  args.a = a;
  args.b = b;
  args.c = c;
  args.bias = bias;
  args.stream = stream;
  return weave_execute_ex(plan, &args);
}

weave_status_t weave_execute_ex(weave_plan_t plan, const weave_execute_args_t* args) {
  return guarded([&] {
    require_live(plan, "plan");
    plan->plan->execute(args);
  });
}

weave_status_t weave_plan_write_trace(weave_plan_t plan, const char* path) {
  return guarded([&] {
    require_live(plan, "plan");
    require(path, "path");
    plan->plan->write_trace(path);
  });
}

}  // extern "C"
