// The transport table: one row per transport, saying what it is (the
// planner's view of it, plan::TransportDescription), how the reach it needs
// is probed, and how it is made. The planner sees only the descriptions
// (inside its Capabilities); src/api runs the probes and makes the plan's
// transport through its row. A new transport is its folder plus its row.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "plan/transport_description.hpp"
#include "transport/transport.hpp"
#include "transport/transport_context.hpp"

namespace weave::internal::transport {

// Collective over the group, every rank getting the same answer: whether
// the transport reaches the group (with the reason in `why_not` when not).
using ReachProbe = bool (*)(const GroupView& group, std::string* why_not);
// Collective over the group.
using TransportFactory = std::unique_ptr<Transport> (*)(const TransportContext& context);

struct TransportRow {
  plan::TransportDescription description;
  ReachProbe probe = nullptr;  // null for Reach::AnyRanks: nothing to find out
  TransportFactory make = nullptr;
};

// Every transport, in the order the planner considers them automatically.
const std::vector<TransportRow>& transport_table();
std::vector<plan::TransportDescription> transport_descriptions();
// The row of `id` (every plan::Transport has one).
const TransportRow& transport_row(plan::Transport id);

}  // namespace weave::internal::transport
