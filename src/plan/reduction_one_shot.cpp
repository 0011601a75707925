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
// moves (P-1) x M x N per rank where two-shot moves 2 (P-1) / P x M x N.
// It runs where WEAVE_ALL_REDUCE=one_shot asks for it: over the copy
// engines of 2 H100s it measured the same as two-shot within the noise
// (doc/performance.md), so the planner keeps two-shot over messages.
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
    int slot = -1;
    int gemm = -1;
    std::vector<int> sends;
    // Every rank's product of the piece, by rank (mine: my own slot), and
    // the receive step that fills each other rank's (-1 for mine).
    std::vector<Region> terms;
    std::vector<int> receives;
  };
  auto emit_sum = [&](const Made& m) {
    const Region& own = m.terms[static_cast<std::size_t>(r)];
    std::vector<int> deps = m.receives;
    deps.push_back(m.gemm);
    const Region c_rows{kBufferC, pieces.offset(m.id), 0, rows_of(m.id), p.n};
    const int sum = b.add_sum(b.finish(c_rows, own), m.terms, deps, b.next_compute_lane(),
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
    const Region own{own_slots[static_cast<std::size_t>(m.slot)], 0, 0, rows_of(id), p.n};
    m.terms.assign(static_cast<std::size_t>(P), own);
    m.receives.assign(static_cast<std::size_t>(P), -1);
    int scales_ready = -1;
    const GemmOp g = b.gemm_of_a_rows(pieces.offset(id), rows_of(id), own, Scalar::Alpha, Scalar::Zero,
                                      &scales_ready);
    std::vector<int> deps = slot_readers[static_cast<std::size_t>(m.slot)];
    deps.push_back(scales_ready);
    m.gemm = b.add_step(g, b.next_compute_lane(), deps, label("product of", id));
    const int batch = b.next_batch();
    for (int s = 1; s < P; ++s) {
      const int to = b.mod(r + s), from = b.mod(r - s);
      m.sends.push_back(b.add_step(SendOp{own, to, id}, kCommLane, {m.gemm}, label("send product of", id), batch));
      const Region slot{b.add_workspace("product of rank " + std::to_string(from) + " piece " + std::to_string(id),
                                        rows_of(id), p.n, wire, Order::RowMajor),
                        0, 0, rows_of(id), p.n};
      m.terms[static_cast<std::size_t>(from)] = slot;
      m.receives[static_cast<std::size_t>(from)] =
          b.add_step(RecvOp{slot, from, id}, kCommLane, {},
                     label("receive rank " + std::to_string(from) + "'s product of", id), batch);
    }
    // The previous piece's sum after this piece's GEMM, so a lane does not
    // wait for data while a GEMM could run.
    if (previous.id >= 0) emit_sum(previous);
    previous = std::move(m);
  }
  if (previous.id >= 0) emit_sum(previous);
}

}  // namespace weave::internal::plan
