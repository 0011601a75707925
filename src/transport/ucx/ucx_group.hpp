// The UCX state of one group of a grid: a UCP context, one worker, and an
// endpoint to every rank of the group (this rank included), connected from
// worker addresses exchanged over the group's MPI communicator. Creating it
// is collective and costs a few milliseconds, so a grid creates it once per
// group kind (GridState::cached) and every UCX plan over that group shares it.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/grid.hpp"

namespace weave::internal::transport {

// Throws WEAVE_ERROR_UCX naming the call and UCX's own words for `status`.
void check_ucx(ucs_status_t status, const char* call);

class UcxGroup {
 public:
  // Collective over group.comm; agrees on errors, so a rank whose UCX cannot
  // start makes every rank of the group fail with its message.
  explicit UcxGroup(const GroupView& group);
  ~UcxGroup();
  UcxGroup(const UcxGroup&) = delete;
  UcxGroup& operator=(const UcxGroup&) = delete;

  ucp_context_h context() const { return context_; }
  ucp_worker_h worker() const { return worker_; }
  ucp_ep_h endpoint(int group_rank) const;
  int size() const { return static_cast<int>(endpoints_.size()); }
  int rank() const { return rank_; }

  // Whether this UCX library and its transports can move CUDA device memory
  // (ucp_context_query's memory types), decided at run time.
  bool cuda_memory() const { return cuda_memory_; }
  // The UCX library version in use, e.g. "1.13.1".
  const std::string& version() const { return version_; }

  // Every use of the worker holds this lock: plans of one group share the
  // worker, and an executor's progress thread calls in as well.
  std::mutex& mutex() { return mutex_; }

  // A fresh id for the next plan over this group (call with mutex() held).
  // Plans are created collectively and in the same order on every rank, so
  // the ids agree.
  uint32_t next_plan_id() { return next_plan_id_++; }

  // After a cancelled execute left a receive that UCX could not cancel, the
  // worker may still write into memory the caller has since reused; every
  // later use of this group fails with `why` (create a new grid). Both
  // calls with mutex() held.
  void mark_unusable(const std::string& why);
  const std::string& unusable_reason() const { return unusable_; }

 private:
  void create_local_state(int group_size);
  void connect(const std::vector<char>& addresses, const std::vector<int>& lengths,
               const std::vector<int>& offsets);
  void release() noexcept;

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_address_t* address_ = nullptr;
  std::size_t address_length_ = 0;
  std::vector<ucp_ep_h> endpoints_;
  int rank_ = 0;
  bool cuda_memory_ = false;
  std::string version_;
  std::mutex mutex_;
  uint32_t next_plan_id_ = 0;
  std::string unusable_;
};

}  // namespace weave::internal::transport
