// Moving chunks between the ranks of an operation's group. Two kinds:
//   host-progressed (MPI, UCX): post() starts a step and returns a request
//     that test() polls; progress() keeps transfers moving;
//   stream-ordered (NCCL, copy engine): enqueue() puts a batch of steps on a
//     stream, in order after what is already there.
// A transport handles Send, Recv and Collective steps of a schedule.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/abandoned_work.hpp"
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
  // After a failed execute: hands every request still in flight to the
  // abandoned work (abandoned_work.hpp), together with what it uses
  // (`workspace_owner`, the transport's communicator and buffers), so a peer
  // that completes it later writes into memory that is still there. Receives
  // that can be cancelled are. The transport stays usable for destruction.
  virtual void abandon_outstanding(std::shared_ptr<const void> workspace_owner) { (void)workspace_owner; }

  // Stream-ordered transports: all steps of one batch start together.
  virtual void enqueue(const std::vector<const plan::Step*>& batch, const exec::Bindings& bindings,
                       void* stream) {
    (void)batch, (void)bindings, (void)stream;
  }
  // A step of the last batch enqueued whose completion lies on a stream of
  // the transport's own rather than on the stream it was enqueued on (a
  // receive that completes when its data has arrived, a send when its
  // source may be reused), so that what reads a receive waits for that
  // receive alone and later batches start without waiting for it; nullptr:
  // on the enqueue stream. Valid until the next enqueue.
  virtual void* completion_stream(const plan::Step& step) const { (void)step; return nullptr; }
  // Called at the start of every execute (e.g. to reset request tables).
  virtual void begin_execute() {}
  // Stream-ordered transports: called once per execute with the
  // communication stream, after it has joined the caller's stream and
  // before any step is enqueued (work that every execute does first).
  virtual void begin_stream_execute(void* stream) { (void)stream; }
  // Stream-ordered transports, on the communication stream, once per
  // execute after the last enqueue: the stream comes to wait for every
  // stream of the transport's own.
  virtual void end_stream_execute(void* stream) { (void)stream; }
  // Stream-ordered transports that wait on the device for their peers'
  // flags: what the first of those waits that gave up (in an earlier
  // execute, a peer that did not raise its flag within the timeout) waited
  // for, naming the step and the peer; empty while none has.
  virtual std::string device_wait_failure() const { return {}; }
};

}  // namespace weave::internal::transport
