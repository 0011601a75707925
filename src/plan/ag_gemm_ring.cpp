// AG-GEMM as a ring (DESIGN.md section 3). Rank r multiplies its own rows of
// op(A) first, so the first GEMM starts before any byte arrives; meanwhile
// every chunk of op(A) walks the ring, each rank forwarding what it received
// and multiplying it. Each shard is cut into chunks_per_shard chunks, so a
// chunk can be forwarded while the previous one is multiplied.
//
// A bidirectional ring sends every shard the short way round: forward to the
// ranks up to floor(P/2) places after its owner, backward to the others. Both
// directions of every link carry a whole shard at each step, and the last
// shard arrives after floor(P/2) hops instead of P-1, which shortens the
// chain of transfers that precedes the last GEMM.
//
// Every received chunk has its own place in the gather buffer, so no receive
// waits for a reader of an earlier chunk, and the buffer ends up holding the
// whole gathered op(A) (returned to the caller on request).
#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "plan/schedule_builder.hpp"

namespace weave::internal::plan {

void build_ag_gemm_ring(ScheduleBuilder& b) {
  const Problem& p = b.problem();
  const ScheduleOptions& o = b.options();
  const int P = b.P(), r = b.rank(), c = o.chunks_per_shard;
  const Split pieces = p.m_split.refine(c);  // piece q * c + j: chunk j of rank q's rows

  // The gather buffer stores op(A) rows contiguously: row-major M x K for
  // op N (A's rows), column-major K x M for op T (A's columns).
  const Order gather_order = p.op_a == Op::N ? Order::RowMajor : Order::ColMajor;
  const int gather = p.op_a == Op::N ? b.add_workspace("gathered op(A)", p.m, p.k, p.dtype, gather_order)
                                     : b.add_workspace("gathered op(A)", p.k, p.m, p.dtype, gather_order);
  const Region c_all = b.whole(kBufferC);
  const Region b_all = b.whole(kBufferB);

  auto piece_id = [&](int q, int j) { return q * c + j; };
  auto piece_rows = [&](int id) { return pieces.count(id); };
  auto gather_region = [&](int id) { return b.op_rows(gather, p.op_a, pieces.offset(id), pieces.count(id)); };
  auto own_region = [&](int j) {
    const int id = piece_id(r, j);
    return b.op_rows(kBufferA, p.op_a, pieces.offset(id) - p.m_split.offset(r), pieces.count(id));
  };

  // The multiplication of rows [row0, row0 + rows) of op(A) (already local
  // in `a_region`), their bias, and their copy into the caller's gathered A.
  auto multiply = [&](const std::string& what, int64_t row0, int64_t rows, const Region& a_region, int dep) {
    const int lane = b.next_compute_lane();
    const Region c_rows{kBufferC, row0, 0, rows, c_all.cols};
    if (!c_rows.empty()) {
      GemmOp g{a_region, p.op_a, b_all, p.op_b, c_rows, Scalar::Alpha, Scalar::Beta};
      const int gemm = b.add_step(g, lane, {dep}, "gemm " + what);
      if (p.has_bias) b.add_step(b.add_bias(c_rows), lane, {gemm}, "bias " + what);
    }
    if (o.gathered_output) {
      const Region out = b.op_rows(kBufferGathered, p.op_a, row0, rows);
      b.add_step(b.copy(out, a_region), lane, {dep}, "gathered output " + what);
    }
  };
  auto chunk_name = [&](int id) { return "chunk " + std::to_string(id % c) + " of rank " + std::to_string(id / c); };

  // Own chunks: sent straight from A when their bytes already look like a
  // gather-buffer chunk, otherwise packed first.
  std::vector<int> own_send_dep(c, -1);
  std::vector<bool> own_packed(c, false);
  for (int j = 0; j < c; ++j) {
    const int id = piece_id(r, j);
    if (piece_rows(id) == 0 || b.same_bytes_as_tight(own_region(j), gather_order)) continue;
    own_packed[j] = true;
    own_send_dep[j] = b.add_step(b.copy(gather_region(id), own_region(j)), 0, {},
                                 "pack own chunk " + std::to_string(j));
  }
  for (int j = 0; j < c; ++j) {
    const int id = piece_id(r, j);
    if (piece_rows(id) > 0) multiply(chunk_name(id), pieces.offset(id), piece_rows(id), own_region(j), -1);
  }

  // The two rings (or one). For direction d, the b-th batch sends the b-th
  // transfer of my list to the next rank and receives the b-th transfer of
  // the previous rank's list; both lists enumerate (hop, chunk, part) in the
  // same order, so batches pair up across ranks. At hop h a rank sends the
  // chunks of the shard it received at hop h - 1 (its own at hop 1).
  //
  // The last hop's chunks travel in o.last_hop_parts parts: what arrives
  // last is all that the final GEMMs wait for, so cutting only those
  // transfers lets the last GEMM start on half a chunk while the other half
  // travels, without paying the per-transfer costs on every hop.
  struct Transfer {
    int hop, id, part, parts;
  };
  struct Ring {
    int next, prev, step;
    std::vector<Transfer> transfers;
    std::map<int, int> whole_recv;  // piece id -> receive step of a whole (unsplit) chunk
  };
  std::vector<Ring> rings;
  const bool both_ways = o.direction == Direction::Bidirectional;
  const int forward_hops = both_ways ? P / 2 : o.direction == Direction::Forward ? P - 1 : 0;
  const int tail_parts = std::max(1, o.last_hop_parts);
  for (const Direction d : {Direction::Forward, Direction::Backward}) {
    const int hops = d == Direction::Forward ? forward_hops : P - 1 - forward_hops;
    if (hops == 0) continue;
    const int step = d == Direction::Backward ? -1 : 1;
    Ring ring{b.mod(r + step), b.mod(r - step), step, {}, {}};
    for (int hop = 1; hop <= hops; ++hop) {
      const int parts = hop == hops ? tail_parts : 1;
      for (int j = 0; j < c; ++j)
        for (int t = 0; t < parts; ++t) ring.transfers.push_back(Transfer{hop, j, t, parts});
    }
    rings.push_back(std::move(ring));
  }
  // Rows [first, first + count) of part t of a chunk of `rows` rows.
  auto part_of = [](int64_t rows, int t, int parts) {
    const Split split = Split::balanced(rows, parts);
    return std::pair<int64_t, int64_t>{split.offset(t), split.count(t)};
  };
  auto tag_of = [&](int id, int t) { return id * tail_parts + t; };

  std::size_t batches = 0;
  for (const Ring& ring : rings) batches = std::max(batches, ring.transfers.size());
  for (std::size_t n = 0; n < batches; ++n) {
    for (Ring& ring : rings) {
      if (n >= ring.transfers.size()) continue;
      const Transfer& tr = ring.transfers[n];
      const int batch = b.next_batch();
      // Send: at hop 1 my own chunk, later the chunk that arrived one hop
      // earlier (whole: only the last hop is cut in parts).
      const int send_id = piece_id(b.mod(r - ring.step * (tr.hop - 1)), tr.id);
      if (piece_rows(send_id) > 0) {
        const auto [first, count] = part_of(piece_rows(send_id), tr.part, tr.parts);
        if (count > 0) {
          if (tr.hop == 1) {
            const int64_t own_row0 = pieces.offset(send_id) - (own_packed[tr.id] ? 0 : p.m_split.offset(r));
            const Region src = b.op_rows(own_packed[tr.id] ? gather : kBufferA, p.op_a, own_row0 + first, count);
            b.add_step(SendOp{src, ring.next, tag_of(send_id, tr.part)}, kCommLane, {own_send_dep[tr.id]},
                       "send own chunk " + std::to_string(tr.id), batch);
          } else {
            const Region src = b.op_rows(gather, p.op_a, pieces.offset(send_id) + first, count);
            b.add_step(SendOp{src, ring.next, tag_of(send_id, tr.part)}, kCommLane, {ring.whole_recv.at(send_id)},
                       "forward " + chunk_name(send_id), batch);
          }
        }
      }
      const int recv_id = piece_id(b.mod(r - ring.step * tr.hop), tr.id);
      if (piece_rows(recv_id) == 0) continue;
      const auto [first, count] = part_of(piece_rows(recv_id), tr.part, tr.parts);
      if (count == 0) continue;
      const int64_t row0 = pieces.offset(recv_id) + first;
      const Region where = b.op_rows(gather, p.op_a, row0, count);
      const std::string what =
          chunk_name(recv_id) + (tr.parts > 1 ? " part " + std::to_string(tr.part) : std::string());
      const int recv =
          b.add_step(RecvOp{where, ring.prev, tag_of(recv_id, tr.part)}, kCommLane, {}, "receive " + what, batch);
      if (tr.parts == 1) ring.whole_recv[recv_id] = recv;
      multiply(what, row0, count, where, recv);
    }
  }
}

}  // namespace weave::internal::plan
