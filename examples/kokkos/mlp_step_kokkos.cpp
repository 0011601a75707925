// One tensor-parallel MLP step with Kokkos Views (weave_kokkos.hpp):
//
//   H = X W1 + b1     AG-GEMM: X (tokens x hidden) is split by tokens; W1
//                     (hidden x ffn), H and b1 are split by ffn columns
//   A = softsign(H)   a Kokkos kernel on each rank's columns of H
//   Y = A W2 + b2     GEMM-RS: W2 (ffn x hidden) is split by ffn rows; each
//                     rank gets its tokens' rows of Y; b2 is replicated
//
// Everything runs on one instance of Kokkos' default execution space: the
// kernels that fill the Views, the two Weave calls and the activation
// between them, in that order. Shards are uneven, and with more than one
// rank the first holds no tokens. Every rank checks its rows of Y against a
// reference computed on the host from the same formulas.
//
//   mpiexec -n 3 ./weave_example_mlp_kokkos
#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <weave/weave_kokkos.hpp>

namespace {

using Space = Kokkos::DefaultExecutionSpace;
using MemorySpace = Space::memory_space;
// Weave's matrices are column-major: LayoutLeft.
using MatrixView = Kokkos::View<double**, Kokkos::LayoutLeft, MemorySpace>;
using VectorView = Kokkos::View<double*, MemorySpace>;
using Policy2D = Kokkos::MDRangePolicy<Space, Kokkos::Rank<2>, Kokkos::IndexType<int64_t>>;

constexpr int64_t kHidden = 12;

// Rows of X (tokens) and columns of W1 (ffn) owned by rank r of p.
int64_t tokens_of(int r, int p) { return p > 1 && r == 0 ? 0 : 3 + 2 * r; }
int64_t ffn_of(int r, int p) { return 4 + 3 * (p - 1 - r); }

// Global element (i, j) of matrix `which`: small multiples of 1/16.
KOKKOS_INLINE_FUNCTION double entry(int which, int64_t i, int64_t j) {
  return static_cast<double>((7 * i + 3 * j + 5 * which) % 17 - 8) / 16.0;
}

KOKKOS_INLINE_FUNCTION double softsign(double x) { return x / (1.0 + (x < 0 ? -x : x)); }

// Fills this rank's block (starting at global row0, col0) of matrix `which`.
void fill(const Space& space, const MatrixView& view, int which, int64_t row0, int64_t col0) {
  if (view.extent(0) == 0 || view.extent(1) == 0) return;
  Kokkos::parallel_for(
      "fill", Policy2D(space, {0, 0}, {static_cast<int64_t>(view.extent(0)), static_cast<int64_t>(view.extent(1))}),
      KOKKOS_LAMBDA(int64_t i, int64_t j) { view(i, j) = entry(which, row0 + i, col0 + j); });
}

void fill(const Space& space, const VectorView& view, int which, int64_t col0) {
  Kokkos::parallel_for(
      "fill bias", Kokkos::RangePolicy<Space, Kokkos::IndexType<int64_t>>(space, 0, view.extent(0)),
      KOKKOS_LAMBDA(int64_t j) { view(j) = entry(which, 0, col0 + j); });
}

template <class View>
View allocate(const char* name, const weave::Matrix& m) {
  return View(std::string(name), static_cast<std::size_t>(m.local_rows()), static_cast<std::size_t>(m.local_cols()));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int failures = 0, rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Kokkos first and last: Weave's objects live inside its lifetime.
  Kokkos::initialize(argc, argv);
  try {
    std::vector<int64_t> tokens, ffn;
    for (int r = 0; r < size; ++r) {
      tokens.push_back(tokens_of(r, size));
      ffn.push_back(ffn_of(r, size));
    }
    int64_t total_tokens = 0, total_ffn = 0;
    for (int r = 0; r < size; ++r) total_tokens += tokens[r], total_ffn += ffn[r];

    const weave_memory_t memory = weave::kokkos_memory<MemorySpace>();
    auto desc = [&](weave::MatrixDesc d) { return d.memory(memory); };
    weave::Grid grid(MPI_COMM_WORLD);
    weave::KokkosPlan up(grid, WEAVE_AG_GEMM,
                         desc(weave::block_rows(total_tokens, kHidden, WEAVE_FLOAT64).rows_per_rank(tokens)),
                         desc(weave::block_cols(kHidden, total_ffn, WEAVE_FLOAT64).cols_per_rank(ffn)),
                         desc(weave::block_cols(total_tokens, total_ffn, WEAVE_FLOAT64).cols_per_rank(ffn)),
                         desc(weave::block_cols(1, total_ffn, WEAVE_FLOAT64).cols_per_rank(ffn)));
    weave::KokkosPlan down(grid, WEAVE_GEMM_RS,
                           desc(weave::block_cols(total_tokens, total_ffn, WEAVE_FLOAT64).cols_per_rank(ffn)),
                           desc(weave::block_rows(total_ffn, kHidden, WEAVE_FLOAT64).rows_per_rank(ffn)),
                           desc(weave::block_rows(total_tokens, kHidden, WEAVE_FLOAT64).rows_per_rank(tokens)),
                           desc(weave::replicated(1, kHidden, WEAVE_FLOAT64)));
    if (rank == 0) std::printf("%s\n%s\n", up.describe().c_str(), down.describe().c_str());

    Space space;
    MatrixView x = allocate<MatrixView>("X", up.a()), w1 = allocate<MatrixView>("W1", up.b()),
               h = allocate<MatrixView>("H", up.c()), act = allocate<MatrixView>("A", down.a()),
               w2 = allocate<MatrixView>("W2", down.b()), y = allocate<MatrixView>("Y", down.c());
    VectorView b1("b1", static_cast<std::size_t>(up.bias().local_cols())),
        b2("b2", static_cast<std::size_t>(down.bias().local_cols()));
    fill(space, x, 0, up.a().row_offset(), 0);
    fill(space, w1, 1, 0, up.b().col_offset());
    fill(space, b1, 2, up.bias().col_offset());
    fill(space, w2, 3, down.b().row_offset(), 0);
    fill(space, b2, 4, 0);

    // H = X W1 + b1; the fills above complete first (same instance).
    weave::execute(up, 1.0, x, w1, 0.0, h, b1, space);
    // A = softsign(H) on this rank's columns, queued on the same instance.
    if (h.extent(0) > 0 && h.extent(1) > 0)
      Kokkos::parallel_for(
          "softsign", Policy2D(space, {0, 0}, {static_cast<int64_t>(h.extent(0)), static_cast<int64_t>(h.extent(1))}),
          KOKKOS_LAMBDA(int64_t i, int64_t j) { act(i, j) = softsign(h(i, j)); });
    // Y = A W2 + b2; Weave waits for the activation on `space` before reading A.
    weave::execute(down, 1.0, act, w2, 0.0, y, b2, space);
    space.fence();

    // Reference rows of Y for this rank, on the host.
    auto y_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
    const int64_t row0 = down.c().row_offset();
    double worst = 0;
    for (int64_t i = 0; i < static_cast<int64_t>(y_host.extent(0)); ++i) {
      std::vector<double> activation(static_cast<std::size_t>(total_ffn));
      for (int64_t f = 0; f < total_ffn; ++f) {
        double sum = entry(2, 0, f);
        for (int64_t k = 0; k < kHidden; ++k) sum += entry(0, row0 + i, k) * entry(1, k, f);
        activation[f] = softsign(sum);
      }
      for (int64_t j = 0; j < kHidden; ++j) {
        double expected = entry(4, 0, j);
        for (int64_t f = 0; f < total_ffn; ++f) expected += activation[f] * entry(3, f, j);
        worst = std::max(worst, std::fabs(y_host(i, j) - expected));
      }
    }
    const double tolerance = 1e-13 * static_cast<double>(total_ffn + kHidden);
    if (!(worst <= tolerance)) {
      std::printf("rank %d: FAIL largest error in Y is %g (tolerance %g)\n", rank, worst, tolerance);
      ++failures;
    }
  } catch (const std::exception& e) {
    std::printf("rank %d: FAIL %s\n", rank, e.what());
    ++failures;
  }
  Kokkos::finalize();
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("%s: MLP step with Kokkos Views (%s) on %d ranks\n", total ? "FAIL" : "PASS", Space::name(), size);
  MPI_Finalize();
  return total ? 1 : 0;
}
