// Resolves a plan's requests ("automatic", environment overrides) into the
// concrete choices a schedule is built from: algorithm, direction, chunks,
// lanes, backend, transport, progress. Pure: the environment is passed in.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "core/nodes.hpp"
#include "core/problem.hpp"
#include "plan/cost_model.hpp"
#include "plan/schedule.hpp"
#include "plan/transfer_choice.hpp"
#include "plan/transport_description.hpp"
#include "weave/weave.h"

namespace weave::internal::plan {

enum class Backend { Host = WEAVE_BACKEND_HOST, Cuda = WEAVE_BACKEND_CUDA };
enum class ProgressMode { Tiles = WEAVE_PROGRESS_TILES, Thread = WEAVE_PROGRESS_THREAD };
// What the host enqueues first in an execute over a stream-ordered transport
// (WEAVE_ISSUE_ORDER; exec::IssueOrder says what each does).
enum class IssueOrder { TransfersFirst, GemmsFirst, Alternate };
// How a GPU stream waits for a flag a peer writes: a one-warp kernel that
// gives up at the plan's timeout and records which step and peer it waited
// for (the default), or a CUDA stream memory operation (cuStreamWaitValue32:
// no kernel, no bound), WEAVE_DEVICE_WAIT=stream.
enum class DeviceWait { Bounded, StreamMemoryOperation };

const char* backend_name(Backend b);
const char* progress_name(ProgressMode p);

// The environment variables a plan reads (name -> value; absent = unset).
using Environment = std::map<std::string, std::string>;
Environment read_environment();

// How the copy-engine transport queues the sends of one batch to several
// peers (WEAVE_COPY_ENGINE_SENDS): each on a stream of its receiver, all at
// once (the default), or one at a time in schedule order on one copy
// stream. Measured on 4 H100s (doc/performance.md): every GPU sending 16 MiB
// to each of its three peers, the copy engines moved 191-215 GB/s out of
// each GPU all at once and 319-322 one at a time in a shifted order (the
// k-th copy to the GPU k after; weave-copy-rate-probe), to two peers (a
// bidirectional ring's step) the same either way; yet in Weave's plans one
// at a time did not pay: the bidirectional AG-GEMM ring within run-to-run
// noise (faster on 5 of 6 shapes in one run, slower on 5 of 6 in another),
// the direct AG-GEMM 2-16% faster on its four largest shapes and 4-12%
// slower on the two smallest, WEAVE_GEMM on a 1 x 4 grid 6-24% slower on
// two of three shapes.
enum class CopyEngineSends { PerReceiver, InOrder };
// Whether the copy-engine transport's receives that depend on no step (the
// direct reductions' every receive: each has a slot of its own) raise their
// clear to send at the start of every execute, their senders waiting for
// all of them once at their own start, instead of a clear and a bounded
// wait (a kernel, which needs an SM that a running GEMM may hold) per step
// (WEAVE_CLEAR_TO_SEND=at_start or per_step; else this rule). Measured on 4
// H100s (bf16 and FP8, tensor-parallel shapes, one run each, doc/
// performance.md): at the start GEMM-AR took 5-12% less time on all nine
// overlapped shapes, FP8 GEMM-RS 7-10% less on three of four, bf16 GEMM-RS
// and AG-GEMM within 3.5% either way; on 2 H100s GEMM-RS took 2-8% more on
// all six bf16 shapes (0-3% on FP8), GEMM-AR within 3% but FP8
// 4096x8192x8192 13% less, AG-GEMM within 6% either way. So at the start,
// but for GEMM-RS over two ranks.
bool clears_at_start_measured_faster(Operation operation, int ranks);
// What the host enqueues first in an execute over a stream-ordered transport
// where WEAVE_ISSUE_ORDER does not say: measured on 4 and 2 H100s (bf16 and FP8,
// every operation of the tensor-parallel shapes, the orders taking turns in
// one run; doc/performance.md), the GEMMs first over 2 ranks, where AG-GEMM
// is bound by its GEMMs, and transfers and compute steps in turn over more,
// where the ring's sends are the critical path. Over the transports whose
// row says so (TransportDescription::issue_order_measured).
struct MeasuredIssueOrder {
  IssueOrder order;
  int measured_ranks;  // the rank count it measured fastest on (what describe cites)
};
MeasuredIssueOrder issue_order_measured_fastest(int ranks);

struct Resolved {
  ScheduleOptions schedule;
  Backend backend = Backend::Host;
  Transport transport = Transport::Mpi;
  ProgressMode progress = ProgressMode::Tiles;
  std::chrono::milliseconds timeout{300000};
  bool comm_high_priority = true;  // GPU communication streams above the compute streams
  // The copy-engine transport: a batch's transfers complete on the
  // communication stream (the default, measured faster), or each on a
  // stream of the transport's own (WEAVE_TRANSFER_COMPLETION=own_streams).
  bool completions_on_transport_streams = false;
  // How the copy-engine transport queues a batch's sends to several peers
  // (WEAVE_COPY_ENGINE_SENDS; CopyEngineSends).
  CopyEngineSends copy_engine_sends = CopyEngineSends::PerReceiver;
  // Clears to send of dependency-free receives raised at the start of
  // every execute (WEAVE_CLEAR_TO_SEND; clears_at_start_measured_faster).
  bool clears_at_start = true;
  // Stream-ordered transports: what the host enqueues first in an execute
  // (WEAVE_ISSUE_ORDER, else issue_order_measured_fastest; exec::IssueOrder).
  IssueOrder issue_order = IssueOrder::TransfersFirst;
  // SMs the GEMMs of an overlapped device plan leave to what runs beside
  // them (WEAVE_SM_MARGIN, else the SM budget of a transport that has one);
  // 0: none, always for sequential plans.
  int gemm_sm_margin = 0;
  // Device GEMMs choose their cuBLASLt algorithm by timing its candidates
  // at plan creation (WEAVE_GEMM_TUNING=on; backends/cuda/gemm_tuning.hpp).
  bool gemm_tuning = false;
  // Row-wise scaled FP8 GEMMs on CUTLASS's kernel where the build has it
  // (WEAVE_FP8_GEMM=cutlass; backends/cuda/cutlass_fp8_gemm.hpp) or on
  // cuBLASLt (WEAVE_FP8_GEMM=cublaslt, the default: CUTLASS's kernel
  // measured 7-25% slower, doc/performance.md).
  bool cutlass_fp8_gemm = false;
  // Tiles neighbouring CTAs of that kernel take along its raster
  // (CUTLASS's max_swizzle_size; WEAVE_CUTLASS_SWIZZLE); 0: the kernel's
  // rule (backends/cuda/cutlass_fp8_gemm.cpp).
  int cutlass_swizzle = 0;
  // CTAs (one per SM) of an SM-driven transport's kernels.
  int sm_transport_ctas = kSmTransportPushCtas;
  DeviceWait device_wait = DeviceWait::Bounded;
  int flags = 0;
  // Why the automatic choices came out as they did, for describe.
  std::string notes;
  // The algorithm is left to the model, which needs the calibration of
  // Capabilities::calibration: the plan measures it and resolves again.
  bool wants_calibration = false;
  // The model's candidates too close for it to tell apart (ModelChoice::
  // close), to be timed at plan creation (Capabilities::trials), after
  // which the plan resolves again; empty: nothing to time.
  std::vector<Candidate> wants_trials;
};

// What this build contains and what the machine offers.
struct Capabilities {
  bool cuda = false;
  int mpi_thread_level = 0;  // MPI_Query_thread
  double cores_per_rank = 1;  // hardware threads of the node over the ranks on it
  // The transport table's rows, in its order (src/transport/registry.cpp),
  // each saying whether it is compiled in.
  std::vector<TransportDescription> transports;
  // The group's ranks share one node with peer access between their GPUs:
  // the probe of Reach::OneNodePeerAccess, run collectively before planning
  // for device plans that leave the transport automatic.
  bool peer_access = false;
  std::string peer_access_why_not;
  // Which node each rank of the group is on (core/nodes.hpp).
  NodeLayout nodes;
  // What the plan's backend and transport were measured to do over its
  // group (api/calibration.hpp); null until measured.
  std::shared_ptr<const Calibration> calibration;
  // Resolved::wants_trials timed (api/calibration.hpp): each candidate's
  // seconds, the slowest rank's median; or, where they could not be timed,
  // none and why not. Null until timed.
  struct Trials {
    std::vector<Candidate> measured;
    std::string not_timed;  // why not, for describe
    std::string left_out;   // candidates not timed while others were, and why
  };
  std::shared_ptr<const Trials> trials;
  // Where SM-driven transfers beat the copy engines on this machine.
  std::vector<SmTransferRule> sm_transfer_rules = default_sm_transfer_rules();
};

// The row of `id` in caps.transports; null when the table has none.
const TransportDescription* find_transport(const Capabilities& caps, Transport id);

// Below this many flops per rank a device plan runs sequentially: the ring's
// per-step costs outweigh what overlap hides (measured: doc/performance.md).
constexpr double kDeviceOverlapMinFlops = 64e9;
// Over NCCL, device plans are sequential for GEMM-RS and GEMM-AR and for
// AG-GEMM below this many flops per rank: on 4 H200s over NCCL the reduction
// rings took 2.1-2.7 x the time of the sequential plan moving bf16 (and
// about 1.5-1.9 x the GEMM plus twice that collective, what float32 partial
// sums would move), AG-GEMM's ring 1.17-1.37 x up to 275 GFLOP per rank and
// 0.83-0.99 x from 1.9 TFLOP (doc/performance.md).
constexpr double kNcclRingMinFlops = 1e12;
// Direct reductions over copy engines cut shards as kCopyEngineDirectChunks
// (transfer_choice.hpp) says: in two from 64 MiB of a rank's product shard
// in C's type, in four from 128 MiB, else whole shards (measured:
// doc/performance.md; whole 32 MiB shards won once the sums ran at vector
// speed; from 128 MiB four chunks shorten the wait for the first product
// and for the last sum, GEMM-AR by 5-6% on 4 H200s).
// Two-shot GEMM-AR over two ranks cuts shards in four from 32 MiB: with one
// peer a chunk costs two transfers, not 2 (P - 1), and four chunks let the
// all-gather half start sooner (2 H200s: 6-9% faster on 32 and 64 MiB
// shards; on 4 H200s four chunks of a 32 MiB shard were 37% slower). The
// one-shot GEMM-AR (WEAVE_ALL_REDUCE=one_shot) has a rule of its own
// (one_shot_chunks).
// Partial-sum chunks of device reduction rings stay below this many bytes
// (chunks per shard 2, or 4 above it; measured: doc/performance.md).
constexpr double kDeviceReductionChunkBytes = 128.0 * 1024 * 1024;

// The direct GEMM-AR and GEMM-RS over two ranks (copy engines, C row-major,
// products in C's type) have their own GEMMs add the received product
// (ScheduleOptions::own_product_accumulates) from product shards of this
// many bytes on (the largest rank's rows of C), in two chunks at least.
// Measured on 2 H200s, bf16 and FP8 (doc/performance.md): GEMM-AR faster
// from 16 MiB in two chunks (10-12% there) and in the direct rule's four
// from 32 MiB; GEMM-RS from 32 MiB in two chunks (5-7%) and from 64 MiB;
// both slower at 8 MiB, and GEMM-RS at 32 MiB in one chunk (its own GEMM
// then waits for the whole transfer).
constexpr int64_t kOwnGemmAddsFromBytesAllReduce = int64_t{16} << 20;
constexpr int64_t kOwnGemmAddsFromBytesReduceScatter = int64_t{32} << 20;
constexpr int kOwnGemmAddsMinChunks = 2;
// Such plans cut large shards into chunks of at most this many bytes, up to
// kOwnGemmAddsMaxChunks (never fewer than the direct chunk rule's): on 2
// H200s 8 chunks against 4 took GEMM-AR 16384x8192x28672 (448 MiB shards)
// from 6.215 to 5.716 ms and 16384^3 (256 MiB) from 6.650 to 6.527, GEMM-RS
// 16384x8192x28672 from 5.905 to 5.735 (16384^3 equal), and 8192^3 (64 MiB)
// no faster in 8 or 2 than in 4 (doc/performance.md).
constexpr int64_t kOwnGemmAddsChunkBytes = int64_t{32} << 20;
// GEMM-AR whose own GEMMs add the received products: the last chunk's own
// GEMM and finished rows in this many bands (ScheduleOptions::tail_bands;
// WEAVE_TAIL_BANDS). Measured on 2 H200s (doc/performance.md): two bands
// took bf16 GEMM-AR 0.5-4.0% less time on all five shapes that use them,
// four bands no better than one; FP8 GEMM-AR, whose transfers outlast its
// GEMMs, 2.2% less to 4.7% more with two. So two where A is wider than one
// byte, one for FP8 A.
constexpr int kTailBands = 2;
constexpr int kTailBandsFp8 = 1;
constexpr int kOwnGemmAddsMaxChunks = 8;

// WEAVE_GEMM's default panel width (the most K indices that travel and are
// multiplied at once; panels join blocks of one owner pair up to it,
// summa_panels.hpp). WEAVE_PANEL_WIDTH overrides.
// Host: a width at which BLAS runs near its peak (128 to 1024 made no
// difference above the noise on 2 x 2 grids, doc/performance.md).
// Device: measured on 2 H100s (bf16, 1 x 2 and 2 x 1 grids, blocks of
// 1024, doc/performance.md): 1024 (one block per panel before panels
// joined blocks that lie apart) took up to 1.5 x the time of 4096 at
// 16384^3; 8192 was fastest on four of six cases, 4096 within 3% of it
// over all six and faster on the tall-skinny 2 x 1 case, at half the
// panel workspace.
constexpr int64_t kHostPanelWidth = 256;
constexpr int64_t kDevicePanelWidth = 4096;
// WEAVE_GEMM on a grid of one row or one column: one operand travels along
// K (op(A) on 1 x P, op(B) on P x 1), the other is held whole along K by
// every rank, and where the travelling operand's blocks are narrower than
// the panels SUMMA packs the held one's pieces for every panel, a copy of
// the rank's whole block of it per execute beside the GEMMs. The ratio of
// those bytes to the bytes a rank receives, which is all that overlap can
// hide (the SUMMA cases it applies to, op N N with operands in C's layout;
// 0 otherwise). On 2 H100s the 2 x 1 grid's
// 131072 x 4096 x 4096 (ratio 32) ran SUMMA at 1.34 x (bf16) and 1.50 x
// (f64) its sequential plan, while ratio 1 (16384^3, 8192^3) and 1/32 (the
// 1 x 2 grid's tall-skinny case) ran at 0.75-0.97 x in all but one case
// (doc/performance.md). Device plans whose algorithm is automatic run the
// sequential plan from kLineGridMaxPackedPerReceived.
double line_grid_packing_ratio(const Problem& problem, int64_t panel_width);
constexpr double kLineGridMaxPackedPerReceived = 8;
// WEAVE_GEMM in bands of C (ScheduleOptions::gemm_bands): on a grid of one
// row or one column the travelling operand is gathered band by band of C's
// rows (or columns) and each band is one GEMM over all of K: 16-bit C is
// written once instead of SUMMA's float32 sums being read and written once
// per panel, and the held operand is read where it lies instead of being
// packed per panel. Measured on 2 H100s (1 x 2 and 2 x 1 grids, blocks of
// 1024, three shapes, doc/performance.md): bf16 0.65-0.98 x the time of
// SUMMA's panels on all six cases, f64 0.69-0.98 x on five and 1.02 x on
// one; 4 bands 20.15 ms over five bf16 cases, 2 bands 20.41, 8 bands
// 21.25. Device plans left automatic on such grids run kDeviceGemmBands
// bands in bf16 and f64 (measured) and f16 (bf16's path); f32 and complex
// keep the panels (not measured), and the rule above. On grids of several
// rows and columns op(B) is gathered whole first and op(A) travels in
// bands: measured on a 2 x 2 grid of 4 H200s (bf16, blocks of 1024, three
// shapes) at 0.66-0.87 x the time of SUMMA's panels with 4 bands, which
// 16-bit types run there; f64 keeps the panels there (not measured).
// WEAVE_GEMM_BANDS sets any SUMMA plan's (0: panels).
constexpr int64_t kDeviceGemmBands = 4;
bool bands_measured_faster(DType dtype, bool line_grid);
// Where a rank's GEMM does this many flops or more per byte it receives
// (even shares: its rows of op(A) over the (P_c - 1) / P_c of K it does
// not hold, its columns of op(B) likewise), 16-bit device plans left
// automatic run the sequential plan instead of bands: the communication is
// then a few percent of the GEMM, less than cutting the GEMM into bands
// costs. Measured on 4 and 2 H200s (bf16, blocks of 1024,
// doc/performance.md): bands took 1.06 x the sequential plan at 43690
// flops per byte (131072x4096x4096 on 4 x 1) and 0.99-1.01 x at 131072
// (the same on 2 x 1), and 0.93 x at 16384 (16384^3 on 2 x 1), less below.
constexpr double kBandsMaxFlopsPerReceivedByte = 32768;
double gemm_flops_per_received_byte(const Problem& problem);
constexpr int64_t kMaxGemmBands = 4096;
// Chunks (collectives) of the pipelined algorithm, and pipeline stages of
// the hierarchical one, when nothing else says:
// the first chunk's transfer (AG-GEMM) or the last one's (reductions) is
// what overlap cannot hide, a quarter of the whole with four, while each
// collective's fixed cost stays small against a quarter of a large
// operation's bytes. Provisional, not measured.
constexpr int kPipelinedChunks = 4;
// Device GEMM-AR over peer transports (the direct algorithm) on more than
// two ranks runs the sequential plan (NCCL's all-reduce) where K / (P - 1),
// scaled to bf16's GEMM rate (K / (P - 1) / gpu_gemm_rate(A's type)), is
// below this, where that plan moves no more bytes than the direct one (16-bit
// partial sums asked for, or float32 products; planner.cpp). The GEMM then
// hides too little of the products' exchange for the direct algorithm's
// extra passes to pay: on 4 H100s, FP8 (rate 2) with K = 8192 (1365) took
// 1.04-1.29 x the sequential plan moving bf16, while bf16
// with K = 8192 (2731) took 0.69-0.96 x and FP8 with K = 16384 (2731)
// 0.95 x; on 2 H200s FP8 with K = 8192 (4096) took 0.74-0.92 x
// (doc/performance.md).
constexpr double kDirectAllReduceMinKPerPeer = 2048;
// The same rule (same bytes) for device GEMM-RS over more than two ranks, where the
// rank's product shard travels in one chunk (the direct chunk rule's one
// chunk, below 64 MiB in C's type): on 4 H100s FP8 with K = 8192 (1365) took
// 1.02-1.05 x the sequential plan at 4096 and 8192 rows (16 and 32 MiB
// shards, two runs), but 0.91-0.93 x at 16384x8192x28672 (224 MiB, four
// chunks: the later chunks' GEMMs hide the earlier ones' transfers), and
// bf16 with K = 8192 (2731) 0.71-0.77 x at the small shapes (against the
// sequential plan moving bf16).
constexpr double kDirectReduceScatterMinKPerPeer = 2048;
// The bf16-equivalent K per peer of a GEMM-AR or GEMM-RS (above).
inline double direct_all_reduce_k_per_peer(const Problem& p) {
  const double rate = gpu_gemm_rate(p.a_type);
  if (p.group_size < 2 || rate <= 0) return 0;
  return static_cast<double>(p.k) / (p.group_size - 1) / rate;
}
// Device GEMM-RS and GEMM-AR whose group spans nodes of several ranks run
// the pipelined plan where the calibrated reduce-scatter moves at least this
// many bytes per second (of a rank's buffer), else the hierarchical plan:
// measured on emulated links, host-staged NCCL calibrated at 31-33 GB/s
// over 2 x 2 GPUs (pipelined 0.56-0.96 x sequential, three runs) and NCCL
// over sockets at 6.3 GB/s over 2 x 2 GPUs (hierarchical 0.33-0.52 x,
// pipelined 0.50-0.91 x, one run); the bound lies between them
// (planner.cpp, doc/performance.md). Not measured on a real network.
constexpr double kPipelinedAcrossNodesMinBytesPerSecond = 16e9;
// The hierarchical plan runs down to this many flops per rank (the smallest
// shape measured, 1024x8192x8192 over 4 ranks, is 34 GFLOP: 0.44-0.45 x
// sequential over sockets on 4 H100s, 0.81-0.96 x on 4 H200s), below which
// the sequential plan runs.
constexpr double kHierarchicalAcrossNodesMinFlops = 32e9;
// The pipelined plan only from one node's overlap threshold: at 34 GFLOP
// host-staged it took 0.56-0.59 x sequential on 4 H100s but 1.04-1.21 x
// (bf16) and 1.12-1.24 x (FP8) on 4 H200s, whose sequential plan there was
// twice as fast; from 4096x8192x8192 (137 GFLOP) it won on both.
constexpr double kPipelinedAcrossNodesMinFlops = kDeviceOverlapMinFlops;

// Limits of the plan descriptor's counts. Pieces of shards and steps grow
// with chunks_per_shard (and MPI tags with twice group size times it); a
// stream per lane and its GEMM workspace come with every compute stream.
constexpr int32_t kMaxChunksPerShard = 1024;
constexpr int32_t kMaxComputeStreams = 64;

// The plan descriptor's options as values, on their own and for the
// operation: enumerations in range, no unknown or contradicting flag bits,
// counts within their limits, what `operation` takes (WEAVE_GEMM: SUMMA or
// sequential, no direction or chunks; SUMMA only there). Needs nothing of
// the other ranks, so plan creation runs it before they compare their
// descriptors (a rank with a bad value fails with its own message, not as
// a mismatch). Throws weave::internal::Error.
void check_option_values(const weave_plan_desc_t& desc, Operation operation);

// Throws weave::internal::Error for requests that cannot be satisfied (say why and how
// to fix it; never silently pick something else).
Resolved resolve_options(const weave_plan_desc_t& desc, const Problem& problem, const Environment& env,
                         const Capabilities& caps);

}  // namespace weave::internal::plan
