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
//   mpirun -np 4 weave_bench --backend cuda --dtype bf16 --preset tp --json out.json
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
#include "shapes.hpp"
#include "weave/weave.hpp"

namespace {

int g_rank = 0, g_size = 1;

using bench::parse_shape;
using bench::preset_shapes;
using bench::Shape;

// Counts over the ranks: balanced, or ~10% apart (rank r gets weight 1 + 0.1 r,
// normalised), in multiples of `quantum` where possible.
std::vector<int64_t> counts_for(int64_t n, bool uneven) {
  std::vector<int64_t> counts(static_cast<size_t>(g_size));
  if (!uneven) {
    for (int r = 0; r < g_size; ++r) counts[r] = n / g_size + (r < n % g_size ? 1 : 0);
    return counts;
  }
  double total = 0;
  for (int r = 0; r < g_size; ++r) total += 1.0 + 0.1 * r;
  int64_t given = 0;
  for (int r = 0; r < g_size; ++r) given += counts[r] = static_cast<int64_t>(n * (1.0 + 0.1 * r) / total) / 8 * 8;
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
  bool reduce_in_accumulation_type = false;
};

weave_dtype_t parse_dtype(const std::string& t) {
  if (t == "f32") return WEAVE_FLOAT32;
  if (t == "f64") return WEAVE_FLOAT64;
  if (t == "f16") return WEAVE_FLOAT16;
  if (t == "bf16") return WEAVE_BFLOAT16;
  throw std::runtime_error("unknown dtype " + t);
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
  throw std::runtime_error("unknown op " + op + " (ag, rs, ar)");
}

const char* op_name(weave_operation_t op) {
  return op == WEAVE_AG_GEMM ? "AG-GEMM" : op == WEAVE_GEMM_RS ? "GEMM-RS" : "GEMM-AR";
}

// One operation on one shape: matrices, buffers and the plans.
class Case {
 public:
  Case(const weave::Grid& grid, weave_operation_t op, const Shape& s, weave_dtype_t t, bool device)
      : op_(op), shape_(s), dtype_(t), device_(device) {
    const weave_memory_t memory = device ? WEAVE_MEMORY_DEVICE : WEAVE_MEMORY_HOST;
    const std::vector<int64_t> m_counts = counts_for(s.m, s.uneven), n_counts = counts_for(s.n, s.uneven),
                               k_counts = counts_for(s.k, s.uneven);
    // Row-major, as tensor-parallel codes store them: X [M, K], the weight
    // W [N, K] of a linear layer (op(B) = W^T), Y [M, N]. AG-GEMM gathers X's
    // rows and splits W's rows (Y's columns); GEMM-RS and GEMM-AR split K.
    const weave_order_t row = WEAVE_ORDER_ROW_MAJOR;
    if (op == WEAVE_AG_GEMM) {
      a_ = std::make_unique<weave::Matrix>(grid, weave::block_rows(s.m, s.k, t).rows_per_rank(m_counts).order(row).memory(memory));
      b_ = std::make_unique<weave::Matrix>(grid, weave::block_rows(s.n, s.k, t).rows_per_rank(n_counts).order(row).memory(memory));
      c_ = std::make_unique<weave::Matrix>(grid, weave::block_cols(s.m, s.n, t).cols_per_rank(n_counts).order(row).memory(memory));
      local_m_ = s.m;
      local_k_ = s.k;
      local_n_ = c_->local_cols();
    } else {
      a_ = std::make_unique<weave::Matrix>(grid, weave::block_cols(s.m, s.k, t).cols_per_rank(k_counts).order(row).memory(memory));
      b_ = std::make_unique<weave::Matrix>(grid, weave::block_cols(s.n, s.k, t).cols_per_rank(k_counts).order(row).memory(memory));
      c_ = std::make_unique<weave::Matrix>(
          grid, op == WEAVE_GEMM_RS ? weave::block_rows(s.m, s.n, t).rows_per_rank(m_counts).order(row).memory(memory)
                                    : weave::replicated(s.m, s.n, t).order(row).memory(memory));
      local_m_ = s.m;
      local_k_ = a_->local_cols();
      local_n_ = s.n;
    }
    a_buf_ = buffer_for(*a_);
    b_buf_ = buffer_for(*b_);
    c_buf_ = buffer_for(*c_);
    bench::fill_random(a_buf_, t, 1000 + g_rank);
    bench::fill_random(b_buf_, t, 2000 + g_rank);
    bench::fill_random(c_buf_, t, 3000 + g_rank);
    m_counts_ = m_counts;
  }

  // `reduce_in_output_type`: WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE.
  weave::Plan plan(const weave::Grid& grid, const Options& o, const PlanChoice& choice,
                   bool reduce_in_output_type) const {
    weave::PlanDesc d(op_, *a_, *b_, *c_);
    d.ops(WEAVE_OP_N, WEAVE_OP_T)
        .algorithm(choice.algorithm)
        .transport(choice.transport)
        .direction(choice.direction)
        .chunks_per_shard(choice.chunks)
        .compute_streams(choice.streams >= 0 ? choice.streams : o.streams);
    int flags = WEAVE_FLAG_NO_EXECUTE_CHECK;  // measure the operation, not the argument check
    if (!o.trace.empty()) flags |= WEAVE_FLAG_TRACE;
    if (reduce_in_output_type) flags |= WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE;
    if (o.reduce_in_accumulation_type && !reduce_in_output_type) flags |= WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE;
    d.flags(flags);
    const ScopedEnvironment environment(choice.environment);
    return weave::Plan(grid, d);
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

  void execute(const weave::Plan& plan, bench::Timer& timer) { execute(plan, timer, a_buf_, b_buf_, c_buf_); }

  // The GEMM alone: this rank's whole local product as one GEMM, through a
  // plan over a one-rank grid (one BLAS / cuBLASLt call, nothing else).
  std::unique_ptr<weave::Plan> local_gemm_plan(const weave::Grid& self) {
    const weave_memory_t memory = device_ ? WEAVE_MEMORY_DEVICE : WEAVE_MEMORY_HOST;
    // AG-GEMM on one rank is C = op(A) op(B) straight into C; the same
    // row-major layouts as the distributed plan.
    const weave_order_t row = WEAVE_ORDER_ROW_MAJOR;
    gemm_a_ = std::make_unique<weave::Matrix>(self, weave::block_rows(local_m_, local_k_, dtype_).order(row).memory(memory));
    gemm_b_ = std::make_unique<weave::Matrix>(self, weave::block_rows(local_n_, local_k_, dtype_).order(row).memory(memory));
    gemm_c_ = std::make_unique<weave::Matrix>(self, weave::block_rows(local_m_, local_n_, dtype_).order(row).memory(memory));
    gemm_a_buf_ = buffer_for(*gemm_a_);
    gemm_c_buf_ = buffer_for(*gemm_c_);
    gemm_b_buf_ = buffer_for(*gemm_b_);
    bench::fill_random(gemm_a_buf_, dtype_, 4000 + g_rank);
    bench::fill_random(gemm_b_buf_, dtype_, 5000 + g_rank);
    weave::PlanDesc d(WEAVE_AG_GEMM, *gemm_a_, *gemm_b_, *gemm_c_);
    d.ops(WEAVE_OP_N, WEAVE_OP_T).flags(WEAVE_FLAG_NO_EXECUTE_CHECK);
    return std::make_unique<weave::Plan>(self, d);
  }
  void execute_local_gemm(const weave::Plan& plan, bench::Timer& timer) {
    execute(plan, timer, gemm_a_buf_, gemm_b_buf_, gemm_c_buf_);
  }

  // The bytes the communication moves, and the collective that moves them
  // alone: partial sums in C's type or in the accumulation type.
  bench::Collective collective(bool output_type) const {
    bench::Collective c;
    if (op_ == WEAVE_AG_GEMM) {
      c.kind = bench::Collective::AllGather;
      c.dtype = dtype_;
      for (int64_t count : m_counts_) c.counts.push_back(count * shape_.k);
    } else {
      // The accumulation type is float32 for 16-bit types.
      c.dtype = (dtype_ == WEAVE_FLOAT16 || dtype_ == WEAVE_BFLOAT16) && !output_type ? WEAVE_FLOAT32 : dtype_;
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
  bench::Buffer buffer_for(const weave::Matrix& m) const {
    return bench::Buffer(m.local_elements() * static_cast<int64_t>(bench::element_size(dtype_)), device_);
  }
  // C <- op(A) op(B), enqueued on the timer's stream.
  static void execute(const weave::Plan& plan, bench::Timer& timer, const bench::Buffer& a, const bench::Buffer& b,
                      const bench::Buffer& c) {
    weave_execute_args_t args{};
    args.alpha = 1.0;
    args.beta = 0.0;
    args.a = a.data();
    args.b = b.data();
    args.c = c.data();
    args.stream = timer.stream();
    plan.execute(args);
  }

  weave_operation_t op_;
  Shape shape_;
  weave_dtype_t dtype_;
  bool device_;
  std::unique_ptr<weave::Matrix> a_, b_, c_, gemm_a_, gemm_b_, gemm_c_;
  bench::Buffer a_buf_, b_buf_, c_buf_, gemm_a_buf_, gemm_b_buf_, gemm_c_buf_;
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
  app.add_option("--dtype", o.dtype, "f64, f32, bf16, f16")->check(CLI::IsMember({"f64", "f32", "bf16", "f16"}));
  app.add_option("--ops", o.ops, "ag rs ar")->delimiter(',');
  app.add_option("--shape", o.shapes, "global MxKxN, optionally MxKxN:uneven (repeatable)");
  app.add_option("--preset", o.preset, "tp (tensor-parallel layers), host, small");
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
                 "auto/auto/0/auto/0/WEAVE_COMM_PRIORITY=normal (variables set while that plan is created)")
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
    if (shapes.empty()) shapes = preset_shapes(device ? "tp" : "host");
    const weave_dtype_t t = parse_dtype(o.dtype);
    PlanChoice default_choice;  // from the command line
    default_choice.algorithm = parse_algorithm(o.algorithm);
    default_choice.transport = parse_transport(o.transport);
    default_choice.direction = parse_direction(o.direction);
    default_choice.chunks = o.chunks;
    std::vector<PlanChoice> variants;
    for (const std::string& v : o.variants) variants.push_back(parse_variant(v));
    const bool sixteen_bit = t == WEAVE_FLOAT16 || t == WEAVE_BFLOAT16;
    weave::Grid grid(MPI_COMM_WORLD);
    weave::Grid self(MPI_COMM_SELF);
    bench::Timer timer(device);
    bench::Communicator comm(MPI_COMM_WORLD, device);

    if (g_rank == 0) {
      std::printf("weave-bench: %d ranks, backend %s, %s, %s; median of %d (after %d warm-up), slowest rank\n",
                  g_size, o.backend.c_str(), o.dtype.c_str(), bench::device_description(device).c_str(),
                  o.iterations, o.warmup);
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
          if (choice.algorithm == WEAVE_ALGORITHM_DIRECT && op == WEAVE_AG_GEMM) continue;  // reductions only
          choices.push_back(choice);
          variant_plans.push_back(std::make_unique<weave::Plan>(c.plan(grid, o, choice, o.reduce_in_output_type)));
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
            std::printf("%-8s %-34s %8.3f %8.3f %8.3f %8.3f %7.3f %7.3f %7.1f\n", op_name(op), shown.c_str(), gemm_ms,
                        comm_ms, sequential_ms, weave_ms, weave_ms / sequential_ms, weave_ms / limit, tflops);
            results.push_back({{"op", op_name(op)},
                               {"shape", shape.label()},
                               {"variant", label},
                               {"m", shape.m},
                               {"k", shape.k},
                               {"n", shape.n},
                               {"uneven", shape.uneven},
                               {"dtype", o.dtype},
                               {"ranks", g_size},
                               {"backend", o.backend},
                               {"gemm_ms", gemm_ms},
                               {"comm_ms", comm_ms},
                               {"comm_dtype_bytes", bench::element_size(coll.dtype)},
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
