// plan::resolve_options: explicit choices, environment overrides of the
// automatic ones, and the exact status (with a message naming the argument)
// for every request that cannot be satisfied.
#include <gtest/gtest.h>

#include <mpi.h>

#include <string>

#include "core/error.hpp"
#include "group_problem.hpp"
#include "plan/planner.hpp"

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

Capabilities host_only() {
  Capabilities caps;
  caps.mpi_thread_level = MPI_THREAD_SINGLE;
  return caps;
}

Capabilities everything() {
  Capabilities caps;
  caps.cuda = caps.nccl = caps.ucx = caps.copy_engine = true;
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
  auto large = [](Operation op, int64_t m = 8192, int ranks = 4) {
    GroupCase g;
    g.operation = op;
    g.ranks = ranks;
    g.m = m;
    g.n = g.k = 8192;  // m = 8192: 275 GFLOP per rank
    g.dtype = weave::internal::DType::BF16;
    weave::internal::Problem p = make_group_problems(g)[0];
    p.memory = weave::internal::Memory::Device;
    return p;
  };
  const weave_plan_desc_t desc{};
  Capabilities caps = everything();
  caps.copy_engine_usable = true;
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
    // Over two ranks GEMM-AR cuts a 32 MiB product shard in four, GEMM-RS
    // sends it whole.
    const int pair_chunks = op == Operation::GemmAr ? 4 : 1;
    EXPECT_EQ(resolve_options(desc, large(op, 4096, 2), {}, caps).schedule.chunks_per_shard, pair_chunks);
    EXPECT_EQ(resolve_options(desc, large(op, 4096 - 8, 2), {}, caps).schedule.chunks_per_shard, 1);
    EXPECT_EQ(resolve_options(desc, large(op, 1024), {}, caps).schedule.algorithm, Algorithm::Sequential);
  }
  // Over NCCL the rings measured slower than the sequential plan for the
  // reductions, and for AG-GEMM below 1 TFLOP per rank: sequential, said
  // in describe; WEAVE_ALGORITHM=ring still asks for the ring.
  caps.copy_engine_usable = false;
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

// One variable for a whole program: WEAVE_ALGORITHM=direct applies to the
// reductions, and AG-GEMM plans say they run the ring instead.
TEST(Planner, DirectFromTheEnvironmentAppliesToReductions) {
  const weave_plan_desc_t desc{};
  const Environment env{{"WEAVE_ALGORITHM", "direct"}};
  EXPECT_EQ(resolve_options(desc, host_problem(), env, host_only()).schedule.algorithm, Algorithm::Direct);
  const Resolved ag = resolve_options(desc, host_problem(weave::internal::Operation::AgGemm), env, host_only());
  EXPECT_EQ(ag.schedule.algorithm, Algorithm::Ring);
  EXPECT_NE(ag.notes.find("applies to GEMM-RS and GEMM-AR only"), std::string::npos) << ag.notes;
}

// --- Requests that cannot be satisfied ------------------------------------

TEST(PlannerErrors, DirectIsForReductionsWithoutARingDirection) {
  weave_plan_desc_t desc{};
  desc.algorithm = WEAVE_ALGORITHM_DIRECT;
  expect_failure(desc, host_problem(weave::internal::Operation::AgGemm), {}, host_only(), WEAVE_ERROR_UNSUPPORTED,
                 "WEAVE_ALGORITHM_DIRECT is for GEMM-RS and GEMM-AR");
  desc.direction = WEAVE_DIRECTION_BIDIRECTIONAL;
  expect_failure(desc, host_problem(), {}, host_only(), WEAVE_ERROR_UNSUPPORTED, "direction = 3 is for rings");
  desc.direction = WEAVE_DIRECTION_FORWARD;
  desc.chunks_per_shard = 1;
  const Resolved r = resolve_options(desc, host_problem(), {}, host_only());
  EXPECT_EQ(r.schedule.algorithm, Algorithm::Direct);
  EXPECT_EQ(r.schedule.chunks_per_shard, 1);
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

TEST(PlannerErrors, HostBackendTypesAndMemory) {
  weave_plan_desc_t desc{};
  for (weave::internal::DType t : {weave::internal::DType::F16, weave::internal::DType::BF16})
    expect_failure(desc, host_problem(weave::internal::Operation::GemmRs, 4, t), {}, host_only(),
                   WEAVE_ERROR_UNSUPPORTED_TYPE, "host backend supports f32 and f64");
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
  desc.algorithm = static_cast<weave_algorithm_t>(5);
  expect_failure(desc, p, {}, host_only(), WEAVE_ERROR_INVALID_VALUE, "algorithm = 5");
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

}  // namespace
}  // namespace weave_test
