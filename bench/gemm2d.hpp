// weave-bench --ops gemm: WEAVE_GEMM (A, B and C block-cyclic over one
// P_r x P_c grid) by Weave's SUMMA plan and its sequential plan, next to
// ScaLAPACK's p?gemm on the same local arrays (host, where ScaLAPACK was
// found), the GEMM alone and the communication alone.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "bench_device.hpp"
#include "shapes.hpp"
#include "weave/weave.h"

namespace bench {

struct Gemm2dOptions {
  std::vector<std::pair<int, int>> grids;  // P_r x P_c, each spanning every rank
  std::vector<int64_t> blocks;             // mb = nb of all three matrices
  std::vector<Shape> shapes;               // global M x K x N
  weave_dtype_t dtype = WEAVE_FLOAT64;
  std::string dtype_name = "f64";
  bool device = false;
  int iterations = 10, warmup = 3;
  weave_transport_t transport = WEAVE_TRANSPORT_AUTO;
  std::string trace;  // the SUMMA plan's last execute of the last case, here (%r: rank)
};

// Measures every grid, block size and shape; rank 0 prints one line each and
// appends one record each to `results`. Returns false when a plan's result
// differs from the others' by more than the type allows.
bool run_gemm2d(const Gemm2dOptions& o, Timer& timer, nlohmann::json& results);

}  // namespace bench
