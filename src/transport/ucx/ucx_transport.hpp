// Chunks over UCX tag send/receive. Host-progressed: UCX moves data only
// inside ucp_worker_progress, which the executor reaches through progress()
// and test() between GEMM column tiles or from its progress thread.
//
// Why tag matching rather than RMA put + flush + completion flag: a tagged
// message needs no remote key, so any buffer can travel, including the
// caller's A, B and C, which change from one execute to the next and which a
// put would need registered and their keys exchanged on every execute; the
// receiver learns that a chunk is complete from the receive itself, with no
// extra signal message and no polling of flags; and UCX chooses the protocol
// per message (eager copies for small chunks, zero-copy rendezvous for large
// ones, through shared memory, CMA, RDMA or TCP, whichever the job has).
//
// Memory registration: the plan's workspace, where forwarded chunks and
// partial sums live, is registered once per plan (ucp_mem_map, at its first
// execute, the first time the transport sees it) and its handle is handed to
// every send and receive inside it, so UCX versions that honour the handle
// skip their own registration. The caller's buffers are not registered by
// Weave: they may differ on every execute and a registration pins pages;
// UCX's registration cache registers them on first zero-copy use and reuses
// the registration while the same buffers come back.
//
// Collectives (the sequential algorithm's all-gather, reduce-scatter and
// all-reduce): UCX has none, so they are built here from the same tagged
// point-to-point messages (ucx_collective.hpp), in host memory. Nothing of a
// UCX plan travels over MPI, so a UCX plan needs no MPI thread level for its
// progress thread and no second communicator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "transport/transport.hpp"
#include "transport/ucx/ucx_collective.hpp"
#include "transport/ucx/ucx_group.hpp"

namespace weave::internal::transport {

// The workspace's registration, unmapped when the last user (the transport,
// or requests a failed execute left in flight) lets go of it.
struct UcxRegistration {
  UcxRegistration(std::shared_ptr<UcxGroup> g, ucp_mem_h h) : group(std::move(g)), handle(h) {}
  ~UcxRegistration();
  std::shared_ptr<UcxGroup> group;
  ucp_mem_h handle = nullptr;
};

class UcxTransport final : public Transport {
 public:
  // Local: the caller has checked the schedule (check_ucx_schedule) and
  // agreed with the group on `plan_id`.
  UcxTransport(std::shared_ptr<UcxGroup> group, const plan::Schedule& schedule, bool device_memory, uint32_t plan_id);
  ~UcxTransport() override;

  std::string name() const override;
  bool stream_ordered() const override { return false; }
  int post(const plan::Step& step, const exec::Bindings& bindings) override;
  bool test(int request) override;
  void progress() override;
  void abandon_outstanding(std::shared_ptr<const void> workspace_owner) override;
  void begin_execute() override;

 private:
  // One posted step: a send, a receive, or a collective of several messages.
  struct Operation {
    std::vector<UcxMessage> messages;        // in flight or finished
    std::unique_ptr<UcxCollective> collective;  // collective steps
    bool done = false;
  };

  UcxMessenger messenger(const exec::Bindings* bindings);
  bool advance(Operation& op);  // caller holds the group lock
  // Cancels the receives, waits a little for UCX to settle every message,
  // and hands what has not settled to the abandoned work. Group lock held.
  void abandon_locked(std::shared_ptr<const void> workspace_owner);
  void register_workspace(void* workspace);
  void release_workspace() noexcept;

  std::shared_ptr<UcxGroup> group_;
  const plan::Schedule& schedule_;
  bool device_memory_ = false;
  uint32_t plan_id_ = 0;
  uint32_t epoch_ = 0;
  // Per schedule step: which collective it is (-1: not one) and where its
  // scratch for incoming parts starts.
  struct CollectiveSlot {
    int ordinal = -1;
    int64_t scratch_offset = 0;
  };
  std::vector<CollectiveSlot> collective_slots_;
  std::shared_ptr<std::vector<std::byte>> scratch_;
  void* registered_workspace_ = nullptr;
  ucp_mem_h workspace_handle_ = nullptr;
  std::vector<Operation> operations_;         // this execute's, indexed by request id
};

// Checks that `schedule` fits the UCX transport (tag ranges, element types of
// sums, memory kind); throws WEAVE_ERROR_UNSUPPORTED* otherwise. Local.
void check_ucx_schedule(const plan::Schedule& schedule, int group_size, bool device_memory, const UcxGroup& group);

}  // namespace weave::internal::transport
