// AG-GEMM with op(A) = A^H in complex types, A and C stored in every pair of
// orders: A is conjugated into workspace and its rows travel conjugated,
// so the rows a rank receives must be multiplied as op T as well as its
// own (they were multiplied as op C and came out unconjugated). Against a reference
// computed on every rank, at 1-4 ranks with uneven shards. With
// WEAVE_FLAG_GATHERED_OUTPUT the gathered A must come back as A is (its
// rows travelled conjugated), inside a padded leading dimension whose gaps
// keep their guard values. Skewed: every row of A on the first rank and
// every column of C on the others, so ranks whose own GEMMs differ (or who
// have none) must still agree that A's rows travel conjugated.
#include <mpi.h>

#include <complex>
#include <cstdio>
#include <string>
#include <vector>

#include "weave/weave.h"

namespace {

int g_rank = 0, g_size = 1, g_failed = 0;

template <class T>
std::complex<T> a_of(int64_t k, int64_t i) {
  return {static_cast<T>(k + 1 + i), static_cast<T>(2 * k - i)};
}
template <class T>
std::complex<T> b_of(int64_t k, int64_t j) {
  return {static_cast<T>(j - k), static_cast<T>(k + j + 1)};
}

// Local storage of the columns [c0, c0 + cols) of a rows x * matrix in `order`.
template <class T>
std::vector<std::complex<T>> local_columns(int64_t rows, int64_t c0, int64_t cols, bool row_major,
                                           std::complex<T> (*f)(int64_t, int64_t)) {
  std::vector<std::complex<T>> v(static_cast<size_t>(rows * cols + 1));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) v[static_cast<size_t>(row_major ? r * cols + c : c * rows + r)] = f(r, c0 + c);
  return v;
}

template <class T>
void run(weave_dtype_t dtype, bool a_row_major, bool c_row_major, bool gathered, bool skewed) {
  const int64_t M = 2 * g_size + 1, N = 3 * g_size, K = 5;
  weave_grid_t grid = nullptr;
  weave_grid_create(MPI_COMM_WORLD, g_size, 1, &grid);
  auto desc = [&](int64_t rows, int64_t cols, bool row_major) {
    weave_matrix_desc_t d = WEAVE_MATRIX_DESC_INIT;
    d.rows = rows;
    d.cols = cols;
    d.dtype = dtype;
    d.distribution = WEAVE_DIST_BLOCK_COLUMN;
    d.order = row_major ? WEAVE_ORDER_ROW_MAJOR : WEAVE_ORDER_COLUMN_MAJOR;
    return d;
  };
  // A is K x M (op(A) = A^H is M x K), B is K x N, C is M x N.
  weave_matrix_desc_t da = desc(K, M, a_row_major), db = desc(K, N, false), dc = desc(M, N, c_row_major);
  std::vector<int64_t> a_counts(static_cast<size_t>(g_size), 0), n_counts(static_cast<size_t>(g_size), 0);
  if (skewed && g_size > 1) {
    a_counts[0] = M;
    for (int r = 1; r < g_size; ++r) n_counts[static_cast<size_t>(r)] = N / (g_size - 1) + (r <= N % (g_size - 1));
    da.col_counts = a_counts.data();
    db.col_counts = dc.col_counts = n_counts.data();
  }
  weave_matrix_t a = nullptr, b = nullptr, c = nullptr;
  weave_plan_t plan = nullptr;
  weave_plan_desc_t pd = WEAVE_PLAN_DESC_INIT;
  weave_status_t s = weave_matrix_create(grid, &da, &a);
  if (s == WEAVE_SUCCESS) s = weave_matrix_create(grid, &db, &b);
  if (s == WEAVE_SUCCESS) s = weave_matrix_create(grid, &dc, &c);
  pd.operation = WEAVE_AG_GEMM;
  pd.op_a = WEAVE_OP_C;
  pd.a = a;
  pd.b = b;
  pd.c = c;
  if (gathered) pd.flags = WEAVE_FLAG_GATHERED_OUTPUT;
  if (s == WEAVE_SUCCESS) s = weave_plan_create(grid, &pd, &plan);
  const std::string what = std::string(dtype == WEAVE_COMPLEX64 ? "c64" : "c128") + ", A " +
                           (a_row_major ? "row" : "column") + "-major, C " + (c_row_major ? "row" : "column") +
                           "-major" + (gathered ? ", gathered A returned" : "") + (skewed ? ", skewed" : "");
  if (s != WEAVE_SUCCESS) {
    ++g_failed;
    std::fprintf(stderr, "rank %d: %s: %s\n", g_rank, what.c_str(), weave_last_error());
  } else {
    int64_t a_rows = 0, a_cols = 0, a_r0 = 0, a_c0 = 0, b_rows = 0, b_cols = 0, b_r0 = 0, b_c0 = 0, c_rows = 0,
            c_cols = 0, c_r0 = 0, c_c0 = 0;
    weave_matrix_local_shape(a, &a_rows, &a_cols);
    weave_matrix_local_offset(a, &a_r0, &a_c0);
    weave_matrix_local_shape(b, &b_rows, &b_cols);
    weave_matrix_local_offset(b, &b_r0, &b_c0);
    weave_matrix_local_shape(c, &c_rows, &c_cols);
    weave_matrix_local_offset(c, &c_r0, &c_c0);
    std::vector<std::complex<T>> av = local_columns<T>(K, a_c0, a_cols, a_row_major, a_of<T>),
                                 bv = local_columns<T>(K, b_c0, b_cols, false, b_of<T>),
                                 cv(static_cast<size_t>(c_rows * c_cols + 1), std::complex<T>(-7, 7));
    // The gathered A: K x M in A's order, leading dimension two past tight.
    const std::complex<T> guard(-3, 3);
    const int64_t g_ld = (a_row_major ? M : K) + 2, g_lines = a_row_major ? K : M;
    std::vector<std::complex<T>> gv(static_cast<size_t>(g_ld * g_lines), guard);
    weave_execute_args_t args = WEAVE_EXECUTE_ARGS_INIT;
    args.alpha = 1.0;
    args.a = av.data();
    args.b = bv.data();
    args.c = cv.data();
    if (gathered) {
      args.gathered_a = gv.data();
      args.ld_gathered_a = g_ld;
    }
    s = weave_execute_ex(plan, &args);
    for (int64_t line = 0; line < g_lines && gathered && s == WEAVE_SUCCESS; ++line)
      for (int64_t t = 0; t < g_ld; ++t) {
        const int64_t k = a_row_major ? line : t, i = a_row_major ? t : line;
        const bool inside = t < (a_row_major ? M : K);
        const std::complex<T> want = inside ? a_of<T>(k, i) : guard, got = gv[static_cast<size_t>(line * g_ld + t)];
        if (got != want) {
          ++g_failed;
          std::fprintf(stderr, "rank %d: %s: gathered A(%lld, %lld) is (%g, %g), expected (%g, %g)%s\n", g_rank,
                       what.c_str(), static_cast<long long>(k), static_cast<long long>(i),
                       static_cast<double>(got.real()), static_cast<double>(got.imag()),
                       static_cast<double>(want.real()), static_cast<double>(want.imag()),
                       inside ? "" : " (a guard in the padding)");
          line = g_lines;
          break;
        }
      }
    if (s != WEAVE_SUCCESS) {
      ++g_failed;
      std::fprintf(stderr, "rank %d: %s: execute: %s\n", g_rank, what.c_str(), weave_last_error());
    }
    double worst = 0;
    for (int64_t i = 0; i < c_rows && s == WEAVE_SUCCESS; ++i)
      for (int64_t j = 0; j < c_cols; ++j) {
        std::complex<double> want = 0;
        for (int64_t k = 0; k < K; ++k) {
          const std::complex<T> x = std::conj(a_of<T>(k, c_r0 + i)), y = b_of<T>(k, c_c0 + j);
          want += std::complex<double>(x.real(), x.imag()) * std::complex<double>(y.real(), y.imag());
        }
        const std::complex<T> got = cv[static_cast<size_t>(c_row_major ? i * c_cols + j : j * c_rows + i)];
        worst = std::max(worst, std::abs(std::complex<double>(got.real(), got.imag()) - want) / (1 + std::abs(want)));
      }
    const double bound = dtype == WEAVE_COMPLEX64 ? 1e-5 : 1e-12;
    if (worst > bound) {
      ++g_failed;
      std::fprintf(stderr, "rank %d: %s: C off by %g (relative), more than %g\n", g_rank, what.c_str(), worst, bound);
    }
  }
  weave_plan_destroy(plan);
  weave_matrix_destroy(a);
  weave_matrix_destroy(b);
  weave_matrix_destroy(c);
  weave_grid_destroy(grid);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  for (bool a_row : {false, true})
    for (bool c_row : {false, true}) {
      for (bool gathered : {false, true})
        for (bool skewed : {false, true}) {
          run<double>(WEAVE_COMPLEX128, a_row, c_row, gathered, skewed);
          run<float>(WEAVE_COMPLEX64, a_row, c_row, gathered, skewed);
        }
    }
  int failed = 0;
  MPI_Allreduce(&g_failed, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("AG-GEMM with op(A) = A^H, every order of A and C, with and without the gathered A: %s\n",
                failed ? "FAILED" : "passed");
  MPI_Finalize();
  return failed ? 1 : 0;
}
