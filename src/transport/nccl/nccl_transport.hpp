// Chunks over NCCL, enqueued on the plan's communication stream: each batch
// of a schedule is one NCCL group (ncclGroupStart/End), so a ring step's send
// and receive progress together and pair up with the neighbours' batch.
// Stream-ordered: nothing here waits on the host, so an execute can be
// captured into a CUDA graph. Every group is bounded by the plan's timeout,
// on the host and on the GPU (nccl_communicator.hpp).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/nccl/nccl_communicator.hpp"
#include "transport/transport.hpp"

namespace weave::internal::transport {

class NcclTransport final : public Transport {
 public:
  NcclTransport(std::shared_ptr<NcclCommunicator> communicator, std::chrono::milliseconds timeout);

  std::string name() const override;
  bool stream_ordered() const override { return true; }
  void enqueue(const std::vector<const plan::Step*>& batch, const exec::Bindings& bindings, void* stream) override;
  // Why the communicator was aborted (a group that did not complete within
  // the timeout); empty while it was not.
  std::string device_wait_failure() const override;

 private:
  // What the messages of a timeout call a batch: its first step and its
  // peers. Made at a batch's first enqueue and kept (by its first step,
  // which lives as long as the plan), not at every execute.
  const std::string& batch_name(const std::vector<const plan::Step*>& batch, const plan::Schedule& schedule);
  // Copies that must precede the batch's NCCL calls (an uneven all-gather's
  // own part into place).
  void enqueue_local_copies(const plan::Step& step, const exec::Bindings& bindings, cudaStream_t stream) const;
  // The NCCL calls of one step (inside the batch's group).
  void enqueue_step(const plan::Step& step, const exec::Bindings& bindings, cudaStream_t stream, ncclComm_t comm) const;
  void all_gather(const plan::CollectiveOp& op, const exec::Bindings& bindings, cudaStream_t stream,
                  ncclComm_t comm) const;
  void reduce_scatter(const plan::CollectiveOp& op, const exec::Bindings& bindings, cudaStream_t stream,
                      ncclComm_t comm) const;

  std::shared_ptr<NcclCommunicator> communicator_;
  std::chrono::milliseconds timeout_;
  std::unordered_map<const plan::Step*, std::string> batch_names_;
};

}  // namespace weave::internal::transport
