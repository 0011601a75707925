// The case lists of the test programs, shared by the host (tests/mpi) and
// device (tests/gpu) programs, which differ only in where the matrices live
// and which element types run (CaseListOptions).
//
//   sweep_cases:  the deterministic matrix: every operation, element type,
//                 transpose pair, storage order, shard pattern (balanced,
//                 uneven, with empty shards), bias on/off (column- and
//                 row-major, tight and with a padded ld), beta zero/non-zero,
//                 chunking, ring direction, algorithm, host progress
//                 mechanism and grid (1-D both ways, 2-D by rows and by
//                 columns, 2-D block panels), and degenerate sizes.
//   random_cases: random sizes (including tiny and zero), random uneven
//                 counts and random choices of everything else.
//   fp8_cases:    FP8 A and B (both formats, the pairs that multiply) with
//                 every scale mode, into bf16, f16 and f32 C: every
//                 operation, transpose pair, shard pattern (a rank with no
//                 rows, and so no scales, included), bias, beta, chunks 1-4,
//                 algorithm, the gathered output with its scales; and
//                 AG-GEMM with a wire type (A stored wider, quantized once
//                 into e4m3 with row-wise scales, or rounded to bf16).
#pragma once

#include <algorithm>
#include <random>
#include <vector>

#include "support/case_runner.hpp"
#include "support/element_types.hpp"

namespace weave_test {

// The layouts of a 1 x N bias the lists run in turn: column-major tight (ld
// 1, entries adjacent) and with ld 2 (entries two apart), row-major tight
// and with two elements of padding after the row.
constexpr int kBiasLayouts = 4;
inline void set_bias_layout(Case& c, int layout) {
  c.order_bias = layout < 2 ? WEAVE_ORDER_COLUMN_MAJOR : WEAVE_ORDER_ROW_MAJOR;
  c.bias_ld_padding = layout % 2 == 0 ? 0 : layout < 2 ? 1 : 2;
}

// Scalars, padding and storage orders rotated with a case counter, so
// that each meets every operation and type.
inline void rotate_layouts(Case& c, int counter) {
  c.alpha = counter % 3 == 0 ? 1.0 : 1.5;
  c.padded = counter % 4 == 1;
  c.order_a = counter % 3 == 2 ? WEAVE_ORDER_ROW_MAJOR : WEAVE_ORDER_COLUMN_MAJOR;
  c.order_b = counter % 5 == 3 ? WEAVE_ORDER_ROW_MAJOR : WEAVE_ORDER_COLUMN_MAJOR;
  c.order_c = counter % 4 == 2 ? WEAVE_ORDER_ROW_MAJOR : WEAVE_ORDER_COLUMN_MAJOR;
}

// Complex types: complex alpha and beta (beta zero stays zero, so C is not
// read), and the conjugate transpose in place of every other transpose.
inline void make_complex_variant(Case& c, int counter) {
  if (c.dtype != WEAVE_COMPLEX64 && c.dtype != WEAVE_COMPLEX128) return;
  c.alpha_imag = counter % 2 ? 0.5 : -0.25;
  c.beta_imag = c.beta != 0.0 ? 0.375 : 0.0;
  // (Quick lists keep every fourth case: vary with counter / 4 and / 8.)
  if (c.op_a == WEAVE_OP_T && (counter / 4) % 2 == 0) c.op_a = WEAVE_OP_C;
  if (c.op_b == WEAVE_OP_T && (counter / 8) % 2 == 0) c.op_b = WEAVE_OP_C;
}

template <class T>
T pick(const std::vector<T>& choices, std::mt19937_64& rng) {
  return choices[std::uniform_int_distribution<std::size_t>(0, choices.size() - 1)(rng)];
}

inline std::vector<Case> sweep_cases(const CaseListOptions& options, std::mt19937_64&) {
  std::vector<Case> cases;
  const bool quick = options.quick;
  const weave_operation_t operations[] = {WEAVE_AG_GEMM, WEAVE_GEMM_RS, WEAVE_GEMM_AR};
  const Shards shard_patterns[] = {Shards::Balanced, Shards::Uneven, Shards::WithEmpty};
  const weave_op_t ops[] = {WEAVE_OP_N, WEAVE_OP_T};
  const GridKind grids[] = {GridKind::Column1D, GridKind::Row1D, GridKind::Rows2D, GridKind::Columns2D};
  const int chunk_choices[] = {1, 2, 3};
  const weave_direction_t directions[] = {WEAVE_DIRECTION_FORWARD, WEAVE_DIRECTION_BACKWARD,
                                          WEAVE_DIRECTION_BIDIRECTIONAL};
  int counter = 0;
  // Full cross of operation x type x transposes x shards, each run twice
  // with rotating variants so bias (and its layout), beta, chunking,
  // direction, algorithm, order, padding and grid all meet every operation.
  for (weave_operation_t op : operations)
    for (weave_dtype_t t : options.types)
      for (weave_op_t oa : ops)
        for (weave_op_t ob : ops)
          for (Shards s : shard_patterns)
            for (int variant = 0; variant < 2; ++variant) {
              Case c;
              c.operation = op;
              c.dtype = t;
              c.op_a = oa;
              c.op_b = ob;
              c.shards = s;
              c.m = 13 + counter % 7;
              c.n = 11 + counter % 5;
              c.k = 9 + counter % 6;
              c.bias = variant == 0;
              set_bias_layout(c, (counter / 6) % kBiasLayouts);
              c.beta = variant == 0 ? 0.0 : -0.75;
              rotate_layouts(c, counter);
              c.direction = directions[counter % 3];
              // Bidirectional reductions split shards in halves (two chunks
              // at least); AG-GEMM sends whole shards, any chunk count.
              c.chunks = c.direction == WEAVE_DIRECTION_BIDIRECTIONAL && op != WEAVE_AG_GEMM ? 2 + counter % 2
                                                                                            : chunk_choices[counter % 3];
              c.algorithm = counter % 6 == 5 ? WEAVE_ALGORITHM_SEQUENTIAL : WEAVE_ALGORITHM_RING;
              if (counter % 6 == 2) {  // the direct algorithm has no direction
                c.algorithm = WEAVE_ALGORITHM_DIRECT;
                c.direction = WEAVE_DIRECTION_AUTO;
              }
              if (counter % 6 == 4 || counter % 12 == 3) {  // nor do the pipelined and hierarchical ones
                c.algorithm = counter % 6 == 4 ? WEAVE_ALGORITHM_PIPELINED : WEAVE_ALGORITHM_HIERARCHICAL;
                c.direction = WEAVE_DIRECTION_AUTO;
              }
              // The algorithms that move products, asked to move the
              // accumulation type instead (16-bit C: float32).
              c.reduce_in_accumulation_type = op != WEAVE_AG_GEMM && counter % 4 == 3 &&
                                              (c.algorithm == WEAVE_ALGORITHM_DIRECT || c.algorithm == WEAVE_ALGORITHM_PIPELINED ||
                                               c.algorithm == WEAVE_ALGORITHM_HIERARCHICAL);
              c.progress = counter % 3 == 1 ? WEAVE_PROGRESS_THREAD : WEAVE_PROGRESS_TILES;
              c.grid = grids[(counter / 2) % 4];
              c.gathered = op == WEAVE_AG_GEMM && counter % 5 == 0;
              c.repeats = counter % 7 == 0 ? 2 : 1;
              make_complex_variant(c, counter);
              ++counter;
              if (!quick || counter % 4 == 0) cases.push_back(c);
            }
  // 2-D block panels, and degenerate sizes (K = 0, N smaller than P), in
  // the first (and second) type asked for.
  const weave_dtype_t first = options.types.front(), second = options.types.size() > 1 ? options.types[1] : first;
  for (int variant = 0; variant < 4; ++variant) {
    Case c;
    c.operation = WEAVE_AG_GEMM;
    c.dtype = variant % 2 ? second : first;
    c.grid = GridKind::Block2D;
    c.m = 10;
    c.n = 9;
    c.k = 7;
    c.shards = variant < 2 ? Shards::Uneven : Shards::WithEmpty;
    c.bias = variant != 1;
    c.beta = variant == 2 ? 0.5 : 0.0;
    c.chunks = 1 + variant % 2;
    c.algorithm = variant == 3 ? WEAVE_ALGORITHM_SEQUENTIAL : WEAVE_ALGORITHM_RING;
    c.order_a = variant == 1 ? WEAVE_ORDER_ROW_MAJOR : WEAVE_ORDER_COLUMN_MAJOR;
    set_bias_layout(c, variant == 0 ? 1 : variant == 2 ? 3 : 0);
    cases.push_back(c);
  }
  for (weave_operation_t op : operations)
    for (int variant = 0; variant < 3; ++variant) {
      Case c;
      c.operation = op;
      c.dtype = first;
      c.m = variant == 0 ? 1 : 8;
      c.n = variant == 1 ? 2 : 6;
      c.k = variant == 2 ? 0 : 5;
      c.shards = Shards::WithEmpty;
      c.bias = true;
      set_bias_layout(c, variant + 1);
      c.beta = variant == 1 ? 2.0 : 0.0;
      c.chunks = 2;
      c.algorithm = WEAVE_ALGORITHM_RING;
      cases.push_back(c);
    }
  // Empty products (N = 0, then M = 0) under every reduction algorithm: a
  // rank whose products are all empty has no workspace, and peers that
  // read from it (the SM transport's fused sums) must not need its address.
  for (weave_operation_t op : {WEAVE_GEMM_RS, WEAVE_GEMM_AR})
    for (int variant = 0; variant < 4; ++variant) {
      Case c;
      c.operation = op;
      c.dtype = options.types.front();
      c.m = variant < 2 ? 5 : 0;
      c.n = variant < 2 ? 0 : 7;
      c.k = 35;
      c.shards = Shards::WithEmpty;
      c.bias = variant % 2 == 0;
      c.beta = variant == 1 ? 0.5 : 0.0;
      c.chunks = 1;
      c.algorithm = variant % 2 ? WEAVE_ALGORITHM_RING : WEAVE_ALGORITHM_DIRECT;
      cases.push_back(c);
    }
  // Rows that are whole 16-byte vectors in every type (N a multiple of 8,
  // tight leading dimensions): the CUDA backend's element-wise steps take
  // its vector kernel here (the sizes above take the scalar one). Row-major
  // C as tensor-parallel codes store it, and column-major C, where the
  // vector runs down a column and bias is one value per column. The bias is
  // a vector of its own when tight and row-major, strided when column-major
  // with ld 2 or 3 (then the kernel reads it entry by entry).
  for (weave_operation_t op : operations)
    for (weave_dtype_t t : options.types)
      for (int variant = 0; variant < 4; ++variant) {
        Case c;
        c.operation = op;
        c.dtype = t;
        c.m = 64;
        c.n = 24;
        c.k = 16;
        c.op_b = WEAVE_OP_T;
        c.order_a = c.order_b = WEAVE_ORDER_ROW_MAJOR;
        c.order_c = variant == 3 ? WEAVE_ORDER_COLUMN_MAJOR : WEAVE_ORDER_ROW_MAJOR;
        c.shards = variant == 2 ? Shards::Uneven : Shards::Balanced;
        c.bias = variant != 1;
        set_bias_layout(c, variant == 0 ? 2 : 1);
        if (variant == 3) c.bias_ld_padding = 2;  // ld 3
        c.beta = variant % 2 ? -0.75 : 0.0;
        c.chunks = 1 + variant % 2;  // one chunk: a device reduction ring then runs forward
        c.algorithm = variant < 2 && (op != WEAVE_AG_GEMM || variant == 0) ? WEAVE_ALGORITHM_DIRECT : WEAVE_ALGORITHM_RING;
        c.gathered = op == WEAVE_AG_GEMM && variant == 1;
        cases.push_back(c);
      }
  // Pipelined reductions of each 16-bit type asked for, beta and bias on
  // and off, uneven and empty shards (kept by --quick: what groups across
  // nodes run automatically). Over two ranks whose transport's collectives
  // sum 16-bit types (NCCL) each chunk's products go to the library's
  // reduce-scatter or all-reduce, beta * C and the bias entering once, in
  // the pass that finishes the chunk; elsewhere they travel point to point.
  for (weave_operation_t op : {WEAVE_GEMM_RS, WEAVE_GEMM_AR})
    for (weave_dtype_t t : options.types) {
      if (!is_16bit(t)) continue;
      for (int variant = 0; variant < 3; ++variant) {
        Case c;
        c.operation = op;
        c.dtype = t;
        c.m = 40 + 3 * variant;
        c.n = 24 + variant;
        c.k = 32;
        c.order_c = variant == 1 ? WEAVE_ORDER_COLUMN_MAJOR : WEAVE_ORDER_ROW_MAJOR;
        c.shards = variant == 0 ? Shards::Balanced : variant == 1 ? Shards::Uneven : Shards::WithEmpty;
        c.bias = variant != 0;
        set_bias_layout(c, variant);
        c.beta = variant == 2 ? -0.75 : 0.0;
        c.alpha = variant == 1 ? 1.5 : 1.0;
        c.chunks = 1 + variant;
        c.algorithm = WEAVE_ALGORITHM_PIPELINED;
        cases.push_back(c);
      }
    }
  // Device float32 with TF32 tensor cores allowed (looser tolerance).
  const bool f32 = std::find(options.types.begin(), options.types.end(), WEAVE_FLOAT32) != options.types.end();
  if (options.memory == WEAVE_MEMORY_DEVICE && f32)
    for (weave_operation_t op : operations) {
      Case c;
      c.operation = op;
      c.dtype = WEAVE_FLOAT32;
      c.allow_tf32 = true;
      c.m = 33;
      c.n = 17;
      c.k = 40;
      c.shards = Shards::Uneven;
      c.bias = true;
      c.beta = 0.5;
      c.chunks = 2;
      c.algorithm = WEAVE_ALGORITHM_RING;
      cases.push_back(c);
    }
  return cases;
}

// WEAVE_GEMM over every grid shape of the world (1 x P, P x 1 and the 2-D
// ones: 2 x 2 at 4 ranks, 2 x 3 and 3 x 2 at 6), with block-cyclic layouts
// of block sizes 1, 2, 7, 32 and whole-matrix blocks, sources off grid
// (0, 0), blocks of A, B and C that differ (panels are their common
// refinement), one block per process, replicated operands, submatrices
// starting inside their local arrays, odd sizes and K = 0, every transpose
// pair (WEAVE_OP_C too), beta and bias, both algorithms (SUMMA in panels
// and in bands of C) and both host progress mechanisms, narrow panels
// through few slots, and panels joined from blocks that lie apart in an
// owner's local array (packed).
inline std::vector<Case> gemm_cases(const CaseListOptions& options, std::mt19937_64&) {
  std::vector<Case> cases;
  std::vector<int> grid_rows;
  for (int r = 1; r <= g_size; ++r)
    if (g_size % r == 0) grid_rows.push_back(r);
  using Kind = GridLayoutSpec::Kind;
  auto cyclic = [](int64_t mb, int64_t nb, int rsrc = 0, int csrc = 0) {
    GridLayoutSpec s;
    s.mb = mb;
    s.nb = nb;
    s.rsrc = rsrc;
    s.csrc = csrc;
    return s;
  };
  auto of_kind = [](Kind kind) {
    GridLayoutSpec s;
    s.kind = kind;
    return s;
  };
  struct Sizes {
    int64_t m, n, k;
  };
  const Sizes sizes[] = {{37, 23, 29}, {13, 11, 9}, {5, 17, 41}, {8, 6, 0}, {1, 3, 2}, {64, 33, 70}};
  const weave_op_t ops[] = {WEAVE_OP_N, WEAVE_OP_T, WEAVE_OP_C};
  int counter = 0;
  for (int rows : grid_rows) {
    const int cols = g_size / rows, last_row = rows - 1, last_col = cols - 1;
    // A, B, C layouts: the same block size everywhere (1, 2, 7, 32,
    // whole-matrix), sources off (0, 0), mixed block sizes, one block per
    // process, replicated A.
    const std::vector<std::array<GridLayoutSpec, 3>> layouts = {
        {cyclic(1, 1), cyclic(1, 1), cyclic(1, 1)},
        {cyclic(2, 2), cyclic(2, 2), cyclic(2, 2)},
        {cyclic(7, 7, last_row, last_col), cyclic(7, 7, last_row, last_col), cyclic(7, 7, last_row, last_col)},
        {cyclic(32, 32), cyclic(32, 32), cyclic(32, 32)},
        {cyclic(100, 100), cyclic(100, 100), cyclic(100, 100)},
        {cyclic(2, 7), cyclic(7, 1, last_row, 0), cyclic(3, 2, 0, last_col)},
        {of_kind(Kind::Block2D), of_kind(Kind::Block2D), of_kind(Kind::Block2D)},
        {of_kind(Kind::Replicated), cyclic(4, 4), cyclic(4, 4)}};
    for (std::size_t l = 0; l < layouts.size(); ++l)
      for (int pair = 0; pair < 4; ++pair) {
        Case c;
        c.operation = WEAVE_GEMM;
        c.dtype = options.types[static_cast<std::size_t>(counter) % options.types.size()];
        c.grid_rows = rows;
        const Sizes& z = sizes[counter % 6];
        c.m = z.m;
        c.n = z.n;
        c.k = z.k;
        c.op_a = pair % 2 ? ops[1 + counter % 2] : WEAVE_OP_N;
        c.op_b = pair / 2 ? ops[1 + (counter / 2) % 2] : WEAVE_OP_N;
        c.layout_a = layouts[l][0];
        c.layout_b = layouts[l][1];
        c.layout_c = layouts[l][2];
        c.bias = counter % 3 != 0;
        // Bias in C's column layout on every grid row, or laid out otherwise.
        c.layout_bias = counter % 2 ? c.layout_c : cyclic(1, 3, 0, 0);
        if (c.layout_bias.kind == Kind::Cyclic && counter % 2) {
          c.layout_bias.mb = 1;
          c.layout_bias.rsrc = -1;
        }
        if (c.layout_bias.kind == Kind::Block2D) c.layout_bias = of_kind(Kind::Replicated);
        // Its local array's order and ld, in turn (the operations' lists do the same).
        set_bias_layout(c, (counter / 3) % kBiasLayouts);
        c.beta = counter % 2 ? 0.0 : -0.75;
        c.alpha = counter % 3 == 1 ? 1.5 : 1.0;
        c.padded = counter % 4 == 1;
        c.order_a = counter % 5 == 3 ? WEAVE_ORDER_ROW_MAJOR : WEAVE_ORDER_COLUMN_MAJOR;
        c.order_b = counter % 7 == 2 ? WEAVE_ORDER_ROW_MAJOR : WEAVE_ORDER_COLUMN_MAJOR;
        c.algorithm = counter % 4 == 3   ? WEAVE_ALGORITHM_SEQUENTIAL
                      : counter % 4 == 1 ? WEAVE_ALGORITHM_AUTO
                                         : WEAVE_ALGORITHM_SUMMA;
        c.progress = counter % 3 == 2 ? WEAVE_PROGRESS_THREAD : WEAVE_PROGRESS_TILES;
        c.panel_width = counter % 5 == 0 ? 3 : 0;
        // SUMMA in bands of C (WEAVE_GEMM_BANDS): 2 or 3 bands under the
        // automatic algorithm, one band under SUMMA asked for by name.
        c.gemm_bands = counter % 4 == 1 ? 2 + counter % 2 : counter % 8 == 2 ? 1 : -1;
        c.repeats = counter % 9 == 0 ? 2 : 1;
        make_complex_variant(c, counter);
        ++counter;
        if (!options.quick || counter % 3 == 0) cases.push_back(c);
      }
    // Submatrices (pdgemm's IA, JA): A, B and C start inside their local
    // arrays, at different places.
    for (int variant = 0; variant < 2; ++variant) {
      Case c;
      c.operation = WEAVE_GEMM;
      c.dtype = options.types.front();
      c.grid_rows = rows;
      c.m = 19;
      c.n = 14;
      c.k = 23;
      c.layout_a = cyclic(4, 4);
      c.layout_a.row_start = 5;
      c.layout_a.col_start = 3;
      c.layout_b = cyclic(4, 4);
      c.layout_b.row_start = 2;
      c.layout_b.col_start = variant ? 4 * cols : 6;
      c.layout_c = cyclic(4, 4);
      c.layout_c.row_start = variant ? 4 * rows + 1 : 1;
      c.layout_c.col_start = 6;
      c.op_a = variant ? WEAVE_OP_T : WEAVE_OP_N;
      c.bias = true;
      c.layout_bias = cyclic(1, 4, -1, 0);
      c.layout_bias.col_start = 6;
      set_bias_layout(c, variant ? 3 : 1);  // padded ld, both orders
      c.beta = 0.5;
      c.algorithm = variant ? WEAVE_ALGORITHM_SEQUENTIAL : WEAVE_ALGORITHM_SUMMA;
      cases.push_back(c);
    }
    // Submatrices of replicated dimensions (a source of -1): A's rows held
    // by every grid row and B's columns by every grid column, each starting
    // inside every local array.
    for (int variant = 0; variant < 2; ++variant) {
      Case c;
      c.operation = WEAVE_GEMM;
      c.dtype = options.types.back();
      c.grid_rows = rows;
      c.m = 11;
      c.n = 9;
      c.k = 13;
      c.layout_a = cyclic(3, 2, -1, last_col);
      c.layout_a.row_start = 4;
      c.layout_a.col_start = 3;
      c.layout_b = cyclic(2, 5, 0, -1);
      c.layout_b.row_start = 1;
      c.layout_b.col_start = 7;
      c.layout_c = cyclic(2, 2);
      c.layout_c.row_start = variant;
      c.op_b = variant ? WEAVE_OP_T : WEAVE_OP_N;
      c.padded = variant == 1;
      c.bias = variant == 0;
      c.layout_bias = cyclic(1, 2, -1, 0);
      c.beta = variant ? 0.0 : -0.5;
      c.algorithm = variant ? WEAVE_ALGORITHM_SEQUENTIAL : WEAVE_ALGORITHM_SUMMA;
      cases.push_back(c);
    }
    // Panels joined from blocks of one owner pair that lie apart in op(B)'s
    // local array (1 x P), op(A)'s (P x 1) or both (2 x 3), packed into
    // the panel before it is sent or multiplied: blocks of 4 under the
    // default width (the host's and the device's) and under a width of 10,
    // which splits blocks between panels.
    for (int variant = 0; variant < 2; ++variant) {
      Case c;
      c.operation = WEAVE_GEMM;
      c.dtype = variant ? options.types.back() : options.types.front();  // on GPUs: f64 and bf16
      c.grid_rows = rows;
      c.m = 21;
      c.n = 18;
      c.k = 70;
      c.layout_a = cyclic(4, 4, 0, last_col);
      c.layout_b = cyclic(4, 4, last_row, 0);
      c.layout_c = cyclic(4, 4);
      c.bias = variant == 0;
      c.layout_bias = cyclic(1, 4, -1, 0);
      set_bias_layout(c, 2);  // row-major
      c.beta = variant ? 0.0 : 0.5;
      c.alpha = variant ? -1.0 : 1.0;
      c.padded = variant == 1;
      c.panel_width = variant ? 10 : 0;
      c.algorithm = WEAVE_ALGORITHM_SUMMA;
      c.progress = variant ? WEAVE_PROGRESS_THREAD : WEAVE_PROGRESS_TILES;
      cases.push_back(c);
    }
  }
  return cases;
}

inline std::vector<Case> random_cases(const CaseListOptions& options, std::mt19937_64& rng) {
  const std::vector<weave_operation_t> operations{WEAVE_AG_GEMM, WEAVE_GEMM_RS, WEAVE_GEMM_AR};
  const std::vector<weave_op_t> ops{WEAVE_OP_N, WEAVE_OP_T};
  const std::vector<weave_order_t> orders{WEAVE_ORDER_COLUMN_MAJOR, WEAVE_ORDER_ROW_MAJOR};
  const std::vector<Shards> shards{Shards::Balanced, Shards::Uneven, Shards::WithEmpty};
  const std::vector<weave_direction_t> directions{WEAVE_DIRECTION_FORWARD, WEAVE_DIRECTION_BACKWARD,
                                                  WEAVE_DIRECTION_BIDIRECTIONAL};
  const std::vector<weave_algorithm_t> algorithms{WEAVE_ALGORITHM_RING,   WEAVE_ALGORITHM_RING,
                                                  WEAVE_ALGORITHM_SEQUENTIAL, WEAVE_ALGORITHM_AUTO,
                                                  WEAVE_ALGORITHM_DIRECT, WEAVE_ALGORITHM_PIPELINED,
                                                  WEAVE_ALGORITHM_HIERARCHICAL};
  const std::vector<GridKind> grids{GridKind::Column1D, GridKind::Row1D, GridKind::Rows2D, GridKind::Columns2D};
  const std::vector<bool> flags{false, true};
  std::uniform_int_distribution<int64_t> size(0, 40);
  std::vector<Case> cases;
  const int count = options.quick ? 40 : 160;
  for (int i = 0; i < count; ++i) {
    Case c;
    c.operation = pick(operations, rng);
    c.dtype = pick(options.types, rng);
    c.op_a = pick(ops, rng);
    c.op_b = pick(ops, rng);
    c.order_a = pick(orders, rng);
    c.order_b = pick(orders, rng);
    c.order_c = pick(orders, rng);
    c.shards = pick(shards, rng);
    c.m = size(rng);
    c.n = size(rng);
    c.k = size(rng);
    c.bias = pick(flags, rng);
    set_bias_layout(c, std::uniform_int_distribution<int>(0, kBiasLayouts - 1)(rng));
    if (c.bias_ld_padding > 0) c.bias_ld_padding = std::uniform_int_distribution<int>(1, 3)(rng);
    c.beta = pick(flags, rng) ? 0.0 : std::uniform_real_distribution<double>(-2.0, 2.0)(rng);
    c.alpha = std::uniform_real_distribution<double>(-2.0, 2.0)(rng);
    c.padded = pick(flags, rng);
    c.direction = pick(directions, rng);
    c.chunks = static_cast<int>(
        std::uniform_int_distribution<int>(
            c.direction == WEAVE_DIRECTION_BIDIRECTIONAL && c.operation != WEAVE_AG_GEMM ? 2 : 1, 4)(rng));
    c.algorithm = pick(algorithms, rng);
    if (c.algorithm == WEAVE_ALGORITHM_DIRECT || c.algorithm == WEAVE_ALGORITHM_PIPELINED || c.algorithm == WEAVE_ALGORITHM_HIERARCHICAL)
      c.direction = WEAVE_DIRECTION_AUTO;  // no direction
    c.reduce_in_accumulation_type = c.operation != WEAVE_AG_GEMM && pick(flags, rng) &&
                                    (c.algorithm == WEAVE_ALGORITHM_DIRECT || c.algorithm == WEAVE_ALGORITHM_PIPELINED ||
                                     c.algorithm == WEAVE_ALGORITHM_HIERARCHICAL);
    c.grid = pick(grids, rng);
    c.gathered = c.operation == WEAVE_AG_GEMM && pick(flags, rng);
    make_complex_variant(c, i);
    cases.push_back(c);
  }
  return cases;
}

// The FP8 pairs cuBLASLt multiplies (A, B): not e5m2 with e5m2.
inline constexpr std::pair<weave_dtype_t, weave_dtype_t> kFp8Pairs[] = {
    {WEAVE_FLOAT8_E4M3, WEAVE_FLOAT8_E4M3}, {WEAVE_FLOAT8_E4M3, WEAVE_FLOAT8_E5M2}, {WEAVE_FLOAT8_E5M2, WEAVE_FLOAT8_E4M3}};

// FP8 on GPUs: what cuBLASLt's FP8 kernels take on Hopper: both operands
// K-contiguous (A row-major with op N and B row-major with op T, as
// PyTorch's x @ w.T of row-major tensors, C row-major; or A column-major
// with op T, B column-major with op N, C column-major), every dimension,
// shard and chunk a multiple of 16 elements; the pairs of scale modes that
// run there (not 128x128 on both operands, not MXFP8 before sm_100).
inline std::vector<Case> fp8_device_cases(const CaseListOptions& options) {
  std::vector<Case> cases;
  const weave_operation_t operations[] = {WEAVE_AG_GEMM, WEAVE_GEMM_RS, WEAVE_GEMM_AR};
  const std::pair<weave_scale_mode_t, weave_scale_mode_t> modes[] = {
      {WEAVE_SCALE_TENSOR, WEAVE_SCALE_TENSOR},
      {WEAVE_SCALE_ROW_WISE, WEAVE_SCALE_ROW_WISE},
      {WEAVE_SCALE_BLOCK_1X128, WEAVE_SCALE_BLOCK_1X128},
      {WEAVE_SCALE_BLOCK_1X128, WEAVE_SCALE_BLOCK_128X128}};
  const Shards shard_patterns[] = {Shards::Balanced, Shards::Uneven, Shards::WithEmpty};
  const weave_dtype_t outputs[] = {WEAVE_BFLOAT16, WEAVE_BFLOAT16, WEAVE_FLOAT16, WEAVE_FLOAT32};
  int counter = 0;
  for (weave_operation_t op : operations)
    for (const auto& [a_mode, b_mode] : modes)
      for (int layout = 0; layout < 2; ++layout) {
        // 128x128 B with 1x128 A as the measured DeepSeek-style pairing:
        // row-major C, where cuBLASLt's A is our B.
        if (b_mode == WEAVE_SCALE_BLOCK_128X128 && layout == 1) continue;
        for (int variant = 0; variant < 2; ++variant) {
          Case c;
          c.operation = op;
          const auto& pair = kFp8Pairs[counter % 3];
          c.a_type = pair.first;
          c.b_type = pair.second;
          c.a_scale = a_mode;
          c.b_scale = b_mode;
          c.dtype = outputs[counter % 4];
          const bool pytorch = layout == 0;
          c.op_a = pytorch ? WEAVE_OP_N : WEAVE_OP_T;
          c.op_b = pytorch ? WEAVE_OP_T : WEAVE_OP_N;
          c.order_a = c.order_b = c.order_c = pytorch ? WEAVE_ORDER_ROW_MAJOR : WEAVE_ORDER_COLUMN_MAJOR;
          c.count_unit = 16;
          c.shards = shard_patterns[counter % 3];
          const bool blocked = a_mode == WEAVE_SCALE_BLOCK_1X128;
          c.m = 16 * (4 * g_size + counter % 3);
          c.n = b_mode == WEAVE_SCALE_BLOCK_128X128 ? 256 * g_size + 128 : 32 * g_size;
          c.k = (blocked ? 256 * g_size : 64 * g_size) + 16 * (counter % 2);
          c.bias = variant == 0;
          // Row-major tight (the GEMM's epilogue can add it), or column-major with ld 2.
          set_bias_layout(c, counter % 2 ? 1 : 2);
          c.beta = variant == 0 ? 0.0 : -0.75;
          c.alpha = counter % 3 == 0 ? 1.0 : 1.5;
          c.chunks = op == WEAVE_AG_GEMM ? 1 + counter % 4 : 2 + counter % 2;
          c.direction = op == WEAVE_AG_GEMM && counter % 2 ? WEAVE_DIRECTION_FORWARD : WEAVE_DIRECTION_AUTO;
          c.algorithm = counter % 4 == 3 ? WEAVE_ALGORITHM_SEQUENTIAL
                        : counter % 4 == 1 ? WEAVE_ALGORITHM_DIRECT
                                           : WEAVE_ALGORITHM_RING;
          if (c.algorithm == WEAVE_ALGORITHM_DIRECT) c.direction = WEAVE_DIRECTION_AUTO;  // no ring to turn
          // The reductions' pipelined and hierarchical plans (what groups
          // across nodes run automatically) with FP8 products too, one of
          // them moving float32 partial sums (counters odd: kept when quick).
          if (op != WEAVE_AG_GEMM && (counter % 8 == 5 || counter % 16 == 1)) {
            c.algorithm = counter % 8 == 5 ? WEAVE_ALGORITHM_PIPELINED : WEAVE_ALGORITHM_HIERARCHICAL;
            c.direction = WEAVE_DIRECTION_AUTO;
            c.reduce_in_accumulation_type = counter % 16 == 13;
          }
          c.gathered = op == WEAVE_AG_GEMM && variant == 1;
          c.repeats = counter % 5 == 0 ? 2 : 1;
          c.fresh_inputs = c.repeats > 1;
          ++counter;
          if (!options.quick || counter % 2 == 0) cases.push_back(c);
        }
      }
  // The wire type: bf16 (or f32) A quantized into e4m3 on the GPU, or f32 A rounded to bf16.
  for (int variant = 0; variant < 8; ++variant) {
    Case c;
    c.operation = WEAVE_AG_GEMM;
    const bool fp8_wire = variant % 4 != 3;
    c.wire_type = fp8_wire ? WEAVE_FLOAT8_E4M3 : WEAVE_BFLOAT16;
    c.a_type = fp8_wire && variant % 2 ? WEAVE_BFLOAT16 : WEAVE_FLOAT32;
    c.b_type = fp8_wire ? WEAVE_FLOAT8_E4M3 : WEAVE_BFLOAT16;
    c.b_scale = fp8_wire ? (variant % 2 ? WEAVE_SCALE_ROW_WISE : WEAVE_SCALE_TENSOR) : WEAVE_SCALE_NONE;
    c.dtype = WEAVE_BFLOAT16;
    c.op_b = WEAVE_OP_T;
    c.order_a = c.order_b = c.order_c = WEAVE_ORDER_ROW_MAJOR;
    c.count_unit = 16;
    c.shards = shard_patterns[variant % 3];
    c.m = 16 * (4 * g_size + variant % 3);
    c.n = 32 * g_size;
    c.k = 128 + 16 * (variant % 3);
    c.bias = variant % 2 == 0;
    set_bias_layout(c, 2);
    c.beta = variant % 3 == 1 ? 0.5 : 0.0;
    c.chunks = 1 + variant % 3;
    c.algorithm = variant % 4 == 1 ? WEAVE_ALGORITHM_SEQUENTIAL : WEAVE_ALGORITHM_RING;
    c.gathered = variant % 2 == 0;
    c.report_wire_error = variant == 0;
    if (c.report_wire_error) {
      c.bias = false;
      c.beta = 0.0;
    }
    cases.push_back(c);
  }
  return cases;
}

inline std::vector<Case> fp8_cases(const CaseListOptions& options, std::mt19937_64&) {
  if (options.memory == WEAVE_MEMORY_DEVICE) return fp8_device_cases(options);
  std::vector<Case> cases;
  const weave_operation_t operations[] = {WEAVE_AG_GEMM, WEAVE_GEMM_RS, WEAVE_GEMM_AR};
  const weave_op_t ops[] = {WEAVE_OP_N, WEAVE_OP_T};
  const Shards shard_patterns[] = {Shards::Balanced, Shards::Uneven, Shards::WithEmpty};
  const weave_dtype_t outputs[] = {WEAVE_BFLOAT16, WEAVE_FLOAT32, WEAVE_FLOAT16};
  // Scale modes of A and B. The modes whose scales cover 128-row bands
  // (128x128, MXFP8) take arbitrary shards on B, which is never cut into
  // rows; on A they need bands that chunks do not cut (cases below).
  const std::pair<weave_scale_mode_t, weave_scale_mode_t> modes[] = {
      {WEAVE_SCALE_TENSOR, WEAVE_SCALE_TENSOR},
      {WEAVE_SCALE_ROW_WISE, WEAVE_SCALE_ROW_WISE},
      {WEAVE_SCALE_BLOCK_1X128, WEAVE_SCALE_BLOCK_1X128},
      {WEAVE_SCALE_BLOCK_1X128, WEAVE_SCALE_BLOCK_128X128},
      {WEAVE_SCALE_ROW_WISE, WEAVE_SCALE_MXFP8},
      {WEAVE_SCALE_TENSOR, WEAVE_SCALE_ROW_WISE},
  };
  const weave_direction_t directions[] = {WEAVE_DIRECTION_FORWARD, WEAVE_DIRECTION_BACKWARD,
                                          WEAVE_DIRECTION_BIDIRECTIONAL};
  int counter = 0;
  for (weave_operation_t op : operations)
    for (const auto& [a_mode, b_mode] : modes)
      for (weave_op_t oa : ops)
        for (weave_op_t ob : ops) {
          Case c;
          c.operation = op;
          const auto& pair = kFp8Pairs[counter % 3];
          c.a_type = pair.first;
          c.b_type = pair.second;
          c.a_scale = a_mode;
          c.b_scale = b_mode;
          c.dtype = outputs[(counter / 3) % 3];
          c.op_a = oa;
          c.op_b = ob;
          c.shards = shard_patterns[counter % 3];
          // K spans several 128-blocks (and several 32-blocks) where the
          // scales are blocked; N several 128-column bands of B for 128x128.
          const bool blocked = a_mode == WEAVE_SCALE_BLOCK_1X128 || b_mode == WEAVE_SCALE_MXFP8;
          c.m = 13 + counter % 7;
          c.n = b_mode == WEAVE_SCALE_BLOCK_128X128 || b_mode == WEAVE_SCALE_MXFP8 ? 270 + counter % 5 : 11 + counter % 5;
          c.k = blocked ? (op == WEAVE_AG_GEMM ? 270 : 700) + counter % 9 : 9 + counter % 6;
          c.bias = counter % 2 == 0;
          set_bias_layout(c, (counter / 2) % kBiasLayouts);
          c.beta = counter % 4 < 2 ? 0.0 : -0.75;
          rotate_layouts(c, counter);
          c.direction = directions[counter % 3];
          c.chunks = c.direction == WEAVE_DIRECTION_BIDIRECTIONAL && op != WEAVE_AG_GEMM ? 2 + counter % 3
                                                                                        : 1 + counter % 4;
          c.algorithm = counter % 5 == 4 ? WEAVE_ALGORITHM_SEQUENTIAL : WEAVE_ALGORITHM_RING;
          if (op != WEAVE_AG_GEMM && counter % 5 == 2) {
            c.algorithm = WEAVE_ALGORITHM_DIRECT;
            c.direction = WEAVE_DIRECTION_AUTO;
          }
          // The reductions' pipelined and hierarchical plans (what groups
          // across nodes run automatically) with FP8 products too; AG-GEMM's
          // gather unscaled rows only (refused for FP8).
          if (op != WEAVE_AG_GEMM && counter % 10 == 1) {
            c.algorithm = counter % 20 == 1 ? WEAVE_ALGORITHM_HIERARCHICAL : WEAVE_ALGORITHM_PIPELINED;
            c.direction = WEAVE_DIRECTION_AUTO;
          }
          c.progress = counter % 3 == 1 ? WEAVE_PROGRESS_THREAD : WEAVE_PROGRESS_TILES;
          c.grid = counter % 7 == 3 ? GridKind::Rows2D : GridKind::Column1D;
          c.gathered = op == WEAVE_AG_GEMM && counter % 2 == 1;
          c.repeats = counter % 6 == 0 ? 2 : 1;
          c.fresh_inputs = c.repeats > 1;
          ++counter;
          if (!options.quick || counter % 3 == 0) cases.push_back(c);
        }
  // Scales on A that cover 128-row bands: every rank's rows (and every
  // chunk's) a whole number of bands, 128 rows each.
  for (weave_operation_t op : operations)
    for (weave_scale_mode_t a_mode : {WEAVE_SCALE_BLOCK_128X128, WEAVE_SCALE_MXFP8}) {
      Case c;
      c.operation = op;
      c.a_type = c.b_type = WEAVE_FLOAT8_E4M3;
      c.a_scale = a_mode;
      c.b_scale = a_mode == WEAVE_SCALE_MXFP8 ? WEAVE_SCALE_MXFP8 : WEAVE_SCALE_BLOCK_1X128;
      c.dtype = WEAVE_BFLOAT16;
      c.op_a = op == WEAVE_GEMM_RS ? WEAVE_OP_T : WEAVE_OP_N;
      c.m = 128 * g_size;
      c.n = 9;
      c.k = 300;
      c.bias = true;
      c.beta = 0.5;
      c.chunks = 1;
      c.direction = WEAVE_DIRECTION_FORWARD;
      c.algorithm = op == WEAVE_GEMM_AR ? WEAVE_ALGORITHM_DIRECT : WEAVE_ALGORITHM_RING;
      if (op == WEAVE_GEMM_AR) c.direction = WEAVE_DIRECTION_AUTO;
      c.gathered = op == WEAVE_AG_GEMM;
      cases.push_back(c);
      if (op == WEAVE_GEMM_RS && g_size > 1) {
        // Ranks' rows of C that start inside bands (uneven shards, or the
        // balanced split of M = 128 P + 45): the automatic plan multiplies
        // op(A) whole (sequential).
        for (Shards shards : {Shards::Balanced, Shards::Uneven}) {
          c.m = 128 * g_size + 45;
          c.shards = shards;
          c.chunks = 0;
          c.direction = WEAVE_DIRECTION_AUTO;
          c.algorithm = WEAVE_ALGORITHM_AUTO;
          cases.push_back(c);
        }
      }
    }
  // AG-GEMM with a wire type: A stored in f32, bf16 or f16, quantized once
  // per shard into e4m3 with row-wise scales (B FP8), or rounded to bf16
  // (A f32, B and C bf16), every algorithm, chunking and direction.
  const weave_dtype_t stored[] = {WEAVE_FLOAT32, WEAVE_BFLOAT16, WEAVE_FLOAT16};
  for (int variant = 0; variant < 24; ++variant) {
    Case c;
    c.operation = WEAVE_AG_GEMM;
    const bool fp8_wire = variant % 4 != 3;
    c.wire_type = fp8_wire ? WEAVE_FLOAT8_E4M3 : WEAVE_BFLOAT16;
    c.a_type = fp8_wire ? stored[variant % 3] : WEAVE_FLOAT32;
    c.b_type = fp8_wire ? (variant % 5 == 1 ? WEAVE_FLOAT8_E5M2 : WEAVE_FLOAT8_E4M3) : WEAVE_BFLOAT16;
    c.b_scale = fp8_wire ? (variant % 2 ? WEAVE_SCALE_ROW_WISE : WEAVE_SCALE_TENSOR) : WEAVE_SCALE_NONE;
    c.dtype = fp8_wire ? outputs[variant % 3] : WEAVE_BFLOAT16;
    c.op_a = variant % 2 ? WEAVE_OP_T : WEAVE_OP_N;
    c.op_b = variant % 3 == 1 ? WEAVE_OP_T : WEAVE_OP_N;
    c.shards = shard_patterns[variant % 3];
    c.m = 11 + variant % 6;
    c.n = 9 + variant % 4;
    c.k = 20 + 7 * (variant % 5);
    c.bias = variant % 2 == 0;
    set_bias_layout(c, variant % kBiasLayouts);
    c.beta = variant % 3 == 2 ? 0.5 : 0.0;
    rotate_layouts(c, variant);
    c.chunks = 1 + variant % 3;
    c.direction = directions[variant % 3];
    c.algorithm = variant % 4 == 1 ? WEAVE_ALGORITHM_SEQUENTIAL : WEAVE_ALGORITHM_RING;
    c.progress = variant % 3 == 1 ? WEAVE_PROGRESS_THREAD : WEAVE_PROGRESS_TILES;
    c.gathered = variant % 2 == 0 || variant % 5 == 0;
    if (!options.quick || variant % 2 == 0) cases.push_back(c);
  }
  {  // The error of e4m3 rows against the product of the unquantized A: reported.
    Case c;
    c.operation = WEAVE_AG_GEMM;
    c.wire_type = WEAVE_FLOAT8_E4M3;
    c.a_type = WEAVE_BFLOAT16;
    c.b_type = WEAVE_FLOAT8_E4M3;
    c.b_scale = WEAVE_SCALE_ROW_WISE;
    c.dtype = WEAVE_FLOAT32;
    c.m = 64;
    c.n = 48;
    c.k = 512;
    c.chunks = 2;
    c.algorithm = WEAVE_ALGORITHM_RING;
    c.report_wire_error = true;
    cases.push_back(c);
  }
  // Degenerate sizes: K = 0 (no scales anywhere), a single row, N below P.
  for (weave_operation_t op : operations)
    for (int variant = 0; variant < 3; ++variant) {
      Case c;
      c.operation = op;
      c.a_type = c.b_type = WEAVE_FLOAT8_E4M3;
      c.a_scale = WEAVE_SCALE_ROW_WISE;
      c.b_scale = WEAVE_SCALE_ROW_WISE;
      c.dtype = WEAVE_BFLOAT16;
      c.m = variant == 0 ? 1 : 8;
      c.n = variant == 1 ? 2 : 6;
      c.k = variant == 2 ? 0 : 5;
      c.shards = Shards::WithEmpty;
      c.bias = true;
      c.beta = variant == 1 ? 2.0 : 0.0;
      c.chunks = 2;
      c.algorithm = WEAVE_ALGORITHM_RING;
      c.gathered = op == WEAVE_AG_GEMM;
      cases.push_back(c);
    }
  return cases;
}

}  // namespace weave_test
