// ScaLAPACK's p?gemm over WEAVE_GEMM (weave_pblas.h), written on the public
// C API. A call: ScaLAPACK's argument checks, the BLACS grid as a Weave grid
// (made once per BLACS grid), one agreement between the grid's processes (on
// errors and on whether the cached plan fits), the plan (made once per set
// of arguments), the execute.
#include "weave/weave_pblas.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <list>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "weave_pblas_internal.hpp"

// BLACS, from the ScaLAPACK library this binding is linked with.
extern "C" {
void Cblacs_get(int context, int what, int* value);
void Cblacs_gridinfo(int context, int* nprow, int* npcol, int* myrow, int* mycol);
MPI_Comm Cblacs2sys_handle(int system_context);
}

namespace {

// ScaLAPACK's descriptor entries (0-based).
enum : int { kDtype = 0, kCtxt, kM, kN, kMb, kNb, kRsrc, kCsrc, kLld, kDescriptorLength };
// BLACS_GET's "what" for the system context a grid was made from.
constexpr int kSystemContextOfGrid = 10;
using weave_pblas_internal::kCachedPlans;

thread_local std::string t_message;

// How long a process waits for the grid's others, as Weave's own waits do:
// WEAVE_TIMEOUT seconds (0: never), else 300 s. A malformed value waits the
// default here; Weave's grid creation then fails with it on every process.
std::chrono::milliseconds timeout() {
  const char* text = std::getenv("WEAVE_TIMEOUT");
  if (!text || !*text) return std::chrono::milliseconds(300000);
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (*end != '\0' || !(seconds >= 0) || seconds > 3153600000.0) return std::chrono::milliseconds(300000);
  if (seconds == 0) return std::chrono::milliseconds(-1);
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000)));
}

// Waits for a non-blocking collective of the grid's processes. Counts the
// time spent polling, not a pause of this process (more than 0.1 s between
// two polls), as Weave's waits do. Past the timeout: false, `why` says what
// was waited for, and the request stays pending (MPI cannot cancel a
// collective): its buffers must outlive it, so callers keep them on the heap
// and leave them there.
bool wait_bounded(MPI_Request* request, const char* what, std::string* why) {
  using clock = std::chrono::steady_clock;
  const auto limit = timeout();
  auto waited = clock::duration::zero();
  auto last = clock::now();
  for (int polls = 0;; ++polls) {
    int done = 0;
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (done) return true;
    const auto now = clock::now();
    if (now - last <= std::chrono::milliseconds(100)) waited += now - last;
    last = now;
    if (limit.count() >= 0 && waited > limit) {
      std::ostringstream seconds;
      seconds << limit.count() / 1000.0;
      *why = "this process waited " + seconds.str() + " s for " + what +
             ": another process of the grid did not make the call, or returned from it early (with all three "
             "descriptors NULL it cannot know its grid). Exit the BLACS grid (BLACS_GRIDEXIT) on every process and "
             "make it again before the next call on it (set WEAVE_TIMEOUT to wait longer)";
      return false;
    }
    if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// ScaLAPACK's NUMROC.
int64_t numroc(int64_t n, int64_t nb, int p, int source, int procs) {
  const int distance = (procs + p - source) % procs;
  int64_t count = n / nb / procs * nb;
  const int64_t extra = n / nb % procs;
  if (distance < extra) count += nb;
  if (distance == extra) count += n % nb;
  return count;
}

// A BLACS grid as a Weave grid: the processes of the grid's system
// communicator (the one BLACS_GET(ICTXT, 10, ...) names: with the reference
// BLACS, a communicator of the grid's own processes that BLACS makes with
// the grid and frees at BLACS_GRIDEXIT) ordered as the grid orders them
// (row-major, as Weave's grids are).
struct ContextGrid {
  weave_grid_t grid = nullptr;
  MPI_Comm comm = MPI_COMM_NULL;  // the grid's processes, in Weave's rank order
  int nprow = 0, npcol = 0;
  long serial = 0;  // its key in g_grids and in its plans' keys
};

// The grids, by a serial number that an attribute of their system
// communicator holds (g_grid_keyval): neither a context id nor a
// communicator handle, which BLACS and MPI give again once freed. The grid
// and its plans go when BLACS frees the communicator, and a new grid, whose
// communicator is new to every one of its processes, finds none.
std::map<long, ContextGrid> g_grids;
long g_next_grid = 1;
int g_grid_keyval = MPI_KEYVAL_INVALID;

struct Plan {
  weave_matrix_t a = nullptr, b = nullptr, c = nullptr;
  weave_plan_t plan = nullptr;
};

// Everything a plan depends on: the context's grid, the element type, the
// transposes, the sizes, offsets and the three descriptors (LLD_ included:
// it may differ between processes, which agree on the cache below).
using PlanKey = std::tuple<long, weave_dtype_t, char, char, std::array<int, 9>, std::array<int, 27>>;
std::list<std::pair<PlanKey, Plan>> g_plans;  // most recently used first
weave_pblas_internal::PlanCacheCounters g_counters;  // g_plans's history (cached: see plan_cache_counters)

// Grids and plans given up after a wait on them timed out (drop_grid_of).
struct Quarantine {
  std::vector<ContextGrid> grids;
  std::vector<Plan> plans;
};
Quarantine g_quarantine;

void destroy(Plan& p) {
  weave_plan_destroy(p.plan);
  weave_matrix_destroy(p.a);
  weave_matrix_destroy(p.b);
  weave_matrix_destroy(p.c);
  p = Plan{};
}

void destroy(ContextGrid& g) {
  weave_grid_destroy(g.grid);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && g.comm != MPI_COMM_NULL) MPI_Comm_free(&g.comm);
  g = ContextGrid{};
}

// A grid and its plans (none when they went already).
void drop_grid(long serial) {
  for (auto it = g_plans.begin(); it != g_plans.end();)
    if (std::get<0>(it->first) == serial) {
      destroy(it->second);
      it = g_plans.erase(it);
    } else {
      ++it;
    }
  auto found = g_grids.find(serial);
  if (found == g_grids.end()) return;
  destroy(found->second);
  g_grids.erase(found);
}

// g_grid_keyval's attribute is deleted: BLACS frees the system communicator
// (on every process of the grid, at BLACS_GRIDEXIT), or a grid is made
// afresh on it.
int grid_gone(MPI_Comm, int, void* serial, void*) {
  drop_grid(static_cast<long>(reinterpret_cast<std::intptr_t>(serial)));
  return MPI_SUCCESS;
}

// Everything, leaving the attributes, whose grids are then gone.
void release_all() {
  for (auto& entry : g_plans) destroy(entry.second);
  g_plans.clear();
  for (auto& entry : g_grids) destroy(entry.second);
  g_grids.clear();
}

// Releases everything when MPI is finalized (an attribute of MPI_COMM_SELF
// is deleted first thing in MPI_Finalize), while MPI still works.
int release_at_finalize(MPI_Comm, int, void*, void*) {
  release_all();
  return MPI_SUCCESS;
}

void release_at_finalize_once() {
  static bool registered = false;
  if (registered) return;
  int keyval = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, release_at_finalize, &keyval, nullptr);
  MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr);
  registered = true;
}

// The checks ScaLAPACK makes of the arguments of p?gemm (its PB_Cchkmat),
// on this process: "" when they hold, else what is wrong.
std::string check_matrix(const char* name, int number, int rows, int cols, int i, int j, const int* desc, int context,
                         int nprow, int npcol, int myrow, int mycol) {
  std::ostringstream out;
  out << "argument " << number << " (DESC" << name << "): ";
  if (desc[kDtype] != 1) {
    out << "DESC" << name << "(DTYPE_) = " << desc[kDtype] << ": only block-cyclic descriptors (1) are supported";
    return out.str();
  }
  if (desc[kCtxt] != context) {
    out << "DESC" << name << "(CTXT_) = " << desc[kCtxt] << " but DESCA(CTXT_) = " << context
        << ": the three matrices must lie on one BLACS grid";
    return out.str();
  }
  const char* n = name;
  auto field = [&](const char* f, int value, const char* rule) {
    out << "DESC" << n << "(" << f << ") = " << value << " " << rule;
    return out.str();
  };
  if (desc[kM] < 0) return field("M_", desc[kM], "is negative");
  if (desc[kN] < 0) return field("N_", desc[kN], "is negative");
  if (desc[kMb] < 1) return field("MB_", desc[kMb], "must be at least 1");
  if (desc[kNb] < 1) return field("NB_", desc[kNb], "must be at least 1");
  if (desc[kRsrc] < 0 || desc[kRsrc] >= nprow)
    return field("RSRC_", desc[kRsrc], ("is not a process row of the " + std::to_string(nprow) + " x " +
                                        std::to_string(npcol) + " grid").c_str());
  if (desc[kCsrc] < 0 || desc[kCsrc] >= npcol)
    return field("CSRC_", desc[kCsrc], ("is not a process column of the " + std::to_string(nprow) + " x " +
                                        std::to_string(npcol) + " grid").c_str());
  const int64_t local_rows = numroc(desc[kM], desc[kMb], myrow, desc[kRsrc], nprow);
  if (desc[kLld] < std::max<int64_t>(1, local_rows))
    return field("LLD_", desc[kLld],
                 ("is smaller than this process's " + std::to_string(local_rows) + " local rows (process (" +
                  std::to_string(myrow) + ", " + std::to_string(mycol) + "))").c_str());
  if (i < 1 || j < 1) {
    out << "I" << name << ", J" << name << " = " << i << ", " << j << ": submatrix positions start at 1";
    return out.str();
  }
  if (rows > 0 && cols > 0 &&
      (static_cast<int64_t>(i) + rows - 1 > desc[kM] || static_cast<int64_t>(j) + cols - 1 > desc[kN])) {
    out << "sub(" << name << ") = " << name << "(" << i << ":" << static_cast<int64_t>(i) + rows - 1 << ", " << j
        << ":" << static_cast<int64_t>(j) + cols - 1 << ") lies outside the " << desc[kM] << " x " << desc[kN]
        << " matrix " << name;
    return out.str();
  }
  return "";
}

bool valid_trans(char t) { return t == 'N' || t == 'T' || t == 'C'; }

// TRANS in upper case; 'C' is 'T' for the real types (processes may mix them).
char normalized_trans(char t, weave_dtype_t dtype) {
  const char upper = static_cast<char>(std::toupper(static_cast<unsigned char>(t)));
  return upper == 'C' && (dtype == WEAVE_FLOAT64 || dtype == WEAVE_FLOAT32) ? 'T' : upper;
}

weave_op_t op_of(char t) { return t == 'N' ? WEAVE_OP_N : t == 'T' ? WEAVE_OP_T : WEAVE_OP_C; }

// The Weave grid of a BLACS grid, made (collectively over the grid) on
// first use. `fresh` makes it again (a system communicator that outlives
// its grids, as MPI_COMM_WORLD would, may find the one made for an earlier
// grid, whose processes sat elsewhere).
weave_status_t grid_of(int context, int nprow, int npcol, int myrow, int mycol, bool fresh, ContextGrid** out,
                       std::string* why) {
  // Only a grid over every process of its system communicator is
  // supported: a Weave grid is made by splitting it. The check is local and
  // comes first, on every call: the processes outside the grid have
  // returned, so the grid's processes must not communicate (not over a
  // cached grid either) before they know that none is outside it.
  int system = 0;
  Cblacs_get(context, kSystemContextOfGrid, &system);
  MPI_Comm all = Cblacs2sys_handle(system);
  int size = 0;
  MPI_Comm_size(all, &size);
  if (size != nprow * npcol) {
    *why = "the BLACS grid of context " + std::to_string(context) + " (" + std::to_string(nprow) + " x " +
           std::to_string(npcol) + ") does not span the " + std::to_string(size) +
           " processes of its system context; weave_p?gemm needs a grid over all of them";
    return WEAVE_ERROR_UNSUPPORTED;
  }
  if (g_grid_keyval == MPI_KEYVAL_INVALID)
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, grid_gone, &g_grid_keyval, nullptr);
  void* value = nullptr;
  int has = 0;
  MPI_Comm_get_attr(all, g_grid_keyval, &value, &has);
  if (has) {
    auto found = g_grids.find(static_cast<long>(reinterpret_cast<std::intptr_t>(value)));
    if (found != g_grids.end() && !fresh) {
      *out = &found->second;
      return WEAVE_SUCCESS;
    }
    MPI_Comm_delete_attr(all, g_grid_keyval);  // the old grid and its plans go (grid_gone)
  }
  ContextGrid g;
  g.nprow = nprow;
  g.npcol = npcol;
  // MPI_Comm_split waits for every process without a bound; it runs on a
  // private duplicate once every process is known to be there (a
  // non-blocking duplicate and a barrier, both waited for within the
  // timeout), so a process that never calls costs its peers a timeout, not
  // a hang. The duplicate and its request live on the heap and are left
  // there when a wait gives up: MPI may still write them once a late
  // process comes.
  struct Opening {
    MPI_Comm dup = MPI_COMM_NULL;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  auto* opening = new Opening;
  MPI_Comm_idup(all, &opening->dup, &opening->request);
  if (!wait_bounded(&opening->request, "the duplicate of the grid's system communicator", why))
    return WEAVE_ERROR_TIMEOUT;
  MPI_Ibarrier(opening->dup, &opening->request);
  if (!wait_bounded(&opening->request, "the barrier that opens the grid", why)) return WEAVE_ERROR_TIMEOUT;
  MPI_Comm_split(opening->dup, 0, myrow * npcol + mycol, &g.comm);
  MPI_Comm_free(&opening->dup);
  delete opening;
  const weave_status_t status = weave_grid_create(g.comm, nprow, npcol, &g.grid);
  if (status != WEAVE_SUCCESS) {
    *why = weave_last_error();
    MPI_Comm_free(&g.comm);
    return status;
  }
  release_at_finalize_once();
  g.serial = g_next_grid++;
  MPI_Comm_set_attr(all, g_grid_keyval, reinterpret_cast<void*>(static_cast<std::intptr_t>(g.serial)));
  *out = &(g_grids[g.serial] = g);
  return WEAVE_SUCCESS;
}

// The grid of a BLACS context and its plans, after a wait on its
// communicator gave up (a collective is pending there: the communicator
// cannot serve another). The next call makes a new one.
void drop_grid_of(int context) {
  if (g_grid_keyval == MPI_KEYVAL_INVALID) return;
  int system = 0;
  Cblacs_get(context, kSystemContextOfGrid, &system);
  MPI_Comm all = Cblacs2sys_handle(system);
  void* value = nullptr;
  int has = 0;
  MPI_Comm_get_attr(all, g_grid_keyval, &value, &has);
  if (!has) return;
  // The grid and its plans are kept, never destroyed: a late process may
  // still complete the pending collective, or execute a plan, against
  // them, and Open MPI fails on traffic to a freed communicator once its id
  // serves another.
  const long serial = static_cast<long>(reinterpret_cast<std::intptr_t>(value));
  for (auto it = g_plans.begin(); it != g_plans.end();)
    if (std::get<0>(it->first) == serial) {
      g_quarantine.plans.push_back(it->second);
      it = g_plans.erase(it);
    } else {
      ++it;
    }
  auto found = g_grids.find(serial);
  if (found != g_grids.end()) {
    g_quarantine.grids.push_back(found->second);
    g_grids.erase(found);
  }
  MPI_Comm_delete_attr(all, g_grid_keyval);  // (grid_gone finds nothing left to drop)
}

// One p?gemm. `dtype` says what a, b, c, alpha and beta point to.
template <class Scalar>
weave_status_t gemm(const char* name, weave_dtype_t dtype, const char* transa, const char* transb, const int* m,
                    const int* n, const int* k, const Scalar* alpha, const void* a, const int* ia, const int* ja,
                    const int* desca, const void* b, const int* ib, const int* jb, const int* descb,
                    const Scalar* beta, void* c, const int* ic, const int* jc, const int* descc) {
  t_message.clear();
  // A NULL argument fails on every process of the grid, which this process
  // finds from whichever descriptor it has.
  const void* const arguments[] = {transa, transb, m,    n,  k,  alpha, ia,    ja, desca,
                                   ib,     jb,     descb, beta, ic, jc, descc};
  static const char* const kArgumentNames[] = {"1 (TRANSA)", "2 (TRANSB)", "3 (M)",     "4 (N)",
                                               "5 (K)",      "6 (ALPHA)",  "8 (IA)",    "9 (JA)",
                                               "10 (DESCA)", "12 (IB)",    "13 (JB)",   "14 (DESCB)",
                                               "15 (BETA)",  "17 (IC)",    "18 (JC)",   "19 (DESCC)"};
  std::string wrong;
  for (size_t i = 0; i < std::size(arguments) && wrong.empty(); ++i)
    if (!arguments[i]) wrong = std::string("argument ") + kArgumentNames[i] + " is NULL";
  const bool null_argument = !wrong.empty();
  const int* const any_descriptor = desca ? desca : descb ? descb : descc;
  if (!any_descriptor) {
    // No grid to agree over: this process alone fails (its grid's others,
    // if they called, time out).
    t_message = std::string(name) + ": " + wrong + ", and so are DESCB and DESCC: the grid is unknown";
    std::fprintf(stderr, "%s\n", t_message.c_str());
    return WEAVE_ERROR_NULL_ARGUMENT;
  }
  const int context = any_descriptor[kCtxt];
  int nprow = -1, npcol = -1, myrow = -1, mycol = -1;
  Cblacs_gridinfo(context, &nprow, &npcol, &myrow, &mycol);
  if (myrow < 0 || mycol < 0 || myrow >= nprow || mycol >= npcol) {  // not in the grid: return at once
    if (!null_argument) return WEAVE_SUCCESS;
    t_message = std::string(name) + ": " + wrong;
    return WEAVE_ERROR_NULL_ARGUMENT;
  }

  // The local checks, in ScaLAPACK's argument order (none past a NULL).
  weave_status_t status = null_argument ? WEAVE_ERROR_NULL_ARGUMENT : WEAVE_SUCCESS;
  const char ta = null_argument ? 'N' : normalized_trans(*transa, dtype);
  const char tb = null_argument ? 'N' : normalized_trans(*transb, dtype);
  const bool a_t = ta != 'N', b_t = tb != 'N';
  if (!null_argument) {
    if (!valid_trans(ta))
      wrong = std::string("argument 1 (TRANSA) = '") + *transa + "' is not 'N', 'T' or 'C'";
    else if (!valid_trans(tb))
      wrong = std::string("argument 2 (TRANSB) = '") + *transb + "' is not 'N', 'T' or 'C'";
    else if (*m < 0 || *n < 0 || *k < 0)
      wrong = "M, N, K = " + std::to_string(*m) + ", " + std::to_string(*n) + ", " + std::to_string(*k) +
              ": sizes must not be negative";
    if (wrong.empty())
      wrong = check_matrix("A", 10, a_t ? *k : *m, a_t ? *m : *k, *ia, *ja, desca, context, nprow, npcol, myrow,
                           mycol);
    if (wrong.empty())
      wrong = check_matrix("B", 14, b_t ? *n : *k, b_t ? *k : *n, *ib, *jb, descb, context, nprow, npcol, myrow,
                           mycol);
    if (wrong.empty()) wrong = check_matrix("C", 19, *m, *n, *ic, *jc, descc, context, nprow, npcol, myrow, mycol);
    if (!wrong.empty()) status = WEAVE_ERROR_INVALID_VALUE;
  }

  // The Weave grid (collective on first use; every process of the grid
  // gets here with the same context).
  ContextGrid* g = nullptr;
  std::string why;
  auto grid_failed = [&](weave_status_t s) {
    // Every process of the grid finds the same, but a timeout.
    t_message = std::string(name) + ": " + why;
    if ((myrow == 0 && mycol == 0) || s == WEAVE_ERROR_TIMEOUT) std::fprintf(stderr, "%s\n", t_message.c_str());
    return s;
  };
  weave_status_t grid_status = grid_of(context, nprow, npcol, myrow, mycol, false, &g, &why);
  if (grid_status != WEAVE_SUCCESS) return grid_failed(grid_status);
  // A system communicator that outlived the grid the Weave grid was made
  // for: some process's place moved.
  int row = -1, col = -1;
  weave_grid_coords(g->grid, &row, &col);
  const bool moved = row != myrow || col != mycol || g->nprow != nprow || g->npcol != npcol;
  int rank = 0;
  MPI_Comm_rank(g->comm, &rank);

  // What every process must pass alike (LLD_ and CTXT_ may differ).
  static const char* const kFieldNames[] = {
      "the routine", "TRANSA", "TRANSB", "M", "N", "K", "IA", "JA", "IB", "JB", "IC", "JC",
      "DESCA(DTYPE_)", "DESCA(M_)", "DESCA(N_)", "DESCA(MB_)", "DESCA(NB_)", "DESCA(RSRC_)", "DESCA(CSRC_)",
      "DESCB(DTYPE_)", "DESCB(M_)", "DESCB(N_)", "DESCB(MB_)", "DESCB(NB_)", "DESCB(RSRC_)", "DESCB(CSRC_)",
      "DESCC(DTYPE_)", "DESCC(M_)", "DESCC(N_)", "DESCC(MB_)", "DESCC(NB_)", "DESCC(RSRC_)", "DESCC(CSRC_)"};
  constexpr int kFields = static_cast<int>(std::size(kFieldNames));
  std::array<int, kFields> fields{};
  PlanKey key{};
  auto cached = g_plans.end();
  if (status == WEAVE_SUCCESS) {
    key = PlanKey{g->serial,
                  dtype,
                  ta,
                  tb,
                  {*m, *n, *k, *ia, *ja, *ib, *jb, *ic, *jc},
                  {desca[0], desca[1], desca[2], desca[3], desca[4], desca[5], desca[6], desca[7], desca[8],
                   descb[0], descb[1], descb[2], descb[3], descb[4], descb[5], descb[6], descb[7], descb[8],
                   descc[0], descc[1], descc[2], descc[3], descc[4], descc[5], descc[6], descc[7], descc[8]}};
    cached = std::find_if(g_plans.begin(), g_plans.end(), [&](const auto& e) { return e.first == key; });
    // The key's arguments in kFieldNames's order, the descriptors without CTXT_ and LLD_.
    int f = 0;
    fields[f++] = static_cast<int>(dtype);
    fields[f++] = ta;
    fields[f++] = tb;
    for (int x : std::get<4>(key)) fields[f++] = x;
    for (int i = 0; i < 3 * kDescriptorLength; ++i)
      if (i % kDescriptorLength != kCtxt && i % kDescriptorLength != kLld) fields[f++] = std::get<5>(key)[i];
  }

  // One agreement (a maximum; a minimum as the maximum of complements):
  // the worst status, the lowest process that found something wrong,
  // whether every process has the plan, whether any process's place in the
  // grid moved (the same processes: the grid spans its system
  // communicator), and the least and greatest of each field.
  enum : int { kStatus, kFirstWrong, kLacksPlan, kMoved, kFieldsMax };
  constexpr int kFieldsMin = kFieldsMax + kFields, kAgreed = kFieldsMin + kFields;
  auto* agreement = new std::array<int, 2 * kAgreed>{};  // in, out (left on the heap if the wait gives up)
  int* mine = agreement->data();
  int* all = mine + kAgreed;
  mine[kStatus] = static_cast<int>(status);
  mine[kFirstWrong] = ~(status != WEAVE_SUCCESS ? rank : INT32_MAX);
  mine[kLacksPlan] = cached == g_plans.end() ? 1 : 0;
  mine[kMoved] = moved ? 1 : 0;
  for (int f = 0; f < kFields; ++f) {
    mine[kFieldsMax + f] = fields[f];
    mine[kFieldsMin + f] = ~fields[f];
  }
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallreduce(mine, all, kAgreed, MPI_INT, MPI_MAX, g->comm, &request);
  if (!wait_bounded(&request, "the grid's agreement on the arguments", &why)) {
    drop_grid_of(context);  // its communicator has a collective pending
    return grid_failed(WEAVE_ERROR_TIMEOUT);
  }
  std::array<int, kAgreed> agreed;
  std::copy(all, all + kAgreed, agreed.begin());
  delete agreement;
  if (agreed[kMoved]) {
    grid_status = grid_of(context, nprow, npcol, myrow, mycol, true, &g, &why);
    if (grid_status != WEAVE_SUCCESS) return grid_failed(grid_status);
    cached = g_plans.end();  // the old grid's plans went with it
    std::get<0>(key) = g->serial;
    agreed[kLacksPlan] = 1;
  }
  if (agreed[kStatus] != WEAVE_SUCCESS) {
    // The message of the lowest process that found something wrong.
    const int first = ~agreed[kFirstWrong];
    auto* text = new std::array<char, 1024>{};  // (left on the heap if the wait gives up)
    if (rank == first) std::snprintf(text->data(), text->size(), "%s", wrong.c_str());
    MPI_Ibcast(text->data(), static_cast<int>(text->size()), MPI_CHAR, first, g->comm, &request);
    if (!wait_bounded(&request, "the message of the process that found an argument wrong", &why)) {
      drop_grid_of(context);
      return grid_failed(WEAVE_ERROR_TIMEOUT);
    }
    t_message = std::string(name) + ": " + text->data();
    delete text;
    if (first != rank) t_message += " (on process " + std::to_string(first) + " of the grid)";
    if (rank == 0) std::fprintf(stderr, "%s; nothing was computed\n", t_message.c_str());
    return static_cast<weave_status_t>(agreed[kStatus]);
  }
  for (int f = 0; f < kFields; ++f) {
    const int least = ~agreed[kFieldsMin + f], greatest = agreed[kFieldsMax + f];
    if (least == greatest) continue;
    // The routine by its letter, a transpose as its character, the rest as numbers.
    auto value = [&](int v) {
      if (f == 0) {
        const weave_dtype_t d = static_cast<weave_dtype_t>(v);
        const char* letter = d == WEAVE_FLOAT64 ? "d" : d == WEAVE_FLOAT32 ? "s" : d == WEAVE_COMPLEX128 ? "z" : "c";
        return std::string("weave_p") + letter + "gemm";
      }
      return f <= 2 ? "'" + std::string(1, static_cast<char>(v)) + "'" : std::to_string(v);
    };
    std::ostringstream out;
    out << name << ": " << kFieldNames[f] << " differs between the grid's processes (from " << value(least)
        << " to " << value(greatest) << "; this process passed " << value(fields[f])
        << "): every process must pass the same arguments";
    t_message = out.str();
    if (rank == 0) std::fprintf(stderr, "%s; nothing was computed\n", t_message.c_str());
    return WEAVE_ERROR_RANK_MISMATCH;
  }
  // ScaLAPACK's quick return: nothing to compute.
  if (*m == 0 || *n == 0) return WEAVE_SUCCESS;

  if (agreed[kLacksPlan]) {
    // Some process lacks the plan: all make it anew.
    if (cached != g_plans.end()) {
      destroy(cached->second);
      g_plans.erase(cached);
    }
    Plan p;
    auto matrix = [&](int rows, int cols, int i, int j, const int* desc, weave_matrix_t* out) {
      weave_matrix_desc_t d = WEAVE_MATRIX_DESC_INIT;
      d.rows = rows;
      d.cols = cols;
      d.dtype = dtype;
      d.distribution = WEAVE_DIST_BLOCK_CYCLIC;
      d.mb = desc[kMb];
      d.nb = desc[kNb];
      d.rsrc = desc[kRsrc];
      d.csrc = desc[kCsrc];
      d.row_start = i - 1;
      d.col_start = j - 1;
      d.ld = desc[kLld];
      return weave_matrix_create(g->grid, &d, out);
    };
    status = matrix(a_t ? *k : *m, a_t ? *m : *k, *ia, *ja, desca, &p.a);
    if (status == WEAVE_SUCCESS) status = matrix(b_t ? *n : *k, b_t ? *k : *n, *ib, *jb, descb, &p.b);
    if (status == WEAVE_SUCCESS) status = matrix(*m, *n, *ic, *jc, descc, &p.c);
    if (status == WEAVE_SUCCESS) {
      weave_plan_desc_t pd = WEAVE_PLAN_DESC_INIT;
      pd.operation = WEAVE_GEMM;
      pd.op_a = op_of(ta);
      pd.op_b = op_of(tb);
      pd.a = p.a;
      pd.b = p.b;
      pd.c = p.c;
      status = weave_plan_create(g->grid, &pd, &p.plan);
    }
    if (status != WEAVE_SUCCESS) {
      t_message = std::string(name) + ": " + weave_last_error();
      if (myrow == 0 && mycol == 0) std::fprintf(stderr, "%s; nothing was computed\n", t_message.c_str());
      destroy(p);
      return status;
    }
    g_plans.emplace_front(key, p);
    ++g_counters.made;
    if (g_plans.size() > kCachedPlans) {
      destroy(g_plans.back().second);
      g_plans.pop_back();
      ++g_counters.evicted;
    }
    cached = g_plans.begin();
  } else {
    ++g_counters.reused;
    if (cached != g_plans.begin()) {
      g_plans.splice(g_plans.begin(), g_plans, cached);
      cached = g_plans.begin();
    }
  }

  weave_execute_args_t args = WEAVE_EXECUTE_ARGS_INIT;
  args.alpha = static_cast<double>(alpha[0]);
  args.beta = static_cast<double>(beta[0]);
  if (dtype == WEAVE_COMPLEX64 || dtype == WEAVE_COMPLEX128) {  // (real, imaginary) pairs
    args.alpha_imag = static_cast<double>(alpha[1]);
    args.beta_imag = static_cast<double>(beta[1]);
  }
  args.a = a;
  args.b = b;
  args.c = c;
  status = weave_execute_ex(cached->second.plan, &args);
  if (status != WEAVE_SUCCESS) {
    t_message = std::string(name) + ": " + weave_last_error();
    if (myrow == 0 && mycol == 0) std::fprintf(stderr, "%s\n", t_message.c_str());
  }
  return status;
}

}  // namespace

weave_pblas_internal::PlanCacheCounters weave_pblas_internal::plan_cache_counters() {
  PlanCacheCounters counters = g_counters;
  counters.cached = g_plans.size();
  return counters;
}

extern "C" {

weave_status_t weave_pdgemm(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                            const double* alpha, const double* a, const int* ia, const int* ja, const int* desca,
                            const double* b, const int* ib, const int* jb, const int* descb, const double* beta,
                            double* c, const int* ic, const int* jc, const int* descc) {
  return gemm("weave_pdgemm", WEAVE_FLOAT64, transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb,
              beta, c, ic, jc, descc);
}

weave_status_t weave_psgemm(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                            const float* alpha, const float* a, const int* ia, const int* ja, const int* desca,
                            const float* b, const int* ib, const int* jb, const int* descb, const float* beta,
                            float* c, const int* ic, const int* jc, const int* descc) {
  return gemm("weave_psgemm", WEAVE_FLOAT32, transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb,
              beta, c, ic, jc, descc);
}

weave_status_t weave_pzgemm(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                            const double* alpha, const void* a, const int* ia, const int* ja, const int* desca,
                            const void* b, const int* ib, const int* jb, const int* descb, const double* beta, void* c,
                            const int* ic, const int* jc, const int* descc) {
  return gemm("weave_pzgemm", WEAVE_COMPLEX128, transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb,
              beta, c, ic, jc, descc);
}

weave_status_t weave_pcgemm(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                            const float* alpha, const void* a, const int* ia, const int* ja, const int* desca,
                            const void* b, const int* ib, const int* jb, const int* descb, const float* beta, void* c,
                            const int* ic, const int* jc, const int* descc) {
  return gemm("weave_pcgemm", WEAVE_COMPLEX64, transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb,
              beta, c, ic, jc, descc);
}

const char* weave_pblas_last_error(void) { return t_message.c_str(); }

void weave_pblas_release(void) { release_all(); }

// The Fortran subroutines (gfortran's names: lower case and an underscore;
// the lengths of the two character arguments follow the others). Not in the
// C header, but exported as it exports the C functions.
#define WEAVE_PBLAS_EXPORT __attribute__((visibility("default")))

WEAVE_PBLAS_EXPORT void weave_pdgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                   const double* alpha, const double* a, const int* ia, const int* ja, const int* desca,
                   const double* b, const int* ib, const int* jb, const int* descb, const double* beta, double* c,
                   const int* ic, const int* jc, const int* descc, std::size_t, std::size_t) {
  weave_pdgemm(transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb, beta, c, ic, jc, descc);
}

WEAVE_PBLAS_EXPORT void weave_pzgemm_(const char* transa, const char* transb, const int* m, const int* n,
                                       const int* k, const double* alpha, const void* a, const int* ia, const int* ja,
                                       const int* desca, const void* b, const int* ib, const int* jb,
                                       const int* descb, const double* beta, void* c, const int* ic, const int* jc,
                                       const int* descc, std::size_t, std::size_t) {
  weave_pzgemm(transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb, beta, c, ic, jc, descc);
}

WEAVE_PBLAS_EXPORT void weave_pcgemm_(const char* transa, const char* transb, const int* m, const int* n,
                                       const int* k, const float* alpha, const void* a, const int* ia, const int* ja,
                                       const int* desca, const void* b, const int* ib, const int* jb,
                                       const int* descb, const float* beta, void* c, const int* ic, const int* jc,
                                       const int* descc, std::size_t, std::size_t) {
  weave_pcgemm(transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb, beta, c, ic, jc, descc);
}

WEAVE_PBLAS_EXPORT void weave_psgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                   const float* alpha, const float* a, const int* ia, const int* ja, const int* desca,
                   const float* b, const int* ib, const int* jb, const int* descb, const float* beta, float* c,
                   const int* ic, const int* jc, const int* descc, std::size_t, std::size_t) {
  weave_psgemm(transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb, beta, c, ic, jc, descc);
}

}  // extern "C"
