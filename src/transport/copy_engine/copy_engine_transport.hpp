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
// Sends run on one copy stream per receiver, so the two directions of a
// bidirectional ring move at the same time; each batch joins them back into
// the communication stream.
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
  std::string device_wait_failure() const override;

 private:
  void release() noexcept;

  const plan::Schedule& schedule_;
  std::unique_ptr<PeerConnection> peers_;
  std::unique_ptr<PointToPointLinks> links_;
  std::map<int, cudaStream_t> copy_streams_;  // per receiving peer
  std::map<int, cudaEvent_t> copy_done_;
  cudaEvent_t fork_ = nullptr;
};

}  // namespace weave::internal::transport
