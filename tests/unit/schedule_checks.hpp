// Structural checks of the schedules of every rank of one group, taken
// together: what must hold for any executor to run them without reading
// outside a buffer, leaving a message unmatched, or deadlocking grouped
// (NCCL-style) batches.
#pragma once

#include <string>
#include <vector>

#include "core/problem.hpp"
#include "plan/schedule.hpp"

namespace weave_test {

// "rank R step S (label)", for messages.
std::string where(int rank, int step, const weave::internal::plan::Schedule& schedule);

// A step of one rank's schedule.
struct StepRef {
  int rank = -1;
  int step = -1;
  bool valid() const { return rank >= 0; }
};

// Which receive takes each send and which send feeds each receive:
// partner[rank][step] is the other end of a Send or Recv step (invalid for
// other steps and for unmatched ones).
struct PointToPointMatching {
  std::vector<std::vector<StepRef>> partner;
  std::vector<std::string> errors;
};

// Pairs every Send (rank r -> peer, tag) with the Recv on the peer (from r,
// same tag). Reports sends or receives without a partner, and keys used
// twice (which MPI could match either way).
PointToPointMatching match_point_to_point(const std::vector<weave::internal::plan::Schedule>& schedules);

// What a transport that reads peers' memory links at plan creation: each
// remote term of a PeerSum to the Publish of the same (publisher, reader,
// tag), and each AwaitRelease to the Publish it waits for.
struct PeerReadMatching {
  // publication[rank][step][term]: the Publish feeding remote term `term` of
  // PeerSum `step` (invalid for local terms and other steps).
  std::vector<std::vector<std::vector<StepRef>>> publication;
  // awaited[rank][step]: the Publish an AwaitRelease waits for.
  std::vector<std::vector<StepRef>> awaited;
  std::vector<std::string> errors;
};

// Every remote term is published by its peer exactly once, with the same
// byte count and element type, and every Publish is read by exactly one
// term and awaited exactly once, after it, on its own rank.
PeerReadMatching match_peer_reads(const std::vector<weave::internal::plan::Schedule>& schedules);

// Every structural property at once; empty when all hold:
//   - each schedule belongs to its rank of a group of schedules.size();
//   - deps point to earlier steps, never to a step of the same batch (a
//     batch is issued once all its steps are ready); compute steps sit on a
//     compute lane, communication steps on the communication lane;
//   - every region lies inside its buffer and every workspace buffer inside
//     the workspace;
//   - GEMM and epilogue shapes fit; a bias region is one row of the bias
//     buffer as wide as its destination;
//   - Send/Recv regions are contiguous; every send is matched by exactly one
//     receive with the same byte count and element type, and both ends carry
//     the same batch id;
//   - batch ids never decrease along the step list;
//   - collectives appear in the same order with the same kind and counts on
//     every rank, and their regions hold exactly those counts;
//   - published regions are tight row-major workspace blocks, PeerSum terms
//     have dst's shape and the term type, and match_peer_reads holds.
// problems[r] is rank r's Problem (for the buffer shapes of the caller's
// matrices).
std::vector<std::string> check_schedules(const std::vector<weave::internal::Problem>& problems,
                                         const std::vector<weave::internal::plan::Schedule>& schedules);

}  // namespace weave_test
