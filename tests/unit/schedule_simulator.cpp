#include "schedule_simulator.hpp"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <variant>

#include "core/error.hpp"
#include "schedule_checks.hpp"
#include "support/float8_reference.hpp"
#include "support/oracle.hpp"

namespace weave_test {

using weave::internal::Op;
using weave::internal::Operation;
using weave::internal::Order;
using namespace weave::internal::plan;

std::string SimulationReport::summary() const {
  std::string out;
  for (const std::string& e : errors) out += e + "\n";
  return out;
}

using weave::internal::str;

namespace {

// What a value is made of, tracked next to it.
struct Tag {
  int raw_c = 0;         // copies of the caller's C not (yet) scaled by beta
  int beta_c = 0;        // copies of beta * C
  int bias = 0;          // copies of bias
  bool product = false;  // carries alpha * op(A) op(B) terms
  bool poison = false;   // derived from never-written workspace or a receive in flight
  bool misuse = false;   // a scalar applied to the wrong term (beta twice, beta to bias, alpha to C, ...)

  bool operator==(const Tag& o) const {
    return raw_c == o.raw_c && beta_c == o.beta_c && bias == o.bias && product == o.product &&
           poison == o.poison && misuse == o.misuse;
  }
  bool carries_caller_terms() const { return raw_c || beta_c || bias; }
};

Tag operator+(Tag a, const Tag& b) {
  a.raw_c += b.raw_c;
  a.beta_c += b.beta_c;
  a.bias += b.bias;
  a.product = a.product || b.product;
  a.poison = a.poison || b.poison;
  a.misuse = a.misuse || b.misuse;
  return a;
}

// The tag of `role * value`.
Tag scaled(const Tag& t, Scalar role) {
  switch (role) {
    case Scalar::Zero: return Tag{};  // not read
    case Scalar::One: return t;
    case Scalar::Beta: {
      Tag r = t;
      r.beta_c = t.raw_c;
      r.raw_c = 0;
      r.misuse = t.misuse || t.beta_c || t.bias || t.product;
      return r;
    }
    case Scalar::Alpha: {
      Tag r = t;
      r.misuse = t.misuse || t.carries_caller_terms();
      return r;
    }
  }
  return t;
}

struct Cell {
  double value = 0.0;
  Tag tag;
  bool written = false;
};

bool same_cell(const Cell& a, const Cell& b) {
  return std::memcmp(&a.value, &b.value, sizeof(double)) == 0 && a.tag == b.tag;
}

constexpr double kSentinel = 12345.0;  // padding outside a local block

Cell poison_cell() {
  Cell c;
  c.value = std::numeric_limits<double>::quiet_NaN();
  c.tag.poison = true;
  return c;
}

Cell sentinel_cell() {
  Cell c;
  c.value = kSentinel;
  return c;
}

// Global problem in op form, generated from the data seed.
struct GlobalData {
  Dense op_a, op_b, c0;
  std::vector<double> bias;
};

GlobalData make_global_data(const weave::internal::Problem& p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  GlobalData g;
  g.op_a = random_dense(p.m, p.k, rng);
  g.op_b = random_dense(p.k, p.n, rng);
  g.c0 = random_dense(p.m, p.n, rng);
  const Dense bias = random_dense(1, p.n, rng);
  g.bias.assign(bias.v.begin(), bias.v.end());
  return g;
}

// Storage of one caller block, including the padding its ld implies.
int64_t storage_elements(int64_t rows, int64_t cols, int64_t ld, Order order) {
  return order == Order::ColMajor ? ld * std::max<int64_t>(cols, 1) : ld * std::max<int64_t>(rows, 1);
}

int64_t element_index(int64_t i, int64_t j, int64_t ld, Order order) {
  return order == Order::ColMajor ? i + j * ld : i * ld + j;
}

// Where rank r's blocks sit in the global (op-form) matrices.
struct Placement {
  int64_t a_row0 = 0, a_col0 = 0;  // of op(A)
  int64_t b_row0 = 0, b_col0 = 0;  // of op(B)
  int64_t c_row0 = 0, c_col0 = 0;  // of C (and bias columns)
};

Placement placement(const weave::internal::Problem& p) {
  Placement at;
  const int r = p.group_rank;
  switch (p.operation) {
    case Operation::AgGemm:
      at.a_row0 = p.m_split.offset(r);
      at.b_col0 = at.c_col0 = p.n_split.offset(r);
      break;
    case Operation::GemmRs:
      at.a_col0 = at.b_row0 = p.k_split.offset(r);
      at.c_row0 = p.m_split.offset(r);
      break;
    case Operation::GemmAr:
      at.a_col0 = at.b_row0 = p.k_split.offset(r);
      break;
    case Operation::Gemm:
      break;  // blocks of a 2-D layout: see grid_position
  }
  return at;
}

// WEAVE_GEMM: the global position of element (i, j) of a rank's local
// array of a matrix laid out as `layout`, or false when the array holds no
// element of the matrix there (positions before a submatrix's start).
bool grid_position(const weave::internal::GridLayout& layout, const weave::internal::GridOperands& grid, int rank,
                   int64_t i, int64_t j, int64_t* gi, int64_t* gj) {
  const int row = grid.row_of(rank), col = grid.col_of(rank);
  auto global = [](const weave::internal::AxisLayout& axis, int p, int64_t l, int64_t* g) {
    if (axis.is_replicated()) {
      *g = l;
      return l < axis.extent();
    }
    if (l < axis.local_begin(p) || l >= axis.local_end(p)) return false;
    *g = axis.global_index(p, l);
    return true;
  };
  return global(layout.rows, row, i, gi) && global(layout.cols, col, j, gj);
}

struct RankState {
  const weave::internal::Problem* problem = nullptr;
  const Schedule* schedule = nullptr;
  std::vector<Cell> user[kFirstWorkspaceBuffer];
  int64_t gathered_ld = 1;
  std::vector<Cell> workspace;  // one cell per byte; an element lives at its first byte

  // Static structure.
  std::vector<std::vector<int>> units;  // communication steps issued together
  std::vector<int> unit_of;             // -1 for compute steps
  std::vector<std::vector<int>> dependents;
  std::vector<int> lane_next;         // next compute step on the same lane (-1: none)
  std::vector<int> collective_index;  // n for the n-th collective, else -1

  // Progress.
  std::vector<bool> posted, done;
  std::vector<int> missing;       // compute steps: unmet conditions
  std::vector<int> unit_missing;  // units: unmet conditions
  std::vector<int> unit_finished;
  std::vector<std::vector<Cell>> snapshot;  // what a posted send / collective sends / publish offers
  std::vector<bool> published, released;    // Publish steps: ready for the reader; read and let go
  std::vector<bool> enabled;                // PeerSum, AwaitRelease: their completion is enabled
};

enum class EventKind { Compute, PostUnit, CompletePointToPoint, CompleteCollective, CompleteOneSided };
struct Event {
  EventKind kind;
  int rank;
  int index;  // step, unit or collective number
  uint64_t priority = 0;  // delay_events: the highest runs first
};

class Simulator {
 public:
  Simulator(const std::vector<weave::internal::Problem>& problems, const std::vector<Schedule>& schedules,
            const SimulationOptions& options)
      : problems_(problems), schedules_(schedules), options_(options), rng_(options.order_seed) {}

  SimulationReport run();

 private:
  void error(std::string message) {
    if (report_.errors.size() < options_.max_errors) report_.errors.push_back(std::move(message));
  }
  std::string where(int rank, int step) const { return weave_test::where(rank, step, schedules_[rank]); }

  void set_up_rank(int r);
  void fill_inputs(int r);
  Cell* cell(int r, const Region& region, int64_t i, int64_t j);
  Cell* linear(int r, const Region& region, int64_t t);
  void store(int r, const Region& region, Cell* target, const Cell& value, int step);

  void enable(Event e) {
    e.priority = rng_();
    enabled_.push_back(e);
  }
  std::size_t pick_event();
  void satisfy_compute(int r, int step) {
    if (--ranks_[r].missing[step] == 0) enable({EventKind::Compute, r, step});
  }
  void satisfy_unit(int r, int unit) {
    if (--ranks_[r].unit_missing[unit] == 0) enable({EventKind::PostUnit, r, unit});
  }
  void finish_step(int r, int step);

  void run_compute(int r, int step);
  void run_gemm(int r, int step, const GemmOp& op);
  void run_epilogue(int r, int step, const EpilogueOp& op);
  void run_quantize(int r, int step, const QuantizeOp& op);
  void run_rearrange(int r, int step, const RearrangeOp& op);
  void post_unit(int r, int unit);
  void complete_point_to_point(int r, int step);
  void complete_collective(int n);
  void complete_one_sided(int r, int step);
  void run_peer_sum(int r, int step, const PeerSumOp& op);
  using TermCell = std::function<const Cell*(int64_t i, int64_t j, int term)>;
  bool element_wise(int r, const Region& dst, int terms, const TermCell& term, Scalar src_scale, Scalar dst_scale,
                    const Region* bias, std::vector<Cell>* out);
  // Enables a posted PeerSum once every remote term is published, a posted
  // AwaitRelease once its publication is released.
  void try_peer_sum(int r, int step);
  void try_await(int r, int step);
  double scalar(Scalar s) const {
    switch (s) {
      case Scalar::Zero: return 0.0;
      case Scalar::One: return 1.0;
      case Scalar::Alpha: return options_.alpha;
      case Scalar::Beta: return options_.beta;
    }
    return 0.0;
  }

  void check_results();
  void report_stall();

  const std::vector<weave::internal::Problem>& problems_;
  const std::vector<Schedule>& schedules_;
  const SimulationOptions& options_;
  std::mt19937_64 rng_;
  SimulationReport report_;
  std::vector<RankState> ranks_;
  PointToPointMatching matching_;
  PeerReadMatching reads_;
  std::vector<std::vector<StepRef>> reader_of_;  // [publisher][publish step]: the PeerSum that reads it
  std::vector<std::vector<StepRef>> await_of_;   // [publisher][publish step]: the AwaitRelease for it
  std::vector<int> collective_posts_;  // per collective number: ranks that posted it
  std::vector<Event> enabled_;
  GlobalData data_;
};

void Simulator::set_up_rank(int r) {
  RankState& st = ranks_[r];
  const weave::internal::Problem& p = problems_[r];
  const Schedule& s = schedules_[r];
  st.problem = &p;
  st.schedule = &s;
  const int n = static_cast<int>(s.steps.size());

  // Memory: the caller's blocks with padding sentinels, NaN workspace.
  for (int b = 0; b < kFirstWorkspaceBuffer; ++b) {
    const BufferSpec& spec = s.buffers[b];
    int64_t ld = spec.ld;
    if (b == kBufferGathered) ld = st.gathered_ld = spec.ld + options_.gathered_ld_padding;
    st.user[b].assign(static_cast<std::size_t>(storage_elements(spec.rows, spec.cols, ld, spec.order)),
                      sentinel_cell());
  }
  st.workspace.assign(static_cast<std::size_t>(s.workspace_bytes), poison_cell());
  fill_inputs(r);

  // Structure.
  st.unit_of.assign(n, -1);
  st.dependents.assign(n, {});
  st.lane_next.assign(n, -1);
  st.collective_index.assign(n, -1);
  std::map<int, int> unit_of_batch;
  std::map<int, int> last_on_lane;
  int collectives = 0;
  for (int i = 0; i < n; ++i) {
    const Step& step = s.steps[i];
    for (int d : step.deps) st.dependents[d].push_back(i);
    if (step.kind() == StepKind::Collective) st.collective_index[i] = collectives++;
    if (!step.is_comm()) {
      auto last = last_on_lane.find(step.lane);
      if (last != last_on_lane.end()) st.lane_next[last->second] = i;
      last_on_lane[step.lane] = i;
      continue;
    }
    if (step.batch >= 0 && unit_of_batch.count(step.batch)) {
      st.unit_of[i] = unit_of_batch[step.batch];
      st.units[st.unit_of[i]].push_back(i);
      continue;
    }
    st.unit_of[i] = static_cast<int>(st.units.size());
    if (step.batch >= 0) unit_of_batch[step.batch] = st.unit_of[i];
    st.units.push_back({i});
  }
  if (static_cast<int>(collective_posts_.size()) < collectives) collective_posts_.resize(collectives, 0);

  // What each step and unit waits for.
  st.posted.assign(n, false);
  st.done.assign(n, false);
  st.missing.assign(n, 0);
  st.unit_missing.assign(st.units.size(), 0);
  st.unit_finished.assign(st.units.size(), 0);
  st.snapshot.assign(n, {});
  st.published.assign(n, false);
  st.released.assign(n, false);
  st.enabled.assign(n, false);
  for (int i = 0; i < n; ++i) {
    const Step& step = s.steps[i];
    if (step.is_comm())
      st.unit_missing[st.unit_of[i]] += static_cast<int>(step.deps.size());
    else
      st.missing[i] = static_cast<int>(step.deps.size());
  }
  if (options_.lane_order)
    for (int i = 0; i < n; ++i)
      if (st.lane_next[i] >= 0) st.missing[st.lane_next[i]]++;
  if (options_.stream_ordered_comm)
    for (std::size_t u = 1; u < st.units.size(); ++u) st.unit_missing[u]++;
  for (int i = 0; i < n; ++i)
    if (!s.steps[i].is_comm() && st.missing[i] == 0) enable({EventKind::Compute, r, i});
  for (std::size_t u = 0; u < st.units.size(); ++u)
    if (st.unit_missing[u] == 0) enable({EventKind::PostUnit, r, static_cast<int>(u)});
}

void Simulator::fill_inputs(int r) {
  RankState& st = ranks_[r];
  const weave::internal::Problem& p = problems_[r];
  const Placement at = placement(p);
  auto put = [&](int buffer, const weave::internal::LocalBlock& block, int64_t i, int64_t j, double value, Tag tag) {
    Cell& c = st.user[buffer][static_cast<std::size_t>(element_index(i, j, block.ld, block.order))];
    c.value = value;
    c.tag = tag;
  };
  if (p.operation == Operation::Gemm) {
    // Each local array holds the elements its layout gives this rank, at
    // their local positions; the rest keeps the sentinel.
    const weave::internal::GridOperands& g = p.grid;
    Tag raw_c, bias_tag;
    raw_c.raw_c = 1;
    bias_tag.bias = 1;
    auto fill = [&](int buffer, const weave::internal::LocalBlock& block, const weave::internal::GridLayout& layout,
                    const std::function<Cell(int64_t, int64_t)>& value) {
      for (int64_t i = 0; i < block.rows; ++i)
        for (int64_t j = 0; j < block.cols; ++j) {
          int64_t gi = 0, gj = 0;
          if (!grid_position(layout, g, r, i, j, &gi, &gj)) continue;
          const Cell c = value(gi, gj);
          put(buffer, block, i, j, c.value, c.tag);
        }
    };
    auto input = [](double v) {
      Cell c;
      c.value = v;
      return c;
    };
    fill(kBufferA, p.a, g.a, [&](int64_t gi, int64_t gj) {
      return input(p.op_a == Op::N ? data_.op_a(gi, gj) : data_.op_a(gj, gi));
    });
    fill(kBufferB, p.b, g.b, [&](int64_t gi, int64_t gj) {
      return input(p.op_b == Op::N ? data_.op_b(gi, gj) : data_.op_b(gj, gi));
    });
    fill(kBufferC, p.c, g.c, [&](int64_t gi, int64_t gj) {
      Cell c;
      c.value = options_.beta == 0.0 ? std::numeric_limits<double>::quiet_NaN() : data_.c0(gi, gj);
      c.tag = raw_c;
      return c;
    });
    if (p.has_bias)
      fill(kBufferBias, p.bias, g.bias, [&](int64_t, int64_t gj) {
        Cell c;
        c.value = data_.bias[static_cast<std::size_t>(gj)];
        c.tag = bias_tag;
        return c;
      });
    return;
  }
  // A stored operand holds a block of op(X) placed at (row0, col0) of the
  // global op(X): element (x, y) of that block is X(x, y) or X(y, x).
  auto put_operand = [&](int buffer, const weave::internal::LocalBlock& block, Op op, const Dense& global,
                         int64_t row0, int64_t col0) {
    const int64_t op_rows = op == Op::N ? block.rows : block.cols, op_cols = op == Op::N ? block.cols : block.rows;
    for (int64_t x = 0; x < op_rows; ++x)
      for (int64_t y = 0; y < op_cols; ++y) {
        const double v = global(row0 + x, col0 + y);
        if (op == Op::N)
          put(buffer, block, x, y, v, Tag{});
        else
          put(buffer, block, y, x, v, Tag{});
      }
  };
  put_operand(kBufferA, p.a, p.op_a, data_.op_a, at.a_row0, at.a_col0);
  put_operand(kBufferB, p.b, p.op_b, data_.op_b, at.b_row0, at.b_col0);
  // C: NaN when beta == 0 (it must not be read), else C0; always "raw C".
  Tag raw_c;
  raw_c.raw_c = 1;
  for (int64_t i = 0; i < p.c.rows; ++i)
    for (int64_t j = 0; j < p.c.cols; ++j)
      put(kBufferC, p.c, i, j,
          options_.beta == 0.0 ? std::numeric_limits<double>::quiet_NaN() : data_.c0(at.c_row0 + i, at.c_col0 + j),
          raw_c);
  if (p.has_bias) {
    Tag bias;
    bias.bias = 1;
    for (int64_t j = 0; j < p.bias.cols; ++j) put(kBufferBias, p.bias, 0, j, data_.bias[at.c_col0 + j], bias);
  }
  // Scales of scaled operands: 1 everywhere (their values are the MPI
  // tests' business); what the simulation follows is that a GEMM reads
  // scales that arrived, never a slot still poisoned.
  for (int buffer : {kBufferAScale, kBufferBScale, kBufferGatheredScale}) {
    const BufferSpec& spec = schedules_[r].buffers[buffer];
    for (int64_t i = 0; i < spec.rows; ++i)
      for (int64_t j = 0; j < spec.cols; ++j) {
        Cell& c = st.user[buffer][static_cast<std::size_t>(element_index(i, j, spec.ld, spec.order))];
        if (buffer == kBufferGatheredScale) {
          c = poison_cell();
        } else {
          c = Cell{};
          c.value = 1.0;
        }
      }
  }
  // The gathered-A output starts as NaN inside the block, sentinel outside.
  const BufferSpec& g = schedules_[r].buffers[kBufferGathered];
  for (int64_t i = 0; i < g.rows; ++i)
    for (int64_t j = 0; j < g.cols; ++j)
      st.user[kBufferGathered][static_cast<std::size_t>(element_index(i, j, st.gathered_ld, g.order))] =
          poison_cell();
}

Cell* Simulator::cell(int r, const Region& region, int64_t i, int64_t j) {
  RankState& st = ranks_[r];
  const BufferSpec& spec = st.schedule->buffers.at(region.buffer);
  if (i < 0 || j < 0 || i >= region.rows || j >= region.cols || region.row0 + i >= spec.rows ||
      region.col0 + j >= spec.cols) {
    error(str("rank ", r, ": access (", i, ", ", j, ") outside region or buffer ", spec.name));
    return nullptr;
  }
  const bool user = region.buffer < kFirstWorkspaceBuffer;
  const int64_t ld = region.buffer == kBufferGathered ? st.gathered_ld : spec.ld;
  const int64_t e = element_index(region.row0 + i, region.col0 + j, ld, spec.order);
  std::vector<Cell>& memory = user ? st.user[region.buffer] : st.workspace;
  const int64_t at = user ? e : spec.offset_bytes + e * static_cast<int64_t>(weave::internal::dtype_size(spec.dtype));
  if (at < 0 || at >= static_cast<int64_t>(memory.size())) {
    error(str("rank ", r, ": element ", at, " outside the memory of buffer ", spec.name));
    return nullptr;
  }
  return &memory[static_cast<std::size_t>(at)];
}

// Element t of a contiguous region, in memory order.
Cell* Simulator::linear(int r, const Region& region, int64_t t) {
  const BufferSpec& spec = ranks_[r].schedule->buffers.at(region.buffer);
  // A contiguous region is whole columns (column-major) or whole rows
  // (row-major) of its buffer, or a piece of one: walk it in storage order.
  if (spec.order == Order::ColMajor) {
    const int64_t rows = std::max<int64_t>(region.rows, 1);
    return cell(r, region, t % rows, t / rows);
  }
  const int64_t cols = std::max<int64_t>(region.cols, 1);
  return cell(r, region, t / cols, t % cols);
}

void Simulator::store(int r, const Region& region, Cell* target, const Cell& value, int step) {
  if (!target) return;
  if (region.buffer == kBufferA || region.buffer == kBufferB || region.buffer == kBufferBias ||
      region.buffer == kBufferAScale || region.buffer == kBufferBScale) {
    error(str(where(r, step), " writes the caller's input ", buffer_name(region.buffer)));
    return;
  }
  *target = value;
  target->written = true;
}

void Simulator::finish_step(int r, int step) {
  RankState& st = ranks_[r];
  st.done[step] = true;
  for (int d : st.dependents[step]) {
    if (st.schedule->steps[d].is_comm())
      satisfy_unit(r, st.unit_of[d]);
    else
      satisfy_compute(r, d);
  }
  if (!st.schedule->steps[step].is_comm()) {
    if (options_.lane_order && st.lane_next[step] >= 0) satisfy_compute(r, st.lane_next[step]);
    return;
  }
  const int u = st.unit_of[step];
  if (++st.unit_finished[u] == static_cast<int>(st.units[u].size()) && options_.stream_ordered_comm &&
      u + 1 < static_cast<int>(st.units.size()))
    satisfy_unit(r, u + 1);
}

void Simulator::run_gemm(int r, int step, const GemmOp& op) {
  const int64_t m = op.c.rows, n = op.c.cols;
  const int64_t k = op.op_a == Op::N ? op.a.cols : op.a.rows;
  auto a_at = [&](int64_t i, int64_t l) { return op.op_a == Op::N ? cell(r, op.a, i, l) : cell(r, op.a, l, i); };
  auto b_at = [&](int64_t l, int64_t j) { return op.op_b == Op::N ? cell(r, op.b, l, j) : cell(r, op.b, j, l); };
  // The scale of op-form element (outer, inner) of a scaled operand of
  // outer x K: the tests' reading of the layouts, within its tight region.
  auto scale_at = [&](const ScaleOperand& s, int64_t outer, int64_t outer_extent, int64_t inner) {
    const auto mode = static_cast<weave_scale_mode_t>(s.mode);
    return linear(r, s.region, reference_scale_index(mode, outer, inner, outer_extent, k));
  };
  const double alpha = scalar(op.alpha), beta = scalar(op.beta);
  std::vector<Cell> out(static_cast<std::size_t>(m * n));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      double sum = 0.0;
      Tag product;
      product.product = true;
      for (int64_t l = 0; l < k; ++l) {
        const Cell* a = a_at(i, l);
        const Cell* b = b_at(l, j);
        if (!a || !b) return;
        double term = a->value * b->value;
        for (const auto& [scales, outer, extent] :
             {std::make_tuple(&op.a_scale, i, m), std::make_tuple(&op.b_scale, j, n)}) {
          if (!scales->scaled()) continue;
          const Cell* s = scale_at(*scales, outer, extent, l);
          if (!s) return;
          term *= s->value;
          product.poison = product.poison || s->tag.poison;
        }
        sum += term;
        product.poison = product.poison || a->tag.poison || b->tag.poison;
        product.misuse = product.misuse || a->tag.misuse || b->tag.misuse || a->tag.carries_caller_terms() ||
                         b->tag.carries_caller_terms();
      }
      const Cell* c = cell(r, op.c, i, j);
      if (!c) return;
      Cell result;
      result.value = alpha * sum;
      // BLAS does not read C when beta is zero.
      if (op.beta != Scalar::Zero && beta != 0.0) result.value += beta * c->value;
      result.tag = scaled(c->tag, op.beta) + product;
      if (op.has_addend) {
        const Cell* addend = cell(r, op.addend, i, j);
        if (!addend) return;
        result.value += addend->value;
        result.tag = result.tag + addend->tag;
      }
      out[static_cast<std::size_t>(i + j * m)] = result;
    }
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) store(r, op.c, cell(r, op.c, i, j), out[static_cast<std::size_t>(i + j * m)], step);
}

// dst = src_scale * (the terms, summed in order) + dst_scale * dst + bias,
// element by element into `out` (column by column); no terms: no src part.
// False when a cell could not be reached (reported).
bool Simulator::element_wise(int r, const Region& dst, int terms, const TermCell& term, Scalar src_scale,
                             Scalar dst_scale, const Region* bias, std::vector<Cell>* out) {
  const int64_t m = dst.rows, n = dst.cols;
  const double src_factor = scalar(src_scale), dst_factor = scalar(dst_scale);
  out->assign(static_cast<std::size_t>(m * n), Cell{});
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      Cell result;
      if (terms > 0) {
        double sum = 0.0;
        Tag tag;
        for (int t = 0; t < terms; ++t) {
          const Cell* c = term(i, j, t);
          if (!c) return false;
          sum = t == 0 ? c->value : sum + c->value;
          tag = t == 0 ? c->tag : tag + c->tag;
        }
        result.value = src_factor * sum;
        result.tag = scaled(tag, src_scale);
      }
      const Cell* old = cell(r, dst, i, j);
      if (!old) return false;
      // dst is not read when its scale is zero (it may hold NaN).
      if (dst_scale != Scalar::Zero && dst_factor != 0.0) result.value += dst_factor * old->value;
      result.tag = result.tag + scaled(old->tag, dst_scale);
      if (bias) {
        const Cell* b = cell(r, *bias, 0, j);
        if (!b) return false;
        result.value += b->value;
        result.tag = result.tag + b->tag;
      }
      (*out)[static_cast<std::size_t>(i + j * m)] = result;
    }
  return true;
}

void Simulator::run_epilogue(int r, int step, const EpilogueOp& op) {
  const TermCell term = [&](int64_t i, int64_t j, int t) {
    return cell(r, t == 0 ? op.src : op.more_src[static_cast<std::size_t>(t - 1)], i, j);
  };
  std::vector<Cell> out;
  const int terms = op.has_src ? 1 + static_cast<int>(op.more_src.size()) : 0;
  if (!element_wise(r, op.dst, terms, term, op.src_scale, op.dst_scale, op.has_bias ? &op.bias : nullptr, &out))
    return;
  for (int64_t j = 0; j < op.dst.cols; ++j)
    for (int64_t i = 0; i < op.dst.rows; ++i)
      store(r, op.dst, cell(r, op.dst, i, j), out[static_cast<std::size_t>(i + j * op.dst.rows)], step);
}

// Quantized rows keep their values here (the MPI tests check the
// rounding); each row's scale is 1, poisoned with the row.
void Simulator::run_quantize(int r, int step, const QuantizeOp& op) {
  const int64_t rows = op.op == Op::N ? op.src.rows : op.src.cols, cols = op.op == Op::N ? op.src.cols : op.src.rows;
  for (int64_t i = 0; i < rows; ++i) {
    Cell scale;
    scale.value = 1.0;
    for (int64_t k = 0; k < cols; ++k) {
      const Cell* x = op.op == Op::N ? cell(r, op.src, i, k) : cell(r, op.src, k, i);
      if (!x) return;
      scale.tag.poison = scale.tag.poison || x->tag.poison;
      store(r, op.dst, op.op == Op::N ? cell(r, op.dst, i, k) : cell(r, op.dst, k, i), *x, step);
    }
    if (op.has_scales) store(r, op.scales, cell(r, op.scales, i, 0), scale, step);
  }
}

// Copies every rectangle, reading op(src) by index swap for T and C.
void Simulator::run_rearrange(int r, int step, const RearrangeOp& op) {
  std::vector<std::pair<Cell*, Cell>> writes;
  for (const IndexRun& row : op.rows)
    for (const IndexRun& col : op.cols)
      for (int64_t s = 0; s < row.length; ++s)
        for (int64_t t = 0; t < col.length; ++t) {
          const int64_t i = row.src + s, j = col.src + t;
          const Cell* from = op.src_op == Op::N ? cell(r, op.src, i, j) : cell(r, op.src, j, i);
          Cell* to = cell(r, op.dst, row.dst + s, col.dst + t);
          if (!from || !to) return;
          writes.push_back({to, *from});
        }
  for (const auto& [to, value] : writes) store(r, op.dst, to, value, step);
}

void Simulator::run_compute(int r, int step) {
  const Step& s = schedules_[r].steps[step];
  if (const auto* g = std::get_if<GemmOp>(&s.op))
    run_gemm(r, step, *g);
  else if (const auto* e = std::get_if<EpilogueOp>(&s.op))
    run_epilogue(r, step, *e);
  else if (const auto* q = std::get_if<QuantizeOp>(&s.op))
    run_quantize(r, step, *q);
  else if (const auto* x = std::get_if<RearrangeOp>(&s.op))
    run_rearrange(r, step, *x);
  finish_step(r, step);
}

void Simulator::post_unit(int r, int unit) {
  RankState& st = ranks_[r];
  for (int i : st.units[unit]) {
    const Step& step = st.schedule->steps[i];
    st.posted[i] = true;
    if (const auto* send = std::get_if<SendOp>(&step.op)) {
      for (int64_t t = 0; t < send->src.elements(); ++t)
        if (const Cell* c = linear(r, send->src, t)) st.snapshot[i].push_back(*c);
    } else if (const auto* recv = std::get_if<RecvOp>(&step.op)) {
      // The network may write the destination any time from now on.
      for (int64_t t = 0; t < recv->dst.elements(); ++t) {
        Cell* c = linear(r, recv->dst, t);
        if (!c) break;
        const bool was_written = c->written;
        store(r, recv->dst, c, poison_cell(), i);
        c->written = was_written;
      }
    } else if (const auto* pub = std::get_if<PublishOp>(&step.op)) {
      // What the reader must find when it reads, whenever that is.
      for (int64_t t = 0; t < pub->src.elements(); ++t)
        if (const Cell* c = linear(r, pub->src, t)) st.snapshot[i].push_back(*c);
      enable({EventKind::CompleteOneSided, r, i});
      continue;
    } else if (std::holds_alternative<PeerSumOp>(step.op)) {
      try_peer_sum(r, i);
      continue;
    } else if (std::holds_alternative<AwaitReleaseOp>(step.op)) {
      try_await(r, i);
      continue;
    } else if (const auto* coll = std::get_if<CollectiveOp>(&step.op)) {
      std::set<const Cell*> sent;
      for (int64_t t = 0; t < coll->send.elements(); ++t)
        if (const Cell* c = linear(r, coll->send, t)) {
          st.snapshot[i].push_back(*c);
          sent.insert(c);
        }
      for (int64_t t = 0; t < coll->recv.elements(); ++t) {
        Cell* c = linear(r, coll->recv, t);
        if (c && !sent.count(c)) {
          const bool was_written = c->written;
          store(r, coll->recv, c, poison_cell(), i);
          c->written = was_written;
        }
      }
      const int n = st.collective_index[i];
      if (++collective_posts_[n] == static_cast<int>(ranks_.size())) enable({EventKind::CompleteCollective, -1, n});
      continue;
    }
    // Point to point: both ends posted -> both may complete.
    const StepRef partner = matching_.partner[r][i];
    if (partner.valid() && ranks_[partner.rank].posted[partner.step]) {
      enable({EventKind::CompletePointToPoint, r, i});
      enable({EventKind::CompletePointToPoint, partner.rank, partner.step});
    }
  }
}

void Simulator::complete_point_to_point(int r, int step) {
  RankState& st = ranks_[r];
  const Step& s = st.schedule->steps[step];
  if (const auto* send = std::get_if<SendOp>(&s.op)) {
    for (int64_t t = 0; t < send->src.elements(); ++t) {
      const Cell* c = linear(r, send->src, t);
      if (c && t < static_cast<int64_t>(st.snapshot[step].size()) && !same_cell(*c, st.snapshot[step][t])) {
        error(str(where(r, step), ": its source changed while the send was in flight (a missing dependency)"));
        break;
      }
    }
  } else {
    const auto& recv = std::get<RecvOp>(s.op);
    const StepRef from = matching_.partner[r][step];
    const std::vector<Cell>& data = ranks_[from.rank].snapshot[from.step];
    if (static_cast<int64_t>(data.size()) != recv.dst.elements())
      error(str(where(r, step), ": receives ", recv.dst.elements(), " elements, the send carries ", data.size()));
    for (int64_t t = 0; t < recv.dst.elements() && t < static_cast<int64_t>(data.size()); ++t) {
      Cell value = data[static_cast<std::size_t>(t)];
      store(r, recv.dst, linear(r, recv.dst, t), value, step);
    }
  }
  finish_step(r, step);
}

void Simulator::try_peer_sum(int r, int step) {
  RankState& st = ranks_[r];
  if (!st.posted[step] || st.done[step]) return;
  // A remote term nobody publishes is never ready: the sum waits forever.
  const auto& op = std::get<PeerSumOp>(st.schedule->steps[step].op);
  for (std::size_t t = 0; t < op.terms.size(); ++t) {
    const StepRef publish = reads_.publication[r][step][t];
    if (op.terms[t].remote && (!publish.valid() || !ranks_[publish.rank].published[publish.step])) return;
  }
  if (st.enabled[step]) return;
  st.enabled[step] = true;
  enable({EventKind::CompleteOneSided, r, step});
}

void Simulator::try_await(int r, int step) {
  RankState& st = ranks_[r];
  if (!st.posted[step] || st.done[step]) return;
  const StepRef publish = reads_.awaited[r][step];
  if (!publish.valid() || !ranks_[publish.rank].released[publish.step] || st.enabled[step]) return;
  st.enabled[step] = true;
  enable({EventKind::CompleteOneSided, r, step});
}

void Simulator::complete_one_sided(int r, int step) {
  RankState& st = ranks_[r];
  const Step& s = st.schedule->steps[step];
  if (std::holds_alternative<PublishOp>(s.op)) {
    st.published[step] = true;
    finish_step(r, step);
    const StepRef reader = reader_of_[r][step];
    if (reader.valid()) try_peer_sum(reader.rank, reader.step);
    return;
  }
  if (const auto* sum = std::get_if<PeerSumOp>(&s.op)) {
    run_peer_sum(r, step, *sum);
    for (const StepRef& publish : reads_.publication[r][step]) {
      if (!publish.valid()) continue;
      ranks_[publish.rank].released[publish.step] = true;
      const StepRef await = await_of_[publish.rank][publish.step];
      if (await.valid()) try_await(await.rank, await.step);
    }
  }
  finish_step(r, step);
}

// The PeerSum reads its remote terms where their publishers keep them, as
// they are now; a term that differs from what was published means its
// publisher overwrote it before the reader let it go.
void Simulator::run_peer_sum(int r, int step, const PeerSumOp& op) {
  for (std::size_t t = 0; t < op.terms.size(); ++t) {
    const StepRef publish = reads_.publication[r][step][t];
    if (!op.terms[t].remote || !publish.valid()) continue;
    const PublishOp& pub = std::get<PublishOp>(schedules_[publish.rank].steps[publish.step].op);
    const std::vector<Cell>& offered = ranks_[publish.rank].snapshot[publish.step];
    for (int64_t x = 0; x < pub.src.elements() && x < static_cast<int64_t>(offered.size()); ++x) {
      const Cell* now = linear(publish.rank, pub.src, x);
      if (now && !same_cell(*now, offered[static_cast<std::size_t>(x)])) {
        error(str(where(r, step), ": rank ", publish.rank, " changed what it published (step ", publish.step,
                  ") before this read released it"));
        return;
      }
    }
  }
  // Term t's element (i, j): tight row-major, so linear index i * n + j.
  const int64_t n = op.dst.cols;
  const TermCell term = [&](int64_t i, int64_t j, int t) -> const Cell* {
    const SumTerm& sum_term = op.terms[static_cast<std::size_t>(t)];
    if (!sum_term.remote) return cell(r, sum_term.local, i, j);
    const StepRef publish = reads_.publication[r][step][static_cast<std::size_t>(t)];
    if (!publish.valid()) {
      error(str(where(r, step), ": term ", t, " has no publication"));
      return nullptr;
    }
    return linear(publish.rank, std::get<PublishOp>(schedules_[publish.rank].steps[publish.step].op).src, i * n + j);
  };
  std::vector<Cell> out;
  if (!element_wise(r, op.dst, static_cast<int>(op.terms.size()), term, op.src_scale, op.dst_scale,
                    op.has_bias ? &op.bias : nullptr, &out))
    return;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < op.dst.rows; ++i) {
      const Cell& value = out[static_cast<std::size_t>(i + j * op.dst.rows)];
      store(r, op.dst, cell(r, op.dst, i, j), value, step);
      if (op.has_copy) store(r, op.copy, cell(r, op.copy, i, j), value, step);
    }
}

void Simulator::complete_collective(int n) {
  const int P = static_cast<int>(ranks_.size());
  std::vector<int> step_of(P, -1);
  for (int r = 0; r < P; ++r) {
    const RankState& st = ranks_[r];
    for (std::size_t i = 0; i < st.collective_index.size(); ++i)
      if (st.collective_index[i] == n) step_of[r] = static_cast<int>(i);
  }
  auto op_of = [&](int r) -> const CollectiveOp& { return std::get<CollectiveOp>(schedules_[r].steps[step_of[r]].op); };
  // The send buffers must not have changed since the collective was posted.
  for (int r = 0; r < P; ++r) {
    const CollectiveOp& op = op_of(r);
    const std::vector<Cell>& snap = ranks_[r].snapshot[step_of[r]];
    for (int64_t t = 0; t < op.send.elements() && t < static_cast<int64_t>(snap.size()); ++t) {
      const Cell* c = linear(r, op.send, t);
      if (c && !same_cell(*c, snap[static_cast<std::size_t>(t)])) {
        error(str(where(r, step_of[r]), ": its send buffer changed while the collective was in flight"));
        break;
      }
    }
  }
  for (int r = 0; r < P; ++r) {
    const CollectiveOp& op = op_of(r);
    std::vector<int64_t> offset(op.counts.size() + 1, 0);
    for (std::size_t q = 0; q < op.counts.size(); ++q) offset[q + 1] = offset[q] + op.counts[q];
    auto sent = [&](int q, int64_t t) -> const Cell* {
      const std::vector<Cell>& snap = ranks_[q].snapshot[step_of[q]];
      return t < static_cast<int64_t>(snap.size()) ? &snap[static_cast<std::size_t>(t)] : nullptr;
    };
    auto write = [&](int64_t t, const Cell& value) { store(r, op.recv, linear(r, op.recv, t), value, step_of[r]); };
    switch (op.kind) {
      case CollectiveKind::AllGather:
        for (int q = 0; q < P && q < static_cast<int>(op.counts.size()); ++q)
          for (int64_t t = 0; t < op.counts[q]; ++t)
            if (const Cell* c = sent(q, t)) write(offset[q] + t, *c);
        break;
      case CollectiveKind::ReduceScatter:
      case CollectiveKind::AllReduce: {
        const bool scatter = op.kind == CollectiveKind::ReduceScatter;
        const int64_t first = scatter ? offset[r] : 0;
        const int64_t count = scatter ? op.counts[r] : offset.back();
        for (int64_t t = 0; t < count; ++t) {
          Cell sum;
          for (int q = 0; q < P; ++q)
            if (const Cell* c = sent(q, first + t)) {
              sum.value += c->value;
              sum.tag = sum.tag + c->tag;
            }
          write(t, sum);
        }
        break;
      }
    }
  }
  for (int r = 0; r < P; ++r) finish_step(r, step_of[r]);
}

// Names, for each rank, the first step that never finished and what it
// was waiting for.
void Simulator::report_stall() {
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    const RankState& st = ranks_[r];
    const int rank = static_cast<int>(r);
    for (std::size_t i = 0; i < st.done.size(); ++i) {
      if (st.done[i]) continue;
      const Step& step = st.schedule->steps[i];
      std::string why;
      if (st.posted[i]) {
        why = "was posted but its partner never was";
      } else {
        // A batch starts when every step in it is ready.
        const std::vector<int> members =
            step.is_comm() ? st.units[st.unit_of[i]] : std::vector<int>{static_cast<int>(i)};
        for (int m : members)
          for (int d : st.schedule->steps[m].deps)
            if (!st.done[d])
              why += str(why.empty() ? "waits for " : ", ", "step ", d,
                          step.is_comm() && st.unit_of[d] == st.unit_of[i] ? " of its own batch" : "");
        if (why.empty()) why = "waits for the batch before it";
      }
      error(str("deadlock: ", where(rank, static_cast<int>(i)), " never finished: ", why));
      break;
    }
  }
}

void Simulator::check_results() {
  const weave::internal::Problem& p0 = problems_[0];
  std::vector<double> bias = data_.bias;
  const Reference ref = reference_product(data_.op_a, data_.op_b, data_.c0, p0.has_bias ? &bias : nullptr,
                                          options_.alpha, options_.beta, 0x1p-53);
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    const RankState& st = ranks_[r];
    const weave::internal::Problem& p = problems_[r];
    const Placement at = placement(p);
    const bool grid = p.operation == Operation::Gemm;
    const std::string who = str("rank ", r, ": ");
    for (int64_t j = 0; j < p.c.cols; ++j)
      for (int64_t i = 0; i < p.c.rows; ++i) {
        const Cell& c = st.user[kBufferC][static_cast<std::size_t>(element_index(i, j, p.c.ld, p.c.order))];
        int64_t gi = at.c_row0 + i, gj = at.c_col0 + j;
        if (grid && !grid_position(p.grid.c, p.grid, static_cast<int>(r), i, j, &gi, &gj)) {
          // A local position before the matrix's start: never touched.
          if (c.written || c.value != kSentinel) error(str(who, "C(", i, ",", j, ") outside the matrix was written"));
          continue;
        }
        const std::string e = str(who, "C(", i, ",", j, ") [global (", gi, ",", gj, ")]");
        if (!c.written) error(str(e, " was never written"));
        if (c.tag.poison) error(str(e, " holds data that was never written or was read before it arrived"));
        if (c.tag.misuse) error(str(e, " had beta or alpha applied to the wrong term"));
        if (c.tag.beta_c != 1 || c.tag.raw_c != 0)
          error(str(e, " has beta * C applied ", c.tag.beta_c, " times and unscaled C added ", c.tag.raw_c,
                     " times (expected exactly one beta * C)"));
        if (c.tag.bias != (p.has_bias ? 1 : 0))
          error(str(e, " has bias added ", c.tag.bias, " times, expected ", p.has_bias ? 1 : 0));
        if (!c.tag.product && p.k > 0) error(str(e, " never received the product"));
        const double want = ref.c(gi, gj), bound = ref.bound(gi, gj);
        if (!(std::fabs(c.value - want) <= bound))
          error(str(e, " = ", c.value, ", expected ", want, " (bound ", bound, ")"));
      }
    // Padding outside every caller block keeps its sentinel.
    for (int b = 0; b < kFirstWorkspaceBuffer; ++b) {
      const BufferSpec& spec = st.schedule->buffers[b];
      const int64_t ld = b == kBufferGathered ? st.gathered_ld : spec.ld;
      const std::vector<Cell>& memory = st.user[b];
      for (std::size_t x = 0; x < memory.size(); ++x) {
        const int64_t minor = static_cast<int64_t>(x) % ld, major = static_cast<int64_t>(x) / ld;
        const bool inside = spec.order == Order::ColMajor ? (minor < spec.rows && major < spec.cols)
                                                          : (minor < spec.cols && major < spec.rows);
        if (!inside && (memory[x].written || memory[x].value != kSentinel)) {
          error(str(who, "padding of ", spec.name, " at element ", x, " was overwritten"));
          break;
        }
      }
    }
    if (!options_.gathered_output) continue;
    // The gathered A: the whole stored A of the group (op N: M x K, op T: K x M).
    const BufferSpec& g = st.schedule->buffers[kBufferGathered];
    for (int64_t j = 0; j < g.cols; ++j)
      for (int64_t i = 0; i < g.rows; ++i) {
        const std::size_t at = static_cast<std::size_t>(element_index(i, j, st.gathered_ld, g.order));
        const Cell& c = st.user[kBufferGathered][at];
        const double want = p.op_a == Op::N ? data_.op_a(i, j) : data_.op_a(j, i);
        if (c.value != want || c.tag.poison || !c.written)
          error(str(who, "gathered A(", i, ",", j, ") = ", c.value, ", expected ", want));
      }
  }
}

std::size_t Simulator::pick_event() {
  if (!options_.delay_events) return std::uniform_int_distribution<std::size_t>(0, enabled_.size() - 1)(rng_);
  std::size_t best = 0;
  for (std::size_t i = 1; i < enabled_.size(); ++i)
    if (enabled_[i].priority > enabled_[best].priority) best = i;
  return best;
}

SimulationReport Simulator::run() {
  const int P = static_cast<int>(schedules_.size());
  if (P == 0 || static_cast<int>(problems_.size()) != P) {
    error("simulate: need one problem per schedule");
    return report_;
  }
  data_ = make_global_data(problems_[0], options_.data_seed);
  matching_ = match_point_to_point(schedules_);
  reads_ = match_peer_reads(schedules_);
  reader_of_.assign(P, {});
  await_of_.assign(P, {});
  for (int r = 0; r < P; ++r) {
    reader_of_[r].assign(schedules_[r].steps.size(), StepRef{});
    await_of_[r].assign(schedules_[r].steps.size(), StepRef{});
  }
  for (int r = 0; r < P; ++r)
    for (std::size_t i = 0; i < schedules_[r].steps.size(); ++i) {
      for (const StepRef& publish : reads_.publication[r][i])
        if (publish.valid()) reader_of_[publish.rank][publish.step] = StepRef{r, static_cast<int>(i)};
      const StepRef publish = reads_.awaited[r][i];
      if (publish.valid()) await_of_[publish.rank][publish.step] = StepRef{r, static_cast<int>(i)};
    }
  ranks_.resize(P);
  for (int r = 0; r < P; ++r) set_up_rank(r);

  while (!enabled_.empty() && report_.errors.size() < options_.max_errors) {
    const std::size_t chosen = pick_event();
    const Event e = enabled_[chosen];
    enabled_[chosen] = enabled_.back();
    enabled_.pop_back();
    ++report_.events;
    switch (e.kind) {
      case EventKind::Compute: run_compute(e.rank, e.index); break;
      case EventKind::PostUnit: post_unit(e.rank, e.index); break;
      case EventKind::CompletePointToPoint: complete_point_to_point(e.rank, e.index); break;
      case EventKind::CompleteCollective: complete_collective(e.index); break;
      case EventKind::CompleteOneSided: complete_one_sided(e.rank, e.index); break;
    }
  }
  if (!report_.errors.empty()) return report_;
  report_stall();
  if (!report_.errors.empty()) return report_;
  check_results();
  return report_;
}

}  // namespace

SimulationReport simulate(const std::vector<weave::internal::Problem>& problems, const std::vector<Schedule>& schedules,
                          const SimulationOptions& options) {
  Simulator simulator(problems, schedules, options);
  return simulator.run();
}

}  // namespace weave_test
