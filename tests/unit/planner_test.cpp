// plan::resolve_options: explicit choices, environment overrides of the
// automatic ones, and the exact status (with a message naming the argument)
// for every request that cannot be satisfied.
#include <gtest/gtest.h>

#include <mpi.h>

#include <memory>
#include <set>
#include <string>

#include "core/error.hpp"
#include "group_problem.hpp"
#include "plan/environment_syntax.hpp"
#include "plan/planner.hpp"
#include "plan/wire.hpp"
#include "transport/registry.hpp"

namespace weave_test {
namespace {

using namespace weave::internal::plan;

weave::internal::Problem host_problem(weave::internal::Operation op = weave::internal::Operation::GemmRs, int P = 4,
                            weave::internal::DType dtype = weave::internal::DType::F64) {
  GroupCase g;
  g.operation = op;
  g.ranks = P;
  g.m = 8;
  g.n = 4;
  g.k = 6;
  g.dtype = dtype;
  return make_group_problems(g)[0];
}

weave::internal::Problem device_problem(weave::internal::DType dtype = weave::internal::DType::F16) {
  weave::internal::Problem p = host_problem(weave::internal::Operation::AgGemm, 4, dtype);
  p.memory = weave::internal::Memory::Device;
  return p;
}

// The transport table's rows as a build has them: MPI alone, or every
// optional transport compiled in.
std::vector<TransportDescription> transport_table(bool optional_ones_compiled) {
  std::vector<TransportDescription> rows = weave::internal::transport::transport_descriptions();
  for (TransportDescription& t : rows) t.compiled = optional_ones_compiled || t.id == Transport::Mpi;
  return rows;
}

// A bf16 device problem of M x 8192 x 8192 over `ranks` ranks, rank 0's
// view (M = 8192 over 4 ranks: 275 GFLOP per rank).
weave::internal::Problem device_case(weave::internal::Operation op, int64_t m = 8192, int ranks = 4) {
  GroupCase g;
  g.operation = op;
  g.ranks = ranks;
  g.m = m;
  g.n = g.k = 8192;
  g.dtype = weave::internal::DType::BF16;
  weave::internal::Problem p = make_group_problems(g)[0];
  p.memory = weave::internal::Memory::Device;
  return p;
}

Capabilities host_only() {
  Capabilities caps;
  caps.mpi_thread_level = MPI_THREAD_SINGLE;
  caps.transports = transport_table(false);
  return caps;
}

Capabilities everything() {
  Capabilities caps;
  caps.cuda = true;
  caps.transports = transport_table(true);
  caps.mpi_thread_level = MPI_THREAD_MULTIPLE;
  return caps;
}

// Expects resolve_options to fail with `status` and a message containing `names`.
void expect_failure(const weave_plan_desc_t& desc, const weave::internal::Problem& p, const Environment& env,
                    const Capabilities& caps, weave_status_t status, const std::string& names) {
  try {
    resolve_options(desc, p, env, caps);
    ADD_FAILURE() << "accepted; expected " << weave::internal::status_name(status) << " naming " << names;
  } catch (const weave::internal::Error& e) {
    EXPECT_EQ(e.status(), status) << weave::internal::status_name(e.status()) << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
  }
}

TEST(Planner, AutomaticHostChoices) {
  const weave_plan_desc_t desc{};
  const Resolved r = resolve_options(desc, host_problem(), {}, host_only());
  EXPECT_EQ(r.backend, Backend::Host);
  EXPECT_EQ(r.transport, Transport::Mpi);
  EXPECT_EQ(r.schedule.algorithm, Algorithm::Ring);
  EXPECT_EQ(r.schedule.direction, Direction::Forward);
  EXPECT_EQ(r.schedule.chunks_per_shard, 2);  // a host reduction: two chunks
  EXPECT_EQ(r.schedule.compute_lanes, 1);
  EXPECT_EQ(r.progress, ProgressMode::Tiles);  // MPI_THREAD_SINGLE, one core per rank
  EXPECT_EQ(r.timeout.count(), 300000);
  EXPECT_FALSE(r.schedule.gathered_output);
  const Resolved ag = resolve_options(desc, host_problem(weave::internal::Operation::AgGemm), {}, host_only());
  EXPECT_EQ(ag.schedule.chunks_per_shard, 1);
}

TEST(Planner, ProgressThreadWhenCoresAndMpiAllowIt) {
  const weave_plan_desc_t desc{};
  Capabilities caps = host_only();
  caps.cores_per_rank = 8;
  EXPECT_EQ(resolve_options(desc, host_problem(), {}, caps).progress, ProgressMode::Tiles)
      << "MPI_THREAD_SINGLE forbids a progress thread";
  caps.mpi_thread_level = MPI_THREAD_SERIALIZED;
  EXPECT_EQ(resolve_options(desc, host_problem(), {}, caps).progress, ProgressMode::Thread);
  caps.cores_per_rank = 1;
  EXPECT_EQ(resolve_options(desc, host_problem(), {}, caps).progress, ProgressMode::Tiles)
      << "a progress thread without a core of its own only competes with BLAS";
  EXPECT_EQ(resolve_options(desc, host_problem(), {{"WEAVE_PROGRESS", "thread"}}, caps).progress,
            ProgressMode::Thread);
}

TEST(Planner, OneRankRunsTheLocalGemmAndSaysSo) {
  weave_plan_desc_t desc{};
  desc.algorithm = WEAVE_ALGORITHM_RING;
  const Resolved r = resolve_options(desc, host_problem(weave::internal::Operation::GemmAr, 1), {}, host_only());
  EXPECT_EQ(r.schedule.algorithm, Algorithm::Sequential);
  EXPECT_NE(r.notes.find("one rank"), std::string::npos) << r.notes;
}

TEST(Planner, ExplicitValuesAreKept) {
  weave_plan_desc_t desc{};
  desc.operation = WEAVE_AG_GEMM;
  desc.algorithm = WEAVE_ALGORITHM_SEQUENTIAL;
  desc.backend = WEAVE_BACKEND_HOST;
  desc.transport = WEAVE_TRANSPORT_MPI;
  desc.direction = WEAVE_DIRECTION_BACKWARD;
  desc.chunks_per_shard = 3;
  desc.progress = WEAVE_PROGRESS_THREAD;
  desc.timeout_ms = 1234;
  desc.flags = WEAVE_FLAG_GATHERED_OUTPUT | WEAVE_FLAG_TRACE;
  Capabilities caps = host_only();
  caps.mpi_thread_level = MPI_THREAD_SERIALIZED;
  const Resolved r = resolve_options(desc, host_problem(weave::internal::Operation::AgGemm), {}, caps);
  EXPECT_EQ(r.schedule.algorithm, Algorithm::Sequential);
  EXPECT_EQ(r.schedule.direction, Direction::Backward);
  EXPECT_EQ(r.schedule.chunks_per_shard, 3);
  EXPECT_EQ(r.progress, ProgressMode::Thread);
  EXPECT_EQ(r.timeout.count(), 1234);
  EXPECT_TRUE(r.schedule.gathered_output);
  EXPECT_EQ(r.flags, WEAVE_FLAG_GATHERED_OUTPUT | WEAVE_FLAG_TRACE);

  desc.timeout_ms = -1;
  EXPECT_LT(resolve_options(desc, host_problem(weave::internal::Operation::AgGemm), {}, caps).timeout.count(), 0)
      << "a negative timeout means wait forever";
}

TEST(Planner, EnvironmentOverridesAutomaticChoices) {
  const weave_plan_desc_t desc{};
  Capabilities caps = host_only();
  caps.mpi_thread_level = MPI_THREAD_MULTIPLE;
  const Environment env = {{"WEAVE_ALGORITHM", "sequential"}, {"WEAVE_TRANSPORT", "mpi"},
                           {"WEAVE_CHUNKS", "3"},             {"WEAVE_DIRECTION", "backward"},
                           {"WEAVE_PROGRESS", "thread"},      {"WEAVE_TIMEOUT", "5"}};
  const Resolved r = resolve_options(desc, host_problem(), env, caps);
  EXPECT_EQ(r.schedule.algorithm, Algorithm::Sequential);
  EXPECT_EQ(r.transport, Transport::Mpi);
  EXPECT_EQ(r.schedule.chunks_per_shard, 3);
  EXPECT_EQ(r.schedule.direction, Direction::Backward);
  EXPECT_EQ(r.progress, ProgressMode::Thread);
  EXPECT_EQ(r.timeout.count(), 5000);
  EXPECT_NE(r.notes.find("WEAVE_ALGORITHM"), std::string::npos) << r.notes;
  EXPECT_NE(r.notes.find("WEAVE_TRANSPORT"), std::string::npos) << r.notes;
}

TEST(Planner, EnvironmentDoesNotOverrideExplicitChoices) {
  weave_plan_desc_t desc{};
  desc.algorithm = WEAVE_ALGORITHM_RING;
  desc.direction = WEAVE_DIRECTION_FORWARD;
  desc.chunks_per_shard = 2;
  desc.progress = WEAVE_PROGRESS_TILES;
  desc.timeout_ms = 700;
  const Environment env = {{"WEAVE_ALGORITHM", "sequential"}, {"WEAVE_CHUNKS", "4"},
                           {"WEAVE_DIRECTION", "backward"},   {"WEAVE_PROGRESS", "thread"},
                           {"WEAVE_TIMEOUT", "9"}};
  const Resolved r = resolve_options(desc, host_problem(), env, host_only());
  EXPECT_EQ(r.schedule.algorithm, Algorithm::Ring);
  EXPECT_EQ(r.schedule.direction, Direction::Forward);
  EXPECT_EQ(r.schedule.chunks_per_shard, 2);
  EXPECT_EQ(r.progress, ProgressMode::Tiles);
  EXPECT_EQ(r.timeout.count(), 700);
}

TEST(Planner, BidirectionalDefaultsToTwoChunks) {
  weave_plan_desc_t desc{};
  desc.direction = WEAVE_DIRECTION_BIDIRECTIONAL;
  EXPECT_EQ(resolve_options(desc, host_problem(), {}, host_only()).schedule.chunks_per_shard, 2);
  const weave_plan_desc_t automatic{};
  const Resolved r = resolve_options(automatic, host_problem(), {{"WEAVE_DIRECTION", "bidirectional"}}, host_only());
  EXPECT_EQ(r.schedule.direction, Direction::Bidirectional);
  EXPECT_EQ(r.schedule.chunks_per_shard, 2);
}

TEST(Planner, AutomaticDirectionHonoursOneChunkPerShard) {
  // A device reduction ring runs both ways by default, which needs two
  // chunks; one chunk asked for (argument or environment) makes it forward.
  weave::internal::Problem p = host_problem(weave::internal::Operation::GemmRs);
  p.memory = weave::internal::Memory::Device;
  weave_plan_desc_t desc{};
  desc.algorithm = WEAVE_ALGORITHM_RING;
  desc.transport = WEAVE_TRANSPORT_NCCL;
  desc.chunks_per_shard = 1;
  const Resolved asked = resolve_options(desc, p, {}, everything());
  EXPECT_EQ(asked.schedule.direction, Direction::Forward);
  EXPECT_EQ(asked.schedule.chunks_per_shard, 1);
  EXPECT_NE(asked.notes.find("forward ring"), std::string::npos) << asked.notes;
  desc.chunks_per_shard = 0;
  const Resolved from_env = resolve_options(desc, p, {{"WEAVE_CHUNKS", "1"}}, everything());
  EXPECT_EQ(from_env.schedule.direction, Direction::Forward);
  EXPECT_EQ(from_env.schedule.chunks_per_shard, 1);
  const Resolved automatic = resolve_options(desc, p, {}, everything());
  EXPECT_EQ(automatic.schedule.direction, Direction::Bidirectional);
  EXPECT_GE(automatic.schedule.chunks_per_shard, 2);
}

TEST(Planner, TimeoutZeroInTheEnvironmentMeansForever) {
  const weave_plan_desc_t desc{};
  EXPECT_LT(resolve_options(desc, host_problem(), {{"WEAVE_TIMEOUT", "0"}}, host_only()).timeout.count(), 0);
}

TEST(Planner, HostPlansUseOneLaneWhateverIsAsked) {
  weave_plan_desc_t desc{};
  desc.compute_streams = 3;
  EXPECT_EQ(resolve_options(desc, host_problem(), {}, host_only()).schedule.compute_lanes, 1);
}

TEST(Planner, DevicePlansTakeComputeStreams) {
  weave_plan_desc_t desc{};
  const Resolved automatic = resolve_options(desc, device_problem(), {}, everything());
  EXPECT_EQ(automatic.backend, Backend::Cuda);
  EXPECT_EQ(automatic.transport, Transport::Nccl);
  EXPECT_EQ(automatic.schedule.compute_lanes, 2);
  EXPECT_EQ(resolve_options(desc, device_problem(), {{"WEAVE_COMPUTE_STREAMS", "3"}}, everything())
                .schedule.compute_lanes,
            3);
  desc.compute_streams = 4;
  EXPECT_EQ(resolve_options(desc, device_problem(), {{"WEAVE_COMPUTE_STREAMS", "3"}}, everything())
                .schedule.compute_lanes,
            4);
}

// Communication streams sit above the compute streams unless
// WEAVE_COMM_PRIORITY=normal says otherwise; describe says so.
TEST(Planner, CommunicationPriorityFromTheEnvironment) {
  const weave_plan_desc_t desc{};
  EXPECT_TRUE(resolve_options(desc, device_problem(), {}, everything()).comm_high_priority);
  EXPECT_TRUE(resolve_options(desc, device_problem(), {{"WEAVE_COMM_PRIORITY", "high"}}, everything()).comm_high_priority);
  const Resolved normal = resolve_options(desc, device_problem(), {{"WEAVE_COMM_PRIORITY", "normal"}}, everything());
  EXPECT_FALSE(normal.comm_high_priority);
  EXPECT_NE(normal.notes.find("normal priority"), std::string::npos) << normal.notes;
  expect_failure(desc, device_problem(), {{"WEAVE_COMM_PRIORITY", "low"}}, everything(), WEAVE_ERROR_INVALID_VALUE,
                 "WEAVE_COMM_PRIORITY=low");
}

// WEAVE_SM_MARGIN: SMs the overlapped GEMMs leave free, checked and noted;
// a sequential plan says it does not apply one.
TEST(Planner, SmMarginFromTheEnvironment) {
  weave_plan_desc_t desc{};
  desc.algorithm = WEAVE_ALGORITHM_RING;
  EXPECT_EQ(resolve_options(desc, device_problem(), {}, everything()).gemm_sm_margin, 0);
  const Resolved margin = resolve_options(desc, device_problem(), {{"WEAVE_SM_MARGIN", "16"}}, everything());
  EXPECT_EQ(margin.gemm_sm_margin, 16);
  EXPECT_NE(margin.notes.find("leave 16 SMs free"), std::string::npos) << margin.notes;
  desc.algorithm = WEAVE_ALGORITHM_SEQUENTIAL;
  const Resolved sequential = resolve_options(desc, device_problem(), {{"WEAVE_SM_MARGIN", "16"}}, everything());
  EXPECT_EQ(sequential.gemm_sm_margin, 0);
  EXPECT_NE(sequential.notes.find("WEAVE_SM_MARGIN not applied"), std::string::npos) << sequential.notes;
  EXPECT_EQ(sequential.notes.find("SMs free"), std::string::npos) << sequential.notes;
  expect_failure(desc, device_problem(), {{"WEAVE_SM_MARGIN", "-1"}}, everything(), WEAVE_ERROR_INVALID_VALUE,
                 "WEAVE_SM_MARGIN=-1");
  expect_failure(desc, device_problem(), {{"WEAVE_SM_MARGIN", "some"}}, everything(), WEAVE_ERROR_INVALID_VALUE,
                 "WEAVE_SM_MARGIN=some");
}

// Device reductions large enough to overlap: over copy engines the direct
// algorithm, over NCCL the ring; AG-GEMM always the ring.
TEST(Planner, DeviceReductionsOverCopyEnginesRunDirect) {
  using weave::internal::Operation;
  const auto large = [](Operation op, int64_t m = 8192, int ranks = 4) { return device_case(op, m, ranks); };
  const weave_plan_desc_t desc{};
  Capabilities caps = everything();
  caps.peer_access = true;
  for (Operation op : {Operation::GemmRs, Operation::GemmAr, Operation::AgGemm}) {
    const Resolved r = resolve_options(desc, large(op), {}, caps);
    EXPECT_EQ(r.transport, Transport::CopyEngine);
    if (op == Operation::AgGemm) {
      EXPECT_EQ(r.schedule.algorithm, Algorithm::Ring);
      continue;
    }
    EXPECT_EQ(r.schedule.algorithm, Algorithm::Direct);
    EXPECT_EQ(r.schedule.direction, Direction::Forward);  // not the device rings' bidirectional default
    EXPECT_EQ(r.schedule.chunks_per_shard, 1);            // a 32 MiB product shard travels whole
    EXPECT_NE(r.notes.find("direct chosen"), std::string::npos) << r.notes;
    // 64 MiB product shards travel in two chunks, 128 MiB ones in four; 34
    // GFLOP per rank run sequentially (the direct algorithm lost to a
    // reduce-scatter in C's type there).
    EXPECT_EQ(resolve_options(desc, large(op, 16384), {}, caps).schedule.chunks_per_shard, 2);
    EXPECT_EQ(resolve_options(desc, large(op, 32768 - 4), {}, caps).schedule.chunks_per_shard, 2);
    EXPECT_EQ(resolve_options(desc, large(op, 32768), {}, caps).schedule.chunks_per_shard, 4);
    // Over two ranks GEMM-AR runs two-shot and cuts a 32 MiB product shard
    // in four, GEMM-RS sends it whole. One-shot (WEAVE_ALL_REDUCE) takes a
    // chunk per 8 MiB of a rank's product shard, at most four (32 MiB in
    // four, 24 MiB in three, 8 MiB whole), eight from 384 MiB.
    const bool all_reduce = op == Operation::GemmAr;
    EXPECT_FALSE(r.schedule.all_reduce_one_shot);
    const Resolved pair = resolve_options(desc, large(op, 4096, 2), {}, caps);
    EXPECT_FALSE(pair.schedule.all_reduce_one_shot);
    EXPECT_EQ(pair.schedule.chunks_per_shard, all_reduce ? 4 : 1);
    EXPECT_EQ(resolve_options(desc, large(op, 4096 - 8, 2), {}, caps).schedule.chunks_per_shard, 1);
    if (all_reduce) {
      EXPECT_NE(pair.notes.find("two-shot all-reduce"), std::string::npos) << pair.notes;
      const Environment one_shot{{"WEAVE_ALL_REDUCE", "one_shot"}};
      const Resolved asked = resolve_options(desc, large(op, 4096, 2), one_shot, caps);
      EXPECT_TRUE(asked.schedule.all_reduce_one_shot);
      EXPECT_EQ(asked.schedule.chunks_per_shard, 4);
      EXPECT_NE(asked.notes.find("one-shot all-reduce (WEAVE_ALL_REDUCE)"), std::string::npos) << asked.notes;
      EXPECT_EQ(resolve_options(desc, large(op, 3072, 2), one_shot, caps).schedule.chunks_per_shard, 3);
      EXPECT_EQ(resolve_options(desc, large(op, 1024, 2), one_shot, caps).schedule.chunks_per_shard, 1);
      EXPECT_EQ(resolve_options(desc, large(op, 98304, 2), one_shot, caps).schedule.chunks_per_shard, 8);
      EXPECT_TRUE(resolve_options(desc, large(op), one_shot, caps).schedule.all_reduce_one_shot);
    }
    EXPECT_EQ(resolve_options(desc, large(op, 1024), {}, caps).schedule.algorithm, Algorithm::Sequential);
  }
  // Over NCCL the rings measured slower than the sequential plan for the
  // reductions, and for AG-GEMM below 1 TFLOP per rank: sequential, said
  // in describe; WEAVE_ALGORITHM=ring still asks for the ring.
  caps.peer_access = false;
  for (Operation op : {Operation::GemmRs, Operation::GemmAr, Operation::AgGemm}) {
    const Resolved nccl = resolve_options(desc, large(op), {}, caps);
    EXPECT_EQ(nccl.transport, Transport::Nccl);
    EXPECT_EQ(nccl.schedule.algorithm, Algorithm::Sequential);
    EXPECT_NE(nccl.notes.find("over NCCL"), std::string::npos) << nccl.notes;
    EXPECT_EQ(resolve_options(desc, large(op), {{"WEAVE_ALGORITHM", "ring"}}, caps).schedule.algorithm,
              Algorithm::Ring);
  }
  // AG-GEMM from 1 TFLOP per rank (m = 32768: 1.1 TFLOP) runs the ring;
  // the reductions stay sequential.
  EXPECT_EQ(resolve_options(desc, large(Operation::AgGemm, 32768), {}, caps).schedule.algorithm, Algorithm::Ring);
  EXPECT_EQ(resolve_options(desc, large(Operation::GemmRs, 32768), {}, caps).schedule.algorithm,
            Algorithm::Sequential);
}

// Device GEMM-AR within a node on more than two ranks: the sequential plan
// where the GEMM hides too little of the exchange (bf16-equivalent K per
// peer below 2048: FP8, rate 2, with K = 8192 over 4 ranks), the direct
// algorithm otherwise (bf16 with K = 8192, FP8 with K = 16384, FP8 over
// 2 ranks). GEMM-RS the same where its product shard travels in one chunk.
// Only where the sequential plan moves no more bytes than the direct one.
TEST(Planner, DeviceFp8AllReduceWithLittleKPerPeerRunsSequentially) {
  using weave::internal::DType;
  using weave::internal::Operation;
  using weave::internal::ScaleMode;
  // Where the sequential plan moves the same bytes: 16-bit partial sums
  // asked for. (By default it moves float32, twice the direct algorithm's
  // bf16 products: below.)
  weave_plan_desc_t desc{};
  desc.flags = WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE;
  Capabilities caps = everything();
  caps.peer_access = true;
  auto fp8 = [](Operation op, int64_t k, int ranks, int64_t m = 8192, int64_t n = 8192) {
    GroupCase g;
    g.operation = op;
    g.ranks = ranks;
    g.m = m;
    g.n = n;
    g.k = k;
    g.dtype = DType::BF16;
    g.ab_type = DType::E4M3;
    g.a_scale = ScaleMode::RowWise;
    g.b_scale = ScaleMode::RowWise;
    g.order_a = weave::internal::Order::RowMajor;
    weave::internal::Problem p = make_group_problems(g)[0];
    p.memory = weave::internal::Memory::Device;
    return p;
  };
  const Resolved small_k = resolve_options(desc, fp8(Operation::GemmAr, 8192, 4), {}, caps);
  EXPECT_EQ(small_k.transport, Transport::CopyEngine);
  EXPECT_EQ(small_k.schedule.algorithm, Algorithm::Sequential) << small_k.notes;
  EXPECT_NE(small_k.notes.find("1365.33 bf16-equivalent K per peer, below 2048"), std::string::npos) << small_k.notes;
  EXPECT_EQ(resolve_options(desc, fp8(Operation::GemmAr, 16384, 4), {}, caps).schedule.algorithm, Algorithm::Direct);
  EXPECT_EQ(resolve_options(desc, fp8(Operation::GemmAr, 8192, 2), {}, caps).schedule.algorithm, Algorithm::Direct);
  EXPECT_EQ(resolve_options(desc, device_case(Operation::GemmAr), {}, caps).schedule.algorithm, Algorithm::Direct);
  // GEMM-RS: 32 MiB product shards (one chunk) with 1365 K per peer run
  // sequentially; 224 MiB ones (four chunks), K = 16384, 2 ranks, bf16, or
  // chunks asked for keep the direct algorithm.
  const Resolved rs = resolve_options(desc, fp8(Operation::GemmRs, 8192, 4), {}, caps);
  EXPECT_EQ(rs.schedule.algorithm, Algorithm::Sequential) << rs.notes;
  EXPECT_NE(rs.notes.find("travels in one chunk"), std::string::npos) << rs.notes;
  EXPECT_EQ(resolve_options(desc, fp8(Operation::GemmRs, 8192, 4, 4096), {}, caps).schedule.algorithm,
            Algorithm::Sequential);
  EXPECT_EQ(resolve_options(desc, fp8(Operation::GemmRs, 8192, 4, 16384, 28672), {}, caps).schedule.algorithm,
            Algorithm::Direct);
  EXPECT_EQ(resolve_options(desc, fp8(Operation::GemmRs, 16384, 4), {}, caps).schedule.algorithm, Algorithm::Direct);
  EXPECT_EQ(resolve_options(desc, fp8(Operation::GemmRs, 8192, 2), {}, caps).schedule.algorithm, Algorithm::Direct);
  EXPECT_EQ(resolve_options(desc, device_case(Operation::GemmRs), {}, caps).schedule.algorithm, Algorithm::Direct);
  EXPECT_EQ(resolve_options(desc, fp8(Operation::GemmRs, 8192, 4), {{"WEAVE_CHUNKS", "2"}}, caps).schedule.algorithm,
            Algorithm::Direct);
  // Float32 products move what the sequential plan's float32 partial sums
  // do: the rules apply.
  weave_plan_desc_t wide{};
  wide.flags = WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE;
  for (Operation op : {Operation::GemmAr, Operation::GemmRs})
    EXPECT_EQ(resolve_options(wide, fp8(op, 8192, 4), {}, caps).schedule.algorithm, Algorithm::Sequential);
  // By default the sequential plan would move float32 partial sums, twice
  // the bytes of the direct algorithm's bf16 products: the direct algorithm
  // stays.
  const weave_plan_desc_t plain{};
  for (Operation op : {Operation::GemmAr, Operation::GemmRs}) {
    const Resolved r = resolve_options(plain, fp8(op, 8192, 4), {}, caps);
    EXPECT_EQ(r.schedule.algorithm, Algorithm::Direct) << r.notes;
  }
  // Asked for by name, the direct algorithm is kept.
  EXPECT_EQ(resolve_options(desc, fp8(Operation::GemmAr, 8192, 4), {{"WEAVE_ALGORITHM", "direct"}}, caps)
                .schedule.algorithm,
            Algorithm::Direct);
}

// GEMM-RS with A's scales in 128-row bands (128x128, MXFP8): where a
// rank's rows of C start inside a band (M = 8192 + 64 over 4 ranks: 2064
// rows each), the automatic plan is the sequential one, which multiplies
// op(A) whole, and says why; on band boundaries (M = 8192) it stays
// direct; asked for by name, the direct algorithm is kept (and refused
// when its schedule is built).
TEST(Planner, Fp8ReductionWithRankRowsInsideBandsRunsSequentially) {
  using weave::internal::DType;
  using weave::internal::Operation;
  using weave::internal::ScaleMode;
  Capabilities caps = everything();
  caps.peer_access = true;
  auto banded = [](int64_t m, ScaleMode mode) {
    GroupCase g;
    g.operation = Operation::GemmRs;
    g.ranks = 4;
    g.m = m;
    g.n = g.k = 8192;
    g.dtype = DType::BF16;
    g.ab_type = DType::E4M3;
    g.a_scale = mode;
    g.b_scale = ScaleMode::Block1x128;
    g.order_a = weave::internal::Order::RowMajor;
    weave::internal::Problem p = make_group_problems(g)[0];
    p.memory = weave::internal::Memory::Device;
    return p;
  };
  const weave_plan_desc_t plain{};
  for (ScaleMode mode : {ScaleMode::Block128x128, ScaleMode::Mxfp8}) {
    const Resolved inside = resolve_options(plain, banded(8192 + 64, mode), {}, caps);
    EXPECT_EQ(inside.schedule.algorithm, Algorithm::Sequential) << inside.notes;
    EXPECT_NE(inside.notes.find("start at row 2064, inside one"), std::string::npos) << inside.notes;
    const Resolved from_env = resolve_options(plain, banded(8192 + 64, mode), {{"WEAVE_ALGORITHM", "ring"}}, caps);
    EXPECT_EQ(from_env.schedule.algorithm, Algorithm::Sequential) << from_env.notes;
    EXPECT_EQ(resolve_options(plain, banded(8192, mode), {}, caps).schedule.algorithm, Algorithm::Direct);
  }
  weave_plan_desc_t direct{};
  direct.algorithm = WEAVE_ALGORITHM_DIRECT;
  EXPECT_EQ(resolve_options(direct, banded(8192 + 64, ScaleMode::Block128x128), {}, caps).schedule.algorithm,
            Algorithm::Direct);
}

// Device GEMM-RS and GEMM-AR whose group spans nodes: the plan calibrates
// the link first, then runs the pipelined plan where nodes hold several
// ranks over a fast link (the host-staged emulation's 29-33 GB/s), the
// hierarchical one over a slow link (sockets, 6-8 GB/s), and the sequential
// one with one rank per node or without a calibration (WEAVE_CALIBRATE=0).
TEST(Planner, DeviceReductionsAcrossNodesFollowTheCalibratedLink) {
  using weave::internal::Operation;
  using weave::internal::plan::Calibration;
  const weave_plan_desc_t desc{};
  Capabilities caps = everything();
  caps.nodes.node_of_rank = {0, 0, 1, 1};
  caps.nodes.nodes = 2;
  auto link = [](double bytes_per_s) {
    auto c = std::make_shared<Calibration>();
    c->reduce_scatter.seconds_per_byte = 1.0 / bytes_per_s;
    return std::shared_ptr<const Calibration>(c);
  };
  for (Operation op : {Operation::GemmRs, Operation::GemmAr}) {
    // Not calibrated yet: asks for it; meanwhile the sequential plan.
    const Resolved first = resolve_options(desc, device_case(op), {}, caps);
    EXPECT_EQ(first.transport, Transport::Nccl);
    EXPECT_TRUE(first.wants_calibration);
    EXPECT_EQ(first.schedule.algorithm, Algorithm::Sequential);
    Capabilities fast = caps, slow = caps;
    fast.calibration = link(29e9);
    slow.calibration = link(7.8e9);
    const Resolved piped = resolve_options(desc, device_case(op), {}, fast);
    EXPECT_EQ(piped.schedule.algorithm, Algorithm::Pipelined);
    EXPECT_FALSE(piped.wants_calibration);
    EXPECT_NE(piped.notes.find("pipelined chosen: across 2 nodes"), std::string::npos) << piped.notes;
    const Resolved hier = resolve_options(desc, device_case(op), {}, slow);
    EXPECT_EQ(hier.schedule.algorithm, Algorithm::Hierarchical);
    EXPECT_NE(hier.notes.find("hierarchical chosen: across 2 nodes"), std::string::npos) << hier.notes;
    EXPECT_NE(hier.notes.find("below 16"), std::string::npos) << hier.notes;
    // Without a calibration the sequential plan, and no calibration asked for.
    const Resolved off = resolve_options(desc, device_case(op), {{"WEAVE_CALIBRATE", "0"}}, caps);
    EXPECT_EQ(off.schedule.algorithm, Algorithm::Sequential);
    EXPECT_FALSE(off.wants_calibration);
    // Over a slow link the hierarchical plan holds down to 1024 rows over 4
    // ranks (34 GFLOP per rank, below one node's overlap threshold:
    // measured), and the plan asks for the calibration there too; over a
    // fast one the pipelined plan only from one node's threshold (at 34
    // GFLOP it lost on 4 H200s); below 32 GFLOP the sequential plan,
    // whatever the link.
    const Resolved small_fast = resolve_options(desc, device_case(op, 1024), {}, fast);
    EXPECT_EQ(small_fast.schedule.algorithm, Algorithm::Sequential);
    EXPECT_NE(small_fast.notes.find("pipelined reductions pay from 64 GFLOP"), std::string::npos) << small_fast.notes;
    EXPECT_EQ(resolve_options(desc, device_case(op, 2048), {}, fast).schedule.algorithm, Algorithm::Pipelined);
    EXPECT_EQ(resolve_options(desc, device_case(op, 1024), {}, slow).schedule.algorithm, Algorithm::Hierarchical);
    EXPECT_TRUE(resolve_options(desc, device_case(op, 1024), {}, caps).wants_calibration);
    EXPECT_EQ(resolve_options(desc, device_case(op, 512), {}, fast).schedule.algorithm, Algorithm::Sequential);
    EXPECT_EQ(resolve_options(desc, device_case(op, 512), {}, slow).schedule.algorithm, Algorithm::Sequential);
    // Nodes of one rank each: the sequential plan, however fast the link.
    Capabilities single = fast;
    single.nodes.node_of_rank = {0, 1, 2, 3};
    single.nodes.nodes = 4;
    const Resolved one_each = resolve_options(desc, device_case(op), {}, single);
    EXPECT_EQ(one_each.schedule.algorithm, Algorithm::Sequential);
    EXPECT_NE(one_each.notes.find("one rank per node"), std::string::npos) << one_each.notes;
    // The rule's choice from one rate cannot tell machines apart: the
    // sequential and pipelined plans (and with several ranks per node the
    // hierarchical one) are timed at plan creation, and the fastest runs.
    const Resolved to_time = resolve_options(desc, device_case(op), {{"WEAVE_CALIBRATE", "time"}}, single);
    ASSERT_GE(to_time.wants_trials.size(), 2u) << to_time.notes;
    bool sequential_listed = false, pipelined_listed = false;
    for (const auto& c : to_time.wants_trials) {
      sequential_listed |= c.algorithm == Algorithm::Sequential;
      pipelined_listed |= c.algorithm == Algorithm::Pipelined;
      EXPECT_NE(c.algorithm, Algorithm::Hierarchical) << "no node holds two ranks";
    }
    EXPECT_TRUE(sequential_listed && pipelined_listed) << to_time.notes;
    Capabilities timed = single;
    Capabilities::Trials measured;
    measured.measured = to_time.wants_trials;
    for (auto& c : measured.measured) c.seconds = c.algorithm == Algorithm::Pipelined ? 1e-3 : 2e-3;
    timed.trials = std::make_shared<Capabilities::Trials>(measured);
    const Resolved piped_by_time = resolve_options(desc, device_case(op), {}, timed);
    EXPECT_TRUE(piped_by_time.wants_trials.empty());
    EXPECT_EQ(piped_by_time.schedule.algorithm, Algorithm::Pipelined) << piped_by_time.notes;
    EXPECT_NE(piped_by_time.notes.find("chosen by timing the reductions' plans across nodes"), std::string::npos)
        << piped_by_time.notes;
    for (auto& c : measured.measured) c.seconds = c.algorithm == Algorithm::Sequential ? 1e-3 : 2e-3;
    timed.trials = std::make_shared<Capabilities::Trials>(measured);
    EXPECT_EQ(resolve_options(desc, device_case(op), {}, timed).schedule.algorithm, Algorithm::Sequential);
    // Nodes of two ranks: the hierarchical plan is timed too.
    const Resolved two_each = resolve_options(desc, device_case(op), {{"WEAVE_CALIBRATE", "time"}}, slow);
    bool hierarchical_listed = false;
    for (const auto& c : two_each.wants_trials) hierarchical_listed |= c.algorithm == Algorithm::Hierarchical;
    EXPECT_TRUE(hierarchical_listed) << two_each.notes;
    EXPECT_EQ(resolve_options(desc, device_case(op), {}, [&] {
                Capabilities slow_single = single;
                slow_single.calibration = link(7.8e9);
                return slow_single;
              }()).schedule.algorithm,
              Algorithm::Sequential);
    // Asked for by name, another algorithm is kept.
    EXPECT_EQ(resolve_options(desc, device_case(op), {{"WEAVE_ALGORITHM", "pipelined"}}, slow).schedule.algorithm,
              Algorithm::Pipelined);
  }
  EXPECT_TRUE(resolve_options(desc, device_case(Operation::AgGemm), {}, caps).wants_calibration);
  // Within one node nothing changes: the reductions stay sequential over NCCL.
  caps.nodes = {};
  EXPECT_EQ(resolve_options(desc, device_case(Operation::GemmRs), {}, caps).schedule.algorithm, Algorithm::Sequential);
}

// Two nodes of one GPU each: the reductions' trials also time the pipelined
// plan in one chunk where the model predicted more chunks fastest (its bytes
// in one collective), and the fastest of the timed plans runs.
TEST(Planner, ReductionsAcrossNodesAlsoTimeOnePipelinedChunk) {
  using weave::internal::Operation;
  using weave::internal::plan::Calibration;
  using weave::internal::plan::LinkCost;
  Capabilities caps = everything();
  caps.nodes.node_of_rank = {0, 1};
  caps.nodes.nodes = 2;
  auto c = std::make_shared<Calibration>();
  c->gemm_flops_per_s = 4e12;  // 550 GFLOP per rank in 137 ms, beside 128 MiB of bf16 products at 2 GB/s (67 ms)
  LinkCost link;
  link.seconds_per_byte = 1.0 / 2e9;
  link.latency_s = 1e-3;
  c->point_to_point = c->all_gather = c->reduce_scatter = c->all_reduce = link;
  c->overlap_efficiency = 1;
  caps.calibration = c;
  const weave_plan_desc_t desc{};
  for (Operation op : {Operation::GemmRs, Operation::GemmAr}) {
    const Resolved r = resolve_options(desc, device_case(op, 8192, 2), {{"WEAVE_CALIBRATE", "time"}}, caps);
    bool one = false, more = false;
    for (const auto& k : r.wants_trials) {
      one |= k.algorithm == Algorithm::Pipelined && k.chunks == 1;
      more |= k.algorithm == Algorithm::Pipelined && k.chunks > 1;
    }
    EXPECT_TRUE(one && more) << r.notes;
    Capabilities timed = caps;
    Capabilities::Trials measured;
    measured.measured = r.wants_trials;
    for (auto& k : measured.measured) k.seconds = k.algorithm == Algorithm::Pipelined && k.chunks == 1 ? 1e-3 : 2e-3;
    timed.trials = std::make_shared<Capabilities::Trials>(measured);
    const Resolved chosen = resolve_options(desc, device_case(op, 8192, 2), {}, timed);
    EXPECT_EQ(chosen.schedule.algorithm, Algorithm::Pipelined) << chosen.notes;
    EXPECT_EQ(chosen.schedule.chunks_per_shard, 1) << chosen.notes;
  }
}

// One variable for a whole program: WEAVE_ALGORITHM=direct applies to every
// operation (AG-GEMM sends each chunk to every rank at once), with whole
// shards for AG-GEMM and no sums read from peers there.
TEST(Planner, DirectFromTheEnvironmentAppliesToEveryOperation) {
  const weave_plan_desc_t desc{};
  const Environment env{{"WEAVE_ALGORITHM", "direct"}};
  EXPECT_EQ(resolve_options(desc, host_problem(), env, host_only()).schedule.algorithm, Algorithm::Direct);
  const Resolved ag = resolve_options(desc, host_problem(weave::internal::Operation::AgGemm), env, host_only());
  EXPECT_EQ(ag.schedule.algorithm, Algorithm::Direct);
  EXPECT_EQ(ag.schedule.chunks_per_shard, 1);
  EXPECT_FALSE(ag.schedule.peer_sums);
}

// --- The transport table ---------------------------------------------------

// Every weave_transport_t has exactly one row, named as WEAVE_TRANSPORT
// spells it; rows that reach one node's GPUs only have the probe that finds
// that out, and what the row says about the build matches the build.
TEST(TransportTable, OneRowPerTransportWithItsProbe) {
  const auto& table = weave::internal::transport::transport_table();
  std::set<int> ids;
  std::set<std::string> names;
  for (const auto& row : table) {
    const TransportDescription& t = row.description;
    EXPECT_TRUE(ids.insert(static_cast<int>(t.id)).second) << t.name << " has a second row";
    EXPECT_TRUE(names.insert(t.name).second) << t.name;
    EXPECT_NE(row.make, nullptr) << t.name;
    EXPECT_EQ(row.probe != nullptr, t.reach == Reach::OneNodePeerAccess) << t.name;
    EXPECT_NE(std::string(t.build_option).find("WEAVE_ENABLE_"), std::string::npos) << t.name;
    EXPECT_TRUE(t.host_memory != MemorySupport::No || t.device_memory != MemorySupport::No) << t.name;
    // A transport that takes an SM budget or reads peers' memory runs on the GPU's streams.
    if (t.sms == SmUse::Budget || t.reads_peer_memory) {
      EXPECT_EQ(t.progression, Progression::StreamOrdered) << t.name;
    }
  }
  for (int id = WEAVE_TRANSPORT_MPI; id <= WEAVE_TRANSPORT_SM; ++id)
    EXPECT_TRUE(ids.count(id)) << "weave_transport_t " << id << " has no row";
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(WEAVE_TRANSPORT_SM));
  EXPECT_EQ(names, (std::set<std::string>{"mpi", "ucx", "sm", "copy_engine", "nccl"}));
  // weave_build_features() lists the transports this build contains.
  const std::string features = std::string(",") + weave_build_features() + ",";
  for (const auto& row : table)
    EXPECT_EQ(row.description.compiled, features.find(weave::internal::str(",", row.description.name, ",")) != std::string::npos)
        << row.description.name << " in " << features;
}

// The planner reads rows, not names: change a row's properties and the
// automatic choices follow.
TEST(TransportTable, AutomaticChoicesFollowTheRows) {
  using weave::internal::Operation;
  const weave::internal::Problem p = device_case(Operation::GemmRs);
  const weave_plan_desc_t desc{};
  Capabilities caps = everything();
  caps.peer_access = true;
  ASSERT_EQ(resolve_options(desc, p, {}, caps).transport, Transport::CopyEngine);

  // The copy engines no longer offered automatically: the next row that
  // moves device memory and reaches the group, NCCL, whose row says its
  // reductions run sequentially.
  Capabilities no_copy_engine = caps;
  for (TransportDescription& t : no_copy_engine.transports)
    if (t.id == Transport::CopyEngine) t.automatic = false;
  const Resolved nccl = resolve_options(desc, p, {}, no_copy_engine);
  EXPECT_EQ(nccl.transport, Transport::Nccl);
  EXPECT_EQ(nccl.schedule.algorithm, Algorithm::Sequential);

  // NCCL's row saying the ring: its reductions then run the ring.
  for (TransportDescription& t : no_copy_engine.transports)
    if (t.id == Transport::Nccl) t.reduction_algorithm = Algorithm::Ring;
  EXPECT_EQ(resolve_options(desc, p, {}, no_copy_engine).schedule.algorithm, Algorithm::Ring);

  // Without the peer-access probe's blessing neither peer transport is
  // taken, and describe says why.
  caps.peer_access = false;
  caps.peer_access_why_not = "GPU 0 of group rank 0 has no peer access to GPU 1";
  const Resolved far = resolve_options(desc, p, {}, caps);
  EXPECT_EQ(far.transport, Transport::Nccl);
  EXPECT_NE(far.notes.find("no peer access"), std::string::npos) << far.notes;
}

// SM-driven transfers where the measured rule prefers them for the
// operation and shape, copy engines elsewhere; describe says which and why.
TEST(TransportTable, SmTransfersWhereTheMeasuredRuleSaysSo) {
  using weave::internal::Operation;
  const auto device = [](Operation op, int64_t m, int ranks = 4) { return device_case(op, m, ranks); };
  const weave_plan_desc_t desc{};
  Capabilities caps = everything();
  caps.peer_access = true;
  // This build's rules (measured: the copy engines won everywhere), so copy engines everywhere.
  for (Operation op : {Operation::AgGemm, Operation::GemmRs, Operation::GemmAr}) {
    const Resolved r = resolve_options(desc, device(op, 8192), {}, caps);
    EXPECT_EQ(r.transport, Transport::CopyEngine) << operation_name(op);
    EXPECT_NE(r.notes.find(op == Operation::AgGemm ? "not sm: 32 MiB shards, outside the 0 MiB to 16 MiB"
                                                   : "not sm: copy engines measured faster"),
              std::string::npos)
        << r.notes;
  }
  // AG-GEMM with shards below 16 MiB: 1024 rows of K = 8192 in bf16 over
  // two ranks are 8 MiB shards.
  {
    const Resolved small = resolve_options(desc, device(Operation::AgGemm, 1024, 2), {}, caps);
    EXPECT_EQ(small.transport, Transport::Sm) << small.notes;
    EXPECT_NE(small.notes.find("SM-driven transfers measured faster for AG-GEMM"), std::string::npos) << small.notes;
    EXPECT_EQ(resolve_options(desc, device(Operation::GemmAr, 1024, 2), {}, caps).transport, Transport::CopyEngine);
  }
  // A machine where SM transfers measured faster for GEMM-AR below 64 MiB
  // shards: 8192 rows over 4 ranks move 32 MiB shards of bf16.
  caps.sm_transfer_rules = {{Operation::GemmAr, 0, 64.0 * 1024 * 1024}};
  const Resolved sm = resolve_options(desc, device(Operation::GemmAr, 8192), {}, caps);
  EXPECT_EQ(sm.transport, Transport::Sm);
  EXPECT_EQ(sm.schedule.algorithm, Algorithm::Direct);
  EXPECT_TRUE(sm.schedule.peer_sums);
  EXPECT_FALSE(sm.schedule.all_reduce_one_shot) << "two-shot over four ranks";
  EXPECT_NE(sm.notes.find("sm chosen"), std::string::npos) << sm.notes;
  EXPECT_NE(sm.notes.find("32 MiB shards"), std::string::npos) << sm.notes;
  const Resolved large = resolve_options(desc, device(Operation::GemmAr, 32768), {}, caps);
  EXPECT_EQ(large.transport, Transport::CopyEngine);
  EXPECT_NE(large.notes.find("outside"), std::string::npos) << large.notes;
  EXPECT_EQ(resolve_options(desc, device(Operation::GemmRs, 8192), {}, caps).transport, Transport::CopyEngine);
  // Over two ranks GEMM-AR reads every rank's product at once.
  const Resolved pair = resolve_options(desc, device(Operation::GemmAr, 4096, 2), {}, caps);
  EXPECT_EQ(pair.transport, Transport::Sm);
  EXPECT_TRUE(pair.schedule.all_reduce_one_shot);
  EXPECT_NE(pair.notes.find("one-shot"), std::string::npos) << pair.notes;
}

// Asked for by name (WEAVE_TRANSPORT=sm or the descriptor), the SM
// transport runs every operation; its reductions sum where they read, and
// the GEMMs of overlapped plans leave its CTAs' SMs free.
TEST(TransportTable, SmTransportAskedFor) {
  using weave::internal::Operation;
  const auto device = [](Operation op, int ranks) { return device_case(op, 8192, ranks); };
  weave_plan_desc_t desc{};
  const Environment env{{"WEAVE_TRANSPORT", "sm"}};
  const Capabilities caps = everything();
  const Resolved rs = resolve_options(desc, device(Operation::GemmRs, 4), env, caps);
  EXPECT_EQ(rs.transport, Transport::Sm);
  EXPECT_EQ(rs.schedule.algorithm, Algorithm::Direct);
  EXPECT_TRUE(rs.schedule.peer_sums);
  EXPECT_EQ(rs.sm_transport_ctas, kSmTransportPeerSumCtas);
  EXPECT_EQ(rs.gemm_sm_margin, kSmTransportPeerSumCtas);
  EXPECT_NE(rs.notes.find("SMs free for the SM transport"), std::string::npos) << rs.notes;
  EXPECT_NE(rs.notes.find("transport from WEAVE_TRANSPORT"), std::string::npos) << rs.notes;

  const Resolved ag = resolve_options(desc, device(Operation::AgGemm, 4), env, caps);
  EXPECT_EQ(ag.schedule.algorithm, Algorithm::Ring);
  EXPECT_FALSE(ag.schedule.peer_sums);
  EXPECT_EQ(ag.sm_transport_ctas, kSmTransportPushCtas);
  EXPECT_EQ(ag.gemm_sm_margin, kSmTransportPushCtas);

  // The budget, a margin of one's own, and no margin at all.
  Environment tuned = env;
  tuned["WEAVE_SM_TRANSPORT_CTAS"] = "8";
  const Resolved eight = resolve_options(desc, device(Operation::GemmAr, 4), tuned, caps);
  EXPECT_EQ(eight.sm_transport_ctas, 8);
  EXPECT_EQ(eight.gemm_sm_margin, 8);
  tuned["WEAVE_SM_MARGIN"] = "0";
  EXPECT_EQ(resolve_options(desc, device(Operation::GemmAr, 4), tuned, caps).gemm_sm_margin, 0);
  tuned["WEAVE_SM_MARGIN"] = "24";
  EXPECT_EQ(resolve_options(desc, device(Operation::GemmAr, 4), tuned, caps).gemm_sm_margin, 24);
  desc.algorithm = WEAVE_ALGORITHM_SEQUENTIAL;
  EXPECT_EQ(resolve_options(desc, device(Operation::GemmAr, 4), env, caps).gemm_sm_margin, 0)
      << "a sequential plan runs nothing beside its GEMMs";
  desc.algorithm = WEAVE_ALGORITHM_AUTO;

  // One-shot over two ranks, two-shot over more, unless WEAVE_ALL_REDUCE says.
  EXPECT_TRUE(resolve_options(desc, device(Operation::GemmAr, 2), env, caps).schedule.all_reduce_one_shot);
  EXPECT_FALSE(resolve_options(desc, device(Operation::GemmAr, 3), env, caps).schedule.all_reduce_one_shot);
  Environment shots = env;
  shots["WEAVE_ALL_REDUCE"] = "two_shot";
  EXPECT_FALSE(resolve_options(desc, device(Operation::GemmAr, 2), shots, caps).schedule.all_reduce_one_shot);
  shots["WEAVE_ALL_REDUCE"] = "one_shot";
  EXPECT_TRUE(resolve_options(desc, device(Operation::GemmAr, 4), shots, caps).schedule.all_reduce_one_shot);

  // Below kPeerSumOverlapMinFlops per rank (1024 rows over 4 ranks: 34
  // GFLOP) the sequential plan, whose collectives go through NCCL.
  const Resolved small = resolve_options(desc, device_case(Operation::GemmRs, 1024), env, caps);
  EXPECT_EQ(small.schedule.algorithm, Algorithm::Sequential);
  EXPECT_FALSE(small.schedule.peer_sums);
  EXPECT_EQ(small.gemm_sm_margin, 0);

  // The descriptor's transport, too.
  desc.transport = WEAVE_TRANSPORT_SM;
  EXPECT_EQ(resolve_options(desc, device(Operation::GemmRs, 4), {}, caps).transport, Transport::Sm);
}

// GEMM tuning: off unless WEAVE_GEMM_TUNING=on, device plans only, said in
// describe; another value is an error naming it.
TEST(Planner, GemmTuningFromTheEnvironment) {
  const weave_plan_desc_t desc{};
  EXPECT_FALSE(resolve_options(desc, device_problem(), {}, everything()).gemm_tuning);
  const Resolved on = resolve_options(desc, device_problem(), {{"WEAVE_GEMM_TUNING", "on"}}, everything());
  EXPECT_TRUE(on.gemm_tuning);
  EXPECT_NE(on.notes.find("WEAVE_GEMM_TUNING"), std::string::npos) << on.notes;
  EXPECT_FALSE(resolve_options(desc, device_problem(), {{"WEAVE_GEMM_TUNING", "off"}}, everything()).gemm_tuning);
  weave::internal::Problem host = device_problem();
  host.memory = weave::internal::Memory::Host;
  EXPECT_FALSE(resolve_options(desc, host, {{"WEAVE_GEMM_TUNING", "on"}}, host_only()).gemm_tuning);
  expect_failure(desc, device_problem(), {{"WEAVE_GEMM_TUNING", "always"}}, everything(), WEAVE_ERROR_INVALID_VALUE,
                 "WEAVE_GEMM_TUNING=always");
}

// CUTLASS's row-wise FP8 kernel: off unless WEAVE_FP8_GEMM=cutlass (it
// measured slower than cuBLASLt's), device plans only, said in describe;
// another value is an error naming it.
TEST(Planner, Fp8GemmKernelFromTheEnvironment) {
  const weave_plan_desc_t desc{};
  EXPECT_FALSE(resolve_options(desc, device_problem(), {}, everything()).cutlass_fp8_gemm);
  const Resolved on = resolve_options(desc, device_problem(), {{"WEAVE_FP8_GEMM", "cutlass"}}, everything());
  EXPECT_TRUE(on.cutlass_fp8_gemm);
  EXPECT_NE(on.notes.find("WEAVE_FP8_GEMM"), std::string::npos) << on.notes;
  EXPECT_FALSE(
      resolve_options(desc, device_problem(), {{"WEAVE_FP8_GEMM", "cublaslt"}}, everything()).cutlass_fp8_gemm);
  weave::internal::Problem host = device_problem();
  host.memory = weave::internal::Memory::Host;
  EXPECT_FALSE(resolve_options(desc, host, {{"WEAVE_FP8_GEMM", "cutlass"}}, host_only()).cutlass_fp8_gemm);
  expect_failure(desc, device_problem(), {{"WEAVE_FP8_GEMM", "cublas"}}, everything(), WEAVE_ERROR_INVALID_VALUE,
                 "WEAVE_FP8_GEMM=cublas");
}

// The CUTLASS kernel's swizzle: its rule (0) unless WEAVE_CUTLASS_SWIZZLE
// names 1, 2, 4 or 8, and only where that kernel is asked for; another
// value is an error naming it.
TEST(Planner, CutlassSwizzleFromTheEnvironment) {
  const weave_plan_desc_t desc{};
  const Environment cutlass{{"WEAVE_FP8_GEMM", "cutlass"}};
  EXPECT_EQ(resolve_options(desc, device_problem(), cutlass, everything()).cutlass_swizzle, 0);
  Environment asked = cutlass;
  asked["WEAVE_CUTLASS_SWIZZLE"] = "2";
  const Resolved two = resolve_options(desc, device_problem(), asked, everything());
  EXPECT_EQ(two.cutlass_swizzle, 2);
  EXPECT_NE(two.notes.find("WEAVE_CUTLASS_SWIZZLE"), std::string::npos) << two.notes;
  EXPECT_EQ(resolve_options(desc, device_problem(), {{"WEAVE_CUTLASS_SWIZZLE", "2"}}, everything()).cutlass_swizzle, 0);
  asked["WEAVE_CUTLASS_SWIZZLE"] = "3";
  expect_failure(desc, device_problem(), asked, everything(), WEAVE_ERROR_INVALID_VALUE, "WEAVE_CUTLASS_SWIZZLE=3");
}

TEST(TransportTable, CopyEngineSendOrderFromTheEnvironment) {
  using weave::internal::plan::CopyEngineSends;
  const weave_plan_desc_t desc{};
  EXPECT_EQ(resolve_options(desc, device_problem(), {}, everything()).copy_engine_sends,
            CopyEngineSends::PerReceiver);
  for (const auto& [value, sends] : {std::pair<const char*, CopyEngineSends>{"in_order", CopyEngineSends::InOrder},
                                     {"per_receiver", CopyEngineSends::PerReceiver}}) {
    const Resolved r = resolve_options(
        desc, device_problem(), {{"WEAVE_TRANSPORT", "copy_engine"}, {"WEAVE_COPY_ENGINE_SENDS", value}}, everything());
    EXPECT_EQ(r.copy_engine_sends, sends) << value;
    // describe names a choice that is not the default
    EXPECT_EQ(r.notes.find("WEAVE_COPY_ENGINE_SENDS") != std::string::npos, sends != CopyEngineSends::PerReceiver)
        << r.notes;
  }
  expect_failure(desc, device_problem(), {{"WEAVE_COPY_ENGINE_SENDS", "parallel"}}, everything(),
                 WEAVE_ERROR_INVALID_VALUE, "WEAVE_COPY_ENGINE_SENDS=parallel");
}

TEST(TransportTable, ClearToSendAtStartBut2RankGemmRs) {
  using weave::internal::Operation;
  const weave_plan_desc_t desc{};
  // The measured rule: at the start of the execute, but for GEMM-RS over two ranks.
  for (Operation op : {Operation::AgGemm, Operation::GemmRs, Operation::GemmAr})
    for (int ranks : {2, 3, 4}) {
      const Resolved r = resolve_options(desc, device_case(op, 8192, ranks), {}, everything());
      EXPECT_EQ(r.clears_at_start, !(op == Operation::GemmRs && ranks == 2))
          << weave::internal::operation_name(op) << " over " << ranks;
    }
  // The environment overrides the rule both ways, and describe says so.
  for (const auto& [value, at_start] : {std::pair<const char*, bool>{"at_start", true}, {"per_step", false}})
    for (Operation op : {Operation::GemmRs, Operation::GemmAr}) {
      const Resolved r = resolve_options(
          desc, device_case(op, 8192, 2), {{"WEAVE_TRANSPORT", "copy_engine"}, {"WEAVE_CLEAR_TO_SEND", value}},
          everything());
      EXPECT_EQ(r.clears_at_start, at_start) << value;
      EXPECT_NE(r.notes.find("WEAVE_CLEAR_TO_SEND"), std::string::npos) << r.notes;
    }
  expect_failure(desc, device_problem(), {{"WEAVE_CLEAR_TO_SEND", "early"}}, everything(), WEAVE_ERROR_INVALID_VALUE,
                 "WEAVE_CLEAR_TO_SEND=early");
}

// WEAVE_ISSUE_ORDER: by default, over the copy engines (where the orders
// were measured), the GEMMs first over 2 ranks and a batch of transfers and
// a compute step in turn over more; over NCCL (not measured) the transfers
// first. The variable asks for any of the three orders; device plans say
// which and why in describe; another value is an error naming it.
TEST(TransportTable, IssueOrder) {
  using weave::internal::Operation;
  const weave_plan_desc_t desc{};
  for (Operation op : {Operation::AgGemm, Operation::GemmRs, Operation::GemmAr}) {
    Capabilities peers = everything();
    peers.peer_access = true;
    for (int ranks : {2, 3, 4}) {
      const Resolved automatic = resolve_options(desc, device_case(op, 8192, ranks), {}, peers);
      EXPECT_EQ(automatic.transport, Transport::CopyEngine) << automatic.notes;
      EXPECT_EQ(automatic.issue_order, ranks == 2 ? IssueOrder::GemmsFirst : IssueOrder::Alternate) << ranks;
      EXPECT_NE(automatic.notes.find(ranks == 2 ? "issue order: GEMMs that wait for nothing enqueued before the "
                                                  "transfers (measured fastest over 2 ranks"
                                                : "issue order: a batch of transfers and a compute step enqueued "
                                                  "in turn (measured fastest over 4 ranks"),
                std::string::npos)
          << automatic.notes;
      EXPECT_EQ(automatic.notes.find("WEAVE_ISSUE_ORDER"), std::string::npos) << automatic.notes;
      const Resolved nccl = resolve_options(desc, device_case(op, 8192, ranks), {}, everything());
      EXPECT_EQ(nccl.transport, Transport::Nccl) << nccl.notes;
      EXPECT_EQ(nccl.issue_order, IssueOrder::TransfersFirst) << ranks;
      EXPECT_NE(nccl.notes.find("issue order: every ready transfer enqueued before the next compute step (the other "
                                "orders not measured over NCCL)"),
                std::string::npos)
          << nccl.notes;
    }
    const Resolved first = resolve_options(desc, device_case(op), {{"WEAVE_ISSUE_ORDER", "gemms_first"}}, everything());
    EXPECT_EQ(first.issue_order, IssueOrder::GemmsFirst);
    EXPECT_NE(first.notes.find("GEMMs that wait for nothing enqueued before the transfers (WEAVE_ISSUE_ORDER)"),
              std::string::npos)
        << first.notes;
    const Resolved turns = resolve_options(desc, device_case(op), {{"WEAVE_ISSUE_ORDER", "alternate"}}, everything());
    EXPECT_EQ(turns.issue_order, IssueOrder::Alternate);
    EXPECT_NE(turns.notes.find("enqueued in turn (WEAVE_ISSUE_ORDER)"), std::string::npos) << turns.notes;
    const Resolved last =
        resolve_options(desc, device_case(op), {{"WEAVE_ISSUE_ORDER", "transfers_first"}}, everything());
    EXPECT_EQ(last.issue_order, IssueOrder::TransfersFirst);
    EXPECT_NE(last.notes.find("every ready transfer enqueued before the next compute step (WEAVE_ISSUE_ORDER)"),
              std::string::npos)
        << last.notes;
  }
  expect_failure(desc, device_problem(), {{"WEAVE_ISSUE_ORDER", "gemm_first"}}, everything(),
                 WEAVE_ERROR_INVALID_VALUE, "WEAVE_ISSUE_ORDER=gemm_first");
}

// Two-shot GEMM-AR over messages gathers after the whole reduce-scatter
// (measured faster than pipelined); WEAVE_ALL_GATHER_LAG pipelines it (and
// describe says so); one-shot and GEMM-RS have no such all-gather.
TEST(TransportTable, AllGatherLagOfTwoShotGemmAr) {
  using weave::internal::Operation;
  using weave::internal::plan::kGatherAfterReduce;
  const weave_plan_desc_t desc{};
  const Environment copy_engine{{"WEAVE_TRANSPORT", "copy_engine"}};
  for (int ranks : {3, 4}) {
    const Resolved r = resolve_options(desc, device_case(Operation::GemmAr, 8192, ranks), copy_engine, everything());
    ASSERT_EQ(r.schedule.algorithm, Algorithm::Direct);
    EXPECT_FALSE(r.schedule.all_reduce_one_shot);
    EXPECT_EQ(r.schedule.all_gather_lag, kGatherAfterReduce) << ranks;
    Environment pipelined = copy_engine;
    pipelined["WEAVE_ALL_GATHER_LAG"] = "1";
    EXPECT_EQ(resolve_options(desc, device_case(Operation::GemmRs, 8192, ranks), pipelined, everything())
                  .schedule.all_gather_lag,
              kGatherAfterReduce);
  }
  for (const auto& [value, lag] : {std::pair<const char*, int>{"after_reduce", kGatherAfterReduce}, {"1", 1}, {"2", 2}}) {
    Environment env = copy_engine;
    env["WEAVE_ALL_GATHER_LAG"] = value;
    const Resolved r = resolve_options(desc, device_case(Operation::GemmAr, 8192, 4), env, everything());
    EXPECT_EQ(r.schedule.all_gather_lag, lag) << value;
    EXPECT_NE(r.notes.find("WEAVE_ALL_GATHER_LAG"), std::string::npos) << r.notes;
  }
  Environment one_shot = copy_engine;
  one_shot["WEAVE_ALL_REDUCE"] = "one_shot";
  one_shot["WEAVE_ALL_GATHER_LAG"] = "1";
  EXPECT_EQ(resolve_options(desc, device_case(Operation::GemmAr, 8192, 4), one_shot, everything())
                .schedule.all_gather_lag,
            kGatherAfterReduce);
  expect_failure(desc, device_case(Operation::GemmAr, 8192, 4), {{"WEAVE_TRANSPORT", "copy_engine"}, {"WEAVE_ALL_GATHER_LAG", "0"}},
                 everything(), WEAVE_ERROR_INVALID_VALUE, "WEAVE_ALL_GATHER_LAG=0");
}

// The direct reductions over messages sum the own product with the
// received ones unless WEAVE_OWN_PRODUCT=accumulates (describe says so);
// one-shot GEMM-AR and AG-GEMM keep their ways; a wrong value is an error.
TEST(TransportTable, OwnProductAccumulatesOnlyWhenAsked) {
  using weave::internal::Operation;
  const weave_plan_desc_t desc{};
  const Environment copy_engine{{"WEAVE_TRANSPORT", "copy_engine"}};
  Environment asked = copy_engine;
  asked["WEAVE_OWN_PRODUCT"] = "accumulates";
  for (Operation op : {Operation::GemmRs, Operation::GemmAr})
    for (int ranks : {2, 4}) {
      EXPECT_FALSE(resolve_options(desc, device_case(op, 8192, ranks), copy_engine, everything())
                       .schedule.own_product_accumulates);
      const Resolved r = resolve_options(desc, device_case(op, 8192, ranks), asked, everything());
      ASSERT_EQ(r.schedule.algorithm, Algorithm::Direct);
      EXPECT_TRUE(r.schedule.own_product_accumulates) << weave::internal::operation_name(op) << " over " << ranks;
      EXPECT_NE(r.notes.find("WEAVE_OWN_PRODUCT"), std::string::npos) << r.notes;
    }
  EXPECT_FALSE(resolve_options(desc, device_case(Operation::AgGemm, 8192, 4), asked, everything())
                   .schedule.own_product_accumulates);
  Environment one_shot = asked;
  one_shot["WEAVE_ALL_REDUCE"] = "one_shot";
  EXPECT_FALSE(resolve_options(desc, device_case(Operation::GemmAr, 8192, 4), one_shot, everything())
                   .schedule.own_product_accumulates);
  expect_failure(desc, device_case(Operation::GemmRs, 8192, 4),
                 {{"WEAVE_TRANSPORT", "copy_engine"}, {"WEAVE_OWN_PRODUCT", "fused"}}, everything(),
                 WEAVE_ERROR_INVALID_VALUE, "WEAVE_OWN_PRODUCT=fused");
}

// Over two ranks, C row-major, products in C's type, the copy engines: the
// own GEMMs add the received products by default from 16 MiB product
// shards for GEMM-AR and from 32 MiB for GEMM-RS (kOwnGemmAddsFromBytes*),
// and describe says why; smaller shards, four ranks, column-major C,
// float32 products and WEAVE_OWN_PRODUCT=summed keep the one summing pass.
TEST(TransportTable, OwnGemmAddsTheReceivedProductOverTwoRanks) {
  using weave::internal::Operation;
  using weave::internal::Order;
  const weave_plan_desc_t desc{};
  const Environment copy_engine{{"WEAVE_TRANSPORT", "copy_engine"}};
  auto row_major = [](weave::internal::Problem p) {
    p.c.order = Order::RowMajor;
    return p;
  };
  // Product shards of m / 2 x 8192 bf16: 1024 rows 8 MiB, 2048 rows 16 MiB,
  // 4096 rows 32 MiB, 8192 rows 64 MiB.
  auto adds = [&](Operation op, int64_t m, int ranks, const Environment& env = {{"WEAVE_TRANSPORT", "copy_engine"}}) {
    const Resolved r = resolve_options(desc, row_major(device_case(op, m, ranks)), env, everything());
    EXPECT_EQ(r.schedule.algorithm, Algorithm::Direct) << r.notes;
    if (r.schedule.own_product_accumulates) {
      EXPECT_NE(r.notes.find("own products added by their GEMMs"), std::string::npos) << r.notes;
    }
    return r.schedule.own_product_accumulates;
  };
  EXPECT_TRUE(adds(Operation::GemmAr, 2048, 2));
  EXPECT_TRUE(adds(Operation::GemmAr, 8192, 2));
  EXPECT_FALSE(adds(Operation::GemmAr, 1024, 2));
  EXPECT_TRUE(adds(Operation::GemmRs, 4096, 2));
  EXPECT_TRUE(adds(Operation::GemmRs, 8192, 2));
  EXPECT_FALSE(adds(Operation::GemmRs, 2048, 2));
  EXPECT_FALSE(adds(Operation::GemmAr, 16384, 4));
  EXPECT_FALSE(adds(Operation::GemmAr, 8192, 2, {{"WEAVE_TRANSPORT", "copy_engine"}, {"WEAVE_OWN_PRODUCT", "summed"}}));
  EXPECT_FALSE(resolve_options(desc, device_case(Operation::GemmAr, 8192, 2), copy_engine, everything())
                   .schedule.own_product_accumulates);  // column-major C
  // GEMM-AR's last chunk in two bands where the own GEMMs add (measured
  // for 16-bit A), one for FP8 A, WEAVE_TAIL_BANDS either way; GEMM-RS and
  // plans that sum keep one.
  const auto bands = [&](Operation op, int64_t m, const Environment& env, bool fp8 = false) {
    auto p = row_major(device_case(op, m, 2));
    if (fp8) p.a_type = p.b_type = weave::internal::DType::E4M3;
    return resolve_options(desc, p, env, everything()).schedule.tail_bands;
  };
  EXPECT_EQ(bands(Operation::GemmAr, 8192, copy_engine), 2);
  EXPECT_EQ(bands(Operation::GemmAr, 8192, copy_engine, true), 1);
  EXPECT_EQ(bands(Operation::GemmAr, 8192, {{"WEAVE_TRANSPORT", "copy_engine"}, {"WEAVE_TAIL_BANDS", "4"}}), 4);
  EXPECT_EQ(bands(Operation::GemmAr, 8192, {{"WEAVE_TRANSPORT", "copy_engine"}, {"WEAVE_TAIL_BANDS", "1"}}), 1);
  EXPECT_EQ(bands(Operation::GemmRs, 8192, copy_engine), 1);
  EXPECT_EQ(bands(Operation::GemmAr, 1024, copy_engine), 1);  // the summing pass
  // Chunks of 32 MiB at most, up to 8, never fewer than the direct rule's:
  // 256 MiB shards (32768 rows) in 8, 64 MiB ones as the direct rule cuts
  // them (GEMM-AR 4, GEMM-RS 2); summed, 256 MiB shards stay in 4.
  auto chunks = [&](Operation op, int64_t m, const Environment& env) {
    return resolve_options(desc, row_major(device_case(op, m, 2)), env, everything()).schedule.chunks_per_shard;
  };
  const Environment summed{{"WEAVE_TRANSPORT", "copy_engine"}, {"WEAVE_OWN_PRODUCT", "summed"}};
  EXPECT_EQ(chunks(Operation::GemmAr, 32768, copy_engine), 8);
  EXPECT_EQ(chunks(Operation::GemmRs, 32768, copy_engine), 8);
  EXPECT_EQ(chunks(Operation::GemmAr, 32768, summed), 4);
  EXPECT_EQ(chunks(Operation::GemmRs, 32768, summed), 4);
  EXPECT_EQ(chunks(Operation::GemmAr, 8192, copy_engine), 4);
  EXPECT_EQ(chunks(Operation::GemmRs, 8192, copy_engine), 2);
  // Two at least where the direct rule gives one (shards under 64 MiB).
  EXPECT_EQ(chunks(Operation::GemmAr, 2048, copy_engine), 2);
  EXPECT_EQ(chunks(Operation::GemmRs, 4096, copy_engine), 2);
  EXPECT_EQ(chunks(Operation::GemmRs, 4096, summed), 1);
  EXPECT_EQ(chunks(Operation::GemmAr, 16384, copy_engine), 4);
  const Environment asked{{"WEAVE_TRANSPORT", "copy_engine"}, {"WEAVE_CHUNKS", "3"}};
  EXPECT_EQ(chunks(Operation::GemmAr, 32768, asked), 3);
  weave_plan_desc_t wider{};
  wider.flags = WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE;
  EXPECT_FALSE(resolve_options(wider, row_major(device_case(Operation::GemmAr, 8192, 2)), copy_engine, everything())
                   .schedule.own_product_accumulates);
}

TEST(TransportTable, DeviceWaitsFromTheEnvironment) {
  const weave_plan_desc_t desc{};
  EXPECT_EQ(resolve_options(desc, device_problem(), {}, everything()).device_wait, DeviceWait::Bounded);
  const Resolved stream = resolve_options(desc, device_problem(), {{"WEAVE_DEVICE_WAIT", "stream"}}, everything());
  EXPECT_EQ(stream.device_wait, DeviceWait::StreamMemoryOperation);
  EXPECT_FALSE(resolve_options(desc, device_problem(), {}, everything()).completions_on_transport_streams);
  EXPECT_TRUE(resolve_options(desc, device_problem(), {{"WEAVE_TRANSFER_COMPLETION", "own_streams"}}, everything())
                  .completions_on_transport_streams);
  expect_failure(desc, device_problem(), {{"WEAVE_TRANSFER_COMPLETION", "later"}}, everything(),
                 WEAVE_ERROR_INVALID_VALUE, "WEAVE_TRANSFER_COMPLETION=later");
  expect_failure(desc, device_problem(), {{"WEAVE_DEVICE_WAIT", "spin"}}, everything(), WEAVE_ERROR_INVALID_VALUE,
                 "WEAVE_DEVICE_WAIT=spin");
  expect_failure(desc, device_problem(), {{"WEAVE_SM_TRANSPORT_CTAS", "0"}}, everything(), WEAVE_ERROR_INVALID_VALUE,
                 "WEAVE_SM_TRANSPORT_CTAS=0");
  expect_failure(desc, device_problem(), {{"WEAVE_SM_TRANSPORT_CTAS", "100000"}}, everything(),
                 WEAVE_ERROR_INVALID_VALUE, "WEAVE_SM_TRANSPORT_CTAS=100000");
  expect_failure(desc, device_problem(), {{"WEAVE_ALL_REDUCE", "three_shot"}, {"WEAVE_TRANSPORT", "sm"}},
                 everything(), WEAVE_ERROR_INVALID_VALUE, "WEAVE_ALL_REDUCE=three_shot");
}

// The rule's pieces on their own: the bytes a shard moves, the ranges, and
// the direct algorithm's chunk counts.
TEST(TransferChoice, ShardBytesRangesAndChunks) {
  using weave::internal::Operation;
  GroupCase g;
  g.operation = Operation::AgGemm;
  g.ranks = 4;
  g.m = 8192;
  g.n = 1024;
  g.k = 4096;
  g.dtype = weave::internal::DType::BF16;
  const weave::internal::Problem ag = make_group_problems(g)[0];
  EXPECT_DOUBLE_EQ(transfer_shard_bytes(ag), 2048.0 * 4096 * 2);  // rows of op(A)
  g.operation = Operation::GemmRs;
  const weave::internal::Problem rs = make_group_problems(g)[0];
  EXPECT_DOUBLE_EQ(transfer_shard_bytes(rs), 2048.0 * 1024 * 2);  // rows of the product
  const double mib = 1024.0 * 1024;
  EXPECT_FALSE(choose_transfers(rs, default_sm_transfer_rules()).sm_transfers);
  EXPECT_TRUE(choose_transfers(rs, {{Operation::GemmRs, 4 * mib, 8 * mib}}).sm_transfers);
  EXPECT_FALSE(choose_transfers(rs, {{Operation::GemmRs, 0, 4 * mib}}).sm_transfers) << "the range ends below";
  EXPECT_FALSE(choose_transfers(rs, {{Operation::GemmAr, 0, 64 * mib}}).sm_transfers) << "another operation's rule";
  EXPECT_FALSE(choose_transfers(ag, {{Operation::GemmRs, 0, 64 * mib}}).sm_transfers);
  // 4 MiB of product shard: one chunk by the copy engines' rule, and by
  // rules that cut finer.
  EXPECT_EQ(direct_chunks(rs, kCopyEngineDirectChunks), 1);
  EXPECT_EQ(direct_chunks(rs, DirectChunkRule{2 * mib, 4 * mib, 1 * mib}), 4);
  EXPECT_EQ(direct_chunks(rs, DirectChunkRule{2 * mib, 8 * mib, 1 * mib}), 2);
}

// The SM transport reaches only one node's GPUs and moves device memory:
// on a host plan, or not built, it fails saying so.
// The peer transports hand the sequential algorithm's collectives to NCCL
// (their rows say so): without NCCL that plan fails saying how to build it.
TEST(PlannerErrors, SequentialOverPeerTransportsWithoutNccl) {
  Capabilities caps = everything();
  for (TransportDescription& t : caps.transports)
    if (t.id == Transport::Nccl) t.compiled = false;
  weave_plan_desc_t desc{};
  desc.algorithm = WEAVE_ALGORITHM_SEQUENTIAL;
  for (weave_transport_t transport : {WEAVE_TRANSPORT_COPY_ENGINE, WEAVE_TRANSPORT_SM}) {
    desc.transport = transport;
    expect_failure(desc, device_problem(), {}, caps, WEAVE_ERROR_NOT_COMPILED, "WEAVE_ENABLE_NCCL");
  }
  desc.algorithm = WEAVE_ALGORITHM_RING;
  EXPECT_EQ(resolve_options(desc, device_problem(), {}, caps).transport, Transport::Sm);
}

TEST(PlannerErrors, SmTransportOnAHostPlanOrNotBuilt) {
  weave_plan_desc_t desc{};
  desc.transport = WEAVE_TRANSPORT_SM;
  expect_failure(desc, host_problem(), {}, everything(), WEAVE_ERROR_UNSUPPORTED, "the sm transport moves device");
  Capabilities caps = host_only();
  caps.cuda = true;
  expect_failure(desc, device_problem(), {}, caps, WEAVE_ERROR_NOT_COMPILED, "the SM transport is not compiled");
  expect_failure(desc, device_problem(), {}, caps, WEAVE_ERROR_NOT_COMPILED, "WEAVE_ENABLE_CUDA");
}

// --- Requests that cannot be satisfied ------------------------------------

TEST(PlannerErrors, DirectHasNoRingDirection) {
  weave_plan_desc_t desc{};
  desc.algorithm = WEAVE_ALGORITHM_DIRECT;
  desc.direction = WEAVE_DIRECTION_BACKWARD;
  expect_failure(desc, host_problem(weave::internal::Operation::AgGemm), {}, host_only(), WEAVE_ERROR_UNSUPPORTED,
                 "direction = 2 is for rings");
  desc.direction = WEAVE_DIRECTION_BIDIRECTIONAL;
  expect_failure(desc, host_problem(), {}, host_only(), WEAVE_ERROR_UNSUPPORTED, "direction = 3 is for rings");
  desc.direction = WEAVE_DIRECTION_FORWARD;
  desc.chunks_per_shard = 1;
  const Resolved r = resolve_options(desc, host_problem(), {}, host_only());
  EXPECT_EQ(r.schedule.algorithm, Algorithm::Direct);
  EXPECT_EQ(r.schedule.chunks_per_shard, 1);
}

// The pipelined collectives run every operation, have no ring direction,
// and cut shards into kPipelinedChunks chunks unless told otherwise.
TEST(Planner, PipelinedForEveryOperationWithoutADirection) {
  for (auto op : {weave::internal::Operation::AgGemm, weave::internal::Operation::GemmRs,
                  weave::internal::Operation::GemmAr}) {
    weave_plan_desc_t desc{};
    desc.algorithm = WEAVE_ALGORITHM_PIPELINED;
    Resolved r = resolve_options(desc, host_problem(op), {}, host_only());
    EXPECT_EQ(r.schedule.algorithm, Algorithm::Pipelined);
    EXPECT_EQ(r.schedule.direction, Direction::Forward);
    EXPECT_EQ(r.schedule.chunks_per_shard, kPipelinedChunks);
    desc.chunks_per_shard = 3;
    EXPECT_EQ(resolve_options(desc, host_problem(op), {}, host_only()).schedule.chunks_per_shard, 3);
    desc.direction = WEAVE_DIRECTION_BACKWARD;
    expect_failure(desc, host_problem(op), {}, host_only(), WEAVE_ERROR_UNSUPPORTED,
                   "the pipelined algorithm has no direction");
    desc = {};
    r = resolve_options(desc, host_problem(op), {{"WEAVE_ALGORITHM", "pipelined"}}, host_only());
    EXPECT_EQ(r.schedule.algorithm, Algorithm::Pipelined);
  }
  // Over a transport whose collectives NCCL runs, NCCL must be built.
  Capabilities caps = everything();
  for (TransportDescription& t : caps.transports)
    if (t.id == Transport::Nccl) t.compiled = false;
  weave_plan_desc_t desc{};
  desc.algorithm = WEAVE_ALGORITHM_PIPELINED;
  desc.transport = WEAVE_TRANSPORT_COPY_ENGINE;
  expect_failure(desc, device_problem(), {}, caps, WEAVE_ERROR_NOT_COMPILED, "the pipelined algorithm over the");
}

// AG-GEMM rows that travel with scales (FP8) are gathered by the ring and
// the sequential plan only: the pipelined and hierarchical algorithms asked
// for by name are refused with the types named, asked for through
// WEAVE_ALGORITHM they give way to the ring, and the model never weighs
// them; the reductions, whose rows do not travel, run them with FP8.
TEST(Planner, ScaledRowsTravelInRingsOnly) {
  GroupCase g;
  g.operation = weave::internal::Operation::AgGemm;
  g.ranks = 4;
  g.m = 64;
  g.n = 32;
  g.k = 48;
  g.ab_type = weave::internal::DType::E4M3;
  g.dtype = weave::internal::DType::BF16;
  g.a_scale = g.b_scale = weave::internal::ScaleMode::RowWise;
  const weave::internal::Problem fp8 = make_group_problems(g)[0];
  Capabilities caps = host_only();
  caps.nodes.node_of_rank = {0, 0, 1, 1};
  caps.nodes.nodes = 2;
  for (weave_algorithm_t algorithm : {WEAVE_ALGORITHM_PIPELINED, WEAVE_ALGORITHM_HIERARCHICAL}) {
    weave_plan_desc_t desc{};
    desc.algorithm = algorithm;
    expect_failure(desc, fp8, {}, caps, WEAVE_ERROR_UNSUPPORTED, "AG-GEMM gathers unscaled rows; e4m3");
  }
  for (const char* name : {"pipelined", "hierarchical"}) {
    const Resolved r = resolve_options(weave_plan_desc_t{}, fp8, {{"WEAVE_ALGORITHM", name}}, caps);
    EXPECT_EQ(r.schedule.algorithm, Algorithm::Ring) << name;
    EXPECT_NE(r.notes.find("gather unscaled rows"), std::string::npos) << r.notes;
  }
  g.operation = weave::internal::Operation::GemmRs;
  weave_plan_desc_t desc{};
  desc.algorithm = WEAVE_ALGORITHM_PIPELINED;
  EXPECT_EQ(resolve_options(desc, make_group_problems(g)[0], {}, caps).schedule.algorithm, Algorithm::Pipelined);
}

// Hierarchical plans take the node of every group rank from the node
// layout, need the same number of ranks on every node, and have no ring
// direction.
TEST(Planner, HierarchicalNeedsEvenNodes) {
  Capabilities caps = host_only();
  caps.nodes.node_of_rank = {0, 0, 1, 1};
  caps.nodes.nodes = 2;
  weave_plan_desc_t desc{};
  desc.algorithm = WEAVE_ALGORITHM_HIERARCHICAL;
  Resolved r = resolve_options(desc, host_problem(), {}, caps);
  EXPECT_EQ(r.schedule.algorithm, Algorithm::Hierarchical);
  EXPECT_EQ(r.schedule.node_of_rank, caps.nodes.node_of_rank);
  EXPECT_EQ(r.schedule.chunks_per_shard, kPipelinedChunks);
  desc.algorithm = WEAVE_ALGORITHM_AUTO;
  r = resolve_options(desc, host_problem(weave::internal::Operation::AgGemm), {{"WEAVE_ALGORITHM", "hierarchical"}}, caps);
  EXPECT_EQ(r.schedule.algorithm, Algorithm::Hierarchical);
  desc.algorithm = WEAVE_ALGORITHM_HIERARCHICAL;
  desc.direction = WEAVE_DIRECTION_BIDIRECTIONAL;
  expect_failure(desc, host_problem(), {}, caps, WEAVE_ERROR_UNSUPPORTED, "the hierarchical algorithm has no direction");
  desc.direction = WEAVE_DIRECTION_AUTO;
  caps.nodes.node_of_rank = {0, 0, 0, 1};
  expect_failure(desc, host_problem(), {}, caps, WEAVE_ERROR_UNSUPPORTED, "2 nodes (3, 1 ranks)");
  // No layout found: one node of every rank.
  EXPECT_EQ(resolve_options(desc, host_problem(), {}, host_only()).schedule.node_of_rank, std::vector<int>(4, 0));
}

// What reductions move: the two flags each ask for one type, and both at
// once is an error; float32 products over a transport that reads peers'
// products in C's type travel as messages, and the plan says so.
TEST(Planner, ReductionWireFlags) {
  weave_plan_desc_t desc{};
  desc.flags = WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE;
  Resolved r = resolve_options(desc, host_problem(), {}, host_only());
  EXPECT_TRUE(r.schedule.reduce_in_accumulation_type);
  EXPECT_FALSE(r.schedule.reduce_in_output_type);
  desc.flags = WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE | WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE;
  expect_failure(desc, host_problem(), {}, host_only(), WEAVE_ERROR_INVALID_VALUE, "a reduction moves one type");
  desc = {};
  desc.transport = WEAVE_TRANSPORT_SM;
  desc.algorithm = WEAVE_ALGORITHM_DIRECT;
  const weave::internal::Problem rs = device_case(weave::internal::Operation::GemmRs);
  EXPECT_TRUE(resolve_options(desc, rs, {}, everything()).schedule.peer_sums);
  desc.flags = WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE;
  r = resolve_options(desc, rs, {}, everything());
  EXPECT_FALSE(r.schedule.peer_sums);
  EXPECT_NE(r.notes.find("travel as messages"), std::string::npos) << r.notes;
}

// Whether a transport's own collectives sum 16-bit types comes from its
// row: NCCL's do (so the pipelined reductions of 16-bit C over two ranks
// hand it their products); UCX's are built from its own messages, and copy
// engines delegate their collectives to NCCL but keep the products on their
// own transfers.
TEST(Planner, CollectivesSum16BitFromTheTransportRow) {
  const weave::internal::Problem rs = device_case(weave::internal::Operation::GemmRs, 8192, 2);
  weave_plan_desc_t desc{};
  desc.algorithm = WEAVE_ALGORITHM_PIPELINED;
  const std::pair<weave_transport_t, bool> rows[] = {
      {WEAVE_TRANSPORT_NCCL, true}, {WEAVE_TRANSPORT_UCX, false}, {WEAVE_TRANSPORT_COPY_ENGINE, false}};
  for (const auto& [transport, sums] : rows) {
    desc.transport = transport;
    const Resolved r = resolve_options(desc, rs, {}, everything());
    EXPECT_EQ(r.schedule.collectives_sum_16_bit, sums) << r.notes;
    const ReductionWire wire = reduction_wire(rs, r.schedule, Algorithm::Pipelined);
    EXPECT_EQ(wire.summed_by_collective, sums) << r.notes;
    EXPECT_EQ(wire.products, !sums) << r.notes;
    EXPECT_EQ(wire.type, weave::internal::DType::BF16);
  }
  // Four ranks over NCCL: its ring would round at every hop, so the
  // products travel point to point.
  desc.transport = WEAVE_TRANSPORT_NCCL;
  const weave::internal::Problem four = device_case(weave::internal::Operation::GemmRs, 8192, 4);
  const Resolved r = resolve_options(desc, four, {}, everything());
  EXPECT_TRUE(reduction_wire(four, r.schedule, Algorithm::Pipelined).products);
}

TEST(PlannerErrors, BidirectionalWithOneChunk) {
  weave_plan_desc_t desc{};
  desc.direction = WEAVE_DIRECTION_BIDIRECTIONAL;
  desc.chunks_per_shard = 1;
  expect_failure(desc, host_problem(), {}, host_only(), WEAVE_ERROR_UNSUPPORTED, "chunks_per_shard");
}

TEST(PlannerErrors, UnknownEnvironmentValues) {
  const weave_plan_desc_t desc{};
  const weave::internal::Problem p = host_problem();
  expect_failure(desc, p, {{"WEAVE_ALGORITHM", "fastest"}}, host_only(), WEAVE_ERROR_INVALID_VALUE,
                 "WEAVE_ALGORITHM=fastest");
  expect_failure(desc, p, {{"WEAVE_TRANSPORT", "tcp"}}, host_only(), WEAVE_ERROR_INVALID_VALUE, "WEAVE_TRANSPORT=tcp");
  expect_failure(desc, p, {{"WEAVE_DIRECTION", "up"}}, host_only(), WEAVE_ERROR_INVALID_VALUE, "WEAVE_DIRECTION=up");
  expect_failure(desc, p, {{"WEAVE_PROGRESS", "poll"}}, host_only(), WEAVE_ERROR_INVALID_VALUE, "WEAVE_PROGRESS=poll");
  expect_failure(desc, p, {{"WEAVE_CHUNKS", "two"}}, host_only(), WEAVE_ERROR_INVALID_VALUE, "WEAVE_CHUNKS=two");
  expect_failure(desc, p, {{"WEAVE_CHUNKS", "0"}}, host_only(), WEAVE_ERROR_INVALID_VALUE, "WEAVE_CHUNKS=0");
  expect_failure(desc, p, {{"WEAVE_CHUNKS", "3x"}}, host_only(), WEAVE_ERROR_INVALID_VALUE, "WEAVE_CHUNKS=3x");
  expect_failure(desc, p, {{"WEAVE_TIMEOUT", "-5"}}, host_only(), WEAVE_ERROR_INVALID_VALUE, "WEAVE_TIMEOUT=-5");
  expect_failure(desc, p, {{"WEAVE_COMPUTE_STREAMS", "0"}}, host_only(), WEAVE_ERROR_INVALID_VALUE,
                 "WEAVE_COMPUTE_STREAMS=0");
}

TEST(PlannerErrors, ThreadProgressWithoutMpiThreadSupport) {
  weave_plan_desc_t desc{};
  desc.progress = WEAVE_PROGRESS_THREAD;
  for (int level : {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED}) {
    Capabilities caps = host_only();
    caps.mpi_thread_level = level;
    expect_failure(desc, host_problem(), {}, caps, WEAVE_ERROR_UNSUPPORTED, "MPI_THREAD_SERIALIZED");
  }
  // The same request through the environment.
  const weave_plan_desc_t automatic{};
  expect_failure(automatic, host_problem(), {{"WEAVE_PROGRESS", "thread"}}, host_only(), WEAVE_ERROR_UNSUPPORTED,
                 "WEAVE_PROGRESS_THREAD");
}

TEST(PlannerErrors, TransportsAndBackendsNotCompiled) {
  weave_plan_desc_t desc{};
  desc.transport = WEAVE_TRANSPORT_NCCL;
  Capabilities caps = host_only();
  caps.cuda = true;
  expect_failure(desc, device_problem(), {}, caps, WEAVE_ERROR_NOT_COMPILED, "WEAVE_ENABLE_NCCL");
  desc.transport = WEAVE_TRANSPORT_UCX;
  expect_failure(desc, host_problem(), {}, host_only(), WEAVE_ERROR_NOT_COMPILED, "WEAVE_ENABLE_UCX");
  expect_failure(desc, host_problem(), {{"WEAVE_TRANSPORT", "nccl"}}, host_only(), WEAVE_ERROR_NOT_COMPILED,
                 "WEAVE_ENABLE_UCX");  // explicit transport wins over the environment
  desc.transport = WEAVE_TRANSPORT_COPY_ENGINE;
  expect_failure(desc, device_problem(), {}, caps, WEAVE_ERROR_NOT_COMPILED, "copy-engine");
  desc.transport = WEAVE_TRANSPORT_AUTO;
  desc.backend = WEAVE_BACKEND_CUDA;
  expect_failure(desc, device_problem(), {}, host_only(), WEAVE_ERROR_NOT_COMPILED, "WEAVE_ENABLE_CUDA");
  // Device matrices pick the CUDA backend automatically; not silently the host.
  const weave_plan_desc_t automatic{};
  expect_failure(automatic, device_problem(), {}, host_only(), WEAVE_ERROR_NOT_COMPILED, "WEAVE_ENABLE_CUDA");
  // A device plan without NCCL does not fall back to host MPI.
  try {
    resolve_options(automatic, device_problem(), {}, caps);
    ADD_FAILURE() << "a device plan without NCCL was accepted";
  } catch (const weave::internal::Error& e) {
    EXPECT_TRUE(e.status() == WEAVE_ERROR_NOT_COMPILED || e.status() == WEAVE_ERROR_UNSUPPORTED) << e.what();
    EXPECT_NE(std::string(e.what()).find("WEAVE_ENABLE_NCCL"), std::string::npos) << e.what();
  }
}

// The type table says which backend runs a type: the host runs the 16-bit
// types (emulated); a type whose host column says no is refused by name.
TEST(PlannerErrors, HostBackendTypesAndMemory) {
  weave_plan_desc_t desc{};
  for (weave::internal::DType t : {weave::internal::DType::F16, weave::internal::DType::BF16})
    EXPECT_NO_THROW(resolve_options(desc, host_problem(weave::internal::Operation::GemmRs, 4, t), {}, host_only()));
  weave::internal::Problem scale_bytes_as_c = host_problem();
  scale_bytes_as_c.c_type = weave::internal::DType::UE8M0;
  expect_failure(desc, scale_bytes_as_c, {}, host_only(), WEAVE_ERROR_UNSUPPORTED_TYPE, "host backend does not run ue8m0");
  desc.backend = WEAVE_BACKEND_HOST;
  expect_failure(desc, device_problem(weave::internal::DType::F32), {}, everything(), WEAVE_ERROR_POINTER_KIND, "device");
  desc.backend = WEAVE_BACKEND_CUDA;
  expect_failure(desc, host_problem(), {}, everything(), WEAVE_ERROR_POINTER_KIND, "WEAVE_MEMORY_DEVICE");
}

TEST(PlannerErrors, DeviceTransportOnAHostPlan) {
  weave_plan_desc_t desc{};
  desc.transport = WEAVE_TRANSPORT_NCCL;
  expect_failure(desc, host_problem(), {}, everything(), WEAVE_ERROR_UNSUPPORTED, "nccl");
  desc.transport = WEAVE_TRANSPORT_COPY_ENGINE;
  expect_failure(desc, host_problem(), {}, everything(), WEAVE_ERROR_UNSUPPORTED, "copy_engine");
}

TEST(PlannerErrors, EnumsOutOfRange) {
  const weave::internal::Problem p = host_problem();
  weave_plan_desc_t desc{};
  desc.backend = static_cast<weave_backend_t>(7);
  expect_failure(desc, p, {}, host_only(), WEAVE_ERROR_INVALID_VALUE, "backend = 7");
  desc = {};
  desc.transport = static_cast<weave_transport_t>(9);
  expect_failure(desc, p, {}, host_only(), WEAVE_ERROR_INVALID_VALUE, "transport = 9");
  desc = {};
  desc.algorithm = static_cast<weave_algorithm_t>(7);
  expect_failure(desc, p, {}, host_only(), WEAVE_ERROR_INVALID_VALUE, "algorithm = 7");
  desc = {};
  desc.direction = static_cast<weave_direction_t>(9);
  expect_failure(desc, p, {}, host_only(), WEAVE_ERROR_INVALID_VALUE, "direction = 9");
  desc = {};
  desc.progress = static_cast<weave_progress_t>(6);
  expect_failure(desc, p, {}, host_only(), WEAVE_ERROR_INVALID_VALUE, "progress = 6");
}

TEST(PlannerErrors, NegativeCountsAndUnknownFlags) {
  const weave::internal::Problem p = host_problem();
  weave_plan_desc_t desc{};
  desc.chunks_per_shard = -2;
  expect_failure(desc, p, {}, host_only(), WEAVE_ERROR_INVALID_VALUE, "chunks_per_shard = -2");
  desc = {};
  desc.compute_streams = -1;
  expect_failure(desc, p, {}, host_only(), WEAVE_ERROR_INVALID_VALUE, "compute_streams = -1");
  desc = {};
  desc.flags = 1 << 20;
  expect_failure(desc, p, {}, host_only(), WEAVE_ERROR_INVALID_VALUE, "flags");
  desc = {};
  desc.flags = WEAVE_FLAG_GATHERED_OUTPUT;
  expect_failure(desc, host_problem(weave::internal::Operation::GemmRs), {}, host_only(), WEAVE_ERROR_INVALID_VALUE,
                 "WEAVE_FLAG_GATHERED_OUTPUT");
}

// WEAVE_GEMM of 64 x 64 x 5000 over a 2 x 2 grid of 32 x 32 blocks.
weave::internal::Problem grid_problem(int prows = 2, int pcols = 2, int64_t k = 5000) {
  GridCase g;
  g.prows = prows;
  g.pcols = pcols;
  g.m = g.n = 64;
  g.k = k;
  for (GridMatrix* x : {&g.a, &g.b, &g.c}) {
    x->mb = 32;
    x->nb = 32;
  }
  return make_grid_problems(g)[0];
}

TEST(Planner, GemmRunsSummaWithPanelsOfTheHostWidth) {
  const weave_plan_desc_t desc{};
  const Resolved r = resolve_options(desc, grid_problem(), {}, host_only());
  EXPECT_EQ(r.schedule.algorithm, Algorithm::Summa);
  EXPECT_EQ(r.schedule.panel_width, kHostPanelWidth);
  EXPECT_EQ(resolve_options(desc, grid_problem(1, 1), {}, host_only()).schedule.algorithm, Algorithm::Sequential);
  EXPECT_EQ(resolve_options(desc, grid_problem(), {{"WEAVE_ALGORITHM", "sequential"}}, host_only()).schedule.algorithm,
            Algorithm::Sequential);
  // The 1-D operations' algorithms in the environment leave WEAVE_GEMM on SUMMA, and say so.
  const Resolved ring = resolve_options(desc, grid_problem(), {{"WEAVE_ALGORITHM", "ring"}}, host_only());
  EXPECT_EQ(ring.schedule.algorithm, Algorithm::Summa);
  EXPECT_NE(ring.notes.find("SUMMA chosen"), std::string::npos) << ring.notes;
  for (const char* other : {"direct", "pipelined", "hierarchical"})
    EXPECT_EQ(resolve_options(desc, grid_problem(), {{"WEAVE_ALGORITHM", other}}, host_only()).schedule.algorithm,
              Algorithm::Summa)
        << other;
  // And WEAVE_ALGORITHM=summa leaves them on their ring.
  EXPECT_EQ(resolve_options(desc, host_problem(), {{"WEAVE_ALGORITHM", "summa"}}, host_only()).schedule.algorithm,
            Algorithm::Ring);
  EXPECT_EQ(resolve_options(desc, grid_problem(), {{"WEAVE_PANEL_WIDTH", "48"}}, host_only()).schedule.panel_width, 48);
  // At most kMaxSummaPanels panels: a K that needs more widens them.
  const Resolved wide = resolve_options(desc, grid_problem(2, 2, kMaxSummaPanels * 300), {}, host_only());
  EXPECT_EQ(wide.schedule.panel_width, 300);
}

TEST(Planner, GemmOnDevicesTakesTheDevicePanelWidth) {
  // Device memory: the CUDA backend's default width (wider than the host's:
  // panels join blocks up to it), WEAVE_PANEL_WIDTH still wins.
  weave::internal::Problem p = grid_problem();
  p.memory = weave::internal::Memory::Device;
  const Resolved r = resolve_options(weave_plan_desc_t{}, p, {}, everything());
  EXPECT_EQ(r.backend, Backend::Cuda);
  EXPECT_EQ(r.schedule.panel_width, kDevicePanelWidth);
  EXPECT_GT(kDevicePanelWidth, kHostPanelWidth);
  EXPECT_EQ(resolve_options(weave_plan_desc_t{}, p, {{"WEAVE_PANEL_WIDTH", "2048"}}, everything()).schedule.panel_width,
            2048);
}

// WEAVE_GEMM on devices, on a grid of one column (one row), in the types
// bands of C do not take (f32 here): where SUMMA would pack every rank's
// whole block of op(A) (op(B)) from pieces that lie apart, at 8 times the
// bytes the rank receives or more, the sequential plan; otherwise, on the
// host, asked for, or with blocks as wide as the panels (nothing packed),
// SUMMA. Where bands of C run (bf16, f64), they read the held operand where
// it lies: no sequential plan.
TEST(Planner, GemmOnALineGridPackingMostOfItsBytesRunsSequentially) {
  auto line = [](int prows, int pcols, int64_t m, int64_t n, int64_t block, bool device = true,
                 weave::internal::DType dtype = weave::internal::DType::F32) {
    GridCase g;
    g.prows = prows;
    g.pcols = pcols;
    g.m = m;
    g.n = n;
    g.k = 512;
    g.dtype = dtype;
    for (GridMatrix* x : {&g.a, &g.b, &g.c}) x->mb = x->nb = block;
    weave::internal::Problem p = make_grid_problems(g)[0];
    if (device) p.memory = weave::internal::Memory::Device;
    return p;
  };
  const weave_plan_desc_t desc{};
  const Capabilities caps = everything();
  // 2 x 1: op(A) held whole along K, 8192 rows against B's 256 columns: 32.
  const weave::internal::Problem tall = line(2, 1, 8192, 256, 64);
  EXPECT_DOUBLE_EQ(line_grid_packing_ratio(tall, kDevicePanelWidth), 32.0);
  const Resolved r = resolve_options(desc, tall, {}, caps);
  EXPECT_EQ(r.schedule.algorithm, Algorithm::Sequential) << r.notes;
  EXPECT_NE(r.notes.find("32 x the bytes it receives"), std::string::npos) << r.notes;
  // 1 x 2: op(B) held whole along K, 8192 columns against A's 256 rows.
  EXPECT_EQ(resolve_options(desc, line(1, 2, 256, 8192, 64), {}, caps).schedule.algorithm, Algorithm::Sequential);
  // Ratio 1 and 1/32: SUMMA.
  EXPECT_DOUBLE_EQ(line_grid_packing_ratio(line(2, 1, 512, 512, 64), kDevicePanelWidth), 1.0);
  EXPECT_EQ(resolve_options(desc, line(2, 1, 512, 512, 64), {}, caps).schedule.algorithm, Algorithm::Summa);
  EXPECT_EQ(resolve_options(desc, line(1, 2, 8192, 256, 64), {}, caps).schedule.algorithm, Algorithm::Summa);
  // Blocks of K as wide as the panels: nothing is packed.
  EXPECT_EQ(line_grid_packing_ratio(line(2, 1, 8192, 256, 256), 256), 0.0);
  EXPECT_EQ(resolve_options(desc, line(2, 1, 8192, 256, 256), {{"WEAVE_PANEL_WIDTH", "256"}}, caps).schedule.algorithm,
            Algorithm::Summa);
  // Asked for, on the host, or on a 2-D grid: SUMMA.
  EXPECT_EQ(resolve_options(desc, tall, {{"WEAVE_ALGORITHM", "summa"}}, caps).schedule.algorithm, Algorithm::Summa);
  weave_plan_desc_t asked{};
  asked.algorithm = WEAVE_ALGORITHM_SUMMA;
  EXPECT_EQ(resolve_options(asked, tall, {}, caps).schedule.algorithm, Algorithm::Summa);
  EXPECT_EQ(resolve_options(desc, line(2, 1, 8192, 256, 64, false), {}, host_only()).schedule.algorithm,
            Algorithm::Summa);
  EXPECT_EQ(line_grid_packing_ratio(line(2, 2, 8192, 256, 64), kDevicePanelWidth), 0.0);
  for (const auto dtype : {weave::internal::DType::BF16, weave::internal::DType::F64}) {
    const Resolved banded = resolve_options(desc, line(2, 1, 8192, 256, 64, true, dtype), {}, caps);
    EXPECT_EQ(banded.schedule.algorithm, Algorithm::Summa) << banded.notes;
    EXPECT_EQ(banded.schedule.gemm_bands, kDeviceGemmBands) << banded.notes;
  }
}

// WEAVE_GEMM in bands of C: device plans left automatic in bf16, f16 and
// f64 on a grid of one row or one column, and in bf16 and f16 on 2-D grids;
// not for f32 (not measured), f64 on 2-D grids (not measured), the host,
// SUMMA asked for by name, or where the sequential plan was asked for;
// WEAVE_GEMM_BANDS sets it for any SUMMA plan (0: panels).
// Rank 0's WEAVE_GEMM problem of m x k x n over a prows x pcols grid, every
// matrix in blocks of 1024, in device memory unless `device` is false.
weave::internal::Problem blocked_grid_problem(int prows, int pcols, int64_t m, int64_t k, int64_t n,
                                              weave::internal::DType t, bool device = true) {
  GridCase g;
  g.prows = prows;
  g.pcols = pcols;
  g.m = m;
  g.n = n;
  g.k = k;
  g.dtype = t;
  for (GridMatrix* x : {&g.a, &g.b, &g.c}) x->mb = x->nb = 1024;
  weave::internal::Problem p = make_grid_problems(g)[0];
  if (device) p.memory = weave::internal::Memory::Device;
  return p;
}

TEST(Planner, GemmOnALineGridRunsInBandsOfC) {
  using weave::internal::DType;
  auto problem = [](int prows, int pcols, DType t, bool device = true) {
    return blocked_grid_problem(prows, pcols, 4096, 4096, 4096, t, device);
  };
  const weave_plan_desc_t desc{};
  const Capabilities caps = everything();
  for (const auto& [prows, pcols] : {std::pair{1, 2}, std::pair{2, 1}, std::pair{1, 4}}) {
    const Resolved r = resolve_options(desc, problem(prows, pcols, DType::BF16), {}, caps);
    EXPECT_EQ(r.schedule.algorithm, Algorithm::Summa) << r.notes;
    EXPECT_EQ(r.schedule.gemm_bands, kDeviceGemmBands) << r.notes;
    EXPECT_NE(r.notes.find(pcols > 1 ? "op(A) travels in bands" : "op(B) travels in bands"), std::string::npos)
        << r.notes;
  }
  EXPECT_EQ(resolve_options(desc, problem(1, 2, DType::F16), {}, caps).schedule.gemm_bands, kDeviceGemmBands);
  EXPECT_EQ(resolve_options(desc, problem(1, 2, DType::F64), {}, caps).schedule.gemm_bands, kDeviceGemmBands);
  EXPECT_EQ(resolve_options(desc, problem(1, 2, DType::F32), {}, caps).schedule.gemm_bands, 0);
  const Resolved square = resolve_options(desc, problem(2, 2, DType::BF16), {}, caps);
  EXPECT_EQ(square.schedule.algorithm, Algorithm::Summa) << square.notes;
  EXPECT_EQ(square.schedule.gemm_bands, kDeviceGemmBands) << square.notes;
  EXPECT_NE(square.notes.find("op(B) is gathered whole first and op(A) travels in bands"), std::string::npos)
      << square.notes;
  EXPECT_EQ(resolve_options(desc, problem(2, 2, DType::F16), {}, caps).schedule.gemm_bands, kDeviceGemmBands);
  EXPECT_EQ(resolve_options(desc, problem(2, 2, DType::F64), {}, caps).schedule.gemm_bands, 0);
  EXPECT_EQ(resolve_options(desc, problem(1, 2, DType::F32, false), {}, host_only()).schedule.gemm_bands, 0);
  weave_plan_desc_t asked{};
  asked.algorithm = WEAVE_ALGORITHM_SUMMA;
  EXPECT_EQ(resolve_options(asked, problem(1, 2, DType::BF16), {}, caps).schedule.gemm_bands, 0);
  EXPECT_EQ(resolve_options(desc, problem(1, 2, DType::BF16), {{"WEAVE_ALGORITHM", "sequential"}}, caps)
                .schedule.gemm_bands,
            0);
  // The environment: panels, or bands anywhere SUMMA runs (host, 2-D grids).
  const Resolved panels = resolve_options(desc, problem(1, 2, DType::BF16), {{"WEAVE_GEMM_BANDS", "0"}}, caps);
  EXPECT_EQ(panels.schedule.gemm_bands, 0);
  EXPECT_NE(panels.notes.find("SUMMA's panels (WEAVE_GEMM_BANDS)"), std::string::npos) << panels.notes;
  EXPECT_EQ(resolve_options(desc, problem(2, 2, DType::F64), {{"WEAVE_GEMM_BANDS", "6"}}, caps).schedule.gemm_bands, 6);
  EXPECT_EQ(resolve_options(desc, problem(1, 2, DType::F64, false), {{"WEAVE_GEMM_BANDS", "3"}}, host_only())
                .schedule.gemm_bands,
            3);
  expect_failure(desc, problem(1, 2, DType::BF16), {{"WEAVE_GEMM_BANDS", "-1"}}, caps, WEAVE_ERROR_INVALID_VALUE,
                 "WEAVE_GEMM_BANDS");
}

// Where each rank's GEMM does many flops per byte it receives, a 16-bit
// device plan left automatic runs the sequential plan instead of bands.
TEST(Planner, GemmWithLittleToReceiveRunsSequentially) {
  using weave::internal::DType;
  // 131072x4096x4096 on 4 x 1: 32768 rows per rank, 3/4 of op(B) received.
  const weave::internal::Problem tall = blocked_grid_problem(4, 1, 131072, 4096, 4096, DType::BF16);
  EXPECT_DOUBLE_EQ(gemm_flops_per_received_byte(tall), 2.0 * 32768 * 4096 * 4096 / (4096.0 * 4096 * 2 * 3 / 4));
  const weave_plan_desc_t desc{};
  const Capabilities caps = everything();
  const Resolved r = resolve_options(desc, tall, {}, caps);
  EXPECT_EQ(r.schedule.algorithm, Algorithm::Sequential) << r.notes;
  EXPECT_NE(r.notes.find("flops per byte it receives"), std::string::npos) << r.notes;
  // Below the threshold (16384^3 on 2 x 1: 16384 flops per byte), bands.
  const weave::internal::Problem square = blocked_grid_problem(2, 1, 16384, 16384, 16384, DType::BF16);
  EXPECT_DOUBLE_EQ(gemm_flops_per_received_byte(square), 16384.0);
  EXPECT_EQ(resolve_options(desc, square, {}, caps).schedule.gemm_bands, kDeviceGemmBands);
  // f64 keeps its bands; bands asked for, or SUMMA by name, are kept.
  EXPECT_EQ(resolve_options(desc, blocked_grid_problem(4, 1, 131072, 4096, 4096, DType::F64), {}, caps).schedule.gemm_bands,
            kDeviceGemmBands);
  const Resolved asked = resolve_options(desc, tall, {{"WEAVE_GEMM_BANDS", "4"}}, caps);
  EXPECT_EQ(asked.schedule.algorithm, Algorithm::Summa) << asked.notes;
  EXPECT_EQ(asked.schedule.gemm_bands, 4) << asked.notes;
  weave_plan_desc_t summa{};
  summa.algorithm = WEAVE_ALGORITHM_SUMMA;
  EXPECT_EQ(resolve_options(summa, tall, {}, caps).schedule.algorithm, Algorithm::Summa);
}

TEST(PlannerErrors, GemmTakesNeitherRingsNorChunks) {
  const weave::internal::Problem p = grid_problem();
  weave_plan_desc_t desc{};
  desc.algorithm = WEAVE_ALGORITHM_DIRECT;
  expect_failure(desc, p, {}, host_only(), WEAVE_ERROR_UNSUPPORTED, "WEAVE_ALGORITHM_SUMMA");
  desc = {};
  desc.direction = WEAVE_DIRECTION_BIDIRECTIONAL;
  expect_failure(desc, p, {}, host_only(), WEAVE_ERROR_UNSUPPORTED, "direction");
  desc = {};
  desc.chunks_per_shard = 4;
  expect_failure(desc, p, {}, host_only(), WEAVE_ERROR_UNSUPPORTED, "WEAVE_PANEL_WIDTH");
  expect_failure(weave_plan_desc_t{}, p, {{"WEAVE_PANEL_WIDTH", "0"}}, host_only(), WEAVE_ERROR_INVALID_VALUE,
                 "WEAVE_PANEL_WIDTH");
  desc = {};
  desc.algorithm = WEAVE_ALGORITHM_SUMMA;
  expect_failure(desc, host_problem(), {}, host_only(), WEAVE_ERROR_UNSUPPORTED, "WEAVE_GEMM");
}

// Every variable that is set is checked at plan creation, also where the
// plan at hand does not read it (a bad WEAVE_ALL_GATHER_LAG on an AG-GEMM, a
// bad WEAVE_PANEL_WIDTH on a GEMM-RS used to pass); every word and both ends
// of every range of the table pass, and one past them does not.
TEST(Planner, EveryVariableSetIsCheckedWhereThePlanDoesNotReadIt) {
  using weave::internal::Operation;
  const weave_plan_desc_t desc{};
  expect_failure(desc, host_problem(Operation::AgGemm), {{"WEAVE_ALL_GATHER_LAG", "9"}}, host_only(),
                 WEAVE_ERROR_INVALID_VALUE, "WEAVE_ALL_GATHER_LAG=9");
  expect_failure(desc, host_problem(Operation::GemmRs), {{"WEAVE_PANEL_WIDTH", "0"}}, host_only(),
                 WEAVE_ERROR_INVALID_VALUE, "WEAVE_PANEL_WIDTH=0");
  expect_failure(desc, grid_problem(), {{"WEAVE_CHUNKS", "abc"}}, host_only(), WEAVE_ERROR_INVALID_VALUE,
                 "WEAVE_CHUNKS=abc");
  expect_failure(desc, host_problem(Operation::GemmAr), {{"WEAVE_DEVICE_WAIT", "bogus"}}, host_only(),
                 WEAVE_ERROR_INVALID_VALUE, "WEAVE_DEVICE_WAIT=bogus");
  for (const weave::internal::plan::VariableSyntax& row : weave::internal::plan::variable_syntax()) {
    std::vector<std::pair<std::string, bool>> values;  // value, accepted
    for (const std::string& word : row.words) values.push_back({word, true});
    if (row.words.empty()) {
      values.push_back({std::to_string(row.minimum), true});
      values.push_back({std::to_string(row.maximum), true});
      values.push_back({std::to_string(row.minimum - 1), false});
      values.push_back({std::to_string(row.maximum) + "0", false});
    }
    values.push_back({"no-such-value", false});
    for (const auto& [value, accepted] : values) {
      bool passed = true;
      try {
        weave::internal::plan::check_environment_syntax({{row.name, value}});
      } catch (const weave::internal::Error& e) {
        passed = false;
        EXPECT_EQ(e.status(), WEAVE_ERROR_INVALID_VALUE) << row.name << "=" << value;
      }
      EXPECT_EQ(passed, accepted) << row.name << "=" << value;
    }
  }
}

}  // namespace
}  // namespace weave_test
