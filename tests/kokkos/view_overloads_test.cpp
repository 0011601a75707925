// The Kokkos View interface (weave_kokkos.hpp) on host execution spaces:
//   - LayoutLeft Views (const A and B), LayoutRight Views with row-major
//     descriptors, float and double, bias, beta, and padded Views (a
//     subview of a taller allocation) all give the exact product, also
//     with a bias whose entries are its ld apart (column-major, ld 2);
//   - a View that does not fit the plan on one rank (extents, leading
//     dimension, element type, layout, bias present or missing) makes the
//     call throw weave::Error with the right status on every rank, naming
//     that rank, and leaves the plan usable.
// Values are small multiples of 1/16, so every product is exact and
// compared with ==. Usage: mpiexec -n P weave_kokkos_view_test
#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>

#include <weave/weave_kokkos.hpp>

namespace {

using Space = Kokkos::DefaultHostExecutionSpace;
int g_rank = 0, g_size = 1, g_failures = 0;

void expect(bool condition, const std::string& what) {
  if (condition) return;
  ++g_failures;
  std::fprintf(stderr, "rank %d: FAIL %s\n", g_rank, what.c_str());
}

double a_value(int64_t i, int64_t k) { return static_cast<double>((i * 7 + k * 3) % 9 - 4) / 16.0; }
double b_value(int64_t k, int64_t j) { return static_cast<double>((k * 5 + j * 2) % 7 - 3) / 16.0; }
double c_value(int64_t i, int64_t j) { return static_cast<double>((i + 2 * j) % 5 - 2) / 4.0; }
double bias_value(int64_t j) { return static_cast<double>(j % 3 - 1) / 2.0; }

// AG-GEMM over a P x 1 grid: M rows of A split, N columns of B, C, bias split.
struct Shapes {
  int64_t m, n, k;
};
Shapes shapes() { return {3 * g_size + 1, 2 * g_size + 3, 5}; }

// Fills host Views of any layout from the formulas, at the block's offsets.
template <class View, class F>
void fill(const View& v, const weave::Matrix& m, F value) {
  for (int64_t j = 0; j < static_cast<int64_t>(v.extent(1)); ++j)
    for (int64_t i = 0; i < static_cast<int64_t>(v.extent(0)); ++i) v(i, j) = value(m.row_offset() + i, m.col_offset() + j);
}

// C's expected block: alpha A B + beta C0 + bias.
template <class View>
bool product_right(const View& c, const weave::KokkosPlan& plan, double alpha, double beta, bool bias) {
  const Shapes s = shapes();
  for (int64_t j = 0; j < static_cast<int64_t>(c.extent(1)); ++j)
    for (int64_t i = 0; i < static_cast<int64_t>(c.extent(0)); ++i) {
      const int64_t gi = plan.c().row_offset() + i, gj = plan.c().col_offset() + j;
      double sum = 0;
      for (int64_t k = 0; k < s.k; ++k) sum += a_value(gi, k) * b_value(k, gj);
      const double expected = alpha * sum + beta * c_value(gi, gj) + (bias ? bias_value(gj) : 0.0);
      if (static_cast<double>(c(i, j)) != expected) return false;
    }
  return true;
}

template <class T, class Layout>
void check_layout(weave_order_t order, const char* what) {
  const Shapes s = shapes();
  const weave_dtype_t t = weave::dtype_of<T>::value;
  weave::Grid grid(MPI_COMM_WORLD);
  weave::KokkosPlan plan(grid, WEAVE_AG_GEMM, weave::block_rows(s.m, s.k, t).order(order),
                         weave::block_cols(s.k, s.n, t).order(order), weave::block_cols(s.m, s.n, t).order(order),
                         weave::block_cols(1, s.n, t));
  using Matrix = Kokkos::View<T**, Layout, Kokkos::HostSpace>;
  Matrix a("A", plan.a().local_rows(), plan.a().local_cols()), b("B", plan.b().local_rows(), plan.b().local_cols()),
      c("C", plan.c().local_rows(), plan.c().local_cols());
  Kokkos::View<T*, Kokkos::HostSpace> bias("bias", plan.bias().local_cols());
  fill(a, plan.a(), a_value);
  fill(b, plan.b(), b_value);
  fill(c, plan.c(), c_value);
  for (int64_t j = 0; j < static_cast<int64_t>(bias.extent(0)); ++j) bias(j) = bias_value(plan.bias().col_offset() + j);
  // A and B as Views of const: inputs need not be writable.
  Kokkos::View<const T**, Layout, Kokkos::HostSpace> a_const = a, b_const = b;
  weave::execute(plan, 1.5, a_const, b_const, -0.5, c, bias, Space());
  expect(product_right(c, plan, 1.5, -0.5, true), std::string(what) + ": wrong product");
}

// A and B as subviews of allocations with 3 more rows: stride(1) = ld.
void check_padded() {
  const Shapes s = shapes();
  weave::Grid grid(MPI_COMM_WORLD);
  const int64_t most_rows = (s.m + g_size - 1) / g_size;  // of A on any rank
  weave::KokkosPlan plan(grid, WEAVE_AG_GEMM, weave::block_rows(s.m, s.k, WEAVE_FLOAT64).ld(most_rows + 3),
                         weave::block_cols(s.k, s.n, WEAVE_FLOAT64).ld(s.k + 3),
                         weave::block_cols(s.m, s.n, WEAVE_FLOAT64));
  using Matrix = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
  Matrix a_storage("A storage", plan.a().ld(), plan.a().local_cols()),
      b_storage("B storage", plan.b().ld(), plan.b().local_cols());
  auto a = Kokkos::subview(a_storage, std::make_pair<int64_t, int64_t>(0, plan.a().local_rows()), Kokkos::ALL());
  auto b = Kokkos::subview(b_storage, std::make_pair<int64_t, int64_t>(0, plan.b().local_rows()), Kokkos::ALL());
  Matrix c("C", plan.c().local_rows(), plan.c().local_cols());
  fill(a, plan.a(), a_value);
  fill(b, plan.b(), b_value);
  weave::execute(plan, 1.0, a, b, 0.0, c, Space());
  expect(product_right(c, plan, 1.0, 0.0, false), "padded subviews: wrong product");
}

// The bias as row 0 of a 2 x N column-major allocation: a column-major
// 1 x N descriptor with ld 2, a View with stride(0) = 2. Row 1 holds a
// sentinel that must not reach C.
void check_strided_bias() {
  const Shapes s = shapes();
  weave::Grid grid(MPI_COMM_WORLD);
  weave::KokkosPlan plan(grid, WEAVE_AG_GEMM, weave::block_rows(s.m, s.k, WEAVE_FLOAT64),
                         weave::block_cols(s.k, s.n, WEAVE_FLOAT64), weave::block_cols(s.m, s.n, WEAVE_FLOAT64),
                         weave::block_cols(1, s.n, WEAVE_FLOAT64).ld(2));
  using Matrix = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
  Matrix a("A", plan.a().local_rows(), plan.a().local_cols()), b("B", plan.b().local_rows(), plan.b().local_cols()),
      c("C", plan.c().local_rows(), plan.c().local_cols()), bias_storage("bias storage", 2, plan.bias().local_cols());
  fill(a, plan.a(), a_value);
  fill(b, plan.b(), b_value);
  fill(c, plan.c(), c_value);
  const auto bias = Kokkos::subview(bias_storage, 0, Kokkos::ALL());
  for (int64_t j = 0; j < static_cast<int64_t>(bias.extent(0)); ++j) {
    bias(j) = bias_value(plan.bias().col_offset() + j);
    bias_storage(1, j) = 12345.0;
  }
  weave::execute(plan, 1.0, a, b, 0.5, c, bias, Space());
  expect(product_right(c, plan, 1.0, 0.5, true), "bias with ld 2: wrong product");
}

// `call` runs with a bad View on rank 0 only; every rank must see `status`.
void expect_refused(const std::function<void()>& call, weave_status_t status, const char* what) {
  weave_status_t got = WEAVE_SUCCESS;
  std::string message;
  try {
    call();
  } catch (const weave::Error& e) {
    got = e.status();
    message = e.what();
  }
  expect(got == status, std::string(what) + ": got " + weave_status_string(got) + ", expected " +
                            weave_status_string(status) + " (" + message + ")");
  expect(message.find("rank 0: ") != std::string::npos,
         std::string(what) + ": the message does not name the rank with the bad View: " + message);
  if (g_rank == 0 && got == status) std::printf("  %s: %s\n", what, message.c_str());
}

void check_refusals() {
  const Shapes s = shapes();
  weave::Grid grid(MPI_COMM_WORLD);
  weave::KokkosPlan plan(grid, WEAVE_AG_GEMM, weave::block_rows(s.m, s.k, WEAVE_FLOAT64),
                         weave::block_cols(s.k, s.n, WEAVE_FLOAT64), weave::block_cols(s.m, s.n, WEAVE_FLOAT64),
                         weave::block_cols(1, s.n, WEAVE_FLOAT64));
  weave::KokkosPlan no_bias(grid, WEAVE_AG_GEMM, weave::block_rows(s.m, s.k, WEAVE_FLOAT64),
                            weave::block_cols(s.k, s.n, WEAVE_FLOAT64), weave::block_cols(s.m, s.n, WEAVE_FLOAT64));
  using Matrix = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
  Matrix a("A", plan.a().local_rows(), plan.a().local_cols()), b("B", plan.b().local_rows(), plan.b().local_cols()),
      c("C", plan.c().local_rows(), plan.c().local_cols());
  Kokkos::View<double*, Kokkos::HostSpace> bias("bias", plan.bias().local_cols());
  fill(a, plan.a(), a_value);
  fill(b, plan.b(), b_value);
  for (int64_t j = 0; j < static_cast<int64_t>(bias.extent(0)); ++j) bias(j) = bias_value(plan.bias().col_offset() + j);
  const bool bad = g_rank == 0;

  Matrix c_short("C short", plan.c().local_rows() - (bad ? 1 : 0), plan.c().local_cols());
  expect_refused([&] { weave::execute(plan, 1.0, a, b, 0.0, c_short, bias, Space()); }, WEAVE_ERROR_SHAPE_MISMATCH,
                 "C one row short");

  Matrix b_tall("B tall", plan.b().local_rows() + (bad ? 2 : 0), plan.b().local_cols());
  auto b_padded = Kokkos::subview(b_tall, std::make_pair<int64_t, int64_t>(0, plan.b().local_rows()), Kokkos::ALL());
  expect_refused([&] { weave::execute(plan, 1.0, a, b_padded, 0.0, c, bias, Space()); },
                 WEAVE_ERROR_INVALID_LEADING_DIMENSION, "B with a larger leading dimension than its descriptor");

  // Both element types on every rank (so the call compiles), the float one on rank 0.
  Kokkos::View<float**, Kokkos::LayoutLeft, Kokkos::HostSpace> a_float("A float", plan.a().local_rows(),
                                                                          plan.a().local_cols());
  Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> a_right("A right", plan.a().local_rows(),
                                                                           plan.a().local_cols());
  if (bad) {
    expect_refused([&] { weave::execute(plan, 1.0, a_float, b, 0.0, c, bias, Space()); }, WEAVE_ERROR_UNSUPPORTED_TYPE,
                   "A of float in a float64 plan");
    expect_refused([&] { weave::execute(plan, 1.0, a_right, b, 0.0, c, bias, Space()); }, WEAVE_ERROR_INVALID_VALUE,
                   "A LayoutRight for a column-major descriptor");
    expect_refused([&] { weave::execute(plan, 1.0, a, b, 0.0, c, Space()); }, WEAVE_ERROR_NULL_ARGUMENT,
                   "no bias View for a plan with bias");
    expect_refused([&] { weave::execute(no_bias, 1.0, a, b, 0.0, c, bias, Space()); }, WEAVE_ERROR_INVALID_VALUE,
                   "a bias View for a plan without bias");
  } else {
    for (int repeat = 0; repeat < 2; ++repeat)
      expect_refused([&] { weave::execute(plan, 1.0, a, b, 0.0, c, bias, Space()); },
                     repeat == 0 ? WEAVE_ERROR_UNSUPPORTED_TYPE : WEAVE_ERROR_INVALID_VALUE, "a peer's bad A");
    expect_refused([&] { weave::execute(plan, 1.0, a, b, 0.0, c, bias, Space()); }, WEAVE_ERROR_NULL_ARGUMENT,
                   "a peer's missing bias");
    expect_refused([&] { weave::execute(no_bias, 1.0, a, b, 0.0, c, Space()); }, WEAVE_ERROR_INVALID_VALUE,
                   "a peer's extra bias");
  }

  // The refused calls never reached the plan: it still runs.
  weave::execute(plan, 1.0, a, b, 0.0, c, bias, Space());
  expect(product_right(c, plan, 1.0, 0.0, true), "the plan gave a wrong product after refused calls");
}

// FP8 A and B as Views of weave::float8_e4m3 with their scales
// (weave::scales), with and without a bias; a scale View that is too short
// on rank 0 is refused on every rank.
void check_fp8() {
  const Shapes s = shapes();
  weave::Grid grid(MPI_COMM_WORLD);
  weave::KokkosPlan plan(grid, WEAVE_AG_GEMM,
                         weave::block_rows(s.m, s.k, WEAVE_FLOAT8_E4M3).scale_mode(WEAVE_SCALE_ROW_WISE),
                         weave::block_cols(s.k, s.n, WEAVE_FLOAT8_E4M3).scale_mode(WEAVE_SCALE_TENSOR),
                         weave::block_cols(s.m, s.n, WEAVE_FLOAT32), weave::block_cols(1, s.n, WEAVE_FLOAT32));
  using Fp8 = Kokkos::View<weave::float8_e4m3**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
  Fp8 a("A", plan.a().local_rows(), plan.a().local_cols()), b("B", plan.b().local_rows(), plan.b().local_cols());
  Kokkos::View<float**, Kokkos::LayoutLeft, Kokkos::HostSpace> c("C", plan.c().local_rows(), plan.c().local_cols());
  Kokkos::View<float*, Kokkos::HostSpace> bias("bias", plan.bias().local_cols());
  Kokkos::deep_copy(bias, 0.25f);
  // e4m3 1.0 everywhere; A's rows scaled by 0.5, B by 2: C = K (+ 0.25).
  for (std::size_t i = 0; i < a.span(); ++i) a.data()[i].bits = 0x38;
  for (std::size_t i = 0; i < b.span(); ++i) b.data()[i].bits = 0x38;
  Kokkos::View<float*, Kokkos::HostSpace> a_scale("A scales", plan.a().local_rows()), b_scale("B scales", 1),
      short_scale("short", 0);
  Kokkos::deep_copy(a_scale, 0.5f);
  Kokkos::deep_copy(b_scale, 2.0f);
  weave::execute(plan, 1.0, a, b, 0.0, c, bias, weave::scales(a_scale, b_scale), Space());
  bool right = true;
  for (std::size_t j = 0; j < c.extent(1); ++j)
    for (std::size_t i = 0; i < c.extent(0); ++i) right = right && c(i, j) == static_cast<float>(s.k) + 0.25f;
  expect(right, "FP8 Views with scales and bias: wrong product");
  weave::KokkosPlan no_bias(grid, WEAVE_AG_GEMM,
                            weave::block_rows(s.m, s.k, WEAVE_FLOAT8_E4M3).scale_mode(WEAVE_SCALE_ROW_WISE),
                            weave::block_cols(s.k, s.n, WEAVE_FLOAT8_E4M3).scale_mode(WEAVE_SCALE_TENSOR),
                            weave::block_cols(s.m, s.n, WEAVE_FLOAT32));
  weave::execute(no_bias, 1.0, a, b, 0.0, c, weave::scales(a_scale, b_scale), Space());
  right = true;
  for (std::size_t j = 0; j < c.extent(1); ++j)
    for (std::size_t i = 0; i < c.extent(0); ++i) right = right && c(i, j) == static_cast<float>(s.k);
  expect(right, "FP8 Views with scales: wrong product");
  // Rank 0 passes an empty scale View for its rows (when it has rows): every rank is refused.
  int rank0_rows = g_rank == 0 ? static_cast<int>(plan.a().local_rows()) : 0, rows = 0;
  MPI_Allreduce(&rank0_rows, &rows, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rows > 0) {
    weave_status_t got = WEAVE_SUCCESS;
    std::string message;
    try {
      weave::execute(no_bias, 1.0, a, b, 0.0, c, weave::scales(g_rank == 0 ? short_scale : a_scale, b_scale), Space());
    } catch (const weave::Error& e) {
      got = e.status();
      message = e.what();
    }
    expect(got == WEAVE_ERROR_INVALID_VALUE && message.find("a_scale holds 0") != std::string::npos,
           "an A scale View too short on rank 0: " + message);
  }
}

// AG-GEMM with float A sent as e4m3 (the wire type in the plan's options):
// A is unscaled, its scale View empty. A = 1 quantizes to 448 with scale
// 1/448 (doc/fp8.md), B = e4m3 1.0 scaled by 2: C = 2 K within float32 rounding.
void check_wire_type() {
  const Shapes s = shapes();
  weave::Grid grid(MPI_COMM_WORLD);
  weave_plan_desc_t options{};
  options.wire_type = WEAVE_FLOAT8_E4M3;
  weave::KokkosPlan plan(grid, WEAVE_AG_GEMM, weave::block_rows(s.m, s.k, WEAVE_FLOAT32),
                         weave::block_cols(s.k, s.n, WEAVE_FLOAT8_E4M3).scale_mode(WEAVE_SCALE_TENSOR),
                         weave::block_cols(s.m, s.n, WEAVE_FLOAT32), options);
  Kokkos::View<float**, Kokkos::LayoutLeft, Kokkos::HostSpace> a("A", plan.a().local_rows(), plan.a().local_cols()),
      c("C", plan.c().local_rows(), plan.c().local_cols());
  Kokkos::View<weave::float8_e4m3**, Kokkos::LayoutLeft, Kokkos::HostSpace> b("B", plan.b().local_rows(),
                                                                              plan.b().local_cols());
  Kokkos::deep_copy(a, 1.0f);
  for (std::size_t i = 0; i < b.span(); ++i) b.data()[i].bits = 0x38;
  Kokkos::View<float*, Kokkos::HostSpace> no_scale, b_scale("B scale", 1);
  Kokkos::deep_copy(b_scale, 2.0f);
  weave::execute(plan, 1.0, a, b, 0.0, c, weave::scales(no_scale, b_scale), Space());
  bool right = true;
  for (std::size_t j = 0; j < c.extent(1); ++j)
    for (std::size_t i = 0; i < c.extent(0); ++i)
      right = right && std::fabs(c(i, j) - 2.0f * static_cast<float>(s.k)) <= 1e-5f * static_cast<float>(s.k);
  expect(right, "float A sent as e4m3 (wire type): wrong product");
}

}  // namespace

// A rank that never makes the execute (its own code threw before it): the
// others must get WEAVE_ERROR_TIMEOUT within the plan's timeout, not wait
// for it for good, as the C API's execute does.
void check_absent_rank() {
  if (g_size < 2) return;
  const Shapes s = shapes();
  weave::Grid grid(MPI_COMM_WORLD);
  weave_plan_desc_t options{};
  options.timeout_ms = 1000;
  weave::KokkosPlan plan(grid, WEAVE_AG_GEMM, weave::block_rows(s.m, s.k, WEAVE_FLOAT64),
                         weave::block_cols(s.k, s.n, WEAVE_FLOAT64), weave::block_cols(s.m, s.n, WEAVE_FLOAT64),
                         options);
  using Matrix = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
  Matrix a("A", plan.a().local_rows(), plan.a().local_cols()), b("B", plan.b().local_rows(), plan.b().local_cols()),
      c("C", plan.c().local_rows(), plan.c().local_cols());
  if (g_rank != g_size - 1) {
    const double start = MPI_Wtime();
    weave_status_t got = WEAVE_SUCCESS;
    try {
      weave::execute(plan, 1.0, a, b, 0.0, c, Space());
    } catch (const weave::Error& e) {
      got = e.status();
    }
    const double seconds = MPI_Wtime() - start;
    expect(got == WEAVE_ERROR_TIMEOUT && seconds < 10.0,
           std::string("an execute without the last rank returned ") + weave_status_string(got) + " after " +
               std::to_string(seconds) + " s, expected WEAVE_ERROR_TIMEOUT within the plan's 1 s timeout");
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  Kokkos::initialize(argc, argv);
  try {
    check_layout<double, Kokkos::LayoutLeft>(WEAVE_ORDER_COLUMN_MAJOR, "double LayoutLeft");
    check_layout<float, Kokkos::LayoutLeft>(WEAVE_ORDER_COLUMN_MAJOR, "float LayoutLeft");
    check_layout<double, Kokkos::LayoutRight>(WEAVE_ORDER_ROW_MAJOR, "double LayoutRight, row-major descriptors");
    check_padded();
    check_strided_bias();
    if (g_rank == 0) std::printf("refused as expected:\n");
    check_refusals();
    check_fp8();
    check_wire_type();
    check_absent_rank();
  } catch (const std::exception& e) {
    expect(false, std::string("unexpected exception: ") + e.what());
  }
  Kokkos::finalize();
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("%s: Kokkos View overloads (Kokkos %d, %s) on %d ranks\n", failures ? "FAILED" : "PASSED",
                KOKKOS_VERSION, Space::name(), g_size);
  MPI_Finalize();
  return failures ? 1 : 0;
}
