// WEAVE_GEMM over the whole P_r x P_c grid (DESIGN.md section 3): SUMMA.
//
// Rank (i, j) computes its own blocks of C: the rows of C its grid row holds
// times the columns its grid column holds. It needs, panel by panel along
// K, the matching rows of op(A) (held in grid row i, by the grid column that
// holds that panel of op(A)'s K) and columns of op(B) (held in grid column j
// by one grid row). So the owner of each panel of op(A) sends it along its
// grid row and the owner of each panel of op(B) along its grid column, and
// every rank adds the product of the two panels to its C. With overlap, the
// panels travel into a few slots ahead of the multiplication: panel k + 1
// (and k + 2) are on their way while panel k is multiplied, over whatever
// transport carries the plan's sends and receives.
//
// SUMMA reads op(A) where its rows lie as C's rows do and op(B) where its
// columns lie as C's columns do. An operand that lies otherwise (stored
// transposed, its rows in other blocks than C's, or in blocks so narrow
// that broadcasting them one by one would cost more than moving them) is
// first moved into that layout, in panels of the plan's width
// (grid_redistribution.hpp); so is a bias whose columns lie unlike C's.
// Panels join pieces of the common refinement of op(A)'s and op(B)'s K
// layouts (summa_panels.hpp): blocks that do not line up give narrower
// pieces, never a wrong answer, and the pieces of one owner pair join into
// panels of up to the plan's width; a side whose pieces do not lie one
// after another in its owner's local array is packed into the panel's slot
// first.
//
// The sequential variant moves every panel first (one batch) into whole
// op(A) and op(B) blocks, then multiplies once: the baseline the overlap is
// measured against.
#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "plan/grid_redistribution.hpp"
#include "plan/schedule_builder.hpp"
#include "plan/summa_panels.hpp"

namespace weave::internal::plan {

namespace {

// Tags: each redistributed operand one message per pair of ranks; panel p
// of op(A) and op(B) one message each per pair.
constexpr int kRedistributeTagA = 0, kRedistributeTagB = 1, kRedistributeTagBias = 2;
constexpr int kFirstPanelTag = 3;
int panel_tag(int panel, bool a) { return kFirstPanelTag + 2 * panel + (a ? 0 : 1); }

// In-place panel pieces narrower than this on average, when there are more
// than kNarrowPanelsFrom of them, are moved into panels of the plan's width
// first: a broadcast and a GEMM per block of a few columns (or a panel
// packed from as many pieces) cost more than moving the operands once. Not
// measured yet (a first guess).
constexpr int64_t kMinPanelWidth = 16;
constexpr std::size_t kNarrowPanelsFrom = 64;
// Panels carry tags 3 + 2p and 4 + 2p, within what every transport's tags
// hold (UCX: 2^19); the planner widens panels so moved operands stay below.

// op(A) (M x K) or op(B) (K x N) as SUMMA reads it: from the caller's
// buffer, or from a workspace buffer it was moved into (always op N).
struct SummaOperand {
  int buffer = kBufferA;
  Op op = Op::N;
  bool moved = false;
  AxisLayout k;               // op(X)'s K: along the grid columns (A) or rows (B)
  int64_t outer_begin = 0;    // A: first local row of my rows of C; B: first local column of my columns
  std::vector<int> ready;     // steps that fill a workspace copy
};

// Moving X (the caller's, laid out as `from`) into a new workspace buffer
// holding op(X) laid out as `to` (its local positions are the buffer's).
// Every piece travels in one batch under the operand's tag. In two halves,
// so that every operand's packing comes before any unpacking in the
// compute order: an unpack waits for its receive, which is issued with the
// batch, which waits for every pack.
struct Move {
  int buffer = -1;
  std::vector<int> ready;  // the steps after which the buffer is complete
  std::vector<std::pair<int, RedistributionPiece>> to_unpack;  // receive step, piece
  std::vector<int> incoming;  // their receive buffers
};

// Runs into (or out of) a tight block: packed positions one after another.
std::vector<IndexRun> packed(std::vector<IndexRun> runs, bool at_destination) {
  int64_t next = 0;
  for (IndexRun& r : runs) {
    (at_destination ? r.dst : r.src) = next;
    next += r.length;
  }
  return runs;
}

// The piece as one region of `buffer`, on its source side or its target side.
Region single_region(int buffer, const RedistributionPiece& piece, bool source) {
  const IndexRun &r = piece.rows.front(), &c = piece.cols.front();
  return Region{buffer, source ? r.src : r.dst, source ? c.src : c.dst, piece.row_count, piece.col_count};
}

// Keeps my own part, packs and sends what others want, posts my receives.
Move start_move(ScheduleBuilder& b, const std::string& name, int from_buffer, const GridLayout& from, Op op,
                const GridLayout& to, Order order, int tag, int batch) {
  const Problem& p = b.problem();
  const GridOperands& g = p.grid;
  const int me = b.rank(), my_row = g.row_of(me), my_col = g.col_of(me);
  const int64_t rows = to.rows.is_replicated() ? to.rows.extent() : to.rows.local_end(my_row);
  const int64_t cols = to.cols.is_replicated() ? to.cols.extent() : to.cols.local_end(my_col);
  Move move;
  move.buffer = b.add_workspace(name, rows, cols, p.dtype, order);
  const Region from_all = b.whole(from_buffer);
  const Region to_all = b.whole(move.buffer);
  for (const RedistributionPiece& piece : redistribution_pieces(from, op, to, g, me)) {
    const bool single = piece.rows.size() == 1 && piece.cols.size() == 1;
    const std::string between = str(" of ", name, " rank ", piece.source, " -> ", piece.target);
    if (piece.source == me && piece.target == me) {
      move.ready.push_back(
          b.add_step(RearrangeOp{to_all, from_all, op, piece.rows, piece.cols}, 0, {}, "keep part" + between));
    } else if (piece.source == me) {
      Region send;
      int pack = -1;
      // Pieces travel as column-major blocks.
      if (single && op == Op::N && b.same_bytes_as_tight(single_region(from_buffer, piece, true), Order::ColMajor)) {
        send = single_region(from_buffer, piece, true);
      } else {
        const int buffer =
            b.add_workspace("outgoing" + between, piece.row_count, piece.col_count, p.dtype, Order::ColMajor);
        send = b.whole(buffer);
        pack = b.add_step(RearrangeOp{send, from_all, op, packed(piece.rows, true), packed(piece.cols, true)}, 0, {},
                          "pack part" + between);
      }
      b.add_step(SendOp{send, piece.target, tag}, kCommLane, {pack}, "send part" + between, batch);
    } else if (single && b.same_bytes_as_tight(single_region(move.buffer, piece, false), Order::ColMajor)) {
      // Straight into place.
      move.ready.push_back(b.add_step(RecvOp{single_region(move.buffer, piece, false), piece.source, tag}, kCommLane,
                                      {}, "receive part" + between, batch));
    } else {
      const int buffer =
          b.add_workspace("incoming" + between, piece.row_count, piece.col_count, p.dtype, Order::ColMajor);
      const int recv =
          b.add_step(RecvOp{b.whole(buffer), piece.source, tag}, kCommLane, {}, "receive part" + between, batch);
      move.to_unpack.push_back({recv, piece});
      move.incoming.push_back(buffer);
    }
  }
  return move;
}

// Unpacks what arrived packed.
void finish_move(ScheduleBuilder& b, Move& move, const std::string& name) {
  for (std::size_t i = 0; i < move.to_unpack.size(); ++i) {
    const auto& [recv, piece] = move.to_unpack[i];
    move.ready.push_back(b.add_step(RearrangeOp{b.whole(move.buffer), b.whole(move.incoming[i]), Op::N,
                                                packed(piece.rows, false), packed(piece.cols, false)},
                                    0, {recv}, str("unpack part of ", name, " rank ", piece.source, " -> ", piece.target)));
  }
}

const char* why_moved(Op op, bool aligned) {
  if (op != Op::N) return "stored transposed";
  if (!aligned) return "laid out unlike C";
  return "in blocks too narrow for panels";
}

struct GemmPlan {
  SummaOperand a, b;
  std::vector<Panel> panels;
  int bias_buffer = kBufferBias;
  std::vector<int> bias_ready;
  int64_t m_loc = 0, n_loc = 0, c_row0 = 0, c_col0 = 0;
};

// Decides where SUMMA reads each operand, moves those that must move (in
// one batch, taken by every rank alike), and cuts K into panels.
GemmPlan prepare_operands(ScheduleBuilder& b) {
  const Problem& p = b.problem();
  const ScheduleOptions& o = b.options();
  const GridOperands& g = p.grid;
  const int me = b.rank(), my_row = g.row_of(me), my_col = g.col_of(me);
  GemmPlan plan;
  plan.m_loc = g.c.rows.count(my_row);
  plan.n_loc = g.c.cols.count(my_col);
  plan.c_row0 = g.c.rows.local_begin(my_row);
  plan.c_col0 = g.c.cols.local_begin(my_col);
  const int64_t width = o.panel_width;

  // op(A)'s rows must lie as C's rows, op(B)'s columns as C's columns.
  const bool a_aligned = g.a.rows.aligned_with(g.c.rows), b_aligned = g.b.cols.aligned_with(g.c.cols);
  bool a_in_place = p.op_a == Op::N && a_aligned, b_in_place = p.op_b == Op::N && b_aligned;
  const AxisLayout a_k_moved = AxisLayout::cyclic(p.k, width, 0, g.pcols);
  const AxisLayout b_k_moved = AxisLayout::cyclic(p.k, width, 0, g.prows);
  plan.panels = summa_panels(a_in_place ? g.a.cols : a_k_moved, b_in_place ? g.b.rows : b_k_moved, width);
  std::size_t pieces = 0;
  for (const Panel& panel : plan.panels) pieces += panel.pieces.size();
  const bool narrow = plan.panels.size() > static_cast<std::size_t>(kMaxSummaPanels) ||
                      (pieces > kNarrowPanelsFrom && p.k / static_cast<int64_t>(pieces) < kMinPanelWidth);
  if (narrow && (a_in_place || b_in_place)) {
    a_in_place = b_in_place = false;
    plan.panels = summa_panels(a_k_moved, b_k_moved, width);
  }
  if (plan.panels.size() > static_cast<std::size_t>(kMaxSummaPanels))
    fail(WEAVE_ERROR_INTERNAL, plan.panels.size(), " SUMMA panels of width ", width, " for K = ", p.k);
  // A bias in place has one row on every grid row and C's columns at C's
  // local positions (the GEMM's epilogue reads it at C's column indices).
  const bool bias_in_place = !p.has_bias || ((g.bias.rows.is_replicated() || g.prows == 1) &&
                                             g.bias.rows.local_begin(my_row) == 0 &&
                                             g.bias.cols.same_placement(g.c.cols));

  std::string& notes = b.notes();
  const bool moves = !a_in_place || !b_in_place || !bias_in_place;
  const int batch = moves ? b.next_batch() : -1;
  plan.a.k = a_in_place ? g.a.cols : a_k_moved;
  plan.b.k = b_in_place ? g.b.rows : b_k_moved;
  const char* a_name = "op(A) in SUMMA's layout";
  const char* b_name = "op(B) in SUMMA's layout";
  const char* bias_name = "bias in C's column layout";
  Move a_move, b_move, bias_move;
  if (!a_in_place)
    a_move = start_move(b, a_name, kBufferA, g.a, p.op_a, GridLayout{g.c.rows, a_k_moved}, Order::ColMajor,
                        kRedistributeTagA, batch);
  if (!b_in_place)
    b_move = start_move(b, b_name, kBufferB, g.b, p.op_b, GridLayout{b_k_moved, g.c.cols}, Order::RowMajor,
                        kRedistributeTagB, batch);
  if (!bias_in_place)
    bias_move = start_move(b, bias_name, kBufferBias, g.bias, Op::N,
                           GridLayout{AxisLayout::replicated(1, g.prows), g.c.cols}, Order::ColMajor,
                           kRedistributeTagBias, batch);
  // Where SUMMA reads an operand: the caller's buffer, or the moved copy.
  auto place = [&](SummaOperand& x, bool in_place, int caller_buffer, int64_t caller_begin, Move& move,
                   const char* name, int64_t c_begin, const std::string& why) {
    if (in_place) {
      x.buffer = caller_buffer;
      x.outer_begin = caller_begin;
      return;
    }
    finish_move(b, move, name);
    x.buffer = move.buffer;
    x.ready = move.ready;
    x.moved = true;
    x.outer_begin = c_begin;
    notes += why;
  };
  place(plan.a, a_in_place, kBufferA, g.a.rows.local_begin(my_row), a_move, a_name, plan.c_row0,
        str(" op(A) moved into C's row layout (", why_moved(p.op_a, a_aligned), ");"));
  place(plan.b, b_in_place, kBufferB, g.b.cols.local_begin(my_col), b_move, b_name, plan.c_col0,
        str(" op(B) moved into C's column layout (", why_moved(p.op_b, b_aligned), ");"));
  if (!bias_in_place) {
    finish_move(b, bias_move, bias_name);
    plan.bias_buffer = bias_move.buffer;
    plan.bias_ready = bias_move.ready;
    notes += " bias moved into C's column layout;";
  }
  return plan;
}

// My block of C, and the bias row over its columns.
Region c_block(const GemmPlan& plan) { return Region{kBufferC, plan.c_row0, plan.c_col0, plan.m_loc, plan.n_loc}; }
Region bias_block(const GemmPlan& plan) { return Region{plan.bias_buffer, 0, plan.c_col0, 1, plan.n_loc}; }

// Panel `panel` of op(A) (my rows) or of op(B) (my columns) where its
// owner holds it, when its pieces lie one after another there
// (panel.contiguous(is_a)).
Region held_panel(const GemmPlan& plan, const Panel& panel, bool is_a) {
  const PanelPiece& first = panel.pieces.front();
  return is_a ? Region{plan.a.buffer, plan.a.outer_begin, first.a_local, plan.m_loc, panel.width}
              : Region{plan.b.buffer, first.b_local, plan.b.outer_begin, panel.width, plan.n_loc};
}

// The runs of consecutive local positions (src) that one side of `panel`
// is made of, and where each goes in the panel (dst).
std::vector<IndexRun> panel_runs(const Panel& panel, bool is_a) {
  std::vector<IndexRun> runs;
  int64_t offset = 0;
  for (const PanelPiece& piece : panel.pieces) {
    const int64_t local = is_a ? piece.a_local : piece.b_local;
    if (!runs.empty() && runs.back().src + runs.back().length == local)
      runs.back().length += piece.width;
    else
      runs.push_back(IndexRun{local, offset, piece.width});
    offset += piece.width;
  }
  return runs;
}

// The step that puts one side of `panel` into `dst` (m_loc x width of
// op(A), width x n_loc of op(B)): one copy where its pieces lie one after
// another, else one rectangle per run.
StepOp pack_panel(ScheduleBuilder& b, const GemmPlan& plan, const Panel& panel, bool is_a, const Region& dst) {
  if (panel.contiguous(is_a)) return b.copy(dst, held_panel(plan, panel, is_a));
  const SummaOperand& x = is_a ? plan.a : plan.b;
  const std::vector<IndexRun> outer{IndexRun{x.outer_begin, 0, is_a ? plan.m_loc : plan.n_loc}};
  const std::vector<IndexRun> k = panel_runs(panel, is_a);
  return RearrangeOp{dst, b.whole(x.buffer), Op::N, is_a ? outer : k, is_a ? k : outer};
}

std::string pieces_label(const Panel& panel, bool is_a) {
  if (panel.contiguous(is_a)) return "";
  const std::size_t runs = panel_runs(panel, is_a).size();
  return str(" (", runs, " runs)");
}

// beta * C (and bias) when no product reaches my block (K = 0), or bias
// after the last product.
void finish_c(ScheduleBuilder& b, const GemmPlan& plan, int last_gemm) {
  const Problem& p = b.problem();
  if (plan.m_loc == 0 || plan.n_loc == 0) return;
  const Region c = c_block(plan);
  if (last_gemm < 0) {
    EpilogueOp e;
    e.dst = c;
    e.dst_scale = Scalar::Beta;
    e.has_bias = p.has_bias;
    if (p.has_bias) e.bias = bias_block(plan);
    b.add_step(e, 0, plan.bias_ready, "beta * C (no product)");
    return;
  }
  if (!p.has_bias) return;
  EpilogueOp e = b.add_bias(c);
  e.bias = bias_block(plan);
  std::vector<int> deps = plan.bias_ready;
  deps.push_back(last_gemm);
  b.add_step(e, 0, deps, "bias");
}

// How K was cut, and which panels are packed from several pieces.
std::string panel_notes(const GemmPlan& plan) {
  int64_t widest = 0;
  std::size_t joined = 0, most_pieces = 0;
  bool packs_a = false, packs_b = false;
  for (const Panel& panel : plan.panels) {
    widest = std::max(widest, panel.width);
    if (panel.pieces.size() < 2) continue;
    ++joined;
    most_pieces = std::max(most_pieces, panel.pieces.size());
    packs_a = packs_a || !panel.contiguous(true);
    packs_b = packs_b || !panel.contiguous(false);
  }
  std::string notes =
      str(" ", plan.panels.size(), " panel", plan.panels.size() == 1 ? "" : "s", " of K, up to ", widest, " wide;");
  if (joined > 0)
    notes += str(" ", joined, " of them joined from up to ", most_pieces, " pieces of one owner pair, ",
                 packs_a && packs_b ? "op(A) and op(B)" : packs_a ? "op(A)" : "op(B)",
                 " packed from its pieces into the panel;");
  return notes;
}

// The single rank: one GEMM on the caller's buffers, whatever their ops.
void local_gemm(ScheduleBuilder& b) {
  const Problem& p = b.problem();
  const GridOperands& g = p.grid;
  auto block = [](int buffer, const GridLayout& l) {
    return Region{buffer, l.rows.local_begin(0), l.cols.local_begin(0), l.rows.count(0), l.cols.count(0)};
  };
  GemmPlan plan;
  plan.m_loc = p.m;
  plan.n_loc = p.n;
  plan.c_row0 = g.c.rows.local_begin(0);
  plan.c_col0 = g.c.cols.local_begin(0);
  const bool bias_in_place =
      !p.has_bias || (g.bias.rows.local_begin(0) == 0 && g.bias.cols.same_placement(g.c.cols));
  if (!bias_in_place) {
    const GridLayout to{AxisLayout::replicated(1, 1), g.c.cols};
    Move move = start_move(b, "bias in C's column layout", kBufferBias, g.bias, Op::N, to, Order::ColMajor,
                           kRedistributeTagBias, -1);
    finish_move(b, move, "bias in C's column layout");
    plan.bias_buffer = move.buffer;
    plan.bias_ready = move.ready;
  }
  int gemm = -1;
  if (p.m > 0 && p.n > 0 && p.k > 0)
    gemm = b.add_step(GemmOp{block(kBufferA, g.a), p.op_a, block(kBufferB, g.b), p.op_b, c_block(plan), Scalar::Alpha,
                             Scalar::Beta, {}, {}},
                      0, {}, "gemm");
  finish_c(b, plan, gemm);
  b.notes() += " one rank: local GEMM;";
}

}  // namespace

void build_summa(ScheduleBuilder& b) {
  const Problem& p = b.problem();
  if (p.group_size == 1) return local_gemm(b);
  const ScheduleOptions& o = b.options();
  const GridOperands& g = p.grid;
  const int me = b.rank(), my_row = g.row_of(me), my_col = g.col_of(me);
  GemmPlan plan = prepare_operands(b);
  const int n_panels = static_cast<int>(plan.panels.size());
  std::vector<int> batch(static_cast<std::size_t>(n_panels));
  for (int& id : batch) id = b.next_batch();
  const int S = std::max(2, o.panel_slots), lookahead = S - 1;
  // Packing runs beside the GEMMs where there are two lanes (GPU streams).
  const int pack_lane = o.compute_lanes > 1 ? 1 : 0;
  int64_t widest = 0;
  for (const Panel& panel : plan.panels) widest = std::max(widest, panel.width);
  const bool multiplies = plan.m_loc > 0 && plan.n_loc > 0;
  // Slots: op(A) panels column-major (m_loc x width), op(B) panels row-major
  // (width x n_loc), so a panel of any width is one contiguous block.
  std::vector<int> a_slot(static_cast<std::size_t>(S)), b_slot(static_cast<std::size_t>(S));
  for (int s = 0; s < S; ++s) {
    a_slot[s] = b.add_workspace(str("op(A) panel slot ", s), plan.m_loc, widest, p.dtype, Order::ColMajor);
    b_slot[s] = b.add_workspace(str("op(B) panel slot ", s), widest, plan.n_loc, p.dtype, Order::RowMajor);
  }
  // Who reads each slot now: the next writer of the slot waits for them.
  std::vector<std::vector<int>> a_readers(static_cast<std::size_t>(S)), b_readers(static_cast<std::size_t>(S));
  std::vector<Region> a_use(static_cast<std::size_t>(n_panels)), b_use(static_cast<std::size_t>(n_panels));
  std::vector<std::vector<int>> gemm_deps(static_cast<std::size_t>(n_panels));

  // Gets panel q of one operand to where it is multiplied: the owner sends
  // it along its grid row (op(A)) or column (op(B)), packed into a slot when
  // it does not lie contiguously; the others receive it into a slot. A
  // holder whose panel is made of pieces apart from each other multiplies
  // the packed slot too.
  auto prepare = [&](int q, bool is_a) {
    const Panel& panel = plan.panels[static_cast<std::size_t>(q)];
    const SummaOperand& x = is_a ? plan.a : plan.b;
    const int owner = is_a ? panel.a_owner : panel.b_owner;
    const int mine = is_a ? my_col : my_row;
    const int slot = q % S;
    std::vector<std::vector<int>>& readers = is_a ? a_readers : b_readers;
    const Region slot_region = is_a ? Region{a_slot[slot], 0, 0, plan.m_loc, panel.width}
                                    : Region{b_slot[slot], 0, 0, panel.width, plan.n_loc};
    const std::string what = str(is_a ? "op(A)" : "op(B)", " panel ", q);
    Region& use = is_a ? a_use[q] : b_use[q];
    std::vector<int>& deps = gemm_deps[q];
    if (owner == -1 || owner == mine) {
      const bool in_one_block = panel.contiguous(is_a);
      // The peers along my grid row (op(A)) or column (op(B)) that multiply.
      std::vector<int> peers;
      const int others = is_a ? g.pcols : g.prows;
      for (int t = 0; t < others && owner != -1 && (is_a ? plan.m_loc : plan.n_loc) > 0; ++t) {
        if (t == mine) continue;
        if ((is_a ? g.c.cols.count(t) : g.c.rows.count(t)) == 0) continue;
        peers.push_back(is_a ? g.rank_at(my_row, t) : g.rank_at(t, my_col));
      }
      Region send;
      std::vector<int> send_deps = x.ready;
      if (in_one_block) {
        use = held_panel(plan, panel, is_a);
        deps.insert(deps.end(), x.ready.begin(), x.ready.end());
        send = use;
      }
      // Panels travel in the slots' layout (op(A) column-major, op(B) row-major).
      const bool send_packed =
          !peers.empty() && !(in_one_block && b.same_bytes_as_tight(send, is_a ? Order::ColMajor : Order::RowMajor));
      if (send_packed || (!in_one_block && multiplies)) {
        std::vector<int> pack_deps = readers[slot];
        pack_deps.insert(pack_deps.end(), x.ready.begin(), x.ready.end());
        const int pack = b.add_step(pack_panel(b, plan, panel, is_a, slot_region), pack_lane, pack_deps,
                                    "pack " + what + pieces_label(panel, is_a));
        send = slot_region;
        send_deps = {pack};
        readers[slot] = {};  // the sends below, and the GEMM where it reads the slot
        if (!in_one_block) {
          use = slot_region;
          deps.push_back(pack);
        }
      }
      if (peers.empty()) return;
      std::vector<int> sends;
      for (int peer : peers)
        sends.push_back(b.add_step(SendOp{send, peer, panel_tag(q, is_a)}, kCommLane, send_deps,
                                   str("send ", what, " to rank ", peer), batch[q]));
      if (send.buffer == slot_region.buffer) readers[slot] = sends;
      return;
    }
    if (!multiplies) return;
    const int from = is_a ? g.rank_at(my_row, owner) : g.rank_at(owner, my_col);
    const int recv = b.add_step(RecvOp{slot_region, from, panel_tag(q, is_a)}, kCommLane, readers[slot],
                                str("receive ", what, " from rank ", from), batch[q]);
    use = slot_region;
    deps.push_back(recv);
    readers[slot] = {};  // filled with the GEMM below
  };

  // 16-bit C sums its panels' products in float32 and is rounded once,
  // when it is finished (beta * C and bias in the same pass).
  const DType acc_type = accumulation_type(p.dtype);
  const bool accumulate = acc_type != p.dtype && multiplies && n_panels > 0;
  const Region acc = accumulate ? b.whole(b.add_workspace("C sums", plan.m_loc, plan.n_loc, acc_type, Order::ColMajor))
                                : Region{};
  int last_gemm = -1;
  auto multiply = [&](int q) {
    if (!multiplies) return;
    std::vector<int> deps = gemm_deps[q];
    deps.push_back(last_gemm);
    const Scalar first = accumulate ? Scalar::Zero : Scalar::Beta;
    last_gemm = b.add_step(GemmOp{a_use[q], Op::N, b_use[q], Op::N, accumulate ? acc : c_block(plan), Scalar::Alpha,
                                  last_gemm < 0 ? first : Scalar::One, {}, {}},
                           0, deps, str("gemm panel ", q));
    const int slot = q % S;
    if (a_use[q].buffer == a_slot[slot]) a_readers[slot].push_back(last_gemm);
    if (b_use[q].buffer == b_slot[slot]) b_readers[slot].push_back(last_gemm);
  };

  // Panels q + 1 .. q + lookahead are packed and on their way before panel
  // q is multiplied (compute steps run in this order).
  for (int q = 0; q < std::min(lookahead, n_panels); ++q) {
    prepare(q, true);
    prepare(q, false);
  }
  for (int q = 0; q < n_panels; ++q) {
    if (q + lookahead < n_panels) {
      prepare(q + lookahead, true);
      prepare(q + lookahead, false);
    }
    multiply(q);
  }
  if (accumulate) {
    std::vector<int> deps = plan.bias_ready;
    deps.push_back(last_gemm);
    EpilogueOp e = b.finish(c_block(plan), acc);
    if (p.has_bias) e.bias = bias_block(plan);
    b.add_step(e, 0, deps, str("finish C (", dtype_name(acc_type), " sums)"));
  } else {
    finish_c(b, plan, last_gemm);
  }
  b.notes() += str(panel_notes(plan), " ", S, " slots; op(A) panels travel along grid rows, op(B) panels along "
                   "grid columns;");
}

void build_gemm_sequential(ScheduleBuilder& b) {
  const Problem& p = b.problem();
  if (p.group_size == 1) return local_gemm(b);
  const GridOperands& g = p.grid;
  const int me = b.rank(), my_row = g.row_of(me), my_col = g.col_of(me);
  GemmPlan plan = prepare_operands(b);
  const int batch = b.next_batch();
  // Every panel of my rows of op(A) and my columns of op(B), side by side.
  const int a_all = b.add_workspace("op(A) of my grid row", plan.m_loc, p.k, p.dtype, Order::ColMajor);
  const int b_all = b.add_workspace("op(B) of my grid column", p.k, plan.n_loc, p.dtype, Order::RowMajor);
  std::vector<int> gemm_deps;
  int64_t offset = 0;
  for (std::size_t q = 0; q < plan.panels.size(); ++q) {
    const Panel& panel = plan.panels[q];
    for (const bool is_a : {true, false}) {
      const SummaOperand& x = is_a ? plan.a : plan.b;
      const int owner = is_a ? panel.a_owner : panel.b_owner;
      const int mine = is_a ? my_col : my_row;
      const Region place = is_a ? Region{a_all, 0, offset, plan.m_loc, panel.width}
                                : Region{b_all, offset, 0, panel.width, plan.n_loc};
      const std::string what = str(is_a ? "op(A)" : "op(B)", " panel ", q);
      if (owner == -1 || owner == mine) {
        const int copy =
            b.add_step(pack_panel(b, plan, panel, is_a, place), 0, x.ready, "place " + what + pieces_label(panel, is_a));
        gemm_deps.push_back(copy);
        if (owner == -1 || (is_a ? plan.m_loc : plan.n_loc) == 0) continue;
        const int others = is_a ? g.pcols : g.prows;
        for (int t = 0; t < others; ++t) {
          if (t == mine || (is_a ? g.c.cols.count(t) : g.c.rows.count(t)) == 0) continue;
          const int peer = is_a ? g.rank_at(my_row, t) : g.rank_at(t, my_col);
          b.add_step(SendOp{place, peer, panel_tag(static_cast<int>(q), is_a)}, kCommLane, {copy},
                     str("send ", what, " to rank ", peer), batch);
        }
        continue;
      }
      if (plan.m_loc == 0 || plan.n_loc == 0) continue;
      const int from = is_a ? g.rank_at(my_row, owner) : g.rank_at(owner, my_col);
      gemm_deps.push_back(b.add_step(RecvOp{place, from, panel_tag(static_cast<int>(q), is_a)}, kCommLane, {},
                                     str("receive ", what, " from rank ", from), batch));
    }
    offset += panel.width;
  }
  int gemm = -1;
  if (plan.m_loc > 0 && plan.n_loc > 0 && p.k > 0)
    gemm = b.add_step(GemmOp{b.whole(a_all), Op::N, b.whole(b_all), Op::N, c_block(plan), Scalar::Alpha, Scalar::Beta, {}, {}},
                      0, gemm_deps, "gemm");
  finish_c(b, plan, gemm);
  b.notes() += str(panel_notes(plan), " every panel gathered first, then one GEMM;");
}

}  // namespace weave::internal::plan
