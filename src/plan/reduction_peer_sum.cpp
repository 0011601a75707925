// GEMM-RS and GEMM-AR with the direct algorithm over a transport that reads
// its peers' memory (SM-driven transfers): nothing is received into a slot
// and summed again. Each rank makes every product in a workspace slot of
// its own and publishes it to the rank that needs it; that rank reads the
// products where they lie and sums them in one pass that also finishes C
// (PeerSum: beta * C and bias enter there, once), then releases them.
//
// Two-shot (GEMM-RS, and GEMM-AR over more than kOneShotAllReduceMaxRanks
// ranks). Shards are cut into chunks_per_shard chunks. For chunk j each
// rank makes the products for the other ranks' chunk j and publishes each,
// then its own product of chunk j; the owner's PeerSum of chunk j - 1 comes
// after that, so the GEMMs of chunk j run while it sums. GEMM-AR: the sum
// also writes the finished chunk, in C's type, to a staging slot that is
// published to every other rank at once, and every rank reads each other
// owner's finished chunk straight into its C (a PeerSum of one remote term),
// so a chunk leaves for every peer as soon as it is summed.
//
// One-shot (GEMM-AR over at most kOneShotAllReduceMaxRanks ranks, or as
// WEAVE_ALL_REDUCE says): every rank makes its whole product, piece by
// piece (the rows of the group's chunks), and publishes each piece to every
// other rank; every rank then sums every rank's product of that piece into
// its own C. The terms are listed in rank order on every rank, so every
// rank's C gets the same bits.
//
// Every published slot is written once per execute, and every rank waits at
// the end of an execute until each of its slots has been released, so the
// next execute cannot overwrite a slot a peer still reads. Comm steps are
// emitted in one order on every rank (publishes of a chunk before any sum
// that needs them), so a stream that waits on the device for a peer's flag
// never waits for something the peer enqueued behind its own wait.
#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "plan/schedule_builder.hpp"

namespace weave::internal::plan {

namespace {

std::string piece_label(const std::string& what, int id, int chunks) {
  return what + " chunk " + std::to_string(id % chunks) + " of rank " + std::to_string(id / chunks) + "'s rows";
}

}  // namespace

void build_reduction_peer_sums(ScheduleBuilder& b) {
  const Problem& p = b.problem();
  const ScheduleOptions& o = b.options();
  const int P = b.P(), r = b.rank(), c = o.chunks_per_shard;
  if (P > kMaxPeerSumTerms)
    fail(WEAVE_ERROR_UNSUPPORTED, "sums read from peers' memory take at most ", kMaxPeerSumTerms,
         " ranks' products, this group has ", P, " ranks; use the copy_engine transport");
  const bool all_reduce = p.operation == Operation::GemmAr;
  const bool one_shot = all_reduce && o.all_reduce_one_shot;
  const Split pieces = p.m_split.refine(c, p.chunk_unit);  // piece q * c + j: chunk j of rank q's rows of C
  const int piece_count = P * c;
  auto rows_of = [&](int id) { return pieces.count(id); };
  auto label = [&](const std::string& what, int id) { return piece_label(what, id, c); };
  auto c_rows_of = [&](int id) {
    const int64_t row0 = pieces.offset(id) - (all_reduce ? 0 : p.m_split.offset(r));
    return Region{kBufferC, row0, 0, rows_of(id), p.n};
  };
  // A workspace slot for one piece, tight row-major in C's type.
  auto slot_for = [&](const std::string& name, int id) {
    return Region{b.add_workspace(name, rows_of(id), p.n, p.dtype, Order::RowMajor), 0, 0, rows_of(id), p.n};
  };
  // alpha * op(A)[rows of piece id] * op(B) into `slot`.
  auto product = [&](const Region& slot, int id, const std::string& what) {
    int scales_ready = -1;
    const GemmOp g = b.gemm_of_a_rows(pieces.offset(id), rows_of(id), slot, Scalar::Alpha, Scalar::Zero, &scales_ready);
    return b.add_step(g, b.next_compute_lane(), {scales_ready}, label(what, id));
  };
  std::vector<std::pair<int, int>> published;  // (peer, tag) of every publish, released at the end
  auto publish = [&](const Region& slot, int ready, int to, int tag, const std::string& what, int batch) {
    b.add_step(PublishOp{slot, to, tag}, kCommLane, {ready}, what, batch);
    published.emplace_back(to, tag);
  };
  // C's rows of piece id = the terms summed + beta * C + bias.
  auto finish = [&](int id, std::vector<SumTerm> terms, std::vector<int> deps, const Region* copy,
                    const std::string& what) {
    PeerSumOp sum;
    sum.dst = c_rows_of(id);
    sum.terms = std::move(terms);
    sum.term_type = p.dtype;
    sum.dst_scale = Scalar::Beta;
    sum.has_bias = p.has_bias;
    if (sum.has_bias) sum.bias = b.bias_for(sum.dst);
    if (copy) {
      sum.has_copy = true;
      sum.copy = *copy;
    }
    return b.add_step(sum, kCommLane, std::move(deps), label(what, id));
  };
  auto remote = [](int peer, int tag) {
    SumTerm t;
    t.remote = true;
    t.peer = peer;
    t.tag = tag;
    return t;
  };
  auto local = [](const Region& region) {
    SumTerm t;
    t.local = region;
    return t;
  };

  if (one_shot) {
    // Every rank's whole product, piece by piece, each piece summed right
    // after it is published: the sums run on the communication stream, so
    // waiting there for the peers' pieces holds up no GEMM, and after the
    // last GEMM only the last piece's sum is left.
    for (int id = 0; id < piece_count; ++id) {
      if (rows_of(id) == 0) continue;
      const Region own = slot_for("product of piece " + std::to_string(id), id);
      const int made = product(own, id, "product of");
      const int batch = b.next_batch();
      for (int s = 1; s < P; ++s) publish(own, made, b.mod(r + s), id, label("publish product of", id), batch);
      std::vector<SumTerm> terms;
      for (int q = 0; q < P; ++q) terms.push_back(q == r ? local(own) : remote(q, id));
      finish(id, std::move(terms), {made}, nullptr, "sum every rank's product of");
    }
  } else {
    std::vector<Region> own(static_cast<std::size_t>(c));
    std::vector<int> own_made(static_cast<std::size_t>(c), -1);
    const int staging_tag_base = piece_count;
    auto sum_chunk = [&](int j) {
      const int id = r * c + j;
      if (rows_of(id) > 0) {
        std::vector<SumTerm> terms;
        for (int q = 0; q < P; ++q) terms.push_back(q == r ? local(own[j]) : remote(q, id));
        Region staging{};
        if (all_reduce) staging = slot_for("finished chunk " + std::to_string(j), id);
        const int summed =
            finish(id, std::move(terms), {own_made[j]}, all_reduce ? &staging : nullptr, "sum products and finish");
        if (all_reduce) {
          const int batch = b.next_batch();
          for (int s = 1; s < P; ++s)
            publish(staging, summed, b.mod(r + s), staging_tag_base + id, label("publish finished", id), batch);
        }
      }
      if (!all_reduce) return;
      // Every other owner's finished chunk j, read straight into my C.
      for (int s = 1; s < P; ++s) {
        const int from = b.mod(r - s), theirs = from * c + j;
        if (rows_of(theirs) == 0) continue;
        PeerSumOp gather;
        gather.dst = c_rows_of(theirs);
        gather.terms = {remote(from, staging_tag_base + theirs)};
        gather.term_type = p.dtype;
        b.add_step(gather, kCommLane, {}, label("read finished", theirs));
      }
    };
    for (int j = 0; j < c; ++j) {
      const int batch = b.next_batch();
      for (int s = 1; s < P; ++s) {
        const int to = b.mod(r + s), id = to * c + j;
        if (rows_of(id) == 0) continue;
        const Region slot = slot_for("product for rank " + std::to_string(to) + " chunk " + std::to_string(j), id);
        publish(slot, product(slot, id, "product for"), to, id, label("publish product for", id), batch);
      }
      const int id = r * c + j;
      if (rows_of(id) > 0) {
        own[j] = slot_for("own product chunk " + std::to_string(j), id);
        own_made[j] = product(own[j], id, "own product for");
      }
      if (j > 0) sum_chunk(j - 1);
    }
    sum_chunk(c - 1);
  }

  // Nothing published may be overwritten by the next execute before its
  // reader has let it go.
  const int batch = b.next_batch();
  for (const auto& [peer, tag] : published)
    b.add_step(AwaitReleaseOp{peer, tag}, kCommLane, {}, "await release by rank " + std::to_string(peer), batch);
}

}  // namespace weave::internal::plan
