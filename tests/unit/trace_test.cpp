// exec::Trace: spans added from several threads at once (the progress
// thread and the calling thread of a host execute) all arrive, once each.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "exec/trace.hpp"

namespace {

using weave::internal::exec::Trace;
using weave::internal::exec::TraceSpan;

TEST(Trace, KeepsEverySpanAddedFromSeveralThreadsAtOnce) {
  constexpr int kThreads = 4, kSpansEach = 20000;
  Trace trace;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&trace, t] {
      for (int i = 0; i < kSpansEach; ++i) {
        if (i % 2 == 0)
          trace.add(t * kSpansEach + i, "track " + std::to_string(t), "span", i, i + 1);
        else
          trace.add_span(TraceSpan{t * kSpansEach + i, "track " + std::to_string(t), "span", double(i), i + 1.0});
      }
    });
  for (std::thread& thread : threads) thread.join();
  ASSERT_EQ(trace.spans().size(), static_cast<std::size_t>(kThreads * kSpansEach));
  std::vector<int> steps;
  for (const TraceSpan& span : trace.spans()) {
    EXPECT_EQ(span.track, "track " + std::to_string(span.step / kSpansEach));
    steps.push_back(span.step);
  }
  std::sort(steps.begin(), steps.end());
  for (int i = 0; i < kThreads * kSpansEach; ++i) ASSERT_EQ(steps[static_cast<std::size_t>(i)], i) << "span " << i;
}

TEST(Trace, CopiesHoldTheSpansAndTheClock) {
  Trace trace;
  trace.add(3, "communication", "send", 1.5, 2.5);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Trace copy(trace);
  // The copy's clock starts where the original's did, not at the copy.
  EXPECT_GE(copy.now_us(), 20000.0);
  trace.add(4, "compute lane 0", "gemm", 3, 4);
  ASSERT_EQ(copy.spans().size(), 1u);
  EXPECT_EQ(copy.spans()[0].step, 3);
  EXPECT_EQ(copy.spans()[0].name, "send");
  EXPECT_DOUBLE_EQ(copy.spans()[0].end_us, 2.5);
  Trace assigned;
  assigned = trace;
  ASSERT_EQ(assigned.spans().size(), 2u);
  EXPECT_EQ(assigned.spans()[1].track, "compute lane 0");
  assigned.clear();
  EXPECT_TRUE(assigned.spans().empty());
  EXPECT_EQ(trace.spans().size(), 2u);
}

}  // namespace
