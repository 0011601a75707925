#include "support/case_runner.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

namespace weave_test {

int g_rank = 0, g_size = 1;

const char* grid_kind_name(GridKind g) {
  switch (g) {
    case GridKind::Column1D: return "Px1";
    case GridKind::Row1D: return "1xP";
    case GridKind::Rows2D: return "2D-rows";
    case GridKind::Columns2D: return "2D-columns";
    case GridKind::Block2D: return "2D-block";
  }
  return "?";
}

std::string Case::name() const {
  static const char* ops[] = {"", "AG-GEMM", "GEMM-RS", "GEMM-AR"};
  static const char* types[] = {"", "f32", "f64", "f16", "bf16"};
  static const char* algs[] = {"auto", "ring", "seq"};
  static const char* dirs[] = {"auto", "fwd", "bwd", "bidir"};
  char text[320];
  std::snprintf(text, sizeof text,
                "%s %s op=%c%c order=%c%c%c %s M=%lld N=%lld K=%lld bias=%d beta=%g alpha=%g pad=%d chunks=%d "
                "dir=%s alg=%s progress=%s grid=%s gathered=%d repeats=%d",
                ops[operation], types[dtype], op_a == WEAVE_OP_N ? 'N' : 'T', op_b == WEAVE_OP_N ? 'N' : 'T',
                order_a ? 'R' : 'C', order_b ? 'R' : 'C', order_c ? 'R' : 'C', shards_name(shards),
                static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), bias ? 1 : 0, beta,
                alpha, padded ? 1 : 0, chunks, dirs[direction], algs[algorithm],
                progress == WEAVE_PROGRESS_THREAD ? "thread" : progress == WEAVE_PROGRESS_TILES ? "tiles" : "auto",
                grid_kind_name(grid),
                gathered ? 1 : 0, repeats);
  return text;
}

namespace {

#define CHECK_WEAVE(call)                                                                                      \
  do {                                                                                                         \
    weave_status_t status_ = (call);                                                                           \
    if (status_ != WEAVE_SUCCESS) {                                                                            \
      std::fprintf(stderr, "rank %d: %s failed: %s: %s\n", g_rank, #call, weave_status_string(status_),       \
                   weave_last_error());                                                                        \
      return false;                                                                                            \
    }                                                                                                          \
  } while (0)

// ---------------------------------------------------------------------------
// Grids: one per kind, created once.

struct GridInfo {
  weave_grid_t grid = nullptr;
  int prows = 1, pcols = 1;
  weave_group_t group = WEAVE_GROUP_GRID;
};

bool make_grid(GridKind kind, GridInfo* out) {
  static std::map<GridKind, GridInfo> cache;
  auto found = cache.find(kind);
  if (found != cache.end()) {
    *out = found->second;
    return true;
  }
  GridInfo info;
  switch (kind) {
    case GridKind::Column1D: info.prows = g_size; info.pcols = 1; info.group = WEAVE_GROUP_GRID; break;
    case GridKind::Row1D: info.prows = 1; info.pcols = g_size; info.group = WEAVE_GROUP_GRID; break;
    case GridKind::Rows2D:
    case GridKind::Block2D:
      info.prows = g_size % 2 == 0 ? 2 : 1;
      info.pcols = g_size / info.prows;
      info.group = WEAVE_GROUP_ROW;
      break;
    case GridKind::Columns2D:
      info.pcols = g_size % 2 == 0 ? 2 : 1;
      info.prows = g_size / info.pcols;
      info.group = WEAVE_GROUP_COLUMN;
      break;
  }
  CHECK_WEAVE(weave_grid_create(MPI_COMM_WORLD, info.prows, info.pcols, &info.grid));
  cache[kind] = info;
  *out = info;
  return true;
}

// ---------------------------------------------------------------------------
// Local storage of one rank's block: a typed buffer with padding sentinels.

double unit_roundoff(weave_dtype_t t) { return t == WEAVE_FLOAT32 ? 0x1p-24 : 0x1p-53; }

struct LocalMatrix {
  weave_dtype_t dtype = WEAVE_FLOAT64;
  weave_order_t order = WEAVE_ORDER_COLUMN_MAJOR;
  int64_t rows = 0, cols = 0, ld = 1;
  std::vector<double> f64;
  std::vector<float> f32;
  static constexpr double kSentinel = 12345.0;

  int64_t index(int64_t i, int64_t j) const { return order == WEAVE_ORDER_COLUMN_MAJOR ? i + j * ld : i * ld + j; }
  int64_t storage() const {
    return order == WEAVE_ORDER_COLUMN_MAJOR ? ld * std::max<int64_t>(cols, 1) : ld * std::max<int64_t>(rows, 1);
  }
  void allocate() {
    if (dtype == WEAVE_FLOAT64)
      f64.assign(static_cast<size_t>(storage()), kSentinel);
    else
      f32.assign(static_cast<size_t>(storage()), static_cast<float>(kSentinel));
  }
  void set(int64_t i, int64_t j, double x) {
    if (dtype == WEAVE_FLOAT64)
      f64[static_cast<size_t>(index(i, j))] = x;
    else
      f32[static_cast<size_t>(index(i, j))] = static_cast<float>(x);
  }
  double get(int64_t i, int64_t j) const {
    return dtype == WEAVE_FLOAT64 ? f64[static_cast<size_t>(index(i, j))] : f32[static_cast<size_t>(index(i, j))];
  }
  void* data() {
    if (rows == 0 || cols == 0) return nullptr;  // empty blocks are passed as NULL
    return dtype == WEAVE_FLOAT64 ? static_cast<void*>(f64.data()) : static_cast<void*>(f32.data());
  }
  // Padding (outside the rows x cols block) must keep the sentinel.
  bool padding_intact() const {
    for (int64_t p = 0; p < storage(); ++p) {
      const int64_t minor = p % ld, major = p / ld;
      const bool inside = order == WEAVE_ORDER_COLUMN_MAJOR ? (minor < rows && major < cols)
                                                            : (minor < cols && major < rows);
      if (inside) continue;
      const double v = dtype == WEAVE_FLOAT64 ? f64[static_cast<size_t>(p)] : f32[static_cast<size_t>(p)];
      if (v != kSentinel) return false;
    }
    return true;
  }
};

// One operand: its global (group-level or grid-level) matrix, descriptor and local block.
struct Operand {
  Dense global;  // the stored matrix (not op(X))
  weave_matrix_t desc = nullptr;
  LocalMatrix local;
  int64_t row_offset = 0, col_offset = 0;
  ~Operand() { weave_matrix_destroy(desc); }
};

bool make_operand(const GridInfo& g, const Dense& global, weave_distribution_t dist, const std::vector<int64_t>& rows,
                  const std::vector<int64_t>& cols, weave_dtype_t dtype, weave_order_t order, bool padded,
                  Operand* out) {
  out->global = global;
  weave_matrix_desc_t d{};
  d.rows = global.rows;
  d.cols = global.cols;
  d.dtype = dtype;
  d.distribution = dist;
  d.group = g.group;
  d.row_counts = rows.empty() ? nullptr : rows.data();
  d.col_counts = cols.empty() ? nullptr : cols.data();
  d.order = order;
  // First ask for the tight block, then (padded) recreate with a larger ld.
  CHECK_WEAVE(weave_matrix_create(g.grid, &d, &out->desc));
  int64_t lr = 0, lc = 0, ld = 0;
  CHECK_WEAVE(weave_matrix_local_shape(out->desc, &lr, &lc));
  CHECK_WEAVE(weave_matrix_ld(out->desc, &ld));
  if (padded) {
    weave_matrix_destroy(out->desc);
    d.ld = ld + 3;
    CHECK_WEAVE(weave_matrix_create(g.grid, &d, &out->desc));
    CHECK_WEAVE(weave_matrix_ld(out->desc, &ld));
  }
  CHECK_WEAVE(weave_matrix_local_offset(out->desc, &out->row_offset, &out->col_offset));
  out->local.dtype = dtype;
  out->local.order = order;
  out->local.rows = lr;
  out->local.cols = lc;
  out->local.ld = ld;
  out->local.allocate();
  for (int64_t j = 0; j < lc; ++j)
    for (int64_t i = 0; i < lr; ++i) out->local.set(i, j, global(out->row_offset + i, out->col_offset + j));
  return true;
}

// ---------------------------------------------------------------------------

}  // namespace

bool run_case(const Case& cs, uint64_t seed) {
  GridInfo g;
  if (!make_grid(cs.grid, &g)) return false;
  int group_size = 0, group_rank = 0, grid_row = 0, grid_col = 0;
  CHECK_WEAVE(weave_grid_group(g.grid, g.group, &group_size, &group_rank));
  CHECK_WEAVE(weave_grid_coords(g.grid, &grid_row, &grid_col));
  const int group_index = g.group == WEAVE_GROUP_ROW ? grid_row : g.group == WEAVE_GROUP_COLUMN ? grid_col : 0;
  const int P = group_size;
  const bool block2d = cs.grid == GridKind::Block2D;

  // Each group has its own problem (its own seed), except 2-D block panels,
  // which are cut from one grid-wide matrix.
  std::mt19937_64 rng(seed + (block2d ? 0 : 1000003ULL * static_cast<uint64_t>(group_index)));
  const int64_t M = cs.m, N = cs.n, K = cs.k;
  const bool ag = cs.operation == WEAVE_AG_GEMM, rs = cs.operation == WEAVE_GEMM_RS;
  const std::vector<int64_t> m_counts = make_counts(M, P, cs.shards);
  // A second, different pattern for the other split dimension.
  const Shards other = cs.shards == Shards::Balanced ? Shards::Balanced
                       : cs.shards == Shards::Uneven ? Shards::WithEmpty : Shards::Uneven;
  const std::vector<int64_t> n_counts = make_counts(N, P, other);
  const std::vector<int64_t> k_counts = make_counts(K, P, other);

  // The group problem in op form.
  Dense op_a = random_dense(M, K, rng), op_b = random_dense(K, N, rng), c0 = random_dense(M, N, rng);
  Dense bias_row = random_dense(1, N, rng);
  std::vector<double> bias(static_cast<size_t>(N));
  for (int64_t j = 0; j < N; ++j) bias[static_cast<size_t>(j)] = bias_row(0, j);
  const Dense stored_a = cs.op_a == WEAVE_OP_N ? op_a : transpose(op_a);
  const Dense stored_b = cs.op_b == WEAVE_OP_N ? op_b : transpose(op_b);

  Operand A, B, C, Bias;
  const weave_dtype_t t = cs.dtype;
  const std::vector<int64_t> none;
  if (!block2d) {
    // op(A) split by rows (AG) or columns (RS/AR); expressed on the stored A.
    const bool a_rows_split = ag == (cs.op_a == WEAVE_OP_N);
    const std::vector<int64_t>& a_counts = ag ? m_counts : k_counts;
    if (!make_operand(g, stored_a, a_rows_split ? WEAVE_DIST_BLOCK_ROW : WEAVE_DIST_BLOCK_COLUMN,
                      a_rows_split ? a_counts : none, a_rows_split ? none : a_counts, t, cs.order_a, cs.padded, &A))
      return false;
    // op(B) split by columns (AG) or rows (RS/AR).
    const bool b_rows_split = ag == (cs.op_b == WEAVE_OP_T);
    const std::vector<int64_t>& b_counts = ag ? n_counts : k_counts;
    if (!make_operand(g, stored_b, b_rows_split ? WEAVE_DIST_BLOCK_ROW : WEAVE_DIST_BLOCK_COLUMN,
                      b_rows_split ? b_counts : none, b_rows_split ? none : b_counts, t, cs.order_b, cs.padded, &B))
      return false;
    const weave_distribution_t c_dist = ag ? WEAVE_DIST_BLOCK_COLUMN : rs ? WEAVE_DIST_BLOCK_ROW : WEAVE_DIST_REPLICATED;
    if (!make_operand(g, c0, c_dist, rs ? m_counts : none, ag ? n_counts : none, t, cs.order_c, cs.padded, &C))
      return false;
    if (cs.bias && !make_operand(g, bias_row, ag ? WEAVE_DIST_BLOCK_COLUMN : WEAVE_DIST_REPLICATED, none,
                                 ag ? n_counts : none, t, WEAVE_ORDER_COLUMN_MAJOR, false, &Bias))
      return false;
  } else {
    // 2-D block over a prows x pcols grid, operation along grid rows. Only
    // AG-GEMM with op(A)=A^T fits every operand: A (K_i x M) with columns
    // split over the row, B (K_i x N) likewise, C (M x N) and bias (1 x N)
    // split by columns. Grid row i owns panels with K_i = K + i rows; the
    // grid-wide matrices stack the panels.
    const int prows = g.prows;
    std::vector<int64_t> k_rows(static_cast<size_t>(prows)), m_rows(static_cast<size_t>(prows), M),
        one(static_cast<size_t>(prows), 1);
    int64_t k_total = 0;
    for (int i = 0; i < prows; ++i) k_total += (k_rows[i] = K + i);
    std::mt19937_64 grid_rng(seed);
    Dense gA = random_dense(k_total, M, grid_rng), gB = random_dense(k_total, N, grid_rng),
          gC = random_dense(prows * M, N, grid_rng), gBias = random_dense(prows, N, grid_rng);
    int64_t k0 = 0;
    for (int i = 0; i < grid_row; ++i) k0 += k_rows[i];
    const int64_t Ki = k_rows[grid_row];
    Dense panel_a(Ki, M), panel_b(Ki, N);
    for (int64_t j = 0; j < M; ++j)
      for (int64_t i = 0; i < Ki; ++i) panel_a(i, j) = gA(k0 + i, j);
    for (int64_t j = 0; j < N; ++j)
      for (int64_t i = 0; i < Ki; ++i) panel_b(i, j) = gB(k0 + i, j);
    op_a = transpose(panel_a);
    op_b = panel_b;
    for (int64_t j = 0; j < N; ++j) {
      for (int64_t i = 0; i < M; ++i) c0(i, j) = gC(grid_row * M + i, j);
      bias[static_cast<size_t>(j)] = gBias(grid_row, j);
    }
    if (!make_operand(g, gA, WEAVE_DIST_BLOCK_2D, k_rows, m_counts, t, cs.order_a, cs.padded, &A)) return false;
    if (!make_operand(g, gB, WEAVE_DIST_BLOCK_2D, k_rows, n_counts, t, cs.order_b, cs.padded, &B)) return false;
    if (!make_operand(g, gC, WEAVE_DIST_BLOCK_2D, m_rows, n_counts, t, cs.order_c, cs.padded, &C)) return false;
    if (cs.bias && !make_operand(g, gBias, WEAVE_DIST_BLOCK_2D, one, n_counts, t, WEAVE_ORDER_COLUMN_MAJOR, false, &Bias))
      return false;
  }

  weave_plan_desc_t pd{};
  pd.operation = cs.operation;
  pd.group = g.group;
  pd.op_a = block2d ? WEAVE_OP_T : cs.op_a;
  pd.op_b = block2d ? WEAVE_OP_N : cs.op_b;
  pd.a = A.desc;
  pd.b = B.desc;
  pd.c = C.desc;
  pd.bias = cs.bias ? Bias.desc : nullptr;
  pd.algorithm = cs.algorithm;
  pd.direction = cs.direction;
  pd.chunks_per_shard = cs.chunks;
  pd.progress = cs.progress;
  pd.timeout_ms = 120000;
  pd.flags = cs.gathered ? WEAVE_FLAG_GATHERED_OUTPUT : 0;
  weave_plan_t plan = nullptr;
  CHECK_WEAVE(weave_plan_create(g.grid, &pd, &plan));
  std::unique_ptr<weave_plan_s, weave_status_t (*)(weave_plan_t)> plan_guard(plan, weave_plan_destroy);
  weave_plan_info_t info{};
  CHECK_WEAVE(weave_plan_get_info(plan, &info));
  if (info.group_size != P || info.group_rank != group_rank) {
    std::fprintf(stderr, "rank %d: plan reports group %d/%d, expected %d/%d\n", g_rank, info.group_rank,
                 info.group_size, group_rank, P);
    return false;
  }
  if (cs.algorithm != WEAVE_ALGORITHM_AUTO && P > 1 && info.algorithm != cs.algorithm) {
    std::fprintf(stderr, "rank %d: plan runs algorithm %d, asked for %d\n", g_rank, info.algorithm, cs.algorithm);
    return false;
  }

  const Reference ref = reference_product(op_a, op_b, c0, cs.bias ? &bias : nullptr, cs.alpha, cs.beta,
                                          unit_roundoff(t));
  // Gathered output: the stored A of the whole group, tight.
  LocalMatrix gathered;
  if (cs.gathered) {
    gathered.dtype = t;
    gathered.order = cs.order_a;
    gathered.rows = stored_a.rows;
    gathered.cols = stored_a.cols;
    gathered.ld = cs.order_a == WEAVE_ORDER_COLUMN_MAJOR ? std::max<int64_t>(1, gathered.rows) + 2
                                                         : std::max<int64_t>(1, gathered.cols) + 2;
    gathered.allocate();
  }

  bool ok = true;
  for (int repeat = 0; repeat < cs.repeats && ok; ++repeat) {
    // Reset C: beta == 0 must not read it, so it holds NaN; otherwise C0.
    for (int64_t j = 0; j < C.local.cols; ++j)
      for (int64_t i = 0; i < C.local.rows; ++i)
        C.local.set(i, j, cs.beta == 0.0 ? std::nan("") : c0(C.row_offset + i - (block2d ? grid_row * M : 0),
                                                           C.col_offset + j));
    for (int64_t j = 0; j < gathered.cols; ++j)
      for (int64_t i = 0; i < gathered.rows; ++i) gathered.set(i, j, std::nan(""));
    weave_execute_args_t args{};
    args.alpha = cs.alpha;
    args.beta = cs.beta;
    args.a = A.local.data();
    args.b = B.local.data();
    args.c = C.local.data();
    args.bias = cs.bias ? Bias.local.data() : nullptr;
    args.gathered_a = cs.gathered ? gathered.data() : nullptr;
    args.ld_gathered_a = gathered.ld;
    CHECK_WEAVE(weave_execute_ex(plan, &args));

    const int64_t c_row0 = C.row_offset - (block2d ? grid_row * M : 0);
    int reported = 0;
    for (int64_t j = 0; j < C.local.cols; ++j)
      for (int64_t i = 0; i < C.local.rows; ++i) {
        const double got = C.local.get(i, j), want = ref.c(c_row0 + i, C.col_offset + j),
                     bound = ref.bound(c_row0 + i, C.col_offset + j);
        if (!(std::fabs(got - want) <= bound)) {
          if (reported++ < 3)
            std::fprintf(stderr, "rank %d: C(%lld,%lld) = %.17g, expected %.17g (bound %.3g)\n", g_rank,
                         static_cast<long long>(c_row0 + i), static_cast<long long>(C.col_offset + j), got, want,
                         bound);
          ok = false;
        }
      }
    for (Operand* x : {&A, &B, &C})
      if (!x->local.padding_intact()) {
        std::fprintf(stderr, "rank %d: padding outside a local block was overwritten\n", g_rank);
        ok = false;
      }
    if (cs.gathered) {
      for (int64_t j = 0; j < gathered.cols; ++j)
        for (int64_t i = 0; i < gathered.rows; ++i)
          if (gathered.get(i, j) != static_cast<double>(cs.dtype == WEAVE_FLOAT32
                                                            ? static_cast<double>(static_cast<float>(stored_a(i, j)))
                                                            : stored_a(i, j))) {
            if (ok) std::fprintf(stderr, "rank %d: gathered A(%lld,%lld) wrong\n", g_rank, (long long)i, (long long)j);
            ok = false;
          }
      if (!gathered.padding_intact()) {
        std::fprintf(stderr, "rank %d: padding of gathered A overwritten\n", g_rank);
        ok = false;
      }
    }
  }
  return ok;
}

int run_case_list(int argc, char** argv,
                  const std::function<std::vector<Case>(bool quick, std::mt19937_64& rng)>& make_cases) {
  // Thread-level MPI so cases may use the host progress thread.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  bool quick = false;
  unsigned long long seed = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
  }
  // Fresh data every run unless a seed is given; rank 0's choice for all.
  if (seed == 0) seed = (static_cast<unsigned long long>(std::random_device{}()) << 32) ^ std::random_device{}();
  MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);

  std::mt19937_64 rng(seed);
  const std::vector<Case> cases = make_cases(quick, rng);
  int failures = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const uint64_t case_seed = seed + 7919ULL * i;
    int ok = run_case(cases[i], case_seed) ? 1 : 0, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
      ++failures;
      if (g_rank == 0)
        std::printf("FAIL case %zu (replay: --seed %llu): %s\n", i, seed, cases[i].name().c_str());
    }
  }
  if (g_rank == 0)
    std::printf("%s: %zu cases on %d ranks, %d failed (seed %llu)\n", failures ? "FAILED" : "PASSED", cases.size(),
                g_size, failures, seed);
  MPI_Finalize();
  return failures ? 1 : 0;
}

}  // namespace weave_test
