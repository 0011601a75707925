/* One tensor-parallel MLP step with Weave's C API, in float32:
 *
 *   H = X W1 + b1     AG-GEMM: X (tokens x hidden) is split by tokens; W1
 *                     (hidden x ffn), H and b1 are split by ffn columns
 *   A = gelu(H)       element-wise, on each rank's columns of H
 *   Y = A W2 + b2     GEMM-RS: W2 (ffn x hidden) is split by ffn rows; each
 *                     rank gets its tokens' rows of Y; b2 is replicated
 *
 * Shards are uneven on purpose (one rank of every three holds no tokens).
 * Every rank builds the same global matrices from a formula, takes its
 * shard, and checks its rows of Y against a double-precision reference.
 *
 *   mpiexec -n 3 ./weave_example_mlp_c
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <weave/weave.h>

enum { HIDDEN = 16 };

/* Rows of X (tokens) and columns of W1 (ffn) owned by rank r of p. */
static int64_t tokens_of(int r) { return r % 3 == 1 ? 0 : 5 + 3 * r; }
static int64_t ffn_of(int r, int p) { return 6 + 4 * (p - 1 - r); }

/* Global element (i, j) of the matrix numbered `which`: smooth, in [-1, 1], never all zero. */
static double entry(int which, int64_t i, int64_t j) {
  return sin(0.37 * (double)(i + 1) + 1.91 * (double)(j + 1) + 0.5 * which);
}

static double gelu(double x) {
  const double sqrt_2_over_pi = 0.7978845608028654;
  return 0.5 * x * (1.0 + tanh(sqrt_2_over_pi * (x + 0.044715 * x * x * x)));
}

/* Stops the example (not the library) on the first failed call. */
#define CHECK(call)                                                                           \
  do {                                                                                        \
    weave_status_t status_ = (call);                                                          \
    if (status_ != WEAVE_SUCCESS) {                                                           \
      fprintf(stderr, "rank %d: %s failed: %s: %s\n", rank, #call, weave_status_string(status_), \
              weave_last_error());                                                            \
      exit_code = 1;                                                                          \
      goto finish;                                                                            \
    }                                                                                         \
  } while (0)

/* Fills this rank's block of global matrix `which`, stored column-major with leading dimension ld. */
static void fill_block(float* block, weave_matrix_t m, int which) {
  int64_t rows, cols, row0, col0, ld;
  weave_matrix_local_shape(m, &rows, &cols);
  weave_matrix_local_offset(m, &row0, &col0);
  weave_matrix_ld(m, &ld);
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) block[i + j * ld] = (float)entry(which, row0 + i, col0 + j);
}

static float* allocate_block(weave_matrix_t m) {
  int64_t elements = 0;
  weave_matrix_local_elements(m, &elements);
  return (float*)malloc((size_t)(elements > 0 ? elements : 1) * sizeof(float));
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1, exit_code = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  /* Global sizes and per-rank counts. */
  int64_t* tokens = malloc((size_t)nranks * sizeof(int64_t));
  int64_t* ffn = malloc((size_t)nranks * sizeof(int64_t));
  int64_t n_tokens = 0, n_ffn = 0;
  for (int r = 0; r < nranks; ++r) {
    tokens[r] = tokens_of(r);
    ffn[r] = ffn_of(r, nranks);
    n_tokens += tokens[r];
    n_ffn += ffn[r];
  }

  weave_grid_t grid = NULL;
  weave_matrix_t x = NULL, w1 = NULL, b1 = NULL, h = NULL, w2 = NULL, b2 = NULL, y = NULL;
  weave_plan_t up = NULL, down = NULL;
  float *x_local = NULL, *w1_local = NULL, *b1_local = NULL, *h_local = NULL;
  float *w2_local = NULL, *b2_local = NULL, *y_local = NULL;

  CHECK(weave_grid_create(MPI_COMM_WORLD, nranks, 1, &grid));

  /* Descriptors: every rank passes the same global sizes and counts. */
  /* Every struct starts with its size (the *_INIT macros set it). */
  const size_t desc_size = sizeof(weave_matrix_desc_t);
  const weave_matrix_desc_t by_tokens = {.struct_size = desc_size, .rows = n_tokens, .cols = HIDDEN,
                                         .dtype = WEAVE_FLOAT32, .distribution = WEAVE_DIST_BLOCK_ROW,
                                         .row_counts = tokens};
  const weave_matrix_desc_t w1_desc = {.struct_size = desc_size, .rows = HIDDEN, .cols = n_ffn, .dtype = WEAVE_FLOAT32,
                                       .distribution = WEAVE_DIST_BLOCK_COLUMN, .col_counts = ffn};
  const weave_matrix_desc_t h_desc = {.struct_size = desc_size, .rows = n_tokens, .cols = n_ffn, .dtype = WEAVE_FLOAT32,
                                      .distribution = WEAVE_DIST_BLOCK_COLUMN, .col_counts = ffn};
  const weave_matrix_desc_t b1_desc = {.struct_size = desc_size, .rows = 1, .cols = n_ffn, .dtype = WEAVE_FLOAT32,
                                       .distribution = WEAVE_DIST_BLOCK_COLUMN, .col_counts = ffn};
  const weave_matrix_desc_t w2_desc = {.struct_size = desc_size, .rows = n_ffn, .cols = HIDDEN, .dtype = WEAVE_FLOAT32,
                                       .distribution = WEAVE_DIST_BLOCK_ROW, .row_counts = ffn};
  const weave_matrix_desc_t b2_desc = {.struct_size = desc_size, .rows = 1, .cols = HIDDEN, .dtype = WEAVE_FLOAT32,
                                       .distribution = WEAVE_DIST_REPLICATED};
  CHECK(weave_matrix_create(grid, &by_tokens, &x));
  CHECK(weave_matrix_create(grid, &w1_desc, &w1));
  CHECK(weave_matrix_create(grid, &h_desc, &h));
  CHECK(weave_matrix_create(grid, &b1_desc, &b1));
  CHECK(weave_matrix_create(grid, &w2_desc, &w2));
  CHECK(weave_matrix_create(grid, &b2_desc, &b2));
  CHECK(weave_matrix_create(grid, &by_tokens, &y));

  /* Plans: built once, executed for every step of a real model. */
  const size_t plan_size = sizeof(weave_plan_desc_t);
  const weave_plan_desc_t up_desc = {.struct_size = plan_size, .operation = WEAVE_AG_GEMM, .a = x, .b = w1, .c = h,
                                     .bias = b1};
  const weave_plan_desc_t down_desc = {.struct_size = plan_size, .operation = WEAVE_GEMM_RS, .a = h, .b = w2, .c = y,
                                       .bias = b2};
  CHECK(weave_plan_create(grid, &up_desc, &up));
  CHECK(weave_plan_create(grid, &down_desc, &down));
  if (rank == 0) {
    const char* text = NULL;
    CHECK(weave_plan_describe(up, &text));
    printf("up:   %s\n", text);
    CHECK(weave_plan_describe(down, &text));
    printf("down: %s\n", text);
  }

  x_local = allocate_block(x);
  w1_local = allocate_block(w1);
  b1_local = allocate_block(b1);
  h_local = allocate_block(h);
  w2_local = allocate_block(w2);
  b2_local = allocate_block(b2);
  y_local = allocate_block(y);
  fill_block(x_local, x, 0);
  fill_block(w1_local, w1, 1);
  fill_block(b1_local, b1, 2);
  fill_block(w2_local, w2, 3);
  fill_block(b2_local, b2, 4);

  /* The step. */
  CHECK(weave_execute(up, 1.0, x_local, w1_local, 0.0, h_local, b1_local, NULL));
  int64_t h_rows, h_cols, h_ld;
  weave_matrix_local_shape(h, &h_rows, &h_cols);
  weave_matrix_ld(h, &h_ld);
  for (int64_t j = 0; j < h_cols; ++j)
    for (int64_t i = 0; i < h_rows; ++i) h_local[i + j * h_ld] = (float)gelu(h_local[i + j * h_ld]);
  CHECK(weave_execute(down, 1.0, h_local, w2_local, 0.0, y_local, b2_local, NULL));

  /* Reference for this rank's rows of Y, in double, with an error bound of
   * k * eps(float32) times the magnitudes that enter each element. */
  int64_t y_rows, y_cols, y_row0, y_col0, y_ld;
  weave_matrix_local_shape(y, &y_rows, &y_cols);
  weave_matrix_local_offset(y, &y_row0, &y_col0);
  weave_matrix_ld(y, &y_ld);
  const double tolerance = 4.0 * (double)(HIDDEN + n_ffn) * 1.1920929e-7;
  double* act = malloc((size_t)(n_ffn > 0 ? n_ffn : 1) * sizeof(double));
  double* act_scale = malloc((size_t)(n_ffn > 0 ? n_ffn : 1) * sizeof(double));
  long long failures = 0;
  double worst = 0.0; /* largest error / allowed error */
  for (int64_t i = 0; i < y_rows; ++i) {
    const int64_t token = y_row0 + i;
    for (int64_t k = 0; k < n_ffn; ++k) {
      double hk = entry(2, 0, k), scale = fabs(entry(2, 0, k));
      for (int64_t l = 0; l < HIDDEN; ++l) {
        hk += entry(0, token, l) * entry(1, l, k);
        scale += fabs(entry(0, token, l) * entry(1, l, k));
      }
      act[k] = gelu(hk);
      act_scale[k] = fabs(act[k]) + scale;
    }
    for (int64_t j = 0; j < y_cols; ++j) {
      double expected = entry(4, 0, j), scale = fabs(entry(4, 0, j));
      for (int64_t k = 0; k < n_ffn; ++k) {
        expected += act[k] * entry(3, k, j);
        scale += act_scale[k] * fabs(entry(3, k, j));
      }
      const double error = fabs((double)y_local[i + j * y_ld] - expected);
      const double allowed = tolerance * scale;
      if (!(error <= allowed)) ++failures; /* also catches NaN */
      if (error / allowed > worst) worst = error / allowed;
    }
  }
  free(act);
  free(act_scale);

  long long all_failures = 0;
  double all_worst = 0.0;
  MPI_Allreduce(&failures, &all_failures, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&worst, &all_worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0)
    printf("%s: MLP step on %d ranks, %lld tokens, hidden %d, ffn %lld: %lld wrong elements, "
           "largest error %.3g of the allowed bound\n",
           all_failures == 0 ? "PASS" : "FAIL", nranks, (long long)n_tokens, HIDDEN, (long long)n_ffn,
           all_failures, all_worst);
  if (all_failures != 0) exit_code = 1;

finish:
  weave_plan_destroy(up);
  weave_plan_destroy(down);
  weave_matrix_t matrices[] = {x, w1, b1, h, w2, b2, y};
  for (size_t i = 0; i < sizeof matrices / sizeof matrices[0]; ++i) weave_matrix_destroy(matrices[i]);
  weave_grid_destroy(grid); /* destroying NULL handles is a no-op */
  float* blocks[] = {x_local, w1_local, b1_local, h_local, w2_local, b2_local, y_local};
  for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; ++i) free(blocks[i]);
  free(tokens);
  free(ffn);
  MPI_Finalize();
  return exit_code;
}
