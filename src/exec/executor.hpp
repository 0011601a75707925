// Runs a schedule: one generic loop for every backend/transport pair.
//
// Compute steps are issued in schedule order; communication steps (grouped
// by batch) as soon as their dependencies allow, so receives are posted early
// and chunks are forwarded the moment they arrive. A dependency is satisfied
//   - by a finished step, or
//   - for a stream-ordered consumer (a GPU lane, a NCCL stream) by a step
//     that is merely enqueued on a stream: the consumer waits on its event.
// So a CUDA + NCCL plan enqueues everything without blocking the host, while
// a host + MPI plan keeps polling requests between GEMM tiles (or on a
// progress thread) until every step has finished. Units are issued in
// schedule order on stream-ordered transports; host-progressed ones get
// them as they become ready, except collectives, which every rank starts in
// schedule order.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "core/abandoned_work.hpp"
#include "core/arrival_notices.hpp"
#include "core/bounded_wait.hpp"
#include "core/wait_bounds.hpp"
#include "exec/bindings.hpp"
#include "exec/compute_backend.hpp"
#include "exec/trace.hpp"
#include "plan/schedule.hpp"
#include "transport/transport.hpp"

namespace weave::internal::exec {

enum class Progress { Tiles, Thread };

// What the host enqueues first in an execute over a stream-ordered transport
// (WEAVE_ISSUE_ORDER; plan::Resolved::issue_order). The host takes tens of
// microseconds to enqueue a copy-engine batch (events, the copy streams'
// forks and joins, bounded-wait kernels), and a ring's transfers are all
// ready at once (a forward waits for its receive on the stream only):
//   TransfersFirst: every transfer that is ready, then the next compute
//     step; a ring's first GEMM reaches its stream after the whole ring.
//   GemmsFirst: the compute steps that wait for nothing (AG-GEMM's own
//     chunk, the reductions' products) ahead of every transfer; the first
//     send then waits for the GEMM's enqueue.
//   Alternate: a batch of transfers, then a compute step, in turn while
//     compute steps remain: the first send and the first GEMM both start
//     within one enqueue of the execute's start.
// Transports that the host progresses post their transfers as they become
// ready whatever the order.
enum class IssueOrder { TransfersFirst, GemmsFirst, Alternate };

struct ExecutorOptions {
  Progress progress = Progress::Tiles;
  // Give up once neither this rank nor a peer has made progress for
  // bounds.timeout: the deadline restarts whenever a step is issued or
  // finishes, a GEMM tile completes, or a peer says its own work advances.
  WaitBounds bounds;
  // The group's arrival notices (may be null): progress notices while this
  // rank computes for long, names of the peers that did not arrive.
  ArrivalNotices* notices = nullptr;
  std::string call = "weave_execute";  // where, for messages
  // Kept alive by the transfers a failed execute leaves in flight.
  std::shared_ptr<const void> workspace_owner;
  Trace* trace = nullptr;  // null: no tracing
  IssueOrder issue_order = IssueOrder::TransfersFirst;
};

class Executor {
 public:
  Executor(const plan::Schedule& schedule, ComputeBackend& backend, transport::Transport& transport,
           ExecutorOptions options);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs every step. Throws weave::internal::Error (e.g. WEAVE_ERROR_TIMEOUT naming the
  // step and peer it waited for); the transfers still in flight then belong
  // to the abandoned work, with the workspace they use.
  void run(const Bindings& bindings, const Scalars& scalars, void* caller_stream);

 private:
  enum class Token : uint8_t { Pending, Done, Event, Request };
  struct Unit {  // communication steps that are issued together
    std::vector<int> steps;
  };

  bool stream_ordered(int step) const;
  bool dep_ready(int dep, bool consumer_stream_ordered);
  bool unit_ready(const Unit& unit);
  bool step_ready(int step);
  void issue_unit(const Unit& unit);
  void issue_compute(int step);
  void wait_for_deps_on_lane(int step, int lane);
  // Polls the transport and issues the ready communication units, at most
  // `most_units` of them. Returns whether anything advanced. Safe to call
  // from GEMM tile callbacks.
  bool pump(std::size_t most_units = std::numeric_limits<std::size_t>::max());
  bool finish_if_done(int step);
  bool requests_outstanding();
  // Whether a host-progressed transfer has not completed yet (marks those
  // that have as done).
  bool transfers_in_flight();
  std::string waiting_for() const;
  void note_own_progress();
  void progress_thread_main();

  const plan::Schedule& schedule_;
  ComputeBackend& backend_;
  transport::Transport& transport_;
  ExecutorOptions options_;
  std::vector<Unit> units_;
  // Units holding a collective, in schedule order: every rank must start a
  // group's collectives in the same order (MPI's rule), so a host-progressed
  // transport gets them in that order even when a later one is ready first.
  std::vector<std::size_t> collective_units_;
  std::vector<int> compute_order_;
  std::vector<bool> needs_event_;  // someone on another lane or the host depends on it

  // Per execute.
  const Bindings* bindings_ = nullptr;
  const Scalars* scalars_ = nullptr;
  std::vector<Token> token_;
  std::vector<int> request_;
  std::vector<double> posted_us_;  // tracing: when each request was posted
  std::size_t next_unit_ = 0;
  std::size_t next_collective_ = 0;  // into collective_units_
  std::vector<bool> unit_issued_;
  // Steps whose completion event lies on a stream of the transport's own
  // (Transport::completion_stream): readers on every lane wait for it.
  std::vector<bool> off_stream_;
  int waiting_for_ = -1;  // step the loop is blocked on, for the timeout message
  bool computing_ = false;  // a compute step runs (its tiles, or the progress thread, see it)
  std::chrono::steady_clock::time_point last_own_progress_{}, last_working_notice_{}, last_notice_poll_{};
  bool in_pump_ = false;
  std::mutex mutex_;  // progress thread vs. main thread
  std::atomic<bool> stop_thread_{false};
};

}  // namespace weave::internal::exec
