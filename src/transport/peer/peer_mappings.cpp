#include "transport/peer/peer_mappings.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "backends/cuda/cuda_check.hpp"
#include "core/error.hpp"
#include "core/mpi_check.hpp"

namespace weave::internal::transport {

PeerMappings::PeerMappings(MPI_Comm comm, void* workspace, int flag_count) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size_);
  try {
    const std::size_t flag_bytes = sizeof(uint32_t) * static_cast<std::size_t>(kAlarmWords + std::max(0, flag_count));
    WEAVE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&own_block_), flag_bytes));
    WEAVE_CUDA_CHECK(cudaMemset(own_block_, 0, flag_bytes));
    WEAVE_CUDA_CHECK(cudaDeviceSynchronize());  // zeroed before any peer can write

    struct Handles {
      cudaIpcMemHandle_t workspace, flags;
      int has_workspace;
    } mine{};
    mine.has_workspace = workspace != nullptr;
    if (workspace) WEAVE_CUDA_CHECK(cudaIpcGetMemHandle(&mine.workspace, workspace));
    WEAVE_CUDA_CHECK(cudaIpcGetMemHandle(&mine.flags, own_block_));
    std::vector<Handles> handles(static_cast<std::size_t>(size_));
    WEAVE_MPI_CHECK(
        MPI_Allgather(&mine, sizeof(Handles), MPI_BYTE, handles.data(), sizeof(Handles), MPI_BYTE, comm));
    workspaces_.assign(static_cast<std::size_t>(size_), nullptr);
    blocks_.assign(static_cast<std::size_t>(size_), nullptr);
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) {
        workspaces_[q] = static_cast<char*>(workspace);
        blocks_[q] = own_block_;
        continue;
      }
      void* mapped = nullptr;
      if (handles[q].has_workspace) {
        WEAVE_CUDA_CHECK(cudaIpcOpenMemHandle(&mapped, handles[q].workspace, cudaIpcMemLazyEnablePeerAccess));
        workspaces_[q] = static_cast<char*>(mapped);
      }
      WEAVE_CUDA_CHECK(cudaIpcOpenMemHandle(&mapped, handles[q].flags, cudaIpcMemLazyEnablePeerAccess));
      blocks_[q] = static_cast<uint32_t*>(mapped);
    }
  } catch (...) {
    release();
    throw;
  }
}

PeerMappings::~PeerMappings() { release(); }

void PeerMappings::release() noexcept {
  for (int q = 0; q < static_cast<int>(blocks_.size()); ++q) {
    if (q == rank_) continue;
    if (workspaces_[q]) cudaIpcCloseMemHandle(workspaces_[q]);
    if (blocks_[q]) cudaIpcCloseMemHandle(blocks_[q]);
  }
  if (own_block_) cudaFree(own_block_);
  cudaGetLastError();
  own_block_ = nullptr;
  workspaces_.clear();
  blocks_.clear();
}

PeerDirectory::PeerDirectory(MPI_Comm comm, const std::vector<PeerEntry>& mine) {
  constexpr int kFields = 6;
  int size = 1;
  MPI_Comm_size(comm, &size);
  const int count = static_cast<int>(mine.size()) * kFields;
  std::vector<int> counts(static_cast<std::size_t>(size)), displacements(static_cast<std::size_t>(size) + 1, 0);
  WEAVE_MPI_CHECK(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm));
  for (int q = 0; q < size; ++q) displacements[q + 1] = displacements[q] + counts[q];
  std::vector<int64_t> flat_mine;
  for (const PeerEntry& e : mine)
    flat_mine.insert(flat_mine.end(), {e.peer, e.tag, e.offset, e.bytes, e.flag, e.cleared_at_start});
  std::vector<int64_t> flat(static_cast<std::size_t>(displacements.back()));
  WEAVE_MPI_CHECK(MPI_Allgatherv(flat_mine.data(), count, MPI_INT64_T, flat.data(), counts.data(),
                                 displacements.data(), MPI_INT64_T, comm));
  for (std::size_t i = 0; i + kFields <= flat.size(); i += kFields)
    all_.push_back(PeerEntry{flat[i], flat[i + 1], flat[i + 2], flat[i + 3], flat[i + 4], flat[i + 5]});
  first_.resize(displacements.size());
  for (std::size_t q = 0; q < displacements.size(); ++q) first_[q] = displacements[q] / kFields;
}

const PeerEntry* PeerDirectory::find(int from, int to, int64_t tag) const {
  const PeerEntry* match = nullptr;
  for (int j = first_.at(static_cast<std::size_t>(from)); j < first_.at(static_cast<std::size_t>(from) + 1); ++j)
    if (all_[j].peer == to && all_[j].tag == tag) match = &all_[j];
  return match;
}

const PeerEntry& PeerDirectory::match(int from, int to, const PeerEntry& mine, const char* what) const {
  const PeerEntry* found = find(from, to, mine.tag);
  if (!found || found->bytes != mine.bytes)
    fail(WEAVE_ERROR_INTERNAL, "group rank ", from, " has no ", what, " of ", mine.bytes, " bytes with tag ", mine.tag,
         " for group rank ", to);
  return *found;
}

}  // namespace weave::internal::transport
