// What the ranks of one communicator know of each other's progress through
// the collective calls they make on it, from small notices on a dedicated
// duplicate of that communicator. Nothing is sent while calls go well: a
// rank speaks only once a wait has lasted the notice interval
// (WaitBounds::notice_interval), while its own work keeps it busy that long,
// and when it gives up.
//   arrived(n):  "I am in call n (or a later one)"; a rank that has reached
//                call n answers with its own, so a waiting rank learns which
//                ranks have not arrived and can name them;
//   working(n):  "I am in call n and my own work (a long GEMM) advances":
//                a peer waiting for this rank restarts its timeout;
//   gave_up(n):  "I stopped waiting in call n": a rank that reaches call n
//                later fails at once instead of waiting for a rank that left.
// Call numbers start at 1 and grow by one with every collective call of the
// owner (a grid's creation calls, a plan's executes), alike on every rank.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/communicator.hpp"

namespace weave::internal {

class ArrivalNotices {
 public:
  // `comm`: a communicator used for nothing else.
  explicit ArrivalNotices(SharedComm comm);
  ~ArrivalNotices();  // notices still in flight go to the abandoned work
  ArrivalNotices(const ArrivalNotices&) = delete;
  ArrivalNotices& operator=(const ArrivalNotices&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const SharedComm& comm() const { return comm_; }

  // Starts call `call` (and reads what has come in).
  void enter(uint64_t call);
  uint64_t call() const { return call_; }

  // Receives every notice that has come in and answers arrival notices of
  // calls this rank has reached. Cheap when nothing came (one MPI_Iprobe).
  void poll();
  void announce_arrival();   // once per call
  void announce_working();
  void announce_give_up();   // once per call

  // Peers not known to have reached the current call.
  std::vector<int> not_arrived() const;
  // A peer that gave up in this call or an earlier one, or -1.
  int gave_up() const;
  // When a peer last said that its work in the current call advanced.
  std::chrono::steady_clock::time_point last_peer_working() const { return last_peer_working_; }

 private:
  enum Kind : int64_t { kArrived = 1, kWorking = 2, kGaveUp = 3 };
  void send(int peer, Kind kind);
  void send_to_all(Kind kind);
  void reap_sends();

  SharedComm comm_;
  int rank_ = 0, size_ = 1;
  uint64_t call_ = 0;
  std::vector<uint64_t> reached_;   // per rank: the latest call it said it reached
  std::vector<uint64_t> told_;      // per rank: the latest call this rank told it about
  std::vector<uint64_t> gave_up_;   // per rank: the call it gave up in (UINT64_MAX: none)
  uint64_t arrival_announced_ = 0, give_up_announced_ = 0;
  std::chrono::steady_clock::time_point last_peer_working_{};
  struct Outgoing {
    MPI_Request request = MPI_REQUEST_NULL;
    std::shared_ptr<int64_t[]> message;
  };
  std::vector<Outgoing> outgoing_;
};

// "group rank 3", "group ranks 0 and 3", "group ranks 0, 2 and 3".
std::string rank_list(const char* noun, const std::vector<int>& ranks);

}  // namespace weave::internal
