// Per-step timing of one execute, written as Chrome trace JSON (viewable in
// Perfetto). Off unless the plan asks for it; when off no timestamps are
// taken.
#pragma once

#include <chrono>
#include <cstdint>
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

class Trace {
 public:
  void clear();
  // Time since the start of the execute, in microseconds.
  double now_us() const;
  void add(int step, const std::string& track, const std::string& name, double start_us, double end_us);
  void add_span(TraceSpan span) { spans_.push_back(std::move(span)); }
  const std::vector<TraceSpan>& spans() const { return spans_; }
  // One process per rank (pid = rank), one thread per track.
  std::string to_chrome_json(int rank) const;

 private:
  std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
  std::vector<TraceSpan> spans_;
};

}  // namespace weave::internal::exec
