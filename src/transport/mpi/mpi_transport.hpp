// Chunks over MPI non-blocking point-to-point calls and, for the sequential
// algorithms, non-blocking collectives. Host-progressed: the executor polls
// requests (between GEMM tiles or on a progress thread), which is also what
// drives MPI's progress engine. Every plan has its own duplicate of the
// group's communicator, so its tags never meet another plan's messages.
#pragma once

#include <mpi.h>

#include <vector>

#include "transport/transport.hpp"

namespace weave::internal::transport {

class MpiTransport final : public Transport {
 public:
  // Collective over group_comm (duplicates it).
  explicit MpiTransport(MPI_Comm group_comm);
  ~MpiTransport() override;

  std::string name() const override { return "mpi"; }
  bool stream_ordered() const override { return false; }
  int post(const plan::Step& step, const exec::Bindings& bindings) override;
  bool test(int request) override;
  void progress() override;
  void cancel_all() override;
  void begin_execute() override;

  // Largest tag this MPI accepts (MPI_TAG_UB).
  int max_tag() const { return max_tag_; }

 private:
  int add(std::vector<MPI_Request> requests, bool collective);
  MPI_Comm comm_ = MPI_COMM_NULL;
  int max_tag_ = 32767;
  std::vector<std::vector<MPI_Request>> requests_;
  // MPI forbids cancelling or freeing an active non-blocking collective, so
  // cancel_all() leaves those pending (the plan is failed by then anyway).
  std::vector<bool> collective_;
  std::vector<MPI_Request> flat_;  // scratch for progress()
};

}  // namespace weave::internal::transport
