// The schedule: which rank multiplies which chunk when, and who sends what to
// whom, as plain data. Built once per plan by a pure function of the Problem
// and the resolved options (no MPI, no device calls), so it can be unit-tested,
// printed and traced. Executors only interpret it.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/checked.hpp"
#include "core/dtype.hpp"
#include "core/matrix.hpp"
#include "core/problem.hpp"
#include "kernels/epilogue.hpp"

namespace weave::internal::plan {

// Buffers a schedule refers to. The first eight are the caller's, bound at
// execute time (the scale buffers of scaled operands among them); every
// further buffer is a slice of the plan's workspace.
enum BufferId : int {
  kBufferA = 0,
  kBufferB,
  kBufferC,
  kBufferBias,
  kBufferGathered,
  kBufferAScale,
  kBufferBScale,
  kBufferGatheredScale,
  kFirstWorkspaceBuffer
};

const char* buffer_name(int buffer);

// A matrix-shaped buffer. Several buffers may alias one workspace range
// (the same bytes seen in two layouts).
struct BufferSpec {
  std::string name;
  int64_t rows = 0, cols = 0, ld = 1;
  DType dtype = DType::F64;
  Order order = Order::ColMajor;
  int64_t offset_bytes = 0;  // workspace buffers: position in the workspace
};

// A rectangular block of a buffer.
struct Region {
  int buffer = kBufferA;
  int64_t row0 = 0, col0 = 0, rows = 0, cols = 0;
  int64_t elements() const { return checked_mul(rows, cols, "the elements of a ", rows, " x ", cols, " region"); }
  bool empty() const { return rows == 0 || cols == 0; }
  // Rows [first, first + count) of this region, all its columns.
  Region row_range(int64_t first, int64_t count) const { return Region{buffer, row0 + first, col0, count, cols}; }
  // Index of the first element in a buffer of leading dimension `ld`.
  int64_t first_element(int64_t ld, Order order) const {
    return order == Order::ColMajor ? checked_mul_add(col0, ld, row0, "the first element of a region")
                                    : checked_mul_add(row0, ld, col0, "the first element of a region");
  }
};

// Scalars known only at execute time are referred to by role.
enum class Scalar : uint8_t { Zero, One, Alpha, Beta };
const char* scalar_name(Scalar s);

// The scales of a scaled (FP8) GEMM operand: the mode, and the region of
// a scale buffer that holds them in the layout of core/scale_layout.hpp for
// the operand region's op-form extent, starting with the region's first
// row, tight (as cuBLASLt takes them). Unscaled operands: mode None.
struct ScaleOperand {
  ScaleMode mode = ScaleMode::None;
  Region region;
  bool scaled() const { return mode != ScaleMode::None; }
};

// c = alpha_role * op_a(a) * op_b(b) + beta_role * c [+ addend], with a and
// b scaled by their scales where they have them.
//
// With has_addend, `addend` (c's shape, type and order, any leading
// dimension, in the workspace) is added in the same call: cuBLASLt reads it
// as its C and writes c as its D, so a product is summed with one received
// from a peer without a pass of its own (reduction_direct.cpp). The sum is
// rounded once into c's type where beta is zero; otherwise beta * c is first
// added into the addend (rounded there once more), which is why the addend's
// contents are undefined after the step: it is the step's scratch.
struct GemmOp {
  Region a;
  Op op_a = Op::N;
  Region b;
  Op op_b = Op::N;
  Region c;
  Scalar alpha = Scalar::Alpha;
  Scalar beta = Scalar::Zero;
  ScaleOperand a_scale, b_scale;
  bool has_addend = false;
  Region addend{};
};

// Element-wise, written once for every backend:
//   dst(i,j) = src_scale * (src(i,j) + more_src[0](i,j) + ...) + dst_scale * dst(i,j) + bias(0,j)
// dst is not read when dst_scale is Zero. src and dst may differ in type and
// order (so this also packs, unpacks and converts); more_src regions are laid
// out like src (same buffer type, order and leading dimension), at most
// kMaxMoreSources of them (what the shared kernel takes).
using kernels::kMaxMoreSources;
struct EpilogueOp {
  Region dst;
  bool has_src = false;
  Region src;
  std::vector<Region> more_src;
  Scalar src_scale = Scalar::One;
  Scalar dst_scale = Scalar::Zero;
  bool has_bias = false;
  Region bias;

  // dst = src and nothing else: backends copy the bits when both have one type.
  bool plain_copy() const {
    return has_src && more_src.empty() && src_scale == Scalar::One && dst_scale == Scalar::Zero && !has_bias && !conjugate_src;
  }
  bool conjugate_src = false;  // complex types: the sources' sum conjugated
};

// A run of `length` consecutive indices: index src + t of the source goes
// to index dst + t of the destination.
struct IndexRun {
  int64_t src = 0, dst = 0, length = 0;
};

// A copy of scattered rectangles, what moving a matrix between two
// block-cyclic layouts needs (packing what one rank sends another, and
// unpacking it): for every row run and every column run,
//   dst(row.dst + s, col.dst + t) = op(src)(row.src + s, col.src + t)
// for s < row.length, t < col.length, with the indices relative to the
// regions' first row and column. src is a region of its buffer as stored;
// op(src) is it (N), its transpose (T) or its conjugate transpose (C).
// Source and destination have one element type.
struct RearrangeOp {
  Region dst;
  Region src;
  Op src_op = Op::N;
  std::vector<IndexRun> rows, cols;
  // Elements copied: the row runs' lengths times the column runs'.
  int64_t elements() const;
};

struct SendOp {
  Region src;  // contiguous
  int peer = 0;  // rank in the operation's group
  int tag = 0;
};

struct RecvOp {
  Region dst;  // contiguous
  int peer = 0;
  int tag = 0;
};

enum class CollectiveKind : uint8_t { AllGather, ReduceScatter, AllReduce };
const char* collective_name(CollectiveKind k);

// Sum-reductions and gathers over the whole group; counts are elements per
// group rank, laid out back to back in the larger region.
struct CollectiveOp {
  CollectiveKind kind = CollectiveKind::AllGather;
  Region send;  // AllGather: my part; ReduceScatter: everything; AllReduce: in place
  Region recv;  // AllGather: everything; ReduceScatter: my part; AllReduce: same as send
  std::vector<int64_t> counts;
};

// Steps of transports that read their peers' memory (SM-driven transfers):
// a rank publishes a region of its workspace to a peer, the peer reads it
// where it lies (a PeerSum term) and releases it, and the publisher waits
// for the release before its next execute may overwrite the region.

// Tells `peer` that `src` (tight row-major bytes in my workspace) is ready
// for it to read as the remote term `tag` of a PeerSum. `src` must stay
// unchanged until the peer has released it (AwaitReleaseOp).
struct PublishOp {
  Region src;
  int peer = 0;
  int tag = 0;
};

// One term of a PeerSum: a region of my workspace, or the region a peer
// published to me under `tag`, read where it lies. Every term is tight
// row-major, dst's shape, in the PeerSum's term type.
struct SumTerm {
  bool remote = false;
  Region local;   // !remote
  int peer = -1;  // remote: the group rank that published it
  int tag = -1;   // remote: the tag it published it under
};

// At most this many terms (a peer-reading transport's kernel takes that
// many sources).
constexpr int kMaxPeerSumTerms = 16;

// Run by a transport that reads peers' memory, in one pass:
//   dst = src_scale * (terms[0] + terms[1] + ...) + dst_scale * dst + bias
// summed in the accumulation type in the order listed (ranks that sum the
// same terms list them in the same order and get the same bits), stored in
// dst's type and layout and, with has_copy, also into `copy` (tight
// row-major workspace, dst's type) for peers to read in turn. It starts once
// every remote term is published and releases each remote term to its
// publisher once read.
struct PeerSumOp {
  Region dst;
  std::vector<SumTerm> terms;
  DType term_type = DType::F64;
  Scalar src_scale = Scalar::One;
  Scalar dst_scale = Scalar::Zero;
  bool has_bias = false;
  Region bias;
  bool has_copy = false;
  Region copy;
};

// Waits until `peer` has released what I published to it under `tag`.
struct AwaitReleaseOp {
  int peer = 0;
  int tag = 0;
};

// Quantizes rows of op(src) into dst's (narrower) type, once, before they
// travel: AG-GEMM's wire type. Each row of op(src) gets its scale (into
// `scales`, one float32 per row, where the wire type has scales) and its
// values divided by it, rounded to dst's type, in the same row of op(dst).
// The rule, bit for bit, is kernels/quantize.hpp's (doc/fp8.md).
struct QuantizeOp {
  Region src;
  Region dst;
  Op op = Op::N;  // rows of op(src) and op(dst)
  bool has_scales = false;
  Region scales;  // rows x 1
};

using StepOp = std::variant<GemmOp, EpilogueOp, SendOp, RecvOp, CollectiveOp, PublishOp, PeerSumOp, AwaitReleaseOp,
                            QuantizeOp, RearrangeOp>;

enum class StepKind : uint8_t {
  Gemm = 0,
  Epilogue,
  Send,
  Recv,
  Collective,
  Publish,
  PeerSum,
  AwaitRelease,
  Quantize,
  Rearrange
};
// Steps a compute lane runs (the others are communication).
inline bool is_compute_kind(StepKind k) {
  return k == StepKind::Gemm || k == StepKind::Epilogue || k == StepKind::Quantize || k == StepKind::Rearrange;
}
const char* step_kind_name(StepKind k);

constexpr int kCommLane = -1;

struct Step {
  StepOp op;
  int lane = 0;             // compute lane (0..compute_lanes-1) or kCommLane (what a transport runs)
  int batch = -1;           // communication steps with one batch id start together
  std::vector<int> deps;    // indices of earlier steps that must finish first
  std::string label;        // for describe and traces

  StepKind kind() const { return static_cast<StepKind>(op.index()); }
  bool is_comm() const { return lane == kCommLane; }
};

enum class Algorithm : int {
  Ring = WEAVE_ALGORITHM_RING,
  Sequential = WEAVE_ALGORITHM_SEQUENTIAL,
  Direct = WEAVE_ALGORITHM_DIRECT,
  Pipelined = WEAVE_ALGORITHM_PIPELINED,
  Hierarchical = WEAVE_ALGORITHM_HIERARCHICAL,
  Summa = WEAVE_ALGORITHM_SUMMA
};
enum class Direction : int {
  Forward = WEAVE_DIRECTION_FORWARD,
  Backward = WEAVE_DIRECTION_BACKWARD,
  Bidirectional = WEAVE_DIRECTION_BIDIRECTIONAL
};
const char* algorithm_name(Algorithm a);
const char* direction_name(Direction d);

// The most bands ScheduleOptions::tail_bands cuts the last chunk into.
constexpr int kMaxTailBands = 16;

// Everything the schedule builders need besides the Problem.
// ScheduleOptions::all_gather_lag: GEMM-AR's all-gather after its whole
// reduce-scatter.
constexpr int kGatherAfterReduce = -1;

struct ScheduleOptions {
  Algorithm algorithm = Algorithm::Ring;
  Direction direction = Direction::Forward;
  int chunks_per_shard = 1;   // >= 1; bidirectional rings need >= 2
  int compute_lanes = 1;      // GEMMs alternate between lanes
  bool gathered_output = false;
  bool reduce_in_output_type = false;  // 16-bit partial sums travel in C's type
  // 16-bit reductions of the algorithms that move products in C's type
  // (direct, pipelined, hierarchical) move them in the accumulation type.
  bool reduce_in_accumulation_type = false;
  // The transport's own collectives sum 16-bit types (NCCL's; MPI has no
  // datatype for them). Over two ranks the pipelined reductions of 16-bit C
  // then hand the products, rounded once to C's type, to the library's
  // reduce-scatter or all-reduce, whose one sum of the two is the sum the
  // owner would have made (plan/wire.hpp).
  bool collectives_sum_16_bit = false;
  int slot_window = 3;        // reused partial-sum slots per chunk chain
  // Direct algorithm over a transport that reads peers' memory: each owner
  // sums the products where they were made (PeerSum steps) instead of
  // receiving them.
  bool peer_sums = false;
  // Direct GEMM-AR in one exchange: every rank makes its whole product, and
  // every rank sums every rank's product into all of C (read where it was
  // made with peer_sums, received as messages otherwise).
  bool all_reduce_one_shot = false;
  // Direct GEMM-AR over messages (two-shot): how many chunks the all-gather
  // of a finished chunk trails the reduce-scatter. k >= 1: each chunk's own
  // product is made right after the other ranks' products of that chunk;
  // chunk j is summed and its finished rows leave once the products of
  // chunk j + k are made (a sum emitted earlier would wait for data ahead
  // of GEMMs on its compute lane); kGatherAfterReduce: every finished chunk
  // leaves after the whole reduce-scatter, the own products made last
  // (reduction_direct.cpp).
  int all_gather_lag = kGatherAfterReduce;
  // Direct GEMM-RS and GEMM-AR over messages: the received products of a
  // chunk are summed first, with beta * C and the bias, into C's rows, and
  // the owner's own GEMM then accumulates onto them (beta = 1) instead of
  // writing its product to the workspace for one pass to sum all of them:
  // two fewer passes over the chunk, one more rounding of 16-bit C where
  // the received sum is rounded before the own product is added, and the
  // own product not rounded before the sum (reduction_direct.cpp).
  bool own_product_accumulates = false;
  // Direct GEMM-AR over two ranks whose own GEMMs read the received product
  // as their addend (own_gemm_can_add_received): the last chunk's own GEMM
  // and its finished rows in this many bands of rows, each band leaving as
  // soon as its GEMM ends, so that less than a chunk travels after the last
  // GEMM (1: the chunk whole).
  int tail_bands = 1;
  // WEAVE_GEMM: the widest panel of K that travels and is multiplied at
  // once, and how many panels of each operand may be in flight (slots).
  int64_t panel_width = 256;
  int panel_slots = 3;
  // WEAVE_GEMM in bands of C (build_gemm_in_bands) instead of SUMMA's
  // panels: 0 = panels; n = the travelling operand in n bands of C's rows
  // (or columns), one GEMM over all of K per band.
  int gemm_bands = 0;
  // The node of each group rank (hierarchical plans), numbered from 0 in
  // the order nodes first appear among the group's ranks; empty: one node.
  std::vector<int> node_of_rank;
};

// Whether the direct reduction's own GEMMs can read the received product
// as their addend (GemmOp::has_addend) rather than have a pass sum it: one
// received product per chunk (two ranks), in C's type (`products`: what
// products travel in) and order (received products are row-major).
inline bool own_gemm_can_add_received(const Problem& p, DType products) {
  return p.group_size == 2 && products == p.dtype && p.c.order == Order::RowMajor;
}

// The most panels a SUMMA schedule cuts K into (their tags must fit every
// transport's); the planner widens panels beyond K / kMaxSummaPanels.
constexpr int64_t kMaxSummaPanels = int64_t{1} << 17;

// A GEMM reads a slice of A's row-wise scales in place where it starts a
// multiple of this many bytes from the caller's pointer (what cuBLASLt asks
// of a scale pointer); other slices are copied into the workspace first
// (ScheduleBuilder::a_scales).
constexpr int64_t kScaleVectorAlignment = 16;

struct Schedule {
  std::vector<BufferSpec> buffers;  // indexed by BufferId / Region::buffer
  std::vector<Step> steps;          // a topological order: deps point backwards
  int64_t workspace_bytes = 0;
  int compute_lanes = 1;
  Algorithm algorithm = Algorithm::Ring;
  Direction direction = Direction::Forward;
  int chunks_per_shard = 1;
  int group_size = 1;
  int group_rank = 0;
  // The largest tag a send, receive or publication carries (0: none).
  int max_tag = 0;
  // What the builder decided beyond the options, for describe ("A
  // redistributed ...; 12 panels of up to 256").
  std::string notes;

  const BufferSpec& buffer(const Region& r) const { return buffers.at(r.buffer); }
  bool contiguous(const Region& r) const;
  int64_t bytes(const Region& r) const;
  // Byte offset of r's first element in its buffer stored with leading
  // dimension `ld` (the buffer's own, or one the caller gave at execute).
  int64_t offset_in_buffer(const Region& r, int64_t ld) const;
  // Byte offset of r's first element from what its buffer is bound to: the
  // caller's pointer, or for workspace buffers the workspace's start.
  int64_t offset_from_binding(const Region& r) const;
  // Counts per step kind, for describe: "4 gemm, 3 send, 3 recv, 1 epilogue".
  std::string step_summary() const;
  // Whether each compute lane runs a GEMM: a lane that runs none holds only
  // short element-wise steps (packing, placing panels), which the CUDA
  // backend runs at the communication's stream priority.
  std::vector<bool> lanes_that_multiply() const;
};

// The schedule of `problem.group_rank` in its group. Pure function.
Schedule build_schedule(const Problem& problem, const ScheduleOptions& options);

// Fails (WEAVE_ERROR_UNSUPPORTED) when a GEMM of the schedule is not one
// BLAS call (gemm_is_one_call): a conjugate-transposed operand stored in
// the other order than its product.
void require_one_call_gemms(const Schedule& schedule);
// For describe: the two levels of a hierarchical plan ("2 nodes of 2 ranks:
// within each node ..., between nodes ...").
std::string describe_hierarchical(const Problem& problem, const ScheduleOptions& options);

// Multi-line listing of a schedule (for debugging and WEAVE_LOG=trace).
std::string format_schedule(const Schedule& schedule);

}  // namespace weave::internal::plan
