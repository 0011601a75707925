// The schedules a plan's calibration runs (plan/calibration_schedules.hpp):
// a collective's parts follow the plan's uneven rows where it is given them
// (and are equal otherwise), and the exchange within and between nodes at
// once is one batch of both.
#include <gtest/gtest.h>

#include <numeric>
#include <variant>

#include "plan/calibration_schedules.hpp"

namespace weave_test {
namespace {

using namespace weave::internal::plan;
using weave::internal::DType;
using weave::internal::Memory;

TEST(CalibrationSchedules, PartsFollowTheWeights) {
  EXPECT_EQ(calibration_parts(1000, 4, {}), (std::vector<int64_t>{250, 250, 250, 250}));
  // The benchmark's uneven rows of 8192 over 4 ranks, scaled to 8192 elements.
  const std::vector<int64_t> rows{1792, 1952, 2136, 2312};
  EXPECT_EQ(calibration_parts(8192, 4, rows), rows);
  const std::vector<int64_t> half = calibration_parts(4096, 4, rows);
  EXPECT_EQ(half, (std::vector<int64_t>{896, 976, 1068, 1156}));
  // An empty shard gets an empty part; the parts never exceed the elements.
  const std::vector<int64_t> with_empty = calibration_parts(1001, 3, {0, 1, 2});
  EXPECT_EQ(with_empty[0], 0);
  EXPECT_LE(std::accumulate(with_empty.begin(), with_empty.end(), int64_t{0}), 1001);
  EXPECT_GT(with_empty[2], with_empty[1]);
  // Weights of another length, or none that count: equal parts.
  EXPECT_EQ(calibration_parts(900, 3, {1, 2}), (std::vector<int64_t>{300, 300, 300}));
  EXPECT_EQ(calibration_parts(900, 3, {0, 0, 0}), (std::vector<int64_t>{300, 300, 300}));
}

TEST(CalibrationSchedules, UnevenAllGatherTakesEachRanksPart) {
  const std::vector<int64_t> rows{1792, 1952, 2136, 2312};
  for (int r = 0; r < 4; ++r) {
    const auto p = calibration_problem(4, r, DType::BF16, Memory::Host);
    const Schedule s = collective_calibration(p, CollectiveKind::AllGather, 8192, DType::BF16, rows);
    ASSERT_EQ(s.steps.size(), 1u);
    const auto& op = std::get<CollectiveOp>(s.steps[0].op);
    EXPECT_EQ(op.counts, rows);
    EXPECT_EQ(op.send.row0, std::accumulate(rows.begin(), rows.begin() + r, int64_t{0})) << r;
    EXPECT_EQ(op.send.rows, rows[static_cast<std::size_t>(r)]);
    EXPECT_EQ(op.recv.rows, 8192);
    // The same call without the rows: equal parts, as before.
    const Schedule even_schedule = collective_calibration(p, CollectiveKind::AllGather, 8192, DType::BF16);
    const auto& even = std::get<CollectiveOp>(even_schedule.steps[0].op);
    EXPECT_EQ(even.counts, (std::vector<int64_t>{2048, 2048, 2048, 2048}));
    EXPECT_EQ(even.send.row0, 2048 * r);
  }
}

TEST(CalibrationSchedules, BothLevelsExchangeInOneBatch) {
  const auto p = calibration_problem(4, 0, DType::BF16, Memory::Device);
  const Schedule s = concurrent_exchange_calibration(p, {1, 1}, {2, 2}, 1024);
  ASSERT_EQ(s.steps.size(), 4u);
  std::vector<int> sends, receives;
  for (const Step& step : s.steps) {
    EXPECT_EQ(step.batch, s.steps[0].batch);
    if (const auto* send = std::get_if<SendOp>(&step.op)) sends.push_back(send->peer);
    if (const auto* recv = std::get_if<RecvOp>(&step.op)) receives.push_back(recv->peer);
  }
  EXPECT_EQ(sends, (std::vector<int>{1, 2}));
  EXPECT_EQ(receives, (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace weave_test
