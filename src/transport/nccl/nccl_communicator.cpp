#include "transport/nccl/nccl_communicator.hpp"

#include "backends/cuda/cuda_check.hpp"
#include "core/error.hpp"
#include "core/mpi_check.hpp"
#include "transport/nccl/nccl_check.hpp"

namespace weave::internal::transport {

NcclCommunicator::NcclCommunicator(MPI_Comm group_comm) {
  WEAVE_MPI_CHECK(MPI_Comm_size(group_comm, &size_));
  WEAVE_MPI_CHECK(MPI_Comm_rank(group_comm, &rank_));
  // The id is made on group rank 0 only; agree first, so a failure there is
  // reported on every rank instead of leaving the others in the broadcast.
  ncclUniqueId id{};
  agree_on_errors(group_comm, [&] {
    WEAVE_CUDA_CHECK(cudaGetDevice(&device_));
    if (rank_ == 0) WEAVE_NCCL_CHECK(ncclGetUniqueId(&id), nullptr);
  });
  WEAVE_MPI_CHECK(MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, group_comm));
  try {
    agree_on_errors(group_comm, [&] {
      WEAVE_NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_), nullptr);
    });
  } catch (...) {
    // Another rank failed: the communicator this rank joined is unusable.
    if (comm_) ncclCommDestroy(comm_);
    comm_ = nullptr;
    throw;
  }
}

NcclCommunicator::~NcclCommunicator() {
  if (!comm_) return;
  // A destructor reports nothing; destroying a communicator is local.
  const cuda::DeviceGuard guard(device_, std::nothrow);
  ncclCommDestroy(comm_);
}

std::shared_ptr<NcclCommunicator> nccl_communicator(GridState& grid, const GroupView& group) {
  int device = -1;
  WEAVE_CUDA_CHECK(cudaGetDevice(&device));
  // One communicator per group kind (this rank is in one group of each kind)
  // and device (NCCL binds a communicator to the device it was made on).
  const std::string key = str("nccl:", group_name(group.kind), ":device ", device);
  std::shared_ptr<void> made = grid.cached(key, [&] { return std::make_shared<NcclCommunicator>(group.comm); });
  return std::static_pointer_cast<NcclCommunicator>(made);
}

}  // namespace weave::internal::transport
