// The MPI test matrix: every operation, element type, transpose pair,
// storage order, shard pattern (balanced, uneven, with empty shards), bias
// on/off, beta zero/non-zero, chunking, ring direction, algorithm, host
// progress mechanism and grid (1-D both ways, 2-D by rows and by columns,
// 2-D block panels), each case checked against the oracle (case_runner).
// Usage: weave_operations_test [--quick] [--seed S].
#include "support/case_runner.hpp"

using namespace weave_test;

namespace {

std::vector<Case> make_cases(bool quick) {
  std::vector<Case> cases;
  const weave_operation_t operations[] = {WEAVE_AG_GEMM, WEAVE_GEMM_RS, WEAVE_GEMM_AR};
  const weave_dtype_t types[] = {WEAVE_FLOAT64, WEAVE_FLOAT32};
  const Shards shard_patterns[] = {Shards::Balanced, Shards::Uneven, Shards::WithEmpty};
  const weave_op_t ops[] = {WEAVE_OP_N, WEAVE_OP_T};
  const GridKind grids[] = {GridKind::Column1D, GridKind::Row1D, GridKind::Rows2D, GridKind::Columns2D};
  const int chunk_choices[] = {1, 2, 3};
  const weave_direction_t directions[] = {WEAVE_DIRECTION_FORWARD, WEAVE_DIRECTION_BACKWARD,
                                          WEAVE_DIRECTION_BIDIRECTIONAL};
  int counter = 0;
  // Full cross of operation x type x transposes x shards, each run twice
  // with rotating variants so bias, beta, chunking, direction, algorithm,
  // order, padding and grid all meet every operation.
  for (weave_operation_t op : operations)
    for (weave_dtype_t t : types)
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
              c.beta = variant == 0 ? 0.0 : -0.75;
              c.alpha = counter % 3 == 0 ? 1.0 : 1.5;
              c.padded = counter % 4 == 1;
              c.order_a = counter % 3 == 2 ? WEAVE_ORDER_ROW_MAJOR : WEAVE_ORDER_COLUMN_MAJOR;
              c.order_b = counter % 5 == 3 ? WEAVE_ORDER_ROW_MAJOR : WEAVE_ORDER_COLUMN_MAJOR;
              c.order_c = counter % 4 == 2 ? WEAVE_ORDER_ROW_MAJOR : WEAVE_ORDER_COLUMN_MAJOR;
              c.direction = directions[counter % 3];
              c.chunks = c.direction == WEAVE_DIRECTION_BIDIRECTIONAL ? 2 + counter % 2 : chunk_choices[counter % 3];
              c.algorithm = counter % 6 == 5 ? WEAVE_ALGORITHM_SEQUENTIAL : WEAVE_ALGORITHM_RING;
              c.progress = counter % 3 == 1 ? WEAVE_PROGRESS_THREAD : WEAVE_PROGRESS_TILES;
              c.grid = grids[(counter / 2) % 4];
              c.gathered = op == WEAVE_AG_GEMM && counter % 5 == 0;
              c.repeats = counter % 7 == 0 ? 2 : 1;
              ++counter;
              if (!quick || counter % 4 == 0) cases.push_back(c);
            }
  // 2-D block panels, and degenerate sizes (K = 0, N smaller than P).
  for (int variant = 0; variant < 4; ++variant) {
    Case c;
    c.operation = WEAVE_AG_GEMM;
    c.dtype = variant % 2 ? WEAVE_FLOAT32 : WEAVE_FLOAT64;
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
    cases.push_back(c);
  }
  for (weave_operation_t op : operations)
    for (int variant = 0; variant < 3; ++variant) {
      Case c;
      c.operation = op;
      c.m = variant == 0 ? 1 : 8;
      c.n = variant == 1 ? 2 : 6;
      c.k = variant == 2 ? 0 : 5;
      c.shards = Shards::WithEmpty;
      c.bias = true;
      c.beta = variant == 1 ? 2.0 : 0.0;
      c.chunks = 2;
      c.algorithm = WEAVE_ALGORITHM_RING;
      cases.push_back(c);
    }
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  return run_case_list(argc, argv, [](bool quick, std::mt19937_64&) { return make_cases(quick); });
}
