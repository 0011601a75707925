// What the environment asks to be shown of plans and executes, without a
// change to the program:
//   WEAVE_LOG=info|debug|trace  plan descriptions at creation and each
//                               execute's time (rank 0; every rank; plus the
//                               schedule); any other value is warned about
//                               once and ignored.
//   WEAVE_TRACE=<path>          the Chrome trace of every execute of every
//                               plan, one file per rank (%r: the rank, %p: the
//                               plan's number in this process; without %p all
//                               plans share the rank's file), rewritten after
//                               each execute.
//   WEAVE_TRACE_LAST=<n>        keep the last n executes of each plan in the
//                               trace (default 100).
// Device plans' times come from GPU events, read when the next execute of
// the plan starts or when it is destroyed (which waits for the execute).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "exec/trace.hpp"

namespace weave::internal {

enum class LogLevel { Off, Info, Debug, Trace };

struct LogSettings {
  LogLevel level = LogLevel::Off;
  std::string trace_path;  // empty: no trace files
  int64_t trace_last = 100;
  bool timing_wanted() const { return level != LogLevel::Off || !trace_path.empty(); }
};

// The settings from the environment. Unknown WEAVE_LOG values are warned
// about on stderr (once per process and value); a WEAVE_TRACE_LAST that is
// not an integer >= 1 is WEAVE_ERROR_INVALID_VALUE.
LogSettings log_settings();

// Whether a rank prints at this level: rank 0 at info, every rank beyond.
bool log_prints(const LogSettings& settings, int rank);

// The executes kept for the trace files, for every plan of the process.
class ExecuteLog {
 public:
  static ExecuteLog& instance();
  // A number for a new plan, in creation order.
  int add_plan(const std::string& summary);
  // One finished execute of a plan: its spans (relative to its start, at
  // start_us on the process clock); prints its time where WEAVE_LOG asks
  // and rewrites the rank's trace file where WEAVE_TRACE asks.
  void add_execute(const LogSettings& settings, int plan, int rank, int64_t execute, double start_us,
                   double elapsed_ms, const exec::Trace& trace);
  // Microseconds since the log was made (the trace files' time axis).
  double now_us() const;

 private:
  struct Execute {
    int64_t number = 0;
    double start_us = 0;
    exec::Trace trace;
  };
  struct PlanLog {
    std::string summary;
    std::deque<Execute> executes;
  };
  void write(const LogSettings& settings, int plan, int rank);

  std::mutex mutex_;
  std::map<int, PlanLog> plans_;
  int next_plan_ = 0;
  const exec::Trace clock_{};  // its origin is the log's time zero (braces: clang needs a const member initialised)
};

}  // namespace weave::internal
