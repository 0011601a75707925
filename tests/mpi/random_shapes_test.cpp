// Random problems through the public C API: random sizes (including tiny and
// zero), random uneven counts, and random choices of operation, type,
// transposes, orders, bias, beta, chunking, direction, algorithm and grid,
// each checked against the oracle. A fresh seed every run (printed; replay
// with --seed S). Usage: weave_random_shapes_test [--quick] [--seed S].
#include "support/case_runner.hpp"

using namespace weave_test;

namespace {

template <class T, std::size_t N>
T pick(const T (&choices)[N], std::mt19937_64& rng) {
  return choices[std::uniform_int_distribution<std::size_t>(0, N - 1)(rng)];
}

std::vector<Case> random_cases(bool quick, std::mt19937_64& rng) {
  const weave_operation_t operations[] = {WEAVE_AG_GEMM, WEAVE_GEMM_RS, WEAVE_GEMM_AR};
  const weave_dtype_t types[] = {WEAVE_FLOAT64, WEAVE_FLOAT32};
  const weave_op_t ops[] = {WEAVE_OP_N, WEAVE_OP_T};
  const weave_order_t orders[] = {WEAVE_ORDER_COLUMN_MAJOR, WEAVE_ORDER_ROW_MAJOR};
  const Shards shards[] = {Shards::Balanced, Shards::Uneven, Shards::WithEmpty};
  const weave_direction_t directions[] = {WEAVE_DIRECTION_FORWARD, WEAVE_DIRECTION_BACKWARD,
                                          WEAVE_DIRECTION_BIDIRECTIONAL};
  const weave_algorithm_t algorithms[] = {WEAVE_ALGORITHM_RING, WEAVE_ALGORITHM_RING, WEAVE_ALGORITHM_SEQUENTIAL,
                                          WEAVE_ALGORITHM_AUTO};
  const GridKind grids[] = {GridKind::Column1D, GridKind::Row1D, GridKind::Rows2D, GridKind::Columns2D};
  const bool flags[] = {false, true};
  std::uniform_int_distribution<int64_t> size(0, 40);
  std::vector<Case> cases;
  const int count = quick ? 40 : 160;
  for (int i = 0; i < count; ++i) {
    Case c;
    c.operation = pick(operations, rng);
    c.dtype = pick(types, rng);
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
    c.beta = pick(flags, rng) ? 0.0 : std::uniform_real_distribution<double>(-2.0, 2.0)(rng);
    c.alpha = std::uniform_real_distribution<double>(-2.0, 2.0)(rng);
    c.padded = pick(flags, rng);
    c.direction = pick(directions, rng);
    c.chunks = static_cast<int>(std::uniform_int_distribution<int>(c.direction == WEAVE_DIRECTION_BIDIRECTIONAL ? 2 : 1, 4)(rng));
    c.algorithm = pick(algorithms, rng);
    c.grid = pick(grids, rng);
    c.gathered = c.operation == WEAVE_AG_GEMM && pick(flags, rng);
    cases.push_back(c);
  }
  return cases;
}

}  // namespace

int main(int argc, char** argv) { return run_case_list(argc, argv, random_cases); }
