// The planner's model of where overlap pays: the time of each algorithm
// (sequential, ring, direct, pipelined collectives, hierarchical) predicted
// from what was measured of the machine at plan creation (a Calibration:
// the GEMM's rate and the time of each way of moving bytes the algorithms
// use), and the choice among them. Pure: the measurements are passed in.
//
// The predictions are a pipeline's: an algorithm that cuts the work into k
// stages takes the stage it cannot hide (its first GEMM or its last
// transfer) plus, for every other stage, the longer of its GEMM and its
// transfer. They ignore what the stages cost each other (a host core that
// both multiplies and drives the network; NCCL's kernels on SMs the GEMMs
// want), so an overlapped plan is chosen only when it is predicted at least
// kModelOverlapMargin faster than the sequential plan: a wrong guess then
// costs at most what the model underestimates.
#pragma once

#include <string>
#include <vector>

#include "core/nodes.hpp"
#include "core/problem.hpp"
#include "plan/schedule.hpp"

namespace weave::internal::plan {

// Seconds to move `bytes`: latency + bytes * seconds_per_byte.
struct LinkCost {
  double latency_s = 0;
  double seconds_per_byte = 0;
  double time(double bytes) const { return latency_s + bytes * seconds_per_byte; }
  // The line through two measurements (bytes, seconds), latency >= 0.
  static LinkCost fit(double bytes_1, double seconds_1, double bytes_2, double seconds_2);
};

// What a plan's group, transport and backend were measured to do (the
// slowest rank's time of each), once per grid, group, transport, backend
// and element type.
struct Calibration {
  double gemm_flops_per_s = 0;
  // The GEMM's rate while it shares the machine with transfers: on the host
  // cut into the tiles between which the executor drives them (0: as
  // gemm_flops_per_s). The overlapped plans' GEMMs run at this rate.
  double overlapped_gemm_flops_per_s = 0;
  // Every rank sends `bytes` to one peer while it receives as much from
  // another (a ring's step).
  LinkCost point_to_point;
  // The collective library's, by the bytes of the whole buffer of a rank:
  // all-gather (every rank's part together), reduce-scatter (what each rank
  // contributes), all-reduce (the buffer).
  LinkCost all_gather, reduce_scatter, all_reduce;
  // The all-gather was timed with parts in the proportions of the plan's
  // uneven rows (not equal parts).
  bool uneven_all_gather = false;
  // Groups spanning several nodes of several ranks: point to point between
  // ranks of one node, and between ranks of one local index on different
  // nodes.
  bool levels = false;
  LinkCost within_node, between_nodes;
  // What exchanges within and between nodes cost each other when they run
  // at once: the share of the shorter one added to the longer (0: separate
  // paths, as NVLink within and a network between; 1: one path, as nodes
  // emulated on one host through its memory). Measured with them.
  double levels_shared = 0;
  // The share of the shorter of two things running side by side (a GEMM, a
  // transfer) that overlap hides: 1 where the transfers need no core the
  // GEMM wants (GPUs; a host rank with a spare core for a progress thread),
  // 0 where they do (host ranks sharing their cores: moving bytes over TCP
  // or shared memory takes the same cores as BLAS, and only a faster way of
  // moving them pays). Set by the planner, not measured.
  double overlap_efficiency = 1;
  std::string summary() const;  // for describe
};

// levels_shared from the larger size's times of the exchange within a node
// alone, between nodes alone, and both at once: (both - longer) / shorter,
// in [0, 1].
double shared_path_fraction(double within_s, double between_s, double both_s);

// An overlapped plan is chosen only if predicted this much faster than the
// sequential one (a fraction of the sequential time), and one of another
// algorithm than the measured rule's (the incumbent) only if predicted this
// much faster than it too.
constexpr double kModelOverlapMargin = 0.10;

struct Candidate {
  Algorithm algorithm = Algorithm::Sequential;
  int chunks = 1;
  double seconds = 0;  // predicted (or, for a trial, measured)
};
// "sequential", "ring/2", ...: how describe names a candidate.
std::string candidate_name(const Candidate& candidate);
// "ring/2 61.2, hierarchical/2 74.1": candidates with their times in ms.
std::string candidate_times(const std::vector<Candidate>& candidates);

// The predicted time of `algorithm` with `chunks` per shard for `problem`
// (the slowest rank's share), moving reductions as `options` says (its
// flags; options.algorithm is ignored).
double predict_seconds(const Problem& problem, const ScheduleOptions& options, Algorithm algorithm, int chunks,
                       const Calibration& calibration, const NodeLayout& nodes);

// The model's predictions are close to the truth in shape, not in detail:
// on the host over TCP (2 emulated nodes of 2 ranks, doc/performance.md) it
// predicted the hierarchical reductions 0-15% faster than the ring where
// the ring measured 12-26% faster, and its absolute times were 20-60% low.
// Candidates predicted within this factor of the fastest are too close for
// it to tell apart: a plan times them (plan creation's trials,
// api/calibration.hpp) where that is affordable (kTrialMinSeconds,
// kTrialBudgetSeconds).
constexpr double kTrialBand = 1.5;
// At most this many candidates are timed (the fastest predicted depth of
// each algorithm, the closest first).
constexpr int kMaxTrials = 3;
// Plans whose fastest candidate is predicted below this are not timed
// (WEAVE_CALIBRATE=time times them): the choice there matters less than
// the noise of timing it.
constexpr double kTrialMinSeconds = 2e-4;
// Each candidate runs once to warm up, then kTrialRepeats times, the median
// counting; a candidate predicted to take kTrialLongSeconds or more runs
// once after its warm-up: its run-to-run spread is a smaller share of its
// time, and three more runs of it would put the trials over their budget
// where the choice matters most (over sockets, GEMM-AR 16384x8192x28672's
// trials were predicted at 4.9 s with three repeats and were not run; the
// pipelined plan then measured 0.61 x the sequential plan that ran).
constexpr int kTrialRepeats = 3;
constexpr double kTrialLongSeconds = 0.1;
int trial_repeats(double predicted_seconds);
// Plans whose trials are predicted to take longer than their budget are not
// timed (the model's times run low: on the host over TCP they took up to
// twice as long): kTrialBudgetSeconds, or kTrialBudgetPlanRuns runs of the
// fastest candidate where that is more (a plan is made to run many times),
// but never more than kTrialMaxBudgetSeconds.
constexpr double kTrialBudgetSeconds = 4.0;
constexpr double kTrialBudgetPlanRuns = 8.0;
constexpr double kTrialMaxBudgetSeconds = 20.0;
// The predicted seconds of timing `candidates` (warm-ups included), and the
// budget they must fit (`candidates` is the close list, the fastest first).
double trial_seconds(const std::vector<Candidate>& candidates);
double trial_budget_seconds(const std::vector<Candidate>& candidates);
// Of the timed candidates the fastest runs, but an overlapped plan only if
// it measured at least this much faster than the sequential plan where that
// was timed too (two timings of one plan differ by about this much).
constexpr double kTrialMargin = 0.02;

struct ModelChoice {
  Candidate chosen;
  std::vector<Candidate> candidates;  // every one predicted, sequential first
  std::string why;                    // for describe
  // The chosen candidate and the other algorithms' fastest depths predicted
  // within the band (kTrialBand) of the fastest, the fastest first, at most
  // kMaxTrials: the candidates worth timing (one alone: nothing to time).
  std::vector<Candidate> close;
};

// The choice among `algorithms` (sequential is always a candidate): the
// fastest prediction, or the sequential plan unless that is at least
// kModelOverlapMargin faster; an algorithm other than `incumbent` (what the
// measured rules would run) also only if it is that much faster than the
// incumbent's best. `chunks` > 0 fixes the chunks per shard; 0 lets the
// model pick among the usual depths (ring: `ring_chunks`).
// `band`: what ModelChoice::close takes (kTrialBand; infinity: the
// kMaxTrials fastest algorithms however far apart).
ModelChoice choose_by_model(const Problem& problem, const ScheduleOptions& options,
                            const std::vector<Algorithm>& algorithms, int chunks, int ring_chunks,
                            const Calibration& calibration, const NodeLayout& nodes,
                            Algorithm incumbent = Algorithm::Sequential, double band = kTrialBand);

// At most this many candidates are timed by any plan: the model's
// kMaxTrials and the pipelined plan in one chunk (with_one_pipelined_chunk).
constexpr int kMaxTimedCandidates = kMaxTrials + 1;

// Adds the pipelined plan in one chunk to `choice.close` where the pipelined
// plan there has more chunks, the model predicted one chunk too, and the
// trials stay within their budget. One chunk overlaps nothing but moves the
// pipelined plan's bytes in one collective: over NCCL's sockets between two
// emulated nodes, where the model picked two chunks, the pipelined
// GEMM-RS of 8192^3 with uneven shards took 1.09-1.12 x, and of
// 1024x8192x8192 1.40 x, a sequential plan moving the same bytes in one
// collective (doc/performance.md); the model does not see what a second
// collective costs there.
void with_one_pipelined_chunk(ModelChoice& choice);

// The choice among timed candidates (seconds measured): the fastest, but
// the sequential plan where it was timed and the fastest overlapped plan is
// not kTrialMargin faster. `measured` is not empty.
Candidate choose_by_trials(const std::vector<Candidate>& measured);

}  // namespace weave::internal::plan
