// GEMM-AR in one exchange over transports that move messages (the copy
// engines, NCCL, MPI, UCX): the "one-shot" variant of the direct algorithm.
//
// The two-shot direct algorithm (reduction_direct.cpp) sums each owner's
// rows and then sends the finished rows back out, so the second half of the
// bytes can leave only after the owner's own products and sums: on 2 H200s
// its trace showed the finished rows' sends running back to back after the
// last GEMM (doc/performance.md). Over two ranks both variants move the
// same bytes per rank (M x N in C's type), but here nothing waits for a
// sum before it travels: every rank makes its whole product, piece by piece
// (the group's chunks of C's rows, in one order on every rank), sends each
// piece to every other rank as soon as it is made, and sums every rank's
// product of that piece into its own C once they are in. After the last
// GEMM only the last piece's transfer and sum are left. Over P ranks it
// moves (P-1) x M x N per rank where two-shot moves 2 (P-1) / P x M x N, so
// the planner takes it over two ranks only (WEAVE_ALL_REDUCE overrides).
//
// Every rank's product is rounded to the type it travels in (the own one
// too) and the terms are summed in rank order, in the accumulation type, in
// the pass that finishes C (alpha on the products, beta * C and bias once):
// every rank computes the same bits from the same terms, so C is identical
// on every rank, as the two-shot copy makes it.
//
// The own products live in a few reused slots (a slot takes the next piece
// once its previous piece is sent and summed); every received piece has its
// own slot, so no receive waits for a reader.
#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "plan/schedule_builder.hpp"

namespace weave::internal::plan {

void build_all_reduce_one_shot(ScheduleBuilder& b) {
  const Problem& p = b.problem();
  const ScheduleOptions& o = b.options();
  const int P = b.P(), r = b.rank(), c = o.chunks_per_shard;
  if (p.operation != Operation::GemmAr) fail(WEAVE_ERROR_INTERNAL, "the one-shot exchange is GEMM-AR's");
  const Split pieces = p.m_split.refine(c, p.chunk_unit);  // piece q * c + j: chunk j of rank q's rows of C
  const int piece_count = P * c;
  const DType wire = product_type(p, o);
  auto rows_of = [&](int id) { return pieces.count(id); };
  auto label = [&](const std::string& what, int id) { return what + " piece " + std::to_string(id); };
  int64_t max_rows = 0;
  for (int id = 0; id < piece_count; ++id) max_rows = std::max(max_rows, rows_of(id));

  // One slot more than the pieces in flight at once (the one being made,
  // the one travelling, the one being summed).
  const int window = std::max(2, std::min(piece_count, o.slot_window + 1));
  std::vector<int> own_slots;
  for (int w = 0; w < window; ++w)
    own_slots.push_back(b.add_workspace("own product slot " + std::to_string(w), max_rows, p.n, wire, Order::RowMajor));
  // What must finish before a slot is written again: its previous piece's
  // sends and sum.
  std::vector<std::vector<int>> slot_readers(static_cast<std::size_t>(window));

  struct Made {
    int id = -1;
    Region own;
    int gemm = -1;
    std::vector<std::pair<Region, int>> received;  // (slot, receive step) by rank, mine excluded
    std::vector<int> sends;
    int slot = -1;
  };
  auto emit_sum = [&](Made& m) {
    std::vector<Region> sources;
    std::vector<int> deps{m.gemm};
    std::size_t next_received = 0;
    for (int q = 0; q < P; ++q) {
      if (q == r) {
        sources.push_back(m.own);
        continue;
      }
      const auto& [slot, recv] = m.received.at(next_received++);
      sources.push_back(slot);
      deps.push_back(recv);
    }
    const Region c_rows{kBufferC, pieces.offset(m.id), 0, rows_of(m.id), p.n};
    const int sum = b.add_sum(b.finish(c_rows, m.own), sources, deps, b.next_compute_lane(),
                              label("sum every rank's product of", m.id));
    auto& readers = slot_readers[static_cast<std::size_t>(m.slot)];
    readers = m.sends;
    readers.push_back(sum);
  };

  int next_slot = 0;
  Made previous;
  for (int id = 0; id < piece_count; ++id) {
    if (rows_of(id) == 0) continue;
    Made m;
    m.id = id;
    m.slot = next_slot++ % window;
    m.own = Region{own_slots[static_cast<std::size_t>(m.slot)], 0, 0, rows_of(id), p.n};
    int scales_ready = -1;
    const GemmOp g = b.gemm_of_a_rows(pieces.offset(id), rows_of(id), m.own, Scalar::Alpha, Scalar::Zero,
                                      &scales_ready);
    std::vector<int> deps = slot_readers[static_cast<std::size_t>(m.slot)];
    deps.push_back(scales_ready);
    m.gemm = b.add_step(g, b.next_compute_lane(), deps, label("product of", id));
    // Received slots in rank order (mine left out), filled by the batch.
    std::vector<Region> from_rank(static_cast<std::size_t>(P));
    std::vector<int> recv_of(static_cast<std::size_t>(P), -1);
    const int batch = b.next_batch();
    for (int s = 1; s < P; ++s) {
      const int to = b.mod(r + s), from = b.mod(r - s);
      m.sends.push_back(b.add_step(SendOp{m.own, to, id}, kCommLane, {m.gemm}, label("send product of", id), batch));
      const Region slot{b.add_workspace("product of rank " + std::to_string(from) + " piece " + std::to_string(id),
                                        rows_of(id), p.n, wire, Order::RowMajor),
                        0, 0, rows_of(id), p.n};
      from_rank[static_cast<std::size_t>(from)] = slot;
      recv_of[static_cast<std::size_t>(from)] =
          b.add_step(RecvOp{slot, from, id}, kCommLane, {},
                     label("receive rank " + std::to_string(from) + "'s product of", id), batch);
    }
    for (int q = 0; q < P; ++q)
      if (q != r) m.received.emplace_back(from_rank[static_cast<std::size_t>(q)], recv_of[static_cast<std::size_t>(q)]);
    // The previous piece's sum after this piece's GEMM, so a lane does not
    // wait for data while a GEMM could run.
    if (previous.id >= 0) emit_sum(previous);
    previous = std::move(m);
  }
  if (previous.id >= 0) emit_sum(previous);
}

}  // namespace weave::internal::plan
