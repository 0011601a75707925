// GEMM-RS and GEMM-AR as rings (DESIGN.md section 3).
//
// Reduce-scatter phase: the partial sum of row block b starts on rank b+1
// (forward ring), and every rank on the way adds its own product
// op(A)[rows of b] * op(B) to it before passing it on, so the GEMM for the
// next block runs while the previous partial sum travels. The owner b adds
// the last product and finishes: C_b = sum + beta * C_b + bias, the only
// place beta and bias enter. Partial sums of 16-bit types are float32 and are
// rounded once, in that final step.
//
// GEMM-AR continues with an all-gather phase: each owner's finished rows walk
// the ring once more and are copied into C on every other rank.
//
// Blocks are cut into chunks_per_shard chunks, each with its own chain of
// partial-sum slots; a slot is reused slot_window steps later, after its
// previous contents have been sent on.
#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "plan/schedule_builder.hpp"

namespace weave::internal::plan {

namespace {

// A chain: one chunk index travelling one way round the ring.
struct Chain {
  Direction direction;
  int chunk;
  int next, prev;
  std::vector<int> slots;                  // workspace buffers, used round-robin
  std::vector<std::vector<int>> slot_users;  // steps that must finish before a slot is reused
  int last_step = -1;                      // step producing the chain's current region
  Region current{};                        // region the chain's data is in
};

}  // namespace

void build_reduction_ring(ScheduleBuilder& b) {
  const Problem& p = b.problem();
  const ScheduleOptions& o = b.options();
  const int P = b.P(), r = b.rank(), c = o.chunks_per_shard;
  const bool all_reduce = p.operation == Operation::GemmAr;
  const Split pieces = p.m_split.refine(c, p.chunk_unit);  // piece q * c + j: chunk j of rank q's rows of C
  const DType acc = o.reduce_in_output_type ? p.dtype : accumulation_type(p.dtype);
  // At least two slots: with one, the receive of step s+1 would wait for the
  // send of step s from the same slot, and both sit in one batch.
  const int window = std::max(2, std::min(P, o.slot_window));
  auto piece_id = [&](int q, int j) { return q * c + j; };
  auto rows_of = [&](int id) { return pieces.count(id); };

  std::vector<Chain> chains;
  for (const DirectionChunks& dc : split_chunks_by_direction(o.direction, c)) {
    const int step = dc.direction == Direction::Backward ? -1 : 1;
    for (int j : dc.chunks) {
      Chain chain{dc.direction, j, b.mod(r + step), b.mod(r - step), {}, {}, -1, {}};
      int64_t max_rows = 0;
      for (int q = 0; q < P; ++q) max_rows = std::max(max_rows, rows_of(piece_id(q, j)));
      for (int w = 0; w < window; ++w)
        chain.slots.push_back(b.add_workspace("partial sums chunk " + std::to_string(j) + " slot " +
                                                  std::to_string(w),
                                              max_rows, p.n, acc, Order::RowMajor));
      chain.slot_users.assign(window, {});
      chains.push_back(std::move(chain));
    }
  }
  // Rank whose block a chain carries at ring step s (step P-1: my own).
  auto block_at = [&](const Chain& ch, int s) {
    return ch.direction == Direction::Backward ? b.mod(r + 1 + s) : b.mod(r - 1 - s);
  };
  auto slot_region = [&](Chain& ch, int s, int id) {
    return Region{ch.slots[s % window], 0, 0, rows_of(id), p.n};
  };
  auto take_slot = [&](Chain& ch, int s) {
    std::vector<int> users = std::move(ch.slot_users[s % window]);
    ch.slot_users[s % window].clear();
    return users;
  };
  auto label = [&](const char* what, int id) {
    return std::string(what) + " chunk " + std::to_string(id % c) + " of rank " + std::to_string(id / c) + "'s rows";
  };

  // Reduce-scatter phase. The batch of step s sends step s's partial sum and
  // receives step s+1's, matching the neighbours' batch s.
  std::vector<int> finished(chains.size(), -1);  // AR: step that wrote my rows into C
  std::vector<int> pending_recv(chains.size(), -1);
  for (int s = 0; s < P; ++s) {
    for (std::size_t n = 0; n < chains.size(); ++n) {
      Chain& ch = chains[n];
      const int id = piece_id(block_at(ch, s), ch.chunk);
      if (rows_of(id) > 0) {
        const Region slot = slot_region(ch, s, id);
        std::vector<int> deps = s == 0 ? take_slot(ch, s) : std::vector<int>{pending_recv[n]};
        int scales_ready = -1;
        const GemmOp g = b.gemm_of_a_rows(pieces.offset(id), rows_of(id), slot, Scalar::Alpha,
                                          s == 0 ? Scalar::Zero : Scalar::One, &scales_ready);
        deps.push_back(scales_ready);
        const int lane = b.next_compute_lane();
        const int gemm = b.add_step(g, lane, deps, label("partial product for", id));
        ch.slot_users[s % window].push_back(gemm);
        if (s == P - 1) {
          // My own rows: the only place beta * C and bias enter.
          const int64_t row0 = pieces.offset(id) - (all_reduce ? 0 : p.m_split.offset(r));
          const Region c_rows{kBufferC, row0, 0, rows_of(id), p.n};
          finished[n] = b.add_step(b.finish(c_rows, slot), lane, {gemm}, label("finish", id));
          ch.slot_users[s % window].push_back(finished[n]);
        }
        ch.last_step = gemm;
      }
      if (s == P - 1) continue;
      const int batch = b.next_batch();
      if (rows_of(id) > 0) {
        const int send = b.add_step(SendOp{slot_region(ch, s, id), ch.next, id}, kCommLane, {ch.last_step},
                                    label("send partial sum of", id), batch);
        ch.slot_users[s % window].push_back(send);
      }
      const int next_id = piece_id(block_at(ch, s + 1), ch.chunk);
      pending_recv[n] = -1;
      if (rows_of(next_id) > 0) {
        pending_recv[n] = b.add_step(RecvOp{slot_region(ch, s + 1, next_id), ch.prev, next_id}, kCommLane,
                                     take_slot(ch, s + 1), label("receive partial sum of", next_id), batch);
        ch.slot_users[(s + 1) % window].push_back(pending_recv[n]);
      }
    }
  }
  if (!all_reduce) return;

  // All-gather phase of GEMM-AR: finished rows travel the ring in the output
  // type; hop t carries the rows of the rank t places back.
  const int tag_base = P * c;
  std::vector<std::vector<int>> ag_slots(chains.size());
  std::vector<std::vector<std::vector<int>>> ag_users(chains.size());
  for (std::size_t n = 0; n < chains.size(); ++n) {
    int64_t max_rows = 0;
    for (int q = 0; q < P; ++q) max_rows = std::max(max_rows, rows_of(piece_id(q, chains[n].chunk)));
    for (int w = 0; w < window; ++w)
      ag_slots[n].push_back(b.add_workspace("finished rows chunk " + std::to_string(chains[n].chunk) + " slot " +
                                                std::to_string(w),
                                            max_rows, p.n, p.dtype, Order::RowMajor));
    ag_users[n].assign(window, {});
  }
  auto origin_at = [&](const Chain& ch, int t) {
    return ch.direction == Direction::Backward ? b.mod(r + t) : b.mod(r - t);
  };
  std::vector<Region> in_flight(chains.size());
  std::vector<int> in_flight_step(chains.size(), -1);
  for (std::size_t n = 0; n < chains.size(); ++n) {
    Chain& ch = chains[n];
    const int id = piece_id(r, ch.chunk);
    if (rows_of(id) == 0) continue;
    const Region mine{kBufferC, pieces.offset(id), 0, rows_of(id), p.n};
    if (b.same_bytes_as_tight(mine, Order::RowMajor)) {
      in_flight[n] = mine;
      in_flight_step[n] = finished[n];
    } else {
      const Region slot{ag_slots[n][0], 0, 0, rows_of(id), p.n};
      in_flight[n] = slot;
      in_flight_step[n] = b.add_step(b.copy(slot, mine), b.next_compute_lane(), {finished[n]},
                                     label("pack finished", id));
      ag_users[n][0].push_back(in_flight_step[n]);
    }
  }
  for (int t = 0; t + 1 < P; ++t) {
    for (std::size_t n = 0; n < chains.size(); ++n) {
      Chain& ch = chains[n];
      const int batch = b.next_batch();
      const int id = piece_id(origin_at(ch, t), ch.chunk);
      if (rows_of(id) > 0) {
        const int send = b.add_step(SendOp{in_flight[n], ch.next, tag_base + id}, kCommLane, {in_flight_step[n]},
                                    label("send finished", id), batch);
        if (in_flight[n].buffer != kBufferC) ag_users[n][t % window].push_back(send);
      }
      const int next_id = piece_id(origin_at(ch, t + 1), ch.chunk);
      if (rows_of(next_id) == 0) continue;
      const int w = (t + 1) % window;
      const Region slot{ag_slots[n][w], 0, 0, rows_of(next_id), p.n};
      std::vector<int> deps = std::move(ag_users[n][w]);
      ag_users[n][w].clear();
      const int recv = b.add_step(RecvOp{slot, ch.prev, tag_base + next_id}, kCommLane, deps,
                                  label("receive finished", next_id), batch);
      const Region c_rows{kBufferC, pieces.offset(next_id), 0, rows_of(next_id), p.n};
      const int unpack = b.add_step(b.copy(c_rows, slot), b.next_compute_lane(), {recv}, label("unpack finished", next_id));
      ag_users[n][w] = {recv, unpack};
      in_flight[n] = slot;
      in_flight_step[n] = recv;
    }
  }
}

}  // namespace weave::internal::plan
