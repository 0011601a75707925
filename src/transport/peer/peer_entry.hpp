// Entry points of the peer-memory machinery that exist in every build
// (peer_stub.cpp without CUDA): the probe of the transports that reach the
// GPUs of one node (Reach::OneNodePeerAccess in the transport table).
#pragma once

#include <string>

#include "core/grid.hpp"

namespace weave::internal::transport {

// Whether every rank of the group shares one node (core/nodes.hpp: a
// shared-memory domain, refined by WEAVE_NODE) with peer access between
// their GPUs; every rank gets the same answer, and `why_not` the reason
// when not. Collective over the group.
bool peer_access_usable(const GroupView& group, std::string* why_not);

}  // namespace weave::internal::transport
