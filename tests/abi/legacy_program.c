/* A program as it was written and built against Weave 0.1's header (see
 * weave-0.1/weave/weave.h), run against this library: descriptors, plan,
 * plan info and both execute entry points with 0.1's struct layouts. It
 * multiplies an AG-GEMM and a GEMM-RS with uneven shards and a bias and
 * checks every element against a direct computation. Prints PASS or FAIL. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "weave/weave.h"

#define CHECK(call)                                                                                \
  do {                                                                                             \
    weave_status_t status_ = (call);                                                               \
    if (status_ != WEAVE_SUCCESS) {                                                                \
      fprintf(stderr, "rank %d: %s: %s: %s\n", rank, #call, weave_status_string(status_),         \
              weave_last_error());                                                                 \
      failures++;                                                                                  \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)

static double a_value(int64_t i, int64_t k) { return (double)((i * 7 + k * 3) % 11) - 5.0; }
static double b_value(int64_t k, int64_t j) { return (double)((k * 5 + j * 2) % 13) - 6.0; }
static double bias_value(int64_t j) { return 0.25 * (double)j; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, failures = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int64_t M = 11, N = 6, K = 5;
  int64_t m_counts[8], n_counts[8];
  int64_t m_left = M, n_left = N;
  for (int q = 0; q < size; ++q) { /* uneven: the last rank takes what is left, rank 0 one row more */
    m_counts[q] = q + 1 == size ? m_left : (q == 0 ? M / size + 1 : M / size);
    n_counts[q] = q + 1 == size ? n_left : N / size;
    m_left -= m_counts[q];
    n_left -= n_counts[q];
  }
  weave_grid_t grid = NULL;
  weave_matrix_t a = NULL, b = NULL, c = NULL, bias = NULL;
  weave_plan_t plan = NULL;
  double *a_local = NULL, *b_local = NULL, *c_local = NULL, *bias_local = NULL;
  CHECK(weave_grid_create(MPI_COMM_WORLD, size, 1, &grid));

  /* AG-GEMM: A rows split, B and C columns split, bias like C's columns. */
  const weave_matrix_desc_t da = {.rows = M, .cols = K, .dtype = WEAVE_FLOAT64,
                                  .distribution = WEAVE_DIST_BLOCK_ROW, .row_counts = m_counts};
  const weave_matrix_desc_t db = {.rows = K, .cols = N, .dtype = WEAVE_FLOAT64,
                                  .distribution = WEAVE_DIST_BLOCK_COLUMN, .col_counts = n_counts};
  const weave_matrix_desc_t dc = {.rows = M, .cols = N, .dtype = WEAVE_FLOAT64,
                                  .distribution = WEAVE_DIST_BLOCK_COLUMN, .col_counts = n_counts, .ld = M + 2};
  const weave_matrix_desc_t dbias = {.rows = 1, .cols = N, .dtype = WEAVE_FLOAT64,
                                     .distribution = WEAVE_DIST_BLOCK_COLUMN, .col_counts = n_counts};
  CHECK(weave_matrix_create(grid, &da, &a));
  CHECK(weave_matrix_create(grid, &db, &b));
  CHECK(weave_matrix_create(grid, &dc, &c));
  CHECK(weave_matrix_create(grid, &dbias, &bias));
  int64_t rows = 0, cols = 0, row0 = 0, col0 = 0, elements = 0, ldc = 0;
  CHECK(weave_matrix_local_elements(a, &elements));
  a_local = malloc(sizeof(double) * (size_t)(elements + 1));
  CHECK(weave_matrix_local_shape(a, &rows, &cols));
  CHECK(weave_matrix_local_offset(a, &row0, &col0));
  for (int64_t k = 0; k < cols; ++k)
    for (int64_t i = 0; i < rows; ++i) a_local[i + k * rows] = a_value(row0 + i, k);
  CHECK(weave_matrix_local_elements(b, &elements));
  b_local = malloc(sizeof(double) * (size_t)(elements + 1));
  CHECK(weave_matrix_local_shape(b, &rows, &cols));
  CHECK(weave_matrix_local_offset(b, &row0, &col0));
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t k = 0; k < rows; ++k) b_local[k + j * rows] = b_value(k, col0 + j);
  CHECK(weave_matrix_local_elements(bias, &elements));
  bias_local = malloc(sizeof(double) * (size_t)(elements + 1));
  for (int64_t j = 0; j < cols; ++j) bias_local[j] = bias_value(col0 + j);
  CHECK(weave_matrix_local_elements(c, &elements));
  CHECK(weave_matrix_ld(c, &ldc));
  c_local = malloc(sizeof(double) * (size_t)(elements + 1));

  const weave_plan_desc_t pd = {.operation = WEAVE_AG_GEMM, .a = a, .b = b, .c = c, .bias = bias,
                                .algorithm = WEAVE_ALGORITHM_RING, .chunks_per_shard = 2};
  CHECK(weave_plan_create(grid, &pd, &plan));
  weave_plan_info_t info;
  CHECK(weave_plan_get_info(plan, &info));
  /* One rank has nothing to communicate: a local GEMM. */
  if (info.group_size != size || info.group_rank != rank ||
      (size > 1 && (info.algorithm != WEAVE_ALGORITHM_RING || info.chunks_per_shard != 2))) {
    fprintf(stderr, "rank %d: plan info from the 0.1 entry point is wrong (group %d/%d, algorithm %d, chunks %d)\n",
            rank, info.group_rank, info.group_size, info.algorithm, info.chunks_per_shard);
    failures++;
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t p = 0; p < elements; ++p) c_local[p] = NAN;
    if (pass == 0) {
      CHECK(weave_execute(plan, 2.0, a_local, b_local, 0.0, c_local, bias_local, NULL));
    } else {
      weave_execute_args_t args = {.alpha = 2.0, .beta = 0.0, .a = a_local, .b = b_local, .c = c_local,
                                   .bias = bias_local};
      CHECK(weave_execute_ex(plan, &args));
    }
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t i = 0; i < M; ++i) {
        double want = bias_value(col0 + j);
        for (int64_t k = 0; k < K; ++k) want += 2.0 * a_value(i, k) * b_value(k, col0 + j);
        if (fabs(c_local[i + j * ldc] - want) > 1e-12 * (1.0 + fabs(want))) {
          if (failures < 3)
            fprintf(stderr, "rank %d: pass %d: C(%lld,%lld) = %g, expected %g\n", rank, pass, (long long)i,
                    (long long)(col0 + j), c_local[i + j * ldc], want);
          failures++;
        }
      }
  }

done:
  weave_plan_destroy(plan);
  weave_matrix_destroy(a);
  weave_matrix_destroy(b);
  weave_matrix_destroy(c);
  weave_matrix_destroy(bias);
  weave_grid_destroy(grid);
  free(a_local);
  free(b_local);
  free(c_local);
  free(bias_local);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("%s: a program built against Weave 0.1's header, %d ranks\n", all ? "FAIL" : "PASS", size);
  MPI_Finalize();
  return all ? 1 : 0;
}
