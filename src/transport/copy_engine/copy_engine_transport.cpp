#include "transport/copy_engine/copy_engine_transport.hpp"

#include <algorithm>

#include "backends/cuda/cuda_check.hpp"
#include "core/error.hpp"
#include "transport/copy_engine/copy_engine_entry.hpp"

namespace weave::internal::transport {

CopyEngineTransport::CopyEngineTransport(const TransportContext& context)
    : schedule_(context.schedule),
      own_streams_(context.resolved.completions_on_transport_streams),
      sends_(context.resolved.copy_engine_sends) {
  peers_ = std::make_unique<PeerConnection>(context, "copy-engine", PointToPointLinks::flags_needed(schedule_));
  try {
    const cuda::DeviceGuard guard(peers_->device());
    links_ = std::make_unique<PointToPointLinks>(peers_->comm(), schedule_, peers_->mappings(), 0,
                                                 context.resolved.clears_at_start);
    int least = 0, greatest = 0;
    WEAVE_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    if (!context.resolved.comm_high_priority) greatest = least;
    auto stream_for = [&](std::map<int, cudaStream_t>& streams, int peer) {
      auto found = streams.find(peer);
      if (found != streams.end()) return found->second;
      cudaStream_t s = nullptr;
      WEAVE_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest));
      streams[peer] = s;
      cudaEvent_t e = nullptr;
      WEAVE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      done_[s] = e;
      return s;
    };
    // Also what every execute does first (begin_stream_execute): the clears
    // of my receives that depend on nothing, and the peers' clears of such
    // receives of my sends.
    const bool in_order = sends_ == plan::CopyEngineSends::InOrder;
    for (const plan::Step& step : schedule_.steps) {
      if (step.kind() == plan::StepKind::Send) {
        const OutgoingLink& out = links_->outgoing(&step);
        if (out.bytes == 0) continue;  // moves nothing; its receiver skips it too
        moves_on_[&step] = stream_for(copy_streams_, in_order ? kInOrderStream : out.peer);
        if (out.cleared_at_start) cleared_at_start_.push_back(FlagWait{out.clear_flag, 1, true, out.step, out.peer});
      } else if (step.kind() == plan::StepKind::Recv) {
        if (schedule_.bytes(std::get<plan::RecvOp>(step.op).dst) == 0) continue;
        const IncomingLink& in = links_->incoming(&step);
        moves_on_[&step] = own_streams_ ? stream_for(arrival_streams_, in.peer) : nullptr;
        if (in.cleared_at_start) clears_at_start_.push_back(in.clear_flag);
      }
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
    for (auto& [s, e] : done_) {
      cudaStreamSynchronize(s);
      cudaStreamDestroy(s);
      cudaEventDestroy(e);
    }
    if (fork_) cudaEventDestroy(fork_);
    cudaGetLastError();
  }
  copy_streams_.clear();
  arrival_streams_.clear();
  done_.clear();
  moves_on_.clear();
  clears_at_start_.clear();
  cleared_at_start_.clear();
  fork_ = nullptr;
  links_.reset();
  peers_.reset();
}

std::string CopyEngineTransport::name() const {
  return str("copy_engine (CUDA peer copies on ", peers_->size(), " GPUs of one node, stream-memory-op signals, ",
             peers_->waits().bounded() ? "bounded device waits" : "unbounded stream-memory-op waits",
             sends_ == plan::CopyEngineSends::InOrder ? ", sends one at a time, in order" : "",
             own_streams_ ? "" : ", transfers complete on the communication stream",
             clears_at_start_.empty() && cleared_at_start_.empty()
                 ? ""
                 : ", clears to send raised at the start of the execute",
             peers_->has_collectives() ? "; collectives over nccl" : "", ")");
}

std::string CopyEngineTransport::device_wait_failure() const { return peers_->wait_failure(schedule_); }

void* CopyEngineTransport::completion_stream(const plan::Step& step) const {
  if (!own_streams_) return nullptr;
  const auto found = moves_on_.find(&step);
  return found == moves_on_.end() ? nullptr : found->second;
}

void CopyEngineTransport::begin_stream_execute(void* stream_pointer) {
  // The clears of my receives that depend on nothing, then one wait for the
  // peers' clears of such receives of my sends: every later batch forks its
  // copy streams from this stream, so no send of them waits again.
  if (clears_at_start_.empty() && cleared_at_start_.empty()) return;
  cuda::DeviceGuard guard(peers_->device());
  const cudaStream_t stream = static_cast<cudaStream_t>(stream_pointer);
  const DeviceWaits& waits = peers_->waits();
  for (uint32_t* flag : clears_at_start_) waits.raise(stream, flag);
  if (!cleared_at_start_.empty()) waits.wait(stream, cleared_at_start_);
}

void CopyEngineTransport::end_stream_execute(void* stream) {
  // Without own streams every batch has joined its copy streams already.
  if (!own_streams_) return;
  cuda::DeviceGuard guard(peers_->device());
  for (auto& [s, e] : done_) {
    WEAVE_CUDA_CHECK(cudaEventRecord(e, s));
    WEAVE_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), e, 0));
  }
}

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
  // the waits for the receives' data. Taken one receive at a time, a
  // receive's clear waited for the data of the receive before it, and a
  // send issued after a receive waited for that receive's data: where every
  // rank sends to several peers in one batch (WEAVE_GEMM's gathers over 4
  // GPUs) the transfers ran one after another around the group, 1.1 ms for
  // what 4 H200s' copy engines move at once in about 0.3 ms.
  std::vector<const plan::Step*> sends, receives, collectives;
  for (const plan::Step* step : batch) {
    switch (step->kind()) {
      case plan::StepKind::Send:
        if (moves_on_.count(step)) sends.push_back(step);
        break;
      case plan::StepKind::Recv:
        if (!moves_on_.count(step)) break;  // nothing to move
        if (!links_->incoming(step).cleared_at_start) waits.raise(stream, links_->incoming(step).clear_flag);
        receives.push_back(step);
        break;
      case plan::StepKind::Collective:
        collectives.push_back(step);
        break;
      default:
        fail(WEAVE_ERROR_INTERNAL, "the copy-engine transport cannot run step '", step->label, "' (",
             plan::step_kind_name(step->kind()), ")");
    }
  }
  if (!sends.empty() || (own_streams_ && !receives.empty())) WEAVE_CUDA_CHECK(cudaEventRecord(fork_, stream));
  std::vector<cudaStream_t> joined;
  for (const plan::Step* step : sends) {
    const OutgoingLink& out = links_->outgoing(step);
    const cudaStream_t copy = moves_on_.at(step);
    WEAVE_CUDA_CHECK(cudaStreamWaitEvent(copy, fork_, 0));
    if (!out.cleared_at_start) waits.wait(copy, {FlagWait{out.clear_flag, 1, true, out.step, out.peer}});
    const void* source = bindings.resolve(std::get<plan::SendOp>(step->op).src).data;
    WEAVE_CUDA_CHECK(cudaMemcpyAsync(out.destination, source, static_cast<std::size_t>(out.bytes),
                                     cudaMemcpyDeviceToDevice, copy));
    waits.raise(copy, out.data_flag);
    if (std::find(joined.begin(), joined.end(), copy) == joined.end()) joined.push_back(copy);
  }
  if (own_streams_) {
    // Each receive waits for its data on its sender's arrival stream.
    for (const plan::Step* step : receives) {
      const IncomingLink& in = links_->incoming(step);
      const cudaStream_t arrival = moves_on_.at(step);
      WEAVE_CUDA_CHECK(cudaStreamWaitEvent(arrival, fork_, 0));
      waits.wait(arrival, {FlagWait{in.data_flag, 1, true, in.step, in.peer}});
    }
  } else {
    // One wait for every receive's data, and the copies joined back: the
    // batch is done on the communication stream.
    std::vector<FlagWait> arrivals;
    for (const plan::Step* step : receives) {
      const IncomingLink& in = links_->incoming(step);
      arrivals.push_back(FlagWait{in.data_flag, 1, true, in.step, in.peer});
    }
    if (!arrivals.empty()) waits.wait(stream, arrivals);
    for (cudaStream_t copy : joined) {
      WEAVE_CUDA_CHECK(cudaEventRecord(done_.at(copy), copy));
      WEAVE_CUDA_CHECK(cudaStreamWaitEvent(stream, done_.at(copy), 0));
    }
  }
  peers_->enqueue_collectives(collectives, bindings, stream_pointer);
}

std::unique_ptr<Transport> make_copy_engine_transport(const TransportContext& context) {
  return std::make_unique<CopyEngineTransport>(context);
}

}  // namespace weave::internal::transport
