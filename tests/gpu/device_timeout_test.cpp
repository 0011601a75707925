// A rank that never calls execute, after the others enqueued stream-ordered
// transfers that wait on the device for its flags: their device-side waits
// give up after the plan's timeout (2 s here), their streams drain, the plan
// reports WEAVE_ERROR_TIMEOUT (weave_plan_get_info's status, then the next
// execute, naming the step and the peer) and then WEAVE_ERROR_PLAN_FAILED,
// and every rank destroys the plan. For every operation over the transports
// that map their peers' memory (sm, copy_engine), overlapped algorithms only;
// and a rank whose peer gave up before it did (late to its execute: at 4
// ranks or more by less than the timeout, at 3 or more by more) reports the
// timeout too instead of taking what that peer passed on. Over NCCL
// (run_nccl_case) the NCCL calls that wait for the absent rank are bounded by
// the same timeout (on the host while NCCL connects, by the watchdog on the
// GPU), the grid's NCCL communicator is aborted, and the recovery is the
// documented one: destroy the plan, find a new plan over that grid refused,
// destroy the grid, and a new grid's plan computes the right result.
// WEAVE_FLAG_NO_EXECUTE_CHECK lets the others enqueue without waiting for the
// absent rank on the host. Needs 2 ranks or more, one GPU each; exits with 77
// (skipped) otherwise.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "cuda_device_memory.hpp"
#include "peer_problem.hpp"
#include "peer_test_harness.hpp"

namespace {

using weave_gpu_test::agree;
using weave_gpu_test::PeerProblem;

constexpr int kTimeoutMs = 2000;
// How long past the timeout the streams may take to drain: the first wait
// to give up makes every later one give up at once, but a wait starts only
// once its stream reaches it.
constexpr double kDrainSeconds = 8.0;

// The plan of every case: `algorithm`, the test's timeout, and no argument
// check before the first step (`unchecked`), so ranks enqueue without
// waiting for the absent one on the host.
weave_plan_desc_t plan_desc(const PeerProblem& p, weave_algorithm_t algorithm, bool unchecked) {
  weave_plan_desc_t pd = p.plan_desc();
  pd.algorithm = algorithm;
  pd.timeout_ms = kTimeoutMs;
  if (unchecked) pd.flags = WEAVE_FLAG_NO_EXECUTE_CHECK;
  return pd;
}

// `late_ms` > 0: the forward ring with rank 1 late by that long. A rank that
// gave up still runs the rest of its streams, and its later copies and
// flags reach its peers: rank 0 gives up on the absent rank's shard, then
// passes on what it never received. Over 4 ranks and more rank 1 does not
// border the absent rank, so, late by more than half the timeout, it would
// see that flag raised before its own deadline and finish with wrong rows
// and a plan reporting success: it must report WEAVE_ERROR_TIMEOUT too,
// naming a rank that gave up first (the alarm of device_flags.hpp). Over 3
// ranks rank 1 sends to the absent rank and its own deadline may come first
// (rank 0's wait for the absent rank's shard may begin only once rank 1's
// clear to send let rank 0's first send go); late by more than the
// timeout, it starts after rank 0 gave up, so it must stop at the alarm at
// once, not after its own timeout, at any number of ranks.
void run_case(weave_grid_t grid, cudaStream_t stream, const char* transport, weave_operation_t op,
              weave_algorithm_t algorithm, int late_ms = 0) {
  const int ranks = weave_gpu_test::peer_test_size(), rank = weave_gpu_test::peer_test_rank();
  if (late_ms > 0 && ranks < (late_ms > kTimeoutMs ? 3 : 4)) return;
  setenv("WEAVE_TRANSPORT", transport, 1);
  const std::string what = std::string(transport) + (op == WEAVE_AG_GEMM   ? " AG-GEMM"
                                                     : op == WEAVE_GEMM_RS ? " GEMM-RS"
                                                                           : " GEMM-AR") +
                           (algorithm == WEAVE_ALGORITHM_RING ? " ring" : " direct") +
                           (late_ms > 0 ? ", forward, rank 1 late by " + std::to_string(late_ms) + " ms" : "");
  PeerProblem p(grid, op, 64 * ranks, 32, 16 * ranks, WEAVE_ORDER_ROW_MAJOR);
  p.fill(0, 5);
  weave_plan_desc_t pd = plan_desc(p, algorithm, true);
  if (late_ms > 0) pd.direction = WEAVE_DIRECTION_FORWARD;
  weave_plan_t plan = nullptr;
  if (!agree(weave_plan_create(grid, &pd, &plan) == WEAVE_SUCCESS, what + ": plan creation", weave_last_error()))
    return;
  const int absent = ranks - 1;
  bool ok = true;
  std::string why;
  double waited = 0;
  if (rank != absent) {
    if (rank == 1 && late_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(late_ms));
    const auto start = std::chrono::steady_clock::now();
    ok = weave_execute(plan, 1.0, p.a(0), p.b(0), 0.0, p.c(0), nullptr, stream) == WEAVE_SUCCESS;
    if (!ok) why = std::string("the execute itself failed: ") + weave_last_error();
    WEAVE_TEST_CUDA(cudaStreamSynchronize(stream));
    waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  // The first rank to give up waited the whole timeout; the others may stop
  // sooner, at its alarm (they may have started later).
  double longest = 0;
  MPI_Allreduce(&waited, &longest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rank != absent) {
    if (ok && (longest < 0.9 * kTimeoutMs / 1000.0 || waited > kTimeoutMs / 1000.0 + kDrainSeconds)) {
      ok = false;
      why = "the stream drained after " + std::to_string(waited) + " s (the longest of any rank: " +
            std::to_string(longest) + " s)";
    }
    weave_plan_info_t info = WEAVE_PLAN_INFO_INIT;
    if (ok && (weave_plan_get_info(plan, &info) != WEAVE_SUCCESS || info.status != WEAVE_ERROR_TIMEOUT)) {
      ok = false;
      why = std::string("weave_plan_get_info's status is ") + weave_status_string(info.status) +
            (info.status == WEAVE_SUCCESS ? " (what a rank that gave up passed on was taken as data)" : "");
    }
    if (ok) {
      const weave_status_t next = weave_execute(plan, 1.0, p.a(0), p.b(0), 0.0, p.c(0), nullptr, stream);
      const std::string message = weave_last_error();
      const std::string peer = ranks == 2 ? "group rank 1" : "group rank";
      // The late rank stops at an alarm (of rank 0, or over 4 ranks and more
      // perhaps first of rank P-2, whose sends wait for the absent rank).
      const bool alarm_named =
          !(rank == 1 && late_ms > 0) || message.find("had given up waiting for a peer first") != std::string::npos;
      if (next != WEAVE_ERROR_TIMEOUT || message.find("step ") == std::string::npos ||
          message.find(peer) == std::string::npos || !alarm_named) {
        ok = false;
        why = std::string("the next execute returned ") + weave_status_string(next) + ": " + message;
      }
    }
    if (ok && weave_execute(plan, 1.0, p.a(0), p.b(0), 0.0, p.c(0), nullptr, stream) != WEAVE_ERROR_PLAN_FAILED) {
      ok = false;
      why = "an execute after the timeout did not say the plan failed";
    }
    WEAVE_TEST_CUDA(cudaStreamSynchronize(stream));
  }
  // Started after a peer gave up: the alarm was up before its first wait.
  if (ok && rank == 1 && late_ms > kTimeoutMs && waited > 0.5 * kTimeoutMs / 1000.0) {
    ok = false;
    why = "rank 1 started after rank 0 gave up and still waited " + std::to_string(waited) +
          " s instead of stopping at the alarm";
  }
  agree(ok, what + ": waits for an absent rank end in WEAVE_ERROR_TIMEOUT within the timeout", why);
  MPI_Barrier(MPI_COMM_WORLD);  // every stream has drained before any rank unmaps
  agree(weave_plan_destroy(plan) == WEAVE_SUCCESS, what + ": the plan is destroyed on every rank", weave_last_error());
}

// Over NCCL, on a grid of its own (the timeout aborts the grid's NCCL
// communicator).
// `connected`: every rank executes the plan once first, so NCCL has
// connected its peers and the later execute's calls go on the stream at
// once (the watchdog ends their kernels' wait); else the absent rank is
// absent from the first execute, where NCCL's connecting to it blocks the
// host (the watchdog ends that one timeout later).
void run_nccl_case(cudaStream_t stream, weave_operation_t op, weave_algorithm_t algorithm, bool connected) {
  setenv("WEAVE_TRANSPORT", "nccl", 1);
  const std::string what = std::string("nccl") + (op == WEAVE_AG_GEMM   ? " AG-GEMM"
                                                   : op == WEAVE_GEMM_RS ? " GEMM-RS"
                                                                         : " GEMM-AR") +
                           (algorithm == WEAVE_ALGORITHM_RING ? " ring" : " sequential") +
                           (connected ? ", after an execute of every rank" : ", at the first execute");
  const int ranks = weave_gpu_test::peer_test_size(), rank = weave_gpu_test::peer_test_rank();
  weave_grid_t grid = nullptr;
  if (!agree(weave_grid_create(MPI_COMM_WORLD, ranks, 1, &grid) == WEAVE_SUCCESS, what + ": grid", weave_last_error()))
    return;
  weave_plan_t plan = nullptr;
  bool ok = true;
  std::string why;
  {
    PeerProblem p(grid, op, 64 * ranks, 32, 16 * ranks, WEAVE_ORDER_ROW_MAJOR);
    p.fill(0, 5);
    weave_plan_desc_t pd = plan_desc(p, algorithm, true);
    if (!agree(weave_plan_create(grid, &pd, &plan) == WEAVE_SUCCESS, what + ": plan creation", weave_last_error())) {
      weave_grid_destroy(grid);
      return;
    }
    if (connected) {
      const bool ran = weave_execute(plan, 1.0, p.a(0), p.b(0), 0.0, p.c(0), nullptr, stream) == WEAVE_SUCCESS;
      std::string wrong = ran ? std::string() : weave_last_error();
      WEAVE_TEST_CUDA(cudaStreamSynchronize(stream));
      agree(ran && p.check(0, 5, &wrong), what + ": the execute of every rank computes the right result", wrong);
    }
    const int absent = ranks - 1;
    if (rank != absent) {
      // The timeout shows either in the execute itself (NCCL still
      // connecting to the absent rank on the host) or, once the calls are
      // on the stream, in the plan's status after the stream drained and in
      // the next execute; then the plan is failed.
      const auto start = std::chrono::steady_clock::now();
      const weave_status_t first = weave_execute(plan, 1.0, p.a(0), p.b(0), 0.0, p.c(0), nullptr, stream);
      std::string message = weave_last_error();
      WEAVE_TEST_CUDA(cudaStreamSynchronize(stream));
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (rank == 0)
        std::printf("     %s: the execute returned %s; it and its stream ended after %.2f s\n", what.c_str(),
                    weave_status_string(first), waited);
      if (waited < 0.9 * kTimeoutMs / 1000.0 || waited > kTimeoutMs / 1000.0 + kDrainSeconds) {
        ok = false;
        why = "the execute and its stream ended after " + std::to_string(waited) + " s (" +
              weave_status_string(first) + ")";
      } else if (first == WEAVE_SUCCESS) {
        weave_plan_info_t info = WEAVE_PLAN_INFO_INIT;
        if (weave_plan_get_info(plan, &info) != WEAVE_SUCCESS || info.status != WEAVE_ERROR_TIMEOUT) {
          ok = false;
          why = std::string("weave_plan_get_info's status is ") + weave_status_string(info.status);
        } else {
          const weave_status_t next = weave_execute(plan, 1.0, p.a(0), p.b(0), 0.0, p.c(0), nullptr, stream);
          message = weave_last_error();
          if (next != WEAVE_ERROR_TIMEOUT) {
            ok = false;
            why = std::string("the next execute returned ") + weave_status_string(next) + ": " + message;
          }
        }
      } else if (first != WEAVE_ERROR_TIMEOUT) {
        ok = false;
        why = std::string("the execute returned ") + weave_status_string(first) + ": " + message;
      }
      if (ok && (message.find("NCCL") == std::string::npos || message.find("step ") == std::string::npos)) {
        ok = false;
        why = "the timeout's message names neither NCCL nor the step: " + message;
      }
      if (ok && weave_execute(plan, 1.0, p.a(0), p.b(0), 0.0, p.c(0), nullptr, stream) != WEAVE_ERROR_PLAN_FAILED) {
        ok = false;
        why = std::string("an execute after the timeout did not say the plan failed: ") + weave_last_error();
      }
      WEAVE_TEST_CUDA(cudaStreamSynchronize(stream));
    }
    agree(ok, what + ": NCCL calls waiting for an absent rank end in WEAVE_ERROR_TIMEOUT within the timeout", why);
    MPI_Barrier(MPI_COMM_WORLD);
    agree(weave_plan_destroy(plan) == WEAVE_SUCCESS, what + ": the plan is destroyed on every rank",
          weave_last_error());
    // The grid's communicator is aborted on the ranks that timed out: a new
    // plan over it is refused on every rank (plan creation agrees).
    weave_plan_t again = nullptr;
    const weave_status_t refused = weave_plan_create(grid, &pd, &again);
    agree(refused == WEAVE_ERROR_PLAN_FAILED, what + ": a new plan over the grid is refused on every rank",
          std::string(weave_status_string(refused)) + ": " + weave_last_error());
    if (refused == WEAVE_SUCCESS) weave_plan_destroy(again);
  }
  agree(weave_grid_destroy(grid) == WEAVE_SUCCESS, what + ": the grid is destroyed on every rank", weave_last_error());
  // Recovery: a new grid's NCCL plan computes the right result.
  grid = nullptr;
  if (!agree(weave_grid_create(MPI_COMM_WORLD, ranks, 1, &grid) == WEAVE_SUCCESS, what + ": a new grid",
             weave_last_error()))
    return;
  {
    PeerProblem p(grid, op, 64 * ranks, 32, 16 * ranks, WEAVE_ORDER_ROW_MAJOR);
    p.fill(0, 7);
    weave_plan_desc_t pd = plan_desc(p, algorithm, false);
    plan = nullptr;
    if (agree(weave_plan_create(grid, &pd, &plan) == WEAVE_SUCCESS, what + ": a plan over the new grid",
              weave_last_error())) {
      const bool ran = weave_execute(plan, 1.0, p.a(0), p.b(0), 0.0, p.c(0), nullptr, stream) == WEAVE_SUCCESS;
      std::string wrong = ran ? std::string() : weave_last_error();
      WEAVE_TEST_CUDA(cudaStreamSynchronize(stream));
      const bool right = ran && p.check(0, 7, &wrong);
      agree(right, what + ": the new grid's plan computes the right result", wrong);
      agree(weave_plan_destroy(plan) == WEAVE_SUCCESS, what + ": its plan is destroyed", weave_last_error());
    }
  }
  agree(weave_grid_destroy(grid) == WEAVE_SUCCESS, what + ": the new grid is destroyed", weave_last_error());
}

// The NCCL watchdog polls its events while the application captures a CUDA
// graph on another stream of the process, in CUDA's
// default (global) capture mode: its queries must not invalidate that
// capture. An execute over NCCL is held back on its stream by a host
// function that sleeps, so its group stays watched and polled; meanwhile a
// second plan's execute is captured on another stream, the capture held
// open longer than the watchdog's polling interval. The capture must end
// without error, and both results must be right.
void sleep_on_stream(void* milliseconds) {
  std::this_thread::sleep_for(std::chrono::milliseconds(*static_cast<int*>(milliseconds)));
}

void run_nccl_capture_case(cudaStream_t stream) {
  setenv("WEAVE_TRANSPORT", "nccl", 1);
  const std::string what = "nccl: a capture on another stream while the watchdog polls";
  const int ranks = weave_gpu_test::peer_test_size();
  weave_grid_t grid = nullptr;
  if (!agree(weave_grid_create(MPI_COMM_WORLD, ranks, 1, &grid) == WEAVE_SUCCESS, what + ": grid", weave_last_error()))
    return;
  {
    PeerProblem p(grid, WEAVE_AG_GEMM, 64 * ranks, 32, 16 * ranks, WEAVE_ORDER_ROW_MAJOR);
    const weave_plan_desc_t pd = plan_desc(p, WEAVE_ALGORITHM_RING, false);
    weave_plan_t held = nullptr, captured = nullptr;
    const bool made = weave_plan_create(grid, &pd, &held) == WEAVE_SUCCESS &&
                      weave_plan_create(grid, &pd, &captured) == WEAVE_SUCCESS;
    if (agree(made, what + ": plans", weave_last_error())) {
      cudaStream_t other = nullptr;
      WEAVE_TEST_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
      static int hold_ms = 400;
      // Whether a poll falls inside the open capture is a race: without the
      // watchdog's relaxed capture mode one round failed in one of two runs on
      // 4 H100s, so the case runs several rounds.
      constexpr int kRounds = 6;
      bool ok = true;
      std::string why;
      for (int round = 0; round < kRounds && ok; ++round) {
        // Fresh data and NaN-poisoned C every round (the graph's plan reads the
        // same buffers, so its replay computes this round's product).
        const uint64_t held_seed = 11 + 2 * round, captured_seed = 12 + 2 * round;
        p.fill(0, held_seed);
        p.fill(1, captured_seed);
        WEAVE_TEST_CUDA(cudaLaunchHostFunc(stream, sleep_on_stream, &hold_ms));
        ok = weave_execute(held, 1.0, p.a(0), p.b(0), 0.0, p.c(0), nullptr, stream) == WEAVE_SUCCESS;
        if (!ok) why = weave_last_error();
        cudaGraph_t graph = nullptr;
        cudaGraphExec_t exec = nullptr;
        WEAVE_TEST_CUDA(cudaStreamBeginCapture(other, cudaStreamCaptureModeGlobal));
        if (weave_execute(captured, 1.0, p.a(1), p.b(1), 0.0, p.c(1), nullptr, other) != WEAVE_SUCCESS && ok) {
          ok = false;
          why = std::string("the captured execute: ") + weave_last_error();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(250));  // the watchdog polls every 50 ms
        const cudaError_t ended = cudaStreamEndCapture(other, &graph);
        if (ended != cudaSuccess && ok) {
          ok = false;
          why = std::string("the capture ended with ") + cudaGetErrorString(ended);
        }
        cudaGetLastError();
        WEAVE_TEST_CUDA(cudaStreamSynchronize(stream));
        if (ok && graph) {
          WEAVE_TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
          WEAVE_TEST_CUDA(cudaGraphLaunch(exec, other));
          WEAVE_TEST_CUDA(cudaStreamSynchronize(other));
        }
        if (ok && !p.check(0, held_seed, &why)) ok = false;
        if (ok && !p.check(1, captured_seed, &why)) ok = false;
        if (!ok) why = "round " + std::to_string(round + 1) + " of " + std::to_string(kRounds) + ": " + why;
        if (exec) cudaGraphExecDestroy(exec);
        if (graph) cudaGraphDestroy(graph);
      }
      agree(ok, what + ": the capture ends without error and both results are right", why);
      cudaStreamDestroy(other);
    }
    if (held) weave_plan_destroy(held);
    if (captured) weave_plan_destroy(captured);
  }
  agree(weave_grid_destroy(grid) == WEAVE_SUCCESS, what + ": the grid is destroyed", weave_last_error());
}

}  // namespace

int main(int argc, char** argv) {
  return weave_gpu_test::run_peer_test(argc, argv, [](weave_grid_t grid, cudaStream_t stream) {
    run_nccl_capture_case(stream);
    // WEAVE_TEST_ONLY=capture: that case alone (to see it fail without the
    // watchdog's relaxed capture mode).
    const char* only = std::getenv("WEAVE_TEST_ONLY");
    if (only && std::string(only) == "capture") return;
    // WEAVE_TEST_ONLY=late: the late rank's cases alone.
    // Late by less than the timeout (the alarm comes during rank 1's wait;
    // 4 ranks and more) and by more (it was up before; 3 ranks and more).
    for (int late_ms : {1200, kTimeoutMs + 800})
      for (const char* transport : {"copy_engine", "sm"})
        run_case(grid, stream, transport, WEAVE_AG_GEMM, WEAVE_ALGORITHM_RING, late_ms);
    if (only && std::string(only) == "late") return;
    for (const char* transport : {"sm", "copy_engine"})
      for (weave_operation_t op : {WEAVE_AG_GEMM, WEAVE_GEMM_RS, WEAVE_GEMM_AR}) {
        if (op == WEAVE_AG_GEMM) run_case(grid, stream, transport, op, WEAVE_ALGORITHM_RING);
        run_case(grid, stream, transport, op, WEAVE_ALGORITHM_DIRECT);
      }
    for (bool connected : {false, true}) {
      for (weave_operation_t op : {WEAVE_AG_GEMM, WEAVE_GEMM_RS, WEAVE_GEMM_AR})
        run_nccl_case(stream, op, WEAVE_ALGORITHM_RING, connected);
      run_nccl_case(stream, WEAVE_GEMM_RS, WEAVE_ALGORITHM_SEQUENTIAL, connected);
    }
  });
}
