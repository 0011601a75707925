#include "plan/schedule_builder.hpp"

#include <algorithm>
#include <numeric>

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

BufferSpec scale_buffer(const char* name, const ScaleLayout& layout) {
  return user_buffer(name, LocalBlock{layout.rows, layout.cols, layout.ld, layout.order}, layout.dtype);
}

// The gathered A's scales (those of its rows as they travel: in the wire
// type where it has one): the layout of the whole op(A) (M x K), except for
// tensor-wise scales, of which there is one per shard: one per group rank
// (P x 1).
ScaleLayout gathered_scale_layout(const Problem& p) {
  if (p.wire_scale != ScaleMode::Tensor || p.m == 0 || p.k == 0) return scale_layout(p.wire_scale, p.m, p.k);
  ScaleLayout layout;
  layout.mode = ScaleMode::Tensor;
  layout.rows = p.group_size;
  layout.cols = 1;
  layout.ld = p.group_size;
  return layout;
}
}  // namespace

ScheduleBuilder::ScheduleBuilder(const Problem& problem, const ScheduleOptions& options)
    : problem_(problem), options_(options) {
  schedule_.buffers.push_back(user_buffer("A", problem.a, problem.a_type));
  schedule_.buffers.push_back(user_buffer("B", problem.b, problem.b_type));
  schedule_.buffers.push_back(user_buffer("C", problem.c, problem.c_type));
  schedule_.buffers.push_back(user_buffer("bias", problem.bias, problem.bias_type));
  const DType t = problem.wire_type;  // what the gathered A holds: A's rows as they travel
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
  schedule_.buffers.push_back(scale_buffer("A scales", problem.a_scales));
  schedule_.buffers.push_back(scale_buffer("B scales", problem.b_scales));
  schedule_.buffers.push_back(scale_buffer("gathered A scales", gathered_scale_layout(problem)));
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

int ScheduleBuilder::add_scale_workspace(const std::string& name, ScaleMode mode, int64_t outer, int64_t inner) {
  // Every layout is tight (its ld is its rows, column-major, or its
  // columns, row-major), so it is a plain workspace matrix.
  const ScaleLayout layout = scale_layout(mode, outer, inner);
  return add_workspace(name, layout.rows, layout.cols, layout.dtype, layout.order);
}

int ScheduleBuilder::add_view(int of, const std::string& name, int64_t first, const ScaleLayout& layout) {
  BufferSpec spec = schedule_.buffers.at(of);
  if (of < kFirstWorkspaceBuffer) fail(WEAVE_ERROR_INTERNAL, "view ", name, " of a caller's buffer");
  spec.name = name;
  spec.offset_bytes = checked_add(spec.offset_bytes,
                                  checked_mul(first, static_cast<int64_t>(dtype_size(spec.dtype)), "the offset of ", name),
                                  "the workspace offset of ", name);
  spec.rows = layout.rows;
  spec.cols = layout.cols;
  spec.ld = layout.ld;
  spec.order = layout.order;
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

Region ScheduleBuilder::scale_rows(int buffer, ScaleMode mode, int64_t row0, int64_t rows,
                                   const std::string& what) const {
  const BufferSpec& spec = schedule_.buffers.at(buffer);
  if (rows == 0 || spec.rows == 0 || spec.cols == 0) return Region{buffer, 0, 0, 0, 0};  // no scales (K = 0)
  switch (mode) {
    case ScaleMode::None: return Region{buffer, 0, 0, 0, 0};
    case ScaleMode::Tensor: return Region{buffer, 0, 0, 1, 1};
    case ScaleMode::RowWise:
    case ScaleMode::Block1x128: return Region{buffer, row0, 0, rows, spec.cols};
    case ScaleMode::Block128x128:
    case ScaleMode::Mxfp8: {
      constexpr int64_t band = 128;
      if (row0 % band != 0)
        fail(WEAVE_ERROR_UNSUPPORTED, what, " start at row ", row0, ", inside a band of 128 rows that ",
             scale_mode_name(mode), " scales share; every chunk and every rank's rows of op(A) but the last must ",
             "be a multiple of 128 rows (set chunks_per_shard and the counts accordingly), or use row-wise or 1x128 "
             "scales");
      const int64_t first = row0 / band, last = ceil_div(row0 + rows, band);
      return Region{buffer, first, 0, last - first, spec.cols};
    }
  }
  fail(WEAVE_ERROR_INTERNAL, "unknown scale mode");
}

bool ScheduleBuilder::tight_scales(const Region& region) const {
  const BufferSpec& spec = schedule_.buffer(region);
  if (region.empty()) return true;
  if (spec.order == Order::RowMajor) return region.col0 == 0 && region.cols == spec.cols && spec.ld == spec.cols;
  return region.cols == 1 || (region.row0 == 0 && region.rows == spec.ld);
}

ScaleOperand ScheduleBuilder::a_scales(int64_t row0, int64_t rows, int* ready) {
  *ready = -1;
  ScaleOperand s;
  s.mode = problem_.a_scale;
  if (!s.scaled()) return s;
  s.region = scale_rows(kBufferAScale, s.mode, row0, rows, str("rows ", row0, " to ", row0 + rows, " of my op(A)"));
  // The caller's own region where it is tight and starts the buffer (as
  // aligned as the caller's pointer), or, for row-wise scales (a plain
  // vector), where it starts a multiple of 16 bytes into it (as aligned as
  // the caller's pointer up to 16 bytes, what cuBLASLt wants of a scale
  // pointer; the CUDA backend copies a vector whose pointer turns out less
  // aligned at execute); a copy in the (256-byte aligned) workspace
  // elsewhere. FP8 chunks start at multiples of 16 rows, so on GPUs
  // row-wise scales are never copied.
  if (tight_scales(s.region) && s.region.col0 == 0 &&
      (s.region.row0 == 0 ||
       (s.mode == ScaleMode::RowWise && schedule_.offset_from_binding(s.region) % kScaleVectorAlignment == 0)))
    return s;
  auto made = a_scale_copies_.find({row0, rows});
  if (made == a_scale_copies_.end()) {
    const int64_t inner = problem_.op_a == Op::N ? problem_.a.cols : problem_.a.rows;
    const int copy = add_scale_workspace(str("A scales of rows ", row0, " to ", row0 + rows), s.mode, rows, inner);
    ScaleOperand tight{s.mode, whole(copy)};
    const int step = add_step(this->copy(tight.region, s.region), next_compute_lane(), {},
                              str("pack A scales of rows ", row0, " to ", row0 + rows));
    made = a_scale_copies_.emplace(std::make_pair(row0, rows), std::make_pair(tight, step)).first;
  }
  *ready = made->second.second;
  return made->second.first;
}

ScaleOperand ScheduleBuilder::b_scales() const {
  ScaleOperand s;
  s.mode = problem_.b_scale;
  if (s.scaled()) s.region = whole(kBufferBScale);
  return s;
}

GemmOp ScheduleBuilder::gemm_of_a_rows(int64_t row0, int64_t rows, const Region& c, Scalar alpha, Scalar beta,
                                       int* ready) {
  return GemmOp{op_rows(kBufferA, problem_.op_a, row0, rows), problem_.op_a, whole(kBufferB), problem_.op_b, c, alpha,
                beta, a_scales(row0, rows, ready), b_scales()};
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

// The copies of A's scales (a_scales) depend on nothing, but each is made
// when its GEMM is first emitted, so in schedule order it stood between
// GEMMs: on a GPU it then waited for the running GEMM to free an SM, and the
// next GEMM waited for it (a trace of FP8 GEMM-AR over 4 GPUs showed each
// product starting 10-40 us late). Moved to the front, they all run before
// the first GEMM; steps keep their lanes, and every dependency still points
// backwards.
void ScheduleBuilder::scale_copies_first() {
  if (a_scale_copies_.empty()) return;
  std::vector<bool> first(schedule_.steps.size(), false);
  for (const auto& entry : a_scale_copies_) first[static_cast<std::size_t>(entry.second.second)] = true;
  std::vector<int> order(schedule_.steps.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_partition(order.begin(), order.end(), [&](int i) { return first[static_cast<std::size_t>(i)]; });
  std::vector<int> new_index(order.size());
  for (std::size_t n = 0; n < order.size(); ++n) new_index[static_cast<std::size_t>(order[n])] = static_cast<int>(n);
  std::vector<Step> steps;
  steps.reserve(order.size());
  for (int i : order) {
    Step s = std::move(schedule_.steps[static_cast<std::size_t>(i)]);
    for (int& d : s.deps) d = new_index[static_cast<std::size_t>(d)];
    std::sort(s.deps.begin(), s.deps.end());
    steps.push_back(std::move(s));
  }
  schedule_.steps = std::move(steps);
  a_scale_copies_.clear();
}

Schedule ScheduleBuilder::finish_schedule(Algorithm algorithm, Direction direction, int chunks) {
  scale_copies_first();
  for (const Step& s : schedule_.steps) {
    int tag = 0;
    if (const auto* send = std::get_if<SendOp>(&s.op)) tag = send->tag;
    if (const auto* recv = std::get_if<RecvOp>(&s.op)) tag = recv->tag;
    if (const auto* publish = std::get_if<PublishOp>(&s.op)) tag = publish->tag;
    schedule_.max_tag = std::max(schedule_.max_tag, tag);
  }
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

namespace {
Schedule build_steps(const Problem& problem, const ScheduleOptions& options);
}  // namespace

Schedule build_schedule(const Problem& problem, const ScheduleOptions& options) {
  Schedule s = build_steps(problem, options);
  if (is_complex(problem.dtype)) conjugate_operands_where_needed(s, problem, options.gathered_output);
  return s;
}

namespace {

Schedule build_steps(const Problem& problem, const ScheduleOptions& options) {
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
  if (problem.operation == Operation::Gemm) {
    if (options.algorithm == Algorithm::Sequential || problem.group_size == 1) {
      build_gemm_sequential(builder);
      return builder.finish_schedule(Algorithm::Sequential, Direction::Forward, 1);
    }
    if (options.algorithm != Algorithm::Summa)
      fail(WEAVE_ERROR_INTERNAL, "WEAVE_GEMM runs SUMMA or its sequential variant, not ", algorithm_name(options.algorithm));
    if (options.gemm_bands > 0)
      build_gemm_in_bands(builder);
    else
      build_summa(builder);
    return builder.finish_schedule(Algorithm::Summa, Direction::Forward, 1);
  }
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
  if (algorithm == Algorithm::Direct && problem.operation != Operation::AgGemm) {
    if (options.peer_sums)
      build_reduction_peer_sums(builder);
    else if (problem.operation == Operation::GemmAr && options.all_reduce_one_shot)
      build_all_reduce_one_shot(builder);
    else
      build_reduction_direct(builder);
    return builder.finish_schedule(algorithm, Direction::Forward, options.chunks_per_shard);
  }
  if (options.direction == Direction::Bidirectional && options.chunks_per_shard < 2 &&
      problem.operation != Operation::AgGemm)
    fail(WEAVE_ERROR_INTERNAL, "a bidirectional reduction ring needs at least two chunks per shard");
  if (problem.operation == Operation::AgGemm)
    build_ag_gemm_messages(builder);
  else
    build_reduction_ring(builder);
  return builder.finish_schedule(algorithm, options.direction, options.chunks_per_shard);
}

}  // namespace

}  // namespace weave::internal::plan
