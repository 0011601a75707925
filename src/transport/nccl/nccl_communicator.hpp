// The NCCL communicator of one group of a grid. Creating one is expensive
// (NCCL sets up rings and connections), so it is made once per grid, group
// kind and device and shared, through GridState::cached, by every plan over
// that group; each transport holds a shared_ptr, so the communicator lives
// as long as any plan that uses it.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <memory>

#include "core/grid.hpp"

namespace weave::internal::transport {

class NcclCommunicator {
 public:
  // Collective over group_comm: group rank 0 makes the unique id and
  // broadcasts it over MPI; every rank joins on the current CUDA device.
  explicit NcclCommunicator(MPI_Comm group_comm);
  ~NcclCommunicator();  // ncclCommDestroy
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  ncclComm_t get() const { return comm_; }
  int device() const { return device_; }
  int size() const { return size_; }
  int rank() const { return rank_; }

 private:
  ncclComm_t comm_ = nullptr;
  int device_ = -1;
  int size_ = 1, rank_ = 0;
};

// The communicator of `group` on the current device: the cached one, or a
// new one (collective over the group).
std::shared_ptr<NcclCommunicator> nccl_communicator(GridState& grid, const GroupView& group);

}  // namespace weave::internal::transport
