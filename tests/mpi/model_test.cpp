// Plans that leave the algorithm to Weave over more than one rank calibrate
// at creation and say what the model chose and from what (weave_plan_describe),
// with the algorithm they report in weave_plan_get_info; WEAVE_CALIBRATE=time
// times the model's closest candidates however small the plan and runs the
// fastest, WEAVE_CALIBRATE=model says it did not time them,
// WEAVE_CALIBRATE=0 skips the calibration and says so; any other value is
// WEAVE_ERROR_INVALID_VALUE on every rank. Public C API only.
// Usage: mpiexec -n P weave_model_test
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "support/rank_checks.hpp"
#include "weave/weave.h"

namespace {

const char* algorithm_word(weave_algorithm_t a) {
  switch (a) {
    case WEAVE_ALGORITHM_RING: return "ring";
    case WEAVE_ALGORITHM_SEQUENTIAL: return "sequential";
    case WEAVE_ALGORITHM_DIRECT: return "direct";
    case WEAVE_ALGORITHM_PIPELINED: return "pipelined";
    case WEAVE_ALGORITHM_HIERARCHICAL: return "hierarchical";
    default: return "?";
  }
}

struct Made {
  weave_status_t status = WEAVE_SUCCESS;
  std::string description, error;
  weave_algorithm_t algorithm = WEAVE_ALGORITHM_AUTO;
};

// A plan of `operation` over a, b, c (algorithm automatic): its status,
// description and algorithm; the plan and the three matrices destroyed.
Made made_plan(weave_grid_t grid, weave_operation_t operation, weave_matrix_t a, weave_matrix_t b, weave_matrix_t c) {
  weave_plan_desc_t pd = WEAVE_PLAN_DESC_INIT;
  pd.operation = operation;
  pd.a = a;
  pd.b = b;
  pd.c = c;
  Made made;
  weave_plan_t plan = nullptr;
  made.status = weave_plan_create(grid, &pd, &plan);
  if (made.status == WEAVE_SUCCESS) {
    const char* text = nullptr;
    weave_plan_describe(plan, &text);
    made.description = text;
    weave_plan_info_t info = WEAVE_PLAN_INFO_INIT;
    weave_plan_get_info(plan, &info);
    made.algorithm = info.algorithm;
  } else {
    made.error = weave_last_error();
  }
  weave_plan_destroy(plan);
  weave_matrix_destroy(a);
  weave_matrix_destroy(b);
  weave_matrix_destroy(c);
  return made;
}

// A GEMM-RS plan of 96 x 80 x 64 (f64) over the whole grid, algorithm automatic.
Made make(weave_grid_t grid) {
  weave_matrix_t a = nullptr, b = nullptr, c = nullptr;
  weave_matrix_desc_t d = WEAVE_MATRIX_DESC_INIT;
  d.dtype = WEAVE_FLOAT64;
  d.rows = 96;
  d.cols = 64;
  d.distribution = WEAVE_DIST_BLOCK_COLUMN;
  weave_matrix_create(grid, &d, &a);
  d.rows = 64;
  d.cols = 80;
  d.distribution = WEAVE_DIST_BLOCK_ROW;
  weave_matrix_create(grid, &d, &b);
  d.rows = 96;
  d.cols = 80;
  weave_matrix_create(grid, &d, &c);
  return made_plan(grid, WEAVE_GEMM_RS, a, b, c);
}

// An AG-GEMM plan (f64) whose rows are cut unevenly: 8, 16, 24, ... rows
// per rank, K = 64, N = 16 per rank; algorithm automatic.
Made make_uneven_ag(weave_grid_t grid, int ranks) {
  std::vector<int64_t> rows;
  int64_t m = 0;
  for (int r = 0; r < ranks; ++r) {
    rows.push_back(8 * (r + 1));
    m += rows.back();
  }
  weave_matrix_t a = nullptr, b = nullptr, c = nullptr;
  weave_matrix_desc_t d = WEAVE_MATRIX_DESC_INIT;
  d.dtype = WEAVE_FLOAT64;
  d.rows = m;
  d.cols = 64;
  d.distribution = WEAVE_DIST_BLOCK_ROW;
  d.row_counts = rows.data();
  weave_matrix_create(grid, &d, &a);
  d.row_counts = nullptr;
  d.rows = 64;
  d.cols = 16 * ranks;
  d.distribution = WEAVE_DIST_BLOCK_COLUMN;
  weave_matrix_create(grid, &d, &b);
  d.rows = m;
  weave_matrix_create(grid, &d, &c);
  return made_plan(grid, WEAVE_AG_GEMM, a, b, c);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  weave_test::RankChecks checks;
  const int g_size = checks.size();
  auto expect = [&](bool condition, const std::string& what) { checks.expect(condition, what); };
  unsetenv("WEAVE_CALIBRATE");
  weave_grid_t grid = nullptr;
  weave_grid_create(MPI_COMM_WORLD, g_size, 1, &grid);

  Made made = make(grid);
  expect(made.status == WEAVE_SUCCESS, "plan creation: " + made.error);
  if (g_size > 1) {
    expect(contains(made.description, "calibrated at plan creation"), "no calibration in: " + made.description);
    expect(contains(made.description, "chosen by the model"), "no model's choice in: " + made.description);
    expect(contains(made.description, std::string(algorithm_word(made.algorithm)) + " chosen by the model") ||
               contains(made.description, std::string(algorithm_word(made.algorithm)) + "/"),
           std::string("info says ") + algorithm_word(made.algorithm) + ", describe: " + made.description);
    // A second plan of the grid reuses the links' calibration and chooses alike.
    const Made again = make(grid);
    expect(again.algorithm == made.algorithm, "a second plan chose another algorithm");
    // Its rows are even: the all-gather was timed in equal parts. An
    // AG-GEMM whose rows are cut unevenly times it in its own proportions.
    expect(!contains(made.description, "uneven parts"), "even rows timed as uneven: " + made.description);
    const Made uneven = make_uneven_ag(grid, g_size);
    expect(uneven.status == WEAVE_SUCCESS, "uneven AG-GEMM plan creation: " + uneven.error);
    expect(contains(uneven.description, "all-gather") && contains(uneven.description, "(in this plan's uneven parts)"),
           "uneven rows' all-gather not timed in their parts: " + uneven.description);
  } else {
    expect(!contains(made.description, "calibrated"), "one rank calibrated: " + made.description);
  }

  // The reductions' ring and direct exchange are predicted alike on the
  // host: WEAVE_CALIBRATE=time times them and says what it measured.
  setenv("WEAVE_CALIBRATE", "time", 1);
  made = make(grid);
  expect(made.status == WEAVE_SUCCESS, "plan creation with WEAVE_CALIBRATE=time: " + made.error);
  if (g_size > 1) {
    const std::string word = algorithm_word(made.algorithm);
    expect(contains(made.description, "chosen by timing the model's closest candidates at plan creation (measured ms"),
           "WEAVE_CALIBRATE=time timed nothing: " + made.description);
    // "...; ring/2 chosen by timing ...": the name before it is info's.
    const std::size_t at = made.description.find(" chosen by timing");
    const std::size_t from = made.description.rfind(' ', at == std::string::npos ? 0 : at - 1);
    const std::string named = at == std::string::npos || from == std::string::npos
                                  ? std::string()
                                  : made.description.substr(from + 1, at - from - 1);
    expect(named.substr(0, named.find('/')) == word, "info says " + word + ", describe: " + made.description);
  }
  setenv("WEAVE_CALIBRATE", "model", 1);
  made = make(grid);
  expect(made.status == WEAVE_SUCCESS, "plan creation with WEAVE_CALIBRATE=model: " + made.error);
  // (Where the model had close candidates, it says it did not time them.)
  if (g_size > 1)
    expect(!contains(made.description, "chosen by timing") &&
               (!contains(made.description, "not timed") ||
                contains(made.description, "not timed (WEAVE_CALIBRATE=model)")),
           "WEAVE_CALIBRATE=model timed: " + made.description);

  setenv("WEAVE_CALIBRATE", "0", 1);
  made = make(grid);
  expect(made.status == WEAVE_SUCCESS, "plan creation with WEAVE_CALIBRATE=0: " + made.error);
  if (g_size > 1) {
    expect(contains(made.description, "WEAVE_CALIBRATE=0") && !contains(made.description, "calibrated at"),
           "WEAVE_CALIBRATE=0 not honoured: " + made.description);
    expect(made.algorithm == WEAVE_ALGORITHM_RING, "without calibration the host's measured rule is the ring");
  }

  setenv("WEAVE_CALIBRATE", "often", 1);
  made = make(grid);
  expect(made.status == WEAVE_ERROR_INVALID_VALUE && contains(made.error, "WEAVE_CALIBRATE=often"),
         "WEAVE_CALIBRATE=often: " + made.error);
  unsetenv("WEAVE_CALIBRATE");

  weave_grid_destroy(grid);
  const int status = checks.finish("the model's plans on " + std::to_string(g_size) + " ranks");
  MPI_Finalize();
  return status;
}
