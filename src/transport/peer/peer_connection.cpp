#include "transport/peer/peer_connection.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "backends/cuda/cuda_check.hpp"
#include "core/error.hpp"
#include "core/mpi_check.hpp"
#include "transport/nccl/nccl_entry.hpp"
#include "transport/peer/peer_entry.hpp"

namespace weave::internal::transport {

PeerConnection::PeerConnection(const TransportContext& context, const char* title, int flag_count) {
  const GroupView& group = context.group;
  std::string why_not;
  if (!peer_access_usable(group, &why_not))
    fail(WEAVE_ERROR_UNSUPPORTED, "the ", title, " transport needs every rank of the group on one node with peer "
         "access between their GPUs, but ", why_not, "; use the nccl transport");
  WEAVE_MPI_CHECK(MPI_Comm_dup(group.comm, &comm_));
  rank_ = group.rank;
  size_ = group.size;
  try {
    WEAVE_CUDA_CHECK(cudaGetDevice(&device_));
    waits_ = std::make_unique<DeviceWaits>(context.resolved.timeout,
                                           context.resolved.device_wait == plan::DeviceWait::Bounded);
    mappings_ = std::make_unique<PeerMappings>(comm_, context.workspace, flag_count);
    std::vector<uint32_t*> peer_alarms;
    for (int q = 0; q < size_; ++q)
      if (q != rank_) peer_alarms.push_back(mappings_->alarm(q));
    waits_->connect_alarms(rank_, mappings_->alarm(rank_), peer_alarms);
    const bool has_collectives =
        std::any_of(context.schedule.steps.begin(), context.schedule.steps.end(),
                    [](const plan::Step& s) { return s.kind() == plan::StepKind::Collective; });
    if (has_collectives) collectives_ = make_nccl_transport(context.grid, group, context.resolved.timeout);
  } catch (...) {
    release();
    throw;
  }
}

PeerConnection::~PeerConnection() { release(); }

void PeerConnection::release() noexcept {
  collectives_.reset();
  if (device_ >= 0) {
    const cuda::DeviceGuard guard(device_, std::nothrow);
    mappings_.reset();
    waits_.reset();
    cudaGetLastError();
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::string PeerConnection::wait_failure(const plan::Schedule& schedule) const {
  const std::string waits = waits_->failure_message(schedule);
  if (!waits.empty() || !collectives_) return waits;
  return collectives_->device_wait_failure();
}

void PeerConnection::enqueue_collectives(const std::vector<const plan::Step*>& collectives,
                                         const exec::Bindings& bindings, void* stream) const {
  if (collectives.empty()) return;
  if (!collectives_) fail(WEAVE_ERROR_INTERNAL, "a collective step without a collective transport");
  collectives_->enqueue(collectives, bindings, stream);
}

}  // namespace weave::internal::transport
