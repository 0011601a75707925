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
#pragma once

#include <algorithm>
#include <random>
#include <vector>

#include "support/case_runner.hpp"

namespace weave_test {

// The layouts of a 1 x N bias the lists run in turn: column-major tight (ld
// 1, entries adjacent) and with ld 2 (entries two apart), row-major tight
// and with two elements of padding after the row.
constexpr int kBiasLayouts = 4;
inline void set_bias_layout(Case& c, int layout) {
  c.order_bias = layout < 2 ? WEAVE_ORDER_COLUMN_MAJOR : WEAVE_ORDER_ROW_MAJOR;
  c.bias_ld_padding = layout % 2 == 0 ? 0 : layout < 2 ? 1 : 2;
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
              c.alpha = counter % 3 == 0 ? 1.0 : 1.5;
              c.padded = counter % 4 == 1;
              c.order_a = counter % 3 == 2 ? WEAVE_ORDER_ROW_MAJOR : WEAVE_ORDER_COLUMN_MAJOR;
              c.order_b = counter % 5 == 3 ? WEAVE_ORDER_ROW_MAJOR : WEAVE_ORDER_COLUMN_MAJOR;
              c.order_c = counter % 4 == 2 ? WEAVE_ORDER_ROW_MAJOR : WEAVE_ORDER_COLUMN_MAJOR;
              c.direction = directions[counter % 3];
              // Bidirectional reductions split shards in halves (two chunks
              // at least); AG-GEMM sends whole shards, any chunk count.
              c.chunks = c.direction == WEAVE_DIRECTION_BIDIRECTIONAL && op != WEAVE_AG_GEMM ? 2 + counter % 2
                                                                                            : chunk_choices[counter % 3];
              c.algorithm = counter % 6 == 5 ? WEAVE_ALGORITHM_SEQUENTIAL : WEAVE_ALGORITHM_RING;
              if (op != WEAVE_AG_GEMM && counter % 6 == 2) {  // the direct algorithm has no direction
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
        c.algorithm = op != WEAVE_AG_GEMM && variant < 2 ? WEAVE_ALGORITHM_DIRECT : WEAVE_ALGORITHM_RING;
        c.gathered = op == WEAVE_AG_GEMM && variant == 1;
        cases.push_back(c);
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
    if (c.algorithm == WEAVE_ALGORITHM_DIRECT) {  // reductions only, no direction
      if (c.operation == WEAVE_AG_GEMM) c.algorithm = WEAVE_ALGORITHM_RING;
      else c.direction = WEAVE_DIRECTION_AUTO;
    }
    if (c.algorithm == WEAVE_ALGORITHM_PIPELINED || c.algorithm == WEAVE_ALGORITHM_HIERARCHICAL)
      c.direction = WEAVE_DIRECTION_AUTO;  // no direction
    c.reduce_in_accumulation_type = c.operation != WEAVE_AG_GEMM && pick(flags, rng) &&
                                    (c.algorithm == WEAVE_ALGORITHM_DIRECT || c.algorithm == WEAVE_ALGORITHM_PIPELINED ||
                                     c.algorithm == WEAVE_ALGORITHM_HIERARCHICAL);
    c.grid = pick(grids, rng);
    c.gathered = c.operation == WEAVE_AG_GEMM && pick(flags, rng);
    cases.push_back(c);
  }
  return cases;
}

}  // namespace weave_test
