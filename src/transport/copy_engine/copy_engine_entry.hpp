// Entry point of the copy-engine transport (copy_engine_stub.cpp without CUDA).
#pragma once

#include <memory>

#include "transport/transport.hpp"
#include "transport/transport_context.hpp"

namespace weave::internal::transport {

// Collective over the group.
std::unique_ptr<Transport> make_copy_engine_transport(const TransportContext& context);

}  // namespace weave::internal::transport
