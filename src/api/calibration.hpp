// Plan creation's calibration: what the planner's model (plan/cost_model.hpp)
// needs to know of the machine, measured with the plan's own backend and
// transport running small schedules (plan/calibration_schedules.hpp): the
// GEMM's rate at the plan's shape (each dimension capped), and the time of a
// point-to-point exchange and of each collective at two sizes (and, for a
// group of several nodes of several ranks, of exchanges within a node and
// between nodes). Every rank reports the slowest rank's times, so every
// rank's model chooses alike. Collective over the group; bounded by the
// plan's timeout like an execute.
#pragma once

#include <memory>
#include <vector>

#include "core/grid.hpp"
#include "core/nodes.hpp"
#include "core/problem.hpp"
#include "core/wait_bounds.hpp"
#include "plan/cost_model.hpp"
#include "plan/planner.hpp"

namespace weave::internal {

std::shared_ptr<const plan::Calibration> calibrate(GridState& grid, const GroupView& group, const Problem& problem,
                                                   const plan::Resolved& resolved, const NodeLayout& nodes,
                                                   const WaitBounds& bounds);

// Whether `mine` holds on any rank of the grid (bounded like every
// collective of the grid's channel): the groups of a 2-D grid plan apart,
// and a step one group takes every rank of the grid must take.
bool any_rank_of_grid(GridState& grid, bool mine);

// Plan creation's trials: each of the model's close `candidates`
// (Resolved::wants_trials) resolved as a plan asking for it would be (its
// algorithm and chunks in `desc`), built, and run on buffers of the plan's
// shapes filled like the calibration's workspace, timed like the
// calibration (a warm-up, the median of three executes); every rank gets
// the slowest rank's times. Host or device memory, as the plan's. Not
// timed (and `not_timed` says why) where the buffers would take more than
// 2 GiB (on a GPU, or a quarter of its free memory) on some rank, or the
// ranks' candidates differ; null where no rank of the group has any.
// Every rank of the group calls it, with or without candidates: collective
// over the group; bounded by the plan's timeout like an execute.
std::shared_ptr<const plan::Capabilities::Trials> time_trials(GridState& grid, const GroupView& group,
                                                              const Problem& problem, const weave_plan_desc_t& desc,
                                                              const plan::Environment& env,
                                                              const plan::Capabilities& caps,
                                                              const std::vector<plan::Candidate>& candidates,
                                                              const WaitBounds& bounds);

}  // namespace weave::internal
