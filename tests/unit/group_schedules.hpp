// The schedules of every rank of a group, built by the library's pure
// schedule builder, and small edits of them for tests that prove the checks
// can fail.
#pragma once

#include <vector>

#include "core/problem.hpp"
#include "plan/schedule.hpp"

namespace weave_test {

inline std::vector<weave::internal::plan::Schedule> build_group_schedules(const std::vector<weave::internal::Problem>& problems,
                                                                const weave::internal::plan::ScheduleOptions& options) {
  std::vector<weave::internal::plan::Schedule> schedules;
  for (const weave::internal::Problem& p : problems) schedules.push_back(weave::internal::plan::build_schedule(p, options));
  return schedules;
}

// Inserts `step` at index `at`; later steps and every dependency on them
// move up by one.
inline void insert_step(weave::internal::plan::Schedule& s, int at, weave::internal::plan::Step step) {
  for (weave::internal::plan::Step& other : s.steps)
    for (int& d : other.deps)
      if (d >= at) ++d;
  s.steps.insert(s.steps.begin() + at, std::move(step));
}

// Removes step `at`; steps that depended on it lose that dependency.
inline void erase_step(weave::internal::plan::Schedule& s, int at) {
  s.steps.erase(s.steps.begin() + at);
  for (weave::internal::plan::Step& other : s.steps) {
    std::vector<int> kept;
    for (int d : other.deps)
      if (d != at) kept.push_back(d > at ? d - 1 : d);
    other.deps = kept;
  }
}

}  // namespace weave_test
