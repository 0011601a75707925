// Shared machinery of the schedule builders: buffer bookkeeping (the caller's
// buffers and workspace slices), step emission, and region helpers. Each
// algorithm lives in its own file and uses only this.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "plan/schedule.hpp"

namespace weave::internal::plan {

class ScheduleBuilder {
 public:
  ScheduleBuilder(const Problem& problem, const ScheduleOptions& options);

  const Problem& problem() const { return problem_; }
  const ScheduleOptions& options() const { return options_; }
  int P() const { return problem_.group_size; }
  int rank() const { return problem_.group_rank; }
  int mod(int x) const { return ((x % P()) + P()) % P(); }

  // A new slice of the workspace, aligned for any element type.
  int add_workspace(const std::string& name, int64_t rows, int64_t cols, DType dtype, Order order);
  // A slice of the workspace for the scales of an outer x inner op-form
  // block in `mode` (core/scale_layout.hpp).
  int add_scale_workspace(const std::string& name, ScaleMode mode, int64_t outer, int64_t inner);
  // A view of part of a workspace buffer's bytes: `layout` from element
  // `first` on (the views of one buffer may differ in shape).
  int add_view(int of, const std::string& name, int64_t first, const ScaleLayout& layout);
  // Another view of an existing workspace buffer's bytes.
  int add_alias(int of, const std::string& name, int64_t rows, int64_t cols, Order order);

  int add_step(StepOp op, int lane, std::vector<int> deps, std::string label, int batch = -1);
  int next_batch() { return batch_counter_++; }
  // Compute lanes in turn, so consecutive GEMMs can overlap on a GPU.
  int next_compute_lane() { return lane_counter_++ % options_.compute_lanes; }

  // Rows [row0, row0 + rows) of op(X), where X is a buffer holding a stored
  // matrix: for op N those are rows of X, for op T columns of X.
  Region op_rows(int buffer, Op op, int64_t row0, int64_t rows) const;
  Region whole(int buffer) const;
  bool contiguous(const Region& r) const { return schedule_.contiguous(r); }
  // True when `r` holds exactly the bytes of a tight buffer of `layout_of`'s
  // order with r's shape (so it can be sent as is).
  bool same_bytes_as_tight(const Region& r, Order layout) const;

  // Scales (core/scale_layout.hpp). The region of the scale buffer
  // `buffer` (the scales of a block in `mode`) that holds the scales of
  // outer rows [row0, row0 + rows) of that block; `what` names those rows
  // in the error a band mode gives when row0 is not on a 128-row band.
  Region scale_rows(int buffer, ScaleMode mode, int64_t row0, int64_t rows, const std::string& what) const;
  // Whether such a region is laid out as the scales of its rows alone
  // (what a GEMM takes): contiguous, with the layout's own leading
  // dimension.
  bool tight_scales(const Region& region) const;
  // The scales of rows [row0, row0 + rows) of op(A) (of the caller's A
  // block) for a GEMM: the caller's region when it is tight, else a copy in
  // the workspace, made once by a step that *ready is set to (-1: none).
  ScaleOperand a_scales(int64_t row0, int64_t rows, int* ready);
  // B's scales: B is never cut, so always the caller's whole buffer.
  ScaleOperand b_scales() const;
  // A GEMM of rows [row0, row0 + rows) of op(A) (the caller's A) into c,
  // with their scales and B's; *ready as a_scales.
  GemmOp gemm_of_a_rows(int64_t row0, int64_t rows, const Region& c, Scalar alpha, Scalar beta, int* ready);

  // dst = src (type and layout conversion allowed).
  EpilogueOp copy(const Region& dst, const Region& src) const;
  // dst = src + beta * dst + bias (the finishing step of a reduction).
  EpilogueOp finish(const Region& dst, const Region& src) const;
  // dst += bias on the columns of dst (no-op description if no bias).
  EpilogueOp add_bias(const Region& dst) const;
  // Emits `last` (dst, scales and bias set) reading the sum of `sources`
  // (regions laid out alike: one buffer type, order and leading dimension),
  // summed in the accumulation type: in one element-wise pass while they
  // fit one (1 + kMaxMoreSources), else groups of them into an
  // accumulation-type sum first, which `last` then reads. Returns the step
  // of `last`.
  int add_sum(EpilogueOp last, const std::vector<Region>& sources, const std::vector<int>& deps, int lane,
              const std::string& label);
  // The bias columns that line up with `c_region`'s columns of C.
  Region bias_for(const Region& c_region) const;

  const Schedule& schedule() const { return schedule_; }
  // What the builder decided, for describe (Schedule::notes).
  std::string& notes() { return schedule_.notes; }
  const Step& step(int index) const { return schedule_.steps.at(index); }
  Schedule finish_schedule(Algorithm algorithm, Direction direction, int chunks);

 private:
  // Moves the steps that copy A's scales to the front of the schedule.
  void scale_copies_first();
  const Problem& problem_;
  const ScheduleOptions& options_;
  Schedule schedule_;
  int batch_counter_ = 0;
  int lane_counter_ = 0;
  // a_scales' copies, by (row0, rows): each made once.
  std::map<std::pair<int64_t, int64_t>, std::pair<ScaleOperand, int>> a_scale_copies_;
};

// The type a reduction's products travel in where an algorithm moves
// products rather than partial sums (direct, pipelined, hierarchical): C's
// type, each product rounded once, or the accumulation type when asked for
// (ScheduleOptions::reduce_in_accumulation_type).
inline DType product_type(const Problem& p, const ScheduleOptions& o) {
  return o.reduce_in_accumulation_type ? accumulation_type(p.dtype) : p.dtype;
}

// Which chunks of a shard travel which way: the first half forward, the rest
// backward for a bidirectional ring.
struct DirectionChunks {
  Direction direction;
  std::vector<int> chunks;
};
std::vector<DirectionChunks> split_chunks_by_direction(Direction direction, int chunks);

// Algorithm builders (one file each).
void build_ag_gemm_messages(ScheduleBuilder& b);
void build_reduction_ring(ScheduleBuilder& b);    // GEMM-RS and GEMM-AR
void build_reduction_direct(ScheduleBuilder& b);  // GEMM-RS and GEMM-AR
void build_all_reduce_one_shot(ScheduleBuilder& b);  // GEMM-AR, the direct algorithm in one exchange
void build_reduction_peer_sums(ScheduleBuilder& b);  // the direct algorithm, sums read from peers' memory
void build_sequential(ScheduleBuilder& b);
void build_summa(ScheduleBuilder& b);            // WEAVE_GEMM over the 2-D grid
void build_gemm_sequential(ScheduleBuilder& b);  // WEAVE_GEMM: every panel first, then one GEMM
void build_gemm_in_bands(ScheduleBuilder& b);    // WEAVE_GEMM: the travelling operand in bands of C

// Complex types: where a GEMM of `s` cannot take an operand's op C (stored
// in the other order than its product), multiply its conjugate with op T
// instead (conjugated_operands.cpp).
void conjugate_operands_where_needed(Schedule& s, const Problem& p, bool gathered_output);
void build_pipelined(ScheduleBuilder& b);     // all three operations
void build_hierarchical(ScheduleBuilder& b);  // all three operations

}  // namespace weave::internal::plan
