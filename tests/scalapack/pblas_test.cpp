// weave_p?gemm (d, s, z, c) against ScaLAPACK's own p?gemm:
// the same random problems through both, on BLACS grids of every shape of
// the world in both process orders, with block sizes 1 to whole-matrix
// differing between A, B and C, sources off (0, 0), submatrices anywhere in
// their matrices, every transpose pair ('C' too), beta zero (C holding NaN)
// or not. Every element of sub(C) agrees within twice the oracle bound
// (each result is within k * eps of the exact one; the bound's magnitudes
// come from pdgemm on |A|, |B|, |C|); every other element of the local
// arrays, the inputs and guards around every array are left alone.
// Then arguments ScaLAPACK refuses, each an error on every process with
// nothing written; grids over some of the processes (the others return at
// once), and where BLACS says such a grid's system context is wider than the
// grid, WEAVE_ERROR_UNSUPPORTED on the grid's processes without waiting for
// the others; processes that disagree (a NULL argument on one, arguments
// that differ) failing alike, and one that does not call costing the others
// a timeout rather than a hang; and the plan cache: a repeated call makes
// no plan, other descriptors make one, the least recently used of 33 goes.
// Usage: weave_pblas_test [--seed S] [--cases N]
#include <dlfcn.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <complex>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "blacs_grid.hpp"
#include "weave/weave_pblas.h"
#include "weave_pblas_internal.hpp"  // the plan cache's counters

namespace {
// See Cblacs_get below.
bool g_wide_system_context = false;
}  // namespace

// ScaLAPACK's Cblacs_get for the whole program (weave_pblas included), which
// forwards every call to it, except that with g_wide_system_context set,
// BLACS_GET(ICTXT, 10, ...) answers the system context of all processes (as
// for a grid made from BLACS_GET(0, 0, ...)) rather than one over the grid's
// own processes as the reference BLACS answers: it stands for a BLACS that
// answers so, for which weave_p?gemm refuses a grid over some processes.
extern "C" void Cblacs_get(int context, int what, int* value) {
  using Get = void (*)(int, int, int*);
  static const Get blacs_get = reinterpret_cast<Get>(dlsym(RTLD_NEXT, "Cblacs_get"));
  if (!blacs_get) {
    std::fprintf(stderr, "weave_pblas_test: no Cblacs_get after the test's own\n");
    std::abort();
  }
  constexpr int kSystemContextOfGrid = 10;
  if (what == kSystemContextOfGrid && g_wide_system_context) {
    blacs_get(0, 0, value);  // MPI_COMM_WORLD's system context
    return;
  }
  blacs_get(context, what, value);
}

namespace {

using weave_test::BlacsGrid;
using weave_test::local_count;

int g_rank = 0, g_size = 1, g_failed = 0;

// The real type of an element type (its own, or a complex one's parts).
template <class T>
struct Real {
  using type = T;
};
template <class R>
struct Real<std::complex<R>> {
  using type = R;
};
template <class T>
constexpr bool is_complex_v = !std::is_same_v<T, typename Real<T>::type>;
constexpr int kGuard = 8;
constexpr double kGuardValue = -7777.0;

bool all_ranks(bool mine) {
  int ok = mine ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all != 0;
}

// One distributed matrix: its descriptor and this process's local array
// (with guards on both sides), filled from a global matrix.
template <class T>
struct Distributed {
  int rows = 0, cols = 0;
  int desc[9] = {};
  int local_rows = 0, local_cols = 0;
  std::vector<T> storage;  // kGuard + lld * local_cols + kGuard
  T* data() { return storage.data() + kGuard; }
  const T* data() const { return storage.data() + kGuard; }

  void make(const BlacsGrid& grid, int m, int n, int mb, int nb, int rsrc, int csrc, int pad) {
    rows = m;
    cols = n;
    local_rows = local_count(m, mb, grid.myrow(), rsrc, grid.nprow());
    local_cols = local_count(n, nb, grid.mycol(), csrc, grid.npcol());
    const int lld = std::max(1, local_rows) + pad;
    const int d[9] = {1, grid.context(), m, n, mb, nb, rsrc, csrc, lld};
    std::memcpy(desc, d, sizeof desc);
    storage.assign(static_cast<size_t>(2 * kGuard + lld * std::max(local_cols, 1)), static_cast<T>(kGuardValue));
  }
  // The global row (column) of local row (column) l.
  int global_row(const BlacsGrid& g, int l) const {
    return (l / desc[4] * g.nprow() + (g.nprow() + g.myrow() - desc[6]) % g.nprow()) * desc[4] + l % desc[4];
  }
  int global_col(const BlacsGrid& g, int l) const {
    return (l / desc[5] * g.npcol() + (g.npcol() + g.mycol() - desc[7]) % g.npcol()) * desc[5] + l % desc[5];
  }
  T& at(int i, int j) { return data()[i + j * desc[8]]; }
  template <class V>
  void fill(const BlacsGrid& g, const std::vector<V>& global) {
    for (int j = 0; j < local_cols; ++j)
      for (int i = 0; i < local_rows; ++i)
        at(i, j) = static_cast<T>(global[static_cast<size_t>(global_row(g, i) + global_col(g, j) * rows)]);
  }
};

struct Problem {
  char ta = 'N', tb = 'N';
  int m = 0, n = 0, k = 0, ia = 1, ja = 1, ib = 1, jb = 1, ic = 1, jc = 1;
  double alpha = 1, beta = 0;
};

std::string describe(const Problem& p, const BlacsGrid& g, const char* order, const int* da, const int* db,
                     const int* dc) {
  char text[512];
  std::snprintf(text, sizeof text,
                "%dx%d(%s) %c%c m=%d n=%d k=%d alpha=%g beta=%g A %dx%d blocks %dx%d@%d,%d at (%d,%d); B %dx%d "
                "blocks %dx%d@%d,%d at (%d,%d); C %dx%d blocks %dx%d@%d,%d at (%d,%d)",
                g.nprow(), g.npcol(), order, p.ta, p.tb, p.m, p.n, p.k, p.alpha, p.beta, da[2], da[3], da[4], da[5],
                da[6], da[7], p.ia, p.ja, db[2], db[3], db[4], db[5], db[6], db[7], p.ib, p.jb, dc[2], dc[3], dc[4],
                dc[5], dc[6], dc[7], p.ic, p.jc);
  return text;
}

template <class T>
void scalapack_gemm(const Problem& p, const T* alpha, const Distributed<T>& a, const Distributed<T>& b, const T* beta,
                    Distributed<T>& c) {
  if constexpr (std::is_same_v<T, double>)
    pdgemm_(&p.ta, &p.tb, &p.m, &p.n, &p.k, alpha, a.data(), &p.ia, &p.ja, a.desc, b.data(), &p.ib, &p.jb, b.desc,
            beta, c.data(), &p.ic, &p.jc, c.desc);
  else if constexpr (std::is_same_v<T, float>)
    psgemm_(&p.ta, &p.tb, &p.m, &p.n, &p.k, alpha, a.data(), &p.ia, &p.ja, a.desc, b.data(), &p.ib, &p.jb, b.desc,
            beta, c.data(), &p.ic, &p.jc, c.desc);
  else if constexpr (std::is_same_v<T, std::complex<double>>)
    pzgemm_(&p.ta, &p.tb, &p.m, &p.n, &p.k, alpha, a.data(), &p.ia, &p.ja, a.desc, b.data(), &p.ib, &p.jb, b.desc,
            beta, c.data(), &p.ic, &p.jc, c.desc);
  else
    pcgemm_(&p.ta, &p.tb, &p.m, &p.n, &p.k, alpha, a.data(), &p.ia, &p.ja, a.desc, b.data(), &p.ib, &p.jb, b.desc,
            beta, c.data(), &p.ic, &p.jc, c.desc);
}

template <class T>
weave_status_t weave_gemm(const Problem& p, const T* alpha, const Distributed<T>& a, const Distributed<T>& b,
                          const T* beta, Distributed<T>& c) {
  if constexpr (std::is_same_v<T, double>)
    return weave_pdgemm(&p.ta, &p.tb, &p.m, &p.n, &p.k, alpha, a.data(), &p.ia, &p.ja, a.desc, b.data(), &p.ib,
                        &p.jb, b.desc, beta, c.data(), &p.ic, &p.jc, c.desc);
  else if constexpr (std::is_same_v<T, float>)
    return weave_psgemm(&p.ta, &p.tb, &p.m, &p.n, &p.k, alpha, a.data(), &p.ia, &p.ja, a.desc, b.data(), &p.ib,
                        &p.jb, b.desc, beta, c.data(), &p.ic, &p.jc, c.desc);
  else if constexpr (std::is_same_v<T, std::complex<double>>)
    return weave_pzgemm(&p.ta, &p.tb, &p.m, &p.n, &p.k, reinterpret_cast<const double*>(alpha), a.data(), &p.ia,
                        &p.ja, a.desc, b.data(), &p.ib, &p.jb, b.desc, reinterpret_cast<const double*>(beta),
                        c.data(), &p.ic, &p.jc, c.desc);
  else
    return weave_pcgemm(&p.ta, &p.tb, &p.m, &p.n, &p.k, reinterpret_cast<const float*>(alpha), a.data(), &p.ia,
                        &p.ja, a.desc, b.data(), &p.ib, &p.jb, b.desc, reinterpret_cast<const float*>(beta), c.data(),
                        &p.ic, &p.jc, c.desc);
}

// One random problem on one grid; true when it agreed on this process.
template <class T>
bool crosscheck(const BlacsGrid& g, const char* order, std::mt19937_64& rng, int repeats) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int blocks[] = {1, 2, 3, 7, 32, 100};
  Problem p;
  const char trans[] = {'N', 'T', 'C'};
  p.ta = trans[uniform(0, 2)];
  p.tb = trans[uniform(0, 2)];
  p.m = uniform(0, 37);
  p.n = uniform(0, 29);
  p.k = uniform(0, 41);
  p.alpha = uniform(0, 3) == 0 ? 1.0 : std::uniform_real_distribution<double>(-2, 2)(rng);
  p.beta = uniform(0, 2) == 0 ? 0.0 : std::uniform_real_distribution<double>(-2, 2)(rng);
  const bool at = p.ta != 'N', bt = p.tb != 'N';
  // Each matrix a little larger than its submatrix, which starts anywhere it fits.
  auto place = [&](int rows, int cols, int* i, int* j, int* mr, int* mc) {
    *mr = rows + uniform(0, 9);
    *mc = cols + uniform(0, 9);
    *i = 1 + uniform(0, *mr - rows);
    *j = 1 + uniform(0, *mc - cols);
  };
  int am, an, bm, bn, cm, cn;
  place(at ? p.k : p.m, at ? p.m : p.k, &p.ia, &p.ja, &am, &an);
  place(bt ? p.n : p.k, bt ? p.k : p.n, &p.ib, &p.jb, &bm, &bn);
  place(p.m, p.n, &p.ic, &p.jc, &cm, &cn);
  using R = typename Real<T>::type;
  Distributed<T> a, b, c, c_weave;
  Distributed<R> mag_a, mag_b, mag_c;  // moduli, for the error bound
  auto layout = [&](Distributed<T>& x, Distributed<R>& mag, int rows, int cols) {
    x.make(g, rows, cols, blocks[uniform(0, 5)], blocks[uniform(0, 5)], uniform(0, g.nprow() - 1),
           uniform(0, g.npcol() - 1), uniform(0, 2));
    mag.make(g, rows, cols, x.desc[4], x.desc[5], x.desc[6], x.desc[7], x.desc[8] - std::max(1, x.local_rows));
  };
  layout(a, mag_a, am, an);
  layout(b, mag_b, bm, bn);
  layout(c, mag_c, cm, cn);
  std::uniform_real_distribution<double> value(-1, 1);
  auto random_global = [&](int rows, int cols) {
    std::vector<std::complex<double>> v(static_cast<size_t>(rows) * static_cast<size_t>(cols));
    for (auto& x : v) x = is_complex_v<T> ? std::complex<double>(value(rng), value(rng)) : value(rng);
    return v;
  };
  auto element = [](std::complex<double> z) {
    if constexpr (is_complex_v<T>)
      return T(static_cast<R>(z.real()), static_cast<R>(z.imag()));
    else
      return static_cast<T>(z.real());
  };
  auto as_elements = [&](const std::vector<std::complex<double>>& v) {
    std::vector<T> out;
    for (const auto& z : v) out.push_back(element(z));
    return out;
  };
  auto moduli = [](const std::vector<std::complex<double>>& v) {
    std::vector<R> out;
    for (const auto& z : v) out.push_back(static_cast<R>(std::abs(z)));
    return out;
  };
  const auto ga = random_global(am, an), gb = random_global(bm, bn), gc = random_global(cm, cn);
  a.fill(g, as_elements(ga));
  b.fill(g, as_elements(gb));
  c.fill(g, as_elements(gc));
  mag_a.fill(g, moduli(ga));
  mag_b.fill(g, moduli(gb));
  mag_c.fill(g, moduli(gc));
  // beta == 0: C need not be set, so it holds NaN inside sub(C).
  auto in_sub_c = [&](const Distributed<T>& x, int i, int j) {
    const int gi = x.global_row(g, i), gj = x.global_col(g, j);
    return gi >= p.ic - 1 && gi < p.ic - 1 + p.m && gj >= p.jc - 1 && gj < p.jc - 1 + p.n;
  };
  const std::complex<double> alpha_z = is_complex_v<T> ? std::complex<double>(p.alpha, 0.5 * p.beta) : p.alpha;
  const std::complex<double> beta_z = is_complex_v<T> ? std::complex<double>(p.beta, -0.25 * p.beta) : p.beta;
  if (p.beta == 0.0)
    for (int j = 0; j < c.local_cols; ++j)
      for (int i = 0; i < c.local_rows; ++i)
        if (in_sub_c(c, i, j)) c.at(i, j) = element(std::numeric_limits<double>::quiet_NaN());
  const Distributed<T> c_initial = c, a_before = a, b_before = b;
  const T alpha = element(alpha_z), beta = element(beta_z);
  const R abs_alpha = static_cast<R>(std::abs(alpha_z)), abs_beta = static_cast<R>(std::abs(beta_z));

  scalapack_gemm(p, &alpha, a, b, &beta, c);
  // |op(A)| |op(B)|, with a real GEMM of the moduli: no transpose needs conjugating.
  Problem real_p = p;
  if (real_p.ta == 'C') real_p.ta = 'T';
  if (real_p.tb == 'C') real_p.tb = 'T';
  scalapack_gemm(real_p, &abs_alpha, mag_a, mag_b, &abs_beta, mag_c);
  const std::string what = describe(p, g, order, a.desc, b.desc, c.desc) + (is_complex_v<T> ? " complex" : "");
  bool ok = true;
  // A second run reuses the cached plan.
  for (int repeat = 0; repeat < repeats; ++repeat) {
    c_weave = c_initial;
    const weave_status_t status = weave_gemm(p, &alpha, a, b, &beta, c_weave);
    if (status != WEAVE_SUCCESS) {
      std::fprintf(stderr, "rank %d: %s: %s\n", g_rank, what.c_str(), weave_pblas_last_error());
      return false;
    }
    // Complex products: twice the roundoff of their parts.
    const double eps = std::numeric_limits<R>::epsilon() / 2 * (is_complex_v<T> ? 2 : 1);
    const double gamma = 4.0 * (p.k + 3) * eps;
    int reported = 0;
    for (std::size_t x = 0; x < c.storage.size(); ++x) {
      const T want = c.storage[x], got = c_weave.storage[x];
      const std::ptrdiff_t at = static_cast<std::ptrdiff_t>(x) - kGuard;
      const int lld = c.desc[8];
      const int i = at >= 0 ? static_cast<int>(at % lld) : -1, j = at >= 0 ? static_cast<int>(at / lld) : -1;
      const bool inside = at >= 0 && i < c.local_rows && j < c.local_cols && in_sub_c(c, i, j);
      bool good;
      if (inside) {
        const double bound = 2 * gamma * static_cast<double>(mag_c.storage[x]) + 4 * std::numeric_limits<R>::min();
        good = std::abs(got - want) <= bound;
      } else {
        const bool both_nan = std::isnan(std::abs(got)) && std::isnan(std::abs(want));
        good = std::memcmp(&got, &want, sizeof got) == 0 || both_nan;
      }
      if (!good) {
        if (reported++ < 3)
          std::fprintf(stderr, "rank %d: %s: local C element %td: weave %.17g, ScaLAPACK %.17g%s\n", g_rank,
                       what.c_str(), at, static_cast<double>(std::abs(got)), static_cast<double>(std::abs(want)),
                       inside ? "" : " (outside sub(C))");
        ok = false;
      }
    }
    if (a.storage != a_before.storage || b.storage != b_before.storage) {
      std::fprintf(stderr, "rank %d: %s: an input changed\n", g_rank, what.c_str());
      ok = false;
    }
  }
  return ok;
}

void check(const char* name, bool ok) {
  const bool all = all_ranks(ok);
  if (!all) ++g_failed;
  if (g_rank == 0) std::printf("%s %s\n", all ? "PASS" : "FAIL", name);
}

// A test in which a process could wait for ever (in a collective that other
// processes never join) fails instead, after `seconds`.
class Watchdog {
 public:
  Watchdog(const char* what, unsigned seconds) {
    s_what = what;
    std::signal(SIGALRM, &Watchdog::fire);
    alarm(seconds);
  }
  ~Watchdog() { alarm(0); }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  static void fire(int) {
    const char text[] = "weave_pblas_test: a process waited too long (watchdog) in: ";
    ssize_t ignored = write(STDERR_FILENO, text, sizeof text - 1);
    ignored = write(STDERR_FILENO, s_what, std::strlen(s_what));
    ignored = write(STDERR_FILENO, "\n", 1);
    (void)ignored;
    _exit(3);
  }
  static inline const char* s_what = "";
};

// C(1:m, 1:n) = A(1:m, :) B(:, 1:n) with A (8 x 6) and B (6 x 7) all ones,
// in blocks of 2, and C 8 x 7 in blocks of c_block, fresh local arrays:
// true when weave_pdgemm succeeded, wrote 6 into sub(C) and nothing else.
bool ones_product(const BlacsGrid& g, int m, int n, int c_block) {
  Distributed<double> a, b, c;
  a.make(g, 8, 6, 2, 2, 0, 0, 0);
  b.make(g, 6, 7, 2, 2, 0, 0, 0);
  c.make(g, 8, 7, c_block, c_block, 0, 0, 0);
  for (int j = 0; j < a.local_cols; ++j)
    for (int i = 0; i < a.local_rows; ++i) a.at(i, j) = 1;
  for (int j = 0; j < b.local_cols; ++j)
    for (int i = 0; i < b.local_rows; ++i) b.at(i, j) = 1;
  std::vector<double> want(c.storage);
  for (int j = 0; j < c.local_cols; ++j)
    for (int i = 0; i < c.local_rows; ++i)
      if (c.global_row(g, i) < m && c.global_col(g, j) < n) want[static_cast<size_t>(kGuard + i + j * c.desc[8])] = 6;
  const int k = 6, one = 1;
  const double alpha = 1, beta = 0;
  const weave_status_t status = weave_pdgemm("N", "N", &m, &n, &k, &alpha, a.data(), &one, &one, a.desc, b.data(),
                                             &one, &one, b.desc, &beta, c.data(), &one, &one, c.desc);
  if (status != WEAVE_SUCCESS) {
    std::fprintf(stderr, "rank %d: ones_product m=%d n=%d: %s\n", g_rank, m, n, weave_pblas_last_error());
    return false;
  }
  if (c.storage != want) {
    std::fprintf(stderr, "rank %d: ones_product m=%d n=%d: C is not as it should be\n", g_rank, m, n);
    return false;
  }
  return true;
}

// What a process outside a grid passes (ScaLAPACK's callers give it
// descriptors of context -1): weave_pdgemm returns WEAVE_SUCCESS at once
// and writes nothing.
bool outside_the_grid() {
  const int desc[9] = {1, -1, 8, 8, 2, 2, 0, 0, 1};
  std::vector<double> a(64, 1), b(64, 1), c(64, kGuardValue);
  const std::vector<double> c_before(c);
  const int m = 8, n = 8, k = 8, one = 1;
  const double alpha = 1, beta = 0;
  const weave_status_t status = weave_pdgemm("N", "N", &m, &n, &k, &alpha, a.data(), &one, &one, desc, b.data(), &one,
                                             &one, desc, &beta, c.data(), &one, &one, desc);
  if (status != WEAVE_SUCCESS || c != c_before) {
    std::fprintf(stderr, "rank %d: outside the grid: status %s%s\n", g_rank, weave_status_string(status),
                 c != c_before ? ", C written" : "");
    return false;
  }
  return true;
}

// Grids over some of the processes: 1 x 1 of process 0, and 1 x (P - 1) of
// processes P - 1, ..., 1 (BLACS_GRIDMAP).
struct SubsetGrid {
  std::string what;
  int nprow, npcol;
  std::vector<int> processes;
};
std::vector<SubsetGrid> subset_grids() {
  std::vector<SubsetGrid> grids{{"1 x 1 grid of process 0", 1, 1, {0}}};
  if (g_size > 2) {
    SubsetGrid rest{"1 x " + std::to_string(g_size - 1) + " grid of processes " + std::to_string(g_size - 1) +
                        " to 1",
                    1, g_size - 1, {}};
    for (int r = g_size - 1; r >= 1; --r) rest.processes.push_back(r);
    grids.push_back(rest);
  } else {
    grids.push_back({"1 x 1 grid of process 1", 1, 1, {1}});
  }
  return grids;
}

// True on every process when some process of `grid` got the context id of
// the grid over all processes freed just before.
bool got_a_freed_id(const BlacsGrid& grid, int freed) {
  int mine = grid.in_grid() && grid.context() == freed ? 1 : 0, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any != 0;
}

// Grids over some of the processes, with the reference BLACS (its
// BLACS_GET(ICTXT, 10, ...) answers the grid's own processes): the grid's
// processes agree with ScaLAPACK on random problems, the others return at
// once, nothing waits for a process outside the grid.
void grids_over_some_processes(std::mt19937_64& rng, int cases) {
  for (const SubsetGrid& s : subset_grids()) {
    const std::string name = "weave_p?gemm agrees with ScaLAPACK on a " + s.what + " of " + std::to_string(g_size) +
                             " processes, " + std::to_string(cases) + " problems; the others return at once";
    Watchdog watchdog(name.c_str(), 120);
    int freed = -1;
    {
      BlacsGrid all(1, g_size, "R");
      freed = all.context();
      check(("a grid over all processes, used and freed before the " + s.what).c_str(), ones_product(all, 8, 7, 2));
    }
    BlacsGrid grid(s.nprow, s.npcol, s.processes);
    std::mt19937_64 local(rng());  // drawn on every process, used on the grid's
    bool ok = true;
    if (grid.in_grid()) {
      for (int i = 0; i < cases; ++i) {
        const bool agreed = i % 2 ? crosscheck<std::complex<double>>(grid, "map", local, 2)
                                  : crosscheck<double>(grid, "map", local, 2);
        ok = agreed && ok;
      }
    } else {
      ok = outside_the_grid();
    }
    check((name + (got_a_freed_id(grid, freed) ? " (context id of the freed grid over all)" : "")).c_str(), ok);
  }
}

// Where BLACS_GET(ICTXT, 10, ...) answers a system context wider than the
// grid (emulated: see Cblacs_get above), weave_p?gemm cannot make a grid of
// the grid's processes alone: WEAVE_ERROR_UNSUPPORTED on each of them, found
// without communicating (the processes outside the grid have returned),
// twice in a row, nothing written; the others return at once. Before it, a
// grid over all processes, used and freed, leaves its Weave grid cached on
// that system context, which must not be used for the smaller grid.
void grids_over_some_processes_refused() {
  for (const SubsetGrid& s : subset_grids()) {
    const std::string name = "a " + s.what + " of " + std::to_string(g_size) +
                             " processes whose system context is all of them (emulated BLACS): "
                             "WEAVE_ERROR_UNSUPPORTED on its processes, nothing written; the others return at once";
    Watchdog watchdog(name.c_str(), 120);
    g_wide_system_context = true;
    int freed = -1;
    {
      BlacsGrid all(1, g_size, "R");
      freed = all.context();
      check(("a grid over all processes (emulated BLACS), used and freed before the " + s.what).c_str(),
            ones_product(all, 8, 7, 2));
    }
    BlacsGrid grid(s.nprow, s.npcol, s.processes);
    bool ok = true;
    if (grid.in_grid()) {
      Distributed<double> a, b, c;
      a.make(grid, 8, 6, 2, 2, 0, 0, 0);
      b.make(grid, 6, 7, 2, 2, 0, 0, 0);
      c.make(grid, 8, 7, 2, 2, 0, 0, 0);
      const std::vector<double> c_before(c.storage);
      const int m = 8, n = 7, k = 6, one = 1;
      const double alpha = 1, beta = 0;
      for (int call = 0; call < 2; ++call) {
        const weave_status_t status = weave_pdgemm("N", "N", &m, &n, &k, &alpha, a.data(), &one, &one, a.desc, b.data(),
                                                   &one, &one, b.desc, &beta, c.data(), &one, &one, c.desc);
        const std::string message = weave_pblas_last_error();
        if (status != WEAVE_ERROR_UNSUPPORTED || message.find("does not span") == std::string::npos ||
            c.storage != c_before) {
          std::fprintf(stderr, "rank %d: %s: call %d: status %s, message \"%s\"%s\n", g_rank, s.what.c_str(), call,
                       weave_status_string(status), message.c_str(), c.storage != c_before ? ", C written" : "");
          ok = false;
        }
      }
    } else {
      ok = outside_the_grid();
    }
    g_wide_system_context = false;
    check((name + (got_a_freed_id(grid, freed) ? " (context id of the freed grid over all)" : "")).c_str(), ok);
  }
}

// The plan cache (weave_pblas_internal.hpp's counters, this process's): a
// call with the arguments of an earlier one makes no plan, other
// descriptors make one, and beyond kCachedPlans the least recently used
// plan goes, not the first made.
void plan_cache(const BlacsGrid& g) {
  using weave_pblas_internal::kCachedPlans;
  using weave_pblas_internal::plan_cache_counters;
  weave_pblas_release();  // an empty cache
  const auto start = plan_cache_counters();
  bool ok = true;
  auto expect = [&](const char* when, std::uint64_t made, std::uint64_t reused, std::uint64_t evicted,
                    std::size_t cached) {
    const auto now = plan_cache_counters();
    const auto d_made = now.made - start.made, d_reused = now.reused - start.reused,
               d_evicted = now.evicted - start.evicted;
    if (d_made != made || d_reused != reused || d_evicted != evicted || now.cached != cached) {
      std::fprintf(stderr,
                   "rank %d: plan cache %s: %llu made, %llu reused, %llu evicted, %zu cached; expected %llu, %llu, "
                   "%llu, %zu\n",
                   g_rank, when, static_cast<unsigned long long>(d_made), static_cast<unsigned long long>(d_reused),
                   static_cast<unsigned long long>(d_evicted), now.cached, static_cast<unsigned long long>(made),
                   static_cast<unsigned long long>(reused), static_cast<unsigned long long>(evicted), cached);
      ok = false;
    }
  };
  // The first call makes a plan; the same arguments (fresh arrays) reuse it.
  ok = ones_product(g, 8, 7, 2) && ok;
  expect("after the first call", 1, 0, 0, 1);
  ok = ones_product(g, 8, 7, 2) && ok;
  expect("after the same call again", 1, 1, 0, 1);
  check("plan cache: weave_pdgemm twice with the same descriptors makes one plan", ok);

  // Other descriptors (C in blocks of 3): a new plan; the first stays.
  ok = ones_product(g, 8, 7, 3) && ok;
  expect("after other descriptors", 2, 1, 0, 2);
  ok = ones_product(g, 8, 7, 2) && ok;
  expect("after the first descriptors again", 2, 2, 0, 2);
  check("plan cache: other descriptors make a new plan, the first stays cached", ok);

  // kCachedPlans - 1 more sets of arguments (other m and n): the cache
  // overflows by one and the least recently used plan goes (C in blocks of
  // 3), not the first made (used since); that one then comes back as a new plan.
  const int more = static_cast<int>(kCachedPlans) - 1;
  for (int i = 1; i <= more; ++i) ok = ones_product(g, 8 - i % 8, 7 - i / 8, 2) && ok;
  expect("after filling the cache", 2 + more, 2, 1, kCachedPlans);
  ok = ones_product(g, 8, 7, 2) && ok;
  expect("after the first plan again", 2 + more, 3, 1, kCachedPlans);
  ok = ones_product(g, 8, 7, 3) && ok;
  expect("after the evicted plan again", 3 + more, 3, 2, kCachedPlans);
  check(("plan cache: beyond " + std::to_string(kCachedPlans) + " plans the least recently used goes").c_str(), ok);
}

// A (8 x 6) and B (6 x 7) of ones, C (8 x 7) of guard values, in blocks of 2.
struct OnesOperands {
  Distributed<double> a, b, c;
  explicit OnesOperands(const BlacsGrid& g) {
    a.make(g, 8, 6, 2, 2, 0, 0, 0);
    b.make(g, 6, 7, 2, 2, 0, 0, 0);
    c.make(g, 8, 7, 2, 2, 0, 0, 0);
    for (double& x : a.storage) x = 1;
    for (double& x : b.storage) x = 1;
  }
  // The arguments of C = A B (for a test to spoil).
  void good_call(Problem& p, int* da, int* db, int* dc) const {
    p.m = 8;
    p.n = 7;
    p.k = 6;
    std::memcpy(da, a.desc, sizeof a.desc);
    std::memcpy(db, b.desc, sizeof b.desc);
    std::memcpy(dc, c.desc, sizeof c.desc);
  }
};

// Arguments ScaLAPACK refuses: an error on every process, nothing written.
void refused_arguments(const BlacsGrid& g) {
  OnesOperands ones(g);
  Distributed<double>& a = ones.a, &b = ones.b, &c = ones.c;
  const std::vector<double> c_before(c.storage);
  const double one = 1, zero = 0;
  struct Bad {
    const char* what;
    const char* words;
    void (*spoil)(Problem&, int*, int*, int*);
  };
  const Bad bad[] = {
      {"descriptor type 2", "DTYPE_", [](Problem&, int* da, int*, int*) { da[0] = 2; }},
      {"another context in DESCB", "CTXT_", [](Problem&, int*, int* db, int*) { db[1] += 1000; }},
      {"block size 0", "MB_", [](Problem&, int*, int*, int* dc) { dc[4] = 0; }},
      {"source row outside the grid", "RSRC_", [](Problem&, int* da, int*, int*) { da[6] = 99; }},
      {"source column -1", "CSRC_", [](Problem&, int*, int* db, int*) { db[7] = -1; }},
      {"LLD too small", "LLD_", [](Problem&, int*, int*, int* dc) { dc[8] = 0; }},
      {"IA past the matrix", "outside", [](Problem& p, int*, int*, int*) { p.ia = 4; }},
      {"JC 0", "start at 1", [](Problem& p, int*, int*, int*) { p.jc = 0; }},
      {"TRANSA 'X'", "TRANSA", [](Problem& p, int*, int*, int*) { p.ta = 'X'; }},
      {"negative K", "negative", [](Problem& p, int*, int*, int*) { p.k = -1; }},
  };
  for (const Bad& x : bad) {
    Problem p;
    int da[9], db[9], dc[9];
    ones.good_call(p, da, db, dc);
    x.spoil(p, da, db, dc);
    // Only the last process makes the mistake where it can be local.
    const bool local = std::string(x.what) == "LLD too small";
    if (local && g_rank != g_size - 1) std::memcpy(dc, c.desc, sizeof dc);
    const weave_status_t status =
        weave_pdgemm(&p.ta, &p.tb, &p.m, &p.n, &p.k, &one, a.data(), &p.ia, &p.ja, da, b.data(), &p.ib, &p.jb, db,
                     &zero, c.data(), &p.ic, &p.jc, dc);
    const std::string message = weave_pblas_last_error();
    bool ok = status == WEAVE_ERROR_INVALID_VALUE && message.find(x.words) != std::string::npos &&
              c.storage == c_before;
    if (!ok)
      std::fprintf(stderr, "rank %d: %s: status %s, message \"%s\"\n", g_rank, x.what, weave_status_string(status),
                   message.c_str());
    check((std::string("refused: ") + x.what).c_str(), ok);
  }
}


// Processes that disagree: an argument NULL on one process only (the others
// learn it in the agreement), and arguments that differ between processes
// (M = 0 on the last only, which alone would return at once; another
// routine), each a status on every process with nothing written; then the
// grid still serves a good call.
void disagreeing_processes(const BlacsGrid& g) {
  OnesOperands ones(g);
  Distributed<double>& a = ones.a, &b = ones.b, &c = ones.c;
  const std::vector<double> c_before(c.storage);
  const double one = 1, zero = 0;
  const float one_f = 1, zero_f = 0;
  const bool last = g_rank == g_size - 1;
  struct Case {
    const char* what;
    weave_status_t expect;
    const char* words;
  };
  const Case cases[] = {
      {"NULL DESCA on the last process only", WEAVE_ERROR_NULL_ARGUMENT, "argument 10 (DESCA) is NULL"},
      {"NULL BETA on the last process only", WEAVE_ERROR_NULL_ARGUMENT, "argument 15 (BETA) is NULL"},
      {"M = 0 on the last process only", WEAVE_ERROR_RANK_MISMATCH, "M differs"},
      {"K = 5 on the last process only", WEAVE_ERROR_RANK_MISMATCH, "K differs"},
      {"N = 6 on the last process only", WEAVE_ERROR_RANK_MISMATCH, "N differs"},
      {"DESCC(MB_) = 4 on the last process only", WEAVE_ERROR_RANK_MISMATCH, "DESCC(MB_) differs"},
      {"weave_psgemm on the last process only", WEAVE_ERROR_RANK_MISMATCH, "the routine differs"},
  };
  Watchdog watchdog("weave_pdgemm with processes that disagree", 120);
  for (size_t i = 0; i < std::size(cases); ++i) {
    if (g_size == 1 && i + 1 == std::size(cases)) continue;  // weave_psgemm alone, on NULL arrays
    Problem p;
    int da[9], db[9], dc[9];
    ones.good_call(p, da, db, dc);
    const int* pda = da;
    const double* pbeta = &zero;
    bool single = false;
    if (last) {
      switch (i) {
        case 0: pda = nullptr; break;
        case 1: pbeta = nullptr; break;
        case 2: p.m = 0; break;
        case 3: p.k = 5; break;  // B's rows and A's columns stay 6: valid on its own
        case 4: p.n = 6; break;
        case 5: dc[4] = 4; break;
        default: single = true; break;
      }
    }
    weave_status_t status;
    if (single) {  // (the arrays are never read: the processes disagree before)
      status = weave_psgemm(&p.ta, &p.tb, &p.m, &p.n, &p.k, &one_f, nullptr, &p.ia, &p.ja, da, nullptr, &p.ib,
                            &p.jb, db, &zero_f, nullptr, &p.ic, &p.jc, dc);
    } else {
      status = weave_pdgemm(&p.ta, &p.tb, &p.m, &p.n, &p.k, &one, a.data(), &p.ia, &p.ja, pda, b.data(), &p.ib,
                            &p.jb, db, pbeta, c.data(), &p.ic, &p.jc, dc);
    }
    const std::string message = weave_pblas_last_error();
    // A single process has nothing to disagree with: its call is valid, or
    // fails on its own NULL argument.
    const weave_status_t expect = g_size > 1 || cases[i].expect == WEAVE_ERROR_NULL_ARGUMENT
                                      ? cases[i].expect
                                      : WEAVE_SUCCESS;
    bool ok = status == expect && (expect == WEAVE_SUCCESS || message.find(cases[i].words) != std::string::npos);
    if (expect != WEAVE_SUCCESS) ok = ok && c.storage == c_before;
    if (!ok)
      std::fprintf(stderr, "rank %d: %s: status %s (expected %s), message \"%s\"\n", g_rank, cases[i].what,
                   weave_status_string(status), weave_status_string(expect), message.c_str());
    check((std::string("processes disagree: ") + cases[i].what).c_str(), ok);
    c.storage = c_before;
  }
  check("processes disagree: the grid then serves a good call", ones_product(g, 8, 7, 2));

  // TRANSA 'C' on the last process, 'T' on the others: the same for a real
  // type, so not a mismatch (C = A^T B of ones: 6 everywhere).
  Distributed<double> at;
  at.make(g, 6, 8, 2, 2, 0, 0, 0);
  for (double& x : at.storage) x = 1;
  const int m = 8, n = 7, k = 6, one_i = 1;
  const char ta = last ? 'C' : 'T';
  const weave_status_t status = weave_pdgemm(&ta, "N", &m, &n, &k, &one, at.data(), &one_i, &one_i, at.desc, b.data(),
                                             &one_i, &one_i, b.desc, &zero, c.data(), &one_i, &one_i, c.desc);
  bool ok = status == WEAVE_SUCCESS;
  for (int j = 0; j < c.local_cols; ++j)
    for (int i = 0; i < c.local_rows; ++i) ok = ok && c.at(i, j) == 6;
  if (!ok)
    std::fprintf(stderr, "rank %d: TRANSA 'C' and 'T': status %s, %s\n", g_rank, weave_status_string(status),
                 weave_pblas_last_error());
  check("processes disagree: TRANSA 'C' on one process, 'T' on the others, is the same for pdgemm", ok);
}

// A process that does not call: the others give up after WEAVE_TIMEOUT
// with WEAVE_ERROR_TIMEOUT (not a hang), and drop the grid; the late one,
// calling after them, finds no partner either and gives up too; after
// BLACS_GRIDEXIT a new grid serves a good call.
void a_process_that_does_not_call() {
  if (g_size < 2) return;
  const char* saved = std::getenv("WEAVE_TIMEOUT");
  const std::string restore = saved ? saved : "";
  setenv("WEAVE_TIMEOUT", "2", 1);
  {
    BlacsGrid g(1, g_size, "R");
    Watchdog watchdog("weave_pdgemm with a process that does not call", 60);
    check("a process that does not call: first a good call", ones_product(g, 8, 7, 2));
    const bool late = g_rank == g_size - 1;
    weave_status_t status = WEAVE_SUCCESS;
    std::string message;
    auto call = [&] {
      Distributed<double> a, b, c;
      a.make(g, 8, 6, 2, 2, 0, 0, 0);
      b.make(g, 6, 7, 2, 2, 0, 0, 0);
      c.make(g, 8, 7, 2, 2, 0, 0, 0);
      const int m = 8, n = 7, k = 6, one_i = 1;
      const double one = 1, zero = 0;
      status = weave_pdgemm("N", "N", &m, &n, &k, &one, a.data(), &one_i, &one_i, a.desc, b.data(), &one_i, &one_i,
                            b.desc, &zero, c.data(), &one_i, &one_i, c.desc);
      message = weave_pblas_last_error();
    };
    if (!late) call();
    MPI_Barrier(MPI_COMM_WORLD);
    if (late) call();
    const bool ok = status == WEAVE_ERROR_TIMEOUT;
    if (!ok)
      std::fprintf(stderr, "rank %d: a process that does not call: status %s, message \"%s\"\n", g_rank,
                   weave_status_string(status), message.c_str());
    check("a process that does not call: every process gives up with WEAVE_ERROR_TIMEOUT", ok);
  }
  if (saved)
    setenv("WEAVE_TIMEOUT", restore.c_str(), 1);
  else
    unsetenv("WEAVE_TIMEOUT");
  BlacsGrid fresh(1, g_size, "R");
  check("a process that does not call: a new grid then serves a good call", ones_product(fresh, 8, 7, 2));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  unsigned long long seed = 0;
  int cases = 12;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::string(argv[i]) == "--cases") cases = std::atoi(argv[i + 1]);
  }
  if (seed == 0) seed = (static_cast<unsigned long long>(std::random_device{}()) << 32) ^ std::random_device{}();
  MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("weave_pblas_test on %d processes, seed %llu\n", g_size, seed);
  std::mt19937_64 rng(seed);
  for (int rows = 1; rows <= g_size; ++rows) {
    if (g_size % rows) continue;
    for (const char* order : {"R", "C"}) {
      BlacsGrid grid(rows, g_size / rows, order);
      int passed = 0;
      for (int i = 0; i < cases; ++i) {
        const int repeats = 1 + i % 3 / 2;
        bool ok = false;
        switch (i % 6) {
          case 1:
          case 4: ok = crosscheck<std::complex<double>>(grid, order, rng, repeats); break;
          case 5: ok = crosscheck<std::complex<float>>(grid, order, rng, repeats); break;
          case 3: ok = crosscheck<float>(grid, order, rng, repeats); break;
          default: ok = crosscheck<double>(grid, order, rng, repeats); break;
        }
        passed += all_ranks(ok) ? 1 : 0;
      }
      const std::string name = "weave_p?gemm agrees with ScaLAPACK on a " + std::to_string(rows) + " x " +
                               std::to_string(g_size / rows) + " grid (" + order + "), " + std::to_string(cases) +
                               " problems";
      check(name.c_str(), passed == cases);
    }
  }
  {
    BlacsGrid grid(g_size % 2 == 0 ? 2 : 1, g_size % 2 == 0 ? g_size / 2 : g_size, "R");
    refused_arguments(grid);
    disagreeing_processes(grid);
  }
  a_process_that_does_not_call();
  if (g_size > 1) {
    grids_over_some_processes(rng, 4);
    grids_over_some_processes_refused();
  } else if (g_rank == 0) {
    std::printf("(grids over some of the processes: at 2 processes or more)\n");
  }
  {
    BlacsGrid grid(g_size % 2 == 0 ? 2 : 1, g_size % 2 == 0 ? g_size / 2 : g_size, "R");
    plan_cache(grid);
  }
  weave_pblas_release();
  if (g_rank == 0) std::printf("%s (seed %llu)\n", g_failed ? "FAILED" : "PASSED", seed);
  MPI_Finalize();
  return g_failed ? 1 : 0;
}
