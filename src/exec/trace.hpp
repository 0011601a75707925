// Per-step timing of one execute, written as Chrome trace JSON (viewable in
// Perfetto). Off unless the plan asks for it; when off no timestamps are
// taken.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "plan/schedule.hpp"

namespace weave::internal::exec {

struct TraceSpan {
  int step = 0;
  std::string track;  // "compute lane 0", "communication"
  std::string name;
  double start_us = 0, end_us = 0;
};

// Spans are added from several threads at once during an execute: the
// progress thread records a transfer when it sees it finish while the
// calling thread records the host compute step it has just run (a sanitizer
// build caught the two reallocating the spans at once). Adding is therefore
// locked; reading (spans(), to_chrome_json) happens once the execute is
// over and nothing adds any more.
class Trace {
 public:
  Trace() = default;
  Trace(const Trace& other);
  Trace& operator=(const Trace& other);
  // Before an execute, while no other thread adds.
  void clear();
  // Time since the start of the execute, in microseconds.
  double now_us() const;
  void add(int step, const std::string& track, const std::string& name, double start_us, double end_us);
  void add_span(TraceSpan span);
  const std::vector<TraceSpan>& spans() const { return spans_; }
  // One process per rank (pid = rank), one thread per track.
  std::string to_chrome_json(int rank) const;

 private:
  mutable std::mutex mutex_;
  std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
  std::vector<TraceSpan> spans_;
};

}  // namespace weave::internal::exec
