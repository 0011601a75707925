// Collective calls that every rank of a communicator makes together and
// that must agree: on errors (one rank's bad argument fails every rank), on
// arguments (ranks that pass different ones fail with
// WEAVE_ERROR_RANK_MISMATCH), and on duplicated communicators.
//
// An AgreementChannel runs them bounded in time: non-blocking collectives
// with heap buffers, waited for with a BoundedWait. When a wait gives up,
// the request stays pending (MPI cannot cancel a collective) and goes to the
// abandoned work together with its buffers and the communicator, so a rank
// that comes late completes it against memory that is still there; the
// channel is failed from then on (its communicator's collective sequence is
// broken) and every later call on it says so.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/arrival_notices.hpp"
#include "core/communicator.hpp"
#include "core/wait_bounds.hpp"

namespace weave::internal {

class AgreementChannel {
 public:
  // `notices` (may be null) run on their own duplicate of `comm`. `owner`
  // ("grid", "plan") and `noun` ("rank", "group rank") word the messages.
  AgreementChannel(SharedComm comm, std::unique_ptr<ArrivalNotices> notices, std::string owner, const char* noun);
  ~AgreementChannel();

  MPI_Comm comm() const { return comm_->get(); }
  int size() const { return size_; }
  int rank() const { return rank_; }
  ArrivalNotices* notices() const { return notices_.get(); }
  const char* noun() const { return noun_; }
  const WaitBounds& bounds() const { return bounds_; }
  const std::string& call() const { return call_; }

  // Starts the next collective call (one per API call) with its bounds and
  // name; throws if the channel has failed.
  void begin_call(const WaitBounds& bounds, std::string call);
  void require_usable() const;
  bool failed() const { return !failure_.empty(); }
  // No further collective may run on the channel; its communicators are
  // kept (quarantined) until the process ends.
  void mark_failed(const std::string& why);

  // Runs one non-blocking collective started by `start` to completion,
  // within the call's bounds. `buffers` owns the memory it reads and writes.
  void collective(const std::function<int(MPI_Request*)>& start, std::shared_ptr<const void> buffers,
                  const std::string& what);

 private:
  SharedComm comm_;
  std::unique_ptr<ArrivalNotices> notices_;
  std::string owner_;
  const char* noun_;
  int size_ = 1, rank_ = 0;
  WaitBounds bounds_;
  std::string call_;
  uint64_t calls_ = 0;
  std::string failure_;
};

// Runs `local_check` on every rank and makes them agree: if it threw on any
// rank, every rank throws the error of the lowest failing rank (the lowest
// whose error is not a timeout, where there is one: the cause rather than
// the peers' timeouts it caused), with "rank R: " in front of its message.
// `stage` says what the ranks agree on, for timeout messages.
void agree_on_errors(AgreementChannel& channel, const std::function<void()>& local_check,
                     const std::string& stage = "the agreement on errors");
// The same over a raw communicator, unbounded (blocking): for creation
// steps that follow a bounded agreement of the same ranks.
void agree_on_errors(MPI_Comm comm, const std::function<void()>& local_check);

// Makes every rank of the channel show which call it is in (the channel's
// current call, by name) and throws WEAVE_ERROR_RANK_MISMATCH on every rank
// where they differ: a rank that skipped a collective call would otherwise
// match its next call's collectives with the others' current ones, and
// collectives of different sizes are an MPI error that MPI may treat as
// fatal. One collective of the same size whatever the call, so it is the
// first of every call of a channel whose ranks could be in different calls.
void check_same_call(AgreementChannel& channel);

// A named integer argument that every rank of a group must pass identically.
struct Argument {
  std::string name;
  int64_t value;
  // How messages show the value: a double's bits (compared bit for bit,
  // shown as the number) or the integer itself.
  enum class Shown { Integer, DoubleBits } shown = Shown::Integer;
};

// Throws WEAVE_ERROR_RANK_MISMATCH on every rank if any rank's arguments
// differ from those of rank 0, naming the first field and both values.
void check_same_on_all_ranks(AgreementChannel& channel, const std::vector<Argument>& arguments,
                             const std::string& context);

// A duplicate of the channel's communicator (MPI_Comm_idup, bounded), whose
// errors come back as codes.
SharedComm duplicate(AgreementChannel& channel);
// The same for a communicator that has no channel yet (a grid's first
// step); nobody can be named if a rank does not come.
SharedComm duplicate(MPI_Comm comm, const WaitBounds& bounds, const std::string& call);

// Every rank's bytes, back to back; `offsets` gets where each rank's start
// (size + 1 entries). Bounded like every collective of the channel.
std::vector<char> all_gather_bytes(AgreementChannel& channel, const std::vector<char>& mine,
                                   std::vector<int>* offsets);

}  // namespace weave::internal
