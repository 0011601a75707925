// Pipelined collectives (DESIGN.md section 3): the sequential algorithm's
// one collective cut into a chain of per-chunk collectives, each overlapped
// with the GEMMs of another chunk. Over a network the collective library's
// own algorithms (NCCL's topology-aware rings and trees, MPI's) move the
// bytes faster than point-to-point rings, and this keeps them.
//
// Every rank's shard is cut into chunks_per_shard pieces; chunk j is piece j
// of every rank's shard, in rank order, so each collective involves every
// rank with a balanced share. Chunk-major workspace keeps each chunk
// contiguous (what a collective needs).
//
//   AG-GEMM: the all-gathers of every chunk start at once (chunk j + 1
//     travels while chunk j is multiplied); each rank multiplies its own
//     rows first, straight from A, then every other rank's piece of chunk j
//     once chunk j has arrived.
//   GEMM-RS / GEMM-AR: the products of chunk j's rows (P GEMMs, one per
//     owner's piece), then chunk j's reduction while chunk j + 1's GEMMs
//     run; the finishing pass of chunk j (the only place beta * C and bias
//     enter) is emitted after chunk j + 1's GEMMs, so a host thread never
//     waits for a reduction while a GEMM could run. What travels follows
//     plan/wire.hpp: partial sums reduced by the library's reduce-scatter or
//     all-reduce (f32, f64, or a type asked for; over two ranks also 16-bit
//     products, where the library sums 16-bit types), or 16-bit products in
//     C's type exchanged in one batch per chunk and summed by their owner in
//     float32 (the all-reduce then all-gathers the finished rows in C's
//     type).
#include <string>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "plan/schedule_builder.hpp"
#include "plan/wire.hpp"

namespace weave::internal::plan {

namespace {

// Chunk j = piece j of every rank's shard, in rank order.
class Chunks {
 public:
  Chunks(const Split& shards, int chunks, int64_t unit) : pieces_(shards.refine(chunks, unit)), P_(shards.parts()), c_(chunks) {
    first_.assign(static_cast<std::size_t>(c_) + 1, 0);
    for (int j = 0; j < c_; ++j) {
      int64_t rows = 0;
      for (int q = 0; q < P_; ++q) rows += count(q, j);
      first_[static_cast<std::size_t>(j) + 1] = first_[static_cast<std::size_t>(j)] + rows;
    }
  }
  int64_t count(int q, int j) const { return pieces_.count(q * c_ + j); }
  int64_t offset(int q, int j) const { return pieces_.offset(q * c_ + j); }  // in the whole dimension
  int64_t rows(int j) const { return first_[static_cast<std::size_t>(j) + 1] - first_[static_cast<std::size_t>(j)]; }
  int64_t first(int j) const { return first_[static_cast<std::size_t>(j)]; }  // in a chunk-major buffer
  int64_t within(int q, int j) const {  // q's piece, from the start of chunk j
    int64_t at = 0;
    for (int before = 0; before < q; ++before) at += count(before, j);
    return at;
  }
  int tag(int q, int j) const { return q * c_ + j; }
  std::vector<int64_t> counts(int j, int64_t per_row) const {
    std::vector<int64_t> out;
    for (int q = 0; q < P_; ++q)
      out.push_back(checked_mul(count(q, j), per_row, "the elements of rank ", q, "'s piece of chunk ", j));
    return out;
  }

 private:
  Split pieces_;
  int P_, c_;
  std::vector<int64_t> first_;
};

std::string chunk_name(int j) { return "chunk " + std::to_string(j); }
std::string piece_name(int q, int j) { return "rank " + std::to_string(q) + "'s piece of chunk " + std::to_string(j); }

void pipelined_ag_gemm(ScheduleBuilder& b) {
  const Problem& p = b.problem();
  if (p.scaled() || p.quantized())
    fail(WEAVE_ERROR_INTERNAL, "the pipelined AG-GEMM gathers unscaled rows (the planner runs scaled ones in a ring)");
  const ScheduleOptions& o = b.options();
  const int P = b.P(), r = b.rank(), c = o.chunks_per_shard;
  const Chunks chunks(p.m_split, c, p.chunk_unit);
  // Chunk-major gathered op(A): row-major M x K for op N, column-major K x M
  // for op T, so that every chunk (and every piece) is contiguous.
  const Order gather_order = p.op_a == Op::N ? Order::RowMajor : Order::ColMajor;
  const int gather = p.op_a == Op::N ? b.add_workspace("gathered op(A), chunk-major", p.m, p.k, p.dtype, gather_order)
                                     : b.add_workspace("gathered op(A), chunk-major", p.k, p.m, p.dtype, gather_order);
  auto slot = [&](int q, int j) {
    return b.op_rows(gather, p.op_a, chunks.first(j) + chunks.within(q, j), chunks.count(q, j));
  };
  auto own = [&](int j) {
    return b.op_rows(kBufferA, p.op_a, chunks.offset(r, j) - p.m_split.offset(r), chunks.count(r, j));
  };
  const Region c_all = b.whole(kBufferC), b_all = b.whole(kBufferB);

  // Chunk j's all-gather; my piece goes straight from A when its bytes
  // already look like the chunk buffer's, else it is packed into its slot.
  std::vector<int> gathered(static_cast<std::size_t>(c), -1);
  for (int j = 0; j < c; ++j) {
    if (checked_mul(chunks.rows(j), p.k, "the elements of ", chunk_name(j)) == 0) continue;  // alike on every rank
    Region send = slot(r, j);
    int pack = -1;
    if (chunks.count(r, j) > 0) {
      if (b.same_bytes_as_tight(own(j), gather_order))
        send = own(j);
      else
        pack = b.add_step(b.copy(slot(r, j), own(j)), 0, {}, "pack own piece of " + chunk_name(j));
    }
    const Region all = b.op_rows(gather, p.op_a, chunks.first(j), chunks.rows(j));
    gathered[static_cast<std::size_t>(j)] =
        b.add_step(CollectiveOp{CollectiveKind::AllGather, send, all, chunks.counts(j, p.k)}, kCommLane, {pack},
                   "all-gather " + chunk_name(j));
  }

  // One piece of op(A), local in `a_rows`: its rows of C, their bias, and
  // its copy into the caller's gathered A.
  auto multiply = [&](int q, int j, const Region& a_rows, int dep) {
    const int lane = b.next_compute_lane();
    const Region c_rows{kBufferC, chunks.offset(q, j), 0, chunks.count(q, j), c_all.cols};
    if (!c_rows.empty()) {
      const int gemm = b.add_step(GemmOp{a_rows, p.op_a, b_all, p.op_b, c_rows, Scalar::Alpha, Scalar::Beta, {}, {}}, lane,
                                  {dep}, "gemm " + piece_name(q, j));
      if (p.has_bias) b.add_step(b.add_bias(c_rows), lane, {gemm}, "bias " + piece_name(q, j));
    }
    if (o.gathered_output)
      b.add_step(b.copy(b.op_rows(kBufferGathered, p.op_a, chunks.offset(q, j), chunks.count(q, j)), a_rows), lane,
                 {dep}, "gathered output " + piece_name(q, j));
  };
  for (int j = 0; j < c; ++j)
    if (chunks.count(r, j) > 0) multiply(r, j, own(j), -1);
  for (int j = 0; j < c; ++j)
    for (int s = 1; s < P; ++s) {
      const int q = b.mod(r + s);
      if (chunks.count(q, j) > 0) multiply(q, j, slot(q, j), gathered[static_cast<std::size_t>(j)]);
    }
}

void pipelined_reduction(ScheduleBuilder& b) {
  const Problem& p = b.problem();
  const ScheduleOptions& o = b.options();
  const int P = b.P(), r = b.rank(), c = o.chunks_per_shard;
  const bool all_reduce = p.operation == Operation::GemmAr;
  const ReductionWire wire = reduction_wire(p, o, Algorithm::Pipelined);
  const Chunks chunks(p.m_split, c, p.chunk_unit);
  auto c_rows = [&](int q, int j) {
    return Region{kBufferC, chunks.offset(q, j) - (all_reduce ? 0 : p.m_split.offset(r)), 0, chunks.count(q, j), p.n};
  };

  // Per chunk: the products (or partial sums) of its rows, chunk-major.
  std::vector<int> made(static_cast<std::size_t>(c));
  std::vector<std::vector<int>> gemm_of(static_cast<std::size_t>(c), std::vector<int>(static_cast<std::size_t>(P), -1));
  for (int j = 0; j < c; ++j)
    made[static_cast<std::size_t>(j)] =
        b.add_workspace((wire.products || wire.collective_sums_products ? "products " : "partial sums ") + chunk_name(j),
                        chunks.rows(j), p.n, wire.type, Order::RowMajor);
  auto piece = [&](int q, int j) {
    return Region{made[static_cast<std::size_t>(j)], chunks.within(q, j), 0, chunks.count(q, j), p.n};
  };
  auto chunk_elements = [&](int j) { return checked_mul(chunks.rows(j), p.n, "the elements of ", chunk_name(j)); };

  // Per chunk, filled as the stages are emitted.
  std::vector<int> reduced(static_cast<std::size_t>(c), -1);          // the collective
  std::vector<Region> my_sum(static_cast<std::size_t>(c));            // RS by the collective: my rows
  std::vector<std::vector<std::pair<Region, int>>> arrived(static_cast<std::size_t>(c));  // products: received
  std::vector<int> finished(static_cast<std::size_t>(c), -1);         // products: my rows of C done
  std::vector<int> gathered(static_cast<std::size_t>(c), -1);         // products AR: finished rows gathered
  std::vector<int> gathered_buffer(static_cast<std::size_t>(c), -1);

  // Stage 1: the GEMMs of chunk j (the pieces that leave first), then its
  // reduction on the communication lane.
  auto multiply_and_reduce = [&](int j) {
    for (int s = 1; s <= P; ++s) {
      const int q = b.mod(r + s);  // my own piece last
      if (chunks.count(q, j) == 0) continue;
      // Scaled operands: these rows' scales of my K-slice, and B's.
      int scales_ready = -1;
      const GemmOp g = b.gemm_of_a_rows(chunks.offset(q, j), chunks.count(q, j), piece(q, j), Scalar::Alpha,
                                        Scalar::Zero, &scales_ready);
      gemm_of[static_cast<std::size_t>(j)][static_cast<std::size_t>(q)] =
          b.add_step(g, b.next_compute_lane(), {scales_ready},
                     (q == r ? "own product " : "product for ") + piece_name(q, j));
    }
    const std::vector<int>& gemms = gemm_of[static_cast<std::size_t>(j)];
    if (!wire.products) {
      if (!all_reduce)
        my_sum[static_cast<std::size_t>(j)] = Region{
            b.add_workspace("my summed rows of " + chunk_name(j), chunks.count(r, j), p.n, wire.type, Order::RowMajor),
            0, 0, chunks.count(r, j), p.n};
      if (chunk_elements(j) == 0) return;  // alike on every rank
      const Region all{made[static_cast<std::size_t>(j)], 0, 0, chunks.rows(j), p.n};
      const CollectiveOp op = all_reduce
                                  ? CollectiveOp{CollectiveKind::AllReduce, all, all, {chunk_elements(j)}}
                                  : CollectiveOp{CollectiveKind::ReduceScatter, all, my_sum[static_cast<std::size_t>(j)],
                                                 chunks.counts(j, p.n)};
      reduced[static_cast<std::size_t>(j)] =
          b.add_step(op, kCommLane, gemms, str(all_reduce ? "all-reduce " : "reduce-scatter ", chunk_name(j)));
      return;
    }
    // Products: one batch sends each owner its piece and receives mine.
    const int batch = b.next_batch();
    for (int s = 1; s < P; ++s) {
      const int to = b.mod(r + s), from = b.mod(r - s);
      if (chunks.count(to, j) > 0)
        b.add_step(SendOp{piece(to, j), to, chunks.tag(to, j)}, kCommLane, {gemms[static_cast<std::size_t>(to)]},
                   "send product for " + piece_name(to, j), batch);
      if (chunks.count(r, j) == 0) continue;
      const Region slot{b.add_workspace("product of rank " + std::to_string(from) + " for " + chunk_name(j),
                                        chunks.count(r, j), p.n, wire.type, Order::RowMajor),
                        0, 0, chunks.count(r, j), p.n};
      const int recv = b.add_step(RecvOp{slot, from, chunks.tag(r, j)}, kCommLane, {},
                                  "receive product of rank " + std::to_string(from) + " for " + piece_name(r, j), batch);
      arrived[static_cast<std::size_t>(j)].emplace_back(slot, recv);
    }
  };

  // Stage 2: finish chunk j (the only place beta * C and bias enter).
  auto finish = [&](int j) {
    if (!wire.products) {
      const int after = reduced[static_cast<std::size_t>(j)];
      if (!all_reduce) {
        if (chunks.count(r, j) > 0)
          b.add_step(b.finish(c_rows(r, j), my_sum[static_cast<std::size_t>(j)]), b.next_compute_lane(), {after},
                     "finish " + piece_name(r, j));
        return;
      }
      for (int q = 0; q < P; ++q)
        if (chunks.count(q, j) > 0)
          b.add_step(b.finish(c_rows(q, j), piece(q, j)), b.next_compute_lane(), {after}, "finish " + piece_name(q, j));
      return;
    }
    if (chunks.count(r, j) > 0) {
      std::vector<Region> sources{piece(r, j)};
      std::vector<int> deps{gemm_of[static_cast<std::size_t>(j)][static_cast<std::size_t>(r)]};
      for (const auto& [slot, recv] : arrived[static_cast<std::size_t>(j)]) {
        sources.push_back(slot);
        deps.push_back(recv);
      }
      finished[static_cast<std::size_t>(j)] = b.add_sum(b.finish(c_rows(r, j), piece(r, j)), sources, deps,
                                                        b.next_compute_lane(), "sum products and finish " + piece_name(r, j));
    }
    if (!all_reduce || chunk_elements(j) == 0) return;
    // GEMM-AR: every rank's finished rows of chunk j to every rank, in C's type.
    const int buffer = b.add_workspace("finished " + chunk_name(j), chunks.rows(j), p.n, p.dtype, Order::RowMajor);
    gathered_buffer[static_cast<std::size_t>(j)] = buffer;
    const Region my_slot{buffer, chunks.within(r, j), 0, chunks.count(r, j), p.n};
    Region send = my_slot;
    int ready = finished[static_cast<std::size_t>(j)];
    if (chunks.count(r, j) > 0) {
      if (b.same_bytes_as_tight(c_rows(r, j), Order::RowMajor))
        send = c_rows(r, j);
      else
        ready = b.add_step(b.copy(my_slot, c_rows(r, j)), b.next_compute_lane(), {ready},
                           "pack finished " + piece_name(r, j));
    }
    gathered[static_cast<std::size_t>(j)] =
        b.add_step(CollectiveOp{CollectiveKind::AllGather, send, Region{buffer, 0, 0, chunks.rows(j), p.n},
                                chunks.counts(j, p.n)},
                   kCommLane, {ready}, "all-gather finished " + chunk_name(j));
  };

  // Stage 3 (GEMM-AR over products): the other ranks' finished rows into C.
  auto unpack = [&](int j) {
    if (gathered[static_cast<std::size_t>(j)] < 0) return;
    for (int s = 1; s < P; ++s) {
      const int q = b.mod(r + s);
      if (chunks.count(q, j) == 0) continue;
      const Region from{gathered_buffer[static_cast<std::size_t>(j)], chunks.within(q, j), 0, chunks.count(q, j), p.n};
      b.add_step(b.copy(c_rows(q, j), from), b.next_compute_lane(), {gathered[static_cast<std::size_t>(j)]},
                 "unpack finished " + piece_name(q, j));
    }
  };

  for (int t = 0; t <= c + 1; ++t) {
    if (t < c) multiply_and_reduce(t);
    if (t >= 1 && t <= c) finish(t - 1);
    if (t >= 2) unpack(t - 2);
  }
}

}  // namespace

void build_pipelined(ScheduleBuilder& b) {
  if (b.problem().operation == Operation::AgGemm)
    pipelined_ag_gemm(b);
  else
    pipelined_reduction(b);
}

}  // namespace weave::internal::plan
