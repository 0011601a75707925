// The process-wide owner of work that a timed-out wait left in flight.
//
// MPI forbids cancelling a non-blocking collective, and a send can rarely be
// cancelled: when a wait gives up, its requests stay active, and a peer that
// comes late completes them, writing into their receive buffers and using
// their communicator. So a wait that gives up hands its requests here
// together with everything they use (heap buffers, the communicator, the
// plan's workspace) as shared_ptr keep-alives. Every later Weave call (and
// the destruction of grids and plans) tests them and releases what has
// completed. A communicator on which a wait gave up is also kept here until
// the process ends (quarantine), so messages a late peer still sends on it
// can never reach a later communicator that MPI would give the same context.
//
// Whatever is still pending when MPI is finalized is never touched again: it
// stays reachable from a global that is never destroyed (so LeakSanitizer
// does not report it) and the job ends with it.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace weave::internal {

class AbandonedWork {
 public:
  virtual ~AbandonedWork() = default;
  // Tests the work (without blocking); true once nothing of it is in
  // flight any more. Called with MPI running, from Weave calls only.
  virtual bool finished() = 0;
};

// Keep-alives: anything a pending request reads or writes.
using KeepAlive = std::vector<std::shared_ptr<const void>>;

void abandon(std::unique_ptr<AbandonedWork> work);
// MPI requests (active or null) and what they use.
void abandon_requests(std::vector<MPI_Request> requests, KeepAlive keep_alive);
// Never released while the process lives (see above).
void quarantine(std::shared_ptr<const void> communicator);

// Tests every abandoned piece of work and releases what has finished. Does
// nothing when MPI is not running. Never throws.
void reap_abandoned_work() noexcept;

// Pieces of abandoned work still in flight (after a reap).
std::size_t abandoned_work_in_flight();

}  // namespace weave::internal
