// AG-GEMM over point-to-point messages: the ring and the direct algorithm
// (DESIGN.md section 3). Rank r multiplies its own rows of op(A) first, so
// the first GEMM starts before any byte arrives; meanwhile the other ranks'
// rows arrive and each chunk is multiplied once it is there. Each shard is
// cut into chunks_per_shard chunks, so a chunk can travel while the previous
// one is multiplied.
//
// Ring: every chunk of op(A) walks the ring, each rank forwarding what it
// received and multiplying it. A bidirectional ring sends every shard the
// short way round: forward to the ranks up to floor(P/2) places after its
// owner, backward to the others. Both directions of every link carry a
// whole shard at each step, and the last shard arrives after floor(P/2)
// hops instead of P-1, which shortens the chain of transfers that precedes
// the last GEMM.
//
// Direct: batch j sends my chunk j to every other rank (r+1, r+2, ...) and
// receives chunk j of every other rank (r-1, r-2, ...), all at once and
// nothing forwarded: where every pair of GPUs has its own links (NVSwitch)
// a GPU's P - 1 incoming transfers share its whole NVLink bandwidth instead
// of the one link a ring step uses.
//
// Every received chunk has its own place in the gather buffer, so no receive
// waits for a reader of an earlier chunk, and the buffer ends up holding the
// whole gathered op(A) (returned to the caller on request).
//
// Scaled (FP8) rows travel with their scales: each chunk's scales, tight
// in a workspace slot of their own, go in the same batch as its rows (a
// second message to the same peer), and the chunk's GEMM waits for both;
// there is no separate gather of the scales before the first GEMM.
//
// With a wire type narrower than A's, every rank quantizes its own chunks
// once (rows and their scales, into their places in the gather buffer and
// their scale slots) before they travel; every GEMM then multiplies
// quantized rows, its own ones included.
#include <string>
#include <tuple>
#include <utility>

#include "core/error.hpp"
#include "plan/schedule_builder.hpp"

namespace weave::internal::plan {

void build_ag_gemm_messages(ScheduleBuilder& b) {
  const Problem& p = b.problem();
  const ScheduleOptions& o = b.options();
  const int P = b.P(), r = b.rank(), c = o.chunks_per_shard;
  const Split pieces = p.m_split.refine(c, p.chunk_unit);  // piece q * c + j: chunk j of rank q's rows

  // The gather buffer stores op(A) rows contiguously: row-major M x K for
  // op N (A's rows), column-major K x M for op T (A's columns).
  const Order gather_order = p.op_a == Op::N ? Order::RowMajor : Order::ColMajor;
  const int gather = p.op_a == Op::N ? b.add_workspace("gathered op(A)", p.m, p.k, p.wire_type, gather_order)
                                     : b.add_workspace("gathered op(A)", p.k, p.m, p.wire_type, gather_order);
  const Region c_all = b.whole(kBufferC);
  const Region b_all = b.whole(kBufferB);
  const ScaleMode mode = p.wire_scale;  // the scales of the rows as they travel
  const bool scaled = mode != ScaleMode::None, quantize = p.quantized();
  const int scale_tag_base = P * c;  // scale messages: tag = scale_tag_base + chunk id

  auto piece_id = [&](int q, int j) { return q * c + j; };
  auto piece_rows = [&](int id) { return pieces.count(id); };
  auto gather_region = [&](int id) { return b.op_rows(gather, p.op_a, pieces.offset(id), pieces.count(id)); };
  auto own_row0 = [&](int id) { return pieces.offset(id) - p.m_split.offset(r); };
  auto own_region = [&](int j) {
    const int id = piece_id(r, j);
    return b.op_rows(kBufferA, p.op_a, own_row0(id), pieces.count(id));
  };
  auto what = [&](int id) { return "chunk " + std::to_string(id % c) + " of rank " + std::to_string(id / c); };
  // A slot of its own for every chunk's scales that travel.
  // (Quantized own chunks get theirs from the quantization.)
  std::vector<Region> scale_slot(static_cast<std::size_t>(P * c));
  if (scaled)
    for (int id = 0; id < P * c; ++id)
      if (piece_rows(id) > 0 && (id / c != r || quantize))
        scale_slot[id] = b.whole(b.add_scale_workspace("scales of " + what(id), mode, piece_rows(id), p.k));

  // The multiplication of one chunk of op(A) (already local in `a_region`,
  // its scales in `scales`), its bias, and its copy (with its scales) into
  // the caller's gathered A.
  auto multiply = [&](int id, const Region& a_region, const ScaleOperand& scales, const std::vector<int>& deps) {
    const int lane = b.next_compute_lane();
    const Region c_rows{kBufferC, pieces.offset(id), 0, pieces.count(id), c_all.cols};
    if (!c_rows.empty()) {
      GemmOp g{a_region, p.op_a, b_all, p.op_b, c_rows, Scalar::Alpha, Scalar::Beta, scales, b.b_scales()};
      const int gemm = b.add_step(g, lane, deps, "gemm " + what(id));
      if (p.has_bias) b.add_step(b.add_bias(c_rows), lane, {gemm}, "bias " + what(id));
    }
    if (o.gathered_output) {
      const Region out = b.op_rows(kBufferGathered, p.op_a, pieces.offset(id), pieces.count(id));
      b.add_step(b.copy(out, a_region), lane, deps, "gathered output " + what(id));
      // Tensor-wise: one scale per shard, written by the shard's first chunk.
      const bool first_of_shard = pieces.offset(id) == p.m_split.offset(id / c);
      if (scaled && !scales.region.empty() && (mode != ScaleMode::Tensor || first_of_shard)) {
        const Region scales_out =
            mode == ScaleMode::Tensor
                ? Region{kBufferGatheredScale, id / c, 0, 1, 1}
                : b.scale_rows(kBufferGatheredScale, mode, pieces.offset(id), pieces.count(id),
                               "the gathered scales of " + what(id));
        b.add_step(b.copy(scales_out, scales.region), lane, deps, "gathered output scales " + what(id));
      }
    }
  };

  // Own chunks: quantized into the gather buffer where there is a wire
  // type; else sent straight from A when their bytes already look like a
  // gather-buffer chunk, otherwise packed first; their scales likewise.
  std::vector<int> own_send_dep(c, -1), own_scale_dep(c, -1);
  std::vector<Region> own_send_region(c), own_multiplied(c);
  std::vector<ScaleOperand> own_scales(c);
  for (int j = 0; j < c; ++j) {
    const int id = piece_id(r, j);
    const Region mine = own_region(j);
    own_send_region[j] = own_multiplied[j] = mine;
    if (piece_rows(id) == 0) continue;
    if (quantize) {
      own_send_region[j] = own_multiplied[j] = gather_region(id);
      own_scales[j] = ScaleOperand{mode, scale_slot[id]};
      if (p.k > 0)  // rows of no elements have nothing to quantize, and no scales
        own_send_dep[j] = own_scale_dep[j] =
            b.add_step(QuantizeOp{mine, gather_region(id), p.op_a, scaled, scale_slot[id]}, 0, {},
                       "quantize own chunk " + std::to_string(j));
      continue;
    }
    own_scales[j] = b.a_scales(own_row0(id), piece_rows(id), &own_scale_dep[j]);
    if (b.same_bytes_as_tight(mine, gather_order)) continue;
    own_send_region[j] = gather_region(id);
    own_send_dep[j] = b.add_step(b.copy(gather_region(id), mine), 0, {},
                                 "pack own chunk " + std::to_string(j));
    // FP8 rows are multiplied K-contiguous, as the gather buffer holds them
    // (what cuBLASLt's FP8 kernels need before sm_100): the packed copy.
    if (scaled) own_multiplied[j] = gather_region(id);
  }
  for (int j = 0; j < c; ++j)
    if (piece_rows(piece_id(r, j)) > 0)
      multiply(piece_id(r, j), own_multiplied[j], own_scales[j],
               {own_scale_dep[j], own_multiplied[j].buffer == gather ? own_send_dep[j] : -1});

  // My chunk j (its rows, then its scales) to rank `to` in `batch`;
  // `where` ends the steps' labels.
  auto send_own = [&](int j, int to, int batch, const std::string& where) {
    const int id = piece_id(r, j);
    b.add_step(SendOp{own_send_region[j], to, id}, kCommLane, {own_send_dep[j]},
               "send own chunk " + std::to_string(j) + where, batch);
    if (scaled)
      b.add_step(SendOp{own_scales[j].region, to, scale_tag_base + id}, kCommLane, {own_scale_dep[j]},
                 "send scales of own chunk " + std::to_string(j) + where, batch);
  };
  // Chunk `id` (its rows, then its scales) from rank `from` in `batch`, and
  // its GEMM once both are there; the receive steps of the rows and of the
  // scales (-1: unscaled).
  auto receive_and_multiply = [&](int id, int from, int batch) {
    const int rows = b.add_step(RecvOp{gather_region(id), from, id}, kCommLane, {}, "receive " + what(id), batch);
    int scales_step = -1;
    ScaleOperand scales;
    if (scaled) {
      scales = ScaleOperand{mode, scale_slot[id]};
      scales_step = b.add_step(RecvOp{scale_slot[id], from, scale_tag_base + id}, kCommLane, {},
                               "receive scales of " + what(id), batch);
    }
    multiply(id, gather_region(id), scales, {rows, scales_step});
    return std::pair<int, int>{rows, scales_step};
  };

  if (o.algorithm == Algorithm::Direct) {
    for (int j = 0; j < c; ++j) {
      const int batch = b.next_batch();
      if (piece_rows(piece_id(r, j)) > 0)
        for (int s = 1; s < P; ++s) send_own(j, b.mod(r + s), batch, " to rank " + std::to_string(b.mod(r + s)));
      for (int s = 1; s < P; ++s) {
        const int from = b.mod(r - s), id = piece_id(from, j);
        if (piece_rows(id) > 0) receive_and_multiply(id, from, batch);
      }
    }
    return;
  }

  // The two rings (or one). For direction d, the b-th batch sends the b-th
  // entry of my send list to the next rank and receives the b-th entry of my
  // receive list from the previous one; the next rank's b-th receive is my
  // b-th send, so batches pair up across ranks.
  struct Ring {
    int next, prev;
    std::vector<int> recv_ids;   // in arrival order
    std::vector<int> recv_step;  // step index per arrival, -1 if empty
    std::vector<int> scale_recv_step;  // scaled rows: the receive of their scales
  };
  std::vector<Ring> rings;
  const bool both_ways = o.direction == Direction::Bidirectional;
  const int forward_hops = both_ways ? P / 2 : o.direction == Direction::Forward ? P - 1 : 0;
  for (const Direction d : {Direction::Forward, Direction::Backward}) {
    const int hops = d == Direction::Forward ? forward_hops : P - 1 - forward_hops;
    if (hops == 0) continue;
    const int step = d == Direction::Backward ? -1 : 1;
    Ring ring{b.mod(r + step), b.mod(r - step), {}, {}, {}};
    for (int hop = 1; hop <= hops; ++hop)
      for (int j = 0; j < c; ++j) ring.recv_ids.push_back(piece_id(b.mod(r - step * hop), j));
    ring.recv_step.assign(ring.recv_ids.size(), -1);
    ring.scale_recv_step.assign(ring.recv_ids.size(), -1);
    rings.push_back(std::move(ring));
  }

  std::size_t batches = 0;
  for (const Ring& ring : rings) batches = std::max(batches, ring.recv_ids.size());
  for (std::size_t n = 0; n < batches; ++n) {
    for (Ring& ring : rings) {
      if (n >= ring.recv_ids.size()) continue;
      const int batch = b.next_batch();
      // Send: first my own c chunks, then forward what arrived (all but the
      // last hop's chunks, which the next rank gets from the other side or
      // already owns).
      const std::size_t own = static_cast<std::size_t>(c);
      if (n < own) {
        const int j = static_cast<int>(n);
        if (piece_rows(piece_id(r, j)) > 0) send_own(j, ring.next, batch, "");
      } else {
        const std::size_t arrived = n - own;
        const int id = ring.recv_ids[arrived];
        if (piece_rows(id) > 0) {
          b.add_step(SendOp{gather_region(id), ring.next, id}, kCommLane, {ring.recv_step[arrived]},
                     "forward " + what(id), batch);
          if (scaled)
            b.add_step(SendOp{scale_slot[id], ring.next, scale_tag_base + id}, kCommLane,
                       {ring.scale_recv_step[arrived]}, "forward scales of " + what(id), batch);
        }
      }
      const int id = ring.recv_ids[n];
      if (piece_rows(id) > 0)
        std::tie(ring.recv_step[n], ring.scale_recv_step[n]) = receive_and_multiply(id, ring.prev, batch);
    }
  }
}

}  // namespace weave::internal::plan
