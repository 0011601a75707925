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
#include <functional>
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
  const int64_t rows = to.rows.local_end(my_row), cols = to.cols.local_end(my_col);
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

// The step that puts one side of `panel` into `dst`, for the band [band0,
// band0 + length) of my rows of C (op(A): length x width) or of my columns
// (op(B): width x length): one copy where its pieces lie one after
// another, else one rectangle per run.
StepOp pack_panel_band(ScheduleBuilder& b, const GemmPlan& plan, const Panel& panel, bool is_a, int64_t band0,
                       int64_t length, const Region& dst) {
  const SummaOperand& x = is_a ? plan.a : plan.b;
  if (panel.contiguous(is_a)) {
    Region held = held_panel(plan, panel, is_a);
    (is_a ? held.row0 : held.col0) += band0;
    (is_a ? held.rows : held.cols) = length;
    return b.copy(dst, held);
  }
  const std::vector<IndexRun> outer{IndexRun{x.outer_begin + band0, 0, length}};
  const std::vector<IndexRun> k = panel_runs(panel, is_a);
  return RearrangeOp{dst, b.whole(x.buffer), Op::N, is_a ? outer : k, is_a ? k : outer};
}

// The same for all my rows (op(A), m_loc x width) or columns (op(B)).
StepOp pack_panel(ScheduleBuilder& b, const GemmPlan& plan, const Panel& panel, bool is_a, const Region& dst) {
  return pack_panel_band(b, plan, panel, is_a, 0, is_a ? plan.m_loc : plan.n_loc, dst);
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

// WEAVE_GEMM in bands of C (ScheduleOptions::gemm_bands). On a grid of one
// row, op(A)'s K is spread over the grid columns and op(B) is held whole
// along K by every rank: C's rows are cut into bands, and band by band the
// ranks of a grid row send each other their panels of op(A) restricted to
// the band's rows, into one buffer per band holding the band's rows of
// op(A) over all of K (panels side by side, in panel order), while the band
// before is multiplied: one GEMM over all of K per band, writing C once.
// With 16-bit C that is one rounding without the float32 sums SUMMA reads
// and writes once per panel. On a grid of one column the roles turn: op(B)
// travels along the grid columns in bands of C's columns. Elsewhere op(A)
// travels in bands and op(B) is gathered whole first (as the sequential
// variant does). The held operand is read where it lies when its panels
// follow one another in its local array in panel order; else it is placed
// whole in panel order first (a permutation of K that both operands share,
// so the product is the same).
namespace {

// The most panels a band of the travelling operand is cut into so that the
// held operand can be read where it lies (one message per panel and band);
// beyond it panels join pieces that lie apart and the held operand is
// placed in their order. Not measured (a first guess).
constexpr std::size_t kMaxPanelsPerBand = 64;

// Bands of C start on multiples of this many rows (columns): 32 bytes of
// FP8 to 256 of complex128, so that band buffers and C's bands stay aligned.
constexpr int64_t kBandAlignment = 32;

// `panels` cut where the held operand's pieces (`held_is_a`) stop following
// one another in its owner's local array, in K order: each part is one
// block of the held operand, so where its owner holds all of K in order
// they chain into it as it lies.
std::vector<Panel> split_where_held_apart(const std::vector<Panel>& panels, bool held_is_a) {
  std::vector<Panel> out;
  for (const Panel& panel : panels)
    for (std::size_t i = 0; i < panel.pieces.size(); ++i) {
      const PanelPiece& piece = panel.pieces[i];
      const PanelPiece* before = i > 0 ? &panel.pieces[i - 1] : nullptr;
      const auto local = [&](const PanelPiece& x) { return held_is_a ? x.a_local : x.b_local; };
      if (!before || local(*before) + before->width != local(piece)) {
        Panel part;
        part.a_owner = panel.a_owner;
        part.b_owner = panel.b_owner;
        out.push_back(part);
      }
      out.back().pieces.push_back(piece);
      out.back().width += piece.width;
    }
  std::stable_sort(out.begin(), out.end(), [](const Panel& x, const Panel& y) { return x.k0() < y.k0(); });
  return out;
}

// Whether `panels` of the held operand lie one after another in its local
// array, all held by this rank (owner -1 or mine).
bool chain_in_place(const std::vector<Panel>& panels, bool held_is_a, int mine) {
  if (panels.empty()) return false;
  for (std::size_t q = 0; q < panels.size(); ++q) {
    const Panel& panel = panels[q];
    const int owner = held_is_a ? panel.a_owner : panel.b_owner;
    if ((owner != -1 && owner != mine) || !panel.contiguous(held_is_a)) return false;
    if (q == 0) continue;
    const auto start = [&](const Panel& x) { return held_is_a ? x.pieces.front().a_local : x.pieces.front().b_local; };
    if (start(panel) != start(panels[q - 1]) + panels[q - 1].width) return false;
  }
  return true;
}

}  // namespace

void build_gemm_in_bands(ScheduleBuilder& b) {
  const Problem& p = b.problem();
  if (p.group_size == 1) return local_gemm(b);
  const ScheduleOptions& o = b.options();
  const GridOperands& g = p.grid;
  const int me = b.rank(), my_row = g.row_of(me), my_col = g.col_of(me);
  GemmPlan plan = prepare_operands(b);
  const bool band_a = g.pcols > 1;  // op(A) travels in bands of rows; else op(B) in bands of columns
  const bool whole_is_a = !band_a;
  const bool line = g.prows == 1 || g.pcols == 1;
  const int held_owner_mine = whole_is_a ? my_col : my_row;
  // On a grid of one row (column) the held operand is read where it lies
  // where its panels chain in its local array, cut there if need be.
  bool y_in_place = line && chain_in_place(plan.panels, whole_is_a, held_owner_mine);
  if (line && !y_in_place) {
    std::vector<Panel> split = split_where_held_apart(plan.panels, whole_is_a);
    if (split.size() <= kMaxPanelsPerBand && chain_in_place(split, whole_is_a, held_owner_mine)) {
      plan.panels = std::move(split);
      y_in_place = true;
    }
  }
  const int n_panels = static_cast<int>(plan.panels.size());
  const int pack_lane = o.compute_lanes > 1 ? 1 : 0;
  const bool multiplies = plan.m_loc > 0 && plan.n_loc > 0 && n_panels > 0;
  // My rows of C (every rank of my grid row has the same), or my columns.
  const int64_t outer = band_a ? plan.m_loc : plan.n_loc;
  // Band b's panel q carries tag 3 + 2 (n_panels (b + 1) + q) (+ 1 for op(B)),
  // the whole operand's panels 3 + 2q (+ 1): within kMaxSummaPanels pairs.
  const int64_t most_bands = std::max<int64_t>(1, kMaxSummaPanels / std::max(n_panels, 1) - 1);
  const int64_t bands = std::min({static_cast<int64_t>(std::max(o.gemm_bands, 1)), std::max<int64_t>(outer, 1),
                                  most_bands});
  auto band_tag = [&](int64_t band, int q, bool a) {
    return kFirstPanelTag + static_cast<int>(2 * (n_panels * (band + 1) + q)) + (a ? 0 : 1);
  };
  // The ranks along my grid row (op(A)) or column (op(B)) that multiply a
  // panel I hold.
  auto peers_of = [&](bool is_a) {
    std::vector<int> peers;
    if ((is_a ? plan.m_loc : plan.n_loc) == 0) return peers;
    const int others = is_a ? g.pcols : g.prows, mine = is_a ? my_col : my_row;
    for (int t = 0; t < others; ++t) {
      if (t == mine || (is_a ? g.c.cols.count(t) : g.c.rows.count(t)) == 0) continue;
      peers.push_back(is_a ? g.rank_at(my_row, t) : g.rank_at(t, my_col));
    }
    return peers;
  };
  // Batches are numbered alike on every rank, whatever it sends or receives.
  // In the order they are issued: band 0, the held operand, bands 1 on.
  std::vector<int> band_batch(static_cast<std::size_t>(bands));
  if (bands > 0) band_batch[0] = b.next_batch();
  const int y_batch = b.next_batch();
  for (std::size_t i = 1; i < band_batch.size(); ++i) band_batch[i] = b.next_batch();

  // Gathers the rows [row0, row0 + length) of my rows of C of op(A) (or
  // those columns of op(B)) over all of K into `buffer`, panels side by
  // side in panel order: the panels I hold placed there (and sent along my
  // grid row or column to the ranks that multiply them), the others
  // received. Returns the steps that fill it.
  auto gather = [&](bool is_a, int64_t row0, int64_t length, int buffer, const std::function<int(int)>& tag,
                    int batch, const std::string& suffix) {
    const SummaOperand& op = is_a ? plan.a : plan.b;
    const std::vector<int> peers = peers_of(is_a);
    std::vector<int> filled;
    int64_t offset = 0;
    for (int q = 0; q < n_panels; ++q) {
      const Panel& panel = plan.panels[static_cast<std::size_t>(q)];
      const int owner = is_a ? panel.a_owner : panel.b_owner;
      const Region place =
          is_a ? Region{buffer, 0, offset, length, panel.width} : Region{buffer, offset, 0, panel.width, length};
      const std::string what = str(is_a ? "op(A)" : "op(B)", " panel ", q, suffix);
      offset += panel.width;
      if (owner == -1 || owner == (is_a ? my_col : my_row)) {
        const int copy = b.add_step(pack_panel_band(b, plan, panel, is_a, row0, length, place), pack_lane, op.ready,
                                    "place " + what + pieces_label(panel, is_a));
        filled.push_back(copy);
        if (owner == -1) continue;
        for (int peer : peers)
          b.add_step(SendOp{place, peer, tag(q)}, kCommLane, {copy}, str("send ", what, " to rank ", peer), batch);
      } else if (multiplies) {
        const int from = is_a ? g.rank_at(my_row, owner) : g.rank_at(owner, my_col);
        filled.push_back(
            b.add_step(RecvOp{place, from, tag(q)}, kCommLane, {}, str("receive ", what, " from rank ", from), batch));
      }
    }
    return filled;
  };
  // Whether I have anything to gather of an operand: panels I multiply, or
  // hold for ranks that multiply them.
  auto wanted = [&](bool is_a) { return n_panels > 0 && (multiplies || !peers_of(is_a).empty()); };

  // The travelling operand, band by band. Band 0 is half as wide as the
  // others: the first GEMM waits for all of it. Bands start on multiples of
  // kBandAlignment rows (columns), so that every band buffer's leading
  // dimension and C's band keep the alignment cuBLASLt's fast kernels want
  // (bands of 2340 bf16 rows ran 4 x slower on H100s), where bands are
  // that wide.
  const bool x_wanted = wanted(band_a);
  const int64_t align = outer >= 4 * kBandAlignment * bands ? kBandAlignment : 1;
  std::vector<int64_t> band0(static_cast<std::size_t>(bands) + 1);
  for (int64_t i = 1; i < bands; ++i)
    band0[static_cast<std::size_t>(i)] =
        checked_mul(outer, 2 * i - 1, "the bands of ", outer, " rows or columns of C") / (2 * bands - 1) / align * align;
  band0[static_cast<std::size_t>(bands)] = outer;
  std::vector<Region> x_band(static_cast<std::size_t>(bands));
  std::vector<std::vector<int>> band_deps(static_cast<std::size_t>(bands));
  auto prepare = [&](int64_t i) {
    const int64_t r0 = band0[static_cast<std::size_t>(i)], length = band0[static_cast<std::size_t>(i) + 1] - r0;
    if (!x_wanted || length == 0) return;
    const int buffer = band_a ? b.add_workspace(str("op(A) band ", i), length, p.k, p.dtype, Order::ColMajor)
                              : b.add_workspace(str("op(B) band ", i), p.k, length, p.dtype, Order::RowMajor);
    x_band[static_cast<std::size_t>(i)] = b.whole(buffer);
    band_deps[static_cast<std::size_t>(i)] =
        gather(band_a, r0, length, buffer, [&](int q) { return band_tag(i, q, band_a); },
               band_batch[static_cast<std::size_t>(i)], str(" band ", i));
  };
  // Band 0 first, so that it leaves before the held operand is placed.
  if (bands > 0) prepare(0);

  // The operand every band reads whole: where it lies, or placed (and
  // gathered, on a 2-D grid) in panel order.
  Region y_all;
  std::vector<int> y_deps;
  if (y_in_place) {
    y_all = held_panel(plan, plan.panels.front(), whole_is_a);
    (whole_is_a ? y_all.cols : y_all.rows) = p.k;
    y_deps = (whole_is_a ? plan.a : plan.b).ready;
  } else if (wanted(whole_is_a)) {
    const int buffer = whole_is_a ? b.add_workspace("op(A) of my grid row", plan.m_loc, p.k, p.dtype, Order::ColMajor)
                                  : b.add_workspace("op(B) of my grid column", p.k, plan.n_loc, p.dtype, Order::RowMajor);
    y_all = b.whole(buffer);
    y_deps = gather(whole_is_a, 0, whole_is_a ? plan.m_loc : plan.n_loc, buffer,
                    [&](int q) { return panel_tag(q, whole_is_a); }, y_batch, "");
  }

  auto multiply = [&](int64_t i) {
    const int64_t r0 = band0[static_cast<std::size_t>(i)], length = band0[static_cast<std::size_t>(i) + 1] - r0;
    if (!multiplies || length == 0) return;
    std::vector<int> deps = band_deps[static_cast<std::size_t>(i)];
    deps.insert(deps.end(), y_deps.begin(), y_deps.end());
    const Region c = band_a ? Region{kBufferC, plan.c_row0 + r0, plan.c_col0, length, plan.n_loc}
                            : Region{kBufferC, plan.c_row0, plan.c_col0 + r0, plan.m_loc, length};
    const Region& xs = x_band[static_cast<std::size_t>(i)];
    const int gemm = b.add_step(GemmOp{band_a ? xs : y_all, Op::N, band_a ? y_all : xs, Op::N, c, Scalar::Alpha,
                                       Scalar::Beta, {}, {}},
                                0, deps, str("gemm band ", i));
    if (!p.has_bias) return;
    EpilogueOp e = b.add_bias(c);
    e.bias = band_a ? bias_block(plan) : Region{plan.bias_buffer, 0, plan.c_col0 + r0, 1, length};
    std::vector<int> bias_deps = plan.bias_ready;
    bias_deps.push_back(gemm);
    b.add_step(e, 0, bias_deps, str("bias band ", i));
  };
  // Band i + 1 is placed and on its way before band i is multiplied.
  for (int64_t i = 0; i < bands; ++i) {
    if (i + 1 < bands) prepare(i + 1);
    multiply(i);
  }
  if (!multiplies) finish_c(b, plan, -1);
  b.notes() += str(panel_notes(plan), " ", band_a ? "op(A)" : "op(B)", " travels in ", bands, " band",
                   bands == 1 ? "" : "s", " of my ", band_a ? "rows" : "columns", " of C (the first half as wide), "
                   "one GEMM over all of K per band; ", whole_is_a ? "op(A)" : "op(B)",
                   y_in_place ? " read where it lies;" : line ? " placed whole in panel order first;"
                                                              : " gathered whole first, in panel order;");
}

}  // namespace weave::internal::plan
