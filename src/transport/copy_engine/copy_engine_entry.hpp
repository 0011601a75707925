// Entry points of the copy-engine transport (copy_engine_stub.cpp without CUDA).
#pragma once

#include <memory>
#include <string>

#include "core/grid.hpp"
#include "plan/schedule.hpp"
#include "transport/transport.hpp"

namespace weave::internal::transport {

// Collective over the group; `workspace` is the plan's device workspace;
// `high_priority`: the copy streams at the device's highest priority.
std::unique_ptr<Transport> make_copy_engine_transport(GridState& grid, const GroupView& group,
                                                      const plan::Schedule& schedule, void* workspace,
                                                      bool high_priority);

// Whether every rank of the group shares one node with peer access between
// their GPUs; every rank gets the same answer. Collective over the group.
bool copy_engine_usable(const GroupView& group, std::string* why_not);

}  // namespace weave::internal::transport
