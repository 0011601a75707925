#include "transport/copy_engine/copy_engine_transport.hpp"

#include <algorithm>

#include "backends/cuda/cuda_check.hpp"
#include "core/error.hpp"
#include "transport/copy_engine/copy_engine_entry.hpp"

namespace weave::internal::transport {

CopyEngineTransport::CopyEngineTransport(const TransportContext& context) : schedule_(context.schedule) {
  peers_ = std::make_unique<PeerConnection>(context, "copy-engine", PointToPointLinks::flags_needed(schedule_));
  try {
    links_ = std::make_unique<PointToPointLinks>(peers_->comm(), schedule_, peers_->mappings(), 0);
    int least = 0, greatest = 0;
    WEAVE_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    if (!context.resolved.comm_high_priority) greatest = least;
    for (int peer : links_->receivers()) {
      cudaStream_t s = nullptr;
      cudaEvent_t e = nullptr;
      WEAVE_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest));
      copy_streams_[peer] = s;
      WEAVE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      copy_done_[peer] = e;
    }
    WEAVE_CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
  } catch (...) {
    release();
    throw;
  }
}

CopyEngineTransport::~CopyEngineTransport() { release(); }

void CopyEngineTransport::release() noexcept {
  if (peers_) {
    const cuda::DeviceGuard guard(peers_->device(), std::nothrow);
    for (auto& [peer, s] : copy_streams_) {
      (void)peer;
      cudaStreamSynchronize(s);
      cudaStreamDestroy(s);
    }
    for (auto& [peer, e] : copy_done_) {
      (void)peer;
      cudaEventDestroy(e);
    }
    if (fork_) cudaEventDestroy(fork_);
    cudaGetLastError();
  }
  copy_streams_.clear();
  copy_done_.clear();
  fork_ = nullptr;
  links_.reset();
  peers_.reset();
}

std::string CopyEngineTransport::name() const {
  return str("copy_engine (CUDA peer copies on ", peers_->size(), " GPUs of one node, stream-memory-op signals, ",
             peers_->waits().bounded() ? "bounded device waits" : "unbounded stream-memory-op waits",
             peers_->has_collectives() ? "; collectives over nccl" : "", ")");
}

std::string CopyEngineTransport::device_wait_failure() const { return peers_->waits().failure_message(schedule_); }

void CopyEngineTransport::enqueue(const std::vector<const plan::Step*>& batch, const exec::Bindings& bindings,
                                  void* stream_pointer) {
  cuda::DeviceGuard guard(peers_->device());
  const DeviceWaits& waits = peers_->waits();
  const cudaStream_t stream = static_cast<cudaStream_t>(stream_pointer);
  // A batch's steps in an order in which no wait stands before a flag that
  // a peer waits for (no step depends on a step of its own batch): first
  // every receive's clear to send (my slots are free: the executor ordered
  // the batch after the receives' dependencies), then the sends, each on
  // its receiver's copy stream after that receiver's clear to send, then
  // one wait for every receive's data. Taken one receive at a time, a
  // receive's clear waited for the data of the receive before it, and a
  // send issued after a receive waited for that receive's data: where every
  // rank sends to several peers in one batch (WEAVE_GEMM's gathers over 4
  // GPUs) the transfers ran one after another around the group, 1.1 ms for
  // what 4 H200s' copy engines move at once in about 0.3 ms.
  std::vector<const plan::Step*> sends, collectives;
  std::vector<FlagWait> arrivals;
  for (const plan::Step* step : batch) {
    switch (step->kind()) {
      case plan::StepKind::Send:
        if (links_->outgoing(step).bytes > 0) sends.push_back(step);  // the receiver skips it too
        break;
      case plan::StepKind::Recv: {
        if (bindings.schedule->bytes(std::get<plan::RecvOp>(step->op).dst) == 0) break;
        const IncomingLink& in = links_->incoming(step);
        waits.raise(stream, in.clear_flag);
        arrivals.push_back(FlagWait{in.data_flag, 1, true, in.step, in.peer});
        break;
      }
      case plan::StepKind::Collective:
        collectives.push_back(step);
        break;
      default:
        fail(WEAVE_ERROR_INTERNAL, "the copy-engine transport cannot run step '", step->label, "' (",
             plan::step_kind_name(step->kind()), ")");
    }
  }
  std::vector<int> joined;
  if (!sends.empty()) WEAVE_CUDA_CHECK(cudaEventRecord(fork_, stream));
  for (const plan::Step* step : sends) {
    const OutgoingLink& out = links_->outgoing(step);
    const cudaStream_t copy = copy_streams_.at(out.peer);
    WEAVE_CUDA_CHECK(cudaStreamWaitEvent(copy, fork_, 0));
    waits.wait(copy, {FlagWait{out.clear_flag, 1, true, out.step, out.peer}});
    const void* source = bindings.resolve(std::get<plan::SendOp>(step->op).src).data;
    WEAVE_CUDA_CHECK(cudaMemcpyAsync(out.destination, source, static_cast<std::size_t>(out.bytes),
                                     cudaMemcpyDeviceToDevice, copy));
    waits.raise(copy, out.data_flag);
    WEAVE_CUDA_CHECK(cudaEventRecord(copy_done_.at(out.peer), copy));
    if (std::find(joined.begin(), joined.end(), out.peer) == joined.end()) joined.push_back(out.peer);
  }
  if (!arrivals.empty()) waits.wait(stream, arrivals);
  // The batch is done on the communication stream when its copies are.
  for (int peer : joined) WEAVE_CUDA_CHECK(cudaStreamWaitEvent(stream, copy_done_.at(peer), 0));
  peers_->enqueue_collectives(collectives, bindings, stream_pointer);
}

std::unique_ptr<Transport> make_copy_engine_transport(const TransportContext& context) {
  return std::make_unique<CopyEngineTransport>(context);
}

}  // namespace weave::internal::transport
