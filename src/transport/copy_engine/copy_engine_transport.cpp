#include "transport/copy_engine/copy_engine_transport.hpp"

#include <algorithm>
#include <cstring>

#include "backends/cuda/cuda_check.hpp"
#include "core/error.hpp"
#include "core/mpi_check.hpp"
#include "transport/copy_engine/copy_engine_entry.hpp"
#include "transport/nccl/nccl_entry.hpp"

namespace weave::internal::transport {

namespace {

constexpr int kBusIdLength = 64;

// What a rank publishes about one of its receive or send steps.
struct Entry {
  int64_t peer = 0, tag = 0, offset = 0, bytes = 0, flag = 0;
};

std::vector<Entry> allgather_entries(MPI_Comm comm, const std::vector<Entry>& mine, int size,
                                     std::vector<int>* displacements) {
  const int count = static_cast<int>(mine.size() * 5);
  std::vector<int> counts(static_cast<std::size_t>(size));
  WEAVE_MPI_CHECK(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm));
  displacements->assign(static_cast<std::size_t>(size) + 1, 0);
  for (int q = 0; q < size; ++q) (*displacements)[q + 1] = (*displacements)[q] + counts[q];
  std::vector<int64_t> flat_mine;
  for (const Entry& e : mine) flat_mine.insert(flat_mine.end(), {e.peer, e.tag, e.offset, e.bytes, e.flag});
  std::vector<int64_t> flat(static_cast<std::size_t>(displacements->back()));
  WEAVE_MPI_CHECK(MPI_Allgatherv(flat_mine.data(), count, MPI_INT64_T, flat.data(), counts.data(),
                                 displacements->data(), MPI_INT64_T, comm));
  std::vector<Entry> all;
  for (std::size_t i = 0; i + 5 <= flat.size(); i += 5)
    all.push_back(Entry{flat[i], flat[i + 1], flat[i + 2], flat[i + 3], flat[i + 4]});
  for (int& d : *displacements) d /= 5;
  return all;
}

}  // namespace

bool copy_engine_usable(const GroupView& group, std::string* why_not) {
  std::string reason;
  int ok = 1;
  if (ranks_on_my_node(group.comm) != group.size) {
    ok = 0;
    reason = str("the group's ", group.size, " ranks span more than one node");
  }
  // Each rank checks peer access to every other rank's GPU, found by PCI bus id.
  char mine[kBusIdLength] = {0};
  int device = -1;
  if (ok && (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetPCIBusId(mine, kBusIdLength, device) != cudaSuccess)) {
    cudaGetLastError();
    ok = 0;
    reason = "no usable CUDA device";
  }
  std::vector<char> all(static_cast<std::size_t>(kBusIdLength) * group.size);
  WEAVE_MPI_CHECK(MPI_Allgather(mine, kBusIdLength, MPI_CHAR, all.data(), kBusIdLength, MPI_CHAR, group.comm));
  for (int q = 0; ok && q < group.size; ++q) {
    if (q == group.rank) continue;
    int peer = -1, access = 0;
    if (cudaDeviceGetByPCIBusId(&peer, &all[static_cast<std::size_t>(q) * kBusIdLength]) != cudaSuccess) {
      cudaGetLastError();
      ok = 0;
      reason = str("group rank ", q, "'s GPU is not visible to group rank ", group.rank);
    } else if (peer != device && (cudaDeviceCanAccessPeer(&access, device, peer) != cudaSuccess || !access)) {
      cudaGetLastError();
      ok = 0;
      reason = str("GPU ", device, " of group rank ", group.rank, " has no peer access to GPU ", peer);
    }
  }
  int everyone = 0;
  WEAVE_MPI_CHECK(MPI_Allreduce(&ok, &everyone, 1, MPI_INT, MPI_MIN, group.comm));
  if (!everyone && why_not) *why_not = reason.empty() ? "another rank of the group has no peer access" : reason;
  return everyone == 1;
}

CopyEngineTransport::CopyEngineTransport(GridState& grid, const GroupView& group, const plan::Schedule& schedule,
                                         void* workspace, bool high_priority) {
  std::string why_not;
  if (!copy_engine_usable(group, &why_not))
    fail(WEAVE_ERROR_UNSUPPORTED, "the copy-engine transport needs every rank of the group on one node with peer "
         "access between their GPUs, but ", why_not, "; use the nccl transport");
  WEAVE_MPI_CHECK(MPI_Comm_dup(group.comm, &comm_));
  rank_ = group.rank;
  size_ = group.size;
  try {
    WEAVE_CUDA_CHECK(cudaGetDevice(&device_));
    // My flags: one data flag per receive, one clear-to-send flag per send.
    int receives = 0, sends = 0;
    for (const plan::Step& s : schedule.steps) {
      receives += s.kind() == plan::StepKind::Recv;
      sends += s.kind() == plan::StepKind::Send;
    }
    const std::size_t flag_bytes = sizeof(uint32_t) * static_cast<std::size_t>(std::max(1, receives + sends));
    WEAVE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&flags_), flag_bytes));
    WEAVE_CUDA_CHECK(cudaMemset(flags_, 0, flag_bytes));
    WEAVE_CUDA_CHECK(cudaDeviceSynchronize());  // zeroed before any peer can write

    // Map every peer's workspace and flags once.
    struct Handles {
      cudaIpcMemHandle_t workspace, flags;
      int has_workspace;
    } my_handles{};
    my_handles.has_workspace = workspace != nullptr;
    if (workspace) WEAVE_CUDA_CHECK(cudaIpcGetMemHandle(&my_handles.workspace, workspace));
    WEAVE_CUDA_CHECK(cudaIpcGetMemHandle(&my_handles.flags, flags_));
    std::vector<Handles> handles(static_cast<std::size_t>(size_));
    WEAVE_MPI_CHECK(MPI_Allgather(&my_handles, sizeof(Handles), MPI_BYTE, handles.data(), sizeof(Handles), MPI_BYTE,
                                  comm_));
    peer_workspace_.assign(static_cast<std::size_t>(size_), nullptr);
    peer_flags_.assign(static_cast<std::size_t>(size_), nullptr);
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) {
        peer_workspace_[q] = static_cast<char*>(workspace);
        peer_flags_[q] = flags_;
        continue;
      }
      void* mapped = nullptr;
      if (handles[q].has_workspace) {
        WEAVE_CUDA_CHECK(cudaIpcOpenMemHandle(&mapped, handles[q].workspace, cudaIpcMemLazyEnablePeerAccess));
        peer_workspace_[q] = static_cast<char*>(mapped);
      }
      WEAVE_CUDA_CHECK(cudaIpcOpenMemHandle(&mapped, handles[q].flags, cudaIpcMemLazyEnablePeerAccess));
      peer_flags_[q] = static_cast<uint32_t*>(mapped);
    }
    exchange_tables(schedule);

    int least = 0, greatest = 0;
    WEAVE_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    if (!high_priority) greatest = least;
    for (const auto& [step, out] : outgoing_) {
      (void)step;
      if (copy_streams_.count(out.peer)) continue;
      cudaStream_t s = nullptr;
      cudaEvent_t e = nullptr;
      WEAVE_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest));
      copy_streams_[out.peer] = s;
      WEAVE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      copy_done_[out.peer] = e;
    }
    WEAVE_CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));

    const bool has_collectives = std::any_of(schedule.steps.begin(), schedule.steps.end(), [](const plan::Step& s) {
      return s.kind() == plan::StepKind::Collective;
    });
    if (has_collectives) collectives_ = make_nccl_transport(grid, group);
  } catch (...) {
    release();
    throw;
  }
}

void CopyEngineTransport::exchange_tables(const plan::Schedule& schedule) {
  // Flag numbering: receives first, then sends, in schedule order.
  std::vector<Entry> my_receives, my_sends;
  std::vector<const plan::Step*> receive_steps, send_steps;
  for (const plan::Step& s : schedule.steps) {
    if (s.kind() == plan::StepKind::Recv) {
      const auto& op = std::get<plan::RecvOp>(s.op);
      if (op.dst.buffer < plan::kFirstWorkspaceBuffer)
        fail(WEAVE_ERROR_INTERNAL, "the copy-engine transport receives only into the workspace (step '", s.label, "')");
      const int64_t offset = schedule.offset_from_binding(op.dst);
      my_receives.push_back(Entry{op.peer, op.tag, offset, schedule.bytes(op.dst),
                                  static_cast<int64_t>(receive_steps.size())});
      receive_steps.push_back(&s);
    }
  }
  for (const plan::Step& s : schedule.steps)
    if (s.kind() == plan::StepKind::Send) {
      const auto& op = std::get<plan::SendOp>(s.op);
      my_sends.push_back(Entry{op.peer, op.tag, 0, schedule.bytes(op.src),
                               static_cast<int64_t>(receive_steps.size() + send_steps.size())});
      send_steps.push_back(&s);
    }
  std::vector<int> receive_displs, send_displs;
  const std::vector<Entry> all_receives = allgather_entries(comm_, my_receives, size_, &receive_displs);
  const std::vector<Entry> all_sends = allgather_entries(comm_, my_sends, size_, &send_displs);

  // The last entry of `peer`'s part of `all` that is aimed at me with `tag`.
  auto find_entry = [&](const std::vector<Entry>& all, const std::vector<int>& displs, int peer,
                        int64_t tag) -> const Entry* {
    const Entry* match = nullptr;
    for (int j = displs[peer]; j < displs[peer + 1]; ++j)
      if (all[j].peer == rank_ && all[j].tag == tag) match = &all[j];
    return match;
  };
  // For each of my sends, the matching receive on the peer.
  for (std::size_t i = 0; i < send_steps.size(); ++i) {
    const Entry& mine = my_sends[i];
    const int peer = static_cast<int>(mine.peer);
    const Entry* match = find_entry(all_receives, receive_displs, peer, mine.tag);
    if (!match || match->bytes != mine.bytes)
      fail(WEAVE_ERROR_INTERNAL, "group rank ", peer, " has no receive of ", mine.bytes, " bytes with tag ", mine.tag,
           " from group rank ", rank_);
    Outgoing out;
    out.peer = peer;
    out.bytes = mine.bytes;
    out.destination = peer_workspace_[peer] ? peer_workspace_[peer] + match->offset : nullptr;
    out.data_flag = peer_flags_[peer] + match->flag;
    out.clear_flag = flags_ + mine.flag;
    if (out.bytes > 0 && !out.destination) fail(WEAVE_ERROR_INTERNAL, "group rank ", peer, " has no workspace");
    outgoing_[send_steps[i]] = out;
  }
  // For each of my receives, the matching send's clear-to-send flag on the peer.
  for (std::size_t i = 0; i < receive_steps.size(); ++i) {
    const Entry& mine = my_receives[i];
    const int peer = static_cast<int>(mine.peer);
    const Entry* match = find_entry(all_sends, send_displs, peer, mine.tag);
    if (!match) fail(WEAVE_ERROR_INTERNAL, "group rank ", peer, " has no send with tag ", mine.tag, " to ", rank_);
    incoming_[receive_steps[i]] = Incoming{peer, flags_ + mine.flag, peer_flags_[peer] + match->flag};
  }
}

CopyEngineTransport::~CopyEngineTransport() { release(); }

void CopyEngineTransport::release() noexcept {
  collectives_.reset();
  if (device_ >= 0) {
    const cuda::DeviceGuard guard(device_, std::nothrow);
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
    for (int q = 0; q < static_cast<int>(peer_flags_.size()); ++q) {
      if (q == rank_) continue;
      if (peer_workspace_[q]) cudaIpcCloseMemHandle(peer_workspace_[q]);
      if (peer_flags_[q]) cudaIpcCloseMemHandle(peer_flags_[q]);
    }
    if (flags_) cudaFree(flags_);
    cudaGetLastError();
  }
  copy_streams_.clear();
  copy_done_.clear();
  peer_workspace_.clear();
  peer_flags_.clear();
  fork_ = nullptr;
  flags_ = nullptr;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::string CopyEngineTransport::name() const {
  return str("copy_engine (CUDA peer copies on ", size_, " GPUs of one node, stream-memory-op signals",
             collectives_ ? "; collectives over nccl" : "", ")");
}

void CopyEngineTransport::enqueue(const std::vector<const plan::Step*>& batch, const exec::Bindings& bindings,
                                  void* stream_pointer) {
  cuda::DeviceGuard guard(device_);
  const cudaStream_t stream = static_cast<cudaStream_t>(stream_pointer);
  std::vector<const plan::Step*> collectives;
  bool forked = false;
  std::vector<int> joined;
  for (const plan::Step* step : batch) {
    switch (step->kind()) {
      case plan::StepKind::Send: {
        const Outgoing& out = outgoing_.at(step);
        if (out.bytes == 0) break;  // the receiver skips it too
        if (!forked) {
          WEAVE_CUDA_CHECK(cudaEventRecord(fork_, stream));
          forked = true;
        }
        const cudaStream_t copy = copy_streams_.at(out.peer);
        WEAVE_CUDA_CHECK(cudaStreamWaitEvent(copy, fork_, 0));
        signals_.wait_equal(copy, out.clear_flag, 1);
        signals_.write(copy, out.clear_flag, 0);
        const void* source = bindings.resolve(std::get<plan::SendOp>(step->op).src).data;
        WEAVE_CUDA_CHECK(cudaMemcpyAsync(out.destination, source, static_cast<std::size_t>(out.bytes),
                                         cudaMemcpyDeviceToDevice, copy));
        signals_.write(copy, out.data_flag, 1);
        WEAVE_CUDA_CHECK(cudaEventRecord(copy_done_.at(out.peer), copy));
        joined.push_back(out.peer);
        break;
      }
      case plan::StepKind::Recv: {
        const Incoming& in = incoming_.at(step);
        if (bindings.schedule->bytes(std::get<plan::RecvOp>(step->op).dst) == 0) break;
        // My slot is free (the executor ordered this after the receive's
        // dependencies): tell the sender, then wait for its data.
        signals_.write(stream, in.clear_flag, 1);
        signals_.wait_equal(stream, in.data_flag, 1);
        signals_.write(stream, in.data_flag, 0);
        break;
      }
      case plan::StepKind::Collective:
        collectives.push_back(step);
        break;
      default:
        fail(WEAVE_ERROR_INTERNAL, "the copy-engine transport was handed a compute step (", step->label, ")");
    }
  }
  // The batch is done on the communication stream when its copies are.
  for (int peer : joined) WEAVE_CUDA_CHECK(cudaStreamWaitEvent(stream, copy_done_.at(peer), 0));
  if (!collectives.empty()) {
    if (!collectives_) fail(WEAVE_ERROR_INTERNAL, "a collective step without a collective transport");
    collectives_->enqueue(collectives, bindings, stream_pointer);
  }
}

std::unique_ptr<Transport> make_copy_engine_transport(GridState& grid, const GroupView& group,
                                                      const plan::Schedule& schedule, void* workspace,
                                                      bool high_priority) {
  return std::make_unique<CopyEngineTransport>(grid, group, schedule, workspace, high_priority);
}

}  // namespace weave::internal::transport
