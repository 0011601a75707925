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
  std::vector<const plan::Step*> collectives;
  bool forked = false;
  std::vector<int> joined;
  for (const plan::Step* step : batch) {
    switch (step->kind()) {
      case plan::StepKind::Send: {
        const OutgoingLink& out = links_->outgoing(step);
        if (out.bytes == 0) break;  // the receiver skips it too
        if (!forked) {
          WEAVE_CUDA_CHECK(cudaEventRecord(fork_, stream));
          forked = true;
        }
        const cudaStream_t copy = copy_streams_.at(out.peer);
        WEAVE_CUDA_CHECK(cudaStreamWaitEvent(copy, fork_, 0));
        waits.wait(copy, {FlagWait{out.clear_flag, 1, true, out.step, out.peer}});
        const void* source = bindings.resolve(std::get<plan::SendOp>(step->op).src).data;
        WEAVE_CUDA_CHECK(cudaMemcpyAsync(out.destination, source, static_cast<std::size_t>(out.bytes),
                                         cudaMemcpyDeviceToDevice, copy));
        waits.raise(copy, out.data_flag);
        WEAVE_CUDA_CHECK(cudaEventRecord(copy_done_.at(out.peer), copy));
        joined.push_back(out.peer);
        break;
      }
      case plan::StepKind::Recv: {
        const IncomingLink& in = links_->incoming(step);
        if (bindings.schedule->bytes(std::get<plan::RecvOp>(step->op).dst) == 0) break;
        // My slot is free (the executor ordered this after the receive's
        // dependencies): tell the sender, then wait for its data.
        waits.raise(stream, in.clear_flag);
        waits.wait(stream, {FlagWait{in.data_flag, 1, true, in.step, in.peer}});
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
  // The batch is done on the communication stream when its copies are.
  for (int peer : joined) WEAVE_CUDA_CHECK(cudaStreamWaitEvent(stream, copy_done_.at(peer), 0));
  peers_->enqueue_collectives(collectives, bindings, stream_pointer);
}

std::unique_ptr<Transport> make_copy_engine_transport(const TransportContext& context) {
  return std::make_unique<CopyEngineTransport>(context);
}

}  // namespace weave::internal::transport
