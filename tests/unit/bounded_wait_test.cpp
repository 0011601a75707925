// core/bounded_wait.hpp: a timeout counts only the time a rank spends
// polling for its peers, and a wait tests once more before it gives up.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/bounded_wait.hpp"
#include "core/error.hpp"
#include "expect_error.hpp"

namespace weave::internal {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

WaitBounds bounds(milliseconds timeout) {
  WaitBounds b;
  b.timeout = timeout;
  b.warning = milliseconds(0);  // no warning line on stderr
  return b;
}

std::string what() { return "step 1 (test)"; }

// Polls until the wait gives up; returns how long that took.
milliseconds poll_until_timeout(BoundedWait& wait) {
  const auto start = Clock::now();
  weave_test::expect_error([&] {
    while (Clock::now() - start < std::chrono::seconds(30)) wait.idle(what);
  }, WEAVE_ERROR_TIMEOUT, {"waited", "step 1 (test)"});
  return std::chrono::duration_cast<milliseconds>(Clock::now() - start);
}

TEST(BoundedWait, GivesUpAfterTheTimeoutOfPolling) {
  BoundedWait wait(bounds(milliseconds(200)), nullptr, "rank", "the call");
  const milliseconds took = poll_until_timeout(wait);
  EXPECT_GE(took.count(), 200);
  EXPECT_LT(took.count(), 5000);
}

TEST(BoundedWait, APauseBetweenPollsIsNotWaiting) {
  // A rank stopped (SIGSTOP, descheduled) longer than the timeout between
  // two polls did not wait for its peers meanwhile: its next poll must not
  // give up, or it could fail a call that its peers complete.
  BoundedWait wait(bounds(milliseconds(200)), nullptr, "rank", "the call");
  wait.idle(what);
  std::this_thread::sleep_for(milliseconds(400));
  EXPECT_NO_THROW(wait.idle(what));
  EXPECT_NO_THROW(wait.idle(what));
  // What it had waited before the pause still counts; polling on, it gives
  // up after the rest of the timeout.
  const milliseconds took = poll_until_timeout(wait);
  EXPECT_GE(took.count(), 150);
  EXPECT_LT(took.count(), 5000);
}

TEST(BoundedWait, WaitBeforeAPauseStillCounts) {
  BoundedWait wait(bounds(milliseconds(400)), nullptr, "rank", "the call");
  const auto start = Clock::now();
  while (Clock::now() - start < milliseconds(300)) wait.idle(what);
  std::this_thread::sleep_for(milliseconds(500));
  const milliseconds took = poll_until_timeout(wait);
  EXPECT_LT(took.count(), 300);  // about 100 ms of the 400 were left
}

TEST(BoundedWait, TestsOnceMoreAfterTheTimeoutPassed) {
  // Past the timeout, the first idle() returns so that the caller's loop
  // tests what it waits for once more; the next one gives up. The wait was
  // made before `start`, so a poll made later than the timeout after
  // `start` is past the wait's timeout too.
  const milliseconds timeout(50);
  BoundedWait wait(bounds(timeout), nullptr, "rank", "the call");
  const auto start = Clock::now();
  int returned_past_timeout = 0;
  weave_test::expect_error([&] {
    for (;;) {
      const bool past = Clock::now() - start > timeout;
      wait.idle(what);
      if (past) ++returned_past_timeout;
      std::this_thread::sleep_for(milliseconds(1));
    }
  }, WEAVE_ERROR_TIMEOUT, {"waited"});
  EXPECT_EQ(returned_past_timeout, 1);
}

TEST(BoundedWait, ProgressRestartsTheClock) {
  BoundedWait wait(bounds(milliseconds(100)), nullptr, "rank", "the call");
  const auto start = Clock::now();
  EXPECT_NO_THROW({
    while (Clock::now() - start < milliseconds(300)) {
      wait.idle(what);
      wait.progressed();
    }
  });
}

}  // namespace
}  // namespace weave::internal
