// WEAVE_GEMM's schedules (SUMMA and its sequential variant) for whole grids
// of 1 to 6 ranks: structural checks (schedule_checks.hpp), then every rank
// simulated on real data in random orders that respect only what the
// schedules promise (schedule_simulator.hpp), compared with the oracle, with
// beta * C and bias counted into every element of C exactly once and the
// local arrays outside the matrices (before a submatrix's start, in ld
// gaps) untouched. Block-cyclic layouts of every block size, sources and
// starts, blocks of A and B that do not line up, transposes (moved into
// SUMMA's layout first), one block per process, replicated operands, and
// K = 0. Also the panels themselves and the redistribution pieces.
#include <gtest/gtest.h>

#include <sstream>

#include "group_problem.hpp"
#include "group_schedules.hpp"
#include "plan/grid_redistribution.hpp"
#include "plan/summa_panels.hpp"
#include "schedule_checks.hpp"
#include "schedule_simulator.hpp"

namespace weave_test {
namespace {

using weave::internal::AxisLayout;
using weave::internal::DType;
using weave::internal::Op;
using weave::internal::Order;
using weave::internal::plan::Algorithm;
using weave::internal::plan::Panel;
using weave::internal::plan::PanelPiece;
using weave::internal::plan::ScheduleOptions;

struct SummaCase {
  GridCase grid;
  ScheduleOptions options;
  double alpha = 1.0, beta = 0.0;
  std::string name() const {
    std::ostringstream out;
    out << grid.name() << " | " << weave::internal::plan::algorithm_name(options.algorithm)
        << " width=" << options.panel_width << " slots=" << options.panel_slots << " bands=" << options.gemm_bands
        << " lanes=" << options.compute_lanes
        << " alpha=" << alpha << " beta=" << beta;
    return out.str();
  }
};

enum class Model { DepsOnly, Host, StreamOrdered };

// "" when every check and simulation passed, else the first failure.
std::string run_summa_case(const SummaCase& c, int seeds, int* simulations) {
  const std::vector<weave::internal::Problem> problems = make_grid_problems(c.grid);
  std::vector<weave::internal::plan::Schedule> schedules;
  try {
    schedules = build_group_schedules(problems, c.options);
  } catch (const std::exception& e) {
    return "building the schedules threw: " + std::string(e.what());
  }
  const std::vector<std::string> structure = check_schedules(problems, schedules);
  if (!structure.empty()) {
    std::string out = "structural check failed:\n";
    for (std::size_t i = 0; i < structure.size() && i < 10; ++i) out += "  " + structure[i] + "\n";
    return out + weave::internal::plan::format_schedule(schedules[0]);
  }
  for (Model model : {Model::DepsOnly, Model::Host, Model::StreamOrdered})
    for (int seed = 1; seed <= seeds; ++seed) {
      SimulationOptions o;
      o.data_seed = 77 + seed;
      o.order_seed = seed;
      o.delay_events = seed % 2 == 0;
      o.alpha = c.alpha;
      o.beta = c.beta;
      o.lane_order = model != Model::DepsOnly;
      o.stream_ordered_comm = model == Model::StreamOrdered;
      const SimulationReport report = simulate(problems, schedules, o);
      ++*simulations;
      if (!report.ok()) {
        std::ostringstream out;
        out << "simulation (model " << static_cast<int>(model) << ", seed " << seed << ") failed:\n"
            << report.summary();
        for (const auto& s : schedules) out << weave::internal::plan::format_schedule(s);
        return out.str();
      }
    }
  return "";
}

void run_summa_cases(const std::vector<SummaCase>& cases, int seeds) {
  int simulations = 0, failures = 0;
  for (const SummaCase& c : cases) {
    const std::string failure = run_summa_case(c, seeds, &simulations);
    if (failure.empty()) continue;
    if (++failures <= 3) ADD_FAILURE() << c.name() << "\n" << failure.substr(0, 20000);
  }
  EXPECT_EQ(failures, 0) << failures << " of " << cases.size() << " cases failed";
  std::printf("[ summa ] %zu cases, %d simulations\n", cases.size(), simulations);
}

GridMatrix cyclic(int64_t mb, int64_t nb, int rsrc = 0, int csrc = 0) {
  GridMatrix x;
  x.mb = mb;
  x.nb = nb;
  x.rsrc = rsrc;
  x.csrc = csrc;
  return x;
}

struct Shape {
  int prows, pcols;
};
const Shape kGrids[] = {{1, 1}, {1, 3}, {3, 1}, {2, 2}, {2, 3}, {3, 2}, {1, 2}, {2, 1}};

struct Sizes {
  int64_t m, n, k;
};
const Sizes kSizes[] = {{13, 11, 9}, {7, 5, 3}, {20, 3, 37}, {9, 6, 0}, {1, 1, 1}, {5, 9, 17}};

// Block layouts of A, B, C: equal block sizes, mixed ones (blocks of A and B
// that do not line up), sources off 0, one block per process.
std::vector<std::array<GridMatrix, 3>> layouts(const Shape& g) {
  const int lr = g.prows - 1, lc = g.pcols - 1;
  return {{cyclic(1, 1), cyclic(1, 1), cyclic(1, 1)},
          {cyclic(2, 2), cyclic(2, 2), cyclic(2, 2)},
          {cyclic(7, 7, lr, lc), cyclic(7, 7, lr, lc), cyclic(7, 7, lr, lc)},
          {cyclic(32, 32), cyclic(32, 32), cyclic(32, 32)},
          {cyclic(2, 3), cyclic(5, 2, lr, 0), cyclic(2, 2, 0, lc)},
          {cyclic(3, 2), cyclic(2, 3), cyclic(3, 3)},
          {GridMatrix{}, GridMatrix{}, GridMatrix{}},
          {cyclic(4, 4), GridMatrix{}, cyclic(4, 3, lr, 0)}};
}

std::vector<SummaCase> sweep() {
  std::vector<SummaCase> cases;
  int counter = 0;
  for (const Shape& g : kGrids)
    for (const auto& l : layouts(g))
      for (int ops = 0; ops < 4; ++ops) {
        SummaCase c;
        GridCase& x = c.grid;
        x.prows = g.prows;
        x.pcols = g.pcols;
        const Sizes& z = kSizes[counter % 6];
        x.m = z.m;
        x.n = z.n;
        x.k = z.k;
        x.op_a = ops % 2 ? Op::T : Op::N;
        x.op_b = ops / 2 ? Op::T : Op::N;
        x.a = l[0];
        x.b = l[1];
        x.c = l[2];
        x.a.order = counter % 5 == 2 ? Order::RowMajor : Order::ColMajor;
        x.c.order = counter % 7 == 3 ? Order::RowMajor : Order::ColMajor;
        x.c.ld_padding = counter % 3 == 1 ? 2 : 0;
        x.b.ld_padding = counter % 4 == 2 ? 1 : 0;
        x.dtype = counter % 4 == 3 ? DType::F32 : DType::F64;
        // Bias: in C's column layout on every grid row, or laid out otherwise (moved).
        const int bias_kind = counter % 4;
        x.has_bias = bias_kind != 0;
        if (bias_kind == 1) {
          x.bias = x.c.mb == 0 ? GridMatrix{} : cyclic(1, x.c.nb, -1, x.c.csrc);
          if (x.c.mb == 0) x.bias.rsrc = -1;  // counts along the columns, every grid row
        } else if (bias_kind == 2) {
          x.bias = cyclic(1, 3, 0, 0);  // one grid row holds it, other blocks
        } else if (bias_kind == 3) {
          x.bias = cyclic(1, 1, -1, -1);  // replicated
        }
        c.options.algorithm = counter % 5 == 4 ? Algorithm::Sequential : Algorithm::Summa;
        c.options.panel_width = counter % 3 == 0 ? 4 : 256;
        c.options.panel_slots = 2 + counter % 2;
        // Bands of C (1 to 4, more than a rank has rows in places) instead of panels.
        if (c.options.algorithm == Algorithm::Summa && counter % 3 != 2) c.options.gemm_bands = 1 + counter % 4;
        c.options.compute_lanes = 1 + (counter / 2) % 2;
        c.alpha = counter % 3 == 0 ? 1.0 : -1.5;
        c.beta = counter % 2 ? 0.0 : 0.75;
        ++counter;
        cases.push_back(c);
      }
  return cases;
}

TEST(SummaSchedules, EveryGridLayoutAndTranspose) { run_summa_cases(sweep(), 2); }

TEST(SummaSchedules, SubmatricesOfOffsetLocalArrays) {
  // pdgemm's IA, JA: A, B, C start inside their block-cyclic arrays, at
  // different places, so rows align with C's only relatively (or not at all).
  std::vector<SummaCase> cases;
  int counter = 0;
  for (const Shape& g : kGrids)
    for (int variant = 0; variant < 4; ++variant) {
      SummaCase c;
      GridCase& x = c.grid;
      x.prows = g.prows;
      x.pcols = g.pcols;
      x.m = 11;
      x.n = 10;
      x.k = 13;
      x.a = cyclic(3, 3);
      x.b = cyclic(3, 3);
      x.c = cyclic(3, 3);
      x.a.row_start = variant == 1 ? 3 * g.prows : 1;
      x.a.col_start = 2;
      x.b.row_start = 4;
      x.b.col_start = variant == 2 ? 3 * g.pcols : 5;
      x.c.row_start = variant == 1 ? 0 : 1;
      x.c.col_start = variant == 2 ? 0 : 5;
      x.op_a = variant == 3 ? Op::T : Op::N;
      x.has_bias = true;
      x.bias = cyclic(1, 3, -1, 0);
      x.bias.col_start = x.c.col_start;
      c.options.algorithm = variant == 0 ? Algorithm::Sequential : Algorithm::Summa;
      c.options.panel_width = 2 + counter % 3;
      c.beta = 0.5;
      ++counter;
      cases.push_back(c);
    }
  run_summa_cases(cases, 2);
}

TEST(SummaSchedules, ManyPanelsInFewSlots) {
  // K = 100 in panels of 1 to 3 through two slots: every slot is rewritten
  // many times, so a receive or pack that does not wait for the slot's last
  // reader shows.
  std::vector<SummaCase> cases;
  for (const Shape& g : {Shape{2, 2}, Shape{2, 3}, Shape{1, 4}})
    for (int64_t width : {1, 3}) {
      SummaCase c;
      c.grid.prows = g.prows;
      c.grid.pcols = g.pcols;
      c.grid.m = 6;
      c.grid.n = 5;
      c.grid.k = 100;
      c.grid.a = cyclic(2, width);
      c.grid.b = cyclic(width, 2);
      c.grid.c = cyclic(2, 2);
      c.grid.a.ld_padding = 1;  // packed before it is sent
      c.options.algorithm = Algorithm::Summa;
      c.options.panel_width = width;
      c.options.panel_slots = 2;
      c.beta = 1.0;
      cases.push_back(c);
    }
  run_summa_cases(cases, 3);
}

TEST(SummaSchedules, JoinedPanelsPackedFromPiecesApart) {
  // 1 x P and P x 1 grids with blocks narrower than the width: the blocks
  // of one owner pair join into panels packed from pieces that lie apart in
  // op(B)'s (1 x P) or op(A)'s (P x 1) local array, on the owner before it
  // sends and on the ranks that multiply what they hold. Widths that are a
  // multiple of the blocks and widths that split a block, ld padding (no
  // contiguous send), one and two lanes, mixed blocks on a 2-D grid.
  std::vector<SummaCase> cases;
  int counter = 0;
  for (const Shape& g : {Shape{1, 2}, Shape{2, 1}, Shape{1, 3}, Shape{3, 1}, Shape{2, 3}})
    for (int64_t width : {8, 10, 256}) {
      SummaCase c;
      c.grid.prows = g.prows;
      c.grid.pcols = g.pcols;
      c.grid.m = 9 + counter % 3;
      c.grid.n = 7;
      c.grid.k = 61;
      const bool mixed = g.prows > 1 && g.pcols > 1;
      c.grid.a = cyclic(3, mixed ? 3 : 4, 0, g.pcols - 1);
      c.grid.b = cyclic(mixed ? 2 : 4, 3, g.prows - 1, 0);
      c.grid.c = cyclic(3, 3);
      c.grid.a.ld_padding = counter % 2;
      c.grid.b.ld_padding = (counter + 1) % 2;
      c.grid.dtype = counter % 3 == 2 ? DType::F32 : DType::F64;
      c.grid.has_bias = counter % 2 == 0;
      if (c.grid.has_bias) c.grid.bias = cyclic(1, 3, -1, 0);
      c.options.algorithm = counter % 4 == 3 ? Algorithm::Sequential : Algorithm::Summa;
      c.options.panel_width = width;
      c.options.panel_slots = 2 + counter % 2;
      c.options.compute_lanes = 1 + counter % 2;
      c.beta = counter % 2 ? 0.0 : 0.5;
      ++counter;
      const std::vector<weave::internal::Problem> problems = make_grid_problems(c.grid);
      for (const auto& schedule : build_group_schedules(problems, c.options))
        EXPECT_NE(schedule.notes.find(mixed ? "packed from its pieces" : g.pcols > 1 ? "op(B) packed" : "op(A) packed"),
                  std::string::npos)
            << c.name() << ": " << schedule.notes;
      cases.push_back(c);
    }
  run_summa_cases(cases, 3);
}

TEST(SummaSchedules, BandsOfCStartAlignedAndTheFirstIsHalfAsWide) {
  // 1000 rows of C on a 1 x 2 grid in 4 bands: boundaries on multiples of
  // 32 rows, the first band about half as wide as the others.
  GridCase x;
  x.prows = 1;
  x.pcols = 2;
  x.m = 1000;
  x.n = 4;
  x.k = 64;
  x.a = cyclic(1000, 16);
  x.b = cyclic(16, 2);
  x.c = cyclic(1000, 2);
  ScheduleOptions o;
  o.algorithm = Algorithm::Summa;
  o.gemm_bands = 4;
  const std::vector<weave::internal::Problem> problems = make_grid_problems(x);
  const auto schedules = build_group_schedules(problems, o);
  std::vector<int64_t> rows;
  for (const auto& step : schedules[0].steps)
    if (const auto* gemm = std::get_if<weave::internal::plan::GemmOp>(&step.op)) {
      EXPECT_EQ(gemm->c.row0 % 32, 0) << gemm->c.row0;
      rows.push_back(gemm->c.rows);
    }
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0] + rows[1] + rows[2] + rows[3], 1000);
  EXPECT_EQ(rows[0], 128);  // 1000 / 7 rounded down to 32
  for (std::size_t i = 1; i < rows.size(); ++i) EXPECT_GT(rows[i], rows[0] + rows[0] / 2);
}

TEST(SummaSchedules, BandsOfCPlaceOnALaneThatRunsNoGemm) {
  // With two compute lanes, the bands' GEMMs run on lane 0 and the
  // placement of the panels each band sends on lane 1, which multiplies
  // nothing (the CUDA backend runs such a lane at the communication's
  // priority).
  GridCase x;
  x.prows = 1;
  x.pcols = 2;
  x.m = 1024;
  x.n = 64;
  x.k = 256;
  x.a = cyclic(1024, 32);
  x.b = cyclic(32, 32);
  x.c = cyclic(1024, 32);
  ScheduleOptions o;
  o.algorithm = Algorithm::Summa;
  o.gemm_bands = 4;
  o.compute_lanes = 2;
  for (const auto& schedule : build_group_schedules(make_grid_problems(x), o)) {
    int placements = 0;
    for (const auto& step : schedule.steps)
      if (step.lane == 1 && step.label.rfind("place ", 0) == 0) ++placements;
    EXPECT_GT(placements, 0) << weave::internal::plan::format_schedule(schedule);
    EXPECT_EQ(schedule.lanes_that_multiply(), (std::vector<bool>{true, false}))
        << weave::internal::plan::format_schedule(schedule);
  }
  // The SUMMA panels plan multiplies on lane 0 too.
  o.gemm_bands = 0;
  for (const auto& schedule : build_group_schedules(make_grid_problems(x), o))
    EXPECT_TRUE(schedule.lanes_that_multiply()[0]);
}

TEST(SummaSchedules, BandsOfCOfAHugeCAreAnErrorNotAnOverflow) {
  // 2^60 rows of C in 4096 bands: the band boundaries' products overflow
  // 64 bits; building the schedule fails naming them.
  GridCase x;
  x.prows = 1;
  x.pcols = 2;
  x.m = int64_t{1} << 60;
  x.n = 4;
  x.k = 64;
  x.a = cyclic(int64_t{1} << 60, 16);
  x.b = cyclic(16, 2);
  x.c = cyclic(int64_t{1} << 60, 2);
  ScheduleOptions o;
  o.algorithm = Algorithm::Summa;
  o.gemm_bands = 4096;
  try {
    build_group_schedules(make_grid_problems(x), o);
    ADD_FAILURE() << "a schedule of 4096 bands of 2^60 rows was built";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("bands of"), std::string::npos) << e.what();
  }
}

TEST(SummaSchedules, BandsOfCOverEveryGrid) {
  // The travelling operand in bands of C: op(A) in bands of rows where the
  // grid has several columns, op(B) in bands of columns on P x 1 grids;
  // the held operand read where it lies (one block per process) or placed
  // in panel order (cyclic blocks, whose panels group one owner's blocks);
  // on 2-D grids op(B) gathered whole first. More bands than rows, one
  // band, narrow panels (many messages per band), uneven and empty shares
  // of C, ld padding, bias laid out like C or moved, one and two lanes.
  std::vector<SummaCase> cases;
  int counter = 0;
  for (const Shape& g : {Shape{1, 2}, Shape{2, 1}, Shape{1, 3}, Shape{3, 1}, Shape{1, 4}, Shape{2, 2}, Shape{2, 3}})
    for (int variant = 0; variant < 7; ++variant) {
      SummaCase c;
      GridCase& x = c.grid;
      x.prows = g.prows;
      x.pcols = g.pcols;
      x.m = variant == 4 ? 2 : 10 + counter % 3;  // 2 rows: some ranks hold none
      x.n = variant == 4 ? 2 : 9;
      x.k = variant == 5 ? 0 : variant == 6 ? 1120 : 23;
      if (variant == 0 || variant == 3) {
        x.a = GridMatrix{};
        x.b = GridMatrix{};
        x.c = GridMatrix{};
      } else {
        // Variant 6: 70 blocks of K 16 wide, in panels of 64.
        x.a = cyclic(3, variant == 2 ? 2 : variant == 6 ? 16 : 4, 0, g.pcols - 1);
        x.b = cyclic(variant == 2 ? 3 : variant == 6 ? 16 : 4, 3, g.prows - 1, 0);
        x.c = cyclic(3, 3);
      }
      x.a.ld_padding = counter % 2;
      x.c.ld_padding = (counter + 1) % 2;
      x.op_a = counter % 7 == 3 ? Op::T : Op::N;
      x.dtype = counter % 3 == 2 ? DType::F32 : DType::F64;
      x.has_bias = counter % 2 == 0;
      if (x.has_bias) x.bias = counter % 4 == 0 ? cyclic(1, 3, -1, 0) : cyclic(1, 2, 0, 0);
      c.options.algorithm = Algorithm::Summa;
      c.options.gemm_bands = variant == 1 ? 1 : variant == 3 ? 64 : 2 + counter % 3;
      c.options.panel_width = variant == 2 ? 2 : variant == 6 ? 64 : 8;
      c.options.compute_lanes = 1 + counter % 2;
      c.alpha = counter % 3 == 0 ? 1.0 : -1.5;
      c.beta = counter % 2 ? 0.0 : 0.75;
      ++counter;
      if (x.k > 0 && x.m > 2) {
        const std::vector<weave::internal::Problem> problems = make_grid_problems(x);
        for (const auto& schedule : build_group_schedules(problems, c.options)) {
          EXPECT_NE(schedule.notes.find(g.pcols > 1 ? "op(A) travels in" : "op(B) travels in"), std::string::npos)
              << c.name() << ": " << schedule.notes;
          const bool line = g.prows == 1 || g.pcols == 1;
          // One block per process: panels in K order, the held operand where
          // it lies; blocks of 4 in panels of 8 join one owner's blocks that
          // lie apart in the held operand: cut apart again so that it lies
          // as it is; 70 pieces of 16 are too many messages: the
          // held operand placed in the order of the joined panels.
          const char* held = !line                                        ? "gathered whole first"
                             : variant == 0 || variant == 1 || variant == 3 ? "read where it lies"
                             : variant == 6 && x.op_a == Op::N             ? "placed whole in panel order"
                                                                           : "";
          EXPECT_NE(schedule.notes.find(held), std::string::npos) << c.name() << ": " << schedule.notes;
        }
      }
      cases.push_back(c);
    }
  run_summa_cases(cases, 3);
}

// Every K index lies in exactly one piece of one panel, at the local
// positions where the panel's owners hold it; pieces go in K order within a
// panel and add up to its width, at most max_width; panels go in the order
// of their first K index.
void expect_panels_cover_k(const AxisLayout& a_k, const AxisLayout& b_k, const std::vector<Panel>& panels,
                           int64_t max_width) {
  std::vector<int> hits(static_cast<std::size_t>(a_k.extent()), 0);
  int64_t previous_first = -1;
  for (const Panel& p : panels) {
    ASSERT_FALSE(p.pieces.empty());
    EXPECT_GT(p.k0(), previous_first);
    previous_first = p.k0();
    EXPECT_LE(p.width, max_width);
    int64_t width = 0, previous_k = -1;
    for (const PanelPiece& piece : p.pieces) {
      for (int64_t t = 0; t < piece.width; ++t) {
        const int64_t g = a_k.global_index(p.a_owner, piece.a_local + t);
        EXPECT_EQ(b_k.global_index(p.b_owner, piece.b_local + t), g);
        EXPECT_EQ(a_k.owner(g, p.a_owner), p.a_owner);
        EXPECT_EQ(b_k.owner(g, p.b_owner), p.b_owner);
        EXPECT_GT(g, previous_k);
        previous_k = g;
        ASSERT_TRUE(g >= 0 && g < a_k.extent());
        ++hits[static_cast<std::size_t>(g)];
      }
      width += piece.width;
    }
    EXPECT_EQ(width, p.width);
  }
  for (int h : hits) EXPECT_EQ(h, 1);
}

TEST(SummaPanels, CommonRefinementOfBlocksThatDoNotLineUp) {
  // A's K in blocks of 3 over 2 grid columns, B's in blocks of 2 over 3 grid
  // rows: pieces break wherever either block ends.
  const AxisLayout a_k = AxisLayout::cyclic(12, 3, 0, 2), b_k = AxisLayout::cyclic(12, 2, 0, 3);
  const std::vector<Panel> panels = weave::internal::plan::summa_panels(a_k, b_k, 100);
  expect_panels_cover_k(a_k, b_k, panels, 100);
  // Blocks 0-2 | 3-5 of A against 0-1 | 2-3 | 4-5 of B: pieces 2, 1, 1, 2, ...
  ASSERT_GE(panels.size(), 4u);
  EXPECT_EQ(panels[0].pieces.front().width, 2);
  EXPECT_EQ(panels[1].pieces.front().width, 1);
}

TEST(SummaPanels, SameBlocksOnASquareGridJoinUpToTheWidth) {
  // Blocks of 4 over 2 x 2: blocks 0, 2, 4 of owner pair (0, 0) lie next to
  // each other on both owners and join into panels of up to 8, each one
  // piece (nothing to pack).
  const AxisLayout a_k = AxisLayout::cyclic(32, 4, 0, 2), b_k = AxisLayout::cyclic(32, 4, 0, 2);
  const std::vector<Panel> panels = weave::internal::plan::summa_panels(a_k, b_k, 8);
  expect_panels_cover_k(a_k, b_k, panels, 8);
  ASSERT_EQ(panels.size(), 4u);
  for (const Panel& p : panels) {
    EXPECT_EQ(p.width, 8);
    EXPECT_EQ(p.pieces.size(), 1u);
  }
  EXPECT_EQ(panels[0].a_owner, 0);
  EXPECT_EQ(panels[1].a_owner, 1);
}

TEST(SummaPanels, OneByTwoGridJoinsBlocksOfOneAOwnerThatLieApartInB) {
  // A 1 x 2 grid: op(A)'s K in blocks of 4 over 2 grid columns, op(B)'s on
  // the single grid row. Blocks 0, 2, 4 of the A owner 0 follow each other
  // in its local array but lie 4 rows apart in B's: they join into one
  // panel of 12 whose op(B) side is packed. Panels in the order of their
  // first blocks: {0, 2, 4}, {1, 3, 5}, {6, 8}, {7, 9}.
  const AxisLayout a_k = AxisLayout::cyclic(40, 4, 0, 2), b_k = AxisLayout::cyclic(40, 4, 0, 1);
  const std::vector<Panel> panels = weave::internal::plan::summa_panels(a_k, b_k, 12);
  expect_panels_cover_k(a_k, b_k, panels, 12);
  ASSERT_EQ(panels.size(), 4u);
  const int64_t widths[] = {12, 12, 8, 8}, firsts[] = {0, 4, 24, 28};
  const int a_owners[] = {0, 1, 0, 1};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(panels[i].width, widths[i]);
    EXPECT_EQ(panels[i].k0(), firsts[i]);
    EXPECT_EQ(panels[i].a_owner, a_owners[i]);
    EXPECT_EQ(panels[i].b_owner, 0);
    EXPECT_EQ(panels[i].pieces.size(), static_cast<std::size_t>(widths[i] / 4));
    EXPECT_TRUE(panels[i].contiguous(true));
    EXPECT_FALSE(panels[i].contiguous(false));
  }
  EXPECT_EQ(panels[1].pieces[1].b_local, 12);  // block 3 on B's row
  EXPECT_EQ(panels[1].pieces[1].a_local, 4);   // right after block 1 on A's column 1
}

TEST(SummaPanels, TwoByOneGridPacksAAndSplitsPiecesAtTheWidth) {
  // The transpose of the above (op(A)'s K on one grid column, op(B)'s over
  // 2 grid rows), with a width of 10 that is no multiple of the blocks:
  // block 4 is split, its second half opening the next panel of its pair
  // after the panel of the other pair that started before it.
  const AxisLayout a_k = AxisLayout::cyclic(40, 4, 0, 1), b_k = AxisLayout::cyclic(40, 4, 1, 2);
  const std::vector<Panel> panels = weave::internal::plan::summa_panels(a_k, b_k, 10);
  expect_panels_cover_k(a_k, b_k, panels, 10);
  ASSERT_EQ(panels.size(), 4u);
  EXPECT_EQ(panels[0].b_owner, 1);  // B's first block on grid row 1
  EXPECT_EQ(panels[0].width, 10);
  EXPECT_EQ(panels[1].k0(), 4);
  EXPECT_EQ(panels[2].k0(), 18);  // the rest of block 4
  EXPECT_EQ(panels[3].k0(), 22);  // the rest of block 5
  for (const Panel& p : panels) {
    EXPECT_FALSE(p.contiguous(true));
    EXPECT_TRUE(p.contiguous(false));
  }
}

TEST(SummaPanels, ReplicatedAndMixedBlocksCoverKOnce) {
  // Every combination of small layouts: each K index exactly once, in K
  // order, within the width.
  const std::vector<AxisLayout> layouts = {AxisLayout::cyclic(23, 1, 0, 2),  AxisLayout::cyclic(23, 3, 1, 2),
                                           AxisLayout::cyclic(23, 2, 0, 3),  AxisLayout::cyclic(23, 5, 2, 3),
                                           AxisLayout::cyclic(23, 4, 0, 1),  AxisLayout::replicated(23, 2),
                                           AxisLayout::cyclic(23, 3, 0, 2, 4)};
  for (const AxisLayout& a_k : layouts)
    for (const AxisLayout& b_k : layouts)
      for (int64_t width : {1, 2, 5, 7, 64}) {
        SCOPED_TRACE(a_k.describe() + " x " + b_k.describe() + " width " + std::to_string(width));
        expect_panels_cover_k(a_k, b_k, weave::internal::plan::summa_panels(a_k, b_k, width), width);
      }
}

TEST(GridRedistribution, PiecesCoverTheTargetExactlyOnce) {
  // Transposing a 9 x 7 block-cyclic matrix (blocks 2 x 3) into blocks of
  // 3 x 2 from other sources on a 2 x 3 grid: every target element comes
  // from one source, the one holding it.
  weave::internal::GridOperands grid;
  grid.prows = 2;
  grid.pcols = 3;
  const weave::internal::GridLayout from{AxisLayout::cyclic(9, 2, 1, 2), AxisLayout::cyclic(7, 3, 0, 3)};
  const weave::internal::GridLayout to{AxisLayout::cyclic(7, 3, 0, 2), AxisLayout::cyclic(9, 2, 2, 3)};
  for (int target = 0; target < 6; ++target) {
    const int tr = grid.row_of(target), tc = grid.col_of(target);
    std::vector<int> hits(static_cast<size_t>(to.rows.count(tr) * to.cols.count(tc)), 0);
    for (const auto& piece : weave::internal::plan::redistribution_pieces(from, Op::T, to, grid, target)) {
      if (piece.target != target) continue;
      for (const auto& r : piece.rows)
        for (const auto& c : piece.cols)
          for (int64_t s = 0; s < r.length; ++s)
            for (int64_t t = 0; t < c.length; ++t) {
              const int64_t i = to.rows.global_index(tr, r.dst + s), j = to.cols.global_index(tc, c.dst + t);
              // op(X)(i, j) = X(j, i): on X's row owner of j, column owner of i.
              EXPECT_EQ(piece.source, grid.rank_at(from.rows.owner(j), from.cols.owner(i)));
              EXPECT_EQ(from.rows.local_index(j), c.src + t);
              EXPECT_EQ(from.cols.local_index(i), r.src + s);
              hits[static_cast<size_t>((r.dst + s - to.rows.local_begin(tr)) +
                                       (c.dst + t - to.cols.local_begin(tc)) * to.rows.count(tr))]++;
            }
    }
    for (int h : hits) EXPECT_EQ(h, 1);
  }
}

}  // namespace
}  // namespace weave_test
