// Runs the schedules of every rank of a group in one process, on real data,
// in a random order that respects only what the schedules promise, and
// checks the result against the double-precision oracle.
//
// Each rank gets its blocks of a random global problem (A, B, C, bias);
// workspace and the gathered-A output start as NaN. Steps run as soon as
// their dependencies allow, one at a time, the next one picked by a seeded
// RNG among everything that could run:
//   - a compute step when all its deps have finished;
//   - the communication steps of one batch are posted together when all
//     their deps have finished (as the executor issues them);
//   - a posted send or receive completes once its partner is posted; a
//     posted receive leaves its destination NaN until it completes, and a
//     send whose source changes while in flight is reported;
//   - a collective completes once every rank has posted it.
// GEMMs and epilogues are the test's own naive loops (not Weave's kernels).
// A missing dependency shows up as NaN or a wrong value in C, a changed
// in-flight buffer, or a deadlock.
//
// Alongside each value the simulator tracks what it is made of: copies of
// the caller's C (unscaled and scaled by beta) and of bias. Every element of
// every rank's C must end with beta * C exactly once and bias exactly once
// (or never, without bias), whatever the runtime beta is, so a bias added on
// every rank before a reduction (P x bias) or beta applied twice is caught
// even when the values would happen to agree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/problem.hpp"
#include "plan/schedule.hpp"

namespace weave_test {

struct SimulationOptions {
  uint64_t data_seed = 1;   // the global A, B, C, bias
  uint64_t order_seed = 1;  // which ready step runs next
  // How the next event is picked among the ready ones. Off: uniformly, so
  // ready events run soon. On: each event gets a random priority when it
  // becomes ready and the highest runs first, so some events (a send's
  // completion, a GEMM) wait until nothing else can run, as on a slow network
  // or a descheduled thread; this finds hazards that need a long delay.
  bool delay_events = false;
  double alpha = 1.0, beta = 0.0;
  // Compute steps of one lane run in schedule order (a GPU stream, or the
  // host thread). Off: only deps order them, the strictest reading.
  bool lane_order = false;
  // Batches of one rank run one after another, each completing before the
  // next starts (NCCL groups on one stream). Off: a batch is posted when its
  // deps allow and its operations complete independently (MPI requests).
  bool stream_ordered_comm = false;
  // The gathered-A output is expected (WEAVE_FLAG_GATHERED_OUTPUT) and lives
  // in a buffer with this much extra leading dimension.
  bool gathered_output = false;
  int64_t gathered_ld_padding = 0;
  std::size_t max_errors = 8;
};

struct SimulationReport {
  std::vector<std::string> errors;  // empty: every check passed
  int64_t events = 0;               // steps run, posts and completions
  bool ok() const { return errors.empty(); }
  std::string summary() const;      // the errors, one per line
};

// problems[r] and schedules[r] belong to group rank r. The schedules should
// pass check_schedules first; the simulator reports unmatched operations as
// a deadlock rather than re-checking structure.
SimulationReport simulate(const std::vector<weave::internal::Problem>& problems,
                          const std::vector<weave::internal::plan::Schedule>& schedules, const SimulationOptions& options);

}  // namespace weave_test
