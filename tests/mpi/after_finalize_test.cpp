// Weave's calls after MPI_Finalize: Open MPI aborts the process on any MPI
// call made after MPI_Finalize, so every call that would communicate returns
// WEAVE_ERROR_MPI saying that MPI has been finalized instead (the library
// never ends the process); destroying handles afterwards is allowed. The
// C++ interface's weave::Grid(comm), which asks MPI for comm's size, throws
// weave::Error there too, and for MPI_COMM_NULL before.
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "weave/weave.hpp"

namespace {

int g_rank = 0, g_failed = 0;

void expect(bool ok, const std::string& what) {
  if (ok) return;
  ++g_failed;
  std::fprintf(stderr, "rank %d: %s\n", g_rank, what.c_str());
}

// weave::Grid(comm) must throw weave::Error with `want` and `words` in its
// message, not let MPI end the process.
void expect_grid_throws(MPI_Comm comm, weave_status_t want, const char* words, const std::string& when) {
  try {
    weave::Grid grid(comm);
    expect(false, "weave::Grid(comm) " + when + " did not throw");
  } catch (const weave::Error& e) {
    expect(e.status() == want && std::string(e.what()).find(words) != std::string::npos,
           "weave::Grid(comm) " + when + " threw " + weave_status_string(e.status()) + ": " + e.what());
  }
}

void expect_finalized(weave_status_t got, const char* call) {
  const std::string message = weave_last_error();
  expect(got == WEAVE_ERROR_MPI, std::string(call) + " after MPI_Finalize returned " + weave_status_string(got) +
                                     ", not WEAVE_ERROR_MPI (message: \"" + message + "\")");
  expect(message.find("has been finalized") != std::string::npos,
         std::string(call) + ": message \"" + message + "\" does not say that MPI is finalized");
}

weave_matrix_desc_t desc_of(int64_t rows, int64_t cols, weave_distribution_t distribution) {
  weave_matrix_desc_t d = WEAVE_MATRIX_DESC_INIT;
  d.rows = rows;
  d.cols = cols;
  d.dtype = WEAVE_FLOAT64;
  d.distribution = distribution;
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  weave_grid_t grid = nullptr;
  weave_matrix_t a = nullptr, b = nullptr, c = nullptr;
  weave_plan_t plan = nullptr;
  expect_grid_throws(MPI_COMM_NULL, WEAVE_ERROR_NULL_ARGUMENT, "MPI_COMM_NULL", "of MPI_COMM_NULL");
  // AG-GEMM: A M x K block-row, B K x N and C M x N block-column.
  const weave_matrix_desc_t da = desc_of(2 * size, 3, WEAVE_DIST_BLOCK_ROW),
                            db = desc_of(3, 2 * size, WEAVE_DIST_BLOCK_COLUMN),
                            dc = desc_of(2 * size, 2 * size, WEAVE_DIST_BLOCK_COLUMN);
  if (weave_grid_create(MPI_COMM_WORLD, size, 1, &grid) != WEAVE_SUCCESS ||
      weave_matrix_create(grid, &da, &a) != WEAVE_SUCCESS || weave_matrix_create(grid, &db, &b) != WEAVE_SUCCESS ||
      weave_matrix_create(grid, &dc, &c) != WEAVE_SUCCESS) {
    std::fprintf(stderr, "rank %d: setup failed: %s\n", g_rank, weave_last_error());
    MPI_Finalize();
    return 1;
  }
  weave_plan_desc_t pd = WEAVE_PLAN_DESC_INIT;
  pd.operation = WEAVE_AG_GEMM;
  pd.a = a;
  pd.b = b;
  pd.c = c;
  if (weave_plan_create(grid, &pd, &plan) != WEAVE_SUCCESS) {
    std::fprintf(stderr, "rank %d: setup failed: %s\n", g_rank, weave_last_error());
    MPI_Finalize();
    return 1;
  }
  int64_t na = 0, nb = 0, nc = 0;
  weave_matrix_local_elements(a, &na);
  weave_matrix_local_elements(b, &nb);
  weave_matrix_local_elements(c, &nc);
  std::vector<double> av(static_cast<size_t>(na) + 1, 1.0), bv(static_cast<size_t>(nb) + 1, 1.0),
      cv(static_cast<size_t>(nc) + 1, 0.0);
  expect(weave_execute(plan, 1.0, av.data(), bv.data(), 0.0, cv.data(), nullptr, nullptr) == WEAVE_SUCCESS,
         std::string("execute before MPI_Finalize failed: ") + weave_last_error());

  MPI_Finalize();

  weave_matrix_t late_matrix = nullptr;
  expect_finalized(weave_matrix_create(grid, &dc, &late_matrix), "weave_matrix_create");
  expect(late_matrix == nullptr, "a failed weave_matrix_create left a handle");
  weave_plan_t late_plan = nullptr;
  expect_finalized(weave_plan_create(grid, &pd, &late_plan), "weave_plan_create");
  expect(late_plan == nullptr, "a failed weave_plan_create left a handle");
  expect_finalized(weave_execute(plan, 1.0, av.data(), bv.data(), 0.0, cv.data(), nullptr, nullptr),
                   "weave_execute");
  expect_finalized(weave_execute_ex(plan, nullptr), "weave_execute_ex with NULL arguments");
  weave_grid_t late_grid = nullptr;
  expect_finalized(weave_grid_create(MPI_COMM_WORLD, size, 1, &late_grid), "weave_grid_create");
  expect_grid_throws(MPI_COMM_WORLD, WEAVE_ERROR_MPI, "has been finalized", "after MPI_Finalize");
  expect(weave_plan_destroy(plan) == WEAVE_SUCCESS, "weave_plan_destroy after MPI_Finalize failed");
  expect(weave_matrix_destroy(a) == WEAVE_SUCCESS && weave_matrix_destroy(b) == WEAVE_SUCCESS &&
             weave_matrix_destroy(c) == WEAVE_SUCCESS,
         "weave_matrix_destroy after MPI_Finalize failed");
  expect(weave_grid_destroy(grid) == WEAVE_SUCCESS, "weave_grid_destroy after MPI_Finalize failed");
  std::printf("rank %d: after MPI_Finalize: %s\n", g_rank, g_failed ? "FAILED" : "every call returned a status");
  return g_failed ? 1 : 0;
}
