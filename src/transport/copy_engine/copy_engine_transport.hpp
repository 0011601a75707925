// Chunks moved by the GPUs' copy engines: every rank maps its peers'
// workspaces once, at plan creation (CUDA IPC handles exchanged over MPI),
// and a send is a cudaMemcpyAsync straight into the receiver's workspace
// slot. Copies take no SMs from the GEMMs, which is the point.
//
// A message is a rendezvous of two flags, both written and waited for with
// stream memory operations (no kernels):
//   receiver: when its receive step is due (its slot is free), it writes
//             "clear to send" into the sender's flag, then waits for "data";
//   sender:   waits for "clear to send", copies, writes "data" into the
//             receiver's flag.
// Every flag is reset by the rank that waited for it, so the same sequence
// works on every execute and in a replayed CUDA graph. Sends run on one copy
// stream per receiver, so the two directions of a bidirectional ring move at
// the same time; each batch joins them back into the communication stream.
//
// For the collectives of the sequential algorithm the transport uses NCCL.
#pragma once

#include <cuda_runtime_api.h>
#include <mpi.h>

#include <map>
#include <memory>
#include <vector>

#include "core/grid.hpp"
#include "transport/copy_engine/stream_signals.hpp"
#include "transport/transport.hpp"

namespace weave::internal::transport {

class CopyEngineTransport final : public Transport {
 public:
  // Collective over the group. `workspace` is the plan's device workspace
  // (cudaMalloc'd, so it can be exported); receive regions must lie in it.
  CopyEngineTransport(GridState& grid, const GroupView& group, const plan::Schedule& schedule, void* workspace,
                      bool high_priority);
  ~CopyEngineTransport() override;

  std::string name() const override;
  bool stream_ordered() const override { return true; }
  void enqueue(const std::vector<const plan::Step*>& batch, const exec::Bindings& bindings, void* stream) override;

 private:
  struct Outgoing {      // one of my send steps
    int peer = 0;
    char* destination = nullptr;  // in the peer's workspace
    int64_t bytes = 0;
    uint32_t* data_flag = nullptr;  // in the peer's flags
    uint32_t* clear_flag = nullptr; // mine: the peer says its slot is free
  };
  struct Incoming {      // one of my receive steps
    int peer = 0;
    uint32_t* data_flag = nullptr;   // mine
    uint32_t* clear_flag = nullptr;  // in the peer's flags
  };

  void exchange_tables(const plan::Schedule& schedule);
  void release() noexcept;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, device_ = -1;
  StreamSignals signals_;
  uint32_t* flags_ = nullptr;  // my flags: data flags of my receives, then clear flags of my sends
  std::vector<char*> peer_workspace_;
  std::vector<uint32_t*> peer_flags_;
  std::map<const plan::Step*, Outgoing> outgoing_;
  std::map<const plan::Step*, Incoming> incoming_;
  std::map<int, cudaStream_t> copy_streams_;  // per receiving peer
  std::map<int, cudaEvent_t> copy_done_;
  cudaEvent_t fork_ = nullptr;
  std::unique_ptr<Transport> collectives_;  // NCCL, when the schedule has collectives
};

}  // namespace weave::internal::transport
