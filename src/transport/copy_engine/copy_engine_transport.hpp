// Chunks moved by the GPUs' copy engines: every rank maps its peers'
// workspaces once, at plan creation (PeerMappings), and a send is a
// cudaMemcpyAsync straight into the receiver's workspace slot. Copies take
// no SMs from the GEMMs, which is the point.
//
// A message is the rendezvous of PointToPointLinks, its flags raised with
// stream memory operations (no kernels) and waited for with the bounded
// waits of DeviceWaits (a one-warp kernel each; WEAVE_DEVICE_WAIT=stream:
// stream memory operations, unbounded):
//   receiver: when its receive step is due (its slot is free), it raises
//             "clear to send" in the sender's flag, then waits for "data";
//   sender:   waits for "clear to send", copies, raises "data" in the
//             receiver's flag.
// A receive that depends on no step raises its clear at the start of every
// execute, and its sender waits for all such clears once, at its own start
// (begin_stream_execute), so its sends wait for no flag (no kernel beside
// the GEMMs, no handshake per step); WEAVE_CLEAR_TO_SEND=per_step keeps
// the handshake per step.
// Sends run on one copy stream per receiver, so the two directions of a
// bidirectional ring, or a direct AG-GEMM's copies to every peer, move at
// the same time; WEAVE_COPY_ENGINE_SENDS=in_order runs them one at a time,
// in schedule order, on one copy stream (plan::CopyEngineSends says what
// each measured). A batch completes on the
// communication stream: one wait there for all its data, and its copy
// streams joined back. WEAVE_TRANSFER_COMPLETION=own_streams instead waits
// for each receive's data on an arrival stream per sender and completes
// each step where it ran (completion_stream), so a GEMM waits for its chunk
// alone and no batch waits for an earlier one's transfers; measured slower
// in 6 of 9 cases on 4 H200s (its bounded waits, kernels launched as soon
// as a batch is enqueued, hold SMs beside the GEMMs), so not the default
// (doc/performance.md); there end_stream_execute joins the transport's streams.
//
// For the collectives of the sequential algorithm the transport uses NCCL.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <vector>

#include "transport/peer/peer_connection.hpp"
#include "transport/peer/point_to_point_links.hpp"
#include "transport/transport.hpp"
#include "transport/transport_context.hpp"

namespace weave::internal::transport {

class CopyEngineTransport final : public Transport {
 public:
  // Collective over the group. Receive regions must lie in the workspace.
  explicit CopyEngineTransport(const TransportContext& context);
  ~CopyEngineTransport() override;

  std::string name() const override;
  bool stream_ordered() const override { return true; }
  void enqueue(const std::vector<const plan::Step*>& batch, const exec::Bindings& bindings, void* stream) override;
  void* completion_stream(const plan::Step& step) const override;
  void begin_stream_execute(void* stream) override;
  void end_stream_execute(void* stream) override;
  std::string device_wait_failure() const override;

 private:
  void release() noexcept;

  const plan::Schedule& schedule_;
  std::unique_ptr<PeerConnection> peers_;
  std::unique_ptr<PointToPointLinks> links_;
  bool own_streams_ = false;  // steps complete on the copy and arrival streams (WEAVE_TRANSFER_COMPLETION)
  plan::CopyEngineSends sends_ = plan::CopyEngineSends::PerReceiver;  // WEAVE_COPY_ENGINE_SENDS
  // At the start of every execute (WEAVE_CLEAR_TO_SEND, PointToPointLinks):
  // the clears I raise, and the clears of my sends I wait for.
  std::vector<uint32_t*> clears_at_start_;
  std::vector<FlagWait> cleared_at_start_;
  static constexpr int kInOrderStream = -1;      // the copy stream of sends one at a time
  std::map<int, cudaStream_t> copy_streams_;     // per receiving peer, and kInOrderStream
  std::map<int, cudaStream_t> arrival_streams_;  // per sending peer
  std::map<cudaStream_t, cudaEvent_t> done_;     // per copy and arrival stream: its last work
  std::map<const plan::Step*, cudaStream_t> moves_on_;  // steps with bytes to move
  cudaEvent_t fork_ = nullptr;
};

}  // namespace weave::internal::transport
