// One tensor-parallel MLP step with Weave's C++ interface (weave.hpp), in
// float64:
//
//   H = X W1 + b1     AG-GEMM: X (tokens x hidden) is split by tokens; W1
//                     (hidden x ffn), H and b1 are split by ffn columns
//   A = gelu(H)       element-wise, on each rank's columns of H
//   Y = A W2 + b2     GEMM-RS: W2 (ffn x hidden) is split by ffn rows; each
//                     rank gets its tokens' rows of Y; b2 is replicated
//
// Shards are uneven on purpose (one rank of every three holds no tokens).
// Every rank builds the same global matrices from a formula, takes its
// shard, and checks its rows of Y against a reference computed in long
// double. Errors from Weave arrive as weave::Error exceptions.
//
//   mpiexec -n 3 ./weave_example_mlp_cpp
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include <weave/weave.hpp>

namespace {

constexpr int64_t kHidden = 16;

// Rows of X (tokens) and columns of W1 (ffn) owned by rank r of p.
int64_t tokens_of(int r) { return r % 3 == 1 ? 0 : 5 + 3 * r; }
int64_t ffn_of(int r, int p) { return 6 + 4 * (p - 1 - r); }

// Global element (i, j) of the matrix numbered `which`: smooth, in [-1, 1].
double entry(int which, int64_t i, int64_t j) {
  return std::sin(0.37 * double(i + 1) + 1.91 * double(j + 1) + 0.5 * which);
}

template <class Real>
Real gelu(Real x) {
  const Real sqrt_2_over_pi = Real(0.79788456080286535587989211986876L);
  return Real(0.5) * x * (Real(1) + std::tanh(sqrt_2_over_pi * (x + Real(0.044715) * x * x * x)));
}

// This rank's block of a matrix: storage sized by the descriptor, filled
// from global matrix `which` (column-major with the descriptor's ld).
struct Block {
  std::vector<double> values;
  int64_t rows, cols, row0, col0, ld;

  Block(const weave::Matrix& m, int which)
      : values(std::max<int64_t>(m.local_elements(), 1)),
        rows(m.local_rows()), cols(m.local_cols()), row0(m.row_offset()), col0(m.col_offset()), ld(m.ld()) {
    if (which < 0) return;
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t i = 0; i < rows; ++i) at(i, j) = entry(which, row0 + i, col0 + j);
  }
  double& at(int64_t i, int64_t j) { return values[std::size_t(i + j * ld)]; }
  double* data() { return values.data(); }
};

// Checks this rank's rows of Y against the reference; returns {wrong
// elements, largest error relative to its allowed bound}.
std::pair<long long, double> check(Block& y, int64_t n_ffn) {
  const double tolerance = 4.0 * double(kHidden + n_ffn) * std::numeric_limits<double>::epsilon();
  std::vector<long double> act(static_cast<std::size_t>(n_ffn)), act_scale(act.size());
  long long failures = 0;
  double worst = 0;
  for (int64_t i = 0; i < y.rows; ++i) {
    const int64_t token = y.row0 + i;
    for (int64_t k = 0; k < n_ffn; ++k) {
      long double h = entry(2, 0, k), scale = std::fabs(entry(2, 0, k));
      for (int64_t l = 0; l < kHidden; ++l) {
        h += (long double)entry(0, token, l) * entry(1, l, k);
        scale += std::fabs((long double)entry(0, token, l) * entry(1, l, k));
      }
      act[std::size_t(k)] = gelu(h);
      act_scale[std::size_t(k)] = std::fabs(act[std::size_t(k)]) + scale;
    }
    for (int64_t j = 0; j < y.cols; ++j) {
      long double expected = entry(4, 0, j), scale = std::fabs(entry(4, 0, j));
      for (int64_t k = 0; k < n_ffn; ++k) {
        expected += act[std::size_t(k)] * entry(3, k, j);
        scale += act_scale[std::size_t(k)] * std::fabs(entry(3, k, j));
      }
      const double error = double(std::fabs(y.at(i, j) - expected));
      const double allowed = tolerance * double(scale);
      if (!(error <= allowed)) ++failures;  // also catches NaN
      worst = std::max(worst, error / allowed);
    }
  }
  return {failures, worst};
}

int run(int rank, int nranks) {
  std::vector<int64_t> tokens, ffn;
  int64_t n_tokens = 0, n_ffn = 0;
  for (int r = 0; r < nranks; ++r) {
    tokens.push_back(tokens_of(r));
    ffn.push_back(ffn_of(r, nranks));
    n_tokens += tokens.back();
    n_ffn += ffn.back();
  }

  weave::Grid grid(MPI_COMM_WORLD, nranks, 1);
  const weave_dtype_t f64 = weave::dtype_of<double>::value;
  weave::Matrix x(grid, weave::block_rows(n_tokens, kHidden, f64).rows_per_rank(tokens));
  weave::Matrix w1(grid, weave::block_cols(kHidden, n_ffn, f64).cols_per_rank(ffn));
  weave::Matrix h(grid, weave::block_cols(n_tokens, n_ffn, f64).cols_per_rank(ffn));
  weave::Matrix b1(grid, weave::block_cols(1, n_ffn, f64).cols_per_rank(ffn));
  weave::Matrix w2(grid, weave::block_rows(n_ffn, kHidden, f64).rows_per_rank(ffn));
  weave::Matrix b2(grid, weave::replicated(1, kHidden, f64));
  weave::Matrix y(grid, weave::block_rows(n_tokens, kHidden, f64).rows_per_rank(tokens));

  // Plans: built once, executed for every step of a real model.
  weave::Plan up(grid, weave::PlanDesc(WEAVE_AG_GEMM, x, w1, h).bias(b1));
  weave::Plan down(grid, weave::PlanDesc(WEAVE_GEMM_RS, h, w2, y).bias(b2));
  if (rank == 0) std::printf("up:   %s\ndown: %s\n", up.describe().c_str(), down.describe().c_str());

  Block x_local(x, 0), w1_local(w1, 1), b1_local(b1, 2), w2_local(w2, 3), b2_local(b2, 4);
  Block h_local(h, -1), y_local(y, -1);

  // The step.
  up.execute(1.0, x_local.data(), w1_local.data(), 0.0, h_local.data(), b1_local.data());
  for (int64_t j = 0; j < h_local.cols; ++j)
    for (int64_t i = 0; i < h_local.rows; ++i) h_local.at(i, j) = gelu(h_local.at(i, j));
  down.execute(1.0, h_local.data(), w2_local.data(), 0.0, y_local.data(), b2_local.data());

  const auto [failures, worst] = check(y_local, n_ffn);
  long long all_failures = 0;
  double all_worst = 0;
  MPI_Allreduce(&failures, &all_failures, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&worst, &all_worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("%s: MLP step on %d ranks, %lld tokens, hidden %lld, ffn %lld: %lld wrong elements, "
                "largest error %.3g of the allowed bound\n",
                all_failures == 0 ? "PASS" : "FAIL", nranks, (long long)n_tokens, (long long)kHidden,
                (long long)n_ffn, all_failures, all_worst);
  return all_failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int exit_code = 1;
  try {
    exit_code = run(rank, nranks);  // Weave objects are destroyed before MPI_Finalize
  } catch (const weave::Error& e) {
    // Collective calls fail on every rank together, so every rank gets here.
    std::fprintf(stderr, "rank %d: FAIL: %s\n", rank, e.what());
  }
  MPI_Finalize();
  return exit_code;
}
