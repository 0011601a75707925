// The schedules a plan's calibration runs (plan/cost_model.hpp says what it
// measures): one GEMM, one exchange between two partners, one collective,
// each over workspace only, so that the plan's own backend and transport
// run them as they run a plan. Pure functions, like the other builders.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/schedule.hpp"

namespace weave::internal::plan {

// A problem with no caller matrices, for the schedules below: the group,
// the element type and where memory lives.
Problem calibration_problem(int group_size, int group_rank, DType dtype, Memory memory);

// C = A * B of m x k and k x n, all in the workspace.
Schedule gemm_calibration(const Problem& problem, int64_t m, int64_t n, int64_t k);

// Send `elements` to group rank `send_to` while receiving as many from
// `receive_from` (one batch).
Schedule exchange_calibration(const Problem& problem, int send_to, int receive_from, int64_t elements);

// Two such exchanges at once, one batch: whether exchanges with two
// partners (one in this node, one in another) share a path.
struct ExchangePartners {
  int send_to = 0, receive_from = 0;
};
Schedule concurrent_exchange_calibration(const Problem& problem, ExchangePartners first, ExchangePartners second,
                                         int64_t elements);

// One collective over a buffer of `elements` per rank: all-gather (each
// rank's part elements / P), reduce-scatter (each rank contributes all of
// it) or all-reduce; in `type`. With `weights` (one per rank, e.g. a plan's
// uneven row counts) the all-gather's and reduce-scatter's parts follow
// them instead of being equal: a collective of uneven parts can take
// longer than one of the same bytes in equal parts.
Schedule collective_calibration(const Problem& problem, CollectiveKind kind, int64_t elements, DType type,
                                const std::vector<int64_t>& weights = {});

// The parts of `elements` in proportion to `weights` (equal without them):
// whole parts, summing to at most `elements`.
std::vector<int64_t> calibration_parts(int64_t elements, int parts, const std::vector<int64_t>& weights);

}  // namespace weave::internal::plan
