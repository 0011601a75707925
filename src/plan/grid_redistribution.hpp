// Moving a matrix between two layouts over the grid: what WEAVE_GEMM does
// with an operand that does not lie where SUMMA multiplies it (transposed,
// its rows placed unlike C's, or in blocks too narrow to broadcast one by
// one). Pure: the pieces every pair of ranks exchanges follow from the two
// layouts alone, so every rank computes the same pieces.
#pragma once

#include <vector>

#include "core/problem.hpp"
#include "plan/schedule.hpp"

namespace weave::internal::plan {

// What one source rank gives one target rank: the rows and columns of
// op(X) it holds that the target wants, as runs from the source's local
// positions (in op(X)'s orientation: for op T a row of op(X) is a column of
// the stored X) to the target's local positions. The piece is every row
// run times every column run.
struct RedistributionPiece {
  int source = 0, target = 0;  // group ranks
  std::vector<IndexRun> rows, cols;
  int64_t row_count = 0, col_count = 0;
};

// The pieces `me` sends or receives (source == target: what it keeps),
// moving X from `from` (how X is stored over the grid) to `to` (how op(X)
// should lie: its rows along the grid rows, its columns along the grid
// columns; a replicated axis of `to` means every grid row, or column,
// wants all of it). Where `from` replicates an axis, each target takes that
// axis from the source in its own grid row (or column). Runs merge where
// both sides' positions continue.
std::vector<RedistributionPiece> redistribution_pieces(const GridLayout& from, Op op, const GridLayout& to,
                                                       const GridOperands& grid, int me);

}  // namespace weave::internal::plan
