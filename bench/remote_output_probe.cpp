// weave-remote-output-probe: may a GEMM write its product straight into a
// peer GPU's memory instead of a local slot that a copy engine then moves?
// The direct reductions (GEMM-RS, GEMM-AR's reduce half) make a product for
// every other rank and send it; if cuBLASLt's epilogue wrote it over NVLink
// as fast as into local memory, the transfer would vanish into the GEMM.
//
// On every visible GPU at once (one process, peer access on), the GEMMs of a
// direct GEMM-RS of M x K x N over P GPUs (P = the GPUs; each holds K / P of
// K; its products for every other rank, then its own, in `chunks` chunks of
// a shard's rows, bf16 with float32 accumulation, one stream):
//   local:   every product into a local slot, nothing moved (the GEMMs alone)
//   written: the products for other ranks written into those ranks' memory
//   copied:  into local slots, each copied to its rank by the copy engine on
//            a second stream right after its GEMM (what Weave does)
//   copies:  the copies alone.
// Prints the slowest GPU's time, median of 10 after 2 warm-ups.
// doc/performance.md has the measurement.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_check.hpp"

namespace {

constexpr std::size_t kWorkspaceBytes = std::size_t{64} << 20;

struct Gpu {
  cudaStream_t compute = nullptr, copy = nullptr;
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulHeuristicResult_t algorithm{};
  void* workspace = nullptr;
  uint16_t *a = nullptr, *b = nullptr;  // bf16: op(A) rows x K/P (stored K/P x rows), B as N x K/P
  std::vector<uint16_t*> slots;         // one per product
  std::vector<uint16_t*> inbox;         // per (peer, chunk): where that peer's product for me goes
  cudaEvent_t start = nullptr, stop = nullptr;
  std::vector<cudaEvent_t> made;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s M K N chunks\n", argv[0]);
    return 2;
  }
  const int64_t m = std::atoll(argv[1]), k = std::atoll(argv[2]), n = std::atoll(argv[3]);
  const int chunks = std::atoi(argv[4]);
  int p = 0;
  check(cudaGetDeviceCount(&p), "cudaGetDeviceCount");
  if (p < 2 || m % (int64_t{p} * chunks) != 0 || k % p != 0 || chunks < 1) {
    std::fprintf(stderr, "needs 2 or more GPUs, M divisible by GPUs x chunks, K by GPUs\n");
    return 2;
  }
  const int64_t k_local = k / p, rows = m / p / chunks;  // rows of one product
  const std::size_t bytes = sizeof(uint16_t) * static_cast<std::size_t>(rows * n);
  std::vector<Gpu> gpus(static_cast<std::size_t>(p));

  // D (N x rows, column-major: the product's rows, row-major) = B (N x k_local) * A chunk (k_local x rows).
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t layout_b = nullptr, layout_a = nullptr, layout_d = nullptr;
  check(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul desc");
  check(cublasLtMatrixLayoutCreate(&layout_b, CUDA_R_16BF, n, k_local, n), "layout");
  check(cublasLtMatrixLayoutCreate(&layout_a, CUDA_R_16BF, k_local, rows, k_local), "layout");
  check(cublasLtMatrixLayoutCreate(&layout_d, CUDA_R_16BF, n, rows, n), "layout");
  cublasLtMatmulPreference_t preference = preference_with_workspace(kWorkspaceBytes);

  std::vector<uint16_t> host(static_cast<std::size_t>(std::max(m / p, n) * k_local));
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint16_t>(0x3c00 + (i * 2654435761u) % 512);
  for (int g = 0; g < p; ++g) {
    Gpu& x = gpus[static_cast<std::size_t>(g)];
    check(cudaSetDevice(g), "cudaSetDevice");
    for (int q = 0; q < p; ++q)
      if (q != g) check(cudaDeviceEnablePeerAccess(q, 0), "cudaDeviceEnablePeerAccess");
    int least = 0, greatest = 0;
    check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "priorities");
    check(cudaStreamCreateWithFlags(&x.compute, cudaStreamNonBlocking), "stream");
    check(cudaStreamCreateWithPriority(&x.copy, cudaStreamNonBlocking, greatest), "stream");
    check(cublasLtCreate(&x.lt), "cublasLtCreate");
    check(cudaMalloc(&x.workspace, kWorkspaceBytes), "cudaMalloc");
    check(cudaMalloc(reinterpret_cast<void**>(&x.a), sizeof(uint16_t) * static_cast<std::size_t>(m / p * k_local)),
          "cudaMalloc");
    check(cudaMalloc(reinterpret_cast<void**>(&x.b), sizeof(uint16_t) * static_cast<std::size_t>(n * k_local)),
          "cudaMalloc");
    check(cudaMemcpy(x.a, host.data(), sizeof(uint16_t) * static_cast<std::size_t>(m / p * k_local),
                     cudaMemcpyHostToDevice),
          "cudaMemcpy");
    check(cudaMemcpy(x.b, host.data(), sizeof(uint16_t) * static_cast<std::size_t>(n * k_local),
                     cudaMemcpyHostToDevice),
          "cudaMemcpy");
    for (int i = 0; i < p * chunks; ++i) {
      uint16_t* slot = nullptr;
      check(cudaMalloc(reinterpret_cast<void**>(&slot), bytes), "cudaMalloc");
      x.slots.push_back(slot);
      check(cudaMalloc(reinterpret_cast<void**>(&slot), bytes), "cudaMalloc");
      x.inbox.push_back(slot);
      cudaEvent_t e = nullptr;
      check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
      x.made.push_back(e);
    }
    check(cudaEventCreate(&x.start), "cudaEventCreate");
    check(cudaEventCreate(&x.stop), "cudaEventCreate");
    int found = 0;
    check(cublasLtMatmulAlgoGetHeuristic(x.lt, op, layout_b, layout_a, layout_d, layout_d, preference, 1, &x.algorithm,
                                         &found),
          "heuristic");
    if (found == 0) return 1;
  }
  const float one = 1, zero = 0;
  // Product `piece` (chunk j of the rows rank q owns: piece q * chunks + j) of GPU g into `out`.
  auto gemm = [&](int g, int piece, uint16_t* out) {
    Gpu& x = gpus[static_cast<std::size_t>(g)];
    const uint16_t* a = x.a + static_cast<std::size_t>(piece % chunks) * static_cast<std::size_t>(rows * k_local);
    check(cublasLtMatmul(x.lt, op, &one, x.b, layout_b, a, layout_a, &zero, out, layout_d, out, layout_d,
                         &x.algorithm.algo, x.workspace, kWorkspaceBytes, x.compute),
          "cublasLtMatmul");
  };
  const char* names[] = {"local (GEMMs alone)", "written into the peers", "copied by the copy engines",
                         "copies alone"};
  for (int mode = 0; mode < 4; ++mode) {
    std::vector<float> times;
    for (int iteration = 0; iteration < 12; ++iteration) {
      for (int g = 0; g < p; ++g) {
        check(cudaSetDevice(g), "cudaSetDevice");
        check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
      }
      for (int g = 0; g < p; ++g) {
        Gpu& x = gpus[static_cast<std::size_t>(g)];
        check(cudaSetDevice(g), "cudaSetDevice");
        check(cudaEventRecord(x.start, x.compute), "cudaEventRecord");
        int made = 0;
        for (int j = 0; j < chunks; ++j)
          for (int s = 1; s < p; ++s) {
            const int to = (g + s) % p, piece = to * chunks + j;
            uint16_t* remote = gpus[static_cast<std::size_t>(to)].inbox[static_cast<std::size_t>(g * chunks + j)];
            uint16_t* slot = x.slots[static_cast<std::size_t>(piece)];
            if (mode == 3) {
              check(cudaMemcpyAsync(remote, slot, bytes, cudaMemcpyDeviceToDevice, x.compute), "cudaMemcpyAsync");
              continue;
            }
            gemm(g, piece, mode == 1 ? remote : slot);
            if (mode == 2) {
              cudaEvent_t e = x.made[static_cast<std::size_t>(made++)];
              check(cudaEventRecord(e, x.compute), "cudaEventRecord");
              check(cudaStreamWaitEvent(x.copy, e, 0), "cudaStreamWaitEvent");
              check(cudaMemcpyAsync(remote, slot, bytes, cudaMemcpyDeviceToDevice, x.copy), "cudaMemcpyAsync");
            }
          }
        if (mode != 3)
          for (int j = 0; j < chunks; ++j) gemm(g, g * chunks + j, x.slots[static_cast<std::size_t>(g * chunks + j)]);
        if (mode == 2) {
          cudaEvent_t e = x.made.back();
          check(cudaEventRecord(e, x.copy), "cudaEventRecord");
          check(cudaStreamWaitEvent(x.compute, e, 0), "cudaStreamWaitEvent");
        }
        check(cudaEventRecord(x.stop, x.compute), "cudaEventRecord");
      }
      float slowest = 0;
      for (int g = 0; g < p; ++g) {
        Gpu& x = gpus[static_cast<std::size_t>(g)];
        check(cudaSetDevice(g), "cudaSetDevice");
        check(cudaEventSynchronize(x.stop), "cudaEventSynchronize");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, x.start, x.stop), "cudaEventElapsedTime");
        slowest = std::max(slowest, ms);
      }
      if (iteration >= 2) times.push_back(slowest);
    }
    std::sort(times.begin(), times.end());
    std::printf("%d GPUs, %lldx%lldx%lld, %d chunk(s) of %lld rows (%.1f MiB per product): %-28s %.3f ms\n", p,
                static_cast<long long>(m), static_cast<long long>(k), static_cast<long long>(n), chunks,
                static_cast<long long>(rows), static_cast<double>(bytes) / 1048576.0, names[mode],
                times[times.size() / 2]);
  }
  return 0;
}
