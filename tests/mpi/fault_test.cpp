// Fault tests: what the ranks of a job get when a peer is late, never comes
// or is killed. Every scenario must end in an error on the ranks that waited,
// within the timeout, never in a crash, a hang or a wrong result; the
// documented recovery (destroy the plan, or the grid, and create a new one)
// must then work, followed by more MPI calls and more Weave calls with every
// rank, the late one included.
//
// Usage: weave_fault_test <scenario>, one scenario per run:
//   late-execute     a peer arrives after the others timed out in the
//                    per-execute argument check
//   late-kept        as late-execute, but the others keep the plan: the
//                    late rank gets an error, every rank's next execute
//                    WEAVE_ERROR_PLAN_FAILED at once, writing nothing
//   late-collective  a peer arrives after the others timed out in a
//                    sequential plan's collective (no execute check)
//   slow-gemm        a peer's own GEMM takes longer than the timeout while
//                    every rank is healthy: every rank succeeds
//   absent-creation  a peer never comes to grid, matrix or plan creation
//   skipped-call     a peer skips plan creation and creates a matrix while
//                    the others create the plan: every rank gets
//                    WEAVE_ERROR_RANK_MISMATCH naming both calls, at once
//                    (not a crash in MPI, not a timeout), and the grid goes on
//   warning          the one-line warning while a rank waits for a peer
//   plan-memory      a rank runs out of memory while plan creation times
//                    the plan's candidates: the same status everywhere, soon
//   killed           a rank is killed mid-execute (run with mpirun's
//                    --enable-recovery); the survivors report alone
//
// Prints PASS or FAIL per check and "N passed, N failed"; exit code 1 if
// any check failed. A watchdog ends a run that hangs with exit code 3.
#include <mpi.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "weave/weave.h"

namespace {

int g_rank = 0, g_size = 1;
bool g_ok = true;

void fail_here(const std::string& what) {
  g_ok = false;
  std::fprintf(stderr, "rank %d: %s\n", g_rank, what.c_str());
  std::fflush(stderr);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void sleep_seconds(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

// Ends the process if a scenario hangs, so a hang is a failure, not a
// ctest timeout.
void start_watchdog(double seconds) {
  std::thread([seconds] {
    sleep_seconds(seconds);
    std::fprintf(stderr, "rank %d: FAIL: the scenario still runs after %.0f s (a hang)\n", g_rank, seconds);
    std::fflush(stderr);
    _exit(3);
  }).detach();
}

// A handle that destroys itself (reset() destroys it early).
template <class Handle, weave_status_t (*destroy)(Handle)>
struct Owned {
  Handle h = nullptr;
  ~Owned() { reset(); }
  void reset() {
    destroy(h);
    h = nullptr;
  }
};
using Grid = Owned<weave_grid_t, weave_grid_destroy>;
using Matrix = Owned<weave_matrix_t, weave_matrix_destroy>;
using Plan = Owned<weave_plan_t, weave_plan_destroy>;

bool require_ok(weave_status_t s, const char* what) {
  if (s == WEAVE_SUCCESS) return true;
  fail_here(std::string(what) + " failed: " + weave_status_string(s) + ": " + weave_last_error());
  return false;
}

// Checks a status that must be an error of kind `want`, returned between
// `low` and `high` seconds, with each of `words` in the message.
void expect_error(weave_status_t got, weave_status_t want, double seconds, double low, double high,
                  const std::vector<std::string>& words, const std::string& call) {
  const std::string message = weave_last_error();
  if (got != want) {
    fail_here(call + " returned " + weave_status_string(got) + ", expected " + weave_status_string(want) +
              " (message: \"" + message + "\")");
    return;
  }
  if (seconds < low || seconds > high)
    fail_here(call + " returned after " + std::to_string(seconds) + " s, expected between " + std::to_string(low) +
              " and " + std::to_string(high) + " s");
  for (const std::string& w : words)
    if (message.find(w) == std::string::npos) fail_here(call + ": message \"" + message + "\" does not mention \"" + w + "\"");
}

weave_matrix_desc_t desc_of(int64_t rows, int64_t cols, weave_distribution_t dist) {
  weave_matrix_desc_t d{};
  d.rows = rows;
  d.cols = cols;
  d.dtype = WEAVE_FLOAT64;
  d.distribution = dist;
  return d;
}

// GEMM-AR operands: A M x K block-column, B K x N block-row (K split by
// `k_counts`, or balanced), C M x N replicated.
struct Operands {
  Matrix a, b, c;
  int64_t m = 0, n = 0, k = 0;
};

bool make_gemm_ar(weave_grid_t grid, int64_t m, int64_t n, const std::vector<int64_t>& k_counts, Operands* o) {
  o->m = m;
  o->n = n;
  o->k = 0;
  for (int64_t c : k_counts) o->k += c;
  weave_matrix_desc_t a = desc_of(m, o->k, WEAVE_DIST_BLOCK_COLUMN), b = desc_of(o->k, n, WEAVE_DIST_BLOCK_ROW),
                      c = desc_of(m, n, WEAVE_DIST_REPLICATED);
  a.col_counts = k_counts.data();
  b.row_counts = k_counts.data();
  return require_ok(weave_matrix_create(grid, &a, &o->a.h), "weave_matrix_create(A)") &&
         require_ok(weave_matrix_create(grid, &b, &o->b.h), "weave_matrix_create(B)") &&
         require_ok(weave_matrix_create(grid, &c, &o->c.h), "weave_matrix_create(C)");
}

std::vector<int64_t> balanced(int64_t per_rank) { return std::vector<int64_t>(static_cast<size_t>(g_size), per_rank); }

weave_plan_desc_t gemm_ar_desc(const Operands& o, int32_t timeout_ms, weave_algorithm_t algorithm, int32_t flags) {
  weave_plan_desc_t d{};
  d.operation = WEAVE_GEMM_AR;
  d.a = o.a.h;
  d.b = o.b.h;
  d.c = o.c.h;
  d.timeout_ms = timeout_ms;
  d.algorithm = algorithm;
  d.flags = flags;
  return d;
}

std::vector<double> local(weave_matrix_t m, double value) {
  int64_t elements = 0;
  weave_matrix_local_elements(m, &elements);
  return std::vector<double>(static_cast<size_t>(std::max<int64_t>(elements, 1)), value);
}

// All-ones A and B: C = K everywhere, exactly.
struct Buffers {
  std::vector<double> a, b, c;
};
Buffers ones(const Operands& o) { return {local(o.a.h, 1.0), local(o.b.h, 1.0), local(o.c.h, NAN)}; }

weave_status_t execute(weave_plan_t plan, Buffers& x) {
  return weave_execute(plan, 1.0, x.a.data(), x.b.data(), 0.0, x.c.data(), nullptr, nullptr);
}

bool c_is(const Buffers& x, double want, const std::string& when) {
  for (double v : x.c)
    if (v != want) {
      fail_here(when + ": C holds " + std::to_string(v) + ", expected " + std::to_string(want));
      return false;
    }
  return true;
}

// The recovery everyone takes part in, the late rank included: MPI calls,
// then a new plan over the same grid that executes correctly.
void recover_and_execute(weave_grid_t grid, const char* when) {
  MPI_Barrier(MPI_COMM_WORLD);
  int mine = g_rank, sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (sum != g_size * (g_size - 1) / 2) fail_here(std::string(when) + ": MPI_Allreduce after the recovery is wrong");
  Operands o;
  if (!make_gemm_ar(grid, 7, 5, balanced(3), &o)) return;
  const weave_plan_desc_t d = gemm_ar_desc(o, 30000, WEAVE_ALGORITHM_AUTO, 0);
  Plan p;
  if (!require_ok(weave_plan_create(grid, &d, &p.h), (std::string(when) + ": weave_plan_create after the recovery").c_str()))
    return;
  for (int i = 0; i < 2; ++i) {
    Buffers x = ones(o);
    if (!require_ok(execute(p.h, x), (std::string(when) + ": weave_execute after the recovery").c_str())) return;
    c_is(x, static_cast<double>(o.k), std::string(when) + ": execute after the recovery");
  }
}

// ---------------------------------------------------------------------------
// Scenarios.

constexpr int kLate = 0;  // the rank that comes late

// Rank kLate executes 1.8 s after the others, whose timeout is 1 s: they
// must fail with a message holding `words`, and the late rank too, never
// with SUCCESS.
void late_rank_executes(weave_plan_t plan, Buffers& x, const std::vector<std::string>& words) {
  if (g_rank == kLate) sleep_seconds(1.8);
  const auto start = std::chrono::steady_clock::now();
  const weave_status_t s = execute(plan, x);
  if (g_rank == kLate)  // the others gave up long ago: an error, at once or after the timeout
    expect_error(s, WEAVE_ERROR_TIMEOUT, seconds_since(start), 0.0, 4.0, {}, "the late rank's execute");
  else
    expect_error(s, WEAVE_ERROR_TIMEOUT, seconds_since(start), 0.9, 4.0, words, "execute without the late rank");
}

// The others time out in the per-execute argument check; the late rank
// must get an error, not SUCCESS. Then either every rank destroys the plan
// as documented and goes on, or (`keep_plan`) keeps it: from then on every
// rank's execute of it is WEAVE_ERROR_PLAN_FAILED at once, with C
// untouched, never a result computed without the others; destroying it
// later and creating a new plan is the recovery.
void late_execute(weave_grid_t grid, bool keep_plan) {
  Operands o;
  if (!make_gemm_ar(grid, 6, 4, balanced(2), &o)) return;
  const weave_plan_desc_t d = gemm_ar_desc(o, 1000, WEAVE_ALGORITHM_AUTO, 0);
  Plan p;
  if (!require_ok(weave_plan_create(grid, &d, &p.h), "weave_plan_create")) return;
  Buffers x = ones(o);
  if (!require_ok(execute(p.h, x), "the first execute")) return;
  c_is(x, static_cast<double>(o.k), "the first execute");

  x = ones(o);
  late_rank_executes(p.h, x, {"did not arrive", "group rank " + std::to_string(kLate)});
  for (int again = 0; keep_plan && again < 2; ++again) {
    Buffers y = ones(o);
    const auto start = std::chrono::steady_clock::now();
    const weave_status_t s = execute(p.h, y);
    expect_error(s, WEAVE_ERROR_PLAN_FAILED, seconds_since(start), 0.0, 0.5, {"destroy"},
                 "an execute of the kept plan after the timeout");
    if (std::any_of(y.c.begin(), y.c.end(), [](double v) { return !std::isnan(v); }))
      fail_here("an execute of the kept plan after the timeout wrote C");
  }
  p.reset();  // the documented recovery
  recover_and_execute(grid, keep_plan ? "late peer in the argument check, plan kept"
                                      : "late peer in the argument check");
}

// A sequential plan without the execute check: the others time out in the
// all-reduce while the late rank has not come; its partial sums (8 MiB in
// the plan's workspace) arrive after the plan was destroyed.
void late_collective(weave_grid_t grid) {
  Operands o;
  if (!make_gemm_ar(grid, 1024, 1024, balanced(2), &o)) return;
  const weave_plan_desc_t d = gemm_ar_desc(o, 1000, WEAVE_ALGORITHM_SEQUENTIAL, WEAVE_FLAG_NO_EXECUTE_CHECK);
  Plan p;
  if (!require_ok(weave_plan_create(grid, &d, &p.h), "weave_plan_create")) return;
  {
    Buffers x = ones(o);
    late_rank_executes(p.h, x, {"all-reduce"});
    p.reset();  // the documented recovery; the buffers go too
  }
  recover_and_execute(grid, "late peer in a collective");
}

// Every rank is healthy, but rank 0 owns nearly all of K, so its GEMM takes
// longer than the timeout: every rank must succeed, with the right C.
void slow_gemm(weave_grid_t grid) {
  struct Variant {
    weave_algorithm_t algorithm;
    weave_progress_t progress;
    const char* name;
  };
  const Variant variants[] = {{WEAVE_ALGORITHM_SEQUENTIAL, WEAVE_PROGRESS_TILES, "sequential, tiles"},
                              {WEAVE_ALGORITHM_RING, WEAVE_PROGRESS_TILES, "ring, tiles"},
                              {WEAVE_ALGORITHM_SEQUENTIAL, WEAVE_PROGRESS_THREAD, "sequential, thread"},
                              {WEAVE_ALGORITHM_RING, WEAVE_PROGRESS_THREAD, "ring, thread"}};
  const int64_t m = 512, n = 512;
  // Grow rank 0's share of K until its execute takes at least 1.6 s, so that
  // the timeouts below stay long against a loaded machine's scheduling
  // delays (a rank that is not scheduled sends no "still working" notice).
  auto timed_execute = [&](int64_t k0, const Variant& v, int32_t timeout_ms, weave_status_t* status) {
    std::vector<int64_t> counts = balanced(1);
    counts[0] = k0;
    Operands o;
    if (!make_gemm_ar(grid, m, n, counts, &o)) return -1.0;
    weave_plan_desc_t d = gemm_ar_desc(o, timeout_ms, v.algorithm, 0);
    d.progress = v.progress;
    Plan p;
    if (!require_ok(weave_plan_create(grid, &d, &p.h), v.name)) return -1.0;
    Buffers x = ones(o);
    MPI_Barrier(MPI_COMM_WORLD);  // every rank starts together: only the GEMMs differ
    const auto start = std::chrono::steady_clock::now();
    *status = execute(p.h, x);
    const double took = seconds_since(start);
    if (*status == WEAVE_SUCCESS) c_is(x, static_cast<double>(o.k), v.name);
    double slowest = 0.0;
    MPI_Allreduce(&took, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
  };
  int64_t k0 = 2048;
  for (;;) {
    weave_status_t s = WEAVE_SUCCESS;
    const double slow = timed_execute(k0, variants[0], 120000, &s);
    if (!require_ok(s, "execute (calibration)") || slow >= 1.6 || k0 >= 131072) break;
    k0 *= 2;
  }
  for (const Variant& v : variants) {
    // This variant's time with a long timeout, then again with a timeout
    // of 40% of it.
    weave_status_t s = WEAVE_SUCCESS;
    const double slow = timed_execute(k0, v, 120000, &s);
    if (!require_ok(s, v.name)) return;
    // A loaded machine can make the second run much faster than the first:
    // then try again with a timeout cut to 40% of that run.
    int timeout_ms = std::max(400, static_cast<int>(slow * 1000 * 0.4));
    for (int attempt = 0;; ++attempt) {
      const double took = timed_execute(k0, v, timeout_ms, &s);
      if (g_rank == 0)
        std::printf("     %s: rank 0's share of K %lld, execute %.2f s, then %.2f s with a timeout of %d ms\n", v.name,
                    static_cast<long long>(k0), slow, took, timeout_ms);
      if (s != WEAVE_SUCCESS) {
        fail_here(std::string(v.name) + ": execute returned " + weave_status_string(s) + " with healthy peers: " +
                  weave_last_error());
        break;
      }
      if (took * 1000 >= timeout_ms * 1.1) break;
      if (attempt == 3) {
        fail_here(std::string(v.name) + ": the execute never took clearly longer than the timeout: the check proves "
                  "nothing");
        break;
      }
      timeout_ms = std::max(200, static_cast<int>(took * 1000 * 0.4));
    }
  }
}

// The last rank never takes part; the others must give up within the
// timeout, naming it.
void absent_creation() {
  const int absent = g_size - 1;
  const std::string named = "rank " + std::to_string(absent);
  setenv("WEAVE_TIMEOUT", "1", 1);
  // Grid creation, on a communicator of its own: what stays pending on it
  // after the timeout is never matched.
  {
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (g_rank != absent) {
      Grid g;
      const auto start = std::chrono::steady_clock::now();
      const weave_status_t s = weave_grid_create(comm, g_size, 1, &g.h);
      expect_error(s, WEAVE_ERROR_TIMEOUT, seconds_since(start), 0.9, 4.0, {"weave_grid_create"},
                   "weave_grid_create without the last rank");
      if (g.h) fail_here("a failed weave_grid_create left a handle");
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  // Matrix creation and plan creation, each on a grid of its own.
  for (int call = 0; call < 2; ++call) {
    Grid g;
    if (!require_ok(weave_grid_create(MPI_COMM_WORLD, g_size, 1, &g.h), "weave_grid_create")) return;
    Operands o;
    if (call == 1 && !make_gemm_ar(g.h, 4, 4, balanced(2), &o)) return;
    if (g_rank != absent) {
      const auto start = std::chrono::steady_clock::now();
      weave_status_t s;
      const char* what;
      if (call == 0) {
        const weave_matrix_desc_t d = desc_of(4 * g_size, 4, WEAVE_DIST_BLOCK_ROW);
        Matrix m;
        s = weave_matrix_create(g.h, &d, &m.h);
        what = "weave_matrix_create";
      } else {
        const weave_plan_desc_t d = gemm_ar_desc(o, 1000, WEAVE_ALGORITHM_AUTO, 0);
        Plan p;
        s = weave_plan_create(g.h, &d, &p.h);
        what = "weave_plan_create";
      }
      expect_error(s, WEAVE_ERROR_TIMEOUT, seconds_since(start), 0.9, 4.0, {what, "did not arrive", named},
                   std::string(what) + " without the last rank");
      // The grid is unusable now, and says so.
      const weave_matrix_desc_t d = desc_of(4, 4, WEAVE_DIST_REPLICATED);
      Matrix m;
      const auto again = std::chrono::steady_clock::now();
      expect_error(weave_matrix_create(g.h, &d, &m.h), WEAVE_ERROR_TIMEOUT, seconds_since(again), 0.0, 0.5,
                   {"destroy the grid"}, "weave_matrix_create on the grid that timed out");
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  unsetenv("WEAVE_TIMEOUT");
  // A new grid and plan over every rank work.
  Grid g;
  if (!require_ok(weave_grid_create(MPI_COMM_WORLD, g_size, 1, &g.h), "weave_grid_create after the timeouts")) return;
  recover_and_execute(g.h, "after the creation timeouts");
}

void skipped_call() {
  Grid g;
  if (!require_ok(weave_grid_create(MPI_COMM_WORLD, g_size, 1, &g.h), "weave_grid_create")) return;
  // The first rank skips, then the last: the check must not depend on
  // which rank's call the others compare with.
  for (const int skipper : {0, g_size - 1}) {
    Operands o;
    if (!make_gemm_ar(g.h, 4, 4, balanced(2), &o)) return;
    const auto start = std::chrono::steady_clock::now();
    weave_status_t s;
    std::string what;
    if (g_rank == skipper) {
      const weave_matrix_desc_t d = desc_of(4 * g_size, 4, WEAVE_DIST_BLOCK_ROW);
      Matrix m;
      s = weave_matrix_create(g.h, &d, &m.h);
      what = "weave_matrix_create of a rank that skipped weave_plan_create";
      if (m.h) fail_here("a failed weave_matrix_create left a handle");
    } else {
      const weave_plan_desc_t d = gemm_ar_desc(o, 5000, WEAVE_ALGORITHM_AUTO, 0);
      Plan p;
      s = weave_plan_create(g.h, &d, &p.h);
      what = "weave_plan_create while rank " + std::to_string(skipper) + " creates a matrix";
      if (p.h) fail_here("a failed weave_plan_create left a handle");
    }
    expect_error(s, WEAVE_ERROR_RANK_MISMATCH, seconds_since(start), 0.0, 2.0,
                 {"weave_matrix_create", "weave_plan_create", "same collective calls"}, what);
    // The ranks' calls are aligned again: the grid still works.
    const weave_matrix_desc_t d = desc_of(4 * g_size, 4, WEAVE_DIST_BLOCK_ROW);
    Matrix m;
    require_ok(weave_matrix_create(g.h, &d, &m.h), "weave_matrix_create after the mismatched calls");
  }
  recover_and_execute(g.h, "after the mismatched calls");
}

// The address space this process has mapped, in bytes (0: unknown).
long long mapped_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmSize:", 0) == 0) return std::atoll(line.c_str() + 7) * 1024;
  return 0;
}

// The last rank runs out of memory during plan creation: its address space
// is capped a little above what it maps, at several heights, so that an
// allocation fails there and nowhere else — in the calibration, in the
// scratch buffers or workspaces of the candidates that WEAVE_CALIBRATE=time
// times (C alone, M x N doubles, is 128 MiB), in the plan's own workspace,
// or nowhere. Every rank must return from plan creation within a few
// seconds (not after the 60 s timeout, not hang) with the same status, the
// capped rank's (out of memory), not a timeout;
// where that is success, the plan must compute C exactly. Then the cap is
// lifted and a new plan works.
void plan_memory() {
  setenv("WEAVE_CALIBRATE", "time", 1);
  const int64_t m = 4096, n = 4096;
  const int capped = g_size - 1;
  struct rlimit before{};
  getrlimit(RLIMIT_AS, &before);
  // First (headroom 0) the same plan with no cap, so that BLAS has its
  // buffers: OpenBLAS retries a failed allocation of its own forever, a hang
  // no timeout of Weave's can end (what the caps test is Weave's
  // allocations).
  for (const long long headroom_mib : {0LL, 48LL, 240LL, 336LL, 400LL, 560LL}) {
    Grid g;  // a grid of its own: nothing calibrated yet
    if (!require_ok(weave_grid_create(MPI_COMM_WORLD, g_size, 1, &g.h), "weave_grid_create")) return;
    Operands o;
    if (!make_gemm_ar(g.h, m, n, balanced(4), &o)) return;
    const weave_plan_desc_t d = gemm_ar_desc(o, 60000, WEAVE_ALGORITHM_AUTO, 0);
    Plan p;
    bool capped_now = false;
    if (g_rank == capped && headroom_mib > 0) {
      const long long now = mapped_bytes();
      if (now <= 0) {
        fail_here("cannot read VmSize from /proc/self/status");
      } else {
        struct rlimit cap = before;
        cap.rlim_cur = static_cast<rlim_t>(now + (headroom_mib << 20));
        capped_now = setrlimit(RLIMIT_AS, &cap) == 0;
        if (!capped_now) fail_here("setrlimit(RLIMIT_AS) failed");
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    const weave_status_t s = weave_plan_create(g.h, &d, &p.h);
    const double took = seconds_since(start);
    const std::string message = weave_last_error();
    if (capped_now) setrlimit(RLIMIT_AS, &before);
    int codes[2] = {static_cast<int>(s), -static_cast<int>(s)}, most[2] = {0, 0};
    MPI_Allreduce(codes, most, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    const std::string when = headroom_mib > 0 ? "headroom " + std::to_string(headroom_mib) + " MiB" : "no cap";
    if (headroom_mib == 0) require_ok(s, "weave_plan_create with no cap");
    if (most[0] != -most[1]) fail_here(when + ": plan creation returned different statuses on different ranks");
    if (took > 20) fail_here(when + ": plan creation took " + std::to_string(took) + " s with one rank out of memory");
    // Out of memory in Weave's allocations, or in MPI's own (MPI_ERR_INTERN
    // from a collective that could not allocate): the cause, not a timeout.
    if (s != WEAVE_SUCCESS && s != WEAVE_ERROR_OUT_OF_MEMORY && s != WEAVE_ERROR_MPI)
      fail_here(when + ": plan creation returned " + weave_status_string(s) + ": " + message);
    if (g_rank == capped)
      std::printf("     %s on rank %d: plan creation %s after %.2f s%s%s\n", when.c_str(), g_rank,
                  weave_status_string(s), took, s == WEAVE_SUCCESS ? "" : ": ", s == WEAVE_SUCCESS ? "" : message.c_str());
    if (s == WEAVE_SUCCESS) {
      std::string what;
      if (g_rank == capped) {
        const char* text = nullptr;
        if (weave_plan_describe(p.h, &text) == WEAVE_SUCCESS && text) what = text;
        const auto at = what.find("not timed");
        std::printf("     %s\n", at == std::string::npos ? "(timed)" : what.substr(at, what.find(';', at) - at).c_str());
      }
      Buffers x = ones(o);
      if (require_ok(execute(p.h, x), (when + ": execute").c_str())) c_is(x, static_cast<double>(o.k), when + ": execute");
    }
    std::fflush(stdout);
  }
  unsetenv("WEAVE_CALIBRATE");
  Grid g;
  if (!require_ok(weave_grid_create(MPI_COMM_WORLD, g_size, 1, &g.h), "weave_grid_create after the cap")) return;
  recover_and_execute(g.h, "after one rank ran out of memory");
}

// Reads what this process writes to stderr while `body` runs.
std::string capture_stderr(const std::function<void()>& body) {
  char path[] = "/tmp/weave_fault_test_stderr_XXXXXX";
  const int file = mkstemp(path);
  if (file < 0) return "(mkstemp failed)";
  std::fflush(stderr);
  const int saved = dup(2);
  dup2(file, 2);
  body();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(file);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  return text.str();
}

// WEAVE_WAIT_WARNING=0.3: a rank that waits longer says so once on stderr,
// naming whom it waits for; the late rank comes within the timeout and every
// rank succeeds.
void warning(weave_grid_t grid) {
  setenv("WEAVE_WAIT_WARNING", "0.3", 1);
  Operands o;
  if (!make_gemm_ar(grid, 6, 4, balanced(2), &o)) return;
  const weave_plan_desc_t d = gemm_ar_desc(o, 5000, WEAVE_ALGORITHM_AUTO, 0);
  Plan p;
  if (!require_ok(weave_plan_create(grid, &d, &p.h), "weave_plan_create")) return;
  Buffers x = ones(o);
  weave_status_t s = WEAVE_SUCCESS;
  const std::string text = capture_stderr([&] {
    if (g_rank == kLate) sleep_seconds(1.2);
    s = execute(p.h, x);
  });
  unsetenv("WEAVE_WAIT_WARNING");
  if (!require_ok(s, "execute with a peer 1.2 s late")) return;
  c_is(x, static_cast<double>(o.k), "execute with a peer 1.2 s late");
  if (g_rank != kLate) {
    const std::string want[] = {"weave: rank " + std::to_string(g_rank) + " has waited", "weave_execute",
                                "group rank " + std::to_string(kLate), "timeout in"};
    for (const std::string& w : want)
      if (text.find(w) == std::string::npos) fail_here("the warning on stderr (\"" + text + "\") lacks \"" + w + "\"");
    int lines = 0;
    for (char c : text) lines += c == '\n';
    if (lines != 1) fail_here("expected one warning line on stderr, got: \"" + text + "\"");
  } else if (text.find("has waited") != std::string::npos) {
    fail_here("the late rank warned although it waited for nobody: \"" + text + "\"");
  }
}

// The last rank is killed while it multiplies; the survivors must end in an
// error within the timeout. Every survivor reports for itself: the job has
// lost a rank, so no collective over all of it can run any more.
int killed(weave_grid_t grid) {
  const int victim = g_size - 1;
  // A GEMM-AR whose victim owns `share` of K, the others one each, planned
  // with `timeout_ms`, its operands set and every rank lined up to start.
  struct Setup {
    Operands o;
    Plan p;
    Buffers x;
  };
  auto set_up = [&](int64_t share, int32_t timeout_ms, Setup* u) {
    std::vector<int64_t> counts = balanced(1);
    counts[victim] = share;
    if (!make_gemm_ar(grid, 512, 512, counts, &u->o)) return false;
    const weave_plan_desc_t d = gemm_ar_desc(u->o, timeout_ms, WEAVE_ALGORITHM_AUTO, 0);
    if (!require_ok(weave_plan_create(grid, &d, &u->p.h), "weave_plan_create")) return false;
    u->x = ones(u->o);
    MPI_Barrier(MPI_COMM_WORLD);
    return true;
  };
  // Grow the victim's share of K until its execute takes at least 1.5 s, so
  // that it is certainly still multiplying when it is killed 0.3 s in, on a
  // fast machine too (a fixed share finished first on some, and the
  // survivors then rightly succeeded).
  int64_t share = 4096;
  for (;;) {
    Setup u;
    if (!set_up(share, 120000, &u)) return 1;
    const auto start = std::chrono::steady_clock::now();
    if (!require_ok(execute(u.p.h, u.x), "execute (calibration)")) return 1;
    const double took = seconds_since(start);
    double slowest = 0.0;
    MPI_Allreduce(&took, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (slowest >= 1.5 || share >= 262144) break;
    share *= 2;
  }
  Setup u;
  if (!set_up(share, 1000, &u)) return 1;
  Plan& p = u.p;
  Buffers& x = u.x;
  if (g_rank == victim)
    std::thread([] {
      sleep_seconds(0.3);
      raise(SIGKILL);
    }).detach();
  const auto start = std::chrono::steady_clock::now();
  const weave_status_t s = execute(p.h, x);
  if (g_rank == victim) {
    sleep_seconds(10);  // not reached: the thread kills this rank first
    return 1;
  }
  expect_error(s, WEAVE_ERROR_TIMEOUT, seconds_since(start), 0.9, 5.0, {}, "execute after a rank was killed");
  p.reset();  // the documented recovery must not crash either
  std::printf("survivor rank %d: %s (%s after %.2f s: %s)\n", g_rank, g_ok ? "PASS" : "FAIL", weave_status_string(s),
              seconds_since(start), weave_last_error());
  std::fflush(stdout);
  return g_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const std::string scenario = argc > 1 ? argv[1] : "";
  start_watchdog(120);
  if (scenario == "killed") {
    Grid grid;
    if (!require_ok(weave_grid_create(MPI_COMM_WORLD, g_size, 1, &grid.h), "weave_grid_create")) return 1;
    const int status = killed(grid.h);
    // The grid's communicators are freed locally; MPI_Finalize with a dead
    // peer is not something MPI promises, so the survivors leave here.
    grid.reset();
    std::fflush(stdout);
    _exit(status);
  }
  if (g_size < 2) {
    if (g_rank == 0) std::printf("SKIP %s: needs two or more ranks\n0 passed, 0 failed, 1 skipped\n", scenario.c_str());
    MPI_Finalize();
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  {
    Grid grid;
    if (!require_ok(weave_grid_create(MPI_COMM_WORLD, g_size, 1, &grid.h), "weave_grid_create")) {
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (scenario == "late-execute" || scenario == "late-kept")
      late_execute(grid.h, scenario == "late-kept");
    else if (scenario == "late-collective")
      late_collective(grid.h);
    else if (scenario == "slow-gemm")
      slow_gemm(grid.h);
    else if (scenario == "absent-creation")
      absent_creation();
    else if (scenario == "skipped-call")
      skipped_call();
    else if (scenario == "warning")
      warning(grid.h);
    else if (scenario == "plan-memory")
      plan_memory();
    else
      fail_here("unknown scenario \"" + scenario + "\"");
  }
  int mine = g_ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (g_rank == 0) {
    std::printf("%s %s on %d ranks (%.2f s)\n%d passed, %d failed\n", all ? "PASS" : "FAIL", scenario.c_str(), g_size,
                seconds_since(start), all ? 1 : 0, all ? 0 : 1);
    std::fflush(stdout);
  }
  MPI_Finalize();
  return all ? 0 : 1;
}
