#include "transport/sm/sm_transport.hpp"

#include <algorithm>

#include "backends/cuda/cuda_check.hpp"
#include "core/error.hpp"
#include "transport/sm/sm_entry.hpp"
#include "transport/sm/sm_kernels.hpp"

namespace weave::internal::transport {

SmTransport::SmTransport(const TransportContext& context)
    : schedule_(context.schedule), ctas_(context.resolved.sm_transport_ctas) {
  const int point_to_point_flags = PointToPointLinks::flags_needed(schedule_);
  peers_ = std::make_unique<PeerConnection>(context, "SM",
                                            point_to_point_flags + sm::PeerSumLinks::flags_needed(schedule_));
  try {
    // The kernels spin while they wait for their peers, whose flags follow
    // GEMMs: at least one SM always stays free of them, so a GEMM can never
    // wait for SMs that wait for that GEMM.
    WEAVE_CUDA_CHECK(cudaDeviceGetAttribute(&device_sms_, cudaDevAttrMultiProcessorCount, peers_->device()));
    ctas_ = std::max(1, std::min(ctas_, device_sms_ - 1));
    point_to_point_ = std::make_unique<PointToPointLinks>(peers_->comm(), schedule_, peers_->mappings(), 0);
    peer_sums_ =
        std::make_unique<sm::PeerSumLinks>(peers_->comm(), schedule_, peers_->mappings(), point_to_point_flags);
    WEAVE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&counter_), sizeof(unsigned)));
    WEAVE_CUDA_CHECK(cudaMemset(counter_, 0, sizeof(unsigned)));
    // Every kernel this schedule launches is loaded now.
    sm::prepare_push();
    for (const plan::Step& s : schedule_.steps)
      if (const auto* sum = std::get_if<plan::PeerSumOp>(&s.op)) {
        const DType dst = schedule_.buffer(sum->dst).dtype;
        if (!sm::peer_sum_supported(dst, sum->term_type))
          fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "step '", s.label, "' sums ", dtype_name(sum->term_type), " into ",
               dtype_name(dst), ", which the SM transport has no kernel for");
        sm::prepare_peer_sum(dst, sum->term_type);
      }
    WEAVE_CUDA_CHECK(cudaDeviceSynchronize());
  } catch (...) {
    release();
    throw;
  }
}

SmTransport::~SmTransport() { release(); }

void SmTransport::release() noexcept {
  if (peers_) {
    const cuda::DeviceGuard guard(peers_->device(), std::nothrow);
    if (counter_) cudaFree(counter_);
    cudaGetLastError();
  }
  counter_ = nullptr;
  peer_sums_.reset();
  point_to_point_.reset();
  peers_.reset();
}

std::string SmTransport::name() const {
  return str("sm (SM-driven peer transfers on ", peers_->size(), " GPUs of one node, ", ctas_, " CTAs of ",
             sm::kThreadsPerCta, " threads on ", device_sms_, " SMs, ",
             peers_->waits().bounded() ? "bounded device waits"
                                       : "stream-memory-op waits between kernels, unbounded",
             peers_->has_collectives() ? "; collectives over nccl" : "", ")");
}

std::string SmTransport::device_wait_failure() const { return peers_->wait_failure(schedule_); }

void SmTransport::enqueue(const std::vector<const plan::Step*>& batch, const exec::Bindings& bindings,
                          void* stream_pointer) {
  cuda::DeviceGuard guard(peers_->device());
  const DeviceWaits& waits = peers_->waits();
  const cudaStream_t stream = static_cast<cudaStream_t>(stream_pointer);
  // A batch's steps in an order in which no wait can stand before a flag
  // that a peer waits for: every flag this rank raises without waiting
  // (clear to send, ready) first, then the sends, which wait for their
  // receivers' clear to send, then the waits for data, the sums and the
  // releases.
  std::vector<const plan::Step*> sends, receives, sums, collectives;
  std::vector<FlagWait> released;
  for (const plan::Step* step : batch) {
    switch (step->kind()) {
      case plan::StepKind::Send:
        if (point_to_point_->outgoing(step).bytes > 0) sends.push_back(step);  // the receiver skips it too
        break;
      case plan::StepKind::Recv:
        if (bindings.schedule->bytes(std::get<plan::RecvOp>(step->op).dst) == 0) break;
        receives.push_back(step);
        waits.raise(stream, point_to_point_->incoming(step).clear_flag);
        break;
      case plan::StepKind::Publish: {
        const sm::PublicationLink& link = peer_sums_->publication(step);
        waits.raise(stream, link.ready_flag);
        break;
      }
      case plan::StepKind::PeerSum:
        sums.push_back(step);
        break;
      case plan::StepKind::AwaitRelease: {
        const auto& op = std::get<plan::AwaitReleaseOp>(step->op);
        released.push_back(FlagWait{peer_sums_->released_flag(op.peer, op.tag), 1, true,
                                    static_cast<int>(step - schedule_.steps.data()), op.peer});
        break;
      }
      case plan::StepKind::Collective:
        collectives.push_back(step);
        break;
      default:
        fail(WEAVE_ERROR_INTERNAL, "the SM transport cannot run step '", step->label, "' (",
             plan::step_kind_name(step->kind()), ")");
    }
  }
  enqueue_sends(sends, bindings, stream);
  std::vector<FlagWait> data;
  for (const plan::Step* step : receives) {
    const IncomingLink& in = point_to_point_->incoming(step);
    data.push_back(FlagWait{in.data_flag, 1, true, in.step, in.peer});
  }
  if (!data.empty()) waits.wait(stream, data);
  for (const plan::Step* step : sums) enqueue_peer_sum(*step, bindings, stream);
  if (!released.empty()) waits.wait(stream, released);
  peers_->enqueue_collectives(collectives, bindings, stream_pointer);
}

void SmTransport::enqueue_sends(const std::vector<const plan::Step*>& sends, const exec::Bindings& bindings,
                                cudaStream_t stream) const {
  for (std::size_t first = 0; first < sends.size(); first += sm::kMaxPushes) {
    sm::PushWork work;
    for (std::size_t i = first; i < sends.size() && work.count < sm::kMaxPushes; ++i, ++work.count) {
      const OutgoingLink& out = point_to_point_->outgoing(sends[i]);
      work.src[work.count] = bindings.resolve(std::get<plan::SendOp>(sends[i]->op).src).data;
      work.dst[work.count] = out.destination;
      work.bytes[work.count] = out.bytes;
      work.clear_flag[work.count] = out.clear_flag;
      work.data_flag[work.count] = out.data_flag;
      work.step[work.count] = out.step;
      work.peer[work.count] = out.peer;
    }
    sm::launch_push(work, ctas_, counter_, peers_->waits().state(), stream);
  }
}

void SmTransport::enqueue_peer_sum(const plan::Step& step, const exec::Bindings& bindings,
                                   cudaStream_t stream) const {
  const auto& op = std::get<plan::PeerSumOp>(step.op);
  const exec::MatrixRef dst = bindings.resolve(op.dst);
  const std::vector<sm::TermLink>& links = peer_sums_->terms(&step);
  // An empty result still takes part in the handshake: its peers published
  // their (empty) products and wait for the release, and their ready flags
  // must be reset for the next execute. Only a sum without flags is skipped.
  const auto has_flags = [](const sm::TermLink& link) {
    return link.ready_flag != nullptr || link.released_flag != nullptr;
  };
  if ((dst.rows == 0 || dst.cols == 0) && std::none_of(links.begin(), links.end(), has_flags)) return;
  sm::PeerSumLaunch launch;
  launch.dst_type = dst.dtype;
  launch.term_type = op.term_type;
  launch.dst = dst.data;
  launch.dst_ld = dst.ld;
  launch.dst_row_major = dst.order == Order::RowMajor;
  if (op.has_copy) launch.copy = bindings.resolve(op.copy).data;
  launch.term_count = static_cast<int>(op.terms.size());
  for (std::size_t t = 0; t < op.terms.size(); ++t) {
    const plan::SumTerm& term = op.terms[t];
    launch.terms[t] = term.remote ? links[t].data : bindings.resolve(term.local).data;
    launch.ready_flag[t] = links[t].ready_flag;
    launch.release_flag[t] = links[t].released_flag;
    launch.term_peer[t] = term.remote ? term.peer : peers_->rank();
  }
  launch.step = static_cast<int>(&step - schedule_.steps.data());
  if (op.has_bias) {
    const exec::MatrixRef bias = bindings.resolve(op.bias);
    launch.bias = bias.data;
    launch.bias_stride = bias.column_stride();
  }
  launch.src_scale = bindings.scalars.value(op.src_scale);
  launch.dst_scale = bindings.scalars.value(op.dst_scale);
  launch.rows = dst.rows;
  launch.cols = dst.cols;
  sm::launch_peer_sum(launch, ctas_, counter_, peers_->waits().state(), stream);
}

std::unique_ptr<Transport> make_sm_transport(const TransportContext& context) {
  return std::make_unique<SmTransport>(context);
}

}  // namespace weave::internal::transport
