// Chunks over NCCL, enqueued on the plan's communication stream: each batch
// of a schedule is one NCCL group (ncclGroupStart/End), so a ring step's send
// and receive progress together and pair up with the neighbours' batch.
// Stream-ordered: nothing here waits on the host, so an execute can be
// captured into a CUDA graph.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>

#include "transport/nccl/nccl_communicator.hpp"
#include "transport/transport.hpp"

namespace weave::internal::transport {

class NcclTransport final : public Transport {
 public:
  explicit NcclTransport(std::shared_ptr<NcclCommunicator> communicator);

  std::string name() const override;
  bool stream_ordered() const override { return true; }
  void enqueue(const std::vector<const plan::Step*>& batch, const exec::Bindings& bindings, void* stream) override;

 private:
  // Copies that must precede the batch's NCCL calls (an uneven all-gather's
  // own part into place).
  void enqueue_local_copies(const plan::Step& step, const exec::Bindings& bindings, cudaStream_t stream) const;
  // The NCCL calls of one step (inside the batch's group).
  void enqueue_step(const plan::Step& step, const exec::Bindings& bindings, cudaStream_t stream) const;
  void all_gather(const plan::CollectiveOp& op, const exec::Bindings& bindings, cudaStream_t stream) const;
  void reduce_scatter(const plan::CollectiveOp& op, const exec::Bindings& bindings, cudaStream_t stream) const;

  std::shared_ptr<NcclCommunicator> communicator_;
  ncclComm_t comm_ = nullptr;
};

}  // namespace weave::internal::transport
