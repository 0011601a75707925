// SM-driven transfers between the GPUs of one node: kernels on a bounded
// number of CTAs (one per SM; WEAVE_SM_TRANSPORT_CTAS) move and sum data
// through the peer mappings every rank makes once, at plan creation
// (PeerMappings, as the copy-engine transport), with flags for readiness in
// both directions, every wait bounded (DeviceWaits).
//
//   Send/Recv    the receiver raises "clear to send" when its slot is free;
//                the sender's push kernel waits for it, writes the bytes
//                into the receiver's workspace with 16-byte stores, and
//                raises "data"; the receiver waits for "data".
//   Publish      raises "ready" in the reader's flags once the region (a
//                product in my workspace) is made.
//   PeerSum      one kernel waits for every remote term's "ready", reads
//                each term where it lies (a peer's workspace or mine), sums
//                in the accumulation type in the listed order, applies the
//                epilogue (alpha, beta * C, bias, C's type) and stores C
//                (and a copy for the peers), then raises each publisher's
//                "released".
//   AwaitRelease waits for "released": the region may be overwritten again.
//
// Every flag is reset by the rank that waited for it, so the same sequence
// runs in every execute and in a replayed CUDA graph. All kernels run on the
// communication stream, one after another. The collectives of the
// sequential algorithm go through NCCL.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "transport/peer/peer_connection.hpp"
#include "transport/peer/point_to_point_links.hpp"
#include "transport/sm/peer_sum_links.hpp"
#include "transport/transport.hpp"
#include "transport/transport_context.hpp"

namespace weave::internal::transport {

class SmTransport final : public Transport {
 public:
  // Collective over the group. Receive regions and published regions must
  // lie in the workspace.
  explicit SmTransport(const TransportContext& context);
  ~SmTransport() override;

  std::string name() const override;
  bool stream_ordered() const override { return true; }
  void enqueue(const std::vector<const plan::Step*>& batch, const exec::Bindings& bindings, void* stream) override;
  std::string device_wait_failure() const override;

 private:
  void enqueue_sends(const std::vector<const plan::Step*>& sends, const exec::Bindings& bindings,
                     cudaStream_t stream) const;
  void enqueue_peer_sum(const plan::Step& step, const exec::Bindings& bindings, cudaStream_t stream) const;
  void release() noexcept;

  const plan::Schedule& schedule_;
  int ctas_ = 1, device_sms_ = 0;
  std::unique_ptr<PeerConnection> peers_;
  std::unique_ptr<PointToPointLinks> point_to_point_;
  std::unique_ptr<sm::PeerSumLinks> peer_sums_;
  unsigned* counter_ = nullptr;  // the kernels' count of finished CTAs (device memory)
};

}  // namespace weave::internal::transport
