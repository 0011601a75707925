#include "transport/peer/point_to_point_links.hpp"

#include <algorithm>
#include <vector>

#include "core/error.hpp"

namespace weave::internal::transport {

int PointToPointLinks::flags_needed(const plan::Schedule& schedule) {
  return static_cast<int>(std::count_if(schedule.steps.begin(), schedule.steps.end(), [](const plan::Step& s) {
    return s.kind() == plan::StepKind::Send || s.kind() == plan::StepKind::Recv;
  }));
}

PointToPointLinks::PointToPointLinks(MPI_Comm comm, const plan::Schedule& schedule, const PeerMappings& mappings,
                                     int first_flag, bool clears_at_start) {
  const int me = mappings.rank();
  // Flag numbering: receives first, then sends, in schedule order.
  std::vector<PeerEntry> my_receives, my_sends;
  std::vector<const plan::Step*> receive_steps, send_steps;
  int next_flag = first_flag;
  for (const plan::Step& s : schedule.steps) {
    if (s.kind() != plan::StepKind::Recv) continue;
    const auto& op = std::get<plan::RecvOp>(s.op);
    if (op.dst.buffer < plan::kFirstWorkspaceBuffer)
      fail(WEAVE_ERROR_INTERNAL, "a peer transport receives only into the workspace (step '", s.label, "')");
    const int64_t offset = schedule.offset_from_binding(op.dst);
    const int64_t bytes = schedule.bytes(op.dst);
    const bool at_start = clears_at_start && s.deps.empty() && bytes > 0;
    my_receives.push_back(PeerEntry{op.peer, op.tag, offset, bytes, next_flag++, at_start ? 1 : 0});
    receive_steps.push_back(&s);
  }
  for (const plan::Step& s : schedule.steps) {
    if (s.kind() != plan::StepKind::Send) continue;
    const auto& op = std::get<plan::SendOp>(s.op);
    my_sends.push_back(PeerEntry{op.peer, op.tag, 0, schedule.bytes(op.src), next_flag++});
    send_steps.push_back(&s);
  }
  const PeerDirectory receives(comm, my_receives), sends(comm, my_sends);
  auto index = [&](const plan::Step* s) { return static_cast<int>(s - schedule.steps.data()); };

  // For each of my sends, the matching receive on the peer.
  for (std::size_t i = 0; i < send_steps.size(); ++i) {
    const PeerEntry& mine = my_sends[i];
    const int peer = static_cast<int>(mine.peer);
    const PeerEntry& match = receives.match(peer, me, mine, "receive");
    OutgoingLink out;
    out.step = index(send_steps[i]);
    out.peer = peer;
    out.bytes = mine.bytes;
    out.destination = mappings.workspace(peer) ? mappings.workspace(peer) + match.offset : nullptr;
    out.data_flag = mappings.flags(peer) + match.flag;
    out.clear_flag = mappings.flags(me) + mine.flag;
    out.cleared_at_start = match.cleared_at_start != 0;
    if (out.bytes > 0 && !out.destination) fail(WEAVE_ERROR_INTERNAL, "group rank ", peer, " has no workspace");
    outgoing_[send_steps[i]] = out;
  }
  // For each of my receives, the matching send's clear-to-send flag on the peer.
  for (std::size_t i = 0; i < receive_steps.size(); ++i) {
    const PeerEntry& mine = my_receives[i];
    const int peer = static_cast<int>(mine.peer);
    const PeerEntry& match = sends.match(peer, me, mine, "send");
    incoming_[receive_steps[i]] = IncomingLink{index(receive_steps[i]), peer, mappings.flags(me) + mine.flag,
                                               mappings.flags(peer) + match.flag, mine.cleared_at_start != 0};
  }
}

std::vector<int> PointToPointLinks::receivers() const {
  std::vector<int> peers;
  for (const auto& [step, out] : outgoing_) {
    (void)step;
    if (std::find(peers.begin(), peers.end(), out.peer) == peers.end()) peers.push_back(out.peer);
  }
  return peers;
}

}  // namespace weave::internal::transport
