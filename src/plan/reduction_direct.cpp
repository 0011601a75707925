// GEMM-RS and GEMM-AR without a ring: the "direct algorithm" of DESIGN.md
// section 3.
//
// Reduce-scatter phase: at step s = 1 .. P-1 rank r multiplies the rows that
// rank r+s owns, op(A)[rows of r+s] * op(B), and sends that product straight
// to r+s, while it receives from r-s that rank's product for its own rows.
// A transfer depends only on the local GEMM that made it, never on another
// rank's transfer, so there is no chain of hops whose latencies add up as in
// the ring. Products travel in C's type: a 16-bit product is rounded once
// before it travels, which halves the bytes of float32 partial sums and
// matches the bytes of a reduce-scatter in C's type. The owner makes its own
// product the same way and, once all of a chunk's products are in, sums them
// in the accumulation type (float32 for 16-bit types) and finishes in the same
// element-wise pass, C_r = sum + beta * C_r + bias (the only place beta and
// bias enter), rounding once more. One pass reads each product once: adding
// them one by one as they arrived cost as much memory traffic as the GEMMs.
//
// Shards are cut into chunks_per_shard chunks. The products for the other
// ranks come first, every chunk's before any of the owner's own products:
// a transfer can only start once its product is made, and the own products
// are needed only by the final sums, which wait for the last transfer
// anyway (a trace with the own product of chunk 0 made between the chunks'
// remote products showed the comm stream idle, waiting for chunk 1's first
// product). The sum of chunk j is emitted after the own product of chunk
// j+1, so a lane does not sit waiting for data while GEMMs could run.
//
// GEMM-AR continues with a direct all-gather: each owner sends its finished
// rows of C to every other rank, which copies them into its C. By default
// that happens after the whole reduce-scatter, the own products made last as
// in GEMM-RS. With ScheduleOptions::all_gather_lag = k >= 1 it is pipelined
// behind the reduce-scatter instead: the own product of chunk j is made
// right after the other ranks' products of chunk j, and chunk j is summed
// and leaves once the products of chunk j + k are made (its rows unpacked a
// chunk later still: a step waiting for data on a compute lane holds the
// GEMMs behind it, which a trace of the first form, summing at once, showed).
// Neither form measured faster than the default (the first 7-12% slower on
// 4 H200s, this one within 2% on 2; this one has not run on 4 GPUs): the
// sums and unpacks then run beside the GEMMs, slowing them, and the tail
// they save is short.
//
// With ScheduleOptions::own_product_accumulates (WEAVE_OWN_PRODUCT=
// accumulates) the owner does not write its own product to the workspace:
// one pass sums the received products of a chunk with beta * C and the bias
// into C's rows, and the own GEMM then adds alpha * op(A) op(B) to them
// (beta = 1). That is two fewer passes over the chunk than writing the own
// product and reading it back in the sum, which on 2 H200s ran beside the
// GEMMs and shared their SMs (doc/performance.md); the own GEMM then waits
// for the received products, and 16-bit C is rounded once more (the received
// sum before the own product is added, the own product itself not at all).
//
// Where a chunk has exactly one received product in C's type and order (two
// ranks, products in C's type, C row-major), the own GEMM reads it as its
// addend instead (GemmOp::has_addend): cuBLASLt's C is the received product,
// its D C's rows, and no element-wise pass remains but the unpacks (and the
// bias, as a step cuBLASLt takes into the GEMM where it can). C is rounded
// once where beta is zero; a non-zero beta * C enters the received product
// first (one more rounding of 16-bit C, as above).
//
// Every received product has its own workspace slot (no receive waits for a
// reader), so the workspace holds (P-1) shards of C in C's type per phase.
#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "plan/schedule_builder.hpp"

namespace weave::internal::plan {

void build_reduction_direct(ScheduleBuilder& b) {
  const Problem& p = b.problem();
  const ScheduleOptions& o = b.options();
  const int P = b.P(), r = b.rank(), c = o.chunks_per_shard;
  const bool all_reduce = p.operation == Operation::GemmAr;
  const Split pieces = p.m_split.refine(c, p.chunk_unit);  // piece q * c + j: chunk j of rank q's rows of C
  // Products travel in C's type (each rounded once), or on request in the
  // accumulation type.
  const DType wire = product_type(p, o);
  auto piece_id = [&](int q, int j) { return q * c + j; };
  auto rows_of = [&](int id) { return pieces.count(id); };
  auto label = [&](const std::string& what, int id) {
    return what + " chunk " + std::to_string(id % c) + " of rank " + std::to_string(id / c) + "'s rows";
  };
  auto c_rows_of = [&](int id) {
    const int64_t row0 = pieces.offset(id) - (all_reduce ? 0 : p.m_split.offset(r));
    return Region{kBufferC, row0, 0, rows_of(id), p.n};
  };
  int64_t max_rows = 0;
  for (int id = 0; id < P * c; ++id) max_rows = std::max(max_rows, rows_of(id));

  // Products for other ranks are made in a few reused slots: a slot takes
  // the next product once its previous one has been sent.
  const int window = std::max(2, std::min((P - 1) * c, o.slot_window));
  std::vector<int> send_slots;
  std::vector<int> send_slot_user(static_cast<std::size_t>(window), -1);
  for (int w = 0; w < window; ++w)
    send_slots.push_back(b.add_workspace("product slot " + std::to_string(w), max_rows, p.n, wire, Order::RowMajor));
  int next_send_slot = 0;

  // Per chunk of my rows: my own product and the received ones (slot and
  // receive step), summed in one pass once all are in.
  std::vector<Region> own(static_cast<std::size_t>(c));
  std::vector<int> own_gemm(static_cast<std::size_t>(c), -1);
  std::vector<std::vector<std::pair<Region, int>>> arrived(static_cast<std::size_t>(c));
  std::vector<int> finished(static_cast<std::size_t>(c), -1);
  // GEMM-AR's finished rows of chunk j as they leave: one part (the chunk),
  // or for the last chunk with ScheduleOptions::tail_bands, one per band of
  // rows. Every rank cuts a chunk of the same rows the same way, so a
  // receiver knows the parts of the rows it receives.
  const bool banded_tail = all_reduce && o.tail_bands > 1 && o.own_product_accumulates && P == 2 &&
                           own_gemm_can_add_received(p, wire) && o.all_gather_lag == kGatherAfterReduce;
  auto parts_of = [&](int j, int64_t rows) {
    return Split::balanced(rows, banded_tail && j == c - 1 ? o.tail_bands : 1, p.chunk_unit);
  };
  struct Part {
    Region rows;  // of C
    int ready;    // the step that finished them
  };
  std::vector<std::vector<Part>> finished_parts(static_cast<std::size_t>(c));

  // C's rows of chunk j = sum of the products + beta * C + bias, summed in the
  // accumulation type (ScheduleBuilder::add_sum).
  auto emit_sum = [&](int j) {
    const int id = piece_id(r, j);
    if (rows_of(id) == 0) return;
    if (o.own_product_accumulates) return;  // emit_accumulated does it all
    std::vector<Region> sources{own[j]};
    std::vector<int> deps{own_gemm[j]};
    for (const auto& [slot, recv] : arrived[j]) {
      sources.push_back(slot);
      deps.push_back(recv);
    }
    finished[j] = b.add_sum(b.finish(c_rows_of(id), own[j]), sources, deps, b.next_compute_lane(),
                            label("sum products and finish", id));
  };

  // With own_product_accumulates: C's rows of chunk j = the received
  // products + beta * C + bias, summed in the accumulation type, then the
  // own GEMM adds alpha * op(A) op(B) to them (beta = 1). With no received
  // product (one rank) the first step only scales C and adds the bias.
  auto emit_accumulated = [&](int j) {
    const int id = piece_id(r, j);
    if (rows_of(id) == 0) return;
    const Region rows = c_rows_of(id);
    std::vector<Region> sources;
    std::vector<int> deps;
    for (const auto& [slot, recv] : arrived[j]) {
      sources.push_back(slot);
      deps.push_back(recv);
    }
    int scales_ready = -1;
    // One received product in C's type and order (two ranks): the own GEMM
    // reads it as its addend and writes C's rows, with no pass of its own
    // (GemmOp::has_addend); the bias, if any, follows as its own step,
    // which cuBLASLt takes into the GEMM where it can.
    if (arrived[j].size() == 1 && own_gemm_can_add_received(p, wire)) {
      // In bands of rows for the last chunk of a banded tail (one band
      // otherwise), one after another on one lane, each band's rows ready
      // to leave when its GEMM (and bias) is done.
      const Split bands = parts_of(j, rows_of(id));
      const int lane = b.next_compute_lane();
      for (int k = 0; k < bands.parts(); ++k) {
        const int64_t first = bands.offset(k), count = bands.count(k);
        const Region band = rows.row_range(first, count);
        if (count == 0) {  // kept in place, so that part k is band k on both sides
          finished_parts[j].push_back(Part{band, -1});
          continue;
        }
        GemmOp g = b.gemm_of_a_rows(pieces.offset(id) + first, count, band, Scalar::Alpha, Scalar::Beta,
                                    &scales_ready);
        g.has_addend = true;
        g.addend = arrived[j][0].first.row_range(first, count);
        const std::string what = bands.parts() > 1 ? str(" band ", k) : std::string();
        int step = b.add_step(g, lane, {arrived[j][0].second, scales_ready},
                              label("own product added to the received one" + what + " for", id));
        if (p.has_bias) step = b.add_step(b.add_bias(band), lane, {step}, label("add bias" + what + " to", id));
        finished_parts[j].push_back(Part{band, step});
        own_gemm[j] = finished[j] = step;
      }
      return;
    }
    EpilogueOp first = b.finish(rows, rows);
    int received = -1;
    if (sources.empty()) {
      first.has_src = false;
      received = b.add_step(first, b.next_compute_lane(), {}, label("finish C before the own product of", id));
    } else {
      received = b.add_sum(first, sources, deps, b.next_compute_lane(), label("sum received products of", id));
    }
    const GemmOp g = b.gemm_of_a_rows(pieces.offset(id), rows_of(id), rows, Scalar::Alpha, Scalar::One, &scales_ready);
    own_gemm[j] = finished[j] =
        b.add_step(g, b.next_compute_lane(), {received, scales_ready}, label("own product added to", id));
  };

  // My own product of chunk j, made and rounded like the products for other
  // ranks, so every rank's product enters the sum the same way.
  auto emit_own = [&](int j) {
    if (o.own_product_accumulates) return emit_accumulated(j);
    const int id = piece_id(r, j);
    if (rows_of(id) == 0) return;
    own[j] = Region{b.add_workspace("own product chunk " + std::to_string(j), rows_of(id), p.n, wire, Order::RowMajor),
                    0, 0, rows_of(id), p.n};
    int scales_ready = -1;
    const GemmOp g =
        b.gemm_of_a_rows(pieces.offset(id), rows_of(id), own[j], Scalar::Alpha, Scalar::Zero, &scales_ready);
    own_gemm[j] = b.add_step(g, b.next_compute_lane(), {scales_ready}, label("own product for", id));
  };

  // All-gather phase of GEMM-AR: every owner's finished rows of chunk j go
  // straight to every other rank, in the output type (emit_gather), and
  // each rank copies the rows it received into its C (emit_unpacks, apart:
  // an unpack waits for its rows, and a compute lane waiting for data holds
  // the GEMMs behind it).
  const int tag_base = P * c;
  struct Gathered {
    Region slot;
    int recv;          // the receive step
    int piece;         // whose rows
    int64_t first = 0;  // from which of the piece's rows (a band's)
  };
  std::vector<std::vector<Gathered>> gathered(static_cast<std::size_t>(c));
  auto emit_gather = [&](int j) {
    const int id = piece_id(r, j);
    // My finished rows of chunk j, part by part (the whole chunk unless its
    // own GEMM ran in bands), each packed where its rows are not one block.
    std::vector<Part> mine = finished_parts[j];
    if (mine.empty()) mine.push_back(Part{c_rows_of(id), finished[j]});
    for (std::size_t k = 0; k < mine.size(); ++k) {
      if (mine[k].rows.rows == 0 || b.same_bytes_as_tight(mine[k].rows, Order::RowMajor)) continue;
      const Region packed{b.add_workspace(str("finished chunk ", j, mine.size() > 1 ? str(" band ", k) : ""),
                                          mine[k].rows.rows, p.n, p.dtype, Order::RowMajor),
                          0, 0, mine[k].rows.rows, p.n};
      mine[k].ready = b.add_step(b.copy(packed, mine[k].rows), b.next_compute_lane(), {mine[k].ready},
                                 label("pack finished", id));
      mine[k].rows = packed;
    }
    // A part's tag: the piece's own for the first, then a range per band.
    auto tag_of = [&](int piece, int k) { return tag_base + k * P * c + piece; };
    // A batch per peer: one batch sending to every peer at once measured
    // slower on 4 H200s (GEMM-AR 8192^3 1.08 against 0.92 ms).
    for (int s = 1; s < P; ++s) {
      const int to = b.mod(r + s), from = b.mod(r - s);
      const int in_id = piece_id(from, j);
      // The sender's parts of its rows: cut as mine are.
      const Split in_parts = parts_of(j, rows_of(in_id));
      const int parts = std::max<int>(static_cast<int>(mine.size()), in_parts.parts());
      for (int k = 0; k < parts; ++k) {
        const int batch = b.next_batch();
        if (k < static_cast<int>(mine.size()) && mine[static_cast<std::size_t>(k)].rows.rows > 0)
          b.add_step(SendOp{mine[static_cast<std::size_t>(k)].rows, to, tag_of(id, k)}, kCommLane,
                     {mine[static_cast<std::size_t>(k)].ready}, label("send finished", id), batch);
        if (k >= in_parts.parts() || in_parts.count(k) == 0) continue;
        const Region slot{b.add_workspace(str("received finished ", s, " chunk ", j, in_parts.parts() > 1 ? str(" band ", k) : ""),
                                          in_parts.count(k), p.n, p.dtype, Order::RowMajor),
                          0, 0, in_parts.count(k), p.n};
        const int recv = b.add_step(RecvOp{slot, from, tag_of(in_id, k)}, kCommLane, {},
                                    label("receive finished", in_id), batch);
        gathered[j].push_back(Gathered{slot, recv, in_id, in_parts.offset(k)});
      }
    }
  };
  auto emit_unpacks = [&](int j) {
    for (const Gathered& g : gathered[j]) {
      b.add_step(b.copy(c_rows_of(g.piece).row_range(g.first, g.slot.rows), g.slot), b.next_compute_lane(), {g.recv}, label("unpack finished", g.piece));
    }
  };
  // GEMM-AR's all-gather pipelined behind its reduce-scatter (see
  // ScheduleOptions::all_gather_lag).
  const int lag = all_reduce ? o.all_gather_lag : kGatherAfterReduce;
  if (lag == 0) fail(WEAVE_ERROR_INTERNAL, "all_gather_lag 0: a sum would wait for data ahead of the GEMMs");

  // Reduce-scatter phase.
  for (int j = 0; j < c; ++j) {
    for (int s = 1; s < P; ++s) {
      const int to = b.mod(r + s), from = b.mod(r - s);
      const int out_id = piece_id(to, j), in_id = piece_id(r, j);
      const int batch = b.next_batch();
      if (rows_of(out_id) > 0) {
        const int w = next_send_slot++ % window;
        const Region slot{send_slots[w], 0, 0, rows_of(out_id), p.n};
        std::vector<int> deps;
        if (send_slot_user[w] >= 0) deps.push_back(send_slot_user[w]);
        int scales_ready = -1;
        const GemmOp g = b.gemm_of_a_rows(pieces.offset(out_id), rows_of(out_id), slot, Scalar::Alpha, Scalar::Zero,
                                          &scales_ready);
        deps.push_back(scales_ready);
        const int gemm = b.add_step(g, b.next_compute_lane(), deps, label("product for", out_id));
        send_slot_user[w] =
            b.add_step(SendOp{slot, to, out_id}, kCommLane, {gemm}, label("send product for", out_id), batch);
      }
      if (rows_of(in_id) > 0) {
        const int slot = b.add_workspace("received product " + std::to_string(s) + " chunk " + std::to_string(j),
                                         rows_of(in_id), p.n, wire, Order::RowMajor);
        const Region where{slot, 0, 0, rows_of(in_id), p.n};
        const int recv = b.add_step(RecvOp{where, from, in_id}, kCommLane, {},
                                    label("receive product from rank " + std::to_string(from) + " for", in_id), batch);
        arrived[j].emplace_back(where, recv);
      }
    }
    if (lag > 0) {
      // The finished rows of chunk j can leave while later chunks are being
      // multiplied only if chunk j's own product is not made last. Chunk
      // j - lag is summed and leaves now, its products in by now; the rows
      // gathered of the chunk before it, sent meanwhile, are unpacked.
      emit_own(j);
      if (j - lag >= 0) {
        emit_sum(j - lag);
        emit_gather(j - lag);
      }
      if (j - lag - 1 >= 0) emit_unpacks(j - lag - 1);
    }
  }
  if (lag > 0) {
    for (int j = std::max(0, c - lag); j < c; ++j) {
      emit_sum(j);
      emit_gather(j);
    }
    for (int j = std::max(0, c - lag - 1); j < c; ++j) emit_unpacks(j);
    return;
  }
  for (int j = 0; j < c; ++j) {
    emit_own(j);
    if (j > 0) emit_sum(j - 1);
  }
  emit_sum(c - 1);
  if (!all_reduce) return;
  for (int j = 0; j < c; ++j) {
    emit_gather(j);
    emit_unpacks(j);
  }
}

}  // namespace weave::internal::plan
