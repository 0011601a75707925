// Sizes that do not fit 64 bits, each case of the audit that found them
// accepted: every one is now WEAVE_ERROR_INVALID_VALUE naming the quantity,
// where the size is computed (descriptor extents, count sums, workspace
// bytes, region offsets, timeouts, chunk numbering).
#include <gtest/gtest.h>

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/matrix.hpp"
#include "core/split.hpp"
#include "core/wait_bounds.hpp"
#include "exec/bindings.hpp"
#include "expect_error.hpp"
#include "group_problem.hpp"
#include "group_schedules.hpp"
#include "plan/planner.hpp"
#include "plan/schedule.hpp"
#include "transport/registry.hpp"

namespace weave_test {
namespace {

using weave::internal::DType;
using weave::internal::Operation;
using weave::internal::Order;
using weave::internal::plan::Algorithm;
using weave::internal::plan::Direction;
using weave::internal::plan::ScheduleOptions;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

template <class Body>
void expect_invalid_value(Body&& body, std::initializer_list<const char*> words) {
  expect_error(body, WEAVE_ERROR_INVALID_VALUE, words);
}

// Every algorithm in `algorithms` refuses to build `problem`'s schedule.
void expect_every_algorithm_refuses(const weave::internal::Problem& problem,
                                    std::initializer_list<Algorithm> algorithms, int chunks, const char* names) {
  for (Algorithm algorithm : algorithms) {
    ScheduleOptions options;
    options.algorithm = algorithm;
    options.chunks_per_shard = chunks;
    expect_invalid_value([&] { weave::internal::plan::build_schedule(problem, options); }, {names});
  }
}

// The problems of a small GEMM-RS over two ranks.
std::vector<weave::internal::Problem> small_problems() {
  GroupCase g;
  g.operation = Operation::GemmRs;
  g.ranks = 2;
  g.m = 8;
  g.n = 4;
  g.k = 6;
  return make_group_problems(g);
}

weave::internal::Problem small_problem() { return small_problems()[0]; }

// A replicated 2^32 x 2^32 matrix spans 2^64 elements; it used to report 0.
TEST(SizeOverflow, LocalElementsOfAHugeBlock) {
  const int64_t n = int64_t{1} << 32;
  expect_invalid_value([&] { weave::internal::block_elements(n, n, n, Order::ColMajor, "the local elements of A"); },
                       {"the local elements of A"});
  expect_invalid_value([&] { weave::internal::block_elements(n, n, n, Order::RowMajor, "the local elements of A"); },
                       {"the local elements of A"});
  // 2^31 x 2^32 is 2^63 elements, one more than int64_t holds.
  expect_invalid_value([&] { weave::internal::block_elements(n / 2, n, n / 2, Order::ColMajor, "x"); }, {"x"});
  EXPECT_EQ(weave::internal::block_elements(n / 2, n - 1, n / 2, Order::ColMajor, "x"), (n / 2) * (n - 1));
}

// ld = 2^62 on a 1 x 5 block spans 4 * 2^62 + 1 elements; it used to report 1.
TEST(SizeOverflow, LeadingDimensionThatWraps) {
  const int64_t ld = int64_t{1} << 62;
  expect_invalid_value([&] { weave::internal::block_elements(1, 5, ld, Order::ColMajor, "the local elements of C"); },
                       {"the local elements of C", "4611686018427387904"});
  expect_invalid_value([&] { weave::internal::block_elements(5, 1, ld, Order::RowMajor, "x"); }, {"x"});
  // One column (or an empty block) never steps by ld.
  EXPECT_EQ(weave::internal::block_elements(1, 1, ld, Order::ColMajor, "x"), 1);
  EXPECT_EQ(weave::internal::block_elements(0, 5, ld, Order::ColMajor, "x"), 0);
}

// A GEMM-RS whose C has such an ld wrote far outside C in its epilogue: the
// offset of a region's first element is checked where a pointer is made.
TEST(SizeOverflow, RegionOffsetsAreChecked) {
  std::vector<weave::internal::Problem> problems = small_problems();
  problems[0].c.ld = int64_t{1} << 62;
  ScheduleOptions options;
  options.algorithm = Algorithm::Direct;
  const weave::internal::plan::Schedule s = weave::internal::plan::build_schedule(problems[0], options);
  const weave::internal::plan::Region column_3{weave::internal::plan::kBufferC, 0, 3, 1, 1};
  expect_invalid_value([&] { s.offset_from_binding(column_3); }, {"region", "C"});
  double c[1] = {0};
  weave::internal::exec::Bindings bindings;
  bindings.schedule = &s;
  bindings.user[weave::internal::plan::kBufferC] = c;
  expect_invalid_value([&] { bindings.resolve(column_3); }, {"region"});
  const weave::internal::plan::Region column_0{weave::internal::plan::kBufferC, 0, 0, 1, 1};
  EXPECT_EQ(bindings.resolve(column_0).data, static_cast<void*>(c));
}

// Counts [INT64_MAX] x 3 used to pass the sum check (their sum wrapped).
TEST(SizeOverflow, CountsWhoseSumWraps) {
  expect_invalid_value([] { weave::internal::Split::from_counts({kMax, kMax, kMax}, kMax - 2, "matrix.row_counts"); },
                       {"the sum of matrix.row_counts"});
  expect_invalid_value([] { weave::internal::Split::from_counts({1, kMax}, 0, "matrix.col_counts"); },
                       {"matrix.col_counts"});
  // The largest sum that fits is fine.
  EXPECT_EQ(weave::internal::Split::from_counts({kMax - 1, 1}, kMax, "c").total(), kMax);
}

// AG-GEMM with M = K = 2^40 used to be accepted with 0 bytes of workspace
// (2^83 bytes of gathered A, wrapped).
TEST(SizeOverflow, WorkspaceOfAHugeAgGemm) {
  GroupCase g;
  g.operation = Operation::AgGemm;
  g.ranks = 4;
  g.m = g.k = int64_t{1} << 40;
  g.n = 8;
  expect_every_algorithm_refuses(make_group_problems(g)[1], {Algorithm::Ring, Algorithm::Sequential}, 1,
                                 "workspace buffer gathered op(A)");
}

// Reductions whose partial sums do not fit, and a workspace whose buffers
// each fit but whose total does not.
TEST(SizeOverflow, WorkspaceOfHugeReductions) {
  GroupCase g;
  g.operation = Operation::GemmRs;
  g.ranks = 2;
  g.m = g.n = int64_t{1} << 40;
  g.k = 8;
  expect_every_algorithm_refuses(make_group_problems(g)[0],
                                 {Algorithm::Ring, Algorithm::Sequential, Algorithm::Direct}, 2, "workspace buffer");
  // A ring of two chunks over two ranks keeps four partial-sum slots of
  // 2^30 x 2^28 f64: 2^61 bytes each, 2^63 together.
  g.m = int64_t{1} << 32;
  g.n = int64_t{1} << 28;
  expect_every_algorithm_refuses(make_group_problems(g)[0], {Algorithm::Ring}, 2, "the plan's workspace bytes");
}

// Chunks are numbered as ints, a reduction's second phase above its first
// (MPI tags up to 2 x group size x chunks): a count that does not fit is
// refused before anything is built.
TEST(SizeOverflow, ChunkNumbersOfAHugeGroup) {
  weave::internal::Problem p;
  p.operation = Operation::GemmAr;
  p.group_size = 1 << 30;
  ScheduleOptions options;
  options.chunks_per_shard = 4;
  expect_invalid_value([&] { weave::internal::plan::build_schedule(p, options); },
                       {"the chunks of the schedule's two phases", "1073741824 ranks"});
}

weave::internal::plan::Capabilities host_caps() {
  weave::internal::plan::Capabilities caps;
  caps.mpi_thread_level = MPI_THREAD_SINGLE;
  caps.transports = weave::internal::transport::transport_descriptions();
  return caps;
}

// WEAVE_TIMEOUT=1e10 seconds used to overflow the deadline, so every
// execute timed out at once; the longest accepted timeout leaves
// steady_clock::now() + timeout representable.
TEST(SizeOverflow, TimeoutsThatWouldOverflowTheDeadline) {
  const weave_plan_desc_t desc{};
  for (const char* value : {"10000000000", "99999999999999999999", "9223372036854775807"})
    expect_invalid_value(
        [&] { weave::internal::plan::resolve_options(desc, small_problem(), {{"WEAVE_TIMEOUT", value}}, host_caps()); },
        {"WEAVE_TIMEOUT", value});
  const std::string longest = std::to_string(weave::internal::kMaxTimeoutSeconds);
  const auto r =
      weave::internal::plan::resolve_options(desc, small_problem(), {{"WEAVE_TIMEOUT", longest}}, host_caps());
  EXPECT_EQ(r.timeout, std::chrono::seconds(weave::internal::kMaxTimeoutSeconds));
  const auto now = std::chrono::steady_clock::now();
  EXPECT_GT(now + r.timeout, now);
}

// Counts of the plan descriptor and the environment that used to wrap or be
// truncated to int (WEAVE_CHUNKS=2^32+1 became 1 chunk).
TEST(SizeOverflow, PlanCountsOutOfRange) {
  weave_plan_desc_t desc{};
  desc.chunks_per_shard = std::numeric_limits<int32_t>::max();
  expect_invalid_value(
      [&] { weave::internal::plan::resolve_options(desc, small_problem(), {}, host_caps()); },
      {"chunks_per_shard = 2147483647", "1024"});
  desc = {};
  desc.compute_streams = 65;
  expect_invalid_value(
      [&] { weave::internal::plan::resolve_options(desc, small_problem(), {}, host_caps()); },
      {"compute_streams = 65", "64"});
  desc = {};
  for (const char* variable : {"WEAVE_CHUNKS", "WEAVE_COMPUTE_STREAMS", "WEAVE_SM_MARGIN"})
    expect_invalid_value(
        [&] {
          weave::internal::plan::resolve_options(desc, small_problem(), {{variable, "4294967297"}}, host_caps());
        },
        {variable, "4294967297"});
  desc.chunks_per_shard = weave::internal::plan::kMaxChunksPerShard;
  EXPECT_EQ(weave::internal::plan::resolve_options(desc, small_problem(), {}, host_caps()).schedule.chunks_per_shard,
            weave::internal::plan::kMaxChunksPerShard);
}

}  // namespace
}  // namespace weave_test
