// The Publish, PeerSum and AwaitRelease steps of a schedule, linked at plan
// creation to their other ends on the peers through the mapped workspaces
// and flags (PeerMappings):
//   a publication learns the reader's "ready" flag to raise, and owns the
//     "released" flag the reader raises once it has read;
//   a remote term of a PeerSum learns where the publisher's region lies
//     (read there, through the mapping) and the publisher's "released" flag,
//     and owns the "ready" flag the publisher raises.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "plan/schedule.hpp"
#include "transport/peer/peer_mappings.hpp"

namespace weave::internal::transport::sm {

struct PublicationLink {  // one of my Publish steps
  int step = -1;
  int peer = 0;
  uint32_t* ready_flag = nullptr;     // the reader's: raised when the region is ready
  uint32_t* released_flag = nullptr;  // mine: the reader raises it once it has read
};

struct TermLink {  // one term of one of my PeerSum steps
  const char* data = nullptr;         // remote: the publisher's region, mapped; local: null (resolved per execute)
  uint32_t* ready_flag = nullptr;     // remote: mine, raised by the publisher
  uint32_t* released_flag = nullptr;  // remote: the publisher's
};

class PeerSumLinks {
 public:
  // Flags the schedule's publications and remote terms use on this rank.
  static int flags_needed(const plan::Schedule& schedule);

  // Collective over `comm`. Uses this rank's flags [first_flag,
  // first_flag + flags_needed(schedule)).
  PeerSumLinks(MPI_Comm comm, const plan::Schedule& schedule, const PeerMappings& mappings, int first_flag);

  const PublicationLink& publication(const plan::Step* step) const { return publications_.at(step); }
  const std::vector<TermLink>& terms(const plan::Step* step) const { return terms_.at(step); }
  // My "released" flag of what I published to `peer` under `tag`.
  uint32_t* released_flag(int peer, int tag) const { return released_.at({peer, tag}); }

 private:
  std::map<const plan::Step*, PublicationLink> publications_;
  std::map<const plan::Step*, std::vector<TermLink>> terms_;
  std::map<std::pair<int, int>, uint32_t*> released_;
};

}  // namespace weave::internal::transport::sm
