// Hierarchical plans (DESIGN.md section 3) for groups spanning several
// nodes of several ranks each (ScheduleOptions::node_of_rank; every node
// the same number L of the group's ranks). Rank (n, l) is local rank l of
// node n. Between nodes only ranks of the same local index talk, so every
// byte crosses the network once per pair of nodes that needs it (a flat
// ring or all-gather over all P ranks sends the node's data over its
// network link up to L times); within a node the fast links spread it.
//
// Every shard is cut into chunks_per_shard pieces; batch t (t = 0..c) holds
// the network transfers of chunk t and the exchange within the node of
// chunk t - 1, so on a stream-ordered transport (one NCCL group per batch)
// the inter-node transfer of chunk t runs beside the intra-node exchange of
// chunk t - 1, and both beside the GEMMs. Everything is point to point on
// the group's one communicator: NCCL and MPI take their NVLink / shared
// memory path between ranks of a node and the network between nodes.
//
//   AG-GEMM: piece (q, j) reaches every rank once. Rank (n, l) sends its own
//     piece j to its node's other ranks and to rank (n', l) of every other
//     node; what arrives from (n', l) it forwards to its node's other ranks
//     in the next batch. Own rows are multiplied first, then every piece as
//     it arrives.
//   GEMM-RS: rank (n, l) multiplies the products of every piece of chunk j,
//     laid out local-index-major, so the products for local rank l' (the
//     pieces of ranks (*, l')) are one block; the node exchanges those
//     blocks, and rank (n, l) sums its node's products of the pieces of
//     ranks (n', l) into one node partial sum per node n', which it sends to
//     (n', l); the owner sums its node's products and the other nodes'
//     partial sums and finishes (beta * C and bias, once). Products and node
//     partial sums travel as plan/wire.hpp says (16-bit C: C's type, so a
//     value is rounded as a product and once more as a node's partial sum).
//   GEMM-AR: GEMM-RS, then the hierarchical all-gather of the finished
//     pieces in C's type.
#include <algorithm>
#include <functional>
#include <string>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "plan/schedule_builder.hpp"
#include "plan/wire.hpp"

namespace weave::internal::plan {

namespace {

// The group as N nodes of L ranks.
class NodeGrid {
 public:
  NodeGrid(const std::vector<int>& node_of_rank, int P) {
    node_.assign(static_cast<std::size_t>(P), 0);
    if (!node_of_rank.empty()) {
      if (static_cast<int>(node_of_rank.size()) != P)
        fail(WEAVE_ERROR_INTERNAL, "a node for ", node_of_rank.size(), " ranks in a group of ", P);
      node_ = node_of_rank;
    }
    int nodes = 0;
    for (int n : node_) nodes = std::max(nodes, n + 1);
    members_.assign(static_cast<std::size_t>(nodes), {});
    local_.assign(static_cast<std::size_t>(P), 0);
    for (int q = 0; q < P; ++q) {
      const int n = node_[static_cast<std::size_t>(q)];
      if (n < 0) fail(WEAVE_ERROR_INTERNAL, "rank ", q, " on node ", n);
      local_[static_cast<std::size_t>(q)] = static_cast<int>(members_[static_cast<std::size_t>(n)].size());
      members_[static_cast<std::size_t>(n)].push_back(q);
    }
    for (const auto& m : members_)
      if (m.size() != members_.front().size())
        fail(WEAVE_ERROR_INTERNAL, "a hierarchical plan needs the same number of ranks on every node");
  }
  int nodes() const { return static_cast<int>(members_.size()); }
  int per_node() const { return static_cast<int>(members_.front().size()); }
  int node(int q) const { return node_[static_cast<std::size_t>(q)]; }
  int local(int q) const { return local_[static_cast<std::size_t>(q)]; }
  int member(int n, int l) const { return members_[static_cast<std::size_t>(n)][static_cast<std::size_t>(l)]; }

 private:
  std::vector<int> node_, local_;
  std::vector<std::vector<int>> members_;
};

std::string piece_name(int id, int c) {
  return "chunk " + std::to_string(id % c) + " of rank " + std::to_string(id / c);
}

// The hierarchical all-gather of the pieces `pieces` (piece id = q * c + j),
// shared by AG-GEMM (pieces of op(A)) and GEMM-AR (finished pieces of C).
// `slot(id)` is where a received piece lands (contiguous); my piece j leaves
// from `own(j)` once `own_ready(j)` has run (-1: at once); `arrived(id,
// region, step)` is called for every piece this rank receives, after the
// batch that brings it is emitted. Tags are tag_base + id.
void hierarchical_all_gather(ScheduleBuilder& b, const NodeGrid& g, const Split& pieces, int c,
                             const std::function<Region(int)>& slot, const std::function<Region(int)>& own,
                             const std::function<int(int)>& own_ready, int tag_base,
                             const std::function<void(int, const Region&, int)>& arrived) {
  const int r = b.rank(), n0 = g.node(r), l0 = g.local(r), N = g.nodes(), L = g.per_node();
  auto id_of = [&](int q, int j) { return q * c + j; };
  auto rows = [&](int id) { return pieces.count(id); };
  std::vector<int> received(static_cast<std::size_t>(b.P() * c), -1);  // receive step per piece
  for (int t = 0; t <= c; ++t) {
    const int batch = b.next_batch();
    std::vector<int> landed;  // pieces this batch brings
    auto receive = [&](int from, int id, const std::string& what) {
      if (rows(id) == 0) return;
      received[static_cast<std::size_t>(id)] =
          b.add_step(RecvOp{slot(id), from, tag_base + id}, kCommLane, {}, what + " " + piece_name(id, c), batch);
      landed.push_back(id);
    };
    auto send = [&](const Region& region, int to, int id, int dep, const std::string& what) {
      if (rows(id) == 0) return;
      b.add_step(SendOp{region, to, tag_base + id}, kCommLane, {dep}, what + " " + piece_name(id, c), batch);
    };
    if (t < c) {
      const int mine = id_of(r, t);
      // Between nodes: my piece to the ranks of my local index elsewhere.
      for (int s = 1; s < N; ++s) {
        const int to = g.member((n0 + s) % N, l0), from = g.member((n0 - s + N) % N, l0);
        send(own(t), to, mine, own_ready(t), "send to node " + std::to_string(g.node(to)));
        receive(from, id_of(from, t), "receive from node " + std::to_string(g.node(from)));
      }
      // Within the node: my own piece.
      for (int s = 1; s < L; ++s) {
        const int to = g.member(n0, (l0 + s) % L), from = g.member(n0, (l0 - s + L) % L);
        send(own(t), to, mine, own_ready(t), "send within the node");
        receive(from, id_of(from, t), "receive within the node");
      }
    }
    if (t >= 1) {
      // Within the node: what arrived from the other nodes in batch t - 1.
      for (int s = 1; s < L; ++s) {
        const int to = g.member(n0, (l0 + s) % L), from = g.member(n0, (l0 - s + L) % L);
        for (int k = 1; k < N; ++k) {
          const int remote = g.member((n0 - k + N) % N, l0), id = id_of(remote, t - 1);
          send(slot(id), to, id, received[static_cast<std::size_t>(id)], "forward within the node");
          const int theirs = g.member((n0 - k + N) % N, g.local(from));
          receive(from, id_of(theirs, t - 1), "receive forwarded");
        }
      }
    }
    for (int id : landed) arrived(id, slot(id), received[static_cast<std::size_t>(id)]);
  }
}

void hierarchical_ag_gemm(ScheduleBuilder& b, const NodeGrid& g) {
  const Problem& p = b.problem();
  if (p.scaled() || p.quantized())
    fail(WEAVE_ERROR_INTERNAL, "the hierarchical AG-GEMM gathers unscaled rows (the planner runs scaled ones in a ring)");
  const ScheduleOptions& o = b.options();
  const int r = b.rank(), c = o.chunks_per_shard;
  const Split pieces = p.m_split.refine(c, p.chunk_unit);
  const Order gather_order = p.op_a == Op::N ? Order::RowMajor : Order::ColMajor;
  const int gather = p.op_a == Op::N ? b.add_workspace("gathered op(A)", p.m, p.k, p.dtype, gather_order)
                                     : b.add_workspace("gathered op(A)", p.k, p.m, p.dtype, gather_order);
  auto slot = [&](int id) { return b.op_rows(gather, p.op_a, pieces.offset(id), pieces.count(id)); };
  auto own_rows = [&](int j) {
    const int id = r * c + j;
    return b.op_rows(kBufferA, p.op_a, pieces.offset(id) - p.m_split.offset(r), pieces.count(id));
  };
  const Region c_all = b.whole(kBufferC), b_all = b.whole(kBufferB);
  auto multiply = [&](int id, const Region& a_rows, int dep) {
    const int lane = b.next_compute_lane();
    const Region c_rows{kBufferC, pieces.offset(id), 0, pieces.count(id), c_all.cols};
    if (!c_rows.empty()) {
      const int gemm = b.add_step(GemmOp{a_rows, p.op_a, b_all, p.op_b, c_rows, Scalar::Alpha, Scalar::Beta, {}, {}}, lane,
                                  {dep}, "gemm " + piece_name(id, c));
      if (p.has_bias) b.add_step(b.add_bias(c_rows), lane, {gemm}, "bias " + piece_name(id, c));
    }
    if (o.gathered_output)
      b.add_step(b.copy(b.op_rows(kBufferGathered, p.op_a, pieces.offset(id), pieces.count(id)), a_rows), lane, {dep},
                 "gathered output " + piece_name(id, c));
  };
  // My pieces leave from A when their bytes look like the gather buffer's,
  // else packed into their place there first.
  std::vector<Region> own(static_cast<std::size_t>(c));
  std::vector<int> ready(static_cast<std::size_t>(c), -1);
  for (int j = 0; j < c; ++j) {
    const int id = r * c + j;
    own[static_cast<std::size_t>(j)] = own_rows(j);
    if (pieces.count(id) == 0 || b.same_bytes_as_tight(own_rows(j), gather_order)) continue;
    own[static_cast<std::size_t>(j)] = slot(id);
    ready[static_cast<std::size_t>(j)] = b.add_step(b.copy(slot(id), own_rows(j)), 0, {}, "pack own " + piece_name(id, c));
  }
  for (int j = 0; j < c; ++j)
    if (pieces.count(r * c + j) > 0) multiply(r * c + j, own_rows(j), -1);
  hierarchical_all_gather(
      b, g, pieces, c, slot, [&](int j) { return own[static_cast<std::size_t>(j)]; },
      [&](int j) { return ready[static_cast<std::size_t>(j)]; }, 0,
      [&](int id, const Region& region, int step) { multiply(id, region, step); });
}

void hierarchical_reduction(ScheduleBuilder& b, const NodeGrid& g) {
  const Problem& p = b.problem();
  const ScheduleOptions& o = b.options();
  const int P = b.P(), r = b.rank(), c = o.chunks_per_shard;
  const int n0 = g.node(r), l0 = g.local(r), N = g.nodes(), L = g.per_node();
  const bool all_reduce = p.operation == Operation::GemmAr;
  const DType wire = reduction_wire(p, o, Algorithm::Hierarchical).type;
  const Split pieces = p.m_split.refine(c, p.chunk_unit);
  auto id_of = [&](int q, int j) { return q * c + j; };
  auto rows = [&](int q, int j) { return pieces.count(id_of(q, j)); };
  auto c_rows = [&](int j) {
    const int id = id_of(r, j);
    return Region{kBufferC, pieces.offset(id) - (all_reduce ? 0 : p.m_split.offset(r)), 0, pieces.count(id), p.n};
  };
  // Chunk j's products, local-index-major: block l holds the pieces of
  // ranks (0, l), (1, l), ... in node order.
  auto block_first = [&](int l, int j) {
    int64_t at = 0;
    for (int before = 0; before < l; ++before)
      for (int n = 0; n < N; ++n) at += rows(g.member(n, before), j);
    return at;
  };
  auto block_rows = [&](int l, int j) {
    int64_t total = 0;
    for (int n = 0; n < N; ++n) total += rows(g.member(n, l), j);
    return total;
  };
  auto within_block = [&](int q, int j) {  // piece q's rows from the start of its block
    int64_t at = 0;
    for (int n = 0; n < g.node(q); ++n) at += rows(g.member(n, g.local(q)), j);
    return at;
  };
  std::vector<int> products(static_cast<std::size_t>(c));
  std::vector<std::vector<int>> gemm_of(static_cast<std::size_t>(c), std::vector<int>(static_cast<std::size_t>(P), -1));
  // What arrives for my column from each local peer (block l0 of theirs).
  std::vector<std::vector<std::pair<Region, int>>> column(static_cast<std::size_t>(c));
  // Node partial sums I send (per remote node) and receive (per remote node).
  std::vector<std::vector<std::pair<Region, int>>> outgoing(static_cast<std::size_t>(c)), incoming(static_cast<std::size_t>(c));
  std::vector<int> finished(static_cast<std::size_t>(c), -1);

  auto product_rows = [&](int q, int j) {
    return Region{products[static_cast<std::size_t>(j)], block_first(g.local(q), j) + within_block(q, j), 0, rows(q, j),
                  p.n};
  };
  // Stage 1: the products of chunk j, those that leave the rank first.
  auto multiply = [&](int j) {
    int64_t chunk_rows = 0;
    for (int q = 0; q < P; ++q) chunk_rows += rows(q, j);
    products[static_cast<std::size_t>(j)] =
        b.add_workspace("products chunk " + std::to_string(j), chunk_rows, p.n, wire, Order::RowMajor);
    std::vector<int> order;
    for (int s = 1; s < L; ++s)  // the blocks of my node's other ranks
      for (int n = 0; n < N; ++n) order.push_back(g.member(n, (l0 + s) % L));
    for (int k = 1; k <= N; ++k) order.push_back(g.member((n0 + k) % N, l0));  // my column, my own piece last
    for (int q : order) {
      if (rows(q, j) == 0) continue;
      // Scaled operands: these rows' scales of my K-slice, and B's.
      int scales_ready = -1;
      const GemmOp g = b.gemm_of_a_rows(pieces.offset(id_of(q, j)), rows(q, j), product_rows(q, j), Scalar::Alpha,
                                        Scalar::Zero, &scales_ready);
      gemm_of[static_cast<std::size_t>(j)][static_cast<std::size_t>(q)] =
          b.add_step(g, b.next_compute_lane(), {scales_ready},
                     (q == r ? "own product " : "product for ") + piece_name(id_of(q, j), c));
    }
  };
  // Stage 2: my node's partial sums of my column's pieces for the other nodes.
  auto node_sums = [&](int j) {
    for (int k = 1; k < N; ++k) {
      const int owner = g.member((n0 + k) % N, l0);
      if (rows(owner, j) == 0) continue;
      std::vector<Region> sources{product_rows(owner, j)};
      std::vector<int> deps{gemm_of[static_cast<std::size_t>(j)][static_cast<std::size_t>(owner)]};
      for (const auto& [block, recv] : column[static_cast<std::size_t>(j)]) {
        sources.push_back(Region{block.buffer, within_block(owner, j), 0, rows(owner, j), p.n});
        deps.push_back(recv);
      }
      if (L == 1) {  // my product is my node's partial sum
        outgoing[static_cast<std::size_t>(j)].emplace_back(sources.front(), deps.front());
        continue;
      }
      const Region sum{b.add_workspace("node partial sum for " + piece_name(id_of(owner, j), c), rows(owner, j), p.n,
                                       wire, Order::RowMajor),
                       0, 0, rows(owner, j), p.n};
      const int step = b.add_sum(b.copy(sum, sources.front()), sources, deps, b.next_compute_lane(),
                                 "node partial sum for " + piece_name(id_of(owner, j), c));
      outgoing[static_cast<std::size_t>(j)].emplace_back(sum, step);
    }
  };
  // Batch t: the exchange within the node of chunk t, between nodes of chunk t - 1.
  auto exchange = [&](int t) {
    const int batch = b.next_batch();
    if (t < c)
      for (int s = 1; s < L; ++s) {
        const int to = g.member(n0, (l0 + s) % L), from = g.member(n0, (l0 - s + L) % L);
        const int l = g.local(to);
        if (block_rows(l, t) > 0) {
          std::vector<int> deps;
          for (int n = 0; n < N; ++n) deps.push_back(gemm_of[static_cast<std::size_t>(t)][static_cast<std::size_t>(g.member(n, l))]);
          b.add_step(SendOp{Region{products[static_cast<std::size_t>(t)], block_first(l, t), 0, block_rows(l, t), p.n},
                            to, t},
                     kCommLane, deps, "send products for local rank " + std::to_string(l) + " chunk " + std::to_string(t),
                     batch);
        }
        if (block_rows(l0, t) == 0) continue;
        const Region block{b.add_workspace("products from rank " + std::to_string(from) + " chunk " + std::to_string(t),
                                           block_rows(l0, t), p.n, wire, Order::RowMajor),
                           0, 0, block_rows(l0, t), p.n};
        const int recv = b.add_step(RecvOp{block, from, t}, kCommLane, {},
                                    "receive products from rank " + std::to_string(from) + " chunk " + std::to_string(t),
                                    batch);
        column[static_cast<std::size_t>(t)].emplace_back(block, recv);
      }
    if (t >= 1) {
      const int j = t - 1;
      std::size_t next = 0;
      for (int k = 1; k < N; ++k) {
        const int to = g.member((n0 + k) % N, l0), from = g.member((n0 - k + N) % N, l0);
        if (rows(to, j) > 0) {
          const auto& [sum, ready] = outgoing[static_cast<std::size_t>(j)][next++];
          b.add_step(SendOp{sum, to, c + j}, kCommLane, {ready},
                     "send node partial sum for " + piece_name(id_of(to, j), c), batch);
        }
        if (rows(r, j) == 0) continue;
        const Region slot{b.add_workspace("node partial sum from node " + std::to_string(g.node(from)) + " chunk " +
                                              std::to_string(j),
                                          rows(r, j), p.n, wire, Order::RowMajor),
                          0, 0, rows(r, j), p.n};
        const int recv = b.add_step(RecvOp{slot, from, c + j}, kCommLane, {},
                                    "receive node partial sum from node " + std::to_string(g.node(from)) + " for " +
                                        piece_name(id_of(r, j), c),
                                    batch);
        incoming[static_cast<std::size_t>(j)].emplace_back(slot, recv);
      }
    }
  };
  // Stage 3: my rows = my node's products + the other nodes' partial sums.
  auto finish = [&](int j) {
    if (rows(r, j) == 0) return;
    std::vector<Region> sources{product_rows(r, j)};
    std::vector<int> deps{gemm_of[static_cast<std::size_t>(j)][static_cast<std::size_t>(r)]};
    for (const auto& [block, recv] : column[static_cast<std::size_t>(j)]) {
      sources.push_back(Region{block.buffer, within_block(r, j), 0, rows(r, j), p.n});
      deps.push_back(recv);
    }
    for (const auto& [slot, recv] : incoming[static_cast<std::size_t>(j)]) {
      sources.push_back(slot);
      deps.push_back(recv);
    }
    finished[static_cast<std::size_t>(j)] = b.add_sum(b.finish(c_rows(j), sources.front()), sources, deps,
                                                      b.next_compute_lane(), "sum and finish " + piece_name(id_of(r, j), c));
  };
  for (int t = 0; t <= c + 1; ++t) {
    if (t < c) multiply(t);
    if (t >= 1 && t <= c) node_sums(t - 1);
    if (t <= c) exchange(t);
    if (t >= 2) finish(t - 2);
  }
  if (!all_reduce) return;

  // GEMM-AR: every finished piece to every rank, hierarchically, in C's type.
  std::vector<Region> own(static_cast<std::size_t>(c));
  std::vector<int> ready(static_cast<std::size_t>(c), -1);
  for (int j = 0; j < c; ++j) {
    ready[static_cast<std::size_t>(j)] = finished[static_cast<std::size_t>(j)];
    own[static_cast<std::size_t>(j)] = c_rows(j);
    if (rows(r, j) == 0 || b.same_bytes_as_tight(c_rows(j), Order::RowMajor)) continue;
    own[static_cast<std::size_t>(j)] =
        Region{b.add_workspace("finished " + piece_name(id_of(r, j), c), rows(r, j), p.n, p.dtype, Order::RowMajor), 0,
               0, rows(r, j), p.n};
    ready[static_cast<std::size_t>(j)] = b.add_step(b.copy(own[static_cast<std::size_t>(j)], c_rows(j)),
                                                    b.next_compute_lane(), {finished[static_cast<std::size_t>(j)]},
                                                    "pack finished " + piece_name(id_of(r, j), c));
  }
  std::vector<int> landing(static_cast<std::size_t>(P * c), -1);
  auto slot = [&](int id) {
    if (landing[static_cast<std::size_t>(id)] < 0)
      landing[static_cast<std::size_t>(id)] =
          b.add_workspace("finished " + piece_name(id, c), pieces.count(id), p.n, p.dtype, Order::RowMajor);
    return Region{landing[static_cast<std::size_t>(id)], 0, 0, pieces.count(id), p.n};
  };
  hierarchical_all_gather(
      b, g, pieces, c, slot, [&](int j) { return own[static_cast<std::size_t>(j)]; },
      [&](int j) { return ready[static_cast<std::size_t>(j)]; }, 2 * c,
      [&](int id, const Region& region, int step) {
        const Region into{kBufferC, pieces.offset(id), 0, pieces.count(id), p.n};
        b.add_step(b.copy(into, region), b.next_compute_lane(), {step}, "unpack finished " + piece_name(id, c));
      });
}

}  // namespace

std::string describe_hierarchical(const Problem& p, const ScheduleOptions& o) {
  const NodeGrid g(o.node_of_rank, p.group_size);
  const int N = g.nodes(), L = g.per_node();
  std::string text = str(N, " node", N > 1 ? "s" : "", " of ", L, " rank", L > 1 ? "s" : "", ": ");
  if (p.operation == Operation::AgGemm)
    text += "within each node every piece of op(A), between nodes only ranks of one local index, each piece once";
  else {
    const ReductionWire w = reduction_wire(p, o, Algorithm::Hierarchical);
    text += str("within each node products for each local rank, between nodes only ranks of one local index, each "
                "node's partial sums once; both travel as ", dtype_name(w.type), ", summed in ", dtype_name(w.summed_in));
    if (p.operation == Operation::GemmAr) text += "; then the finished rows the same two ways";
  }
  return text + "; chunk k between nodes beside chunk k-1 within a node";
}

void build_hierarchical(ScheduleBuilder& b) {
  const NodeGrid grid(b.options().node_of_rank, b.P());
  if (b.problem().operation == Operation::AgGemm)
    hierarchical_ag_gemm(b, grid);
  else
    hierarchical_reduction(b, grid);
}

}  // namespace weave::internal::plan
