// Copy engines or SM-driven transfers, per operation and shape, between the
// GPUs of one node: the rule and every threshold it uses, in one place.
//
// Both transports map their peers' workspaces and take the same peer-access
// probe; they differ in cost. A copy-engine transfer takes no SM from the
// GEMMs but costs a fixed 15-25 µs of signalling, and the owner of a
// reduction reads every received product again in a separate summing pass.
// SM-driven transfers run kernels on a budget of SMs (WEAVE_SM_TRANSPORT_CTAS
// CTAs, which the GEMMs leave free) that read a peer's products where they
// were made and sum them in the same pass. Which wins depends on the
// operation and the bytes per transfer, so the choice is a table of measured
// ranges (doc/performance.md says how each range is measured).
#pragma once

#include <string>
#include <vector>

#include "core/problem.hpp"

namespace weave::internal::plan {

// CTAs (one per SM) of the SM transport's kernels when WEAVE_SM_TRANSPORT_CTAS
// is not set, measured on 2 H100s (doc/performance.md, "The SM transport"):
// - fused sums (the reductions' direct algorithm, whose owners read the
//   peers' products over NVLink): the reads are bounded by the requests each
//   SM keeps in flight, so their speed grew with the CTAs: GEMM-AR 8192^3 at
//   2.50, 1.75 and 1.39 x its limit on 16, 32 and 64 CTAs, GEMM-RS
//   16384x8192x28672 at 1.87, 1.35 and 1.31 (the GEMMs leaving those SMs
//   free); 64 was the fastest from 4096 rows up;
// - pushes (AG-GEMM and the rings): writes need few SMs, and every SM given
//   to them is taken from the GEMMs: AG-GEMM 16384^3 at 1.07 on 16 CTAs and
//   1.21 on 32.
constexpr int kSmTransportPeerSumCtas = 64;
constexpr int kSmTransportPushCtas = 16;
constexpr int kSmTransportMaxCtas = 1024;

// SM-driven transfers are chosen automatically for `operation` when the
// bytes of one rank's shard on the wire (transfer_shard_bytes) lie in
// [from_bytes, below_bytes). An empty range: never.
struct SmTransferRule {
  Operation operation;
  double from_bytes;
  double below_bytes;
};

// The rules of this build, measured on 2 H100s (doc/performance.md, "The SM
// transport"): the copy engines were faster for GEMM-RS and GEMM-AR on every
// benchmarked shape (1024 to 16384 rows), so their ranges are empty; the SM
// ring was faster for AG-GEMM only with shards below 16 MiB (1024 rows of
// K = 8192 in bf16 over two ranks), and on 4 H200s that range held too.
// Elsewhere the SM transport runs where it is asked for (WEAVE_TRANSPORT=sm
// or WEAVE_TRANSPORT_SM).
std::vector<SmTransferRule> default_sm_transfer_rules();

// The bytes of one rank's shard as it travels: op(A)'s rows for AG-GEMM, the
// rank's rows of the product in C's type for GEMM-RS and GEMM-AR.
double transfer_shard_bytes(const Problem& p);

struct TransferChoice {
  bool sm_transfers = false;
  std::string why;  // for describe
};
TransferChoice choose_transfers(const Problem& p, const std::vector<SmTransferRule>& rules);

// Chunks per shard of the direct algorithm when left automatic: one, two
// from two_chunk_bytes of a rank's product shard in C's type, four from
// four_chunk_bytes; two-shot GEMM-AR over two ranks four from
// pair_all_reduce_four_chunk_bytes.
struct DirectChunkRule {
  double two_chunk_bytes;
  double four_chunk_bytes;
  double pair_all_reduce_four_chunk_bytes;
};
// Measured over copy engines (doc/performance.md). (Eight chunks from 256
// MiB were measured on 2 H100s and not kept: GEMM-RS 16384^3 took 6.295
// against 6.522 ms in four in one run, 6.689 against 6.421 in the next.)
constexpr DirectChunkRule kCopyEngineDirectChunks{64.0 * 1024 * 1024, 128.0 * 1024 * 1024, 32.0 * 1024 * 1024};
// With sums fused into SM-driven transfers. Provisional, not measured: the
// copy engines' rule; a chunk costs less here (no copy-engine rendezvous),
// so finer chunks may pay, which `--variants sm/auto/C/direct` measures.
constexpr DirectChunkRule kPeerSumDirectChunks = kCopyEngineDirectChunks;
int direct_chunks(const Problem& p, const DirectChunkRule& rule);

// Chunks per shard of the one-shot GEMM-AR over messages when left
// automatic (reduction_one_shot.cpp): one chunk per kOneShotMinPieceBytes
// of a rank's product shard in C's type, at least one and at most four,
// and eight from kOneShotEightChunkBytes. Measured over the copy engines of
// 2 H100s (doc/performance.md): pieces below 8 MiB cost more in fixed
// transfer costs than they save (GEMM-AR 1024x8192x8192 in two chunks took
// 0.272 ms, in one 0.198; 4096 and 8192 rows in eight took 1.39 and 1.03 x
// four), four chunks were the fastest from 32 to 256 MiB shards, eight on
// 448 MiB (6.750 ms against 6.924 in four).
constexpr double kOneShotMinPieceBytes = 8.0 * 1024 * 1024;
constexpr double kOneShotEightChunkBytes = 384.0 * 1024 * 1024;
int one_shot_chunks(const Problem& p);

// Below this many flops per rank a device plan whose reductions are summed
// where they are read runs sequentially. Provisional, not measured: the copy
// engines' threshold (kDeviceOverlapMinFlops); SM-driven transfers cost
// less per chunk, so overlap may pay on smaller shapes, which
// `--variants sm/auto/0/direct` (an explicit algorithm, so no threshold)
// against the sequential column measures.
constexpr double kPeerSumOverlapMinFlops = 64e9;

// GEMM-AR with fused sums over at most this many ranks runs the one-shot
// exchange (every rank reads every other rank's whole product and writes
// all of C in one pass); over more ranks the two-shot one (each owner sums
// its rows, then every rank reads the finished rows of the others). Two:
// there one-shot moves the same bytes as two-shot in one phase instead of
// two; from three ranks it moves more. WEAVE_ALL_REDUCE overrides.
constexpr int kOneShotAllReduceMaxRanks = 2;

}  // namespace weave::internal::plan
