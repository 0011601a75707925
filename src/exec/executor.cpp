#include "exec/executor.hpp"

#include <algorithm>
#include <map>

#include "core/error.hpp"

namespace weave::internal::exec {

using plan::Step;
using plan::StepKind;

Executor::Executor(const plan::Schedule& schedule, ComputeBackend& backend, transport::Transport& transport,
                   ExecutorOptions options)
    : schedule_(schedule), backend_(backend), transport_(transport), options_(options) {
  const auto& steps = schedule_.steps;
  std::map<int, std::size_t> unit_of_batch;
  needs_event_.assign(steps.size(), false);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    for (int d : s.deps) {
      if (d < 0 || static_cast<std::size_t>(d) >= i)
        fail(WEAVE_ERROR_INTERNAL, "schedule step ", i, " depends on step ", d, " which does not precede it");
      if (steps[d].lane != s.lane || !stream_ordered(static_cast<int>(i))) needs_event_[d] = true;
    }
    if (!s.is_comm()) {
      compute_order_.push_back(static_cast<int>(i));
      continue;
    }
    if (s.batch >= 0) {
      auto found = unit_of_batch.find(s.batch);
      if (found != unit_of_batch.end()) {
        units_[found->second].steps.push_back(static_cast<int>(i));
        continue;
      }
      unit_of_batch[s.batch] = units_.size();
    }
    units_.push_back(Unit{{static_cast<int>(i)}});
  }
  for (std::size_t u = 0; u < units_.size(); ++u)
    for (int s : units_[u].steps)
      if (steps[s].kind() == StepKind::Collective) {
        collective_units_.push_back(u);
        break;
      }
}

Executor::~Executor() = default;

bool Executor::stream_ordered(int step) const {
  return schedule_.steps[step].is_comm() ? transport_.stream_ordered() : backend_.asynchronous();
}

bool Executor::dep_ready(int dep, bool consumer_stream_ordered) {
  switch (token_[dep]) {
    case Token::Pending: return false;
    case Token::Done: return true;
    case Token::Event:
      if (consumer_stream_ordered) return true;
      if (!backend_.query(dep)) return false;
      token_[dep] = Token::Done;
      return true;
    case Token::Request:
      return finish_if_done(dep);
  }
  return false;
}

bool Executor::step_ready(int step) {
  const bool so = stream_ordered(step);
  for (int d : schedule_.steps[step].deps)
    if (!dep_ready(d, so)) {
      waiting_for_ = d;
      return false;
    }
  return true;
}

bool Executor::unit_ready(const Unit& unit) {
  for (int s : unit.steps)
    if (!step_ready(s)) return false;
  return true;
}

void Executor::wait_for_deps_on_lane(int step, int lane) {
  for (int d : schedule_.steps[step].deps)
    if (token_[d] == Token::Event && (schedule_.steps[d].lane != lane || off_stream_[d])) backend_.wait(lane, d);
}

void Executor::issue_unit(const Unit& unit) {
  if (transport_.stream_ordered()) {
    std::vector<const Step*> batch;
    for (int s : unit.steps) {
      wait_for_deps_on_lane(s, plan::kCommLane);
      batch.push_back(&schedule_.steps[s]);
    }
    // Traced: a batch spans its enqueue on the communication stream, and
    // each step that completes on a stream of the transport's own spans
    // from there to its completion.
    if (options_.trace)
      for (int s : unit.steps) backend_.mark_timing(s, plan::kCommLane, false);
    transport_.enqueue(batch, *bindings_, backend_.lane_stream(plan::kCommLane));
    bool front_marked = false;
    for (int s : unit.steps) {
      // A step that completes on a stream of the transport's own: every
      // reader waits for its event, those on the communication lane too.
      if (void* done = transport_.completion_stream(schedule_.steps[s])) {
        backend_.record_on_stream(s, done);
        off_stream_[s] = true;
        if (options_.trace) backend_.mark_timing_on_stream(s, done, true);
        front_marked |= s == unit.steps.front();
      } else if (needs_event_[s]) {
        backend_.record(s, plan::kCommLane);
      }
      token_[s] = backend_.asynchronous() ? Token::Event : Token::Done;
    }
    if (options_.trace && !front_marked) backend_.mark_timing(unit.steps.front(), plan::kCommLane, true);
  } else {
    const double start = options_.trace ? options_.trace->now_us() : 0.0;
    for (int s : unit.steps) {
      request_[s] = transport_.post(schedule_.steps[s], *bindings_);
      token_[s] = Token::Request;
    }
    if (options_.trace)
      for (int s : unit.steps) posted_us_[s] = start;
  }
}

void Executor::issue_compute(int step) {
  const Step& s = schedule_.steps[step];
  const bool async = backend_.asynchronous();
  if (async) wait_for_deps_on_lane(step, s.lane);
  const double start = options_.trace ? options_.trace->now_us() : 0.0;
  if (options_.trace && async) backend_.mark_timing(step, s.lane, false);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    computing_ = true;
  }
  if (s.kind() == StepKind::Gemm) {
    ProgressHook hook;
    if (!async && options_.progress == Progress::Tiles && !transport_.stream_ordered()) {
      hook.call = [this] {
        pump();
        return transfers_in_flight();
      };
      // pump() has just issued every ready unit, so only a transfer now in
      // flight can make another one ready during this GEMM.
      hook.transfers_in_flight = transfers_in_flight();
    }
    backend_.gemm(std::get<plan::GemmOp>(s.op), s.lane, *bindings_, *scalars_, hook);
  } else if (s.kind() == StepKind::Quantize) {
    backend_.quantize(std::get<plan::QuantizeOp>(s.op), s.lane, *bindings_);
  } else if (s.kind() == StepKind::Rearrange) {
    backend_.rearrange(std::get<plan::RearrangeOp>(s.op), s.lane, *bindings_);
  } else {
    backend_.epilogue(std::get<plan::EpilogueOp>(s.op), s.lane, *bindings_, *scalars_);
  }
  if (options_.trace && async) backend_.mark_timing(step, s.lane, true);
  if (options_.trace && !async)
    options_.trace->add(step, "compute lane " + std::to_string(s.lane), s.label, start, options_.trace->now_us());
  std::lock_guard<std::mutex> lock(mutex_);
  computing_ = false;
  if (async) {
    if (needs_event_[step]) backend_.record(step, s.lane);
    token_[step] = Token::Event;
  } else {
    token_[step] = Token::Done;
  }
}

bool Executor::pump(std::size_t most_units) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (in_pump_) return false;
  in_pump_ = true;
  bool advanced = false;
  try {
    note_own_progress();
    transport_.progress();
    // Note finished transfers now, so a trace shows when they finished.
    if (options_.trace)
      for (std::size_t i = 0; i < token_.size(); ++i)
        if (token_[i] == Token::Request) finish_if_done(static_cast<int>(i));
    std::size_t issued = 0;
    for (std::size_t u = next_unit_; u < units_.size() && issued < most_units; ++u) {
      if (unit_issued_[u]) continue;
      const bool collective = std::binary_search(collective_units_.begin(), collective_units_.end(), u);
      if (collective && collective_units_[next_collective_] != u) continue;  // an earlier collective goes first
      if (unit_ready(units_[u])) {
        issue_unit(units_[u]);
        unit_issued_[u] = true;
        if (collective) ++next_collective_;
        advanced = true;
        ++issued;
      } else if (transport_.stream_ordered()) {
        break;  // batches pair up across ranks only if enqueued in order
      }
    }
    while (next_unit_ < units_.size() && unit_issued_[next_unit_]) ++next_unit_;
    if (advanced) last_own_progress_ = std::chrono::steady_clock::now();
  } catch (...) {
    in_pump_ = false;
    throw;
  }
  in_pump_ = false;
  return advanced;
}

// Whether a host-progressed transfer has completed; if so, marks it done.
// The span from its posting to now is when it was in flight (what a trace
// shows next to the GEMMs).
bool Executor::finish_if_done(int step) {
  if (!transport_.test(request_[step])) return false;
  token_[step] = Token::Done;
  last_own_progress_ = std::chrono::steady_clock::now();
  if (options_.trace)
    options_.trace->add(step, "communication", schedule_.steps[step].label, posted_us_[step], options_.trace->now_us());
  return true;
}

bool Executor::transfers_in_flight() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::size_t i = 0; i < token_.size(); ++i)
    if (token_[i] == Token::Request && !finish_if_done(static_cast<int>(i))) return true;
  return false;
}

bool Executor::requests_outstanding() {
  std::lock_guard<std::mutex> lock(mutex_);
  bool outstanding = false;
  for (std::size_t i = 0; i < token_.size(); ++i)
    if (token_[i] == Token::Request && !finish_if_done(static_cast<int>(i))) {
      waiting_for_ = static_cast<int>(i);
      outstanding = true;
    }
  return outstanding;
}

std::string Executor::waiting_for() const {
  if (waiting_for_ < 0) return "the transfers of this execute";
  const Step& s = schedule_.steps[waiting_for_];
  std::string what = str("step ", waiting_for_, " (", s.label, ")");
  if (s.kind() == StepKind::Recv)
    what += str(" from group rank ", std::get<plan::RecvOp>(s.op).peer);
  else if (s.kind() == StepKind::Send)
    what += str(" to group rank ", std::get<plan::SendOp>(s.op).peer);
  else if (s.kind() == StepKind::Collective)
    what += str(", which every rank of the group takes part in");
  return what;
}

// Called with mutex_ held, from pump(): while a compute step runs (pump is
// then called between its tiles, or by the progress thread) this rank's own
// work advances; after the notice interval its peers hear so, and restart
// their timeouts. Also reads their notices.
void Executor::note_own_progress() {
  if (!options_.notices) return;
  const auto now = std::chrono::steady_clock::now();
  if (computing_) last_own_progress_ = now;
  if (now - last_notice_poll_ < std::chrono::milliseconds(1)) return;
  last_notice_poll_ = now;
  options_.notices->poll();
  const auto interval = options_.bounds.notice_interval();
  if (last_own_progress_ > last_working_notice_ && now - last_working_notice_ >= interval &&
      now - last_own_progress_ < interval) {
    options_.notices->announce_working();
    last_working_notice_ = now;
  }
}

void Executor::progress_thread_main() {
  while (!stop_thread_.load(std::memory_order_acquire)) {
    try {
      if (!pump()) std::this_thread::yield();
    } catch (...) {
      return;  // the main loop sees the same failure on its next call
    }
  }
}

void Executor::run(const Bindings& bindings, const Scalars& scalars, void* caller_stream) {
  bindings_ = &bindings;
  scalars_ = &scalars;
  token_.assign(schedule_.steps.size(), Token::Pending);
  request_.assign(schedule_.steps.size(), -1);
  posted_us_.assign(schedule_.steps.size(), 0.0);
  unit_issued_.assign(units_.size(), false);
  off_stream_.assign(schedule_.steps.size(), false);
  next_unit_ = 0;
  next_collective_ = 0;
  waiting_for_ = -1;
  computing_ = false;
  last_working_notice_ = last_own_progress_ = std::chrono::steady_clock::now();
  BoundedWait wait(options_.bounds, options_.notices, "group rank", options_.call);
  auto progress_seen = last_own_progress_;
  if (options_.trace) options_.trace->clear();

  transport_.begin_execute();
  backend_.begin(caller_stream);
  const bool stream_ordered_transport = transport_.stream_ordered() && backend_.asynchronous();
  if (stream_ordered_transport) transport_.begin_stream_execute(backend_.lane_stream(plan::kCommLane));
  std::thread progress_thread;
  const bool threaded = options_.progress == Progress::Thread && !transport_.stream_ordered();
  auto stop = [&] {
    if (progress_thread.joinable()) {
      stop_thread_.store(true, std::memory_order_release);
      progress_thread.join();
    }
  };
  try {
    if (threaded) {
      stop_thread_.store(false);
      progress_thread = std::thread([this] { progress_thread_main(); });
    }
    std::size_t next_compute = 0;
    // Issues the next compute step in schedule order if its dependencies allow.
    auto issue_next_compute = [&] {
      const int s = compute_order_[next_compute];
      bool ready = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ready = step_ready(s);
      }
      if (ready) {
        issue_compute(s);
        ++next_compute;
      }
      return ready;
    };
    // IssueOrder (ExecutorOptions::issue_order): on a stream-ordered
    // transport, the compute steps ahead of every transfer as far as they
    // wait for nothing this execute has yet to issue (GemmsFirst), or one
    // batch of transfers before each compute step (Alternate).
    const IssueOrder order = stream_ordered_transport ? options_.issue_order : IssueOrder::TransfersFirst;
    if (order == IssueOrder::GemmsFirst)
      while (next_compute < compute_order_.size() && issue_next_compute()) {
      }
    while (true) {
      const bool one_batch = order == IssueOrder::Alternate && next_compute < compute_order_.size();
      bool advanced = threaded ? false : pump(one_batch ? 1 : std::numeric_limits<std::size_t>::max());
      if (next_compute < compute_order_.size()) {
        if (issue_next_compute()) advanced = true;
      } else {
        bool units_left = false;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          units_left = next_unit_ < units_.size();
        }
        if (!units_left && !requests_outstanding()) break;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (advanced || last_own_progress_ > progress_seen) {
        progress_seen = last_own_progress_;
        wait.progressed();
      } else {
        wait.idle([this] { return waiting_for(); });
      }
    }
    // A peer that gave up in this execute returned an error: so must this
    // rank (with the execute check the outcome agreement sees to it too).
    std::lock_guard<std::mutex> lock(mutex_);
    wait.check_no_peer_gave_up([this] { return waiting_for(); });
  } catch (...) {
    stop();
    transport_.abandon_outstanding(options_.workspace_owner);
    // Whatever ended this rank's part (its own failure, a timeout, a peer
    // that left), its peers hear that it left this call and fail at once
    // rather than wait for it until their timeout (once per call: a
    // timeout has said so already).
    if (options_.notices) {
      try {
        options_.notices->announce_give_up();
      } catch (...) {
        // The notice is a courtesy; the error that ended the call goes on.
      }
    }
    throw;
  }
  stop();
  if (stream_ordered_transport) transport_.end_stream_execute(backend_.lane_stream(plan::kCommLane));
  backend_.end(caller_stream);
}

}  // namespace weave::internal::exec
