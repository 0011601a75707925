// Moving chunks between the ranks of an operation's group. Two kinds:
//   host-progressed (MPI, UCX): post() starts a step and returns a request
//     that test() polls; progress() keeps transfers moving;
//   stream-ordered (NCCL, copy engine): enqueue() puts a batch of steps on a
//     stream, in order after what is already there.
// A transport handles Send, Recv and Collective steps of a schedule.
#pragma once

#include <string>
#include <vector>

#include "exec/bindings.hpp"
#include "plan/schedule.hpp"

namespace weave::internal::transport {

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string name() const = 0;
  virtual bool stream_ordered() const = 0;

  // Host-progressed transports.
  virtual int post(const plan::Step& step, const exec::Bindings& bindings) {
    (void)step, (void)bindings;
    return -1;
  }
  virtual bool test(int request) { (void)request; return true; }
  virtual void progress() {}
  // Abandon every outstanding request (after a timeout or error); the
  // transport must stay destructible.
  virtual void cancel_all() {}

  // Stream-ordered transports: all steps of one batch start together.
  virtual void enqueue(const std::vector<const plan::Step*>& batch, const exec::Bindings& bindings,
                       void* stream) {
    (void)batch, (void)bindings, (void)stream;
  }
  // Called at the start of every execute (e.g. to reset request tables).
  virtual void begin_execute() {}
};

}  // namespace weave::internal::transport
