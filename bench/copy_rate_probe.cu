// weave-copy-rate-probe: how fast can every GPU of a node send a block to
// every other GPU at once (the all-to-all of the direct reductions), and by
// which mechanism? The direct GEMM-RS and GEMM-AR over P GPUs send P - 1
// products out of each GPU while P - 1 arrive; on 4 H100s Weave's copy
// engines moved them at about 170 GB/s per GPU where NCCL's all-reduce of
// the same bytes ran at about 270 (doc/performance.md). This measures the
// candidates side by side, each GPU sending `MiB` to each peer:
//   push           a copy per destination, each on its own stream of the
//                  sender (what the copy-engine transport does)
//   pull           a copy per source, each on its own stream of the receiver
//   push-split-2/4 each push cut into 2 or 4 pieces on their own streams
//   push-1-stream  every push on one stream, one after another
//   batch-push     one cudaMemcpyBatchAsync per sender (CUDA 12.8+), plain
//                  and with cudaMemcpyFlagPreferOverlapWithCompute
//   sm-push-B      one kernel of B blocks per sender storing into the peers
//   sm-pull-B      one kernel of B blocks per receiver loading from the peers
//   nccl           ncclSend / ncclRecv to and from every peer in one group
// each idle and beside a bf16 GEMM on every GPU (cuBLASLt, 8192^3, its own
// stream; "loaded"). One process drives every visible GPU with peer access
// on. Every GPU's streams wait for a spinning kernel, so all work is queued
// before any starts; the time is the slowest GPU's from the spin's end to
// its last transfer's end (events of one GPU), median of 10 after 2 warm-ups.
//   pairwise-1-stream  one stream per sender, step s sending to g + s
//   ring-push      each GPU sending to g + 1 only (a ring step's pattern)
//   bidirectional  to g + 1 and g - 1 on two streams at once (a
//                  bidirectional ring's step), and -1-stream in turn
// Prints GB/s out of each GPU: blocks sent x MiB / time.
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#ifdef WEAVE_PROBE_NCCL
#include <nccl.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "probe_check.hpp"

namespace {

// Holds a stream until the host has queued everything behind it.
__global__ void spin(long long nanoseconds) {
  long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < nanoseconds);
}

// Copies part of each of `count` blocks: blocks of the grid split evenly
// between the transfers, 16-byte words.
struct Transfers {
  const int4* from[8];
  int4* to[8];
};
__global__ void copy_blocks(Transfers t, int count, std::size_t words) {
  const int per = gridDim.x / count;
  const int which = blockIdx.x / per;
  if (which >= count) return;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x % per) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(per) * blockDim.x;
  const int4* from = t.from[which];
  int4* to = t.to[which];
  for (std::size_t i = first; i < words; i += stride) to[i] = from[i];
}

constexpr int kGemmSize = 8192;
constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

struct Gpu {
  cudaStream_t start = nullptr, gemm = nullptr;
  std::vector<cudaStream_t> streams;  // up to 4 x (P - 1) transfer streams
  cudaEvent_t go = nullptr, done = nullptr;
  std::vector<cudaEvent_t> joined;
  char* send = nullptr;  // P slots: the block for rank q at slot q
  char* recv = nullptr;  // P slots: the block from rank q at slot q
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulHeuristicResult_t algorithm{};
  void *a = nullptr, *b = nullptr, *d = nullptr, *workspace = nullptr;
#ifdef WEAVE_PROBE_NCCL
  ncclComm_t comm = nullptr;
#endif
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> sizes_mib;
  for (int i = 1; i < argc; ++i) sizes_mib.push_back(std::atof(argv[i]));
  if (sizes_mib.empty()) sizes_mib = {4, 16, 64};
  int p = 0;
  check(cudaGetDeviceCount(&p), "cudaGetDeviceCount");
  if (p < 2 || p > 8) {
    std::fprintf(stderr, "needs 2 to 8 GPUs\n");
    return 2;
  }
  const double largest = *std::max_element(sizes_mib.begin(), sizes_mib.end());
  const std::size_t slot = static_cast<std::size_t>(largest * (1 << 20) + 4095) / 4096 * 4096;
  std::vector<Gpu> gpus(static_cast<std::size_t>(p));

  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t layout = nullptr;
  check(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul desc");
  check(cublasLtMatrixLayoutCreate(&layout, CUDA_R_16BF, kGemmSize, kGemmSize, kGemmSize), "layout");
  cublasLtMatmulPreference_t preference = preference_with_workspace(kWorkspaceBytes);
  const std::size_t gemm_bytes = sizeof(uint16_t) * kGemmSize * kGemmSize;

  for (int g = 0; g < p; ++g) {
    Gpu& x = gpus[static_cast<std::size_t>(g)];
    check(cudaSetDevice(g), "cudaSetDevice");
    for (int q = 0; q < p; ++q)
      if (q != g) check(cudaDeviceEnablePeerAccess(q, 0), "cudaDeviceEnablePeerAccess");
    check(cudaStreamCreateWithFlags(&x.start, cudaStreamNonBlocking), "stream");
    check(cudaStreamCreateWithFlags(&x.gemm, cudaStreamNonBlocking), "stream");
    x.streams.resize(static_cast<std::size_t>(4 * (p - 1)));
    x.joined.resize(x.streams.size());
    for (std::size_t s = 0; s < x.streams.size(); ++s) {
      check(cudaStreamCreateWithFlags(&x.streams[s], cudaStreamNonBlocking), "stream");
      check(cudaEventCreateWithFlags(&x.joined[s], cudaEventDisableTiming), "event");
    }
    check(cudaEventCreate(&x.go), "event");
    check(cudaEventCreate(&x.done), "event");
    check(cudaMalloc(&x.send, slot * static_cast<std::size_t>(p)), "cudaMalloc");
    check(cudaMalloc(&x.recv, slot * static_cast<std::size_t>(p)), "cudaMalloc");
    check(cudaMemset(x.send, g + 1, slot * static_cast<std::size_t>(p)), "cudaMemset");
    check(cudaMalloc(&x.a, gemm_bytes), "cudaMalloc");
    check(cudaMalloc(&x.b, gemm_bytes), "cudaMalloc");
    check(cudaMalloc(&x.d, gemm_bytes), "cudaMalloc");
    check(cudaMemset(x.a, 0x3c, gemm_bytes), "cudaMemset");
    check(cudaMemset(x.b, 0x3c, gemm_bytes), "cudaMemset");
    check(cudaMalloc(&x.workspace, kWorkspaceBytes), "cudaMalloc");
    check(cublasLtCreate(&x.lt), "cublasLtCreate");
    int found = 0;
    check(cublasLtMatmulAlgoGetHeuristic(x.lt, op, layout, layout, layout, layout, preference, 1, &x.algorithm, &found),
          "heuristic");
    if (found == 0) {
      std::fprintf(stderr, "no cuBLASLt algorithm\n");
      return 1;
    }
  }
#ifdef WEAVE_PROBE_NCCL
  {
    std::vector<ncclComm_t> comms(static_cast<std::size_t>(p));
    if (ncclCommInitAll(comms.data(), p, nullptr) != ncclSuccess) {
      std::fprintf(stderr, "ncclCommInitAll failed\n");
      return 1;
    }
    for (int g = 0; g < p; ++g) gpus[static_cast<std::size_t>(g)].comm = comms[static_cast<std::size_t>(g)];
  }
#endif

  // One way of moving the blocks: enqueues GPU g's part, given the block
  // size, on streams that have waited for the spin (first `streams_used`).
  struct Mode {
    std::string name;
    int streams_used;  // of x.streams; the rest stay idle
    int blocks_out;    // blocks each GPU sends (P - 1 but for ring-push)
    std::function<void(int g, std::size_t bytes)> enqueue;
  };
  auto send_slot = [&](int from, int to) { return gpus[static_cast<std::size_t>(from)].send + slot * to; };
  auto recv_slot = [&](int at, int from) { return gpus[static_cast<std::size_t>(at)].recv + slot * from; };
  auto peer_index = [&](int g, int q) { return q < g ? q : q - 1; };  // 0 .. P - 2
  auto copy = [&](void* to, const void* from, std::size_t bytes, cudaStream_t s) {
    check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
  };
  auto split_push = [&](int pieces) {
    return [&, pieces](int g, std::size_t bytes) {
      const std::size_t piece = (bytes / pieces + 255) / 256 * 256;
      for (int q = 0; q < p; ++q) {
        if (q == g) continue;
        for (int i = 0; i < pieces; ++i) {
          const std::size_t at = piece * i;
          if (at >= bytes) break;
          copy(recv_slot(q, g) + at, send_slot(g, q) + at, std::min(piece, bytes - at),
               gpus[static_cast<std::size_t>(g)].streams[static_cast<std::size_t>(peer_index(g, q) * pieces + i)]);
        }
      }
    };
  };
  auto batch_push = [&](unsigned flags) {
    return [&, flags](int g, std::size_t bytes) {
      std::vector<void*> to;
      std::vector<const void*> from;
      std::vector<std::size_t> counts;
      for (int q = 0; q < p; ++q) {
        if (q == g) continue;
        to.push_back(recv_slot(q, g));
        from.push_back(send_slot(g, q));
        counts.push_back(bytes);
      }
      cudaMemcpyAttributes attributes{};
      attributes.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
      attributes.flags = flags;
      std::size_t index = 0;
      check(cudaMemcpyBatchAsync(to.data(), from.data(), counts.data(), to.size(), &attributes, &index, 1,
                                 gpus[static_cast<std::size_t>(g)].streams[0]),
            "cudaMemcpyBatchAsync");
    };
  };
  auto sm = [&](bool push, int blocks) {
    return [&, push, blocks](int g, std::size_t bytes) {
      Transfers t{};
      int count = 0;
      for (int q = 0; q < p; ++q) {
        if (q == g) continue;
        t.from[count] = reinterpret_cast<const int4*>(push ? send_slot(g, q) : send_slot(q, g));
        t.to[count] = reinterpret_cast<int4*>(push ? recv_slot(q, g) : recv_slot(g, q));
        ++count;
      }
      copy_blocks<<<blocks / count * count, 512, 0, gpus[static_cast<std::size_t>(g)].streams[0]>>>(t, count,
                                                                                                  bytes / 16);
      check(cudaGetLastError(), "copy_blocks");
    };
  };

  std::vector<Mode> modes;
  modes.push_back({"push", p - 1, p - 1, split_push(1)});
  modes.push_back({"pull", p - 1, p - 1, [&](int g, std::size_t bytes) {
                     for (int q = 0; q < p; ++q)
                       if (q != g)
                         copy(recv_slot(g, q), send_slot(q, g), bytes,
                              gpus[static_cast<std::size_t>(g)].streams[static_cast<std::size_t>(peer_index(g, q))]);
                   }});
  modes.push_back({"push-split-2", 2 * (p - 1), p - 1, split_push(2)});
  modes.push_back({"push-split-4", 4 * (p - 1), p - 1, split_push(4)});
  modes.push_back({"push-1-stream", 1, p - 1, [&](int g, std::size_t bytes) {
                     for (int q = 0; q < p; ++q)
                       if (q != g)
                         copy(recv_slot(q, g), send_slot(g, q), bytes, gpus[static_cast<std::size_t>(g)].streams[0]);
                   }});
  // Step s = 1 .. P-1 sends to g + s: at any moment (if the GPUs keep
  // step) every GPU sends to one peer and receives from one, no incast.
  modes.push_back({"pairwise-1-stream", 1, p - 1, [&](int g, std::size_t bytes) {
                     for (int s = 1; s < p; ++s)
                       copy(recv_slot((g + s) % p, g), send_slot(g, (g + s) % p), bytes,
                            gpus[static_cast<std::size_t>(g)].streams[0]);
                   }});
  // Each GPU sends to g + 1 only: the pattern of a ring's step.
  modes.push_back({"ring-push", 1, 1, [&](int g, std::size_t bytes) {
                     copy(recv_slot((g + 1) % p, g), send_slot(g, (g + 1) % p), bytes,
                          gpus[static_cast<std::size_t>(g)].streams[0]);
                   }});
  // A bidirectional ring's step: to g + 1 and g - 1, at once or in turn.
  modes.push_back({"bidirectional", 2, 2, [&](int g, std::size_t bytes) {
                     Gpu& x = gpus[static_cast<std::size_t>(g)];
                     copy(recv_slot((g + 1) % p, g), send_slot(g, (g + 1) % p), bytes, x.streams[0]);
                     copy(recv_slot((g + p - 1) % p, g), send_slot(g, (g + p - 1) % p), bytes, x.streams[1]);
                   }});
  modes.push_back({"bidirectional-1-stream", 1, 2, [&](int g, std::size_t bytes) {
                     Gpu& x = gpus[static_cast<std::size_t>(g)];
                     copy(recv_slot((g + 1) % p, g), send_slot(g, (g + 1) % p), bytes, x.streams[0]);
                     copy(recv_slot((g + p - 1) % p, g), send_slot(g, (g + p - 1) % p), bytes, x.streams[0]);
                   }});
  modes.push_back({"batch-push", 1, p - 1, batch_push(0)});
  modes.push_back({"batch-push-overlap", 1, p - 1, batch_push(cudaMemcpyFlagPreferOverlapWithCompute)});
  for (int blocks : {8, 16, 32, 64}) {
    modes.push_back({"sm-push-" + std::to_string(blocks), 1, p - 1, sm(true, blocks)});
    modes.push_back({"sm-pull-" + std::to_string(blocks), 1, p - 1, sm(false, blocks)});
  }
#ifdef WEAVE_PROBE_NCCL
  modes.push_back({"nccl", 1, p - 1, [&](int g, std::size_t bytes) {
                     Gpu& x = gpus[static_cast<std::size_t>(g)];
                     for (int q = 0; q < p; ++q) {
                       if (q == g) continue;
                       if (ncclSend(send_slot(g, q), bytes, ncclChar, q, x.comm, x.streams[0]) != ncclSuccess ||
                           ncclRecv(recv_slot(g, q), bytes, ncclChar, q, x.comm, x.streams[0]) != ncclSuccess) {
                         std::fprintf(stderr, "ncclSend/ncclRecv failed\n");
                         std::exit(1);
                       }
                     }
                   }});
#endif

  const float alpha = 1.0f, beta = 0.0f;
  auto run = [&](const Mode& mode, std::size_t bytes, bool loaded) {
    for (int g = 0; g < p; ++g) {
      Gpu& x = gpus[static_cast<std::size_t>(g)];
      check(cudaSetDevice(g), "cudaSetDevice");
      spin<<<1, 1, 0, x.start>>>(300000);
      check(cudaEventRecord(x.go, x.start), "cudaEventRecord");
      for (int s = 0; s < mode.streams_used; ++s)
        check(cudaStreamWaitEvent(x.streams[static_cast<std::size_t>(s)], x.go, 0), "cudaStreamWaitEvent");
      if (loaded) {
        check(cudaStreamWaitEvent(x.gemm, x.go, 0), "cudaStreamWaitEvent");
        check(cublasLtMatmul(x.lt, op, &alpha, x.a, layout, x.b, layout, &beta, x.d, layout, x.d, layout,
                             &x.algorithm.algo, x.workspace, kWorkspaceBytes, x.gemm),
              "cublasLtMatmul");
      }
    }
    const bool nccl = mode.name == "nccl";
#ifdef WEAVE_PROBE_NCCL
    if (nccl) ncclGroupStart();
#endif
    for (int g = 0; g < p; ++g) {
      check(cudaSetDevice(g), "cudaSetDevice");
      mode.enqueue(g, bytes);
    }
#ifdef WEAVE_PROBE_NCCL
    if (nccl) ncclGroupEnd();
#endif
    (void)nccl;
    double slowest = 0;
    for (int g = 0; g < p; ++g) {
      Gpu& x = gpus[static_cast<std::size_t>(g)];
      check(cudaSetDevice(g), "cudaSetDevice");
      for (int s = 0; s < mode.streams_used; ++s) {
        check(cudaEventRecord(x.joined[static_cast<std::size_t>(s)], x.streams[static_cast<std::size_t>(s)]),
              "cudaEventRecord");
        check(cudaStreamWaitEvent(x.start, x.joined[static_cast<std::size_t>(s)], 0), "cudaStreamWaitEvent");
      }
      check(cudaEventRecord(x.done, x.start), "cudaEventRecord");
    }
    for (int g = 0; g < p; ++g) {
      Gpu& x = gpus[static_cast<std::size_t>(g)];
      check(cudaSetDevice(g), "cudaSetDevice");
      check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, x.go, x.done), "cudaEventElapsedTime");
      slowest = std::max(slowest, static_cast<double>(ms));
    }
    return slowest;
  };

  std::printf("GPUs %d; GB/s out of each GPU (slowest GPU's time, median of 10), idle / beside a bf16 GEMM\n", p);
  std::printf("%-24s", "mode");
  for (double mib : sizes_mib) std::printf(" %8.1f MiB idle  loaded", mib);
  std::printf("\n");
  for (const Mode& mode : modes) {
    std::printf("%-24s", mode.name.c_str());
    for (double mib : sizes_mib) {
      const std::size_t bytes = static_cast<std::size_t>(mib * (1 << 20)) / 256 * 256;
      for (bool loaded : {false, true}) {
        std::vector<double> times;
        for (int iteration = 0; iteration < 12; ++iteration) {
          const double ms = run(mode, bytes, loaded);
          if (iteration >= 2) times.push_back(ms);
        }
        std::sort(times.begin(), times.end());
        const double median = (times[4] + times[5]) / 2;
        const double rate = static_cast<double>(mode.blocks_out) * static_cast<double>(bytes) / (median * 1e-3) / 1e9;
        std::printf(loaded ? " %7.0f" : " %13.0f", rate);
      }
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}
