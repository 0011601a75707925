#include "transport/nccl/nccl_transport.hpp"

#include <algorithm>
#include <functional>
#include <utility>

#include "backends/cuda/cuda_check.hpp"
#include "core/error.hpp"
#include "transport/nccl/nccl_check.hpp"
#include "transport/nccl/nccl_entry.hpp"

namespace weave::internal::transport {

namespace {

// The type NCCL reduces: a complex element is two of its component type,
// summed component by component (reduced_count counts them).
ncclDataType_t nccl_type(DType t) {
  switch (component_type(t)) {
    case DType::F64: return ncclFloat64;
    case DType::F32: return ncclFloat32;
    case DType::F16: return ncclFloat16;
    case DType::BF16: return ncclBfloat16;
    default: break;  // FP8 values are gathered as bytes, never summed
  }
  fail(WEAVE_ERROR_INTERNAL, "NCCL does not sum ", dtype_name(t));
}

std::size_t reduced_count(int64_t elements, DType t) {
  return static_cast<std::size_t>(elements) * static_cast<std::size_t>(components(t));
}

// Element offsets of each rank's part in a collective's larger region.
std::vector<int64_t> displacements(const std::vector<int64_t>& counts) {
  std::vector<int64_t> displs(counts.size(), 0);
  for (std::size_t q = 1; q < counts.size(); ++q) displs[q] = displs[q - 1] + counts[q - 1];
  return displs;
}

bool all_equal(const std::vector<int64_t>& counts) {
  return std::adjacent_find(counts.begin(), counts.end(), std::not_equal_to<>()) == counts.end();
}

char* bytes_at(void* base, int64_t elements, DType t) {
  return static_cast<char*>(base) + elements * static_cast<int64_t>(dtype_size(t));
}

}  // namespace

NcclTransport::NcclTransport(std::shared_ptr<NcclCommunicator> communicator, std::chrono::milliseconds timeout)
    : communicator_(std::move(communicator)), timeout_(timeout) {}

std::string NcclTransport::name() const {
  int version = 0;
  ncclGetVersion(&version);
  return str("nccl (NCCL ", version / 10000, ".", version / 100 % 100, ".", version % 100, ")");
}

std::string NcclTransport::device_wait_failure() const {
  const std::string failure = communicator_->failure();
  return failure.empty() ? failure : str("the NCCL communicator was aborted: ", failure);
}

void NcclTransport::enqueue(const std::vector<const plan::Step*>& batch, const exec::Bindings& bindings,
                            void* stream_pointer) {
  if (batch.empty()) return;
  cuda::DeviceGuard guard(communicator_->device());
  const cudaStream_t stream = static_cast<cudaStream_t>(stream_pointer);
  for (const plan::Step* step : batch) enqueue_local_copies(*step, bindings, stream);
  const std::string& what = batch_name(batch, *bindings.schedule);
  communicator_->enqueue_group(
      [&](ncclComm_t comm) {
        for (const plan::Step* step : batch) enqueue_step(*step, bindings, stream, comm);
      },
      stream, timeout_, what);
}

const std::string& NcclTransport::batch_name(const std::vector<const plan::Step*>& batch,
                                             const plan::Schedule& schedule) {
  std::string& name = batch_names_[batch.front()];
  if (!name.empty()) return name;
  std::string peers;
  for (const plan::Step* step : batch) {
    int peer = -1;
    if (step->kind() == plan::StepKind::Send) peer = std::get<plan::SendOp>(step->op).peer;
    if (step->kind() == plan::StepKind::Recv) peer = std::get<plan::RecvOp>(step->op).peer;
    const std::string one = peer >= 0 ? str("group rank ", peer) : std::string("every rank of the group");
    if (peers.find(one) == std::string::npos) peers += (peers.empty() ? "" : ", ") + one;
  }
  const plan::Step& first = *batch.front();
  name = str("group rank ", schedule.group_rank, " of ", schedule.group_size, ": the NCCL calls of step ",
             &first - schedule.steps.data(), " (", first.label, ") with ", peers);
  return name;
}

void NcclTransport::enqueue_local_copies(const plan::Step& step, const exec::Bindings& bindings,
                                         cudaStream_t stream) const {
  if (step.kind() != plan::StepKind::Collective) return;
  const auto& op = std::get<plan::CollectiveOp>(step.op);
  if (op.kind != plan::CollectiveKind::AllGather || all_equal(op.counts)) return;
  // The grouped send/receive all-gather moves only the other ranks' parts.
  const DType t = bindings.schedule->buffer(op.recv).dtype;
  const int me = communicator_->rank();
  const int64_t count = op.counts.at(static_cast<std::size_t>(me));
  if (count == 0) return;
  const exec::MatrixRef send = bindings.resolve(op.send), recv = bindings.resolve(op.recv);
  char* mine = bytes_at(recv.data, displacements(op.counts)[static_cast<std::size_t>(me)], t);
  if (send.data != mine)
    WEAVE_CUDA_CHECK(cudaMemcpyAsync(mine, send.data, static_cast<std::size_t>(count) * dtype_size(t),
                                     cudaMemcpyDeviceToDevice, stream));
}

void NcclTransport::enqueue_step(const plan::Step& step, const exec::Bindings& bindings, cudaStream_t stream,
                                 ncclComm_t comm) const {
  const plan::Schedule& schedule = *bindings.schedule;
  switch (step.kind()) {
    case plan::StepKind::Send: {
      const auto& op = std::get<plan::SendOp>(step.op);
      const int64_t bytes = schedule.bytes(op.src);
      // Both ends see the same region shape, so both skip an empty chunk.
      if (bytes == 0) return;
      WEAVE_NCCL_CHECK(ncclSend(bindings.resolve(op.src).data, static_cast<std::size_t>(bytes), ncclUint8, op.peer,
                                comm, stream),
                       comm);
      return;
    }
    case plan::StepKind::Recv: {
      const auto& op = std::get<plan::RecvOp>(step.op);
      const int64_t bytes = schedule.bytes(op.dst);
      if (bytes == 0) return;
      WEAVE_NCCL_CHECK(ncclRecv(bindings.resolve(op.dst).data, static_cast<std::size_t>(bytes), ncclUint8, op.peer,
                                comm, stream),
                       comm);
      return;
    }
    case plan::StepKind::Collective: {
      const auto& op = std::get<plan::CollectiveOp>(step.op);
      if (static_cast<int>(op.counts.size()) != communicator_->size() && op.kind != plan::CollectiveKind::AllReduce)
        fail(WEAVE_ERROR_INTERNAL, "a collective step has ", op.counts.size(), " counts for a group of ",
             communicator_->size());
      switch (op.kind) {
        case plan::CollectiveKind::AllGather: all_gather(op, bindings, stream, comm); return;
        case plan::CollectiveKind::ReduceScatter: reduce_scatter(op, bindings, stream, comm); return;
        case plan::CollectiveKind::AllReduce: {
          const int64_t count = op.counts.at(0);
          if (count == 0) return;
          void* data = bindings.resolve(op.recv).data;
          const DType t = schedule.buffer(op.recv).dtype;
          WEAVE_NCCL_CHECK(ncclAllReduce(data, data, reduced_count(count, t), nccl_type(t), ncclSum, comm, stream),
                           comm);
          return;
        }
      }
      return;
    }
    default:
      fail(WEAVE_ERROR_INTERNAL, "the NCCL transport was handed a compute step (", step.label, ")");
  }
}

// Equal counts: ncclAllGather. Uneven counts: every rank sends its part to
// every other rank and receives theirs, in one group (NCCL has no
// all-gather-v); the own part was put in place before the group.
void NcclTransport::all_gather(const plan::CollectiveOp& op, const exec::Bindings& bindings, cudaStream_t stream,
                               ncclComm_t comm) const {
  const DType t = bindings.schedule->buffer(op.recv).dtype;
  const exec::MatrixRef send = bindings.resolve(op.send), recv = bindings.resolve(op.recv);
  const int me = communicator_->rank(), size = communicator_->size();
  if (all_equal(op.counts)) {
    const int64_t count = op.counts.at(0);
    if (count == 0) return;
    WEAVE_NCCL_CHECK(ncclAllGather(send.data, recv.data, static_cast<std::size_t>(count) * dtype_size(t), ncclUint8,
                                   comm, stream),
                     comm);
    return;
  }
  const std::vector<int64_t> displs = displacements(op.counts);
  const int64_t mine = op.counts[static_cast<std::size_t>(me)];
  for (int q = 0; q < size; ++q) {
    if (q == me) continue;
    if (mine > 0) {
      WEAVE_NCCL_CHECK(ncclSend(send.data, static_cast<std::size_t>(mine) * dtype_size(t), ncclUint8, q, comm, stream),
                       comm);
    }
    const int64_t theirs = op.counts[static_cast<std::size_t>(q)];
    if (theirs > 0) {
      WEAVE_NCCL_CHECK(ncclRecv(bytes_at(recv.data, displs[static_cast<std::size_t>(q)], t),
                                static_cast<std::size_t>(theirs) * dtype_size(t), ncclUint8, q, comm, stream),
                       comm);
    }
  }
}

// Equal counts: ncclReduceScatter. Uneven counts: one ncclReduce per rank's
// block, rooted at its owner, all in one group. This moves the same bytes as
// a reduce-scatter and needs no workspace, where padding every block to the
// largest count would need a padded copy of the partial sums (workspace the
// schedule does not have) and would move the padding too.
void NcclTransport::reduce_scatter(const plan::CollectiveOp& op, const exec::Bindings& bindings,
                                   cudaStream_t stream, ncclComm_t comm) const {
  const DType t = bindings.schedule->buffer(op.recv).dtype;
  const exec::MatrixRef send = bindings.resolve(op.send), recv = bindings.resolve(op.recv);
  const int me = communicator_->rank(), size = communicator_->size();
  if (all_equal(op.counts)) {
    const int64_t count = op.counts.at(0);
    if (count == 0) return;
    WEAVE_NCCL_CHECK(ncclReduceScatter(send.data, recv.data, reduced_count(count, t), nccl_type(t), ncclSum, comm,
                                       stream),
                     comm);
    return;
  }
  const std::vector<int64_t> displs = displacements(op.counts);
  for (int q = 0; q < size; ++q) {
    const int64_t count = op.counts[static_cast<std::size_t>(q)];
    if (count == 0) continue;
    char* block = bytes_at(send.data, displs[static_cast<std::size_t>(q)], t);
    // Only the root's receive buffer is written; the others pass their block.
    void* destination = q == me ? recv.data : block;
    WEAVE_NCCL_CHECK(ncclReduce(block, destination, reduced_count(count, t), nccl_type(t), ncclSum, q, comm, stream),
                     comm);
  }
}

std::unique_ptr<Transport> make_nccl_transport(GridState& grid, const GroupView& group,
                                               std::chrono::milliseconds timeout) {
  return std::make_unique<NcclTransport>(nccl_communicator(grid, group), timeout);
}

}  // namespace weave::internal::transport
