#include "core/communicator.hpp"

namespace weave::internal {

bool mpi_is_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

Communicator::~Communicator() {
  if (comm_ != MPI_COMM_NULL && mpi_is_running()) MPI_Comm_free(&comm_);
}

}  // namespace weave::internal
