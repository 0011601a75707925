// The transports that map their peers' memory (sm, copy_engine) never read
// a peer's data before its flag says it is there, and never overwrite what
// a peer has not read yet. Each rank's stream is steered by hand (2 ranks or
// more, one GPU each), for every operation, C row- and column-major, and
// GEMM-AR one-shot and two-shot (WEAVE_ALL_REDUCE):
//   - a late producer: a first execute on NaN inputs leaves NaN products in
//     every workspace; then the last rank's stream is held back 200 ms
//     before the next execute, on exact inputs. A rank that read the late
//     rank's product (or chunk) before its flag would get NaN in C;
//   - a late reader: rank 0's stream is held back 200 ms before execute k,
//     and every rank enqueues execute k + 1 with other inputs right after.
//     A rank that overwrote a product rank 0 had not read yet would give
//     rank 0 the product of execute k + 1.
// f32 data of small integers, so every result is exact and compared exactly.
// Exits with 77 (skipped) without a GPU per rank.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cuda_device_memory.hpp"
#include "peer_problem.hpp"
#include "peer_test_harness.hpp"
#include "test_kernels.hpp"

namespace {

using weave_gpu_test::agree;
using weave_gpu_test::PeerProblem;

constexpr long long kHoldBackNs = 200'000'000;

const char* op_name(weave_operation_t op) {
  return op == WEAVE_AG_GEMM ? "AG-GEMM" : op == WEAVE_GEMM_RS ? "GEMM-RS" : "GEMM-AR";
}

weave_status_t execute(weave_plan_t plan, PeerProblem& p, int set, cudaStream_t stream) {
  return weave_execute(plan, 1.0, p.a(set), p.b(set), 0.0, p.c(set), nullptr, stream);
}

void run_case(weave_grid_t grid, cudaStream_t stream, const char* transport, weave_operation_t op,
              weave_order_t order_c, const char* all_reduce) {
  setenv("WEAVE_TRANSPORT", transport, 1);
  if (all_reduce)
    setenv("WEAVE_ALL_REDUCE", all_reduce, 1);
  else
    unsetenv("WEAVE_ALL_REDUCE");
  const std::string what = std::string(transport) + " " + op_name(op) +
                           (order_c == WEAVE_ORDER_ROW_MAJOR ? " row-major C" : " column-major C") +
                           (all_reduce ? std::string(" ") + all_reduce : std::string());
  const int ranks = weave_gpu_test::peer_test_size(), rank = weave_gpu_test::peer_test_rank();
  PeerProblem p(grid, op, 48 * ranks + 5, 64, 32 * ranks, order_c);
  weave_plan_desc_t pd = p.plan_desc();
  pd.algorithm = op == WEAVE_AG_GEMM ? WEAVE_ALGORITHM_RING : WEAVE_ALGORITHM_DIRECT;
  pd.chunks_per_shard = 2;
  pd.timeout_ms = 60000;
  weave_plan_t plan = nullptr;
  const weave_status_t created = weave_plan_create(grid, &pd, &plan);
  if (!agree(created == WEAVE_SUCCESS, what + ": plan creation", weave_last_error())) return;
  std::string why;

  // A late producer, after NaN products everywhere.
  p.fill(0, 0, /*poison=*/true);
  bool ok = execute(plan, p, 0, stream) == WEAVE_SUCCESS;
  WEAVE_TEST_CUDA(cudaStreamSynchronize(stream));
  p.fill(1, 11);
  if (rank == ranks - 1) weave_gpu_test::launch_delay(kHoldBackNs, stream);
  ok = ok && execute(plan, p, 1, stream) == WEAVE_SUCCESS;
  WEAVE_TEST_CUDA(cudaStreamSynchronize(stream));
  ok = ok && p.check(1, 11, &why);
  agree(ok, what + ": a late producer's data is read only once it is there", why + weave_last_error());

  // A late reader: execute k + 1 must not overwrite what it reads in k.
  p.fill(0, 21);
  p.fill(1, 22);
  if (rank == 0) weave_gpu_test::launch_delay(kHoldBackNs, stream);
  ok = execute(plan, p, 0, stream) == WEAVE_SUCCESS && execute(plan, p, 1, stream) == WEAVE_SUCCESS;
  WEAVE_TEST_CUDA(cudaStreamSynchronize(stream));
  why.clear();
  ok = ok && p.check(0, 21, &why) && p.check(1, 22, &why);
  agree(ok, what + ": nothing a late reader still reads is overwritten", why + weave_last_error());
  weave_plan_destroy(plan);
}

}  // namespace

int main(int argc, char** argv) {
  return weave_gpu_test::run_peer_test(argc, argv, [](weave_grid_t grid, cudaStream_t stream) {
    for (const char* transport : {"sm", "copy_engine"})
      for (weave_operation_t op : {WEAVE_AG_GEMM, WEAVE_GEMM_RS, WEAVE_GEMM_AR})
        for (weave_order_t order : {WEAVE_ORDER_ROW_MAJOR, WEAVE_ORDER_COLUMN_MAJOR}) {
          if (op == WEAVE_GEMM_AR && std::string(transport) == "sm") {
            run_case(grid, stream, transport, op, order, "one_shot");
            run_case(grid, stream, transport, op, order, "two_shot");
          } else {
            run_case(grid, stream, transport, op, order, nullptr);
          }
        }
  });
}
