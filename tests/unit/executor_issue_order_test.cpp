// The order in which the executor enqueues an execute's work on a
// stream-ordered transport (exec::IssueOrder): transfers that are ready go
// first (the default); the compute steps that wait for nothing go ahead of
// them (GemmsFirst); or a batch of transfers and a compute step take turns
// (Alternate). A recording backend and transport
// stand in for CUDA and the copy engines; the schedule is the library's own.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "exec/executor.hpp"
#include "group_problem.hpp"
#include "plan/schedule.hpp"
#include "transport/transport.hpp"

namespace weave_test {
namespace {

using weave::internal::Operation;
using weave::internal::exec::IssueOrder;
using weave::internal::plan::Algorithm;
using weave::internal::plan::Direction;
using weave::internal::plan::Schedule;
using weave::internal::plan::ScheduleOptions;
using weave::internal::plan::Step;
using weave::internal::plan::StepKind;

// What reached a stream, in order: the index of each compute step, and of
// the first step of each batch of transfers (entries), or of every step of
// each batch (every).
struct Log {
  std::vector<int> entries;
  std::vector<int> every;
  const Schedule* schedule = nullptr;
  int index(const Step& step) const { return static_cast<int>(&step - schedule->steps.data()); }
  // The step whose operation `op` is.
  template <typename Op>
  void compute(const Op& op) {
    for (const Step& s : schedule->steps)
      if (const Op* held = std::get_if<Op>(&s.op); held == &op) {
        entries.push_back(index(s));
        every.push_back(index(s));
      }
  }
};

class RecordingBackend final : public weave::internal::exec::ComputeBackend {
 public:
  explicit RecordingBackend(Log& log) : log_(log) {}
  std::string name() const override { return "recording"; }
  bool asynchronous() const override { return true; }
  void* workspace() override { return nullptr; }
  void gemm(const weave::internal::plan::GemmOp& op, int, const weave::internal::exec::Bindings&,
            const weave::internal::exec::Scalars&, const weave::internal::exec::ProgressHook&) override {
    log_.compute(op);
  }
  void epilogue(const weave::internal::plan::EpilogueOp& op, int, const weave::internal::exec::Bindings&,
                const weave::internal::exec::Scalars&) override {
    log_.compute(op);
  }
  void quantize(const weave::internal::plan::QuantizeOp& op, int, const weave::internal::exec::Bindings&) override {
    log_.compute(op);
  }
  void rearrange(const weave::internal::plan::RearrangeOp& op, int, const weave::internal::exec::Bindings&) override {
    log_.compute(op);
  }

 private:
  Log& log_;
};

class RecordingTransport final : public weave::internal::transport::Transport {
 public:
  explicit RecordingTransport(Log& log) : log_(log) {}
  std::string name() const override { return "recording"; }
  bool stream_ordered() const override { return true; }
  void enqueue(const std::vector<const Step*>& batch, const weave::internal::exec::Bindings&, void*) override {
    log_.entries.push_back(log_.index(*batch.front()));
    for (const Step* s : batch) log_.every.push_back(log_.index(*s));
  }

 private:
  Log& log_;
};

// Rank 0's schedule: AG-GEMM's ring, the reductions' direct algorithm.
Schedule schedule_of_rank_0(Operation operation, int ranks) {
  GroupCase g;
  g.operation = operation;
  g.ranks = ranks;
  g.m = g.n = g.k = 64 * ranks;
  ScheduleOptions o;
  o.algorithm = operation == Operation::AgGemm ? Algorithm::Ring : Algorithm::Direct;
  o.direction = Direction::Forward;
  return weave::internal::plan::build_schedule(make_group_problems(g)[0], o);
}

Log run_recorded(const Schedule& schedule, IssueOrder order) {
  Log log;
  log.schedule = &schedule;
  RecordingBackend backend(log);
  RecordingTransport transport(log);
  weave::internal::exec::ExecutorOptions options;
  options.issue_order = order;
  weave::internal::exec::Executor executor(schedule, backend, transport, options);
  weave::internal::exec::Bindings bindings;
  bindings.schedule = &schedule;
  executor.run(bindings, weave::internal::exec::Scalars{}, nullptr);
  return log;
}

std::vector<int> issue_order(const Schedule& schedule, IssueOrder order) {
  return run_recorded(schedule, order).entries;
}

// Where in `order` the first step that `matches` reached its stream (order.size(): none).
template <typename Matches>
std::size_t first(const std::vector<int>& order, Matches matches) {
  return static_cast<std::size_t>(std::find_if(order.begin(), order.end(), matches) - order.begin());
}
std::size_t first_gemm(const Schedule& s, const std::vector<int>& order) {
  return first(order, [&](int step) { return s.steps[step].kind() == StepKind::Gemm; });
}
std::size_t first_transfer(const Schedule& s, const std::vector<int>& order) {
  return first(order, [&](int step) { return s.steps[step].is_comm(); });
}
// Where the last transfer reached its stream (order.size(): none).
std::size_t last_transfer(const Schedule& s, const std::vector<int>& order) {
  const auto last = std::find_if(order.rbegin(), order.rend(), [&](int step) { return s.steps[step].is_comm(); });
  return last == order.rend() ? order.size() : static_cast<std::size_t>(order.rend() - last - 1);
}

std::vector<int> sorted(std::vector<int> order) {
  std::sort(order.begin(), order.end());
  return order;
}

std::string shown(const Schedule& s, const std::vector<int>& order) {
  std::string out;
  for (int step : order) out += (out.empty() ? "" : "; ") + std::to_string(step) + " " + s.steps[step].label;
  return out;
}

TEST(ExecutorIssueOrder, AgGemmRingEnqueuesEveryTransferBeforeItsFirstGemmByDefault) {
  for (int ranks : {2, 3, 4}) {
    const Schedule s = schedule_of_rank_0(Operation::AgGemm, ranks);
    const std::vector<int> order = issue_order(s, IssueOrder::TransfersFirst);
    // Every transfer of the ring is ready once the execute starts (a forward
    // waits for its receive on the stream only), so the GEMM of the rank's
    // own chunk, which waits for nothing, reaches its stream after all of them.
    ASSERT_LT(last_transfer(s, order), order.size()) << shown(s, order);
    EXPECT_GT(first_gemm(s, order), last_transfer(s, order)) << ranks << " ranks: " << shown(s, order);
  }
}

TEST(ExecutorIssueOrder, GemmsFirstEnqueuesTheComputeStepsThatWaitForNothingAheadOfTheTransfers) {
  for (Operation op : {Operation::AgGemm, Operation::GemmRs, Operation::GemmAr})
    for (int ranks : {2, 3, 4}) {
      const Schedule s = schedule_of_rank_0(op, ranks);
      const std::vector<int> order = issue_order(s, IssueOrder::GemmsFirst);
      // A GEMM before the first transfer, and before it only compute steps
      // that depend on nothing, in schedule order.
      const std::size_t transfer = first_transfer(s, order);
      ASSERT_LT(transfer, order.size()) << shown(s, order);
      EXPECT_LT(first_gemm(s, order), transfer) << ranks << " ranks: " << shown(s, order);
      for (std::size_t i = 0; i < transfer; ++i) {
        EXPECT_TRUE(s.steps[order[i]].deps.empty()) << ranks << " ranks: " << shown(s, order);
        if (i > 0) {
          EXPECT_LT(order[i - 1], order[i]) << ranks << " ranks: " << shown(s, order);
        }
      }
      // Every step still reaches its stream once: the default order's entries.
      EXPECT_EQ(sorted(order), sorted(issue_order(s, IssueOrder::TransfersFirst))) << ranks << " ranks";
    }
}

TEST(ExecutorIssueOrder, AlternateEnqueuesABatchOfTransfersThenAComputeStepInTurn) {
  for (Operation op : {Operation::AgGemm, Operation::GemmRs, Operation::GemmAr})
    for (int ranks : {2, 3, 4}) {
      const Schedule s = schedule_of_rank_0(op, ranks);
      const std::vector<int> order = issue_order(s, IssueOrder::Alternate);
      // Never two batches of transfers back to back while compute steps
      // remain: each is followed by a compute step, until the last of those.
      std::size_t computes_left = 0;
      for (int step : order) computes_left += s.steps[step].is_comm() ? 0 : 1;
      for (std::size_t i = 0; i + 1 < order.size(); ++i) {
        const bool transfer = s.steps[order[i]].is_comm();
        if (!transfer) --computes_left;
        if (transfer && computes_left > 0) {
          EXPECT_FALSE(s.steps[order[i + 1]].is_comm()) << ranks << " ranks: " << shown(s, order);
        }
      }
      EXPECT_EQ(sorted(order), sorted(issue_order(s, IssueOrder::TransfersFirst))) << ranks << " ranks";
      if (op == Operation::AgGemm) {
        // The ring's first send (after what it sends is packed, where it
        // is), then the GEMM of the rank's own chunk, which waits for nothing.
        const std::size_t transfer = first_transfer(s, order);
        ASSERT_LT(transfer + 1, order.size()) << shown(s, order);
        EXPECT_EQ(first_gemm(s, order), transfer + 1) << ranks << " ranks: " << shown(s, order);
        EXPECT_TRUE(s.steps[order[transfer + 1]].deps.empty()) << ranks << " ranks: " << shown(s, order);
      }
    }
}

// Whatever the order, a step reaches its stream only after every step it
// depends on (a stream-ordered transport and an asynchronous backend order
// the work on the device by the events of steps already enqueued), and every
// step reaches it exactly once.
TEST(ExecutorIssueOrder, EveryOrderEnqueuesAStepAfterEverythingItDependsOn) {
  for (IssueOrder order : {IssueOrder::TransfersFirst, IssueOrder::GemmsFirst, IssueOrder::Alternate})
    for (Operation op : {Operation::AgGemm, Operation::GemmRs, Operation::GemmAr})
      for (int ranks : {1, 2, 3, 4}) {
        const Schedule s = schedule_of_rank_0(op, ranks);
        const std::vector<int> every = run_recorded(s, order).every;
        std::vector<int> position(s.steps.size(), -1);
        for (std::size_t i = 0; i < every.size(); ++i) {
          const int step = every[i];
          ASSERT_EQ(position[step], -1) << "step " << step << " enqueued twice; " << shown(s, every);
          position[step] = static_cast<int>(i);
        }
        for (std::size_t step = 0; step < s.steps.size(); ++step) {
          ASSERT_GE(position[step], 0) << "step " << step << " never enqueued; " << shown(s, every);
          for (int dep : s.steps[step].deps) {
            EXPECT_LT(position[dep], position[step])
                << static_cast<int>(order) << ", " << ranks << " ranks: step " << step << " before its dependency "
                << dep << "; " << shown(s, every);
          }
        }
      }
}

}  // namespace
}  // namespace weave_test
