// Weave's main job on a fresh machine: AG-GEMM, GEMM-RS and GEMM-AR on
// shapes where communication matters, each run twice -- sequentially
// (collective, then GEMM) and overlapped (ring) -- checked against an
// independent double-precision oracle, and timed.
//
// Usage: mpirun -np 4 weave_overlap_demo [--m M] [--n N] [--k K] [--iterations I] [--float] [--help]
//
// Every element of A, B, C0 and bias is a hash of its global coordinates, so
// any rank can compute any element of the exact result without talking to
// the others: the oracle samples entries of C and sums their dot products in
// double precision.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "weave/weave.hpp"

namespace {

int g_rank = 0, g_size = 1;

// A value in [-1, 1) from (matrix id, row, column): the same on every rank.
double element(uint64_t matrix, int64_t i, int64_t j) {
  uint64_t x = matrix * 0x9E3779B97F4A7C15ULL ^ static_cast<uint64_t>(i) * 0xBF58476D1CE4E5B9ULL ^
               static_cast<uint64_t>(j) * 0x94D049BB133111EBULL;
  x ^= x >> 31;
  x *= 0xD6E8FEB86659FD93ULL;
  x ^= x >> 32;
  return static_cast<double>(x >> 11) * 0x1.0p-52 - 1.0;
}

enum : uint64_t { kA = 1, kB = 2, kC = 3, kBias = 4 };

template <class T>
struct Block {
  std::vector<T> data;
  int64_t rows = 0, cols = 0, ld = 1, row0 = 0, col0 = 0;
};

// Fills this rank's block of matrix `id` (column-major, as described by `m`).
template <class T>
Block<T> fill(const weave::Matrix& m, uint64_t id) {
  Block<T> b;
  b.rows = m.local_rows();
  b.cols = m.local_cols();
  b.ld = m.ld();
  b.row0 = m.row_offset();
  b.col0 = m.col_offset();
  b.data.assign(static_cast<size_t>(std::max<int64_t>(1, m.local_elements())), T(0));
  for (int64_t j = 0; j < b.cols; ++j)
    for (int64_t i = 0; i < b.rows; ++i) b.data[i + j * b.ld] = static_cast<T>(element(id, b.row0 + i, b.col0 + j));
  return b;
}

// The slowest rank's time for one execute over the timed iterations, in ms.
struct Timing {
  double min = 0, median = 0, max = 0;
};

// Progress on rank 0, as the demo goes (an operation at a time).
void progress(const char* format, const char* operation, const char* what) {
  if (g_rank != 0) return;
  std::printf(format, operation, what);
  std::fflush(stdout);
}

template <class T>
Timing time_plan(const weave::Plan& plan, int iterations, double alpha, const Block<T>& a, const Block<T>& b,
                 double beta, Block<T>& c, const Block<T>* bias) {
  std::vector<double> samples;
  for (int it = -2; it < iterations; ++it) {  // two warm-up runs
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    plan.execute<T>(static_cast<T>(alpha), a.data.data(), b.data.data(), static_cast<T>(beta), c.data.data(),
                    bias ? bias->data.data() : nullptr);
    double elapsed = MPI_Wtime() - start, slowest = 0;
    MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (it >= 0) samples.push_back(slowest * 1e3);
  }
  std::sort(samples.begin(), samples.end());
  return Timing{samples.front(), samples[samples.size() / 2], samples.back()};
}

// Oracle check of sampled entries of this rank's C, placed in the global C
// at (c.row0, c.col0) (GEMM-AR/RS/AG differ only in which block is local).
template <class T>
bool check(const char* name, const Block<T>& c, int64_t k, double alpha, double beta, bool op_a_t, double eps) {
  int failures = 0;
  const int64_t stride_i = std::max<int64_t>(1, c.rows / 7), stride_j = std::max<int64_t>(1, c.cols / 7);
  for (int64_t j = 0; j < c.cols; j += stride_j)
    for (int64_t i = 0; i < c.rows; i += stride_i) {
      const int64_t gi = c.row0 + i, gj = c.col0 + j;
      double sum = 0, magnitude = 0;
      for (int64_t l = 0; l < k; ++l) {
        const double a = op_a_t ? element(kA, l, gi) : element(kA, gi, l);
        const double p = a * element(kB, l, gj);
        sum += p;
        magnitude += std::fabs(p);
      }
      const double expected = alpha * sum + beta * element(kC, gi, gj) + element(kBias, 0, gj);
      const double bound = 4.0 * (k + 3) * eps * (std::fabs(alpha) * magnitude + std::fabs(beta) + 1.0);
      const double got = c.data[i + j * c.ld];
      if (!(std::fabs(got - expected) <= bound)) {
        if (failures++ < 3)
          std::fprintf(stderr, "rank %d %s: C(%lld,%lld) = %.17g, expected %.17g\n", g_rank, name, (long long)gi,
                       (long long)gj, got, expected);
      }
    }
  int bad = failures, total_bad = 0;
  MPI_Allreduce(&bad, &total_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return total_bad == 0;
}

struct Row {
  std::string operation;
  Timing sequential, overlapped;
  bool correct = false;
  std::string describe_sequential, describe_overlapped;
};

template <class T>
Row run(weave_operation_t operation, int64_t M, int64_t N, int64_t K, int iterations) {
  const weave_dtype_t t = weave::dtype_of<T>::value;
  const double eps = std::is_same<T, float>::value ? 0x1p-24 : 0x1p-53;
  weave::Grid grid(MPI_COMM_WORLD);
  // Uneven shards on purpose: rank r owns a share proportional to r + 2.
  auto uneven = [](int64_t n) {
    std::vector<int64_t> counts(static_cast<size_t>(g_size));
    int64_t total_weight = 0, given = 0;
    for (int r = 0; r < g_size; ++r) total_weight += r + 2;
    for (int r = 0; r < g_size; ++r) given += counts[r] = n * (r + 2) / total_weight;
    counts.back() += n - given;
    return counts;
  };
  // AG-GEMM: A^T stored (K x M, columns = rows of op(A) split), B (K x N) split by columns.
  // GEMM-RS / GEMM-AR: A (M x K) split by columns, B (K x N) split by rows.
  const bool ag = operation == WEAVE_AG_GEMM;
  weave::Matrix a(grid, ag ? weave::block_cols(K, M, t).cols_per_rank(uneven(M)) : weave::block_cols(M, K, t).cols_per_rank(uneven(K)));
  weave::Matrix b(grid, ag ? weave::block_cols(K, N, t).cols_per_rank(uneven(N)) : weave::block_rows(K, N, t).rows_per_rank(uneven(K)));
  weave::Matrix c(grid, ag ? weave::block_cols(M, N, t).cols_per_rank(uneven(N))
                           : operation == WEAVE_GEMM_RS ? weave::block_rows(M, N, t).rows_per_rank(uneven(M))
                                                        : weave::replicated(M, N, t));
  weave::Matrix bias(grid, ag ? weave::block_cols(1, N, t).cols_per_rank(uneven(N)) : weave::replicated(1, N, t));
  const weave_op_t op_a = ag ? WEAVE_OP_T : WEAVE_OP_N;

  Block<T> A = fill<T>(a, kA), B = fill<T>(b, kB), C = fill<T>(c, kC), Bias = fill<T>(bias, kBias);
  const double alpha = 1.0, beta = 0.5;

  weave::Plan sequential(grid, weave::PlanDesc(operation, a, b, c).ops(op_a, WEAVE_OP_N).bias(bias).algorithm(
                                   WEAVE_ALGORITHM_SEQUENTIAL));
  weave::Plan overlapped(grid, weave::PlanDesc(operation, a, b, c).ops(op_a, WEAVE_OP_N).bias(bias).algorithm(
                                   WEAVE_ALGORITHM_RING));
  Row row;
  row.operation = operation == WEAVE_AG_GEMM ? "AG-GEMM" : operation == WEAVE_GEMM_RS ? "GEMM-RS" : "GEMM-AR";
  progress("%s: plans created; checking both against the oracle\n", row.operation.c_str(), "");
  row.describe_sequential = sequential.describe();
  row.describe_overlapped = overlapped.describe();

  // Correctness of each plan on a fresh C (beta * C0 enters once).
  bool correct = true;
  for (const weave::Plan* plan : {&sequential, &overlapped}) {
    Block<T> out = fill<T>(c, kC);
    plan->execute<T>(static_cast<T>(alpha), A.data.data(), B.data.data(), static_cast<T>(beta), out.data.data(),
                     Bias.data.data());
    correct = check<T>(row.operation.c_str(), out, K, alpha, beta, op_a == WEAVE_OP_T, eps) && correct;
  }
  row.correct = correct;
  progress("%s: oracle %s; timing the sequential plan\n", row.operation.c_str(), correct ? "pass" : "FAIL");
  // Timing with beta = 0 so repeated runs do not change the result.
  row.sequential = time_plan<T>(sequential, iterations, alpha, A, B, 0.0, C, &Bias);
  progress("%s: timing the overlapped plan%s\n", row.operation.c_str(), "");
  row.overlapped = time_plan<T>(overlapped, iterations, alpha, A, B, 0.0, C, &Bias);
  return row;
}

const char* const kUsage =
    "usage: mpirun -np <ranks> weave_overlap_demo [--m M] [--n N] [--k K] [--iterations I] [--float]\n"
    "  AG-GEMM, GEMM-RS and GEMM-AR of an M x K by K x N product on every rank of MPI_COMM_WORLD\n"
    "  (any number of ranks; scripts/run-demo.sh starts 4, WEAVE_DEMO_RANKS=<n> another number),\n"
    "  each as the sequential plan (collective, then GEMM) and the overlapped one (ring),\n"
    "  checked against a double-precision oracle and timed.\n"
    "  --m M, --n N, --k K   the shape (default 4096 x 256 by 256 x 1024)\n"
    "  --iterations I        timed executes of each plan after 2 warm-up ones (default 5);\n"
    "                        the table shows their median and, beside it, min-max\n"
    "  --float               f32 instead of f64\n"
    "  --help                this text\n";

std::string spread(const Timing& t) {
  char text[64];
  std::snprintf(text, sizeof text, "(%.2f-%.2f)", t.min, t.max);
  return text;
}

struct Options {
  int64_t m = 4096, n = 1024, k = 256, iterations = 5;
  bool single = false, help = false;
  std::string error;  // not empty: the arguments are wrong
};

// Every argument is known and every number a positive integer; anything
// else is an error, not a silently ignored word.
Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc && o.error.empty(); ++i) {
    const std::string arg = argv[i];
    int64_t* value = arg == "--m" ? &o.m : arg == "--n" ? &o.n : arg == "--k" ? &o.k
                   : arg == "--iterations" ? &o.iterations : nullptr;
    if (arg == "--help" || arg == "-h") {
      o.help = true;
    } else if (arg == "--float") {
      o.single = true;
    } else if (value) {
      if (i + 1 >= argc) {
        o.error = arg + " needs a value";
        break;
      }
      char* end = nullptr;
      const long long number = std::strtoll(argv[++i], &end, 10);
      if (*argv[i] == '\0' || *end != '\0' || number < 1 || number > (1LL << 40))
        o.error = arg + " " + argv[i] + ": not a positive integer";
      else
        *value = number;
    } else {
      o.error = "unknown argument '" + arg + "'";
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const Options options = parse(argc, argv);
  if (options.help || !options.error.empty()) {
    if (g_rank == 0) {
      if (!options.error.empty()) std::fprintf(stderr, "weave_overlap_demo: %s\n", options.error.c_str());
      std::fprintf(options.help && options.error.empty() ? stdout : stderr, "%s", kUsage);
    }
    MPI_Finalize();
    return options.error.empty() ? 0 : 2;
  }
  const int64_t M = options.m, N = options.n, K = options.k;
  const int iterations = static_cast<int>(options.iterations);
  const bool single = options.single;
  if (g_rank == 0) {
    std::printf("Weave %s on %d ranks, %s, M=%lld N=%lld K=%lld: each operation checked, then timed over %d "
                "executes of each plan\n",
                WEAVE_VERSION_STRING, g_size, single ? "f32" : "f64", (long long)M, (long long)N, (long long)K,
                iterations);
    std::fflush(stdout);
  }

  std::vector<Row> rows;
  int status = 0;
  try {
    for (weave_operation_t op : {WEAVE_AG_GEMM, WEAVE_GEMM_RS, WEAVE_GEMM_AR})
      rows.push_back(single ? run<float>(op, M, N, K, iterations) : run<double>(op, M, N, K, iterations));
  } catch (const weave::Error& e) {
    std::fprintf(stderr, "rank %d: %s\n", g_rank, e.what());
    status = 1;
  }
  if (g_rank == 0 && status == 0) {
    std::printf("\nmedian of %d executes (slowest rank each time), min-max beside it\n\n", iterations);
    std::printf("%-8s  %13s  %15s  %13s  %15s  %7s  %s\n", "op", "sequential ms", "(min-max)", "overlapped ms",
                "(min-max)", "ratio", "oracle");
    for (const Row& r : rows)
      std::printf("%-8s  %13.2f  %15s  %13.2f  %15s  %7.3f  %s\n", r.operation.c_str(), r.sequential.median,
                  spread(r.sequential).c_str(), r.overlapped.median, spread(r.overlapped).c_str(),
                  r.overlapped.median / r.sequential.median, r.correct ? "pass" : "FAIL");
    std::printf("\nratio = overlapped / sequential median (below 1: overlap pays)\n\nPlans:\n");
    for (const Row& r : rows) {
      std::printf("  %s\n", r.describe_sequential.c_str());
      std::printf("  %s\n", r.describe_overlapped.c_str());
    }
  }
  for (const Row& r : rows) status = status || !r.correct;
  MPI_Finalize();
  return status;
}
