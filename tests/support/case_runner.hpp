// Runs one distributed-multiplication case through the public C API on every
// rank and checks it against the double-precision oracle: fresh random data,
// C poisoned with NaN where it is not an input, padding sentinels around
// every local block that must survive. Shared by the MPI test programs.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "support/oracle.hpp"
#include "weave/weave.h"

namespace weave_test {

extern int g_rank, g_size;

enum class GridKind { Column1D, Row1D, Rows2D, Columns2D, Block2D };
const char* grid_kind_name(GridKind g);

struct Case {
  weave_operation_t operation = WEAVE_AG_GEMM;
  weave_dtype_t dtype = WEAVE_FLOAT64;
  weave_op_t op_a = WEAVE_OP_N, op_b = WEAVE_OP_N;
  weave_order_t order_a = WEAVE_ORDER_COLUMN_MAJOR, order_b = WEAVE_ORDER_COLUMN_MAJOR,
                order_c = WEAVE_ORDER_COLUMN_MAJOR;
  Shards shards = Shards::Balanced;
  bool bias = false;
  double alpha = 1.0, beta = 0.0;
  bool padded = false;  // leading dimensions larger than tight
  int chunks = 0;
  weave_direction_t direction = WEAVE_DIRECTION_AUTO;
  weave_algorithm_t algorithm = WEAVE_ALGORITHM_AUTO;
  weave_progress_t progress = WEAVE_PROGRESS_AUTO;
  GridKind grid = GridKind::Column1D;
  int64_t m = 0, n = 0, k = 0;
  bool gathered = false;
  int repeats = 1;

  std::string name() const;
};

// Runs one case on every rank (collective over MPI_COMM_WORLD); returns
// whether this rank saw it pass. Prints what went wrong to stderr.
bool run_case(const Case& c, uint64_t seed);

// main() of a case-list test program: MPI_Init, a fresh seed (or --seed S)
// broadcast from rank 0, every case run and agreed on, a summary line, and
// exit code 1 if any case failed. make_cases gets --quick and a generator
// seeded identically on every rank.
int run_case_list(int argc, char** argv,
                  const std::function<std::vector<Case>(bool quick, std::mt19937_64& rng)>& make_cases);

}  // namespace weave_test
