// Entry point of the UCX transport (ucx_stub.cpp when WEAVE_ENABLE_UCX is OFF).
#pragma once

#include <memory>

#include "core/grid.hpp"
#include "plan/schedule.hpp"
#include "transport/transport.hpp"

namespace weave::internal::transport {

// Collective over the group.
std::unique_ptr<Transport> make_ucx_transport(GridState& grid, const GroupView& group, const plan::Schedule& schedule,
                                              bool device_memory);

}  // namespace weave::internal::transport
