#include <cuda_runtime_api.h>

#include <vector>

#include "core/error.hpp"
#include "core/mpi_check.hpp"
#include "core/nodes.hpp"
#include "transport/peer/peer_entry.hpp"

namespace weave::internal::transport {

namespace {
constexpr int kBusIdLength = 64;
}  // namespace

bool peer_access_usable(const GroupView& group, std::string* why_not) {
  std::string reason;
  int ok = 1;
  const NodeLayout nodes = node_layout(group.comm);
  if (nodes.nodes > 1) {
    ok = 0;
    reason = str("the group's ", group.size, " ranks span ", nodes.summary(), nodes.emulated ? " (WEAVE_NODE)" : "");
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

}  // namespace weave::internal::transport
