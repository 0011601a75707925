#include "plan/schedule_builder.hpp"

#include <algorithm>

#include "core/checked.hpp"
#include "core/error.hpp"

namespace weave::internal::plan {

namespace {
constexpr int64_t kWorkspaceAlignment = 256;

int64_t align_up(int64_t bytes, const std::string& name) {
  return checked_add(bytes, kWorkspaceAlignment - 1, "the aligned bytes of workspace buffer ", name) /
         kWorkspaceAlignment * kWorkspaceAlignment;
}

BufferSpec user_buffer(const char* name, const LocalBlock& block, DType dtype) {
  BufferSpec spec;
  spec.name = name;
  spec.rows = block.rows;
  spec.cols = block.cols;
  spec.ld = block.ld;
  spec.order = block.order;
  spec.dtype = dtype;
  return spec;
}
}  // namespace

ScheduleBuilder::ScheduleBuilder(const Problem& problem, const ScheduleOptions& options)
    : problem_(problem), options_(options) {
  const DType t = problem.dtype;
  schedule_.buffers.push_back(user_buffer("A", problem.a, t));
  schedule_.buffers.push_back(user_buffer("B", problem.b, t));
  schedule_.buffers.push_back(user_buffer("C", problem.c, t));
  schedule_.buffers.push_back(user_buffer("bias", problem.bias, t));
  // The gathered A is stored like A: op N: M x K, op T: K x M, in A's order.
  // Its leading dimension is the tight one unless the caller passes another
  // at execute time.
  LocalBlock gathered;
  gathered.order = problem.a.order;
  gathered.rows = problem.op_a == Op::N ? problem.m : problem.k;
  gathered.cols = problem.op_a == Op::N ? problem.k : problem.m;
  gathered.ld = min_leading_dimension(gathered.rows, gathered.cols, gathered.order);
  if (options.gathered_output)  // the caller's buffer for it must be a number of bytes
    checked_mul(checked_mul(gathered.rows, gathered.cols, "the elements of the gathered A (", gathered.rows, " x ",
                            gathered.cols, ")"),
                static_cast<int64_t>(dtype_size(t)), "the bytes of the gathered A");
  schedule_.buffers.push_back(user_buffer("gathered A", gathered, t));
  schedule_.group_size = problem.group_size;
  schedule_.group_rank = problem.group_rank;
  schedule_.compute_lanes = options.compute_lanes;
}

int ScheduleBuilder::add_workspace(const std::string& name, int64_t rows, int64_t cols, DType dtype,
                                   Order order) {
  BufferSpec spec;
  spec.name = name;
  spec.rows = rows;
  spec.cols = cols;
  spec.dtype = dtype;
  spec.order = order;
  spec.ld = min_leading_dimension(rows, cols, order);
  spec.offset_bytes = schedule_.workspace_bytes;
  const int64_t elements = checked_mul(rows, cols, "the elements of workspace buffer ", name);
  const int64_t bytes =
      checked_mul(elements, static_cast<int64_t>(dtype_size(dtype)), "the bytes of workspace buffer ", name);
  schedule_.workspace_bytes =
      checked_add(schedule_.workspace_bytes, align_up(bytes, name), "the plan's workspace bytes (with ", name, ")");
  schedule_.buffers.push_back(spec);
  return static_cast<int>(schedule_.buffers.size()) - 1;
}

int ScheduleBuilder::add_alias(int of, const std::string& name, int64_t rows, int64_t cols, Order order) {
  BufferSpec spec = schedule_.buffers.at(of);
  if (checked_mul(rows, cols, "the elements of workspace alias ", name) !=
      checked_mul(spec.rows, spec.cols, "the elements of workspace buffer ", spec.name))
    fail(WEAVE_ERROR_INTERNAL, "alias ", name, " changes the size");
  spec.name = name;
  spec.rows = rows;
  spec.cols = cols;
  spec.order = order;
  spec.ld = min_leading_dimension(rows, cols, order);
  schedule_.buffers.push_back(spec);
  return static_cast<int>(schedule_.buffers.size()) - 1;
}

int ScheduleBuilder::add_step(StepOp op, int lane, std::vector<int> deps, std::string label, int batch) {
  Step s;
  s.op = std::move(op);
  s.lane = lane;
  s.batch = batch;
  deps.erase(std::remove(deps.begin(), deps.end(), -1), deps.end());
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  s.deps = std::move(deps);
  s.label = std::move(label);
  schedule_.steps.push_back(std::move(s));
  return static_cast<int>(schedule_.steps.size()) - 1;
}

Region ScheduleBuilder::op_rows(int buffer, Op op, int64_t row0, int64_t rows) const {
  const BufferSpec& spec = schedule_.buffers.at(buffer);
  if (op == Op::N) return Region{buffer, row0, 0, rows, spec.cols};
  return Region{buffer, 0, row0, spec.rows, rows};
}

Region ScheduleBuilder::whole(int buffer) const {
  const BufferSpec& spec = schedule_.buffers.at(buffer);
  return Region{buffer, 0, 0, spec.rows, spec.cols};
}

bool ScheduleBuilder::same_bytes_as_tight(const Region& r, Order layout) const {
  if (!contiguous(r)) return false;
  // A contiguous vector is laid out the same in either order.
  return schedule_.buffer(r).order == layout || r.rows <= 1 || r.cols <= 1;
}

EpilogueOp ScheduleBuilder::copy(const Region& dst, const Region& src) const {
  EpilogueOp e;
  e.dst = dst;
  e.has_src = true;
  e.src = src;
  e.src_scale = Scalar::One;
  e.dst_scale = Scalar::Zero;
  return e;
}

Region ScheduleBuilder::bias_for(const Region& c_region) const {
  return Region{kBufferBias, 0, c_region.col0, 1, c_region.cols};
}

EpilogueOp ScheduleBuilder::finish(const Region& dst, const Region& src) const {
  EpilogueOp e = copy(dst, src);
  e.dst_scale = Scalar::Beta;
  e.has_bias = problem_.has_bias;
  if (e.has_bias) e.bias = bias_for(dst);
  return e;
}

EpilogueOp ScheduleBuilder::add_bias(const Region& dst) const {
  EpilogueOp e;
  e.dst = dst;
  e.dst_scale = Scalar::One;
  e.has_bias = true;
  e.bias = bias_for(dst);
  return e;
}

int ScheduleBuilder::add_sum(EpilogueOp last, const std::vector<Region>& sources, const std::vector<int>& deps,
                             int lane, const std::string& label) {
  if (sources.empty()) fail(WEAVE_ERROR_INTERNAL, "a sum of no sources (", label, ")");
  const std::size_t per_step = 1 + kMaxMoreSources;
  auto summed = [&](EpilogueOp e, std::size_t first, std::size_t count) {
    e.has_src = true;
    e.src = sources[first];
    e.more_src.assign(sources.begin() + static_cast<std::ptrdiff_t>(first) + 1,
                      sources.begin() + static_cast<std::ptrdiff_t>(first + count));
    return e;
  };
  if (sources.size() <= per_step) return add_step(summed(last, 0, sources.size()), lane, deps, label);
  const Region& shape = last.dst;
  const Region sum{add_workspace("sum for " + label, shape.rows, shape.cols, accumulation_type(problem_.dtype),
                                 Order::RowMajor),
                   0, 0, shape.rows, shape.cols};
  int partial = -1;
  for (std::size_t first = 0; first < sources.size(); first += per_step) {
    EpilogueOp add = copy(sum, sources[first]);
    add.dst_scale = first == 0 ? Scalar::Zero : Scalar::One;
    std::vector<int> after = deps;
    if (partial >= 0) after.push_back(partial);
    partial = add_step(summed(add, first, std::min(per_step, sources.size() - first)), lane, after,
                       "partial " + label);
  }
  last.has_src = true;
  last.src = sum;
  last.more_src.clear();
  return add_step(last, lane, {partial}, label);
}

Schedule ScheduleBuilder::finish_schedule(Algorithm algorithm, Direction direction, int chunks) {
  schedule_.algorithm = algorithm;
  schedule_.direction = direction;
  schedule_.chunks_per_shard = chunks;
  return std::move(schedule_);
}

std::vector<DirectionChunks> split_chunks_by_direction(Direction direction, int chunks) {
  std::vector<int> all(chunks);
  for (int j = 0; j < chunks; ++j) all[j] = j;
  if (direction != Direction::Bidirectional) return {{direction, all}};
  const int forward = (chunks + 1) / 2;
  return {{Direction::Forward, std::vector<int>(all.begin(), all.begin() + forward)},
          {Direction::Backward, std::vector<int>(all.begin() + forward, all.end())}};
}

Schedule build_schedule(const Problem& problem, const ScheduleOptions& options) {
  if (options.chunks_per_shard < 1) fail(WEAVE_ERROR_INTERNAL, "chunks_per_shard < 1");
  if (options.compute_lanes < 1) fail(WEAVE_ERROR_INTERNAL, "compute_lanes < 1");
  // Chunks are numbered (and tagged) as ints, a reduction's second phase
  // above its first: 2 x group size x chunks_per_shard must be an int.
  checked_narrow<int>(checked_mul(2 * static_cast<int64_t>(problem.group_size), options.chunks_per_shard,
                                  "the chunks of the schedule's two phases (2 x ", problem.group_size,
                                  " ranks x chunks_per_shard)"),
                      "the chunks of the schedule's two phases (2 x ", problem.group_size,
                      " ranks x chunks_per_shard ", options.chunks_per_shard, ")");
  ScheduleBuilder builder(problem, options);
  // A group of one rank has nothing to communicate: every algorithm is the
  // local GEMM, which the sequential builder writes.
  const bool local = problem.group_size == 1;
  const Algorithm algorithm = local ? Algorithm::Sequential : options.algorithm;
  if (algorithm == Algorithm::Sequential) {
    build_sequential(builder);
    return builder.finish_schedule(algorithm, options.direction, 1);
  }
  if (algorithm == Algorithm::Pipelined || algorithm == Algorithm::Hierarchical) {
    if (algorithm == Algorithm::Pipelined)
      build_pipelined(builder);
    else
      build_hierarchical(builder);
    return builder.finish_schedule(algorithm, Direction::Forward, options.chunks_per_shard);
  }
  if (algorithm == Algorithm::Direct) {
    if (problem.operation == Operation::AgGemm) fail(WEAVE_ERROR_INTERNAL, "AG-GEMM has no direct algorithm");
    if (options.peer_sums)
      build_reduction_peer_sums(builder);
    else
      build_reduction_direct(builder);
    return builder.finish_schedule(algorithm, Direction::Forward, options.chunks_per_shard);
  }
  if (options.direction == Direction::Bidirectional && options.chunks_per_shard < 2 &&
      problem.operation != Operation::AgGemm)
    fail(WEAVE_ERROR_INTERNAL, "a bidirectional reduction ring needs at least two chunks per shard");
  if (problem.operation == Operation::AgGemm)
    build_ag_gemm_ring(builder);
  else
    build_reduction_ring(builder);
  return builder.finish_schedule(algorithm, options.direction, options.chunks_per_shard);
}

}  // namespace weave::internal::plan
