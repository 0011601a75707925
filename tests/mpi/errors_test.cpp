// Every invalid argument through the public C API: each must come back as
// its specific status, on every rank, with a message naming the argument,
// and never hang or abort. Rank-local mistakes (a leading dimension, a NULL
// pointer) are made on one rank only, and every rank must still report them.
// Arguments that differ between ranks are caught at matrix and plan
// creation. A peer that never calls execute makes the others time out.
//
// Prints one line per check: PASS, FAIL, or SKIP with the reason (checks
// that need two or more ranks skip at one rank). Exit code 1 if any failed.
// Usage: weave_errors_test
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/numroc.hpp"
#include "weave/weave.h"

namespace {

int g_rank = 0, g_size = 1;

// ---------------------------------------------------------------------------
// Checks: each is run by every rank; a check passes when it passed on all.

struct CheckState {
  bool ok = true;
  std::string skipped;  // non-empty: skipped, with the reason
};
CheckState* g_check = nullptr;

void fail_here(const std::string& what) {
  g_check->ok = false;
  std::fprintf(stderr, "rank %d: %s\n", g_rank, what.c_str());
}

// The status must be `want`, and weave_last_error() must be non-empty and
// contain each of `words`.
void expect_status(weave_status_t got, weave_status_t want, std::initializer_list<std::string> words,
                   const char* call) {
  const std::string message = weave_last_error();
  if (got != want) {
    fail_here(std::string(call) + " returned " + weave_status_string(got) + ", expected " +
              weave_status_string(want) + " (message: \"" + message + "\")");
    return;
  }
  if (want == WEAVE_SUCCESS) return;
  if (message.empty()) fail_here(std::string(call) + ": weave_last_error() is empty");
  for (const std::string& w : words)
    if (message.find(w) == std::string::npos)
      fail_here(std::string(call) + ": message \"" + message + "\" does not mention \"" + w + "\"");
}

#define EXPECT_STATUS(call, want, ...) expect_status((call), (want), {__VA_ARGS__}, #call)
#define EXPECT_OK(call) expect_status((call), WEAVE_SUCCESS, {}, #call)

void skip(const std::string& why) { g_check->skipped = why; }

int g_failed = 0, g_passed = 0, g_skipped = 0;

void run_check(const char* name, const std::function<void()>& body) {
  CheckState state;
  g_check = &state;
  const double start = MPI_Wtime();
  body();
  g_check = nullptr;
  int mine = state.ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (g_rank == 0) {
    if (!state.skipped.empty())
      std::printf("SKIP %s: %s\n", name, state.skipped.c_str());
    else
      std::printf("%s %s (%.2f s)\n", all ? "PASS" : "FAIL", name, MPI_Wtime() - start);
    std::fflush(stdout);
  }
  if (!state.skipped.empty())
    ++g_skipped;
  else if (all)
    ++g_passed;
  else
    ++g_failed;
}

// ---------------------------------------------------------------------------
// Handles that clean up after themselves.

struct Grid {
  weave_grid_t h = nullptr;
  ~Grid() { weave_grid_destroy(h); }
};
struct Matrix {
  weave_matrix_t h = nullptr;
  ~Matrix() { weave_matrix_destroy(h); }
};
struct Plan {
  weave_plan_t h = nullptr;
  ~Plan() { weave_plan_destroy(h); }
};

weave_matrix_desc_t desc_of(int64_t rows, int64_t cols, weave_distribution_t dist,
                            weave_dtype_t dtype = WEAVE_FLOAT64) {
  weave_matrix_desc_t d{};
  d.rows = rows;
  d.cols = cols;
  d.dtype = dtype;
  d.distribution = dist;
  return d;
}

// A matrix that must be created successfully (a precondition of the check).
bool create(weave_grid_t grid, const weave_matrix_desc_t& d, Matrix* m) {
  const weave_status_t s = weave_matrix_create(grid, &d, &m->h);
  if (s != WEAVE_SUCCESS) fail_here(std::string("setup: weave_matrix_create failed: ") + weave_last_error());
  return s == WEAVE_SUCCESS;
}

// The operands of one well-formed plan on a P x 1 grid: M, N, K global.
struct Operands {
  Matrix a, b, c, bias;
};

// How each operation distributes its operands:
// AG-GEMM: A M x K block-row, B K x N block-column, C M x N block-column.
// GEMM-RS: A M x K block-column, B K x N block-row, C M x N block-row.
// GEMM-AR: as GEMM-RS with C replicated. Bias 1 x N like C's columns.
struct Distributions {
  weave_distribution_t a, b, c, bias;
};
Distributions distributions_for(weave_operation_t op) {
  const bool ag = op == WEAVE_AG_GEMM;
  return {ag ? WEAVE_DIST_BLOCK_ROW : WEAVE_DIST_BLOCK_COLUMN, ag ? WEAVE_DIST_BLOCK_COLUMN : WEAVE_DIST_BLOCK_ROW,
          ag ? WEAVE_DIST_BLOCK_COLUMN : op == WEAVE_GEMM_RS ? WEAVE_DIST_BLOCK_ROW : WEAVE_DIST_REPLICATED,
          ag ? WEAVE_DIST_BLOCK_COLUMN : WEAVE_DIST_REPLICATED};
}

bool make_operands(weave_grid_t grid, weave_operation_t op, int64_t m, int64_t n, int64_t k, Operands* o,
                   weave_dtype_t dtype = WEAVE_FLOAT64, bool with_bias = false) {
  const Distributions dist = distributions_for(op);
  if (!create(grid, desc_of(m, k, dist.a, dtype), &o->a)) return false;
  if (!create(grid, desc_of(k, n, dist.b, dtype), &o->b)) return false;
  if (!create(grid, desc_of(m, n, dist.c, dtype), &o->c)) return false;
  if (with_bias && !create(grid, desc_of(1, n, dist.bias, dtype), &o->bias)) return false;
  return true;
}

weave_plan_desc_t plan_desc(weave_operation_t op, const Operands& o) {
  weave_plan_desc_t d{};
  d.operation = op;
  d.a = o.a.h;
  d.b = o.b.h;
  d.c = o.c.h;
  d.bias = o.bias.h;
  return d;
}

// Local storage of a matrix, filled with `value`.
std::vector<double> local_buffer(weave_matrix_t m, double value) {
  int64_t elements = 0;
  weave_matrix_local_elements(m, &elements);
  return std::vector<double>(static_cast<size_t>(std::max<int64_t>(elements, 1)), value);
}

const char* const kOps[] = {"", "AG-GEMM", "GEMM-RS", "GEMM-AR"};
const weave_operation_t kOperations[] = {WEAVE_AG_GEMM, WEAVE_GEMM_RS, WEAVE_GEMM_AR};

bool has_feature(const char* name) {
  const std::string features = std::string(",") + weave_build_features() + ",";
  return features.find(std::string(",") + name + ",") != std::string::npos;
}

// ---------------------------------------------------------------------------
// The checks.

void null_pointers(weave_grid_t grid) {
  weave_grid_t no_grid = nullptr;
  EXPECT_STATUS(weave_grid_create(MPI_COMM_WORLD, g_size, 1, nullptr), WEAVE_ERROR_NULL_ARGUMENT, "grid");
  EXPECT_STATUS(weave_grid_create(MPI_COMM_NULL, g_size, 1, &no_grid), WEAVE_ERROR_NULL_ARGUMENT, "comm");
  if (no_grid) fail_here("a failed weave_grid_create left a handle");

  const weave_matrix_desc_t d = desc_of(8, 4, WEAVE_DIST_BLOCK_ROW);
  weave_matrix_t m = nullptr;
  EXPECT_STATUS(weave_matrix_create(nullptr, &d, &m), WEAVE_ERROR_NULL_ARGUMENT, "grid");
  EXPECT_STATUS(weave_matrix_create(grid, nullptr, &m), WEAVE_ERROR_NULL_ARGUMENT, "desc");
  EXPECT_STATUS(weave_matrix_create(grid, &d, nullptr), WEAVE_ERROR_NULL_ARGUMENT, "matrix");
  if (m) fail_here("a failed weave_matrix_create left a handle");
  // A NULL descriptor on one rank: every rank reports it.
  EXPECT_STATUS(weave_matrix_create(grid, g_rank == g_size - 1 ? nullptr : &d, &m), WEAVE_ERROR_NULL_ARGUMENT,
                "desc");
  if (m) fail_here("weave_matrix_create with a NULL desc on one rank left a handle");

  Operands o;
  if (!make_operands(grid, WEAVE_GEMM_AR, 8, 4, 6, &o)) return;
  weave_plan_desc_t pd = plan_desc(WEAVE_GEMM_AR, o);
  weave_plan_t p = nullptr;
  EXPECT_STATUS(weave_plan_create(nullptr, &pd, &p), WEAVE_ERROR_NULL_ARGUMENT, "grid");
  EXPECT_STATUS(weave_plan_create(grid, nullptr, &p), WEAVE_ERROR_NULL_ARGUMENT, "desc");
  EXPECT_STATUS(weave_plan_create(grid, &pd, nullptr), WEAVE_ERROR_NULL_ARGUMENT, "plan");
  EXPECT_STATUS(weave_plan_create(grid, g_rank == g_size - 1 ? nullptr : &pd, &p), WEAVE_ERROR_NULL_ARGUMENT,
                "desc");
  // A NULL matrix handle in the plan descriptor, on every rank and on one.
  for (bool one_rank : {false, true}) {
    weave_plan_desc_t missing = pd;
    if (!one_rank || g_rank == g_size - 1) missing.b = nullptr;
    EXPECT_STATUS(weave_plan_create(grid, &missing, &p), WEAVE_ERROR_NULL_ARGUMENT, "b");
  }
  if (p) fail_here("a failed weave_plan_create left a handle");

  // Queries and execute with NULL handles or outputs (not collective).
  int r = 0, c = 0;
  int64_t rows = 0, cols = 0;
  // A call that failed on this rank alone names the rank (in MPI_COMM_WORLD).
  const std::string this_rank = "rank " + std::to_string(g_rank) + " (MPI_COMM_WORLD): ";
  EXPECT_STATUS(weave_grid_shape(nullptr, &r, &c), WEAVE_ERROR_NULL_ARGUMENT, this_rank + "grid is NULL");
  EXPECT_STATUS(weave_grid_shape(grid, nullptr, &c), WEAVE_ERROR_NULL_ARGUMENT, this_rank + "prows");
  EXPECT_STATUS(weave_grid_coords(grid, &r, nullptr), WEAVE_ERROR_NULL_ARGUMENT, "col");
  EXPECT_STATUS(weave_grid_group(grid, WEAVE_GROUP_GRID, nullptr, &r), WEAVE_ERROR_NULL_ARGUMENT, "size");
  EXPECT_STATUS(weave_grid_group_comm(grid, WEAVE_GROUP_GRID, nullptr), WEAVE_ERROR_NULL_ARGUMENT, "comm");
  EXPECT_STATUS(weave_matrix_local_shape(nullptr, &rows, &cols), WEAVE_ERROR_NULL_ARGUMENT, "matrix");
  EXPECT_STATUS(weave_matrix_local_shape(o.a.h, nullptr, &cols), WEAVE_ERROR_NULL_ARGUMENT, "rows");
  EXPECT_STATUS(weave_matrix_local_offset(o.a.h, &rows, nullptr), WEAVE_ERROR_NULL_ARGUMENT, "col_offset");
  EXPECT_STATUS(weave_matrix_ld(o.a.h, nullptr), WEAVE_ERROR_NULL_ARGUMENT, "ld");
  EXPECT_STATUS(weave_matrix_local_elements(o.a.h, nullptr), WEAVE_ERROR_NULL_ARGUMENT, "elements");
  EXPECT_STATUS(weave_get_version(nullptr, &r, &c), WEAVE_ERROR_NULL_ARGUMENT, "major");
  const char* text = nullptr;
  weave_plan_info_t info{};
  EXPECT_STATUS(weave_plan_describe(nullptr, &text), WEAVE_ERROR_NULL_ARGUMENT, "plan");
  EXPECT_STATUS(weave_plan_get_info(nullptr, &info), WEAVE_ERROR_NULL_ARGUMENT, "plan");
  EXPECT_STATUS(weave_execute(nullptr, 1.0, nullptr, nullptr, 0.0, nullptr, nullptr, nullptr),
                WEAVE_ERROR_NULL_ARGUMENT, "plan");
  EXPECT_STATUS(weave_execute_ex(nullptr, nullptr), WEAVE_ERROR_NULL_ARGUMENT, "plan");
  EXPECT_STATUS(weave_plan_write_trace(nullptr, "x"), WEAVE_ERROR_NULL_ARGUMENT, "plan");
  // Destroying NULL is a no-op.
  EXPECT_OK(weave_grid_destroy(nullptr));
  EXPECT_OK(weave_matrix_destroy(nullptr));
  EXPECT_OK(weave_plan_destroy(nullptr));
}

// Handles destroyed already, of another kind, or never made by Weave: each
// call says so (WEAVE_ERROR_INVALID_VALUE naming the argument) instead of
// reading freed memory or freeing it twice; a stale matrix in a plan
// descriptor on one rank fails plan creation on every rank.
void stale_and_foreign_handles(weave_grid_t grid) {
  Operands o;
  if (!make_operands(grid, WEAVE_GEMM_AR, 8, 4, 6, &o)) return;
  weave_plan_desc_t pd = plan_desc(WEAVE_GEMM_AR, o);
  weave_plan_t plan = nullptr;
  EXPECT_OK(weave_plan_create(grid, &pd, &plan));
  weave_matrix_t gone = nullptr;
  const weave_matrix_desc_t d = desc_of(8, 4, WEAVE_DIST_BLOCK_ROW);
  if (!plan || weave_matrix_create(grid, &d, &gone) != WEAVE_SUCCESS) {
    fail_here("setup: a plan and a matrix");
    return;
  }
  EXPECT_OK(weave_matrix_destroy(gone));
  EXPECT_OK(weave_plan_destroy(plan));
  int64_t rows = 0, cols = 0;
  const char* text = nullptr;
  // Destroyed already: destroyed again, queried, executed, used in a plan.
  EXPECT_STATUS(weave_matrix_destroy(gone), WEAVE_ERROR_INVALID_VALUE, "matrix", "not a live weave_matrix_t");
  EXPECT_STATUS(weave_matrix_local_shape(gone, &rows, &cols), WEAVE_ERROR_INVALID_VALUE, "destroyed already");
  EXPECT_STATUS(weave_plan_destroy(plan), WEAVE_ERROR_INVALID_VALUE, "plan", "not a live weave_plan_t",
                "rank " + std::to_string(g_rank) + " (MPI_COMM_WORLD): ");
  EXPECT_STATUS(weave_plan_describe(plan, &text), WEAVE_ERROR_INVALID_VALUE, "plan");
  EXPECT_STATUS(weave_execute(plan, 1.0, nullptr, nullptr, 0.0, nullptr, nullptr, nullptr),
                WEAVE_ERROR_INVALID_VALUE, "plan", "destroyed already");
  weave_plan_t p = nullptr;
  for (bool one_rank : {false, true}) {
    weave_plan_desc_t stale = pd;
    if (!one_rank || g_rank == g_size - 1) stale.b = gone;
    EXPECT_STATUS(weave_plan_create(grid, &stale, &p), WEAVE_ERROR_INVALID_VALUE, "plan descriptor field b",
                  "not a live weave_matrix_t");
  }
  // Another kind of handle, and a pointer Weave never handed out.
  int r = 0, c = 0;
  EXPECT_STATUS(weave_grid_shape(reinterpret_cast<weave_grid_t>(o.a.h), &r, &c), WEAVE_ERROR_INVALID_VALUE,
                "is a weave_matrix_t, not a weave_grid_t");
  weave_plan_desc_t swapped = pd;
  swapped.a = reinterpret_cast<weave_matrix_t>(grid);
  EXPECT_STATUS(weave_plan_create(grid, &swapped, &p), WEAVE_ERROR_INVALID_VALUE, "is a weave_grid_t");
  double not_a_handle[4] = {};
  EXPECT_STATUS(weave_matrix_local_shape(reinterpret_cast<weave_matrix_t>(not_a_handle), &rows, &cols),
                WEAVE_ERROR_INVALID_VALUE, "never created by Weave");
  if (p) fail_here("a failed weave_plan_create left a handle");
}

// A NULL output pointer on one rank only: that rank must not return while
// the others wait in the agreement.
void null_output_on_one_rank(weave_grid_t grid) {
  if (g_size < 2) return skip("needs two or more ranks");
  const weave_matrix_desc_t d = desc_of(8, 4, WEAVE_DIST_BLOCK_ROW);
  Matrix m;
  EXPECT_STATUS(weave_matrix_create(grid, &d, g_rank == g_size - 1 ? nullptr : &m.h), WEAVE_ERROR_NULL_ARGUMENT,
                "matrix");
  Operands o;
  if (!make_operands(grid, WEAVE_GEMM_AR, 8, 4, 6, &o)) return;
  const weave_plan_desc_t pd = plan_desc(WEAVE_GEMM_AR, o);
  Plan p;
  EXPECT_STATUS(weave_plan_create(grid, &pd, g_rank == g_size - 1 ? nullptr : &p.h), WEAVE_ERROR_NULL_ARGUMENT,
                "plan");
}

void negative_sizes(weave_grid_t grid) {
  Matrix m;
  for (bool one_rank : {false, true}) {
    const bool mine = !one_rank || g_rank == 0;
    weave_matrix_desc_t d = desc_of(mine ? -3 : 8, 4, WEAVE_DIST_BLOCK_ROW);
    EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "rows", "-3");
    d = desc_of(8, mine ? -1 : 4, WEAVE_DIST_REPLICATED);
    EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "cols", "-1");
    d = desc_of(8, 4, WEAVE_DIST_REPLICATED);
    d.ld = mine ? -2 : 0;
    EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_LEADING_DIMENSION, "ld", "-2");
  }
  if (m.h) fail_here("a failed weave_matrix_create left a handle");
}

void invalid_counts(weave_grid_t grid) {
  Matrix m;
  std::vector<int64_t> counts(static_cast<size_t>(g_size), 2);
  // Sum 2P for 2P + 1 rows.
  weave_matrix_desc_t d = desc_of(2 * g_size + 1, 3, WEAVE_DIST_BLOCK_ROW);
  d.row_counts = counts.data();
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_COUNTS, "row_counts", "sums to");
  // A negative count (the sum still fits).
  std::vector<int64_t> negative = counts;
  negative[0] = -1;
  if (g_size > 1) negative.back() += 3;
  d = desc_of(2 * g_size, 3, WEAVE_DIST_BLOCK_COLUMN);
  d.rows = 3;
  d.cols = 2 * g_size;
  d.col_counts = negative.data();
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_COUNTS, "col_counts", "negative");
  // Counts for a dimension that is not split.
  d = desc_of(2 * g_size, 3, WEAVE_DIST_BLOCK_ROW);
  d.col_counts = counts.data();
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_COUNTS, "col_counts");
  d = desc_of(2 * g_size, 3, WEAVE_DIST_REPLICATED);
  d.row_counts = counts.data();
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_COUNTS, "row_counts");
  // A wrong sum on one rank only.
  std::vector<int64_t> one_wrong = counts;
  if (g_rank == 0) one_wrong[0] += 1;
  d = desc_of(2 * g_size, 3, WEAVE_DIST_BLOCK_ROW);
  d.row_counts = one_wrong.data();
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_COUNTS, "row_counts");
  if (m.h) fail_here("a failed weave_matrix_create left a handle");
}

using weave_test::numroc;

// Block-cyclic descriptors on a P_r x P_c grid: local extents, positions and
// elements as ScaLAPACK counts them (a submatrix start included); and every
// inconsistent descriptor (block size 0, a source outside the grid, an ld
// smaller than the local rows on one rank, counts, another group, the
// block-cyclic fields on another distribution, a negative start) an error
// on every rank.
void block_cyclic_descriptors() {
  const int prows = g_size % 2 == 0 ? 2 : 1, pcols = g_size / prows;
  Grid grid;
  EXPECT_OK(weave_grid_create(MPI_COMM_WORLD, prows, pcols, &grid.h));
  const int my_row = g_rank / pcols, my_col = g_rank % pcols;
  struct Layout {
    int64_t rows, cols, mb, nb;
    int32_t rsrc, csrc;
    int64_t row_start, col_start;
  };
  const Layout layouts[] = {{37, 23, 7, 2, 0, 0, 0, 0}, {37, 23, 1, 32, prows - 1, pcols - 1, 0, 0},
                            {10, 9, 4, 3, 0, pcols - 1, 5, 2}, {5, 4, 64, 64, 0, 0, 0, 0},
                            {1, 23, 1, 7, -1, 0, 0, 0}, {6, 23, 4, 7, -1, 0, 3, 0}, {9, 8, 2, 5, 0, -1, 1, 4}};
  for (const Layout& l : layouts) {
    Matrix m;
    weave_matrix_desc_t d = desc_of(l.rows, l.cols, WEAVE_DIST_BLOCK_CYCLIC);
    d.mb = l.mb;
    d.nb = l.nb;
    d.rsrc = l.rsrc;
    d.csrc = l.csrc;
    d.row_start = l.row_start;
    d.col_start = l.col_start;
    if (!create(grid.h, d, &m)) continue;
    int64_t lr = 0, lc = 0, ro = 0, co = 0, ld = 0, elements = 0;
    EXPECT_OK(weave_matrix_local_shape(m.h, &lr, &lc));
    EXPECT_OK(weave_matrix_local_offset(m.h, &ro, &co));
    EXPECT_OK(weave_matrix_ld(m.h, &ld));
    EXPECT_OK(weave_matrix_local_elements(m.h, &elements));
    const int64_t want_rows = numroc(l.row_start + l.rows, l.mb, my_row, l.rsrc, prows);
    const int64_t want_cols = numroc(l.col_start + l.cols, l.nb, my_col, l.csrc, pcols);
    if (lr != want_rows || lc != want_cols)
      fail_here("block-cyclic " + std::to_string(l.rows) + " x " + std::to_string(l.cols) + ": local shape " +
                std::to_string(lr) + " x " + std::to_string(lc) + ", numroc says " + std::to_string(want_rows) +
                " x " + std::to_string(want_cols));
    if (ld != std::max<int64_t>(1, want_rows)) fail_here("block-cyclic: tight ld " + std::to_string(ld));
    const int64_t want_elements = want_rows == 0 || want_cols == 0 ? 0 : ld * (want_cols - 1) + want_rows;
    if (elements != want_elements) fail_here("block-cyclic: local elements " + std::to_string(elements));
    // The first global row this rank holds: the first index from row_start on
    // whose block is dealt to this grid row.
    int64_t first_row = l.rows;
    for (int64_t g = 0; g < l.rows && first_row == l.rows; ++g)
      if (l.rsrc < 0 || (l.rsrc + (l.row_start + g) / l.mb) % prows == my_row) first_row = g;
    if (ro != first_row) fail_here("block-cyclic: row offset " + std::to_string(ro) + ", expected " +
                                   std::to_string(first_row));
  }

  Matrix m;
  auto cyclic = [](int64_t mb, int64_t nb, int32_t rsrc, int32_t csrc) {
    weave_matrix_desc_t d = desc_of(12, 10, WEAVE_DIST_BLOCK_CYCLIC);
    d.mb = mb;
    d.nb = nb;
    d.rsrc = rsrc;
    d.csrc = csrc;
    return d;
  };
  weave_matrix_desc_t d = cyclic(0, 2, 0, 0);
  EXPECT_STATUS(weave_matrix_create(grid.h, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "mb = 0", "block size");
  d = cyclic(2, -3, 0, 0);
  EXPECT_STATUS(weave_matrix_create(grid.h, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "nb = -3");
  d = cyclic(2, 2, prows, 0);
  EXPECT_STATUS(weave_matrix_create(grid.h, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "rsrc", "grid row");
  d = cyclic(2, 2, 0, -2);
  EXPECT_STATUS(weave_matrix_create(grid.h, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "csrc", "grid column");
  // The block size on one rank only.
  d = cyclic(g_rank == g_size - 1 ? 0 : 2, 2, 0, 0);
  EXPECT_STATUS(weave_matrix_create(grid.h, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "mb = 0");
  // Another block size on one rank: every rank hears of the disagreement.
  if (g_size > 1) {
    d = cyclic(g_rank == g_size - 1 ? 3 : 2, 2, 0, 0);
    EXPECT_STATUS(weave_matrix_create(grid.h, &d, &m.h), WEAVE_ERROR_RANK_MISMATCH, "mb");
  }
  // lld smaller than the local rows, on the last rank only (12 rows in
  // blocks of 2 over the grid rows: at least 6 local rows everywhere).
  d = cyclic(2, 2, 0, 0);
  d.ld = g_rank == g_size - 1 ? 5 : 0;
  EXPECT_STATUS(weave_matrix_create(grid.h, &d, &m.h), WEAVE_ERROR_INVALID_LEADING_DIMENSION, "ld = 5");
  d = cyclic(2, 2, 0, 0);
  d.row_start = -1;
  EXPECT_STATUS(weave_matrix_create(grid.h, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "row_start = -1");
  d = cyclic(2, 2, 0, 0);
  d.row_start = INT64_MAX - 5;
  EXPECT_STATUS(weave_matrix_create(grid.h, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "64 bits");
  std::vector<int64_t> counts(static_cast<size_t>(prows), 12 / prows);
  d = cyclic(2, 2, 0, 0);
  d.row_counts = counts.data();
  EXPECT_STATUS(weave_matrix_create(grid.h, &d, &m.h), WEAVE_ERROR_INVALID_COUNTS, "row_counts");
  d = cyclic(2, 2, 0, 0);
  d.group = WEAVE_GROUP_ROW;
  EXPECT_STATUS(weave_matrix_create(grid.h, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "group", "whole grid");
  // Block-cyclic fields on another distribution.
  d = desc_of(12, 10, WEAVE_DIST_BLOCK_2D);
  d.mb = 4;
  EXPECT_STATUS(weave_matrix_create(grid.h, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "mb", "BLOCK_CYCLIC");
  if (m.h) fail_here("a failed weave_matrix_create left a handle");
}

// WEAVE_GEMM plans that cannot be made: matrices on another grid (another
// grid shape), shapes that do not fit, distributions that do not lie along
// the grid, the plan over a row group, 1-D algorithms, a ring direction,
// chunks; each an error on every rank, and an execute after them writes
// nothing it should not.
void gemm_plan_errors() {
  const int prows = g_size % 2 == 0 ? 2 : 1, pcols = g_size / prows;
  Grid grid, other;
  EXPECT_OK(weave_grid_create(MPI_COMM_WORLD, prows, pcols, &grid.h));
  EXPECT_OK(weave_grid_create(MPI_COMM_WORLD, pcols, prows, &other.h));
  auto cyclic = [](int64_t rows, int64_t cols) {
    weave_matrix_desc_t d = desc_of(rows, cols, WEAVE_DIST_BLOCK_CYCLIC);
    d.mb = 2;
    d.nb = 3;
    return d;
  };
  Matrix a, b, c, c_other, b_wrong, row_split, bias;
  if (!create(grid.h, cyclic(7, 5), &a) || !create(grid.h, cyclic(5, 6), &b) || !create(grid.h, cyclic(7, 6), &c) ||
      !create(other.h, cyclic(7, 6), &c_other) || !create(grid.h, cyclic(4, 6), &b_wrong) ||
      !create(grid.h, cyclic(1, 6), &bias))
    return;
  weave_matrix_desc_t rows = desc_of(7, 6, WEAVE_DIST_BLOCK_ROW);
  rows.group = WEAVE_GROUP_ROW;
  if (!create(grid.h, rows, &row_split)) return;
  auto plan_of = [&](weave_matrix_t pa, weave_matrix_t pb, weave_matrix_t pc) {
    weave_plan_desc_t pd = WEAVE_PLAN_DESC_INIT;
    pd.operation = WEAVE_GEMM;
    pd.a = pa;
    pd.b = pb;
    pd.c = pc;
    return pd;
  };
  Plan p;
  weave_plan_desc_t pd = plan_of(a.h, b.h, c_other.h);
  EXPECT_STATUS(weave_plan_create(grid.h, &pd, &p.h), WEAVE_ERROR_INVALID_VALUE, "grid");
  {
    // All three on another grid, alike on every rank: still not the plan's.
    Matrix a_other, b_other;
    if (!create(other.h, cyclic(7, 5), &a_other) || !create(other.h, cyclic(5, 6), &b_other)) return;
    pd = plan_of(a_other.h, b_other.h, c_other.h);
    EXPECT_STATUS(weave_plan_create(grid.h, &pd, &p.h), WEAVE_ERROR_INVALID_VALUE,
                  "A, B, C were created on another grid");
  }
  pd = plan_of(a.h, b_wrong.h, c.h);
  EXPECT_STATUS(weave_plan_create(grid.h, &pd, &p.h), WEAVE_ERROR_SHAPE_MISMATCH, "rows of op(B)", "(K)");
  pd = plan_of(a.h, b.h, c.h);
  pd.op_a = WEAVE_OP_T;
  EXPECT_STATUS(weave_plan_create(grid.h, &pd, &p.h), WEAVE_ERROR_SHAPE_MISMATCH, "op(A)");
  if (prows > 1) {
    pd = plan_of(a.h, b.h, row_split.h);
    EXPECT_STATUS(weave_plan_create(grid.h, &pd, &p.h), WEAVE_ERROR_DISTRIBUTION_MISMATCH, "C is BLOCK_ROW",
                  "grid's rows and columns");
  }
  pd = plan_of(a.h, b.h, c.h);
  pd.group = WEAVE_GROUP_ROW;
  EXPECT_STATUS(weave_plan_create(grid.h, &pd, &p.h), WEAVE_ERROR_DISTRIBUTION_MISMATCH, "whole grid");
  // The 1-D operations' options, on every rank and on the last only (that
  // rank's own error, not a mismatch): each unsupported for WEAVE_GEMM.
  const std::string on_last = "rank " + std::to_string(g_size - 1) + ": ";
  for (const bool everywhere : {true, false}) {
    const bool mine = everywhere || g_rank == g_size - 1;
    const char* who = everywhere ? "" : on_last.c_str();
    for (weave_algorithm_t algorithm : {WEAVE_ALGORITHM_RING, WEAVE_ALGORITHM_DIRECT, WEAVE_ALGORITHM_PIPELINED,
                                        WEAVE_ALGORITHM_HIERARCHICAL}) {
      pd = plan_of(a.h, b.h, c.h);
      if (mine) pd.algorithm = algorithm;
      EXPECT_STATUS(weave_plan_create(grid.h, &pd, &p.h), WEAVE_ERROR_UNSUPPORTED, "WEAVE_ALGORITHM_SUMMA", who);
    }
    pd = plan_of(a.h, b.h, c.h);
    if (mine) pd.direction = WEAVE_DIRECTION_BACKWARD;
    EXPECT_STATUS(weave_plan_create(grid.h, &pd, &p.h), WEAVE_ERROR_UNSUPPORTED, "direction", who);
    pd = plan_of(a.h, b.h, c.h);
    if (mine) pd.chunks_per_shard = 2;
    EXPECT_STATUS(weave_plan_create(grid.h, &pd, &p.h), WEAVE_ERROR_UNSUPPORTED, "panels", who);
  }
  pd = plan_of(a.h, b.h, c.h);
  pd.bias = b.h;  // 5 x 6 is not 1 x N
  EXPECT_STATUS(weave_plan_create(grid.h, &pd, &p.h), WEAVE_ERROR_SHAPE_MISMATCH, "bias");
  // SUMMA on a 1-D operation.
  Grid line;
  EXPECT_OK(weave_grid_create(MPI_COMM_WORLD, g_size, 1, &line.h));
  Operands o;
  if (!make_operands(line.h, WEAVE_GEMM_AR, 4, 3, 2 * g_size, &o)) return;
  for (const bool everywhere : {true, false}) {
    const bool mine = everywhere || g_rank == g_size - 1;
    const char* who = everywhere ? "" : on_last.c_str();
    weave_plan_desc_t one_d = plan_desc(WEAVE_GEMM_AR, o);
    if (mine) one_d.algorithm = WEAVE_ALGORITHM_SUMMA;
    EXPECT_STATUS(weave_plan_create(line.h, &one_d, &p.h), WEAVE_ERROR_UNSUPPORTED, "WEAVE_GEMM", who);
    // Flags that contradict each other, or the operation.
    one_d = plan_desc(WEAVE_GEMM_AR, o);
    if (mine) one_d.flags = WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE | WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE;
    EXPECT_STATUS(weave_plan_create(line.h, &one_d, &p.h), WEAVE_ERROR_INVALID_VALUE, "one type", who);
    one_d = plan_desc(WEAVE_GEMM_AR, o);
    if (mine) one_d.flags = WEAVE_FLAG_GATHERED_OUTPUT;
    EXPECT_STATUS(weave_plan_create(line.h, &one_d, &p.h), WEAVE_ERROR_INVALID_VALUE, "AG-GEMM plans only", who);
  }
  if (p.h) fail_here("a failed weave_plan_create left a handle");

  // A good plan: an execute with a NULL B on one rank writes nothing anywhere.
  pd = plan_of(a.h, b.h, c.h);
  pd.bias = bias.h;
  EXPECT_OK(weave_plan_create(grid.h, &pd, &p.h));
  if (!p.h) return;
  int64_t ea = 0, eb = 0, ec = 0, ebias = 0;
  weave_matrix_local_elements(a.h, &ea);
  weave_matrix_local_elements(b.h, &eb);
  weave_matrix_local_elements(c.h, &ec);
  weave_matrix_local_elements(bias.h, &ebias);
  std::vector<double> va(static_cast<size_t>(ea) + 1, 1.0), vb(static_cast<size_t>(eb) + 1, 2.0),
      vc(static_cast<size_t>(ec) + 1, -3.0), vbias(static_cast<size_t>(ebias) + 1, 0.5);
  const bool b_empty = eb == 0;
  int any_b = b_empty ? 0 : 1, some = 0;
  MPI_Allreduce(&any_b, &some, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  // The last rank that holds part of B passes NULL for it.
  int holder = b_empty ? -1 : g_rank, last_holder = -1;
  MPI_Allreduce(&holder, &last_holder, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  const void* b_pointer = g_rank == last_holder ? nullptr : vb.data();
  EXPECT_STATUS(weave_execute(p.h, 1.0, va.data(), b_pointer, 0.0, vc.data(), vbias.data(), nullptr),
                WEAVE_ERROR_NULL_ARGUMENT, "b is NULL");
  for (double v : vc)
    if (v != -3.0) {
      fail_here("a failed WEAVE_GEMM execute wrote C");
      break;
    }
  // And then a good one runs: C = A B + bias, with A all 1, B all 2: 2 K + 0.5 = 10.5.
  EXPECT_OK(weave_execute(p.h, 1.0, va.data(), vb.data(), 0.0, vc.data(), vbias.data(), nullptr));
  int64_t lr = 0, lc = 0, ld = 0;
  weave_matrix_local_shape(c.h, &lr, &lc);
  weave_matrix_ld(c.h, &ld);
  for (int64_t j = 0; j < lc; ++j)
    for (int64_t i = 0; i < lr; ++i)
      if (vc[static_cast<size_t>(i + j * ld)] != 10.5) {
        fail_here("WEAVE_GEMM of ones and twos gave " + std::to_string(vc[static_cast<size_t>(i + j * ld)]));
        return;
      }
}

void leading_dimension_on_one_rank(weave_grid_t grid) {
  Matrix m;
  for (weave_order_t order : {WEAVE_ORDER_COLUMN_MAJOR, WEAVE_ORDER_ROW_MAJOR}) {
    // 8 local rows and 5 columns on every rank; the last rank's ld is too small.
    weave_matrix_desc_t d = desc_of(8 * g_size, 5, WEAVE_DIST_BLOCK_ROW);
    d.order = order;
    d.ld = g_rank == g_size - 1 ? 3 : 0;
    EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_LEADING_DIMENSION, "ld = 3",
                  std::to_string(g_size - 1).c_str());
  }
  if (m.h) fail_here("a failed weave_matrix_create left a handle");
}

// A, B, C and bias shapes that do not fit each operation.
void shape_mismatches(weave_grid_t grid) {
  const int64_t M = 4 * g_size, N = 3 * g_size, K = 5;
  for (weave_operation_t op : kOperations) {
    const bool ag = op == WEAVE_AG_GEMM;
    const auto [a_dist, b_dist, c_dist, bias_dist] = distributions_for(op);
    Matrix a, b, b_wrong_k, c, c_wrong_m, c_wrong_n, bias_long, bias_tall;
    // K mismatch: for AG-GEMM op(A) keeps all K columns; for RS/AR K is
    // split, so the wrong K is a multiple of P too.
    const int64_t wrong_k = ag ? K + 1 : K + g_size;
    const int64_t k_total = ag ? K : K * g_size;
    if (!create(grid, desc_of(M, k_total, a_dist), &a) || !create(grid, desc_of(k_total, N, b_dist), &b) ||
        !create(grid, desc_of(ag ? wrong_k : k_total + g_size, N, b_dist), &b_wrong_k) ||
        !create(grid, desc_of(M, N, c_dist), &c) || !create(grid, desc_of(M + g_size, N, c_dist), &c_wrong_m) ||
        !create(grid, desc_of(M, N + g_size, c_dist), &c_wrong_n) ||
        !create(grid, desc_of(1, N + g_size, bias_dist), &bias_long) ||
        !create(grid, desc_of(2, N, bias_dist), &bias_tall))
      return;
    weave_plan_desc_t d{};
    d.operation = op;
    d.a = a.h;
    d.b = b_wrong_k.h;
    d.c = c.h;
    Plan p;
    EXPECT_STATUS(weave_plan_create(grid, &d, &p.h), WEAVE_ERROR_SHAPE_MISMATCH, "rows of op(B)", "(K)");
    d.b = b.h;
    d.c = c_wrong_m.h;
    EXPECT_STATUS(weave_plan_create(grid, &d, &p.h), WEAVE_ERROR_SHAPE_MISMATCH, "rows of C", "(M)");
    d.c = c_wrong_n.h;
    EXPECT_STATUS(weave_plan_create(grid, &d, &p.h), WEAVE_ERROR_SHAPE_MISMATCH, "columns of C", "(N)");
    d.c = c.h;
    d.bias = bias_long.h;
    EXPECT_STATUS(weave_plan_create(grid, &d, &p.h), WEAVE_ERROR_SHAPE_MISMATCH, "columns of bias");
    d.bias = bias_tall.h;
    EXPECT_STATUS(weave_plan_create(grid, &d, &p.h), WEAVE_ERROR_SHAPE_MISMATCH, "rows of bias");
    if (p.h) fail_here(std::string(kOps[op]) + ": a failed weave_plan_create left a handle");
  }
}

// A matrix spread over another group than the plan's: caught at any size.
void matrix_over_another_group(weave_grid_t grid) {
  if (g_size < 2) return skip("a group of one rank holds every matrix whole, whatever its group");
  const int64_t M = 4 * g_size, N = 3 * g_size, K = 2 * g_size;
  Plan p;
  {
    Operands o;
    Matrix a_over_column;
    weave_matrix_desc_t d = desc_of(M, K, WEAVE_DIST_BLOCK_ROW);
    d.group = WEAVE_GROUP_COLUMN;  // on a P x 1 grid: the same ranks, another group
    if (!make_operands(grid, WEAVE_AG_GEMM, M, N, K, &o) || !create(grid, d, &a_over_column)) return;
    weave_plan_desc_t pd = plan_desc(WEAVE_AG_GEMM, o);
    pd.a = a_over_column.h;
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_DISTRIBUTION_MISMATCH, "A", "grid column",
                  ".group");
  }
  if (p.h) fail_here("a failed weave_plan_create left a handle");
}

void distribution_mismatches(weave_grid_t grid) {
  if (g_size < 2) return skip("a group of one rank holds everything locally, so any distribution fits");
  const int64_t M = 4 * g_size, N = 3 * g_size, K = 2 * g_size;
  Plan p;
  {  // AG-GEMM with A split by columns and op N: op(A) is not split by rows.
    Operands o;
    Matrix a_columns;
    if (!make_operands(grid, WEAVE_AG_GEMM, M, N, K, &o) ||
        !create(grid, desc_of(M, K, WEAVE_DIST_BLOCK_COLUMN), &a_columns))
      return;
    weave_plan_desc_t pd = plan_desc(WEAVE_AG_GEMM, o);
    pd.a = a_columns.h;
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_DISTRIBUTION_MISMATCH, "op(A)", "split by rows");
    // The same A with op T is fine for the distribution (and then K x M).
  }
  {  // GEMM-RS with a replicated C, GEMM-AR with a block-row C.
    Operands rs, ar;
    Matrix c_replicated, c_rows;
    if (!make_operands(grid, WEAVE_GEMM_RS, M, N, K, &rs) || !make_operands(grid, WEAVE_GEMM_AR, M, N, K, &ar) ||
        !create(grid, desc_of(M, N, WEAVE_DIST_REPLICATED), &c_replicated) ||
        !create(grid, desc_of(M, N, WEAVE_DIST_BLOCK_ROW), &c_rows))
      return;
    weave_plan_desc_t pd = plan_desc(WEAVE_GEMM_RS, rs);
    pd.c = c_replicated.h;
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_DISTRIBUTION_MISMATCH, "C", "split by rows");
    pd = plan_desc(WEAVE_GEMM_AR, ar);
    pd.c = c_rows.h;
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_DISTRIBUTION_MISMATCH, "C", "replicated");
  }
  {  // AG-GEMM: op(B)'s columns split one way, C's another.
    Operands o;
    Matrix c_other;
    std::vector<int64_t> counts(static_cast<size_t>(g_size), 3);
    counts[0] = 0;
    counts[1] = 6;
    weave_matrix_desc_t d = desc_of(M, N, WEAVE_DIST_BLOCK_COLUMN);
    d.col_counts = counts.data();
    if (!make_operands(grid, WEAVE_AG_GEMM, M, N, K, &o) || !create(grid, d, &c_other)) return;
    weave_plan_desc_t pd = plan_desc(WEAVE_AG_GEMM, o);
    pd.c = c_other.h;
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_DISTRIBUTION_MISMATCH, "columns of C",
                  "split the same way");
  }
  if (p.h) fail_here("a failed weave_plan_create left a handle");
}

// A group of one rank takes any distribution under which it holds the whole
// matrix from the start of its local array: block-cyclic matrices with
// every row on every grid row, matrices over another group than the plan's.
// Each operation over such operands computes C = A B (checked against a
// plain triple loop, C's other local elements untouched) on every rank.
// On the P x 1 grid, plans over a grid row (one rank each); at one rank
// also over the grid, with A and C over the grid row and column.
void group_of_one_takes_whole_matrices(weave_grid_t grid) {
  const int64_t M = 7, N = 5, K = 6;
  auto cyclic_whole = [](int64_t rows, int64_t cols) {  // every row on every grid row (rsrc -1), one grid column
    weave_matrix_desc_t d = desc_of(rows, cols, WEAVE_DIST_BLOCK_CYCLIC);
    d.mb = 2;
    d.nb = 3;
    d.rsrc = -1;
    return d;
  };
  auto over = [](weave_matrix_desc_t d, weave_group_t group) {
    d.group = group;
    return d;
  };
  struct Layouts {
    const char* what;
    weave_group_t plan_group;
    weave_matrix_desc_t a, b, c;
  };
  std::vector<Layouts> layouts = {
      {"block-cyclic A and C, B over the grid row, plan over a grid row", WEAVE_GROUP_ROW, cyclic_whole(M, K),
       over(desc_of(K, N, WEAVE_DIST_BLOCK_COLUMN), WEAVE_GROUP_ROW), cyclic_whole(M, N)}};
  if (g_size == 1)
    layouts.push_back({"A over the grid row, B block-cyclic, C over the grid column, plan over the grid",
                       WEAVE_GROUP_GRID, over(desc_of(M, K, WEAVE_DIST_BLOCK_ROW), WEAVE_GROUP_ROW),
                       cyclic_whole(K, N), over(desc_of(M, N, WEAVE_DIST_BLOCK_COLUMN), WEAVE_GROUP_COLUMN)});
  std::mt19937_64 rng(1234 + static_cast<unsigned>(g_rank));
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (const Layouts& l : layouts)
    for (const weave_operation_t op : kOperations) {
      Matrix a, b, c;
      if (!create(grid, l.a, &a) || !create(grid, l.b, &b) || !create(grid, l.c, &c)) return;
      weave_plan_desc_t pd{};
      pd.operation = op;
      pd.group = l.plan_group;
      pd.a = a.h;
      pd.b = b.h;
      pd.c = c.h;
      Plan p;
      const std::string what = std::string(kOps[op]) + ", " + l.what;
      if (weave_plan_create(grid, &pd, &p.h) != WEAVE_SUCCESS) {
        fail_here(what + ": weave_plan_create: " + weave_last_error());
        continue;
      }
      // Column-major, ld = rows: the whole matrix is the local array.
      std::vector<double> av(static_cast<size_t>(M * K)), bv(static_cast<size_t>(K * N));
      for (double& x : av) x = uniform(rng);
      for (double& x : bv) x = uniform(rng);
      std::vector<double> cv = local_buffer(c.h, std::nan(""));
      if (cv.size() != static_cast<size_t>(M * N)) {
        fail_here(what + ": C's local array is not the whole matrix");
        continue;
      }
      if (weave_execute(p.h, 1.0, av.data(), bv.data(), 0.0, cv.data(), nullptr, nullptr) != WEAVE_SUCCESS) {
        fail_here(what + ": weave_execute: " + weave_last_error());
        continue;
      }
      double worst = 0;
      for (int64_t j = 0; j < N; ++j)
        for (int64_t i = 0; i < M; ++i) {
          double want = 0;
          for (int64_t q = 0; q < K; ++q) want += av[static_cast<size_t>(i + q * M)] * bv[static_cast<size_t>(q + j * K)];
          const double got = cv[static_cast<size_t>(i + j * M)];
          worst = std::isnan(got) ? INFINITY : std::max(worst, std::abs(got - want));
        }
      if (!(worst <= 8 * K * 2.2e-16 * K))
        fail_here(what + ": C differs from A B by " + std::to_string(worst));
    }
}

void unsupported_types(weave_grid_t grid) {
  Plan p;
  {  // A in f32, B and C in f64.
    Operands o;
    Matrix a32;
    if (!make_operands(grid, WEAVE_GEMM_AR, 4, 3, 2 * g_size, &o) ||
        !create(grid, desc_of(4, 2 * g_size, WEAVE_DIST_BLOCK_COLUMN, WEAVE_FLOAT32), &a32))
      return;
    weave_plan_desc_t pd = plan_desc(WEAVE_GEMM_AR, o);
    pd.a = a32.h;
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_UNSUPPORTED_TYPE, "A is f32");
  }
  // Element types that do not exist, at matrix creation.
  Matrix m;
  for (int t : {0, 9}) {
    const weave_matrix_desc_t d = desc_of(4, 4, WEAVE_DIST_REPLICATED, static_cast<weave_dtype_t>(t));
    EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_UNSUPPORTED_TYPE, "dtype");
  }
  if (p.h || m.h) fail_here("a failed create left a handle");
}

// An FP8 matrix: its descriptor with a scale mode.
weave_matrix_desc_t fp8_desc(int64_t rows, int64_t cols, weave_distribution_t dist, weave_dtype_t dtype,
                             weave_scale_mode_t mode) {
  weave_matrix_desc_t d = desc_of(rows, cols, dist, dtype);
  d.scale_mode = mode;
  return d;
}

// Types that do not fit together, and scale modes that do not fit the
// type: errors at matrix or plan creation naming both.
void fp8_types_and_scale_modes(weave_grid_t grid) {
  Plan p;
  Matrix m;
  const int64_t M = 4 * g_size, N = 3 * g_size, K = 5;
  // A scale mode on an unscaled type; none on an FP8 type; a mode that does not exist.
  const weave_matrix_desc_t scaled_f32 = fp8_desc(4, 4, WEAVE_DIST_REPLICATED, WEAVE_FLOAT32, WEAVE_SCALE_ROW_WISE);
  EXPECT_STATUS(weave_matrix_create(grid, &scaled_f32, &m.h), WEAVE_ERROR_INVALID_VALUE, "scale_mode",
                "WEAVE_FLOAT32", "not scaled");
  const weave_matrix_desc_t unscaled_e4m3 = fp8_desc(4, 4, WEAVE_DIST_REPLICATED, WEAVE_FLOAT8_E4M3, WEAVE_SCALE_NONE);
  EXPECT_STATUS(weave_matrix_create(grid, &unscaled_e4m3, &m.h), WEAVE_ERROR_INVALID_VALUE, "WEAVE_FLOAT8_E4M3",
                "needs a scale_mode");
  const weave_matrix_desc_t no_such_mode =
      fp8_desc(4, 4, WEAVE_DIST_REPLICATED, WEAVE_FLOAT8_E4M3, static_cast<weave_scale_mode_t>(7));
  EXPECT_STATUS(weave_matrix_create(grid, &no_such_mode, &m.h), WEAVE_ERROR_INVALID_VALUE, "scale_mode = 7");
  // A scale mode that differs between ranks.
  if (g_size > 1) {
    const weave_matrix_desc_t d = fp8_desc(4, 4, WEAVE_DIST_REPLICATED, WEAVE_FLOAT8_E4M3,
                                           g_rank == 0 ? WEAVE_SCALE_TENSOR : WEAVE_SCALE_ROW_WISE);
    EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_RANK_MISMATCH, "scale_mode");
  }
  const Distributions dist = distributions_for(WEAVE_AG_GEMM);
  Matrix a8, b8, b5, a5, c16, c8, c64, bias32;
  if (!create(grid, fp8_desc(M, K, dist.a, WEAVE_FLOAT8_E4M3, WEAVE_SCALE_ROW_WISE), &a8) ||
      !create(grid, fp8_desc(M, K, dist.a, WEAVE_FLOAT8_E5M2, WEAVE_SCALE_ROW_WISE), &a5) ||
      !create(grid, fp8_desc(K, N, dist.b, WEAVE_FLOAT8_E4M3, WEAVE_SCALE_TENSOR), &b8) ||
      !create(grid, fp8_desc(K, N, dist.b, WEAVE_FLOAT8_E5M2, WEAVE_SCALE_TENSOR), &b5) ||
      !create(grid, desc_of(M, N, dist.c, WEAVE_BFLOAT16), &c16) ||
      !create(grid, fp8_desc(M, N, dist.c, WEAVE_FLOAT8_E4M3, WEAVE_SCALE_TENSOR), &c8) ||
      !create(grid, desc_of(M, N, dist.c, WEAVE_FLOAT64), &c64) ||
      !create(grid, desc_of(1, N, dist.bias, WEAVE_FLOAT32), &bias32))
    return;
  weave_plan_desc_t pd{};
  pd.operation = WEAVE_AG_GEMM;
  pd.a = a8.h;
  pd.b = b8.h;
  pd.c = c8.h;  // FP8 C
  EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_UNSUPPORTED_TYPE, "A is e4m3", "C is e4m3");
  pd.c = c64.h;  // f64 C of an FP8 product
  EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_UNSUPPORTED_TYPE, "C is f64", "stored in f32, f16, bf16");
  pd.c = c16.h;
  pd.a = a5.h;
  pd.b = b5.h;  // e5m2 x e5m2: no such FP8 GEMM
  EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_UNSUPPORTED_TYPE, "A is e5m2", "B is e5m2");
  pd.a = a8.h;
  pd.b = b8.h;
  pd.bias = bias32.h;  // f32 bias, bf16 C
  EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_UNSUPPORTED_TYPE, "bias is f32", "C is bf16");
  pd.bias = nullptr;
  {  // An f64 B with an FP8 A.
    Matrix b64;
    if (!create(grid, desc_of(K, N, dist.b, WEAVE_FLOAT64), &b64)) return;
    pd.b = b64.h;
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_UNSUPPORTED_TYPE, "A is e4m3", "B is f64");
    pd.b = b8.h;
  }
  {  // Wire types that do not fit: not a wire type, not narrower than A, not
     // AG-GEMM, a B that does not multiply with it, a value that is no type.
    Matrix a32, a64, b32, c32;
    const Distributions rs = distributions_for(WEAVE_GEMM_RS);
    Matrix rs_a, rs_b, rs_c;
    if (!create(grid, desc_of(M, K, dist.a, WEAVE_FLOAT32), &a32) || !create(grid, desc_of(M, K, dist.a), &a64) ||
        !create(grid, desc_of(K, N, dist.b, WEAVE_FLOAT32), &b32) ||
        !create(grid, desc_of(M, N, dist.c, WEAVE_FLOAT32), &c32) ||
        !create(grid, desc_of(M, K * g_size, rs.a, WEAVE_FLOAT32), &rs_a) ||
        !create(grid, fp8_desc(K * g_size, N, rs.b, WEAVE_FLOAT8_E4M3, WEAVE_SCALE_TENSOR), &rs_b) ||
        !create(grid, desc_of(M, N, rs.c, WEAVE_BFLOAT16), &rs_c))
      return;
    weave_plan_desc_t wd{};
    wd.operation = WEAVE_AG_GEMM;
    wd.a = a32.h;
    wd.b = b8.h;
    wd.c = c16.h;
    wd.wire_type = WEAVE_FLOAT8_E5M2;
    EXPECT_STATUS(weave_plan_create(grid, &wd, &p.h), WEAVE_ERROR_UNSUPPORTED_TYPE, "wire_type = WEAVE_FLOAT8_E5M2",
                  "not a wire type");
    wd.wire_type = static_cast<weave_dtype_t>(99);
    EXPECT_STATUS(weave_plan_create(grid, &wd, &p.h), WEAVE_ERROR_INVALID_VALUE, "wire_type = 99");
    wd.wire_type = WEAVE_FLOAT8_E4M3;
    wd.a = a64.h;
    EXPECT_STATUS(weave_plan_create(grid, &wd, &p.h), WEAVE_ERROR_UNSUPPORTED_TYPE, "A is f64", "wire_type is e4m3");
    wd.a = a32.h;
    wd.b = b32.h;
    EXPECT_STATUS(weave_plan_create(grid, &wd, &p.h), WEAVE_ERROR_UNSUPPORTED_TYPE, "A's wire type is e4m3",
                  "B is f32");
    wd.b = b8.h;
    wd.operation = WEAVE_GEMM_RS;
    wd.a = rs_a.h;
    wd.b = rs_b.h;
    wd.c = rs_c.h;
    EXPECT_STATUS(weave_plan_create(grid, &wd, &p.h), WEAVE_ERROR_UNSUPPORTED, "wire_type is for AG-GEMM");
  }
  // Scales that cover 128-row bands on an A the gathered output of whose
  // shards would cut a band; chunks of such an A begin on bands
  // (Problem::chunk_unit), so asking for more of them is no error.
  if (g_size > 1) {
    Matrix a_bands;
    if (!create(grid, fp8_desc(M, K, dist.a, WEAVE_FLOAT8_E4M3, WEAVE_SCALE_BLOCK_128X128), &a_bands)) return;
    pd.a = a_bands.h;
    pd.flags = WEAVE_FLAG_GATHERED_OUTPUT;
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_UNSUPPORTED, "128x128 blocks", "128 rows");
    pd.flags = 0;
    pd.chunks_per_shard = 2;
    pd.algorithm = WEAVE_ALGORITHM_RING;
    EXPECT_OK(weave_plan_create(grid, &pd, &p.h));
    weave_plan_destroy(p.h);
    p.h = nullptr;
  }
  if (p.h || m.h) fail_here("a failed create left a handle");
}

// An FP8 AG-GEMM's scale buffers at execute: missing (on every rank or on
// one), given where the operand has none, too small for what a typed
// interface says, or the gathered scales without the gathered output. Each
// fails on every rank before C is written; then a good execute runs.
void fp8_execute_arguments(weave_grid_t grid) {
  const int64_t M = 4 * g_size, N = 3 * g_size, K = 5;
  const Distributions dist = distributions_for(WEAVE_AG_GEMM);
  Matrix a, b, c, a64, b64, c64;
  if (!create(grid, fp8_desc(M, K, dist.a, WEAVE_FLOAT8_E4M3, WEAVE_SCALE_ROW_WISE), &a) ||
      !create(grid, fp8_desc(K, N, dist.b, WEAVE_FLOAT8_E4M3, WEAVE_SCALE_TENSOR), &b) ||
      !create(grid, desc_of(M, N, dist.c, WEAVE_BFLOAT16), &c) ||
      !create(grid, desc_of(M, K, dist.a), &a64) || !create(grid, desc_of(K, N, dist.b), &b64) ||
      !create(grid, desc_of(M, N, dist.c), &c64))
    return;
  weave_plan_desc_t pd{};
  pd.operation = WEAVE_AG_GEMM;
  pd.a = a.h;
  pd.b = b.h;
  pd.c = c.h;
  Plan p;
  EXPECT_OK(weave_plan_create(grid, &pd, &p.h));
  if (!p.h) return;
  weave_plan_info_t info = WEAVE_PLAN_INFO_INIT;
  EXPECT_OK(weave_plan_get_info(p.h, &info));
  if (info.a_type != WEAVE_FLOAT8_E4M3 || info.c_type != WEAVE_BFLOAT16 || info.a_scale_mode != WEAVE_SCALE_ROW_WISE ||
      info.b_scale_mode != WEAVE_SCALE_TENSOR || info.a_scale_elements != 4 || info.b_scale_elements != 1)
    fail_here("plan info does not report the types, scale modes and scale sizes");
  const char* text = nullptr;
  EXPECT_OK(weave_plan_describe(p.h, &text));
  if (text && g_size > 1 && !std::strstr(text, "A's rows travel as e4m3 with their row-wise scales"))
    fail_here(std::string("describe does not say what travels: ") + text);
  int64_t a_elements = 0, b_elements = 0, c_elements = 0;
  weave_matrix_local_elements(a.h, &a_elements);
  weave_matrix_local_elements(b.h, &b_elements);
  weave_matrix_local_elements(c.h, &c_elements);
  std::vector<uint8_t> a_local(static_cast<size_t>(a_elements), 0x38), b_local(static_cast<size_t>(b_elements), 0x38);
  const uint16_t sentinel = 0x7777;
  std::vector<uint16_t> c_local(static_cast<size_t>(c_elements), sentinel);
  std::vector<float> a_scale(4, 0.5f), b_scale(1, 2.0f), gathered_scale(static_cast<size_t>(M), 0.0f);
  auto untouched = [&] {
    for (uint16_t x : c_local)
      if (x != sentinel) return false;
    return true;
  };
  auto args = [&] {
    weave_execute_args_t x = WEAVE_EXECUTE_ARGS_INIT;
    x.alpha = 1.0;
    x.a = a_local.data();
    x.b = b_local.data();
    x.c = c_local.data();
    x.a_scale = a_scale.data();
    x.b_scale = b_scale.data();
    return x;
  };
  // weave_execute has no scale arguments.
  EXPECT_STATUS(weave_execute(p.h, 1.0, a_local.data(), b_local.data(), 0.0, c_local.data(), nullptr, nullptr),
                WEAVE_ERROR_NULL_ARGUMENT, "a_scale is NULL", "row-wise");
  weave_execute_args_t x = args();
  if (g_rank == g_size - 1) x.b_scale = nullptr;  // on one rank
  EXPECT_STATUS(weave_execute_ex(p.h, &x), WEAVE_ERROR_NULL_ARGUMENT, "b_scale is NULL");
  x = args();
  x.buffer_checks = WEAVE_CHECK_ELEMENTS;
  x.a_elements = a_elements;
  x.b_elements = b_elements;
  x.c_elements = c_elements;
  x.a_scale_elements = g_rank == 0 ? 3 : 4;
  x.b_scale_elements = 1;
  EXPECT_STATUS(weave_execute_ex(p.h, &x), WEAVE_ERROR_INVALID_VALUE, "a_scale holds 3");
  x = args();
  x.gathered_a_scale = gathered_scale.data();
  EXPECT_STATUS(weave_execute_ex(p.h, &x), WEAVE_ERROR_INVALID_VALUE, "gathered_a_scale", "GATHERED_OUTPUT");
  if (!untouched()) fail_here("a failed execute wrote C");
  x = args();
  EXPECT_OK(weave_execute_ex(p.h, &x));
  // Every element is 1 (0x38) x 0.5 x 1 x 2 summed over K: 5 (bf16 0x40A0).
  for (uint16_t v : c_local)
    if (v != 0x40A0) {
      fail_here("the good FP8 execute computed " + std::to_string(v) + ", not bf16 5.0 (0x40A0)");
      break;
    }
  {  // Scales where the plan has none.
    Plan plain;
    pd.a = a64.h;
    pd.b = b64.h;
    pd.c = c64.h;
    EXPECT_OK(weave_plan_create(grid, &pd, &plain.h));
    std::vector<double> a_d = local_buffer(a64.h, 1.0), b_d = local_buffer(b64.h, 1.0), c_d = local_buffer(c64.h, -7.0);
    weave_execute_args_t y = WEAVE_EXECUTE_ARGS_INIT;
    y.a = a_d.data();
    y.b = b_d.data();
    y.c = c_d.data();
    y.a_scale = a_scale.data();
    EXPECT_STATUS(weave_execute_ex(plain.h, &y), WEAVE_ERROR_INVALID_VALUE, "a_scale is not NULL", "f64");
  }
}

void memory_space_mismatch(weave_grid_t grid) {
  Plan p;
  Operands o;
  Matrix a_device;
  weave_matrix_desc_t d = desc_of(4, 2 * g_size, WEAVE_DIST_BLOCK_COLUMN);
  d.memory = WEAVE_MEMORY_DEVICE;
  if (!make_operands(grid, WEAVE_GEMM_AR, 4, 3, 2 * g_size, &o) || !create(grid, d, &a_device)) return;
  weave_plan_desc_t pd = plan_desc(WEAVE_GEMM_AR, o);
  pd.a = a_device.h;
  EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_POINTER_KIND, "memory space", "A is device");
  // Host matrices on the CUDA backend: not compiled, or the wrong memory.
  pd = plan_desc(WEAVE_GEMM_AR, o);
  pd.backend = WEAVE_BACKEND_CUDA;
  if (has_feature("cuda"))
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_POINTER_KIND, "WEAVE_MEMORY_DEVICE");
  else
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_NOT_COMPILED, "WEAVE_ENABLE_CUDA");
  if (p.h) fail_here("a failed weave_plan_create left a handle");
}

// Ranks that pass different (each locally valid) arguments to plan creation.
void rank_mismatch_at_plan_creation(weave_grid_t grid) {
  if (g_size < 2) return skip("needs two or more ranks");
  const bool odd_one = g_rank == 1;
  const int64_t M = 4 * g_size, N = 3, K = 2 * g_size;
  Plan p;
  {  // Another M, through another pair of descriptors.
    Operands o, taller;
    if (!make_operands(grid, WEAVE_GEMM_AR, M, N, K, &o) ||
        !make_operands(grid, WEAVE_GEMM_AR, M + 1, N, K, &taller))
      return;
    const weave_plan_desc_t pd = plan_desc(WEAVE_GEMM_AR, odd_one ? taller : o);
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_RANK_MISMATCH, "M", "rank 1");
  }
  {  // Another op_a: rank 1 passes A^T stored K x M with op T.
    Operands o;
    Matrix a_transposed;
    if (!make_operands(grid, WEAVE_GEMM_AR, M, N, K, &o) ||
        !create(grid, desc_of(K, M, WEAVE_DIST_BLOCK_ROW), &a_transposed))
      return;
    weave_plan_desc_t pd = plan_desc(WEAVE_GEMM_AR, o);
    if (odd_one) {
      pd.a = a_transposed.h;
      pd.op_a = WEAVE_OP_T;
    }
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_RANK_MISMATCH, "op_a");
  }
  {  // Another element type.
    Operands o64, o32;
    if (!make_operands(grid, WEAVE_GEMM_RS, M, N, K, &o64) ||
        !make_operands(grid, WEAVE_GEMM_RS, M, N, K, &o32, WEAVE_FLOAT32))
      return;
    const weave_plan_desc_t pd = plan_desc(WEAVE_GEMM_RS, odd_one ? o32 : o64);
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_RANK_MISMATCH, "dtype");
  }
  {  // Another chunks_per_shard, algorithm, or bias present.
    Operands o;
    if (!make_operands(grid, WEAVE_AG_GEMM, M, N, K, &o, WEAVE_FLOAT64, true)) return;
    weave_plan_desc_t pd = plan_desc(WEAVE_AG_GEMM, o);
    pd.chunks_per_shard = odd_one ? 2 : 1;
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_RANK_MISMATCH, "chunks_per_shard");
    pd = plan_desc(WEAVE_AG_GEMM, o);
    pd.algorithm = odd_one ? WEAVE_ALGORITHM_SEQUENTIAL : WEAVE_ALGORITHM_RING;
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_RANK_MISMATCH, "algorithm");
    pd = plan_desc(WEAVE_AG_GEMM, o);
    if (odd_one) pd.bias = nullptr;
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_RANK_MISMATCH, "bias");
  }
  if (p.h) fail_here("a failed weave_plan_create left a handle");
}

void rank_mismatch_at_matrix_creation(weave_grid_t grid) {
  if (g_size < 2) return skip("needs two or more ranks");
  Matrix m;
  weave_matrix_desc_t d = desc_of(g_rank == 1 ? 9 : 8, 4, WEAVE_DIST_REPLICATED);
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_RANK_MISMATCH, "rows", "rank 1");
  d = desc_of(8, 4, WEAVE_DIST_REPLICATED, g_rank == 1 ? WEAVE_FLOAT32 : WEAVE_FLOAT64);
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_RANK_MISMATCH, "dtype");
  d = desc_of(8, 4, g_rank == 1 ? WEAVE_DIST_BLOCK_COLUMN : WEAVE_DIST_BLOCK_ROW);
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_RANK_MISMATCH, "distribution");
  // A distribution that gives the last rank's descriptor other fields (no
  // counts where the others have some): named, not a "differently shaped"
  // list of fields.
  const int last = g_size - 1;
  d = desc_of(8, 4, g_rank == last ? WEAVE_DIST_REPLICATED : WEAVE_DIST_BLOCK_COLUMN);
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_RANK_MISMATCH, "disagree on distribution",
                "rank " + std::to_string(last) + " passed");
  // Counts that each sum correctly but differ between ranks.
  std::vector<int64_t> counts(static_cast<size_t>(g_size), 2);
  if (g_rank == 1) {
    counts[0] = 1;
    counts[1] = 3;
  }
  d = desc_of(2 * g_size, 4, WEAVE_DIST_BLOCK_ROW);
  d.row_counts = counts.data();
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_RANK_MISMATCH, "row_counts[0]");
  if (m.h) fail_here("a failed weave_matrix_create left a handle");
}

void bad_enums(weave_grid_t grid) {
  Matrix m;
  weave_matrix_desc_t d = desc_of(4, 4, static_cast<weave_distribution_t>(0));
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "distribution", "not set");
  d = desc_of(4, 4, static_cast<weave_distribution_t>(9));
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "distribution = 9");
  d = desc_of(4, 4, WEAVE_DIST_REPLICATED);
  d.order = static_cast<weave_order_t>(5);
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "order = 5");
  d = desc_of(4, 4, WEAVE_DIST_REPLICATED);
  d.memory = static_cast<weave_memory_t>(3);
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "memory = 3");
  d = desc_of(4, 4, WEAVE_DIST_BLOCK_ROW);
  d.group = static_cast<weave_group_t>(7);
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "group = 7");
  int size = 0, rank = 0;
  EXPECT_STATUS(weave_grid_group(grid, static_cast<weave_group_t>(4), &size, &rank), WEAVE_ERROR_INVALID_VALUE,
                "group = 4");

  Operands o;
  if (!make_operands(grid, WEAVE_GEMM_AR, 4, 3, 2 * g_size, &o)) return;
  Plan p;
  struct Bad {
    std::function<void(weave_plan_desc_t&)> set;
    const char* names;
  };
  const Bad bad[] = {
      {[](weave_plan_desc_t& x) { x.operation = static_cast<weave_operation_t>(0); }, "operation = 0"},
      {[](weave_plan_desc_t& x) { x.operation = static_cast<weave_operation_t>(5); }, "operation = 5"},
      {[](weave_plan_desc_t& x) { x.op_a = static_cast<weave_op_t>(3); }, "op_a = 3"},
      {[](weave_plan_desc_t& x) { x.op_b = static_cast<weave_op_t>(-1); }, "op_b = -1"},
      {[](weave_plan_desc_t& x) { x.group = static_cast<weave_group_t>(3); }, "group = 3"},
      {[](weave_plan_desc_t& x) { x.algorithm = static_cast<weave_algorithm_t>(9); }, "algorithm = 9"},
      {[](weave_plan_desc_t& x) { x.backend = static_cast<weave_backend_t>(9); }, "backend = 9"},
      {[](weave_plan_desc_t& x) { x.transport = static_cast<weave_transport_t>(9); }, "transport = 9"},
      {[](weave_plan_desc_t& x) { x.direction = static_cast<weave_direction_t>(9); }, "direction = 9"},
      {[](weave_plan_desc_t& x) { x.progress = static_cast<weave_progress_t>(9); }, "progress = 9"},
      {[](weave_plan_desc_t& x) { x.chunks_per_shard = -1; }, "chunks_per_shard = -1"},
      {[](weave_plan_desc_t& x) { x.compute_streams = -2; }, "compute_streams = -2"},
      {[](weave_plan_desc_t& x) { x.chunks_per_shard = 1025; }, "chunks_per_shard = 1025"},
      {[](weave_plan_desc_t& x) { x.compute_streams = 65; }, "compute_streams = 65"},
      {[](weave_plan_desc_t& x) { x.flags = 1 << 24; }, "flags"},
  };
  // On every rank, then on the last only: a value wrong in itself is that
  // rank's error (its own message, "rank R: "), not a mismatch between
  // ranks.
  const int last = g_size - 1;
  const std::string on_last = "rank " + std::to_string(last) + ": ";
  for (const Bad& b : bad)
    for (const bool everywhere : {true, false}) {
      weave_plan_desc_t pd = plan_desc(WEAVE_GEMM_AR, o);
      if (everywhere || g_rank == last) b.set(pd);
      EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_INVALID_VALUE, b.names,
                    everywhere ? "" : on_last.c_str());
    }
  if (p.h || m.h) fail_here("a failed create left a handle");
}

void not_compiled(weave_grid_t grid) {
  Operands o;
  if (!make_operands(grid, WEAVE_GEMM_RS, 4 * g_size, 3, 2 * g_size, &o)) return;
  Plan p;
  std::string skipped;
  weave_plan_desc_t pd = plan_desc(WEAVE_GEMM_RS, o);
  pd.transport = WEAVE_TRANSPORT_UCX;
  if (!has_feature("ucx"))
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_NOT_COMPILED, "UCX", "WEAVE_ENABLE_UCX");
  else
    skipped += " ucx is compiled in;";
  // NCCL moves device memory: on a host plan it is not compiled, or unsupported.
  pd.transport = WEAVE_TRANSPORT_NCCL;
  if (!has_feature("nccl"))
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_NOT_COMPILED, "NCCL", "WEAVE_ENABLE_NCCL");
  else
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_UNSUPPORTED, "nccl", "host plans");
  pd.transport = WEAVE_TRANSPORT_COPY_ENGINE;
  if (!has_feature("cuda")) {
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_NOT_COMPILED, "copy-engine");
  } else {
    const weave_status_t s = weave_plan_create(grid, &pd, &p.h);
    if (s != WEAVE_ERROR_NOT_COMPILED && s != WEAVE_ERROR_UNSUPPORTED)
      fail_here(std::string("copy-engine transport on a host plan returned ") + weave_status_string(s));
  }
  // The SM transport moves device memory between one node's GPUs.
  pd.transport = WEAVE_TRANSPORT_SM;
  if (!has_feature("cuda"))
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_NOT_COMPILED, "SM transport", "WEAVE_ENABLE_CUDA");
  else
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_UNSUPPORTED, "sm transport moves device memory",
                  "host plans");
  pd.transport = WEAVE_TRANSPORT_AUTO;
  pd.backend = WEAVE_BACKEND_CUDA;
  if (!has_feature("cuda"))
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_NOT_COMPILED, "CUDA", "WEAVE_ENABLE_CUDA");
  else
    skipped += " cuda is compiled in (a CUDA plan needs a GPU);";
  if (p.h) fail_here("a failed weave_plan_create left a handle");
  if (!skipped.empty() && g_rank == 0) std::printf("     (not applicable in this build:%s)\n", skipped.c_str());
}

void grid_shapes() {
  Grid g;
  EXPECT_STATUS(weave_grid_create(MPI_COMM_WORLD, g_size + 1, 1, &g.h), WEAVE_ERROR_INVALID_VALUE, "grid shape",
                "communicator has");
  EXPECT_STATUS(weave_grid_create(MPI_COMM_WORLD, 0, g_size, &g.h), WEAVE_ERROR_INVALID_VALUE, "positive");
  EXPECT_STATUS(weave_grid_create(MPI_COMM_WORLD, g_size, -1, &g.h), WEAVE_ERROR_INVALID_VALUE, "positive");
  if (g.h) fail_here("a failed weave_grid_create left a handle");
  if (g_size < 2) return;  // one rank: every valid shape is 1 x 1
  // Each rank's shape fits the communicator, but rank 1 asks for another.
  const bool odd_one = g_rank == 1;
  EXPECT_STATUS(weave_grid_create(MPI_COMM_WORLD, odd_one ? 1 : g_size, odd_one ? g_size : 1, &g.h),
                WEAVE_ERROR_RANK_MISMATCH, "prows");
  // A wrong shape on one rank only.
  EXPECT_STATUS(weave_grid_create(MPI_COMM_WORLD, odd_one ? g_size + 1 : g_size, 1, &g.h), WEAVE_ERROR_INVALID_VALUE,
                "grid shape");
  if (g.h) fail_here("a failed weave_grid_create left a handle");
}

// GEMM-AR with all-ones A and B and C = K * ones: a following good execute
// must work and give the right numbers.
bool execute_all_ones(weave_plan_t plan, const Operands& o, int64_t K, const char* when) {
  std::vector<double> a = local_buffer(o.a.h, 1.0), b = local_buffer(o.b.h, 1.0), c = local_buffer(o.c.h, NAN);
  const weave_status_t s = weave_execute(plan, 1.0, a.data(), b.data(), 0.0, c.data(), nullptr, nullptr);
  if (s != WEAVE_SUCCESS) {
    fail_here(std::string(when) + ": execute failed: " + weave_status_string(s) + ": " + weave_last_error());
    return false;
  }
  for (double x : c)
    if (x != static_cast<double>(K)) {
      fail_here(std::string(when) + ": C holds " + std::to_string(x) + ", expected " + std::to_string(K));
      return false;
    }
  return true;
}

// Sizes that do not fit 64 bits: each is WEAVE_ERROR_INVALID_VALUE naming
// the quantity, on every rank, where they used to be accepted with wrapped
// sizes.
constexpr int64_t kInt64Max = 9223372036854775807;

void overflowing_matrix_extents(weave_grid_t grid) {
  Matrix m;
  // A replicated 2^32 x 2^32 matrix spans 2^64 elements (it reported 0).
  const int64_t n = int64_t{1} << 32;
  weave_matrix_desc_t d = desc_of(n, n, WEAVE_DIST_REPLICATED);
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "local elements",
                "4294967296 x 4294967296");
  // Its local bytes: 2^31 x 2^31 f64 is 2^62 elements but 2^65 bytes.
  d = desc_of(n / 2, n / 2, WEAVE_DIST_REPLICATED);
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "local bytes");
  // A GEMM-RS C (block-row, one row per rank, 5 columns) whose ld is 2^62
  // spans 4 * 2^62 + 1 elements (it reported 1, and the epilogue wrote far
  // past C). On every rank, then on the last rank only.
  for (bool one_rank : {false, true}) {
    d = desc_of(g_size, 5, WEAVE_DIST_BLOCK_ROW);
    d.ld = !one_rank || g_rank == g_size - 1 ? int64_t{1} << 62 : 0;
    EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "local elements", "ld",
                  ("rank " + std::to_string(one_rank ? g_size - 1 : 0)).c_str());
  }
  if (m.h) fail_here("a failed weave_matrix_create left a handle");
}

void overflowing_count_sums(weave_grid_t grid) {
  if (g_size < 2) return skip("needs two or more counts, so two or more ranks");
  // [INT64_MAX] x P used to pass the sum check: the sum wrapped.
  Matrix m;
  const std::vector<int64_t> counts(static_cast<size_t>(g_size), kInt64Max);
  weave_matrix_desc_t d = desc_of(kInt64Max, 3, WEAVE_DIST_BLOCK_ROW);
  d.row_counts = counts.data();
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "sum of matrix.row_counts");
  d = desc_of(3, kInt64Max, WEAVE_DIST_BLOCK_COLUMN);
  d.col_counts = counts.data();
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, "sum of matrix.col_counts");
  if (m.h) fail_here("a failed weave_matrix_create left a handle");
}

// AG-GEMM whose shards fit but whose gathered A does not: 2^29 rows of 2^30
// f64 columns per rank (2^62 bytes) gather into P x 2^62 bytes.
void overflowing_workspace(weave_grid_t grid) {
  const int64_t K = int64_t{1} << 30, M = g_size * (int64_t{1} << 29), N = g_size;
  Operands o;
  if (!make_operands(grid, WEAVE_AG_GEMM, M, N, K, &o)) return;
  Plan p;
  for (weave_algorithm_t algorithm : {WEAVE_ALGORITHM_RING, WEAVE_ALGORITHM_SEQUENTIAL}) {
    weave_plan_desc_t pd = plan_desc(WEAVE_AG_GEMM, o);
    pd.algorithm = algorithm;
    if (g_size > 1) {
      EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_INVALID_VALUE, "workspace",
                    "gathered op(A)");
      continue;
    }
    // One rank gathers nothing: the plan needs no workspace at all.
    weave_plan_info_t info{};
    EXPECT_OK(weave_plan_create(grid, &pd, &p.h));
    if (p.h && weave_plan_get_info(p.h, &info) == WEAVE_SUCCESS && info.workspace_bytes != 0)
      fail_here("a one-rank AG-GEMM reports " + std::to_string(info.workspace_bytes) + " bytes of workspace");
    weave_plan_destroy(p.h);
    p.h = nullptr;
  }
  if (p.h) fail_here("a failed weave_plan_create left a handle");
}

// Leading dimensions beyond BLAS's integers (a 32-bit BLAS). A matrix of
// one column never steps by its ld, so any ld it was created with is fine:
// the product is right (it failed in the BLAS call at execute, which left
// the plan unusable). With two columns the BLAS would need the ld: plan
// creation refuses it, naming it, instead of an execute failing halfway.
void leading_dimensions_beyond_blas(weave_grid_t grid) {
  const int64_t M = 2 * g_size, K = 3, huge = int64_t{1} << 40;
  for (int64_t columns : {int64_t{1}, int64_t{2}}) {
    Operands o;
    weave_matrix_desc_t dc = desc_of(M, columns * g_size, WEAVE_DIST_BLOCK_COLUMN);
    dc.ld = columns == 1 ? huge : (int64_t{1} << 31) + 5;
    if (!create(grid, desc_of(M, K, WEAVE_DIST_BLOCK_ROW), &o.a) ||
        !create(grid, desc_of(K, columns * g_size, WEAVE_DIST_BLOCK_COLUMN), &o.b) || !create(grid, dc, &o.c))
      return;
    const weave_plan_desc_t pd = plan_desc(WEAVE_AG_GEMM, o);
    Matrix& a = o.a;
    Matrix& b = o.b;
    Matrix& c = o.c;
    Plan p;
    if (columns == 2) {
#ifdef WEAVE_BLAS_ILP64
      EXPECT_OK(weave_plan_create(grid, &pd, &p.h));
#else
      EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_UNSUPPORTED, "ldc = 2147483653",
                    "BLAS integer range", "WEAVE_BLAS_ILP64");
      if (p.h) fail_here("a failed weave_plan_create left a handle");
#endif
      continue;
    }
    EXPECT_OK(weave_plan_create(grid, &pd, &p.h));
    if (!p.h) return;
    // A: row i of my rows is (i + 1) everywhere; B: ones. C = A B: row i
    // of C holds K (i + 1) in its one column.
    std::vector<double> av = local_buffer(a.h, 0.0), bv = local_buffer(b.h, 1.0), cv = local_buffer(c.h, -7.0);
    int64_t rows = 0, cols = 0, row0 = 0, col0 = 0;
    weave_matrix_local_shape(a.h, &rows, &cols);
    weave_matrix_local_offset(a.h, &row0, &col0);
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t i = 0; i < rows; ++i) av[static_cast<size_t>(i + j * rows)] = static_cast<double>(row0 + i + 1);
    EXPECT_OK(weave_execute(p.h, 1.0, av.data(), bv.data(), 0.0, cv.data(), nullptr, nullptr));
    for (int64_t i = 0; i < M; ++i)
      if (cv[static_cast<size_t>(i)] != static_cast<double>(K * (i + 1)))
        fail_here("C(" + std::to_string(i) + ", 0) = " + std::to_string(cv[static_cast<size_t>(i)]) + ", not " +
                  std::to_string(K * (i + 1)));
  }
}

// Sets an environment variable for one scope, on this rank.
struct ScopedEnvironment {
  std::string name, saved;
  bool was_set = false;
  ScopedEnvironment(const char* variable, const char* value) : name(variable) {
    if (const char* old = std::getenv(variable)) {
      was_set = true;
      saved = old;
    }
    setenv(variable, value, 1);
  }
  ~ScopedEnvironment() {
    if (was_set)
      setenv(name.c_str(), saved.c_str(), 1);
    else
      unsetenv(name.c_str());
  }
};

// A sequential or pipelined reduction asked for by name, with 16-bit
// partial sums (WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE) that MPI's collectives
// cannot sum: refused at plan creation, on every rank (it failed in the
// first execute and left the plan unusable). Left automatic, the plan runs
// the ring instead.
void sums_mpi_cannot_take(weave_grid_t grid) {
  if (g_size < 2) return skip("one rank sums nothing");
  for (weave_operation_t op : {WEAVE_GEMM_RS, WEAVE_GEMM_AR}) {
    Operands o;
    if (!make_operands(grid, op, 4 * g_size, 6, 4 * g_size, &o, WEAVE_FLOAT16)) return;
    for (weave_algorithm_t algorithm : {WEAVE_ALGORITHM_SEQUENTIAL, WEAVE_ALGORITHM_PIPELINED, WEAVE_ALGORITHM_AUTO}) {
      weave_plan_desc_t pd = plan_desc(op, o);
      pd.algorithm = algorithm;
      pd.transport = WEAVE_TRANSPORT_MPI;
      pd.flags = WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE;
      Plan p;
      if (algorithm != WEAVE_ALGORITHM_AUTO) {
        EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_UNSUPPORTED_TYPE, "MPI cannot sum f16");
        if (p.h) fail_here("a failed weave_plan_create left a handle");
        continue;
      }
      EXPECT_OK(weave_plan_create(grid, &pd, &p.h));
      std::vector<uint16_t> a(256, 0), b(256, 0), c(256, 0);  // zeros: f16 0.0
      if (p.h) EXPECT_OK(weave_execute(p.h, 1.0, a.data(), b.data(), 0.0, c.data(), nullptr, nullptr));
      // The same where plan creation times the model's candidates (as it
      // does unasked once they are predicted long enough): the candidates
      // whose collectives would sum f16 over MPI are left out of the timing
      // (their transport refuses them), not the plan's failure.
      ScopedEnvironment timed("WEAVE_CALIBRATE", "time");
      Plan q;
      EXPECT_OK(weave_plan_create(grid, &pd, &q.h));
      if (q.h) EXPECT_OK(weave_execute(q.h, 1.0, a.data(), b.data(), 0.0, c.data(), nullptr, nullptr));
    }
  }
}

// A timeout whose deadline overflows the clock (every execute timed out at
// once) and counts that were truncated to int.
void overflowing_timeout_and_counts(weave_grid_t grid) {
  Operands o;
  if (!make_operands(grid, WEAVE_GEMM_AR, 4, 3, 2 * g_size, &o)) return;
  Plan p;
  weave_plan_desc_t pd = plan_desc(WEAVE_GEMM_AR, o);
  {
    ScopedEnvironment huge("WEAVE_TIMEOUT", "10000000000");
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_INVALID_VALUE, "WEAVE_TIMEOUT=10000000000");
  }
  {
    ScopedEnvironment wraps("WEAVE_CHUNKS", "4294967297");
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_INVALID_VALUE, "WEAVE_CHUNKS=4294967297");
  }
  pd.chunks_per_shard = 2147483647;
  EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_INVALID_VALUE, "chunks_per_shard = 2147483647");
  if (p.h) fail_here("a failed weave_plan_create left a handle");
  // The longest timeout is accepted and does not expire at once.
  pd.chunks_per_shard = 0;
  ScopedEnvironment longest("WEAVE_TIMEOUT", "3153600000");
  EXPECT_OK(weave_plan_create(grid, &pd, &p.h));
  if (p.h) execute_all_ones(p.h, o, 2 * g_size, "execute with the longest timeout");
}

// Weave's environment set differently on one rank: plan creation fails with
// WEAVE_ERROR_RANK_MISMATCH on every rank, naming the variable, instead of
// leaving the ranks in different calibrations or collectives (a forced
// algorithm or WEAVE_CALIBRATE=0 on one rank left another waiting until its
// timeout); the grid works afterwards. WEAVE_PROGRESS and WEAVE_TIMEOUT are
// each rank's own and may differ.
void environment_differs_between_ranks(weave_grid_t grid) {
  if (g_size < 2) return skip("needs two or more ranks");
  const bool odd_one = g_rank == g_size - 1;
  const int64_t K = 4;
  Operands o;
  if (!make_operands(grid, WEAVE_AG_GEMM, 2 * g_size, 3 * g_size, K, &o)) return;
  const weave_plan_desc_t pd = plan_desc(WEAVE_AG_GEMM, o);
  const std::pair<const char*, const char*> settings[] = {
      {"WEAVE_ALGORITHM", "ring"}, {"WEAVE_CALIBRATE", "0"}, {"WEAVE_TRANSPORT", "mpi"}, {"WEAVE_CHUNKS", "2"}};
  for (const auto& [variable, value] : settings) {
    std::unique_ptr<ScopedEnvironment> set;
    if (odd_one) set = std::make_unique<ScopedEnvironment>(variable, value);
    Plan p;
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_RANK_MISMATCH, variable,
                  ("rank " + std::to_string(g_size - 1)).c_str(), "alike");
    if (p.h) fail_here("a failed weave_plan_create left a handle");
  }
  std::unique_ptr<ScopedEnvironment> progress, timeout;
  if (odd_one) {
    progress = std::make_unique<ScopedEnvironment>("WEAVE_PROGRESS", "tiles");
    timeout = std::make_unique<ScopedEnvironment>("WEAVE_TIMEOUT", "200");
  }
  Plan p;
  EXPECT_OK(weave_plan_create(grid, &pd, &p.h));
  if (p.h) execute_all_ones(p.h, o, K, "execute with a progress mode and a timeout of one rank's own");
}

// A malformed WEAVE_TIMEOUT or WEAVE_WAIT_WARNING on one rank: grid, matrix
// and plan creation fail with WEAVE_ERROR_INVALID_VALUE on every rank. They
// are read before the ranks meet; the rank that read them used to leave the
// call at once while the others waited for it.
void malformed_wait_bounds_on_one_rank(weave_grid_t grid) {
  const bool odd_one = g_rank == g_size - 1;
  const int64_t K = 4;
  Operands o;
  if (!make_operands(grid, WEAVE_AG_GEMM, 2 * g_size, 3 * g_size, K, &o)) return;
  const weave_plan_desc_t pd = plan_desc(WEAVE_AG_GEMM, o);
  const std::pair<const char*, const char*> settings[] = {{"WEAVE_TIMEOUT", "-5"}, {"WEAVE_WAIT_WARNING", "abc"}};
  for (const auto& [variable, value] : settings) {
    std::unique_ptr<ScopedEnvironment> set;
    if (odd_one) set = std::make_unique<ScopedEnvironment>(variable, value);
    const std::string named = std::string(variable) + "=" + value;
    Grid other;
    EXPECT_STATUS(weave_grid_create(MPI_COMM_WORLD, g_size, 1, &other.h), WEAVE_ERROR_INVALID_VALUE, named.c_str());
    Matrix m;
    const weave_matrix_desc_t d = desc_of(8, 4, WEAVE_DIST_REPLICATED);
    EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_INVALID_VALUE, named.c_str());
    Plan p;
    EXPECT_STATUS(weave_plan_create(grid, &pd, &p.h), WEAVE_ERROR_INVALID_VALUE, named.c_str());
    if (other.h || m.h || p.h) fail_here("a failed creation left a handle");
  }
  Plan p;
  EXPECT_OK(weave_plan_create(grid, &pd, &p.h));
  if (p.h) execute_all_ones(p.h, o, K, "execute after the rejected creations");
}

// A wrapper's own argument error (weave_report_argument_error) on one rank:
// the next collective call fails on every rank with it, matrix creation and
// execute alike; a non-collective call consumes it; bad reports are refused.
void reported_argument_errors(weave_grid_t grid) {
  const int last = g_size - 1;
  const std::string named = "rank " + std::to_string(last) + ": ";
  EXPECT_STATUS(weave_report_argument_error(WEAVE_SUCCESS, "not an error"), WEAVE_ERROR_INVALID_VALUE, "status");
  EXPECT_STATUS(weave_report_argument_error(static_cast<weave_status_t>(99), "x"), WEAVE_ERROR_INVALID_VALUE,
                "status = 99");
  EXPECT_STATUS(weave_report_argument_error(WEAVE_ERROR_INVALID_VALUE, nullptr), WEAVE_ERROR_NULL_ARGUMENT, "message");
  const weave_matrix_desc_t d = desc_of(4 * g_size, 3, WEAVE_DIST_BLOCK_ROW);
  Matrix m;
  if (g_rank == last) EXPECT_OK(weave_report_argument_error(WEAVE_ERROR_SHAPE_MISMATCH, "the wrapper's View is 9 x 3"));
  EXPECT_STATUS(weave_matrix_create(grid, &d, &m.h), WEAVE_ERROR_SHAPE_MISMATCH, named + "the wrapper's View is 9 x 3");
  if (m.h) fail_here("a failed weave_matrix_create left a handle");
  // Consumed: the same call again succeeds.
  EXPECT_OK(weave_matrix_create(grid, &d, &m.h));
  // A non-collective call in between consumes the report too.
  int rows = 0, cols = 0;
  if (g_rank == last) EXPECT_OK(weave_report_argument_error(WEAVE_ERROR_INVALID_VALUE, "dropped"));
  EXPECT_OK(weave_grid_shape(grid, &rows, &cols));
  Matrix again;
  EXPECT_OK(weave_matrix_create(grid, &d, &again.h));
  // At execute: every rank fails with it, and the plan stays usable.
  const int64_t M = 5, N = 4, K = 3 * g_size;
  Operands o;
  if (!make_operands(grid, WEAVE_GEMM_AR, M, N, K, &o)) return;
  const weave_plan_desc_t pd = plan_desc(WEAVE_GEMM_AR, o);
  Plan p;
  if (weave_plan_create(grid, &pd, &p.h) != WEAVE_SUCCESS) return fail_here(std::string("setup: ") + weave_last_error());
  std::vector<double> a = local_buffer(o.a.h, 1.0), b = local_buffer(o.b.h, 1.0), c = local_buffer(o.c.h, -7.0);
  if (g_rank == last) EXPECT_OK(weave_report_argument_error(WEAVE_ERROR_INVALID_LEADING_DIMENSION, "C's View"));
  EXPECT_STATUS(weave_execute(p.h, 1.0, a.data(), b.data(), 0.0, c.data(), nullptr, nullptr),
                WEAVE_ERROR_INVALID_LEADING_DIMENSION, named + "C's View");
  if (std::any_of(c.begin(), c.end(), [](double v) { return v != -7.0; })) fail_here("a refused execute wrote C");
  execute_all_ones(p.h, o, K, "the execute after a reported error");
}

void execute_arguments(weave_grid_t grid) {
  const int64_t M = 5, N = 4, K = 3 * g_size;
  Operands o;
  if (!make_operands(grid, WEAVE_GEMM_AR, M, N, K, &o)) return;
  const weave_plan_desc_t pd = plan_desc(WEAVE_GEMM_AR, o);
  Plan p;
  if (weave_plan_create(grid, &pd, &p.h) != WEAVE_SUCCESS) {
    fail_here(std::string("setup: weave_plan_create failed: ") + weave_last_error());
    // Stay collective: every rank failed together (plan creation agrees).
    return;
  }
  if (!execute_all_ones(p.h, o, K, "first execute")) return;
  std::vector<double> a = local_buffer(o.a.h, 1.0), b = local_buffer(o.b.h, 1.0), c = local_buffer(o.c.h, 0.0);
  const int last = g_size - 1;
  // NULL A on one rank: every rank reports it, naming a and the rank.
  EXPECT_STATUS(weave_execute(p.h, 1.0, g_rank == last ? nullptr : a.data(), b.data(), 0.0, c.data(), nullptr,
                              nullptr),
                WEAVE_ERROR_NULL_ARGUMENT, "a is NULL", ("rank " + std::to_string(last)).c_str());
  EXPECT_STATUS(weave_execute(p.h, 1.0, a.data(), b.data(), 0.0, g_rank == last ? nullptr : c.data(), nullptr,
                              nullptr),
                WEAVE_ERROR_NULL_ARGUMENT, "c is NULL");
  // NULL args on one rank.
  weave_execute_args_t args{};
  args.alpha = 1.0;
  args.a = a.data();
  args.b = b.data();
  args.c = c.data();
  EXPECT_STATUS(weave_execute_ex(p.h, g_rank == last ? nullptr : &args), WEAVE_ERROR_NULL_ARGUMENT, "args");
  // A bias on a plan without one, on one rank.
  const double bias[4] = {1, 2, 3, 4};
  EXPECT_STATUS(weave_execute(p.h, 1.0, a.data(), b.data(), 0.0, c.data(), g_rank == last ? bias : nullptr,
                              nullptr),
                WEAVE_ERROR_INVALID_VALUE, "bias", "without a bias");
  // A stream on a host plan; a gathered A without the flag.
  int fake_stream = 0;
  EXPECT_STATUS(weave_execute(p.h, 1.0, a.data(), b.data(), 0.0, c.data(), nullptr, &fake_stream),
                WEAVE_ERROR_INVALID_VALUE, "stream");
  args.gathered_a = c.data();
  EXPECT_STATUS(weave_execute_ex(p.h, &args), WEAVE_ERROR_INVALID_VALUE, "gathered_a",
                "WEAVE_FLAG_GATHERED_OUTPUT");

  // Another alpha or beta on one rank: GEMM-AR would sum differently scaled
  // products into a C that is neither (and differs between ranks).
  if (g_size > 1) {
    EXPECT_STATUS(weave_execute(p.h, g_rank == last ? 2.0 : 1.0, a.data(), b.data(), 0.0, c.data(), nullptr, nullptr),
                  WEAVE_ERROR_RANK_MISMATCH, "alpha", "passed 1, rank", "passed 2");
    EXPECT_STATUS(weave_execute(p.h, 1.0, a.data(), b.data(), g_rank == last ? 1.5 : 0.0, c.data(), nullptr, nullptr),
                  WEAVE_ERROR_RANK_MISMATCH, "beta", "passed 0, rank", "passed 1.5");
  }
  // C sharing memory with A or B on one rank: the execute would write C
  // while it reads them. (M x N of C and M x K/P of A lie in one array.)
  {
    std::vector<double> shared(c.size() + a.size() + b.size(), 1.0);
    double* c_at = shared.data();
    double* a_at = g_rank == last ? shared.data() + 1 : shared.data() + c.size();  // C's second element onward
    EXPECT_STATUS(weave_execute(p.h, 1.0, a_at, b.data(), 0.0, c_at, nullptr, nullptr), WEAVE_ERROR_INVALID_VALUE,
                  "c and a share memory", ("rank " + std::to_string(last)).c_str());
    // B and C from the start of one array holding either (C's extent, larger
    // than B's, must not run past it into another buffer, as a.data() can
    // lie right after b.data()).
    std::vector<double> b_and_c(std::max(c.size(), b.size()), 1.0);
    EXPECT_STATUS(weave_execute(p.h, 1.0, a.data(), b_and_c.data(), 0.0, b_and_c.data(), nullptr, nullptr),
                  WEAVE_ERROR_INVALID_VALUE, "c and b share memory");
  }
  // The plan still works after all of these.
  execute_all_ones(p.h, o, K, "execute after the rejected ones");
}

void execute_gathered_leading_dimension(weave_grid_t grid) {
  const int64_t M = 2 * g_size, N = 3 * g_size, K = 4;
  Operands o;
  if (!make_operands(grid, WEAVE_AG_GEMM, M, N, K, &o)) return;
  weave_plan_desc_t pd = plan_desc(WEAVE_AG_GEMM, o);
  pd.flags = WEAVE_FLAG_GATHERED_OUTPUT;
  Plan p;
  if (weave_plan_create(grid, &pd, &p.h) != WEAVE_SUCCESS)
    return fail_here(std::string("setup: weave_plan_create failed: ") + weave_last_error());
  std::vector<double> a = local_buffer(o.a.h, 1.0), b = local_buffer(o.b.h, 1.0), c = local_buffer(o.c.h, 0.0);
  std::vector<double> gathered(static_cast<size_t>(M * K), 0.0);
  weave_execute_args_t args{};
  args.alpha = 1.0;
  args.a = a.data();
  args.b = b.data();
  args.c = c.data();
  args.gathered_a = gathered.data();
  args.ld_gathered_a = g_rank == 0 ? M - 1 : 0;  // column-major M x K needs ld >= M
  EXPECT_STATUS(weave_execute_ex(p.h, &args), WEAVE_ERROR_INVALID_LEADING_DIMENSION, "ld_gathered_a");
  // An ld so large that the gathered A would span more than 2^63 bytes, on
  // the last rank: a wrapped size, not a leading dimension rule.
  args.ld_gathered_a = g_rank == g_size - 1 ? int64_t{1} << 62 : 0;
  EXPECT_STATUS(weave_execute_ex(p.h, &args), WEAVE_ERROR_INVALID_VALUE, "gathered_a", "ld_gathered_a",
                ("rank " + std::to_string(g_size - 1)).c_str());
  args.gathered_a = g_rank == 0 ? nullptr : gathered.data();
  args.ld_gathered_a = 0;
  EXPECT_STATUS(weave_execute_ex(p.h, &args), WEAVE_ERROR_NULL_ARGUMENT, "gathered_a");
  args.gathered_a = gathered.data();
  EXPECT_OK(weave_execute_ex(p.h, &args));
  for (double x : gathered)
    if (x != 1.0) return fail_here("the gathered A is wrong after a good execute");
}

// A peer that never calls execute: the others give up after the plan's
// timeout, naming the step and the peer they waited for, and the plan is
// failed from then on.
void timeout(weave_grid_t grid, weave_algorithm_t algorithm, bool execute_check) {
  if (g_size < 2) return skip("needs two or more ranks (one rank waits for nobody)");
  const int64_t M = 4 * g_size, N = 3 * g_size, K = 5;
  Operands o;
  if (!make_operands(grid, WEAVE_AG_GEMM, M, N, K, &o)) return;
  weave_plan_desc_t pd = plan_desc(WEAVE_AG_GEMM, o);
  pd.timeout_ms = 1000;
  pd.algorithm = algorithm;
  // The per-execute argument check is a collective too; without it the
  // ranks go straight to the exchange.
  pd.flags = execute_check ? 0 : WEAVE_FLAG_NO_EXECUTE_CHECK;
  Plan p;
  if (weave_plan_create(grid, &pd, &p.h) != WEAVE_SUCCESS)
    return fail_here(std::string("setup: weave_plan_create failed: ") + weave_last_error());
  std::vector<double> a = local_buffer(o.a.h, 1.0), b = local_buffer(o.b.h, 1.0), c = local_buffer(o.c.h, 0.0);
  if (g_rank != 0) {
    const auto start = std::chrono::steady_clock::now();
    const weave_status_t s = weave_execute(p.h, 1.0, a.data(), b.data(), 0.0, c.data(), nullptr, nullptr);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    expect_status(s, WEAVE_ERROR_TIMEOUT, {"waited", "step", "group rank"}, "weave_execute without rank 0");
    if (seconds < 0.9 || seconds > 10.0)
      fail_here("the timeout of 1 s took " + std::to_string(seconds) + " s");
    // The plan is failed now.
    EXPECT_STATUS(weave_execute(p.h, 1.0, a.data(), b.data(), 0.0, c.data(), nullptr, nullptr),
                  WEAVE_ERROR_PLAN_FAILED, "destroy");
  }
  // Everyone meets again before the plans go away.
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  {
    Grid grid;
    if (weave_grid_create(MPI_COMM_WORLD, g_size, 1, &grid.h) != WEAVE_SUCCESS) {
      std::fprintf(stderr, "rank %d: weave_grid_create failed: %s\n", g_rank, weave_last_error());
      MPI_Finalize();
      return 1;
    }
    if (g_rank == 0) std::printf("weave errors test on %d rank(s), features %s\n", g_size, weave_build_features());
    weave_grid_t g = grid.h;
    run_check("null pointers and handles", [&] { null_pointers(g); });
    run_check("null output pointer on one rank", [&] { null_output_on_one_rank(g); });
    run_check("handles destroyed already, of another kind, or not Weave's", [&] { stale_and_foreign_handles(g); });
    run_check("negative sizes", [&] { negative_sizes(g); });
    run_check("invalid counts", [&] { invalid_counts(g); });
    run_check("leading dimension too small on one rank", [&] { leading_dimension_on_one_rank(g); });
    run_check("block-cyclic descriptors", [] { block_cyclic_descriptors(); });
    run_check("WEAVE_GEMM plans that cannot be made, and an execute that fails", [] { gemm_plan_errors(); });
    run_check("shapes that do not fit the operation", [&] { shape_mismatches(g); });
    run_check("matrix over another group than the plan's", [&] { matrix_over_another_group(g); });
    run_check("distributions that do not fit the operation", [&] { distribution_mismatches(g); });
    run_check("a group of one rank takes any distribution holding the whole matrix",
              [&] { group_of_one_takes_whole_matrices(g); });
    run_check("unsupported element types", [&] { unsupported_types(g); });
    run_check("FP8 types and scale modes that do not fit", [&] { fp8_types_and_scale_modes(g); });
    run_check("FP8 scale buffers at execute, then a good execute", [&] { fp8_execute_arguments(g); });
    run_check("memory space mismatch", [&] { memory_space_mismatch(g); });
    run_check("ranks disagree at plan creation", [&] { rank_mismatch_at_plan_creation(g); });
    run_check("ranks disagree at matrix creation", [&] { rank_mismatch_at_matrix_creation(g); });
    run_check("enumerations out of range", [&] { bad_enums(g); });
    run_check("backends and transports not compiled", [&] { not_compiled(g); });
    run_check("grid shape", [] { grid_shapes(); });
    run_check("Weave's environment differs between ranks", [&] { environment_differs_between_ranks(g); });
    run_check("malformed wait bounds on one rank", [&] { malformed_wait_bounds_on_one_rank(g); });
    run_check("a wrapper's argument error on one rank", [&] { reported_argument_errors(g); });
    run_check("execute arguments, then a good execute", [&] { execute_arguments(g); });
    run_check("execute with a gathered A", [&] { execute_gathered_leading_dimension(g); });
    run_check("matrix extents that overflow 64 bits", [&] { overflowing_matrix_extents(g); });
    run_check("counts whose sum overflows 64 bits", [&] { overflowing_count_sums(g); });
    run_check("workspace that overflows 64 bits", [&] { overflowing_workspace(g); });
    run_check("leading dimensions beyond the BLAS integers", [&] { leading_dimensions_beyond_blas(g); });
    run_check("16-bit sums MPI cannot take", [&] { sums_mpi_cannot_take(g); });
    run_check("timeout and chunk counts that overflow", [&] { overflowing_timeout_and_counts(g); });
    run_check("timeout of a ring when rank 0 does not execute",
              [&] { timeout(g, WEAVE_ALGORITHM_RING, false); });
    run_check("timeout of a collective when rank 0 does not execute", [&] {
      timeout(g, WEAVE_ALGORITHM_SEQUENTIAL, false);
    });
    run_check("timeout in the per-execute argument check when rank 0 does not execute", [&] {
      timeout(g, WEAVE_ALGORITHM_RING, true);
    });
  }
  if (g_rank == 0)
    std::printf("%d passed, %d failed, %d skipped\n", g_passed, g_failed, g_skipped);
  MPI_Finalize();
  return g_failed ? 1 : 0;
}
