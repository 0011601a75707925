// What a transport is made from: the plan's group, schedule and resolved
// choices, and its workspace. The transport table's factories take it
// (registry.hpp); each transport uses what it needs.
#pragma once

#include "core/grid.hpp"
#include "core/problem.hpp"
#include "plan/planner.hpp"
#include "plan/schedule.hpp"

namespace weave::internal::transport {

struct TransportContext {
  GridState& grid;
  const GroupView& group;
  const Problem& problem;
  const plan::Schedule& schedule;
  const plan::Resolved& resolved;
  void* workspace;  // the plan's workspace (device plans: cudaMalloc'd, so it can be exported)
};

}  // namespace weave::internal::transport
