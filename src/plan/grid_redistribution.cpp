#include "plan/grid_redistribution.hpp"

#include <algorithm>
#include <map>

#include "core/error.hpp"

namespace weave::internal::plan {

namespace {

// The indices that process `holder` of `target` wants, each with the
// process of `source` that has it (`fallback` where `source` replicates)
// and the positions on both sides, as maximal runs.
struct MappedRun {
  int source_process = 0;
  int64_t source_local = 0, target_local = 0, length = 0;
};

std::vector<MappedRun> mapped_runs(const AxisLayout& target, int holder, const AxisLayout& source, int fallback) {
  std::vector<MappedRun> out;
  const std::vector<AxisLayout::Segment> wanted = target.segments(), have = source.segments();
  std::size_t h = 0;
  for (const AxisLayout::Segment& w : wanted) {
    if (w.owner != -1 && w.owner != holder) continue;
    int64_t g = w.global0;
    const int64_t end = w.global0 + w.length;
    while (g < end) {
      while (h < have.size() && have[h].global0 + have[h].length <= g) ++h;
      if (h == have.size()) fail(WEAVE_ERROR_INTERNAL, "an axis of extent ", source.extent(), " lacks index ", g);
      const AxisLayout::Segment& s = have[h];
      const int64_t length = std::min(end, s.global0 + s.length) - g;
      const int process = s.owner == -1 ? fallback : s.owner;
      const int64_t from = s.local0 + (g - s.global0), to = w.local0 + (g - w.global0);
      if (!out.empty() && out.back().source_process == process &&
          out.back().source_local + out.back().length == from && out.back().target_local + out.back().length == to)
        out.back().length += length;
      else
        out.push_back({process, from, to, length});
      g += length;
    }
  }
  return out;
}

// The runs of `runs` from source process `process`, as IndexRuns, and their total.
std::vector<IndexRun> runs_from(const std::vector<MappedRun>& runs, int process, int64_t* total) {
  std::vector<IndexRun> out;
  *total = 0;
  for (const MappedRun& r : runs)
    if (r.source_process == process) {
      out.push_back({r.source_local, r.target_local, r.length});
      *total += r.length;
    }
  return out;
}

}  // namespace

std::vector<RedistributionPiece> redistribution_pieces(const GridLayout& from, Op op, const GridLayout& to,
                                                       const GridOperands& grid, int me) {
  std::vector<RedistributionPiece> pieces;
  const bool transposed = op != Op::N;
  // op(X)'s rows are X's rows (along the grid rows) or, transposed, X's
  // columns (along the grid columns); its columns the other way round.
  const AxisLayout& x_rows_of_op = transposed ? from.cols : from.rows;
  const AxisLayout& x_cols_of_op = transposed ? from.rows : from.cols;
  const int P = grid.prows * grid.pcols;
  // The runs of a target depend on its grid row (its rows) and grid column
  // (its columns) only: found once per grid row and column. Where a source
  // axis is replicated, the target takes it from its own grid row or
  // column, along the grid dimension that axis lies on.
  auto fallback = [&](int tr, int tc, bool for_rows) { return for_rows == transposed ? tc : tr; };
  std::vector<std::vector<MappedRun>> rows_of(static_cast<std::size_t>(grid.prows));
  std::vector<std::vector<MappedRun>> cols_of(static_cast<std::size_t>(grid.pcols));
  for (int tr = 0; tr < grid.prows; ++tr)
    rows_of[static_cast<std::size_t>(tr)] = mapped_runs(to.rows, tr, x_rows_of_op, transposed ? -1 : tr);
  for (int tc = 0; tc < grid.pcols; ++tc)
    cols_of[static_cast<std::size_t>(tc)] = mapped_runs(to.cols, tc, x_cols_of_op, transposed ? -1 : tc);
  for (int target = 0; target < P; ++target) {
    const int tr = grid.row_of(target), tc = grid.col_of(target);
    std::vector<MappedRun> rows = rows_of[static_cast<std::size_t>(tr)];
    std::vector<MappedRun> cols = cols_of[static_cast<std::size_t>(tc)];
    // Transposed, a replicated source axis lies along the other grid
    // dimension: the fallback is the target's coordinate there.
    for (MappedRun& r : rows)
      if (r.source_process == -1) r.source_process = fallback(tr, tc, true);
    for (MappedRun& c : cols)
      if (c.source_process == -1) c.source_process = fallback(tr, tc, false);
    // The source processes along each grid dimension that appear.
    std::vector<int> row_sources, col_sources;
    for (const MappedRun& r : rows) row_sources.push_back(r.source_process);
    for (const MappedRun& c : cols) col_sources.push_back(c.source_process);
    for (std::vector<int>* v : {&row_sources, &col_sources}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    for (int rs : row_sources)
      for (int cs : col_sources) {
        // op(X) row runs come from grid row rs (op N) or grid column rs (op T).
        const int source = transposed ? grid.rank_at(cs, rs) : grid.rank_at(rs, cs);
        if (source != me && target != me) continue;
        RedistributionPiece piece;
        piece.source = source;
        piece.target = target;
        piece.rows = runs_from(rows, rs, &piece.row_count);
        piece.cols = runs_from(cols, cs, &piece.col_count);
        if (piece.row_count > 0 && piece.col_count > 0) pieces.push_back(std::move(piece));
      }
  }
  return pieces;
}

}  // namespace weave::internal::plan
