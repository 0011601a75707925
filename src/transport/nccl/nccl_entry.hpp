// Entry point of the NCCL transport (nccl_stub.cpp when WEAVE_ENABLE_NCCL is OFF).
#pragma once

#include <chrono>
#include <memory>

#include "core/grid.hpp"
#include "transport/transport.hpp"

namespace weave::internal::transport {

// Collective over the group. The NCCL communicator of a group is created once
// per grid and shared by every plan over that group. `timeout` bounds
// every group of NCCL calls the transport makes (negative: no bound).
std::unique_ptr<Transport> make_nccl_transport(GridState& grid, const GroupView& group,
                                               std::chrono::milliseconds timeout);

}  // namespace weave::internal::transport
