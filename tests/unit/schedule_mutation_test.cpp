// The schedule checks and the simulator must be able to fail: each test
// takes a correct schedule, breaks it the way a builder bug would (a lost
// dependency, bias added twice or on every rank, beta never applied, a
// dropped send, mismatched batches, a region out of bounds), and asserts
// that the breakage is reported.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "group_problem.hpp"
#include "group_schedules.hpp"
#include "schedule_checks.hpp"
#include "schedule_simulator.hpp"

namespace weave_test {
namespace {

using weave::internal::Op;
using weave::internal::Operation;
using weave::internal::Order;
using namespace weave::internal::plan;

struct Group {
  std::vector<weave::internal::Problem> problems;
  std::vector<Schedule> schedules;
};

Group make_group(Operation op, int P, Algorithm algorithm, Direction direction, int chunks, bool gathered = false,
                 bool peer_sums = false, bool one_shot = false) {
  GroupCase g;
  g.operation = op;
  g.ranks = P;
  g.shards = Shards::Uneven;
  g.m = 13;
  g.n = 6;
  g.k = 7;
  g.bias = true;
  // Column-major A with op N is not laid out like gathered rows, so AG-GEMM
  // packs its own chunks first (one more dependency to lose).
  g.order_a = Order::ColMajor;
  ScheduleOptions o;
  o.algorithm = algorithm;
  o.direction = direction;
  o.chunks_per_shard = chunks;
  o.gathered_output = gathered;
  o.peer_sums = peer_sums;
  o.all_reduce_one_shot = one_shot;
  Group group;
  group.problems = make_group_problems(g);
  group.schedules = build_group_schedules(group.problems, o);
  return group;
}

SimulationOptions options(uint64_t seed, bool gathered = false, double beta = 0.5) {
  SimulationOptions o;
  o.order_seed = seed;
  o.delay_events = seed % 2 == 0;
  o.data_seed = 77 + seed;
  o.alpha = 1.5;
  o.beta = beta;
  o.gathered_output = gathered;
  return o;
}

// Whether any of `seeds` random orders makes the simulation fail; the first
// failure's report goes to *why.
bool some_order_fails(const Group& g, int seeds, bool gathered, std::string* why = nullptr, double beta = 0.5) {
  for (int seed = 1; seed <= seeds; ++seed) {
    const SimulationReport r = simulate(g.problems, g.schedules, options(seed, gathered, beta));
    if (!r.ok()) {
      if (why) *why = r.summary();
      return true;
    }
  }
  return false;
}

bool contains(const std::vector<std::string>& errors, const std::string& part) {
  for (const std::string& e : errors)
    if (e.find(part) != std::string::npos) return true;
  return false;
}

int find_step(const Schedule& s, const std::function<bool(const Step&)>& predicate) {
  for (int i = 0; i < static_cast<int>(s.steps.size()); ++i)
    if (predicate(s.steps[i])) return i;
  return -1;
}

// Steps `from` reaches through dependencies (not including itself).
std::set<int> ancestors(const Schedule& s, int from) {
  std::set<int> seen;
  std::vector<int> todo(s.steps[from].deps.begin(), s.steps[from].deps.end());
  while (!todo.empty()) {
    const int x = todo.back();
    todo.pop_back();
    if (!seen.insert(x).second) continue;
    todo.insert(todo.end(), s.steps[x].deps.begin(), s.steps[x].deps.end());
  }
  return seen;
}

TEST(ScheduleMutations, CorrectSchedulesPassFirst) {
  // The baseline every mutation below starts from.
  for (Operation op : {Operation::AgGemm, Operation::GemmRs, Operation::GemmAr}) {
    const Group g = make_group(op, 3, Algorithm::Ring, Direction::Forward, 2, op == Operation::AgGemm);
    EXPECT_TRUE(check_schedules(g.problems, g.schedules).empty());
    std::string why;
    EXPECT_FALSE(some_order_fails(g, 16, op == Operation::AgGemm, &why)) << why;
  }
}

TEST(ScheduleMutations, GemmWithoutItsReceiveReadsNaN) {
  Group g = make_group(Operation::AgGemm, 3, Algorithm::Ring, Direction::Forward, 1);
  Schedule& s = g.schedules[1];
  const int recv = find_step(s, [](const Step& x) { return x.kind() == StepKind::Recv; });
  ASSERT_GE(recv, 0);
  const int gemm = find_step(s, [&](const Step& x) {
    return x.kind() == StepKind::Gemm && x.deps.size() == 1 && x.deps[0] == recv;
  });
  ASSERT_GE(gemm, 0);
  s.steps[gemm].deps.clear();
  EXPECT_TRUE(check_schedules(g.problems, g.schedules).empty()) << "a missing edge is not a structural error";
  std::string why;
  EXPECT_TRUE(some_order_fails(g, 8, false, &why));
  EXPECT_NE(why.find("C("), std::string::npos) << why;
}

// Every dependency that no other path implies is necessary: removing it
// must make some random order fail. Covers every builder.
TEST(ScheduleMutations, EveryNecessaryDependencyIsChecked) {
  struct Config {
    Operation op;
    Algorithm algorithm;
    Direction direction;
    int chunks;
    bool peer_sums = false, one_shot = false;
  };
  const Config configs[] = {
      {Operation::AgGemm, Algorithm::Ring, Direction::Forward, 2},
      {Operation::AgGemm, Algorithm::Ring, Direction::Bidirectional, 2},
      {Operation::AgGemm, Algorithm::Sequential, Direction::Forward, 1},
      {Operation::AgGemm, Algorithm::Direct, Direction::Forward, 2},
      {Operation::GemmRs, Algorithm::Ring, Direction::Forward, 2},
      {Operation::GemmRs, Algorithm::Ring, Direction::Backward, 1},
      {Operation::GemmRs, Algorithm::Sequential, Direction::Forward, 1},
      {Operation::GemmAr, Algorithm::Ring, Direction::Bidirectional, 2},
      {Operation::GemmAr, Algorithm::Sequential, Direction::Forward, 1},
      {Operation::GemmRs, Algorithm::Direct, Direction::Forward, 2, true},
      {Operation::GemmAr, Algorithm::Direct, Direction::Forward, 2, true},
      {Operation::GemmAr, Algorithm::Direct, Direction::Forward, 2, true, true},
  };
  int edges_removed = 0;
  for (const Config& c : configs) {
    const bool gathered = c.op == Operation::AgGemm;
    for (int P : {2, 4}) {
      const Group original = make_group(c.op, P, c.algorithm, c.direction, c.chunks, gathered, c.peer_sums, c.one_shot);
      const int rank = 1;
      const Schedule& s = original.schedules[rank];
      for (int step = 0; step < static_cast<int>(s.steps.size()); ++step)
        for (int d : s.steps[step].deps) {
          // Skip edges implied by another path: another dependency of the
          // step, or a dependency of a step in the same batch (a batch is
          // issued once all its steps' dependencies are done).
          bool implied = false;
          for (int other : s.steps[step].deps)
            if (other != d && ancestors(s, other).count(d)) implied = true;
          if (s.steps[step].batch >= 0)
            for (int mate = 0; mate < static_cast<int>(s.steps.size()); ++mate) {
              if (mate == step || s.steps[mate].batch != s.steps[step].batch) continue;
              for (int other : s.steps[mate].deps)
                if (other == d || ancestors(s, other).count(d)) implied = true;
            }
          if (implied) continue;
          Group broken = original;
          std::vector<int>& deps = broken.schedules[rank].steps[step].deps;
          deps.erase(std::find(deps.begin(), deps.end(), d));
          ++edges_removed;
          EXPECT_TRUE(some_order_fails(broken, 400, gathered))
              << operation_name(c.op) << " " << algorithm_name(c.algorithm) << " " << direction_name(c.direction)
              << " P=" << P << ": removing the edge " << d << " (" << s.steps[d].label << ") -> " << step << " ("
              << s.steps[step].label << ") on rank " << rank << " went unnoticed\n"
              << format_schedule(s);
        }
    }
  }
  EXPECT_GE(edges_removed, 40) << "too few edges tried to prove anything";
}

TEST(ScheduleMutations, DuplicatedBiasIsCounted) {
  for (Operation op : {Operation::AgGemm, Operation::GemmRs, Operation::GemmAr})
    for (Algorithm alg : {Algorithm::Ring, Algorithm::Sequential}) {
      Group g = make_group(op, 3, alg, Direction::Forward, 2);
      // The first rank that adds bias somewhere (with uneven shards a rank
      // may own no columns of C).
      auto adds_bias = [](const Step& x) {
        const auto* e = std::get_if<EpilogueOp>(&x.op);
        return e && e->has_bias && !e->dst.empty();
      };
      int rank = 0;
      while (rank < 3 && find_step(g.schedules[rank], adds_bias) < 0) ++rank;
      ASSERT_LT(rank, 3) << operation_name(op) << ": no rank adds bias";
      Schedule& s = g.schedules[rank];
      const int with_bias = find_step(s, adds_bias);
      // A plain "dst += bias" after the original, on the same region.
      const auto& original = std::get<EpilogueOp>(s.steps[with_bias].op);
      EpilogueOp again;
      again.dst = original.dst;
      again.dst_scale = Scalar::One;
      again.has_bias = true;
      again.bias = original.bias;
      Step extra;
      extra.op = again;
      extra.lane = s.steps[with_bias].lane;
      extra.deps = {with_bias};
      extra.label = "bias again";
      insert_step(s, with_bias + 1, extra);
      // Later steps that read the region must see the second bias too.
      for (int i = with_bias + 2; i < static_cast<int>(s.steps.size()); ++i)
        for (int& d : s.steps[i].deps)
          if (d == with_bias) d = with_bias + 1;
      std::string why;
      EXPECT_TRUE(some_order_fails(g, 4, false, &why)) << operation_name(op);
      EXPECT_NE(why.find("bias added 2 times"), std::string::npos) << operation_name(op) << ": " << why;
    }
}

// The known failure of a peer library: bias added on every rank before the
// all-reduce, so C gets P x bias.
TEST(ScheduleMutations, BiasOnEveryRankBeforeAllReduceIsCounted) {
  Group g = make_group(Operation::GemmAr, 3, Algorithm::Sequential, Direction::Forward, 1);
  for (Schedule& s : g.schedules) {
    const int reduce = find_step(s, [](const Step& x) { return x.kind() == StepKind::Collective; });
    ASSERT_GE(reduce, 0);
    const auto& collective = std::get<CollectiveOp>(s.steps[reduce].op);
    EpilogueOp add;
    add.dst = collective.send;
    add.dst_scale = Scalar::One;
    add.has_bias = true;
    add.bias = Region{kBufferBias, 0, 0, 1, collective.send.cols};
    Step step;
    step.op = add;
    step.lane = 0;
    step.deps = s.steps[reduce].deps;
    step.label = "bias before the all-reduce";
    insert_step(s, reduce, step);
    s.steps[reduce + 1].deps = {reduce};
    // ... and the finishing epilogue no longer adds it (as in the buggy peer).
    for (Step& x : s.steps)
      if (auto* e = std::get_if<EpilogueOp>(&x.op); e && e->has_src) e->has_bias = false;
  }
  ASSERT_TRUE(check_schedules(g.problems, g.schedules).empty());
  std::string why;
  EXPECT_TRUE(some_order_fails(g, 1, false, &why));
  EXPECT_NE(why.find("bias added 3 times"), std::string::npos) << why;
}

// With beta == 0 a schedule that never applies beta gives the right numbers;
// only the counting interpretation notices.
TEST(ScheduleMutations, BetaNeverAppliedIsCountedEvenWhenBetaIsZero) {
  Group g = make_group(Operation::AgGemm, 3, Algorithm::Ring, Direction::Forward, 1);
  for (Schedule& s : g.schedules)
    for (Step& x : s.steps)
      if (auto* gemm = std::get_if<GemmOp>(&x.op)) gemm->beta = Scalar::Zero;
  std::string why;
  EXPECT_TRUE(some_order_fails(g, 1, false, &why, /*beta=*/0.0));
  EXPECT_NE(why.find("beta * C applied 0 times"), std::string::npos) << why;
  EXPECT_EQ(why.find(", expected "), std::string::npos) << "the values themselves should be right: " << why;
}

TEST(ScheduleMutations, DroppedSendIsUnmatchedAndDeadlocks) {
  for (Operation op : {Operation::AgGemm, Operation::GemmRs, Operation::GemmAr}) {
    Group g = make_group(op, 3, Algorithm::Ring, Direction::Forward, 2);
    Schedule& s = g.schedules[0];
    const int send = find_step(s, [](const Step& x) { return x.kind() == StepKind::Send; });
    ASSERT_GE(send, 0);
    erase_step(s, send);
    const std::vector<std::string> errors = check_schedules(g.problems, g.schedules);
    EXPECT_TRUE(contains(errors, "has no matching send")) << operation_name(op);
    std::string why;
    EXPECT_TRUE(some_order_fails(g, 1, false, &why));
    EXPECT_NE(why.find("deadlock"), std::string::npos) << why;
  }
}

// A send and its receive in different batches: fine for MPI requests, a
// deadlock for NCCL groups issued in order.
TEST(ScheduleMutations, MismatchedBatchesDeadlockGroupedCommunication) {
  Group g = make_group(Operation::AgGemm, 2, Algorithm::Ring, Direction::Forward, 1);
  for (Schedule& s : g.schedules) {
    const int send = find_step(s, [](const Step& x) { return x.kind() == StepKind::Send; });
    const int recv = find_step(s, [](const Step& x) { return x.kind() == StepKind::Recv; });
    ASSERT_GE(send, 0);
    ASSERT_GE(recv, 0);
    // The send moves to a batch of its own, issued before the receive's.
    s.steps[send].batch = s.steps[recv].batch + 1;
  }
  const std::vector<std::string> errors = check_schedules(g.problems, g.schedules);
  EXPECT_TRUE(contains(errors, "grouped batches would deadlock")) << "structural check missed the batch mismatch";

  SimulationOptions grouped = options(1);
  grouped.lane_order = true;
  grouped.stream_ordered_comm = true;
  const SimulationReport stream = simulate(g.problems, g.schedules, grouped);
  EXPECT_NE(stream.summary().find("deadlock"), std::string::npos) << stream.summary();
  const SimulationReport mpi = simulate(g.problems, g.schedules, options(1));
  EXPECT_TRUE(mpi.ok()) << "independent MPI requests do not deadlock here: " << mpi.summary();
}

TEST(ScheduleMutations, StructuralBreakagesAreReported) {
  const Group original = make_group(Operation::GemmRs, 3, Algorithm::Ring, Direction::Forward, 2);
  ASSERT_TRUE(check_schedules(original.problems, original.schedules).empty());

  {  // A dependency on a later step.
    Group g = original;
    g.schedules[1].steps[0].deps = {3};
    EXPECT_TRUE(contains(check_schedules(g.problems, g.schedules), "which does not precede it"));
  }
  {  // A region reaching past its buffer.
    Group g = original;
    const int gemm = find_step(g.schedules[1], [](const Step& x) { return x.kind() == StepKind::Gemm; });
    std::get<GemmOp>(g.schedules[1].steps[gemm].op).a.col0 += 1;
    const auto errors = check_schedules(g.problems, g.schedules);
    EXPECT_TRUE(contains(errors, "is outside buffer A"));
  }
  {  // A send of a strided (non-contiguous) block.
    Group g = original;
    Schedule& s = g.schedules[1];
    const int send = find_step(s, [](const Step& x) {
      const auto* op = std::get_if<SendOp>(&x.op);
      return op && op->src.rows >= 2 && op->src.cols >= 2;
    });
    ASSERT_GE(send, 0);
    auto& op = std::get<SendOp>(s.steps[send].op);
    op.src.cols -= 1;  // rows of a row-major slot, now shorter than its ld
    EXPECT_TRUE(contains(check_schedules(g.problems, g.schedules), "is not contiguous"));
  }
  {  // Two sends with one key: MPI could match either receive.
    Group g = original;
    Schedule& s = g.schedules[2];
    const int send = find_step(s, [](const Step& x) { return x.kind() == StepKind::Send; });
    Step copy = s.steps[send];
    s.steps.push_back(copy);
    EXPECT_TRUE(contains(check_schedules(g.problems, g.schedules), "a second send"));
  }
  {  // A send whose byte count differs from its receive.
    Group g = original;
    Schedule& s = g.schedules[0];
    const int send = find_step(s, [](const Step& x) { return x.kind() == StepKind::Send; });
    auto& op = std::get<SendOp>(s.steps[send].op);
    ASSERT_GE(op.src.rows, 2);
    op.src.rows -= 1;
    EXPECT_TRUE(contains(check_schedules(g.problems, g.schedules), "bytes of"));
  }
  {  // Batch ids going backwards.
    Group g = original;
    Schedule& s = g.schedules[0];
    int last = -1;
    for (int i = 0; i < static_cast<int>(s.steps.size()); ++i)
      if (s.steps[i].batch >= 0) last = i;
    ASSERT_GE(last, 0);
    s.steps[last].batch = 0;
    const auto errors = check_schedules(g.problems, g.schedules);
    EXPECT_TRUE(contains(errors, "after batch")) << "decreasing batch id not reported";
  }
  {  // Collectives that disagree between ranks.
    Group g = make_group(Operation::GemmRs, 3, Algorithm::Sequential, Direction::Forward, 1);
    Schedule& s = g.schedules[2];
    const int coll = find_step(s, [](const Step& x) { return x.kind() == StepKind::Collective; });
    ASSERT_GE(coll, 0);
    auto& op = std::get<CollectiveOp>(s.steps[coll].op);
    std::swap(op.counts.front(), op.counts.back());
    const auto errors = check_schedules(g.problems, g.schedules);
    EXPECT_TRUE(contains(errors, "rank 0's is")) << "differing collective counts not reported";
  }
  {  // A compute step on the communication lane.
    Group g = original;
    g.schedules[0].steps[0].lane = kCommLane;
    EXPECT_TRUE(contains(check_schedules(g.problems, g.schedules), "compute step on lane"));
  }
}

// Reads of a peer's memory: a read whose region is never published (no
// ready signal), a publication whose release nobody waits for (the next
// execute could overwrite it mid-read), and a published region overwritten
// before its reader let it go.
TEST(ScheduleMutations, PeerReadsWithoutTheirSignalsAreReported) {
  for (bool one_shot : {false, true}) {
    const Group original =
        make_group(Operation::GemmAr, 3, Algorithm::Direct, Direction::Forward, 2, false, true, one_shot);
    ASSERT_TRUE(check_schedules(original.problems, original.schedules).empty());
    std::string why;
    ASSERT_FALSE(some_order_fails(original, 8, false, &why)) << why;
    {
      Group g = original;
      Schedule& s = g.schedules[1];
      const int publish = find_step(s, [](const Step& x) { return x.kind() == StepKind::Publish; });
      ASSERT_GE(publish, 0);
      erase_step(s, publish);
      const auto errors = check_schedules(g.problems, g.schedules);
      EXPECT_TRUE(contains(errors, "never publishes to it (no ready signal)"));
      EXPECT_TRUE(some_order_fails(g, 1, false, &why));
      EXPECT_NE(why.find("deadlock"), std::string::npos) << why;
    }
    {
      Group g = original;
      Schedule& s = g.schedules[2];
      const int await = find_step(s, [](const Step& x) { return x.kind() == StepKind::AwaitRelease; });
      ASSERT_GE(await, 0);
      erase_step(s, await);
      EXPECT_TRUE(contains(check_schedules(g.problems, g.schedules), "never waits for its release"));
    }
    {
      // Rank 0 zeroes a published product right after publishing it.
      Group g = original;
      Schedule& s = g.schedules[0];
      const int publish = find_step(s, [](const Step& x) { return x.kind() == StepKind::Publish; });
      ASSERT_GE(publish, 0);
      EpilogueOp scribble;
      scribble.dst = std::get<PublishOp>(s.steps[publish].op).src;
      Step step;
      step.op = scribble;
      step.lane = 0;
      step.deps = {publish};
      step.label = "scribble";
      s.steps.push_back(step);
      bool caught = false;
      for (int seed = 1; seed <= 32 && !caught; ++seed)
        caught = simulate(g.problems, g.schedules, options(seed)).summary().find("changed what it published") !=
                 std::string::npos;
      EXPECT_TRUE(caught);
    }
  }
}

// The simulator's own hazard checks: a buffer overwritten while it is being
// sent, and a step writing the caller's inputs.
TEST(ScheduleMutations, InFlightOverwriteAndInputWritesAreReported) {
  {
    Group g = make_group(Operation::GemmRs, 2, Algorithm::Ring, Direction::Forward, 1);
    // Rank 0: a step that scribbles on the slot being sent, ordered after
    // the send is posted but not after it completes.
    Schedule& s = g.schedules[0];
    const int send = find_step(s, [](const Step& x) { return x.kind() == StepKind::Send; });
    ASSERT_GE(send, 0);
    EpilogueOp scribble;
    scribble.dst = std::get<SendOp>(s.steps[send].op).src;
    scribble.dst_scale = Scalar::Zero;
    Step step;
    step.op = scribble;
    step.lane = 0;
    step.deps = s.steps[send].deps;
    step.label = "scribble";
    s.steps.push_back(step);
    bool caught = false;
    for (int seed = 1; seed <= 32 && !caught; ++seed) {
      const SimulationReport r = simulate(g.problems, g.schedules, options(seed));
      caught = r.summary().find("changed while the send was in flight") != std::string::npos;
    }
    EXPECT_TRUE(caught);
  }
  {
    Group g = make_group(Operation::AgGemm, 2, Algorithm::Sequential, Direction::Forward, 1);
    Schedule& s = g.schedules[1];
    EpilogueOp zero_a;
    zero_a.dst = Region{kBufferA, 0, 0, 1, 1};
    Step step;
    step.op = zero_a;
    step.label = "write A";
    s.steps.push_back(step);
    const SimulationReport r = simulate(g.problems, g.schedules, options(1));
    EXPECT_NE(r.summary().find("writes the caller's input A"), std::string::npos) << r.summary();
  }
}

}  // namespace
}  // namespace weave_test
