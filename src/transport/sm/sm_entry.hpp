// Entry point of the SM transport (sm_stub.cpp without CUDA).
#pragma once

#include <memory>

#include "transport/transport.hpp"
#include "transport/transport_context.hpp"

namespace weave::internal::transport {

// Collective over the group.
std::unique_ptr<Transport> make_sm_transport(const TransportContext& context);

}  // namespace weave::internal::transport
