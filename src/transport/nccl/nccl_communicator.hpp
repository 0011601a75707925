// The NCCL communicator of one group of a grid. Creating one is expensive
// (NCCL sets up rings and connections), so it is made once per grid, group
// kind and device and shared, through GridState::cached, by every plan over
// that group; each transport holds a shared_ptr, so the communicator lives
// as long as any plan that uses it.
//
// What NCCL's kernels wait for on the GPU is bounded by the plan's timeout
// through the watchdog (nccl_watchdog.hpp): past it the communicator is
// aborted (ncclCommAbort: the kernels return, the streams drain). An
// aborted communicator stays aborted: every plan over it fails with
// WEAVE_ERROR_TIMEOUT once and WEAVE_ERROR_PLAN_FAILED after, and a new plan
// over the grid is refused (destroy the grid and make a new one).
//
// The communicator is NCCL's blocking kind: its nonblocking mode would bound
// NCCL's host-side calls too, but it starts a thread for every group of
// calls (measured: 0.07-0.22 ms more per execute on 2 H200s where the
// host waits for the launch, doc/performance.md). So an NCCL call that
// blocks the host waiting for a peer (NCCL connecting to a peer the first
// time it talks to it, or its queue of work full behind kernels that wait)
// is bounded the way NCCL's users bound it: the watchdog aborts the
// communicator from its thread one timeout later, and NCCL's abort flag
// ends the blocked call.
#pragma once

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/grid.hpp"
#include "transport/nccl/nccl_watchdog.hpp"

namespace weave::internal::transport {

class NcclCommunicator {
 public:
  // Collective over group_comm: group rank 0 makes the unique id and
  // broadcasts it over MPI; every rank joins on the current CUDA device.
  explicit NcclCommunicator(MPI_Comm group_comm);
  ~NcclCommunicator();  // ncclCommDestroy; nothing once aborted
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int device() const { return device_; }
  int size() const { return size_; }
  int rank() const { return rank_; }

  // One group of NCCL calls on `stream`: `calls` makes them (between
  // ncclGroupStart and ncclGroupEnd) with the communicator, and the
  // watchdog gives the group `timeout` (negative: no bound) from when the
  // stream reaches it. `what` names the group in messages. Fails with
  // WEAVE_ERROR_PLAN_FAILED once the communicator was aborted, and with
  // WEAVE_ERROR_TIMEOUT when it was aborted during these calls.
  void enqueue_group(const std::function<void(ncclComm_t)>& calls, cudaStream_t stream,
                     std::chrono::milliseconds timeout, const std::string& what);
  // Why the communicator was aborted; empty while it was not.
  std::string failure() const;

 private:
  // On the watchdog's thread: aborts once no execute is inside an NCCL call
  // of the communicator, or after one more `timeout` without waiting for it
  // (its call is then the one waiting for the absent peer).
  void expire(const std::string& why, std::chrono::milliseconds timeout);
  // ncclCommAbort, once; `why` kept for failure().
  void abort_now(const std::string& why) noexcept;

  std::mutex calls_mutex_;  // held while an execute's NCCL calls run; the watchdog aborts under it when it can
  mutable std::mutex failure_mutex_;
  std::atomic<bool> aborted_{false};
  ncclComm_t comm_ = nullptr;
  std::string failure_;
  int device_ = -1;
  int size_ = 1, rank_ = 0;
  std::unique_ptr<NcclWatchdog> watchdog_;
};

// The communicator of `group` on the current device: the cached one, or a
// new one (collective over the group). Refused once the cached one was
// aborted.
std::shared_ptr<NcclCommunicator> nccl_communicator(GridState& grid, const GroupView& group);

}  // namespace weave::internal::transport
