#include "support/case_runner.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <sstream>

#include "support/element_types.hpp"

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
  static const char* algs[] = {"auto", "ring", "seq", "direct", "pipelined", "hierarchical"};
  static const char* dirs[] = {"auto", "fwd", "bwd", "bidir"};
  // bias=0, or bias=<order>+<ld padding>: C+1 is column-major with ld 2.
  char bias_text[32] = "0";
  if (bias) std::snprintf(bias_text, sizeof bias_text, "%c+%d", order_bias ? 'R' : 'C', bias_ld_padding);
  char text[400];
  std::snprintf(text, sizeof text,
                "%s %s op=%c%c order=%c%c%c %s M=%lld N=%lld K=%lld bias=%s beta=%g alpha=%g pad=%d chunks=%d "
                "dir=%s alg=%s progress=%s grid=%s gathered=%d repeats=%d%s%s%s%s",
                ops[operation], dtype_short_name(dtype), op_a == WEAVE_OP_N ? 'N' : 'T', op_b == WEAVE_OP_N ? 'N' : 'T',
                order_a ? 'R' : 'C', order_b ? 'R' : 'C', order_c ? 'R' : 'C', shards_name(shards),
                static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), bias_text, beta,
                alpha, padded ? 1 : 0, chunks, dirs[direction], algs[algorithm],
                progress == WEAVE_PROGRESS_THREAD ? "thread" : progress == WEAVE_PROGRESS_TILES ? "tiles" : "auto",
                grid_kind_name(grid), gathered ? 1 : 0, repeats, fresh_inputs ? " fresh-inputs" : "",
                allow_tf32 ? " tf32" : "", memory == WEAVE_MEMORY_DEVICE ? " memory=device" : "",
                reduce_in_accumulation_type ? " reduce-in-accumulation-type" : "");
  return text;
}

namespace {

DeviceMemory* g_device_memory = nullptr;

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

// Created on first use, destroyed before MPI_Finalize (with them the
// transports' per-grid state, e.g. NCCL communicators).
std::map<GridKind, GridInfo> g_grids;

void destroy_grids() {
  for (auto& [kind, info] : g_grids) weave_grid_destroy(info.grid);
  g_grids.clear();
}

bool make_grid(GridKind kind, GridInfo* out) {
  auto found = g_grids.find(kind);
  if (found != g_grids.end()) {
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
  g_grids[kind] = info;
  *out = info;
  return true;
}

// ---------------------------------------------------------------------------
// Local storage of one rank's block: a host image in the element type of
// kGuard guard elements, the block's storage from its first to its last
// element (what weave_matrix_local_elements asks for, gaps of a padded ld
// included), and kGuard guard elements more; for device cases a device copy
// of the whole image, uploaded and downloaded whole. Guards and gaps hold a
// sentinel that no execute may change.

struct LocalMatrix {
  const char* name = "";
  weave_dtype_t dtype = WEAVE_FLOAT64;
  weave_order_t order = WEAVE_ORDER_COLUMN_MAJOR;
  int64_t rows = 0, cols = 0, ld = 1;
  std::vector<unsigned char> image;
  void* device = nullptr;  // device cases only
  static constexpr double kSentinel = 12345.0;
  static constexpr int64_t kGuard = 16;

  LocalMatrix() = default;
  LocalMatrix(const LocalMatrix&) = delete;
  LocalMatrix& operator=(const LocalMatrix&) = delete;
  ~LocalMatrix() {
    if (device) g_device_memory->release(device);
  }

  // Position of element (i, j) in the image.
  int64_t index(int64_t i, int64_t j) const {
    return kGuard + (order == WEAVE_ORDER_COLUMN_MAJOR ? i + j * ld : i * ld + j);
  }
  bool empty() const { return rows == 0 || cols == 0; }
  // Elements from the block's first to its last.
  int64_t storage() const {
    if (empty()) return 0;
    return order == WEAVE_ORDER_COLUMN_MAJOR ? ld * (cols - 1) + rows : ld * (rows - 1) + cols;
  }
  int64_t image_elements() const { return kGuard + storage() + kGuard; }
  std::size_t bytes() const { return static_cast<std::size_t>(image_elements()) * element_size(dtype); }
  void allocate(weave_memory_t memory) {
    image.assign(bytes(), 0);
    for (int64_t p = 0; p < image_elements(); ++p) store_element(image.data(), p, dtype, kSentinel);
    if (memory == WEAVE_MEMORY_DEVICE) device = g_device_memory->allocate(bytes());
  }
  void set(int64_t i, int64_t j, double x) { store_element(image.data(), index(i, j), dtype, x); }
  double get(int64_t i, int64_t j) const { return load_element(image.data(), index(i, j), dtype); }
  // The block's first element, where Weave gets it.
  void* data() {
    if (empty()) return nullptr;  // empty blocks are passed as NULL
    unsigned char* base = device ? static_cast<unsigned char*>(device) : image.data();
    return base + kGuard * static_cast<int64_t>(element_size(dtype));
  }
  void upload() {
    if (device) g_device_memory->upload(device, image.data(), bytes());
  }
  void download() {
    if (device) g_device_memory->download(image.data(), device, bytes());
  }
  // Whether every element outside the rows x cols block (guards and ld
  // gaps) still holds the sentinel; reports the first one that does not.
  bool outside_intact() const {
    if (image.empty()) return true;  // not allocated: not part of this case
    const double sentinel = round_to(dtype, kSentinel);
    for (int64_t p = 0; p < image_elements(); ++p) {
      const int64_t s = p - kGuard;  // position in the storage
      if (s >= 0 && s < storage()) {
        const int64_t minor = s % ld, major = s / ld;
        const bool inside = order == WEAVE_ORDER_COLUMN_MAJOR ? (minor < rows && major < cols)
                                                              : (minor < cols && major < rows);
        if (inside) continue;
      }
      const double found = load_element(image.data(), p, dtype);
      if (found != sentinel) {
        std::fprintf(stderr, "rank %d: %s: %s element %lld of its storage holds %.17g, not the sentinel\n", g_rank,
                     name, s < 0 || s >= storage() ? "guard" : "ld-gap", static_cast<long long>(s), found);
        return false;
      }
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

// Creates the descriptor of a rows x cols matrix and this rank's storage,
// with a leading dimension `ld_padding` elements larger than tight.
bool describe_operand(const char* name, const GridInfo& g, int64_t rows, int64_t cols, weave_distribution_t dist,
                      const std::vector<int64_t>& row_counts, const std::vector<int64_t>& col_counts,
                      weave_dtype_t dtype, weave_order_t order, int64_t ld_padding, weave_memory_t memory,
                      Operand* out) {
  weave_matrix_desc_t d{};
  d.rows = rows;
  d.cols = cols;
  d.dtype = dtype;
  d.distribution = dist;
  d.group = g.group;
  d.row_counts = row_counts.empty() ? nullptr : row_counts.data();
  d.col_counts = col_counts.empty() ? nullptr : col_counts.data();
  d.order = order;
  d.memory = memory;
  // First ask for the tight block, then (padded) recreate with a larger ld.
  CHECK_WEAVE(weave_matrix_create(g.grid, &d, &out->desc));
  int64_t lr = 0, lc = 0, ld = 0;
  CHECK_WEAVE(weave_matrix_local_shape(out->desc, &lr, &lc));
  CHECK_WEAVE(weave_matrix_ld(out->desc, &ld));
  if (ld_padding > 0) {
    weave_matrix_destroy(out->desc);
    d.ld = ld + ld_padding;
    CHECK_WEAVE(weave_matrix_create(g.grid, &d, &out->desc));
    CHECK_WEAVE(weave_matrix_ld(out->desc, &ld));
  }
  CHECK_WEAVE(weave_matrix_local_offset(out->desc, &out->row_offset, &out->col_offset));
  out->local.name = name;
  out->local.dtype = dtype;
  out->local.order = order;
  out->local.rows = lr;
  out->local.cols = lc;
  out->local.ld = ld;
  // The storage between the guards is what Weave says to allocate.
  int64_t elements = 0;
  CHECK_WEAVE(weave_matrix_local_elements(out->desc, &elements));
  if (elements != out->local.storage()) {
    std::fprintf(stderr, "rank %d: %s: weave_matrix_local_elements = %lld for a %lld x %lld block with ld %lld\n",
                 g_rank, name, static_cast<long long>(elements), static_cast<long long>(lr),
                 static_cast<long long>(lc), static_cast<long long>(ld));
    return false;
  }
  out->local.allocate(memory);
  return true;
}

// Sets the operand's global matrix and copies this rank's block out of it.
void fill_operand(const Dense& global, Operand* x) {
  x->global = global;
  for (int64_t j = 0; j < x->local.cols; ++j)
    for (int64_t i = 0; i < x->local.rows; ++i) x->local.set(i, j, global(x->row_offset + i, x->col_offset + j));
}

// Random data as the element type holds it: 16-bit inputs are rounded, so
// the oracle multiplies exactly what the library multiplies. (float32 and
// float64 inputs stay as generated; their rounding is within the tolerance.)
Dense random_inputs(int64_t rows, int64_t cols, weave_dtype_t t, std::mt19937_64& rng) {
  Dense d = random_dense(rows, cols, rng);
  if (is_16bit(t))
    for (double& x : d.v) x = round_to(t, x);
  return d;
}

// ---------------------------------------------------------------------------

bool run_case_unguarded(const Case& cs, uint64_t seed) {
  const bool device = cs.memory == WEAVE_MEMORY_DEVICE;
  if (device && !g_device_memory) {
    std::fprintf(stderr, "rank %d: a device-memory case, but this program installed no device memory\n", g_rank);
    return false;
  }
  GridInfo g;
  if (!make_grid(cs.grid, &g)) return false;
  int group_size = 0, group_rank = 0, grid_row = 0, grid_col = 0;
  CHECK_WEAVE(weave_grid_group(g.grid, g.group, &group_size, &group_rank));
  CHECK_WEAVE(weave_grid_coords(g.grid, &grid_row, &grid_col));
  const int group_index = g.group == WEAVE_GROUP_ROW ? grid_row : g.group == WEAVE_GROUP_COLUMN ? grid_col : 0;
  const int P = group_size;
  const bool block2d = cs.grid == GridKind::Block2D;

  const int64_t M = cs.m, N = cs.n, K = cs.k;
  const bool ag = cs.operation == WEAVE_AG_GEMM, rs = cs.operation == WEAVE_GEMM_RS;
  const std::vector<int64_t> m_counts = make_counts(M, P, cs.shards);
  const Shards other = other_shards(cs.shards);
  const std::vector<int64_t> n_counts = make_counts(N, P, other);
  const std::vector<int64_t> k_counts = make_counts(K, P, other);

  // Descriptors and local storage; the data is filled per repeat below.
  Operand A, B, C, Bias;
  const weave_dtype_t t = cs.dtype;
  const weave_memory_t mem = cs.memory;
  const std::vector<int64_t> none;
  const int64_t pad = cs.padded ? 3 : 0;
  // 2-D block panels: grid row i owns panels with K_i = K + i rows.
  const int prows = g.prows;
  std::vector<int64_t> k_rows(static_cast<size_t>(prows)), m_rows(static_cast<size_t>(prows), M),
      one(static_cast<size_t>(prows), 1);
  int64_t k_total = 0;
  for (int i = 0; i < prows; ++i) k_total += (k_rows[i] = K + i);
  if (!block2d) {
    // op(A) split by rows (AG) or columns (RS/AR); expressed on the stored A.
    const bool a_rows_split = ag == (cs.op_a == WEAVE_OP_N);
    const std::vector<int64_t>& a_counts = ag ? m_counts : k_counts;
    const int64_t a_rows = cs.op_a == WEAVE_OP_N ? M : K, a_cols = cs.op_a == WEAVE_OP_N ? K : M;
    if (!describe_operand("A", g, a_rows, a_cols, a_rows_split ? WEAVE_DIST_BLOCK_ROW : WEAVE_DIST_BLOCK_COLUMN,
                          a_rows_split ? a_counts : none, a_rows_split ? none : a_counts, t, cs.order_a, pad, mem,
                          &A))
      return false;
    // op(B) split by columns (AG) or rows (RS/AR).
    const bool b_rows_split = ag == (cs.op_b == WEAVE_OP_T);
    const std::vector<int64_t>& b_counts = ag ? n_counts : k_counts;
    const int64_t b_rows = cs.op_b == WEAVE_OP_N ? K : N, b_cols = cs.op_b == WEAVE_OP_N ? N : K;
    if (!describe_operand("B", g, b_rows, b_cols, b_rows_split ? WEAVE_DIST_BLOCK_ROW : WEAVE_DIST_BLOCK_COLUMN,
                          b_rows_split ? b_counts : none, b_rows_split ? none : b_counts, t, cs.order_b, pad, mem,
                          &B))
      return false;
    const weave_distribution_t c_dist = ag ? WEAVE_DIST_BLOCK_COLUMN : rs ? WEAVE_DIST_BLOCK_ROW : WEAVE_DIST_REPLICATED;
    if (!describe_operand("C", g, M, N, c_dist, rs ? m_counts : none, ag ? n_counts : none, t, cs.order_c, pad, mem,
                          &C))
      return false;
    if (cs.bias && !describe_operand("bias", g, 1, N, ag ? WEAVE_DIST_BLOCK_COLUMN : WEAVE_DIST_REPLICATED, none,
                                     ag ? n_counts : none, t, cs.order_bias, cs.bias_ld_padding, mem, &Bias))
      return false;
  } else {
    // 2-D block over a prows x pcols grid, operation along grid rows. Only
    // AG-GEMM with op(A)=A^T fits every operand: A (K_i x M) with columns
    // split over the row, B (K_i x N) likewise, C (M x N) and bias (1 x N)
    // split by columns. The grid-wide matrices stack the panels.
    if (!describe_operand("A", g, k_total, M, WEAVE_DIST_BLOCK_2D, k_rows, m_counts, t, cs.order_a, pad, mem, &A))
      return false;
    if (!describe_operand("B", g, k_total, N, WEAVE_DIST_BLOCK_2D, k_rows, n_counts, t, cs.order_b, pad, mem, &B))
      return false;
    if (!describe_operand("C", g, prows * M, N, WEAVE_DIST_BLOCK_2D, m_rows, n_counts, t, cs.order_c, pad, mem, &C))
      return false;
    if (cs.bias && !describe_operand("bias", g, prows, N, WEAVE_DIST_BLOCK_2D, one, n_counts, t, cs.order_bias,
                                     cs.bias_ld_padding, mem, &Bias))
      return false;
  }

  // The group problem in op form, for the oracle, and the operands' data.
  Dense op_a, op_b, c0, stored_a;
  std::vector<double> bias(static_cast<size_t>(N));
  auto generate = [&](uint64_t data_seed) {
    if (!block2d) {
      // Each group has its own problem (its own seed).
      std::mt19937_64 rng(data_seed + 1000003ULL * static_cast<uint64_t>(group_index));
      op_a = random_inputs(M, K, t, rng);
      op_b = random_inputs(K, N, t, rng);
      c0 = random_inputs(M, N, t, rng);
      const Dense bias_row = random_inputs(1, N, t, rng);
      for (int64_t j = 0; j < N; ++j) bias[static_cast<size_t>(j)] = bias_row(0, j);
      stored_a = cs.op_a == WEAVE_OP_N ? op_a : transpose(op_a);
      fill_operand(stored_a, &A);
      fill_operand(cs.op_b == WEAVE_OP_N ? op_b : transpose(op_b), &B);
      fill_operand(c0, &C);
      if (cs.bias) fill_operand(bias_row, &Bias);
      return;
    }
    // 2-D block panels are cut from one grid-wide matrix.
    std::mt19937_64 grid_rng(data_seed);
    const Dense gA = random_inputs(k_total, M, t, grid_rng), gB = random_inputs(k_total, N, t, grid_rng),
                gC = random_inputs(prows * M, N, t, grid_rng), gBias = random_inputs(prows, N, t, grid_rng);
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
    stored_a = panel_a;
    c0 = Dense(M, N);
    for (int64_t j = 0; j < N; ++j) {
      for (int64_t i = 0; i < M; ++i) c0(i, j) = gC(grid_row * M + i, j);
      bias[static_cast<size_t>(j)] = gBias(grid_row, j);
    }
    fill_operand(gA, &A);
    fill_operand(gB, &B);
    fill_operand(gC, &C);
    if (cs.bias) fill_operand(gBias, &Bias);
  };

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
  pd.flags = (cs.gathered ? WEAVE_FLAG_GATHERED_OUTPUT : 0) | (cs.allow_tf32 ? WEAVE_FLAG_ALLOW_TF32 : 0) |
             (cs.reduce_in_accumulation_type ? WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE : 0);
  weave_plan_t plan = nullptr;
  CHECK_WEAVE(weave_plan_create(g.grid, &pd, &plan));
  // Tell the device memory first (it may hold a graph of this plan), then destroy.
  auto finish_plan = [](weave_plan_t p) {
    if (g_device_memory) g_device_memory->plan_finished(p);
    return weave_plan_destroy(p);
  };
  std::unique_ptr<weave_plan_s, decltype(finish_plan)> plan_guard(plan, finish_plan);
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
  const weave_backend_t expected_backend = device ? WEAVE_BACKEND_CUDA : WEAVE_BACKEND_HOST;
  if (info.backend != expected_backend) {
    std::fprintf(stderr, "rank %d: plan runs backend %d, expected %d for %s memory\n", g_rank, info.backend,
                 expected_backend, device ? "device" : "host");
    return false;
  }

  // Gathered output: the stored A of the whole group, with a padded ld.
  LocalMatrix gathered;
  if (cs.gathered) {
    gathered.name = "gathered A";
    gathered.dtype = t;
    gathered.order = cs.order_a;
    // Stored like A: op N: M x K; op T (and 2-D panels): K x M.
    const bool op_n = !block2d && cs.op_a == WEAVE_OP_N;
    const int64_t group_k = block2d ? k_rows[grid_row] : K;
    gathered.rows = op_n ? M : group_k;
    gathered.cols = op_n ? group_k : M;
    gathered.ld = cs.order_a == WEAVE_ORDER_COLUMN_MAJOR ? std::max<int64_t>(1, gathered.rows) + 2
                                                         : std::max<int64_t>(1, gathered.cols) + 2;
    gathered.allocate(mem);
  }

  bool ok = true;
  Reference ref;
  for (int repeat = 0; repeat < cs.repeats && ok; ++repeat) {
    if (repeat == 0 || cs.fresh_inputs) {
      generate(seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(repeat));
      // A 16-bit C is rounded once: by the step that finishes a reduction
      // (partial sums stay float32), or by AG-GEMM's GEMM, and once more
      // where AG-GEMM adds the bias afterwards. The algorithms that move
      // products (direct; pipelined for 16-bit C) round each rank's product
      // to C's type before it travels: one more, unless they move the
      // accumulation type; the hierarchical one rounds each node's partial
      // sum once more before it leaves the node.
      const bool sixteen_bit = t == WEAVE_FLOAT16 || t == WEAVE_BFLOAT16;
      const bool products = !ag && !cs.reduce_in_accumulation_type &&
                            (info.algorithm == WEAVE_ALGORITHM_DIRECT || info.algorithm == WEAVE_ALGORITHM_HIERARCHICAL ||
                             (info.algorithm == WEAVE_ALGORITHM_PIPELINED && sixteen_bit));
      const int roundings = info.algorithm == WEAVE_ALGORITHM_HIERARCHICAL && products ? 3
                            : (ag && cs.bias) || products                                ? 2
                                                                                         : 1;
      ref = reference_product(op_a, op_b, c0, cs.bias ? &bias : nullptr, cs.alpha, cs.beta,
                              accumulation_roundoff(t, cs.allow_tf32), roundings * output_roundoff(t),
                              roundings * output_underflow(t));
    }
    // Reset C: beta == 0 must not read it, so it holds NaN; otherwise C0.
    const int64_t c_row0 = C.row_offset - (block2d ? grid_row * M : 0);
    for (int64_t j = 0; j < C.local.cols; ++j)
      for (int64_t i = 0; i < C.local.rows; ++i)
        C.local.set(i, j, cs.beta == 0.0 ? std::nan("") : c0(c_row0 + i, C.col_offset + j));
    for (int64_t j = 0; j < gathered.cols; ++j)
      for (int64_t i = 0; i < gathered.rows; ++i) gathered.set(i, j, std::nan(""));
    LocalMatrix* const inputs[] = {&A.local, &B.local, &Bias.local};
    LocalMatrix* const outputs[] = {&C.local, &gathered};
    for (LocalMatrix* x : inputs) x->upload();
    for (LocalMatrix* x : outputs) x->upload();
    // Weave reads the inputs and never writes them: every byte (block,
    // gaps, guards) must come back as uploaded.
    std::vector<std::vector<unsigned char>> uploaded;
    for (const LocalMatrix* x : inputs) uploaded.push_back(x->image);

    weave_execute_args_t args{};
    args.alpha = cs.alpha;
    args.beta = cs.beta;
    args.a = A.local.data();
    args.b = B.local.data();
    args.c = C.local.data();
    args.bias = cs.bias ? Bias.local.data() : nullptr;
    args.gathered_a = cs.gathered ? gathered.data() : nullptr;
    args.ld_gathered_a = gathered.ld;
    CHECK_WEAVE(device ? g_device_memory->execute(plan, args) : weave_execute_ex(plan, &args));
    for (LocalMatrix* x : inputs) x->download();
    for (LocalMatrix* x : outputs) x->download();
    for (std::size_t q = 0; q < uploaded.size(); ++q)
      if (inputs[q]->image != uploaded[q]) {
        std::fprintf(stderr, "rank %d: repeat %d: input %s was written\n", g_rank, repeat, inputs[q]->name);
        ok = false;
      }
    for (const LocalMatrix* x : outputs)
      if (!x->outside_intact()) ok = false;

    int reported = 0;
    for (int64_t j = 0; j < C.local.cols; ++j)
      for (int64_t i = 0; i < C.local.rows; ++i) {
        const double got = C.local.get(i, j), want = ref.c(c_row0 + i, C.col_offset + j),
                     bound = ref.bound(c_row0 + i, C.col_offset + j);
        if (!(std::fabs(got - want) <= bound)) {
          if (reported++ < 3)
            std::fprintf(stderr, "rank %d: repeat %d: C(%lld,%lld) = %.17g, expected %.17g (bound %.3g)\n", g_rank,
                         repeat, static_cast<long long>(c_row0 + i), static_cast<long long>(C.col_offset + j), got,
                         want, bound);
          ok = false;
        }
      }
    if (cs.gathered) {
      for (int64_t j = 0; j < gathered.cols; ++j)
        for (int64_t i = 0; i < gathered.rows; ++i)
          if (gathered.get(i, j) != round_to(t, stored_a(i, j))) {
            if (ok) std::fprintf(stderr, "rank %d: gathered A(%lld,%lld) wrong\n", g_rank, (long long)i, (long long)j);
            ok = false;
          }
    }
  }
  return ok;
}

// Argument parsing of the case-list programs.
bool parse_types(const std::string& text, std::vector<weave_dtype_t>* types) {
  types->clear();
  if (text == "all") {
    *types = {WEAVE_FLOAT64, WEAVE_FLOAT32, WEAVE_FLOAT16, WEAVE_BFLOAT16};
    return true;
  }
  std::stringstream list(text);
  std::string name;
  while (std::getline(list, name, ',')) {
    bool known = false;
    for (weave_dtype_t t : {WEAVE_FLOAT64, WEAVE_FLOAT32, WEAVE_FLOAT16, WEAVE_BFLOAT16})
      if (name == dtype_short_name(t)) {
        types->push_back(t);
        known = true;
      }
    if (!known) return false;
  }
  return !types->empty();
}

struct ParsedArguments {
  CaseListOptions options;
  unsigned long long seed = 0;
  std::string error;
};

ParsedArguments parse_arguments(int argc, char** argv) {
  ParsedArguments parsed;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--quick") {
      parsed.options.quick = true;
    } else if (arg == "--seed" && has_value) {
      parsed.seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--memory" && has_value) {
      const std::string value = argv[++i];
      if (value == "host")
        parsed.options.memory = WEAVE_MEMORY_HOST;
      else if (value == "device")
        parsed.options.memory = WEAVE_MEMORY_DEVICE;
      else
        parsed.error = "--memory " + value + ": expected host or device";
    } else if (arg == "--types" && has_value) {
      const std::string value = argv[++i];
      if (!parse_types(value, &parsed.options.types))
        parsed.error = "--types " + value + ": expected all or a comma-separated list of f64, f32, f16, bf16";
    } else {
      parsed.error = "unknown argument " + arg + " (expected --quick, --seed S, --memory host|device, --types LIST)";
    }
  }
  return parsed;
}

// Every rank's answer to `local_ok`, agreed (MPI_MIN).
bool all_ranks(bool local_ok) {
  int mine = local_ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all != 0;
}

}  // namespace

void set_device_memory(DeviceMemory* memory) { g_device_memory = memory; }

bool run_case(const Case& c, uint64_t seed) {
  try {
    return run_case_unguarded(c, seed);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", g_rank, e.what());
    return false;
  }
}

int run_case_list(int argc, char** argv, const CaseGenerator& make_cases) {
  // Thread-level MPI so cases may use the host progress thread.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const ParsedArguments parsed = parse_arguments(argc, argv);
  if (!parsed.error.empty()) {
    if (g_rank == 0) std::fprintf(stderr, "%s\n", parsed.error.c_str());
    MPI_Finalize();
    return 1;
  }
  const CaseListOptions& options = parsed.options;
  if (options.memory == WEAVE_MEMORY_DEVICE) {
    // Device cases need a device on every rank; without one the program is
    // skipped (exit code kSkipExitCode), never passed.
    if (!g_device_memory) {
      if (g_rank == 0) std::fprintf(stderr, "--memory device: this program was built without device support\n");
      MPI_Finalize();
      return 1;
    }
    std::string why_not;
    const bool attached = g_device_memory->attach(&why_not);
    if (!all_ranks(attached)) {
      if (!attached) std::printf("SKIPPED on rank %d: %s\n", g_rank, why_not.c_str());
      std::fflush(stdout);
      MPI_Finalize();
      return kSkipExitCode;
    }
  }
  unsigned long long seed = parsed.seed;
  // Fresh data every run unless a seed is given; rank 0's choice for all.
  if (seed == 0) seed = (static_cast<unsigned long long>(std::random_device{}()) << 32) ^ std::random_device{}();
  MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);

  std::mt19937_64 rng(seed);
  std::vector<Case> cases = make_cases(options, rng);
  for (Case& c : cases) c.memory = options.memory;
  int failures = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const uint64_t case_seed = seed + 7919ULL * i;
    if (!all_ranks(run_case(cases[i], case_seed))) {
      ++failures;
      if (g_rank == 0)
        std::printf("FAIL case %zu (replay: --seed %llu): %s\n", i, seed, cases[i].name().c_str());
    }
  }
  if (g_rank == 0)
    std::printf("%s: %zu cases on %d ranks, %s memory, %d failed (seed %llu)\n", failures ? "FAILED" : "PASSED",
                cases.size(), g_size, options.memory == WEAVE_MEMORY_DEVICE ? "device" : "host", failures, seed);
  destroy_grids();
  MPI_Finalize();
  return failures ? 1 : 0;
}

}  // namespace weave_test
