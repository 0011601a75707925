// A plan chooses the UCX transport through its descriptor or the
// WEAVE_TRANSPORT environment variable, reports it (weave_plan_get_info,
// weave_plan_describe) and computes the right product with it; the explicit
// descriptor field wins over the environment. In a Weave built without UCX,
// both ways of asking for it fail with WEAVE_ERROR_NOT_COMPILED on every rank.
// Public C API only. Usage: mpiexec -n P weave_ucx_plan_test
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "weave/weave.h"

namespace {

int g_rank = 0, g_size = 1, g_failures = 0;

void expect(bool condition, const std::string& what) {
  if (condition) return;
  ++g_failures;
  std::fprintf(stderr, "rank %d: FAIL %s\n", g_rank, what.c_str());
}

// Exact in binary, so the products are exact and compared with ==.
double a_value(int64_t i, int64_t k) { return static_cast<double>((i * 7 + k * 3) % 11 - 5) / 8.0; }
double b_value(int64_t k, int64_t j) { return static_cast<double>((k * 5 + j * 2) % 13 - 6) / 4.0; }

struct Block {
  weave_matrix_t handle = nullptr;
  int64_t rows = 0, cols = 0, row0 = 0, col0 = 0, ld = 1;
  std::vector<double> data;
  ~Block() { weave_matrix_destroy(handle); }
  double* pointer() { return rows == 0 || cols == 0 ? nullptr : data.data(); }
};

void describe_block(weave_grid_t grid, int64_t rows, int64_t cols, weave_distribution_t distribution, Block* out) {
  weave_matrix_desc_t d{};
  d.rows = rows;
  d.cols = cols;
  d.dtype = WEAVE_FLOAT64;
  d.distribution = distribution;
  if (weave_matrix_create(grid, &d, &out->handle) != WEAVE_SUCCESS) {
    std::fprintf(stderr, "rank %d: weave_matrix_create: %s\n", g_rank, weave_last_error());
    std::exit(2);
  }
  int64_t elements = 0;
  weave_matrix_local_shape(out->handle, &out->rows, &out->cols);
  weave_matrix_local_offset(out->handle, &out->row0, &out->col0);
  weave_matrix_ld(out->handle, &out->ld);
  weave_matrix_local_elements(out->handle, &elements);
  out->data.assign(static_cast<std::size_t>(elements), 0.0);
}

struct Outcome {
  weave_status_t status = WEAVE_SUCCESS;
  std::string error, description;
  weave_plan_info_t info{};
  bool product_right = false;
};

// AG-GEMM (ring) or GEMM-AR (sequential, so with collectives) over a P x 1
// grid, M and N not multiples of P. Creates, describes and executes a plan.
Outcome run(weave_operation_t operation, weave_algorithm_t algorithm, weave_transport_t transport) {
  Outcome outcome;
  weave_grid_t grid = nullptr;
  weave_grid_create(MPI_COMM_WORLD, g_size, 1, &grid);
  const int64_t m = 5 * g_size + 1, n = 4 * g_size + 3, k = 3 * g_size + 2;
  const bool ag = operation == WEAVE_AG_GEMM;
  Block a, b, c;
  describe_block(grid, m, k, ag ? WEAVE_DIST_BLOCK_ROW : WEAVE_DIST_BLOCK_COLUMN, &a);
  describe_block(grid, k, n, ag ? WEAVE_DIST_BLOCK_COLUMN : WEAVE_DIST_BLOCK_ROW, &b);
  describe_block(grid, m, n, ag ? WEAVE_DIST_BLOCK_COLUMN : WEAVE_DIST_REPLICATED, &c);
  for (int64_t j = 0; j < a.cols; ++j)
    for (int64_t i = 0; i < a.rows; ++i) a.data[i + j * a.ld] = a_value(a.row0 + i, a.col0 + j);
  for (int64_t j = 0; j < b.cols; ++j)
    for (int64_t i = 0; i < b.rows; ++i) b.data[i + j * b.ld] = b_value(b.row0 + i, b.col0 + j);

  weave_plan_desc_t desc{};
  desc.operation = operation;
  desc.a = a.handle;
  desc.b = b.handle;
  desc.c = c.handle;
  desc.algorithm = algorithm;
  desc.transport = transport;
  desc.chunks_per_shard = ag ? 2 : 0;
  desc.timeout_ms = 60000;
  weave_plan_t plan = nullptr;
  outcome.status = weave_plan_create(grid, &desc, &plan);
  if (outcome.status != WEAVE_SUCCESS) {
    outcome.error = weave_last_error();
    weave_grid_destroy(grid);
    return outcome;
  }
  const char* text = nullptr;
  weave_plan_describe(plan, &text);
  outcome.description = text;
  weave_plan_get_info(plan, &outcome.info);
  if (weave_execute(plan, 1.0, a.pointer(), b.pointer(), 0.0, c.pointer(), nullptr, nullptr) != WEAVE_SUCCESS) {
    outcome.error = weave_last_error();
  } else {
    outcome.product_right = true;
    for (int64_t j = 0; j < c.cols; ++j)
      for (int64_t i = 0; i < c.rows; ++i) {
        double expected = 0;
        for (int64_t kk = 0; kk < k; ++kk) expected += a_value(c.row0 + i, kk) * b_value(kk, c.col0 + j);
        if (c.data[i + j * c.ld] != expected) outcome.product_right = false;
      }
  }
  weave_plan_destroy(plan);
  weave_grid_destroy(grid);
  return outcome;
}

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

// Whether every rank saw `condition`.
bool on_every_rank(bool condition) {
  int mine = condition ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

void check_ucx_runs() {
  unsetenv("WEAVE_TRANSPORT");
  Outcome o = run(WEAVE_AG_GEMM, WEAVE_ALGORITHM_RING, WEAVE_TRANSPORT_UCX);
  expect(o.status == WEAVE_SUCCESS, "AG-GEMM plan with transport = UCX: " + o.error);
  expect(o.info.transport == WEAVE_TRANSPORT_UCX, "weave_plan_get_info reports transport " +
                                                      std::to_string(o.info.transport) + ", not WEAVE_TRANSPORT_UCX");
  expect(contains(o.description, "transport ucx "), "describe does not name the ucx transport: " + o.description);
  expect(contains(o.description, "cuda memory supported: "), "describe does not say whether UCX moves CUDA memory: " +
                                                                 o.description);
  expect(o.product_right, "AG-GEMM over ucx computed a wrong product " + o.error);
  if (g_rank == 0) std::printf("descriptor:  %s\n", o.description.c_str());

  // The environment chooses when the descriptor leaves it automatic ...
  setenv("WEAVE_TRANSPORT", "ucx", 1);
  o = run(WEAVE_AG_GEMM, WEAVE_ALGORITHM_RING, WEAVE_TRANSPORT_AUTO);
  expect(o.status == WEAVE_SUCCESS && o.info.transport == WEAVE_TRANSPORT_UCX,
         "WEAVE_TRANSPORT=ucx did not give a ucx plan: " + o.error);
  expect(contains(o.description, "transport ucx ") && contains(o.description, "transport from WEAVE_TRANSPORT"),
         "describe does not say that WEAVE_TRANSPORT chose ucx: " + o.description);
  expect(o.product_right, "AG-GEMM chosen by WEAVE_TRANSPORT=ucx computed a wrong product " + o.error);
  // ... and only then.
  o = run(WEAVE_AG_GEMM, WEAVE_ALGORITHM_RING, WEAVE_TRANSPORT_MPI);
  expect(o.status == WEAVE_SUCCESS && o.info.transport == WEAVE_TRANSPORT_MPI && contains(o.description, "transport mpi"),
         "transport = MPI in the descriptor did not win over WEAVE_TRANSPORT=ucx: " + o.description + o.error);
  unsetenv("WEAVE_TRANSPORT");

  // The sequential algorithm's all-reduce is built from UCX messages.
  o = run(WEAVE_GEMM_AR, WEAVE_ALGORITHM_SEQUENTIAL, WEAVE_TRANSPORT_UCX);
  expect(o.status == WEAVE_SUCCESS && o.info.transport == WEAVE_TRANSPORT_UCX, "sequential GEMM-AR over ucx: " + o.error);
  if (g_size > 1)
    expect(contains(o.description, "collectives over ucx point-to-point"),
           "describe does not say how collectives travel: " + o.description);
  expect(o.product_right, "sequential GEMM-AR over ucx computed a wrong product " + o.error);
  if (g_rank == 0) std::printf("sequential: %s\n", o.description.c_str());
}

void check_ucx_refused() {
  unsetenv("WEAVE_TRANSPORT");
  Outcome o = run(WEAVE_AG_GEMM, WEAVE_ALGORITHM_RING, WEAVE_TRANSPORT_UCX);
  expect(on_every_rank(o.status == WEAVE_ERROR_NOT_COMPILED),
         std::string("transport = UCX in a Weave without UCX gave ") + weave_status_string(o.status) +
             ", not WEAVE_ERROR_NOT_COMPILED on every rank");
  expect(contains(o.error, "-DWEAVE_ENABLE_UCX=ON"), "the error does not name the CMake option: " + o.error);
  if (g_rank == 0) std::printf("descriptor: %s\n", o.error.c_str());

  setenv("WEAVE_TRANSPORT", "ucx", 1);
  o = run(WEAVE_AG_GEMM, WEAVE_ALGORITHM_RING, WEAVE_TRANSPORT_AUTO);
  expect(on_every_rank(o.status == WEAVE_ERROR_NOT_COMPILED),
         std::string("WEAVE_TRANSPORT=ucx in a Weave without UCX gave ") + weave_status_string(o.status) +
             ", not WEAVE_ERROR_NOT_COMPILED on every rank");
  unsetenv("WEAVE_TRANSPORT");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const bool compiled = contains(weave_build_features(), "ucx");
  if (g_rank == 0) std::printf("build features: %s\n", weave_build_features());
  if (compiled)
    check_ucx_runs();
  else
    check_ucx_refused();
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("%s: %s on %d ranks\n", failures ? "FAILED" : "PASSED",
                compiled ? "ucx plans report and run the ucx transport" : "ucx plans are refused as not compiled",
                g_size);
  MPI_Finalize();
  return failures ? 1 : 0;
}
