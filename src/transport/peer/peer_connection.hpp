// What the transports among one node's GPUs (copy engines, SM-driven
// transfers) set up alike at plan creation: the check that the group shares
// one node with peer access, their own duplicate of the group's
// communicator, the bounded device waits, the workspaces and flags mapped
// between the ranks, and NCCL for the sequential algorithm's collectives
// when the schedule has any.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "transport/peer/device_waits.hpp"
#include "transport/peer/peer_mappings.hpp"
#include "transport/transport.hpp"
#include "transport/transport_context.hpp"

namespace weave::internal::transport {

class PeerConnection {
 public:
  // Collective over the group. `title` names the transport in messages;
  // `flag_count`: the flags this rank needs.
  PeerConnection(const TransportContext& context, const char* title, int flag_count);
  ~PeerConnection();
  PeerConnection(const PeerConnection&) = delete;
  PeerConnection& operator=(const PeerConnection&) = delete;

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int device() const { return device_; }
  const DeviceWaits& waits() const { return *waits_; }
  const PeerMappings& mappings() const { return *mappings_; }
  bool has_collectives() const { return collectives_ != nullptr; }
  // What the first device-side wait that gave up waited for (naming its
  // step in `schedule`), else why the collectives' NCCL communicator was
  // aborted; empty while neither happened (Transport::device_wait_failure).
  std::string wait_failure(const plan::Schedule& schedule) const;
  // The sequential algorithm's collectives, on `stream`.
  void enqueue_collectives(const std::vector<const plan::Step*>& collectives, const exec::Bindings& bindings,
                           void* stream) const;

 private:
  void release() noexcept;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, device_ = -1;
  std::unique_ptr<DeviceWaits> waits_;
  std::unique_ptr<PeerMappings> mappings_;
  std::unique_ptr<Transport> collectives_;
};

}  // namespace weave::internal::transport
