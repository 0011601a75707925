// weave-bench: for each operation and shape, in one run on one machine,
// measures
//   gemm        the GEMM alone at this rank's full local size (a one-rank
//               Weave plan, i.e. one BLAS/cuBLASLt call),
//   comm        the communication alone: the collective of the same bytes
//               (MPI on the host, NCCL on GPUs),
//   sequential  Weave's sequential plan (collective, then GEMM),
//   weave       Weave's plan with the requested (default: automatic) options,
// and prints weave/sequential and weave/max(gemm, comm), the distance to the
// physical limit of overlap (1.0). Times are medians over iterations of the
// slowest rank, after warm-up, on random data; within every iteration the
// measured things take turns. --json writes every number.
//
// FP8: --dtype fp8 multiplies e4m3 A and B with their scales (--scales
// rowwise, the default, tensor, or block: 1x128 A, 128x128 B) into bf16 C;
// then the GEMM alone is the FP8 GEMM and the communication alone moves the
// FP8 bytes and their scales (AG-GEMM) or bf16 products (GEMM-RS, GEMM-AR).
// --wire-type e4m3 with --dtype bf16 stores A in bf16 and sends it as e4m3
// (AG-GEMM; B e4m3 with --scales, C bf16).
//
//   mpirun -np 4 weave_bench --backend cuda --dtype bf16 --preset tp --json out.json
//   mpirun -np 2 weave_bench --backend cuda --dtype fp8 --preset tp
//
// --ops gemm measures WEAVE_GEMM, A, B and C block-cyclic over a 2-D grid
// (bench/gemm2d.cpp): Weave's SUMMA and sequential plans and, on the host,
// ScaLAPACK's p?gemm on the same arrays:
//
//   mpirun -np 4 weave_bench --ops gemm --dtype c128 --grids 2x2 --blocks 64,256
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_device.hpp"
#include "gemm2d.hpp"
#include "run_plan.hpp"
#include "shapes.hpp"
#include "weave/weave.hpp"

namespace {

int g_rank = 0, g_size = 1;

using bench::parse_shape;
using bench::preset_shapes;
using bench::Shape;

// Counts over the ranks: balanced, or ~10% apart (rank r gets weight 1 + 0.1 r,
// normalised), in multiples of `quantum` where possible.
std::vector<int64_t> counts_for(int64_t n, bool uneven, int64_t quantum) {
  std::vector<int64_t> counts(static_cast<size_t>(g_size));
  if (!uneven) {
    for (int r = 0; r < g_size; ++r) counts[r] = n / g_size + (r < n % g_size ? 1 : 0);
    return counts;
  }
  double total = 0;
  for (int r = 0; r < g_size; ++r) total += 1.0 + 0.1 * r;
  int64_t given = 0;
  for (int r = 0; r < g_size; ++r) given += counts[r] = static_cast<int64_t>(n * (1.0 + 0.1 * r) / total) / quantum * quantum;
  counts[0] += n - given;
  return counts;
}

struct Options {
  std::string backend = "host";
  std::string dtype = "f64";
  std::vector<std::string> ops = {"ag", "rs", "ar"};
  std::vector<std::string> shapes;
  std::string preset;
  int iterations = 10, warmup = 3;
  std::string json;
  std::string transport = "auto", algorithm = "auto", direction = "auto";
  int chunks = 0, streams = 0;
  // Extra Weave plans to time next to the default one, each
  // "transport/direction/chunks[/algorithm[/streams[/WEAVE_NAME=VALUE+...]]]"
  // (e.g. "nccl/bidirectional/2", "copy_engine/auto/4/direct",
  // "auto/auto/0/auto/2", "auto/auto/0/auto/0/WEAVE_COMM_PRIORITY=normal");
  // the algorithm defaults to ring, the compute streams to --streams.
  std::vector<std::string> variants;
  std::string trace;
  bool reduce_in_output_type = false;
  // --ops gemm: grids (default: the squarest over all ranks) and block sizes.
  std::vector<std::string> grids;
  std::vector<int64_t> blocks = {64, 256};
  std::string scales = "rowwise";  // FP8: rowwise, tensor, block
  std::string wire_type;           // "" or e4m3
  bool reduce_in_accumulation_type = false;
};

// The element types and scale modes of one benchmark run.
struct Types {
  weave_dtype_t a = WEAVE_FLOAT64, b = WEAVE_FLOAT64, c = WEAVE_FLOAT64;
  weave_scale_mode_t a_scale = WEAVE_SCALE_NONE, b_scale = WEAVE_SCALE_NONE;
  weave_dtype_t wire = weave_dtype_t{};  // AG-GEMM's wire type (0: none)
  // What the GEMMs multiply A in, with which scales: the wire type's (row-wise) where there is one.
  weave_dtype_t gemm_a() const { return wire ? wire : a; }
  weave_scale_mode_t gemm_a_scale() const { return wire ? WEAVE_SCALE_ROW_WISE : a_scale; }
  // Uneven shards in multiples of this: 8, 16 for FP8 (cuBLASLt's FP8
  // alignment), 128 for block scales (whole blocks per rank).
  int64_t quantum() const {
    if (a_scale == WEAVE_SCALE_BLOCK_1X128 || b_scale == WEAVE_SCALE_BLOCK_128X128) return 128;
    return weave_dtype_size(gemm_a()) == 1 ? 16 : 8;
  }
};

weave_dtype_t parse_dtype(const std::string& t) {
  if (t == "f32") return WEAVE_FLOAT32;
  if (t == "f64") return WEAVE_FLOAT64;
  if (t == "f16") return WEAVE_FLOAT16;
  if (t == "bf16") return WEAVE_BFLOAT16;
  if (t == "c64") return WEAVE_COMPLEX64;
  if (t == "c128") return WEAVE_COMPLEX128;
  throw std::runtime_error("unknown dtype " + t);
}

Types parse_types(const Options& o) {
  Types t;
  // FP8 scale modes of A and B: row-wise (PyTorch's), tensor-wise, or
  // DeepSeek-style blocks (1x128 activations, 128x128 weights).
  weave_scale_mode_t a_mode = WEAVE_SCALE_ROW_WISE, b_mode = WEAVE_SCALE_ROW_WISE;
  if (o.scales == "tensor") a_mode = b_mode = WEAVE_SCALE_TENSOR;
  if (o.scales == "block") {
    a_mode = WEAVE_SCALE_BLOCK_1X128;
    b_mode = WEAVE_SCALE_BLOCK_128X128;
  }
  if (o.dtype == "fp8") {
    if (!o.wire_type.empty()) throw std::runtime_error("--wire-type goes with --dtype bf16 or f32 (A's storage)");
    t.a = t.b = WEAVE_FLOAT8_E4M3;
    t.c = WEAVE_BFLOAT16;
    t.a_scale = a_mode;
    t.b_scale = b_mode;
    return t;
  }
  t.a = t.b = t.c = parse_dtype(o.dtype);
  if (o.wire_type == "e4m3") {
    if (o.scales == "block") throw std::runtime_error("--wire-type e4m3 gives A row-wise scales: --scales rowwise or tensor");
    t.wire = WEAVE_FLOAT8_E4M3;
    t.b = WEAVE_FLOAT8_E4M3;
    t.b_scale = b_mode;
    t.c = WEAVE_BFLOAT16;
  }
  return t;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The scale bytes of a block of `outer` rows of op(A) over K (doc/fp8.md).
int64_t scale_bytes(weave_scale_mode_t mode, int64_t outer, int64_t k) {
  if (outer == 0 || k == 0) return 0;
  switch (mode) {
    case WEAVE_SCALE_TENSOR: return 4;
    case WEAVE_SCALE_ROW_WISE: return 4 * outer;
    case WEAVE_SCALE_BLOCK_1X128: return 4 * outer * ceil_div(k, 128);
    case WEAVE_SCALE_BLOCK_128X128: return 4 * ceil_div(outer, 128) * ceil_div(ceil_div(k, 128), 4) * 4;
    default: return 0;
  }
}

weave_algorithm_t parse_algorithm(const std::string& a) {
  if (a == "auto") return WEAVE_ALGORITHM_AUTO;
  if (a == "ring") return WEAVE_ALGORITHM_RING;
  if (a == "sequential") return WEAVE_ALGORITHM_SEQUENTIAL;
  if (a == "direct") return WEAVE_ALGORITHM_DIRECT;
  if (a == "pipelined") return WEAVE_ALGORITHM_PIPELINED;
  if (a == "hierarchical") return WEAVE_ALGORITHM_HIERARCHICAL;
  throw std::runtime_error("unknown algorithm " + a + " (auto, ring, sequential, direct, pipelined, hierarchical)");
}

weave_transport_t parse_transport(const std::string& t) {
  if (t == "auto") return WEAVE_TRANSPORT_AUTO;
  if (t == "mpi") return WEAVE_TRANSPORT_MPI;
  if (t == "nccl") return WEAVE_TRANSPORT_NCCL;
  if (t == "ucx") return WEAVE_TRANSPORT_UCX;
  if (t == "copy_engine") return WEAVE_TRANSPORT_COPY_ENGINE;
  if (t == "sm") return WEAVE_TRANSPORT_SM;
  throw std::runtime_error("unknown transport " + t + " (auto, mpi, nccl, ucx, copy_engine, sm)");
}

weave_direction_t parse_direction(const std::string& d) {
  if (d == "auto") return WEAVE_DIRECTION_AUTO;
  if (d == "forward") return WEAVE_DIRECTION_FORWARD;
  if (d == "backward") return WEAVE_DIRECTION_BACKWARD;
  if (d == "bidirectional") return WEAVE_DIRECTION_BIDIRECTIONAL;
  throw std::runtime_error("unknown direction " + d + " (auto, forward, backward, bidirectional)");
}

// A plan to time: the default one, or one of --variants.
struct PlanChoice {
  std::string label = "default";
  weave_algorithm_t algorithm = WEAVE_ALGORITHM_AUTO;
  weave_transport_t transport = WEAVE_TRANSPORT_AUTO;
  weave_direction_t direction = WEAVE_DIRECTION_AUTO;
  int chunks = 0;
  int streams = -1;  // compute streams; -1: --streams
  // Environment variables set while this plan is created (Weave reads its
  // WEAVE_* variables then), e.g. WEAVE_COMM_PRIORITY=normal.
  std::vector<std::pair<std::string, std::string>> environment;
};

// Sets variables for its lifetime, then restores what was there.
class ScopedEnvironment {
 public:
  explicit ScopedEnvironment(const std::vector<std::pair<std::string, std::string>>& variables) {
    for (const auto& [name, value] : variables) {
      const char* old = std::getenv(name.c_str());
      saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
      setenv(name.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedEnvironment() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second)
        setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        unsetenv(it->first.c_str());
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// "transport/direction/chunks[/algorithm[/streams[/NAME=VALUE+...]]]"; every
// name checked.
PlanChoice parse_variant(const std::string& text) {
  std::vector<std::string> parts;
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, '/');) parts.push_back(part);
  if (parts.size() < 3 || parts.size() > 6)
    throw std::runtime_error("variant " + text +
                             " is not transport/direction/chunks[/algorithm[/streams[/NAME=VALUE+...]]]");
  PlanChoice v;
  v.label = text;
  v.transport = parse_transport(parts[0]);
  v.direction = parse_direction(parts[1]);
  v.chunks = std::stoi(parts[2]);
  v.algorithm = parse_algorithm(parts.size() >= 4 ? parts[3] : "ring");
  if (parts.size() >= 5) v.streams = std::stoi(parts[4]);
  if (parts.size() == 6) {
    std::istringstream assignments(parts[5]);
    for (std::string assignment; std::getline(assignments, assignment, '+');) {
      const std::size_t equals = assignment.find('=');
      if (equals == std::string::npos || equals == 0 || assignment.compare(0, 6, "WEAVE_") != 0)
        throw std::runtime_error("variant " + text + ": " + assignment + " is not WEAVE_NAME=VALUE");
      v.environment.emplace_back(assignment.substr(0, equals), assignment.substr(equals + 1));
    }
  }
  return v;
}

weave_operation_t parse_op(const std::string& op) {
  if (op == "ag") return WEAVE_AG_GEMM;
  if (op == "rs") return WEAVE_GEMM_RS;
  if (op == "ar") return WEAVE_GEMM_AR;
  throw std::runtime_error("unknown op " + op + " (ag, rs, ar, gemm)");
}

const char* op_name(weave_operation_t op) {
  return op == WEAVE_AG_GEMM ? "AG-GEMM" : op == WEAVE_GEMM_RS ? "GEMM-RS" : "GEMM-AR";
}

// One operation on one shape: matrices, buffers and the plans.
class Case {
 public:
  Case(const weave::Grid& grid, weave_operation_t op, const Shape& s, const Types& t, bool device)
      : op_(op), shape_(s), types_(t), device_(device) {
    const weave_memory_t memory = device ? WEAVE_MEMORY_DEVICE : WEAVE_MEMORY_HOST;
    const std::vector<int64_t> m_counts = counts_for(s.m, s.uneven, t.quantum()),
                               n_counts = counts_for(s.n, s.uneven, t.quantum()),
                               k_counts = counts_for(s.k, s.uneven, t.quantum());
    // Row-major, as tensor-parallel codes store them: X [M, K], the weight
    // W [N, K] of a linear layer (op(B) = W^T), Y [M, N]. AG-GEMM gathers X's
    // rows and splits W's rows (Y's columns); GEMM-RS and GEMM-AR split K.
    const weave_order_t row = WEAVE_ORDER_ROW_MAJOR;
    auto desc = [&](weave::MatrixDesc d, weave_scale_mode_t mode) { return d.order(row).memory(memory).scale_mode(mode); };
    if (op == WEAVE_AG_GEMM) {
      a_ = std::make_unique<weave::Matrix>(grid, desc(weave::block_rows(s.m, s.k, t.a).rows_per_rank(m_counts), t.a_scale));
      b_ = std::make_unique<weave::Matrix>(grid, desc(weave::block_rows(s.n, s.k, t.b).rows_per_rank(n_counts), t.b_scale));
      c_ = std::make_unique<weave::Matrix>(grid, desc(weave::block_cols(s.m, s.n, t.c).cols_per_rank(n_counts), WEAVE_SCALE_NONE));
      local_m_ = s.m;
      local_k_ = s.k;
      local_n_ = c_->local_cols();
    } else {
      a_ = std::make_unique<weave::Matrix>(grid, desc(weave::block_cols(s.m, s.k, t.a).cols_per_rank(k_counts), t.a_scale));
      b_ = std::make_unique<weave::Matrix>(grid, desc(weave::block_cols(s.n, s.k, t.b).cols_per_rank(k_counts), t.b_scale));
      c_ = std::make_unique<weave::Matrix>(
          grid, op == WEAVE_GEMM_RS ? desc(weave::block_rows(s.m, s.n, t.c).rows_per_rank(m_counts), WEAVE_SCALE_NONE)
                                    : desc(weave::replicated(s.m, s.n, t.c), WEAVE_SCALE_NONE));
      local_m_ = s.m;
      local_k_ = a_->local_cols();
      local_n_ = s.n;
    }
    a_buf_ = buffer_for(*a_, t.a);
    b_buf_ = buffer_for(*b_, t.b);
    c_buf_ = buffer_for(*c_, t.c);
    bench::fill_random(a_buf_, t.a, 1000 + g_rank);
    bench::fill_random(b_buf_, t.b, 2000 + g_rank);
    bench::fill_random(c_buf_, t.c, 3000 + g_rank);
    m_counts_ = m_counts;
  }

  // `reduce_in_output_type`: WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE. Sizes the
  // scale buffers for the plan's scales.
  weave::Plan plan(const weave::Grid& grid, const Options& o, const PlanChoice& choice, bool reduce_in_output_type) {
    weave::PlanDesc d(op_, *a_, *b_, *c_);
    d.ops(WEAVE_OP_N, WEAVE_OP_T)
        .algorithm(choice.algorithm)
        .transport(choice.transport)
        .direction(choice.direction)
        .chunks_per_shard(choice.chunks)
        .compute_streams(choice.streams >= 0 ? choice.streams : o.streams)
        .wire_type(types_.wire);
    int flags = WEAVE_FLAG_NO_EXECUTE_CHECK;  // measure the operation, not the argument check
    if (!o.trace.empty()) flags |= WEAVE_FLAG_TRACE;
    if (reduce_in_output_type) flags |= WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE;
    if (o.reduce_in_accumulation_type && !reduce_in_output_type) flags |= WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE;
    d.flags(flags);
    const ScopedEnvironment environment(choice.environment);
    weave::Plan plan(grid, d);
    ensure_scales(plan, a_scale_, b_scale_, 6000);
    return plan;
  }

  // Whether a plan moves its reduction in C's type rather than the
  // accumulation type (AG-GEMM always moves A in its own type): partial
  // sums asked for in C's type, or the products of the direct and
  // hierarchical algorithms and, for 16-bit C, of the pipelined one, unless
  // float32 was asked for.
  bool moves_output_type(const weave::Plan& plan, bool reduce_in_output_type, bool reduce_in_accumulation_type) const {
    if (op_ == WEAVE_AG_GEMM || reduce_in_output_type) return true;
    if (reduce_in_accumulation_type) return false;
    const weave_algorithm_t a = plan.info().algorithm;
    return a == WEAVE_ALGORITHM_DIRECT || a == WEAVE_ALGORITHM_HIERARCHICAL || a == WEAVE_ALGORITHM_PIPELINED;
  }

  void execute(const weave::Plan& plan, bench::Timer& timer) {
    execute(plan, timer, a_buf_, b_buf_, c_buf_, a_scale_, b_scale_);
  }

  // The GEMM alone: this rank's whole local product as one GEMM, through a
  // plan over a one-rank grid (one BLAS / cuBLASLt call, nothing else), in
  // the types and scales the plans multiply in (A's wire type where it has one).
  std::unique_ptr<weave::Plan> local_gemm_plan(const weave::Grid& self) {
    const weave_memory_t memory = device_ ? WEAVE_MEMORY_DEVICE : WEAVE_MEMORY_HOST;
    // AG-GEMM on one rank is C = op(A) op(B) straight into C; the same
    // row-major layouts as the distributed plan.
    const weave_order_t row = WEAVE_ORDER_ROW_MAJOR;
    const weave_dtype_t ta = types_.gemm_a();
    gemm_a_ = std::make_unique<weave::Matrix>(
        self, weave::block_rows(local_m_, local_k_, ta).order(row).memory(memory).scale_mode(types_.gemm_a_scale()));
    gemm_b_ = std::make_unique<weave::Matrix>(
        self, weave::block_rows(local_n_, local_k_, types_.b).order(row).memory(memory).scale_mode(types_.b_scale));
    gemm_c_ = std::make_unique<weave::Matrix>(self, weave::block_rows(local_m_, local_n_, types_.c).order(row).memory(memory));
    gemm_a_buf_ = buffer_for(*gemm_a_, ta);
    gemm_c_buf_ = buffer_for(*gemm_c_, types_.c);
    gemm_b_buf_ = buffer_for(*gemm_b_, types_.b);
    bench::fill_random(gemm_a_buf_, ta, 4000 + g_rank);
    bench::fill_random(gemm_b_buf_, types_.b, 5000 + g_rank);
    weave::PlanDesc d(WEAVE_AG_GEMM, *gemm_a_, *gemm_b_, *gemm_c_);
    d.ops(WEAVE_OP_N, WEAVE_OP_T).flags(WEAVE_FLAG_NO_EXECUTE_CHECK);
    auto plan = std::make_unique<weave::Plan>(self, d);
    ensure_scales(*plan, gemm_a_scale_, gemm_b_scale_, 7000);
    return plan;
  }
  void execute_local_gemm(const weave::Plan& plan, bench::Timer& timer) {
    execute(plan, timer, gemm_a_buf_, gemm_b_buf_, gemm_c_buf_, gemm_a_scale_, gemm_b_scale_);
  }

  // The bytes the communication moves, and the collective that moves them
  // alone: A's rows (FP8 ones with their scales, as bytes), or partial sums
  // in C's type or in the accumulation type.
  bench::Collective collective(bool output_type) const {
    bench::Collective c;
    if (op_ == WEAVE_AG_GEMM) {
      c.kind = bench::Collective::AllGather;
      const weave_dtype_t travels = types_.gemm_a();
      const bool scaled = types_.gemm_a_scale() != WEAVE_SCALE_NONE;
      c.dtype = travels;
      for (int64_t count : m_counts_)
        c.counts.push_back(count * shape_.k + (scaled ? scale_bytes(types_.gemm_a_scale(), count, shape_.k) : 0));
    } else {
      // The accumulation type is float32 for 16-bit types.
      const weave_dtype_t out = types_.c;
      c.dtype = (out == WEAVE_FLOAT16 || out == WEAVE_BFLOAT16) && !output_type ? WEAVE_FLOAT32 : out;
      c.kind = op_ == WEAVE_GEMM_RS ? bench::Collective::ReduceScatter : bench::Collective::AllReduce;
      if (op_ == WEAVE_GEMM_RS)
        for (int64_t count : m_counts_) c.counts.push_back(count * shape_.n);
      else
        c.counts.assign(1, shape_.m * shape_.n);
    }
    return c;
  }

  double local_flops() const { return 2.0 * static_cast<double>(local_m_) * local_k_ * local_n_; }

 private:
  bench::Buffer buffer_for(const weave::Matrix& m, weave_dtype_t t) const {
    return bench::Buffer(m.local_elements() * static_cast<int64_t>(weave_dtype_size(t)), device_);
  }
  // Scale buffers large enough for the plan's (plans of one case share them).
  void ensure_scales(const weave::Plan& plan, bench::Buffer& a, bench::Buffer& b, uint64_t seed) const {
    const weave_plan_info_t info = plan.info();
    if (info.a_scale_elements * 4 > a.bytes()) {
      a = bench::Buffer(info.a_scale_elements * 4, device_);
      bench::fill_scales(a, seed + g_rank);
    }
    if (info.b_scale_elements * 4 > b.bytes()) {
      b = bench::Buffer(info.b_scale_elements * 4, device_);
      bench::fill_scales(b, seed + 100 + g_rank);
    }
  }
  // C <- op(A) op(B), enqueued on the timer's stream.
  void execute(const weave::Plan& plan, bench::Timer& timer, const bench::Buffer& a, const bench::Buffer& b,
               const bench::Buffer& c, const bench::Buffer& a_scale, const bench::Buffer& b_scale) const {
    const weave_plan_info_t info = plan.info();
    weave_execute_args_t args{};
    args.alpha = 1.0;
    args.beta = 0.0;
    args.a = a.data();
    args.b = b.data();
    args.c = c.data();
    if (info.a_scale_mode != WEAVE_SCALE_NONE) args.a_scale = a_scale.data();
    if (info.b_scale_mode != WEAVE_SCALE_NONE) args.b_scale = b_scale.data();
    args.stream = timer.stream();
    plan.execute(args);
  }

  weave_operation_t op_;
  Shape shape_;
  Types types_;
  bool device_;
  std::unique_ptr<weave::Matrix> a_, b_, c_, gemm_a_, gemm_b_, gemm_c_;
  bench::Buffer a_buf_, b_buf_, c_buf_, gemm_a_buf_, gemm_b_buf_, gemm_c_buf_;
  bench::Buffer a_scale_, b_scale_, gemm_a_scale_, gemm_b_scale_;
  int64_t local_m_ = 0, local_k_ = 0, local_n_ = 0;
  std::vector<int64_t> m_counts_;
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);

  Options o;
  CLI::App app{"weave-bench: Weave vs GEMM alone, communication alone and the sequential baseline"};
  app.add_option("--backend", o.backend, "host or cuda")->check(CLI::IsMember({"host", "cuda"}));
  app.add_option("--dtype", o.dtype,
                 "f64, f32, bf16, f16, c64, c128, fp8 (e4m3 A and B with scales, bf16 C)")
      ->check(CLI::IsMember({"f64", "f32", "bf16", "f16", "c64", "c128", "fp8"}));
  app.add_option("--scales", o.scales, "FP8 scale modes: rowwise (default), tensor, block (1x128 A, 128x128 B)")
      ->check(CLI::IsMember({"rowwise", "tensor", "block"}));
  app.add_option("--wire-type", o.wire_type, "e4m3: AG-GEMM sends A (stored as --dtype) as e4m3, B e4m3, C bf16")
      ->check(CLI::IsMember({"e4m3"}));
  app.add_option("--ops,--op", o.ops, "ag rs ar gemm (gemm: WEAVE_GEMM over a 2-D grid)")->delimiter(',');
  app.add_option("--shape", o.shapes, "global MxKxN, optionally MxKxN:uneven (repeatable)");
  app.add_option("--preset", o.preset, "tp (tensor-parallel layers), host, small, gemm-host, gemm-gpu");
  app.add_option("--grids", o.grids, "--ops gemm: process grids PrxPc (default: the squarest)")->delimiter(',');
  app.add_option("--blocks", o.blocks, "--ops gemm: block sizes mb = nb (default 64,256)")->delimiter(',');
  app.add_option("--iterations", o.iterations, "timed iterations (median reported)");
  app.add_option("--warmup", o.warmup, "untimed iterations first");
  app.add_option("--json", o.json, "write all results as JSON to this file (rank 0)");
  app.add_option("--transport", o.transport, "auto, mpi, nccl, ucx, copy_engine, sm");
  app.add_option("--algorithm", o.algorithm,
                 "auto, ring, sequential, direct, pipelined, hierarchical (for the weave column)");
  app.add_option("--direction", o.direction, "auto, forward, backward, bidirectional");
  app.add_option("--chunks", o.chunks, "chunks per shard (0: automatic)");
  app.add_option("--variants", o.variants,
                 "more plans to time, each transport/direction/chunks[/algorithm[/streams[/WEAVE_NAME=VALUE+...]]], "
                 "e.g. nccl/bidirectional/2, copy_engine/auto/4/direct, sm/auto/0/direct, auto/auto/0/auto/2, "
                 "auto/auto/0/auto/0/WEAVE_COMM_PRIORITY=normal (variables set while that plan is created); a variant "
                 "Weave refuses for an operation is left out with its reason")
      ->delimiter(',');
  app.add_option("--streams", o.streams, "compute streams (0: automatic)");
  app.add_option("--trace", o.trace, "write the trace of the last weave execute to this path (%r = rank)");
  app.add_flag("--reduce-in-output-type", o.reduce_in_output_type, "16-bit partial sums travel in the output type");
  app.add_flag("--reduce-in-accumulation-type", o.reduce_in_accumulation_type,
               "16-bit products of the direct, pipelined and hierarchical algorithms travel as float32");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    MPI_Finalize();
    return code;
  }

  int status = 0;
  nlohmann::json results = nlohmann::json::array();
  try {
    const bool device = o.backend == "cuda";
    bench::select_device(device);
    std::vector<Shape> shapes;
    if (!o.preset.empty()) shapes = preset_shapes(o.preset);
    for (const std::string& s : o.shapes) shapes.push_back(parse_shape(s));
    const bool explicit_shapes = !shapes.empty();
    if (shapes.empty()) shapes = preset_shapes(device ? "tp" : "host");
    const Types t = parse_types(o);
    const bool gemm_2d = std::find(o.ops.begin(), o.ops.end(), "gemm") != o.ops.end();
    o.ops.erase(std::remove(o.ops.begin(), o.ops.end(), "gemm"), o.ops.end());
    if (gemm_2d && (t.a != t.c || t.wire)) throw std::runtime_error("--ops gemm takes one element type (not fp8 or --wire-type)");
    PlanChoice default_choice;  // from the command line
    default_choice.algorithm = parse_algorithm(o.algorithm);
    default_choice.transport = parse_transport(o.transport);
    default_choice.direction = parse_direction(o.direction);
    default_choice.chunks = o.chunks;
    std::vector<PlanChoice> variants;
    for (const std::string& v : o.variants) variants.push_back(parse_variant(v));
    const bool sixteen_bit = t.c == WEAVE_FLOAT16 || t.c == WEAVE_BFLOAT16;
    const std::string type_text = o.dtype + (o.dtype == "fp8" || t.wire ? " (" + o.scales + " scales" +
                                                                              (t.wire ? ", e4m3 wire" : "") + ")"
                                                                        : std::string());
    weave::Grid grid(MPI_COMM_WORLD);
    weave::Grid self(MPI_COMM_SELF);
    bench::Timer timer(device);
    bench::Communicator comm(MPI_COMM_WORLD, device);

    if (g_rank == 0)
      std::printf("weave-bench: %d ranks, backend %s, %s, %s; median of %d (after %d warm-up), slowest rank\n",
                  g_size, o.backend.c_str(), type_text.c_str(), bench::device_description(device).c_str(),
                  o.iterations, o.warmup);
    if (gemm_2d) {
      bench::Gemm2dOptions g;
      for (const std::string& text : o.grids) g.grids.push_back(bench::parse_grid(text));
      if (g.grids.empty()) g.grids.push_back(bench::squarest_grid(g_size));
      g.blocks = o.blocks;
      g.shapes = explicit_shapes ? shapes : preset_shapes(device ? "gemm-gpu" : "gemm-host");
      g.dtype = t.c;
      g.dtype_name = o.dtype;
      g.device = device;
      g.iterations = o.iterations;
      g.warmup = o.warmup;
      g.transport = default_choice.transport;
      g.trace = o.trace;
      if (!bench::run_gemm2d(g, timer, results)) status = 1;
    }
    if (g_rank == 0 && !o.ops.empty()) {
      std::printf("%-8s %-34s %8s %8s %8s %8s %7s %7s %7s\n", "op", "shape MxKxN [variant]", "gemm ms", "comm ms",
                  "seq ms", "weave ms", "w/seq", "w/max", "TFLOP/s");
    }
    for (const Shape& shape : shapes)
      for (const std::string& op_text : o.ops) {
        const weave_operation_t op = parse_op(op_text);
        Case c(grid, op, shape, t, device);
        std::unique_ptr<weave::Plan> gemm = c.local_gemm_plan(self);
        // The communication alone and the sequential baseline move the
        // bytes the default plan moves: partial sums in C's type when it
        // does (the direct algorithm, or --reduce-in-output-type).
        weave::Plan weave_default = c.plan(grid, o, default_choice, o.reduce_in_output_type);
        const bool output_type =
            c.moves_output_type(weave_default, o.reduce_in_output_type, o.reduce_in_accumulation_type);
        const bench::Collective coll = c.collective(output_type);
        comm.prepare(coll);
        PlanChoice sequential_choice;
        sequential_choice.algorithm = WEAVE_ALGORITHM_SEQUENTIAL;
        sequential_choice.transport = default_choice.transport;
        weave::Plan sequential =
            c.plan(grid, o, sequential_choice, output_type && sixteen_bit && op != WEAVE_AG_GEMM);
        double flops = c.local_flops(), max_flops = 0;
        MPI_Allreduce(&flops, &max_flops, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

        // The default plan (options from the command line), then the variants.
        std::vector<PlanChoice> choices = {default_choice};
        std::vector<std::unique_ptr<weave::Plan>> variant_plans;  // null: the default plan
        variant_plans.push_back(nullptr);
        for (const PlanChoice& choice : variants) {
          // A variant the library refuses for this operation and type (e.g.
          // the pipelined AG-GEMM of FP8 rows, whose scales it does not
          // gather) is left out with the reason; plan creation fails on
          // every rank alike, so every rank leaves it out.
          try {
            variant_plans.push_back(std::make_unique<weave::Plan>(c.plan(grid, o, choice, o.reduce_in_output_type)));
          } catch (const weave::Error& e) {
            if (e.status() != WEAVE_ERROR_UNSUPPORTED && e.status() != WEAVE_ERROR_INVALID_VALUE && e.status() != WEAVE_ERROR_NOT_COMPILED) throw;
            if (g_rank == 0)
              std::printf("%-8s %-34s refused: %s\n", op_name(op), (shape.label() + " " + choice.label).c_str(), e.what());
            continue;
          }
          choices.push_back(choice);
        }
        auto plan_of = [&](std::size_t i) -> const weave::Plan& {
          return variant_plans[i] ? *variant_plans[i] : weave_default;
        };
        std::vector<std::function<void()>> bodies = {
            [&] { c.execute_local_gemm(*gemm, timer); },
            [&] { comm.run(coll, timer.stream()); },
            [&] { c.execute(sequential, timer); },
        };
        for (std::size_t i = 0; i < choices.size(); ++i) bodies.push_back([&, i] { c.execute(plan_of(i), timer); });
        const std::vector<double> ms = bench::measure_in_turn(o.warmup, o.iterations, timer, bodies);
        const double gemm_ms = ms[0], comm_ms = ms[1], sequential_ms = ms[2];
        const double limit = std::max(gemm_ms, comm_ms);
        if (!o.trace.empty()) {  // the default plan's last execute
          timer.synchronize();
          weave_default.write_trace(o.trace);
        }

        for (std::size_t i = 0; i < choices.size(); ++i) {
          const std::string& label = choices[i].label;
          const weave::Plan& plan = plan_of(i);
          const double weave_ms = ms[3 + i];
          const double tflops = max_flops / (weave_ms * 1e-3) / 1e12;
          const std::string shown = label == "default" ? shape.label() : shape.label() + " " + label;
          if (g_rank == 0) {
            // Four significant digits: a host GEMM of a few GFLOP/s is
            // 0.00x TFLOP/s, which a fixed decimal showed as 0.0.
            std::printf("%-8s %-34s %8.3f %8.3f %8.3f %8.3f %7.3f %7.3f %7.4g\n", op_name(op), shown.c_str(), gemm_ms,
                        comm_ms, sequential_ms, weave_ms, weave_ms / sequential_ms, weave_ms / limit, tflops);
            results.push_back({{"op", op_name(op)},
                               {"shape", shape.label()},
                               {"variant", label},
                               {"m", shape.m},
                               {"k", shape.k},
                               {"n", shape.n},
                               {"uneven", shape.uneven},
                               {"dtype", o.dtype},
                               {"scales", o.dtype == "fp8" || t.wire ? o.scales : ""},
                               {"wire_type", o.wire_type},
                               {"ranks", g_size},
                               {"backend", o.backend},
                               {"gemm_ms", gemm_ms},
                               {"comm_ms", comm_ms},
                               {"comm_dtype_bytes", weave_dtype_size(coll.dtype)},
                               {"sequential_ms", sequential_ms},
                               {"weave_ms", weave_ms},
                               {"weave_over_sequential", weave_ms / sequential_ms},
                               {"weave_over_limit", weave_ms / limit},
                               {"tflops_per_rank", tflops},
                               {"describe_weave", plan.describe()},
                               {"describe_sequential", sequential.describe()}});
          }
        }
      }
    if (g_rank == 0 && !o.json.empty()) {
      nlohmann::json doc = {{"ranks", g_size},
                            {"backend", o.backend},
                            {"dtype", o.dtype},
                            {"scales", o.dtype == "fp8" || t.wire ? o.scales : ""},
                            {"wire_type", o.wire_type},
                            {"device", bench::device_description(device)},
                            {"iterations", o.iterations},
                            {"results", results}};
      std::ofstream(o.json) << doc.dump(2) << "\n";
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", g_rank, e.what());
    status = 1;
  }
  MPI_Finalize();
  return status;
}
