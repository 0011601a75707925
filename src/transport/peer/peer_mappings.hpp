// The plan's workspace and a block of signal flags of every rank of the
// group, mapped into every other rank's address space once, at plan
// creation (CUDA IPC handles exchanged over MPI). Peer transports (copy
// engines, SM-driven transfers) write into or read from a peer's workspace
// and raise its flags through these mappings; execute maps nothing.
//
// Each rank also announces, per step a peer must find, where that step's
// data lies in its workspace and which of its flags belongs to it
// (PeerEntry); PeerDirectory gathers every rank's announcements.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace weave::internal::transport {

class PeerMappings {
 public:
  // Collective over `comm`. `workspace`: the plan's device workspace
  // (cudaMalloc'd, so it can be exported; may be null when empty).
  // `flag_count`: this rank's flags, allocated and zeroed before any peer
  // can write them, behind one more word: the rank's alarm word, which a
  // peer whose device-side wait gave up writes (DeviceWaitState).
  PeerMappings(MPI_Comm comm, void* workspace, int flag_count);
  ~PeerMappings();
  PeerMappings(const PeerMappings&) = delete;
  PeerMappings& operator=(const PeerMappings&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Rank q's workspace and flags as this rank addresses them (q == rank():
  // its own).
  char* workspace(int q) const { return workspaces_.at(static_cast<std::size_t>(q)); }
  uint32_t* flags(int q) const { return blocks_.at(static_cast<std::size_t>(q)) + kAlarmWords; }
  // Rank q's alarm word as this rank addresses it.
  uint32_t* alarm(int q) const { return blocks_.at(static_cast<std::size_t>(q)); }

 private:
  void release() noexcept;

  static constexpr int kAlarmWords = 1;  // the alarm word, then the flags

  int rank_ = 0, size_ = 1;
  uint32_t* own_block_ = nullptr;
  std::vector<char*> workspaces_;
  std::vector<uint32_t*> blocks_;  // rank q's alarm word and flags, as mapped here
};

// What a rank announces about one of its steps, for the peer the step is
// aimed at.
struct PeerEntry {
  int64_t peer = 0;    // the group rank the entry is aimed at
  int64_t tag = 0;     // the step's tag (send/receive, publish/read)
  int64_t offset = 0;  // bytes into the announcing rank's workspace (where data lies), else 0
  int64_t bytes = 0;
  int64_t flag = 0;    // index of one of the announcing rank's flags
  // A receive whose clear to send its rank raises at the start of every
  // execute (PointToPointLinks), not when its step is due: 1, else 0.
  int64_t cleared_at_start = 0;
};

// Every rank's announcements. Collective over `comm`.
class PeerDirectory {
 public:
  PeerDirectory(MPI_Comm comm, const std::vector<PeerEntry>& mine);
  // The entry `from` announced for `to` with `tag`; null when there is none.
  const PeerEntry* find(int from, int to, int64_t tag) const;
  // The entry `from` announced for `to` with mine's tag and byte count;
  // WEAVE_ERROR_INTERNAL saying `from` has no such `what` when there is none
  // (schedules that disagree).
  const PeerEntry& match(int from, int to, const PeerEntry& mine, const char* what) const;

 private:
  std::vector<PeerEntry> all_;
  std::vector<int> first_;  // rank q's entries: all_[first_[q] .. first_[q + 1])
};

}  // namespace weave::internal::transport
