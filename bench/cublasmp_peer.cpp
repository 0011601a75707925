// weave-bench-cublasmp: NVIDIA cuBLASMp's tensor-parallel matmuls on the
// shapes weave-bench uses, for the peer column of doc/performance.md.
//
// For each shape (global M x K x N, bf16, one GPU per rank) and operation it
// times cublasMpMatmul (AG-GEMM, GEMM-RS, GEMM-AR with the ALLREDUCE
// epilogue, algorithm chosen by cuBLASMp) and the sequential version of the
// same operation (NCCL collective and cublasGemmEx, bf16 partial sums), the
// two taking turns within every iteration; reports the median over
// iterations of the slowest rank. After timing, cuBLASMp's result is checked
// against the sequential one (relative Frobenius error), so a wrong layout
// cannot pass as a fast run.
//
//   mpirun -np 4 weave-bench-cublasmp --json cublasmp.json
//
// Layouts: the row-major tensor-parallel matrices of weave-bench (X [M, K],
// W [N, K], Y [M, N]) are, read column-major, cuBLASMp's "TN" problem
// D (N x M) = W^T-stored (K x N)^T * X^T-stored (K x M) with cuBLASMp's
// m = N, n = M, k = K; the shards then fall where cuBLASMp's 1-D tensor-
// parallel layouts put them, so no data is transposed.
//
// cuBLASMp before 0.8 wants its workspace on the NVSHMEM symmetric heap
// (nvshmem_malloc, looked up at run time in the NVSHMEM that cuBLASMp
// loads); 0.8 and later take NCCL memory registered with
// cublasMpBufferRegister.
#include <cublas_v2.h>
#include <cublasmp.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>
#include <nccl.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_device.hpp"
#include "shapes.hpp"

namespace {

int g_rank = 0, g_size = 1;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(s));
}
void check(cublasMpStatus_t s, const char* what) {
  if (s != CUBLASMP_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": cuBLASMp status " + std::to_string(static_cast<int>(s)));
}

// cuBLASMp 0.8 renamed the attribute setter.
cublasMpStatus_t set_attribute(cublasMpMatmulDescriptor_t d, cublasMpMatmulDescriptorAttribute_t attribute,
                               const void* value, std::size_t size) {
#if CUBLASMP_VERSION >= 800
  return cublasMpMatmulDescriptorSetAttribute(d, attribute, value, size);
#else
  return cublasMpMatmulDescriptorAttributeSet(d, attribute, value, size);
#endif
}

using bench::Shape;

enum class Op { AllGatherGemm, GemmReduceScatter, GemmAllReduce };
const char* op_name(Op op) {
  return op == Op::AllGatherGemm ? "AG-GEMM" : op == Op::GemmReduceScatter ? "GEMM-RS" : "GEMM-AR";
}

float from_bfloat16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

// ||got - want||_F / ||want||_F over all ranks' shards.
double relative_error(const bench::Buffer& got, const bench::Buffer& want) {
  const std::size_t count = static_cast<std::size_t>(want.bytes() / 2);
  std::vector<uint16_t> g(count), w(count);
  check(cudaMemcpy(g.data(), got.data(), count * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaMemcpy(w.data(), want.data(), count * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
  double sums[2] = {0, 0}, total[2] = {0, 0};
  for (std::size_t i = 0; i < count; ++i) {
    const double a = from_bfloat16(g[i]), b = from_bfloat16(w[i]);
    sums[0] += (a - b) * (a - b);  // NaN propagates: a NaN result fails the check
    sums[1] += b * b;
  }
  MPI_Allreduce(sums, total, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return std::sqrt(total[0] / total[1]);
}

// The symmetric-heap workspace cuBLASMp's overlapped algorithms need.
class Workspace {
 public:
  Workspace(cublasMpGrid_t grid, std::size_t bytes) : grid_(grid), bytes_(std::max<std::size_t>(bytes, 256)) {
#if CUBLASMP_VERSION >= 800
    check(ncclMemAlloc(&data_, bytes_), "ncclMemAlloc");
    registered_ = cublasMpBufferRegister(grid_, data_, bytes_) == CUBLASMP_STATUS_SUCCESS;
    if (!registered_) note_ = "workspace registration failed: cuBLASMp falls back to no overlap";
#else
    using Malloc = void* (*)(std::size_t);
    auto nvshmem_malloc = reinterpret_cast<Malloc>(dlsym(RTLD_DEFAULT, "nvshmem_malloc"));
    free_ = reinterpret_cast<void (*)(void*)>(dlsym(RTLD_DEFAULT, "nvshmem_free"));
    if (!nvshmem_malloc || !free_) throw std::runtime_error("nvshmem_malloc not found in the loaded NVSHMEM");
    data_ = nvshmem_malloc(bytes_);
    if (!data_)
      throw std::runtime_error("nvshmem_malloc(" + std::to_string(bytes_) + ") failed: raise NVSHMEM_SYMMETRIC_SIZE");
#endif
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  ~Workspace() {
#if CUBLASMP_VERSION >= 800
    if (registered_) cublasMpBufferDeregister(grid_, data_);
    ncclMemFree(data_);
#else
    free_(data_);
#endif
  }
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  const std::string& note() const { return note_; }

 private:
  cublasMpGrid_t grid_;
  std::size_t bytes_;
  void* data_ = nullptr;
  std::string note_;
#if CUBLASMP_VERSION >= 800
  bool registered_ = false;
#else
  void (*free_)(void*) = nullptr;
#endif
};

// The process grids and handles shared by every measurement.
struct Context {
  ncclComm_t cublasmp_comm = nullptr, sequential_comm = nullptr;
  cublasMpHandle_t handle = nullptr;
  cublasMpGrid_t column = nullptr;  // g_size x 1: rows split
  cublasMpGrid_t row = nullptr;     // 1 x g_size: columns split
  cublasHandle_t cublas = nullptr;
  bench::Timer timer{true};  // its stream carries everything measured
  cudaStream_t stream = static_cast<cudaStream_t>(timer.stream());
};

ncclComm_t new_nccl_comm() {
  ncclUniqueId id;
  if (g_rank == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  check(ncclCommInitRank(&comm, g_size, id, g_rank), "ncclCommInitRank");
  return comm;
}

struct Result {
  double fused_ms = 0, sequential_ms = 0, error = 0;
  std::string note;
};

// One operation on one shape. The matrices are the local shards, column-major
// as cuBLASMp reads them (see the file comment): A = W's shard (K x N),
// B = X's shard (K x M), D = Y's shard (N x M).
Result run_case(Context& ctx, Op op, const Shape& s, int warmup, int iterations) {
  const int64_t p = g_size, m = s.n, n = s.m, k = s.k;  // cuBLASMp's m, n, k
  const bool gather = op == Op::AllGatherGemm;
  if ((gather ? m % p != 0 || n % p != 0 : k % p != 0 || n % p != 0))
    throw std::runtime_error("cuBLASMp's tensor-parallel layouts need shards of equal size");
  // Local shapes (rows x columns, column-major, leading dimension = rows).
  const int64_t a_rows = gather ? k : k / p, a_cols = gather ? m / p : m;
  const int64_t b_rows = gather ? k : k / p, b_cols = gather ? n / p : n;
  const int64_t d_rows = gather ? m / p : m;
  const int64_t d_cols = op == Op::GemmReduceScatter ? n / p : n;
  bench::Buffer a(a_rows * a_cols * 2, true), b(b_rows * b_cols * 2, true);
  bench::Buffer d(d_rows * d_cols * 2, true), reference(d_rows * d_cols * 2, true);
  bench::fill_random(a, WEAVE_BFLOAT16, 1000 + g_rank);
  bench::fill_random(b, WEAVE_BFLOAT16, 2000 + g_rank);
  // The sequential version's intermediate: X gathered (K x M), or the full
  // product before the reduction (N x M).
  bench::Buffer staging(gather ? k * n * 2 : m * n * 2, true);

  // Block sizes as NVIDIA's samples give them; where the grid has one
  // process in a direction the block size there does not change the local
  // layout.
  cublasMpMatrixDescriptor_t desc_a = nullptr, desc_b = nullptr, desc_d = nullptr;
  auto describe = [](int64_t rows, int64_t cols, int64_t mb, int64_t nb, int64_t ld, cublasMpGrid_t grid,
                     cublasMpMatrixDescriptor_t* desc) {
    check(cublasMpMatrixDescriptorCreate(rows, cols, mb, nb, 0, 0, ld, CUDA_R_16BF, grid, desc),
          "cublasMpMatrixDescriptorCreate");
  };
  if (gather) {  // A and B split by columns, D by rows
    describe(k, m, k, m / p, k, ctx.row, &desc_a);
    describe(k, n, k, n / p, k, ctx.row, &desc_b);
    describe(m, n, m / p, n / p, m / p, ctx.column, &desc_d);
  } else {  // A and B split by rows (K); D split by columns, or whole on every rank
    describe(k, m, k / p, m, k / p, ctx.column, &desc_a);
    if (op == Op::GemmReduceScatter) {
      describe(k, n, k / p, n / p, k / p, ctx.column, &desc_b);
      describe(m, n, m, n / p, m, ctx.row, &desc_d);
    } else {  // GEMM-AR: every rank's m x n D is one column block of an m x (n p) matrix
      describe(k, n, k / p, n, k / p, ctx.column, &desc_b);
      describe(m, n * p, m, n, m, ctx.row, &desc_d);
    }
  }
  cublasMpMatmulDescriptor_t matmul = nullptr;
  check(cublasMpMatmulDescriptorCreate(&matmul, CUBLAS_COMPUTE_32F), "cublasMpMatmulDescriptorCreate");
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  const cublasMpMatmulAlgoType_t algo = CUBLASMP_MATMUL_ALGO_TYPE_DEFAULT;
  check(set_attribute(matmul, CUBLASMP_MATMUL_DESCRIPTOR_ATTRIBUTE_TRANSA, &trans_a,
                                             sizeof trans_a), "TRANSA");
  check(set_attribute(matmul, CUBLASMP_MATMUL_DESCRIPTOR_ATTRIBUTE_TRANSB, &trans_b,
                                             sizeof trans_b), "TRANSB");
  check(set_attribute(matmul, CUBLASMP_MATMUL_DESCRIPTOR_ATTRIBUTE_ALGO_TYPE, &algo,
                                             sizeof algo), "ALGO_TYPE");
  if (op == Op::GemmAllReduce) {
    const cublasMpMatmulEpilogue_t epilogue = CUBLASMP_MATMUL_EPILOGUE_ALLREDUCE;
    check(set_attribute(matmul, CUBLASMP_MATMUL_DESCRIPTOR_ATTRIBUTE_EPILOGUE, &epilogue,
                                               sizeof epilogue), "EPILOGUE");
  }
  const float alpha = 1.0f, beta = 0.0f;
  std::size_t device_bytes = 0, host_bytes = 0;
  check(cublasMpMatmul_bufferSize(ctx.handle, matmul, m, n, k, &alpha, a.data(), 1, 1, desc_a, b.data(), 1, 1, desc_b,
                                  &beta, nullptr, 1, 1, desc_d, d.data(), 1, 1, desc_d, &device_bytes, &host_bytes),
        "cublasMpMatmul_bufferSize");
  Workspace work(gather ? ctx.column : ctx.row, device_bytes);
  std::vector<char> host_work(std::max<std::size_t>(host_bytes, 1));

  auto fused = [&] {
    check(cublasMpMatmul(ctx.handle, matmul, m, n, k, &alpha, a.data(), 1, 1, desc_a, b.data(), 1, 1, desc_b, &beta,
                         nullptr, 1, 1, desc_d, d.data(), 1, 1, desc_d, work.data(), work.bytes(), host_work.data(),
                         host_bytes),
          "cublasMpMatmul");
  };
  auto gemm = [&](const void* b_data, int64_t gemm_n, void* out) {
    check(cublasGemmEx(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(gather ? a_cols : m),
                       static_cast<int>(gemm_n), static_cast<int>(a_rows), &alpha, a.data(), CUDA_R_16BF,
                       static_cast<int>(a_rows), b_data, CUDA_R_16BF, static_cast<int>(a_rows), &beta, out,
                       CUDA_R_16BF, static_cast<int>(gather ? a_cols : m), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  };
  auto sequential = [&] {
    switch (op) {
      case Op::AllGatherGemm:
        check(ncclAllGather(b.data(), staging.data(), static_cast<std::size_t>(b_rows * b_cols), ncclBfloat16,
                            ctx.sequential_comm, ctx.stream), "ncclAllGather");
        gemm(staging.data(), n, reference.data());
        break;
      case Op::GemmReduceScatter:
        gemm(b.data(), n, staging.data());
        check(ncclReduceScatter(staging.data(), reference.data(), static_cast<std::size_t>(m * n / p), ncclBfloat16,
                                ncclSum, ctx.sequential_comm, ctx.stream), "ncclReduceScatter");
        break;
      case Op::GemmAllReduce:
        gemm(b.data(), n, staging.data());
        check(ncclAllReduce(staging.data(), reference.data(), static_cast<std::size_t>(m * n), ncclBfloat16, ncclSum,
                            ctx.sequential_comm, ctx.stream), "ncclAllReduce");
        break;
    }
  };

  // The two take turns within every iteration, as weave-bench's columns do.
  const std::vector<double> ms = bench::measure_in_turn(warmup, iterations, ctx.timer, {sequential, fused});
  Result r;
  r.sequential_ms = ms[0];
  r.fused_ms = ms[1];
  // The last fused result against the last sequential one; D is poisoned
  // first so that a call that writes nothing cannot pass.
  check(cudaMemsetAsync(d.data(), 0xFF, static_cast<std::size_t>(d.bytes()), ctx.stream), "cudaMemset");  // NaNs
  fused();
  check(cudaStreamSynchronize(ctx.stream), "cudaStreamSynchronize");
  r.error = relative_error(d, reference);
  r.note = work.note();

  cublasMpMatmulDescriptorDestroy(matmul);
  cublasMpMatrixDescriptorDestroy(desc_a);
  cublasMpMatrixDescriptorDestroy(desc_b);
  cublasMpMatrixDescriptorDestroy(desc_d);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);

  std::vector<std::string> shape_texts;
  std::vector<std::string> ops = {"ag", "rs", "ar"};
  std::string json;
  int iterations = 10, warmup = 3;
  CLI::App app{"weave-bench-cublasmp: cuBLASMp's tensor-parallel matmuls on weave-bench's shapes (bf16)"};
  app.add_option("--shape", shape_texts, "global MxKxN (repeatable; default: weave-bench's tp preset, even shapes)");
  app.add_option("--ops", ops, "ag rs ar")->delimiter(',');
  app.add_option("--iterations", iterations, "timed iterations (median reported)");
  app.add_option("--warmup", warmup, "untimed iterations first");
  app.add_option("--json", json, "write all results as JSON to this file (rank 0)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    MPI_Finalize();
    return code;
  }

  int status = 0;
  try {
#if CUBLASMP_VERSION < 800
    // NVSHMEM sizes its symmetric heap when cuBLASMp starts it (at the first
    // grid); the default 1 GiB does not hold the workspace of the largest
    // shapes.
    setenv("NVSHMEM_SYMMETRIC_SIZE", "8G", 0);
#endif
    bench::select_device(true);
    Context ctx;
    ctx.cublasmp_comm = new_nccl_comm();
    ctx.sequential_comm = new_nccl_comm();
    check(cublasCreate(&ctx.cublas), "cublasCreate");
    check(cublasSetStream(ctx.cublas, ctx.stream), "cublasSetStream");
    check(cublasMpCreate(&ctx.handle, ctx.stream), "cublasMpCreate");
    check(cublasMpGridCreate(g_size, 1, CUBLASMP_GRID_LAYOUT_COL_MAJOR, ctx.cublasmp_comm, &ctx.column),
          "cublasMpGridCreate");
    check(cublasMpGridCreate(1, g_size, CUBLASMP_GRID_LAYOUT_ROW_MAJOR, ctx.cublasmp_comm, &ctx.row),
          "cublasMpGridCreate");
    int version = 0;
    cublasMpGetVersion(&version);
    const std::string device = bench::device_description(true);
    if (g_rank == 0) {
      std::printf("cuBLASMp %d.%d.%d on %d x %s, bf16, median of %d (after %d warm-up), slowest rank\n",
                  version / 1000, version % 1000 / 100, version % 100, g_size, device.c_str(), iterations, warmup);
      std::printf("%-8s %-22s %9s %9s %9s %10s\n", "op", "shape MxKxN", "fused ms", "seq ms", "fused/seq",
                  "rel. error");
    }
    nlohmann::json results = nlohmann::json::array();
    std::vector<Shape> shapes;
    for (const std::string& text : shape_texts) shapes.push_back(bench::parse_shape(text));
    if (shapes.empty())  // cuBLASMp's layouts take equal shards only
      for (const Shape& s : bench::preset_shapes("tp"))
        if (!s.uneven) shapes.push_back(s);
    for (const Shape& s : shapes)
      if (s.uneven) throw std::runtime_error(s.label() + ": cuBLASMp's tensor-parallel layouts need equal shards");
    for (const Shape& s : shapes)
      for (const std::string& op_text : ops) {
        const Op op = op_text == "ag" ? Op::AllGatherGemm
                      : op_text == "rs" ? Op::GemmReduceScatter
                      : op_text == "ar" ? Op::GemmAllReduce
                                        : throw std::runtime_error("unknown op " + op_text + " (ag, rs, ar)");
        nlohmann::json record = {{"op", op_name(op)}, {"shape", s.label()}, {"m", s.m},          {"k", s.k},
                                 {"n", s.n},          {"ranks", g_size},    {"dtype", "bf16"}};
        // A result passes when it is as close to the sequential one as two
        // bf16 roundings of sums over K allow; layout errors give ~1.
        const double tolerance = 1e-2;
        Result r;
        try {  // cuBLASMp refusing a case (the same on every rank) ends that case only
          r = run_case(ctx, op, s, warmup, iterations);
        } catch (const std::exception& e) {
          record["error"] = e.what();
          results.push_back(record);
          status = 1;
          if (g_rank == 0) std::printf("%-8s %-22s failed: %s\n", op_name(op), s.label().c_str(), e.what());
          continue;
        }
        record["fused_ms"] = r.fused_ms;
        record["sequential_ms"] = r.sequential_ms;
        record["relative_error"] = r.error;
        if (!r.note.empty()) record["note"] = r.note;
        const bool correct = r.error <= tolerance;  // false for NaN too
        if (!correct) {
          record["error"] = "result differs from the sequential one";
          status = 1;
        }
        results.push_back(record);
        if (g_rank == 0)
          std::printf("%-8s %-22s %9.3f %9.3f %9.3f %10.2e%s\n", op_name(op), s.label().c_str(), r.fused_ms,
                      r.sequential_ms, r.fused_ms / r.sequential_ms, r.error, correct ? "" : "  WRONG RESULT");
      }
    if (g_rank == 0 && !json.empty()) {
      std::ostringstream v;
      v << version / 1000 << "." << version % 1000 / 100 << "." << version % 100;
      nlohmann::json doc = {{"library", "cuBLASMp"}, {"version", v.str()}, {"ranks", g_size},
                            {"device", device},       {"iterations", iterations}, {"results", results}};
      std::ofstream(json) << doc.dump(2) << "\n";
    }
    cublasMpGridDestroy(ctx.row);
    cublasMpGridDestroy(ctx.column);
    cublasMpDestroy(ctx.handle);
    cublasDestroy(ctx.cublas);
    ncclCommDestroy(ctx.cublasmp_comm);
    ncclCommDestroy(ctx.sequential_comm);
  } catch (const std::exception& e) {
    // The other ranks may wait in a collective: end them all.
    std::fprintf(stderr, "rank %d: %s\n", g_rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
