// One MPI communicator that Weave created, with one owner: the last
// std::shared_ptr to it frees it. Grids, plans and transports share theirs
// with the work a timed-out wait left pending on them (abandoned_work.hpp),
// so a communicator is never freed while a request still uses it.
#pragma once

#include <mpi.h>

#include <memory>

namespace weave::internal {

class Communicator {
 public:
  Communicator() = default;
  ~Communicator();  // MPI_Comm_free, unless MPI is finalized or it is null
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  MPI_Comm get() const { return comm_; }
  // Where MPI_Comm_dup, _idup or _split write the new communicator.
  MPI_Comm* out() { return &comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

using SharedComm = std::shared_ptr<Communicator>;

// Whether MPI calls are allowed now (initialized and not yet finalized).
bool mpi_is_running();

}  // namespace weave::internal
