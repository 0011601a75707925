// Chunks over MPI non-blocking point-to-point calls and, for the sequential
// algorithms, non-blocking collectives. Host-progressed: the executor polls
// requests (between GEMM tiles or on a progress thread), which is also what
// drives MPI's progress engine. Every plan has its own duplicate of the
// group's communicator, so its tags never meet another plan's messages.
#pragma once

#include <mpi.h>

#include <vector>

#include "core/communicator.hpp"
#include "transport/transport.hpp"

namespace weave::internal::transport {

class MpiTransport final : public Transport {
 public:
  // `comm`: the plan's own duplicate of the group's communicator.
  explicit MpiTransport(SharedComm comm);
  ~MpiTransport() override;

  std::string name() const override { return "mpi"; }
  bool stream_ordered() const override { return false; }
  int post(const plan::Step& step, const exec::Bindings& bindings) override;
  bool test(int request) override;
  void progress() override;
  // Whether a request of the last execute has not completed.
  bool in_flight() const;
  void abandon_outstanding(std::shared_ptr<const void> workspace_owner) override;
  void begin_execute() override;

  // Largest tag this MPI accepts (MPI_TAG_UB).
  int max_tag() const { return max_tag_; }
  // Fails where MPI cannot take one of the schedule's collectives (int
  // counts; a sum in a type MPI has no datatype for), before any execute.
  static void check_collectives(const plan::Schedule& schedule);

 private:
  int add(std::vector<MPI_Request> requests, bool receive);
  SharedComm comm_;
  int max_tag_ = 32767;
  std::vector<std::vector<MPI_Request>> requests_;
  // Receives can be cancelled; sends and collectives (MPI forbids
  // cancelling an active collective) stay in flight when abandoned.
  std::vector<bool> receive_;
};

}  // namespace weave::internal::transport
