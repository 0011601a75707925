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

}  // namespace weave::internal
