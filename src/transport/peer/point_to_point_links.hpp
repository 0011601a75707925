// The sends and receives of a schedule, linked at plan creation to their
// other ends on the peers through the mapped workspaces and flags
// (PeerMappings): a send learns where in the receiver's workspace its bytes
// go and which of the receiver's flags says "data"; a receive learns which
// of the sender's flags says "clear to send". Receives land only in the
// workspace (the caller's buffers are not mapped).
//
// A message is a rendezvous of two flags: the receiver raises "clear to
// send" in the sender's flags when its slot is free, the sender waits for
// it, moves the bytes, and raises "data" in the receiver's flags. Each flag
// is reset by the rank that waited for it.
//
// A receive that depends on no step lands in a slot that nothing of the
// execute uses before it (a schedule's dependencies carry every hazard: a
// host transport may post such a receive at once). With
// `clears_at_start`, its rank raises its clear to send at the start of
// every execute instead of when its step is due, and says so to the sender
// (cleared_at_start on both ends), which can then wait for all such clears
// once, at its own start, instead of once per step.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>

#include "plan/schedule.hpp"
#include "transport/peer/peer_mappings.hpp"

namespace weave::internal::transport {

struct OutgoingLink {  // one of my send steps
  int step = -1;
  int peer = 0;
  char* destination = nullptr;     // in the peer's workspace
  int64_t bytes = 0;
  uint32_t* data_flag = nullptr;   // the peer's: raised once the bytes are there
  uint32_t* clear_flag = nullptr;  // mine: the peer raises it when its slot is free
  bool cleared_at_start = false;   // the peer raises clear_flag at the start of every execute
};

struct IncomingLink {  // one of my receive steps
  int step = -1;
  int peer = 0;
  uint32_t* data_flag = nullptr;   // mine
  uint32_t* clear_flag = nullptr;  // the peer's
  bool cleared_at_start = false;   // I raise clear_flag at the start of every execute
};

class PointToPointLinks {
 public:
  // Flags a schedule's sends and receives use on this rank.
  static int flags_needed(const plan::Schedule& schedule);

  // Collective over `comm`. Uses this rank's flags [first_flag,
  // first_flag + flags_needed(schedule)). `clears_at_start`: this rank
  // raises the clears of its receives that depend on no step (and move
  // bytes) at the start of every execute.
  PointToPointLinks(MPI_Comm comm, const plan::Schedule& schedule, const PeerMappings& mappings, int first_flag,
                    bool clears_at_start = false);

  const OutgoingLink& outgoing(const plan::Step* step) const { return outgoing_.at(step); }
  const IncomingLink& incoming(const plan::Step* step) const { return incoming_.at(step); }
  bool has_sends() const { return !outgoing_.empty(); }
  // Each receiving peer, once.
  std::vector<int> receivers() const;

 private:
  std::map<const plan::Step*, OutgoingLink> outgoing_;
  std::map<const plan::Step*, IncomingLink> incoming_;
};

}  // namespace weave::internal::transport
