#include "plan/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <numeric>

#include "core/error.hpp"
#include "plan/wire.hpp"

namespace weave::internal::plan {

LinkCost LinkCost::fit(double bytes_1, double seconds_1, double bytes_2, double seconds_2) {
  LinkCost c;
  if (bytes_2 != bytes_1) c.seconds_per_byte = std::max(0.0, (seconds_2 - seconds_1) / (bytes_2 - bytes_1));
  c.latency_s = std::max(0.0, seconds_1 - bytes_1 * c.seconds_per_byte);
  if (c.seconds_per_byte == 0 && bytes_2 > 0) c.seconds_per_byte = seconds_2 / bytes_2;  // no slope: all bandwidth
  return c;
}

namespace {

std::string rate(const LinkCost& c) {
  char text[96];
  std::snprintf(text, sizeof text, "%.3g GB/s + %.3g us",
                c.seconds_per_byte > 0 ? 1e-9 / c.seconds_per_byte : 0.0, c.latency_s * 1e6);
  return text;
}

std::string milliseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", seconds * 1e3);
  return text;
}

double max_count(const Split& s) {
  int64_t most = 0;
  for (int64_t c : s.counts()) most = std::max(most, c);
  return static_cast<double>(most);
}

// Trial lists keep the fastest prediction first.
bool faster_first(const Candidate& x, const Candidate& y) { return x.seconds < y.seconds; }

}  // namespace

std::string candidate_name(const Candidate& c) {
  if (c.algorithm == Algorithm::Sequential) return algorithm_name(c.algorithm);
  return str(algorithm_name(c.algorithm), "/", c.chunks);
}

std::string candidate_times(const std::vector<Candidate>& candidates) {
  std::string text;
  for (const Candidate& c : candidates)
    text += str(text.empty() ? "" : ", ", candidate_name(c), " ", milliseconds(c.seconds));
  return text;
}

std::string Calibration::summary() const {
  std::string text = str("GEMM ", gemm_flops_per_s / 1e9, " GFLOP/s",
                         overlapped_gemm_flops_per_s > 0 ? str(" (", overlapped_gemm_flops_per_s / 1e9, " in tiles)") : "",
                         "; point to point ", rate(point_to_point),
                         "; all-gather ", rate(all_gather), uneven_all_gather ? " (in this plan's uneven parts)" : "",
                         "; reduce-scatter ", rate(reduce_scatter), "; all-reduce ",
                         rate(all_reduce));
  if (levels)
    text += str("; within a node ", rate(within_node), ", between nodes ", rate(between_nodes), " (together ",
                levels_shared > 0 ? str("sharing ", std::lround(levels_shared * 100), "% of one path") : std::string("on separate paths"),
                ")");
  if (overlap_efficiency < 1) text += str("; overlap hides ", overlap_efficiency * 100, "% of the shorter work");
  return text;
}

double shared_path_fraction(double within_s, double between_s, double both_s) {
  const double longer = std::max(within_s, between_s), shorter = std::min(within_s, between_s);
  if (!(shorter > 0) || !(both_s > 0)) return 0;
  return std::clamp((both_s - longer) / shorter, 0.0, 1.0);
}

double predict_seconds(const Problem& p, const ScheduleOptions& o, Algorithm algorithm, int chunks,
                       const Calibration& cal, const NodeLayout& nodes) {
  const double P = p.group_size, c = std::max(1, chunks);
  const double M = static_cast<double>(p.m), N = static_cast<double>(p.n), K = static_cast<double>(p.k);
  const double out = static_cast<double>(dtype_size(p.dtype));
  const bool ag = p.operation == Operation::AgGemm, all_reduce = p.operation == Operation::GemmAr;
  // The slowest rank's GEMM: AG-GEMM multiplies all of M by its columns,
  // the reductions all of M x N by its share of K.
  const double flops = ag ? 2 * M * max_count(p.n_split) * K : 2 * M * N * max_count(p.k_split);
  // Tiles are never faster than one GEMM: a faster measurement is noise.
  const double alone = cal.gemm_flops_per_s, beside = cal.overlapped_gemm_flops_per_s > 0
                                                           ? std::min(cal.overlapped_gemm_flops_per_s, alone)
                                                           : alone;
  const double rate = algorithm == Algorithm::Sequential || P <= 1 ? alone : beside;
  const double G = rate > 0 ? flops / rate : 0;
  if (P <= 1) return G;
  // Bytes: AG-GEMM's shard and whole of op(A); the reductions' shard of C
  // and whole M x N in what they move.
  const double shard_rows = max_count(p.m_split);
  const double wire = ag ? out : static_cast<double>(dtype_size(reduction_wire(p, o, algorithm).type));
  const double shard = shard_rows * (ag ? K : N) * wire, whole = M * (ag ? K : N) * wire;
  const double finished_shard = shard_rows * N * out, finished = M * N * out;
  // Work that runs side by side takes the longest of it, plus what it
  // costs the others (all of it where nothing can hide it).
  const double e = std::clamp(cal.overlap_efficiency, 0.0, 1.0);
  auto together = [e](std::initializer_list<double> parts) {
    const double longest = std::max(parts), sum = std::accumulate(parts.begin(), parts.end(), 0.0);
    return longest + (1 - e) * (sum - longest);
  };
  const LinkCost& p2p = cal.point_to_point;
  const int L = std::max(1, nodes.ranks_per_node()), Nn = std::max(1, nodes.nodes);
  const LinkCost& within = cal.levels ? cal.within_node : p2p;
  const LinkCost& between = cal.levels ? cal.between_nodes : p2p;
  // Transfers within and between nodes at once: the longer, plus the share
  // of the shorter that their shared path (calibrated) or the cores that
  // drive them (the overlap efficiency) cost it.
  const double shared = std::max(std::clamp(cal.levels_shared, 0.0, 1.0), 1 - e);
  auto both_levels = [shared](double within_s, double between_s) {
    return std::max(within_s, between_s) + shared * std::min(within_s, between_s);
  };
  switch (algorithm) {
    case Algorithm::Sequential:
      if (ag) return cal.all_gather.time(whole) + G;
      return G + (all_reduce ? cal.all_reduce.time(whole) : cal.reduce_scatter.time(whole));
    case Algorithm::Ring:
    case Algorithm::Direct: {
      // P steps of a GEMM of one shard's rows, P - 1 of them beside a
      // transfer of one shard; GEMM-AR then passes the finished rows on.
      const double g = G / P, x = p2p.time(shard);
      double t = g + (P - 1) * together({g, x});
      if (all_reduce) t += (P - 1) * p2p.time(finished_shard);
      return t;
    }
    case Algorithm::Pipelined: {
      if (ag) {
        // My own rows first beside chunk 0's all-gather, then each chunk's
        // other rows beside the next chunk's all-gather.
        const double g = G * (P - 1) / P / c, x = cal.all_gather.time(whole / c);
        return together({G / P, x}) + (c - 1) * together({g, x}) + g;
      }
      const double g = G / c;
      double x = 0;
      if (reduction_wire(p, o, algorithm).products)
        x = p2p.time(whole * (P - 1) / P / c) + (all_reduce ? cal.all_gather.time(finished / c) : 0);
      else
        x = (all_reduce ? cal.all_reduce : cal.reduce_scatter).time(whole / c);
      return g + (c - 1) * together({g, x}) + x;
    }
    case Algorithm::Hierarchical: {
      // Per chunk: between nodes my share to N - 1 nodes, within the node
      // to L - 1 ranks (AG-GEMM: every node's pieces of my local index;
      // reductions: the products of L - 1 local ranks' columns).
      const double x_between = between.time((Nn - 1) * shard / c);
      const double x_within = within.time((L - 1) * Nn * shard / c);
      const double x_levels = both_levels(x_within, x_between);
      if (ag) {
        const double g = G * (P - 1) / P / c;
        return together({G / P, x_between}) + (c - 1) * together({g, x_levels}) + together({g, x_within}) + g;
      }
      const double g = G / c;
      double t = g + (c - 1) * together({g, x_levels}) + x_within + x_between;
      // The finished rows: between nodes and within them side by side.
      if (all_reduce)
        t += both_levels(within.time((L - 1) * Nn * finished_shard), between.time((Nn - 1) * finished_shard));
      return t;
    }
    case Algorithm::Summa: break;  // WEAVE_GEMM is not the model's to choose
  }
  fail(WEAVE_ERROR_INTERNAL, "no prediction for algorithm ", static_cast<int>(algorithm));
}

ModelChoice choose_by_model(const Problem& p, const ScheduleOptions& o, const std::vector<Algorithm>& algorithms,
                            int chunks, int ring_chunks, const Calibration& cal, const NodeLayout& nodes,
                            Algorithm incumbent, double band) {
  ModelChoice choice;
  auto add = [&](Algorithm a, int c) {
    choice.candidates.push_back(Candidate{a, c, predict_seconds(p, o, a, c, cal, nodes)});
  };
  add(Algorithm::Sequential, 1);
  for (Algorithm a : algorithms) {
    if (a == Algorithm::Sequential) continue;
    std::vector<int> depths{chunks};
    if (chunks <= 0) {
      switch (a) {
        case Algorithm::Ring: depths = {ring_chunks}; break;
        case Algorithm::Direct: depths = {1, 2}; break;
        // One chunk: no overlap but the pipelined plan's wire (over two
        // ranks 16-bit products in one collective, half the bytes of the
        // sequential plan's float32 partial sums), which on small shapes
        // beat two chunks' two collectives over sockets
        // (doc/performance.md).
        case Algorithm::Pipelined: depths = {1, 2, 4, 8}; break;
        case Algorithm::Hierarchical: depths = {2, 4}; break;
        case Algorithm::Sequential:
        case Algorithm::Summa: break;
      }
    }
    for (int c : depths) add(a, c);
  }
  const Candidate& sequential = choice.candidates.front();
  const Candidate* best = &sequential;
  const Candidate* incumbent_best = nullptr;  // the incumbent's fastest depth
  for (const Candidate& c : choice.candidates) {
    if (c.seconds < best->seconds) best = &c;
    if (c.algorithm == incumbent && (!incumbent_best || c.seconds < incumbent_best->seconds)) incumbent_best = &c;
  }
  const std::string predicted = candidate_times(choice.candidates);
  const double keep = 1 - kModelOverlapMargin;
  // Another algorithm than the incumbent must beat it by the margin too.
  if (best != &sequential && incumbent_best && incumbent_best != &sequential &&
      best->algorithm != incumbent && best->seconds > keep * incumbent_best->seconds)
    best = incumbent_best;
  if (best != &sequential && best->seconds > keep * sequential.seconds) {
    choice.chosen = sequential;
    choice.why = str("sequential chosen by the model: the fastest overlap predicted (", candidate_name(*best),
                     ") is not ", kModelOverlapMargin * 100, "% faster (predicted ms: ", predicted, ")");
  } else {
    choice.chosen = *best;
    choice.why = str(candidate_name(*best), " chosen by the model (predicted ms: ", predicted, ")");
  }
  // The candidates too close to tell apart: each algorithm's fastest depth
  // within the band of the fastest prediction, the chosen one among them.
  const double fastest = std::min_element(choice.candidates.begin(), choice.candidates.end(),
                                          [](const Candidate& x, const Candidate& y) { return x.seconds < y.seconds; })
                             ->seconds;
  std::vector<Candidate> others;  // each other algorithm's fastest depth in the band
  for (const Candidate& c : choice.candidates) {
    if (c.algorithm == choice.chosen.algorithm || c.seconds > band * fastest) continue;
    auto same = std::find_if(others.begin(), others.end(), [&](const Candidate& x) { return x.algorithm == c.algorithm; });
    if (same == others.end())
      others.push_back(c);
    else if (c.seconds < same->seconds)
      *same = c;
  }
  std::stable_sort(others.begin(), others.end(), faster_first);
  // The chosen one and the closest others, kMaxTrials in all.
  if (static_cast<int>(others.size()) > kMaxTrials - 1) others.resize(static_cast<std::size_t>(kMaxTrials - 1));
  std::vector<Candidate> close{choice.chosen};
  close.insert(close.end(), others.begin(), others.end());
  std::stable_sort(close.begin(), close.end(), faster_first);
  if (close.size() > 1) choice.close = close;
  return choice;
}

void with_one_pipelined_chunk(ModelChoice& choice) {
  auto pipelined_in_chunks = [](const Candidate& c) { return c.algorithm == Algorithm::Pipelined && c.chunks > 1; };
  auto pipelined_whole = [](const Candidate& c) { return c.algorithm == Algorithm::Pipelined && c.chunks == 1; };
  if (std::none_of(choice.close.begin(), choice.close.end(), pipelined_in_chunks)) return;
  if (std::any_of(choice.close.begin(), choice.close.end(), pipelined_whole)) return;
  const auto one = std::find_if(choice.candidates.begin(), choice.candidates.end(), pipelined_whole);
  if (one == choice.candidates.end()) return;  // chunks fixed by the caller
  std::vector<Candidate> more = choice.close;
  more.push_back(*one);
  std::stable_sort(more.begin(), more.end(), faster_first);
  if (trial_seconds(more) <= trial_budget_seconds(more)) choice.close = more;
}

int trial_repeats(double predicted_seconds) {
  return predicted_seconds >= kTrialLongSeconds ? 1 : kTrialRepeats;
}

double trial_seconds(const std::vector<Candidate>& candidates) {
  double seconds = 0;
  for (const Candidate& c : candidates) seconds += (1 + trial_repeats(c.seconds)) * c.seconds;
  return seconds;
}

double trial_budget_seconds(const std::vector<Candidate>& candidates) {
  if (candidates.empty()) return kTrialBudgetSeconds;
  double fastest = std::numeric_limits<double>::infinity();
  for (const Candidate& c : candidates) fastest = std::min(fastest, c.seconds);
  return std::min(kTrialMaxBudgetSeconds, std::max(kTrialBudgetSeconds, kTrialBudgetPlanRuns * fastest));
}

Candidate choose_by_trials(const std::vector<Candidate>& measured) {
  if (measured.empty()) fail(WEAVE_ERROR_INTERNAL, "a choice among no timed candidates");
  const Candidate* fastest = &measured.front();
  const Candidate* sequential = nullptr;
  for (const Candidate& c : measured) {
    if (c.seconds < fastest->seconds) fastest = &c;
    if (c.algorithm == Algorithm::Sequential) sequential = &c;
  }
  if (sequential && fastest->seconds > (1 - kTrialMargin) * sequential->seconds) return *sequential;
  return *fastest;
}

}  // namespace weave::internal::plan
