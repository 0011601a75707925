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
// --ops gemm times cublasMpMatmul on A, B and C block-cyclic over a P_r x P_c
// grid (the layouts of weave-bench --ops gemm: column-major local arrays,
// mb = nb, sources (0, 0), op N N), in bf16 or f64 (--dtype), and checks its
// result against a double-precision product computed on the host: the
// matrices hold small multiples of 1/8 given by their global indices, so
// every rank knows any entry of A and B.
//
//   mpirun -np 2 weave-bench-cublasmp --ops gemm --grids 1x2,2x1 --dtype f64
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

// ||got - want||_F / ||want||_F over all ranks' shards.
double relative_error(const bench::Buffer& got, const bench::Buffer& want) {
  return bench::relative_difference(got, want, WEAVE_BFLOAT16, MPI_COMM_WORLD);
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

// The descriptors of one cublasMpMatmul, destroyed with it (also when a
// case fails half way).
struct MatmulDescriptors {
  cublasMpMatrixDescriptor_t a = nullptr, b = nullptr, d = nullptr;
  cublasMpMatmulDescriptor_t matmul = nullptr;
  MatmulDescriptors() = default;
  MatmulDescriptors(const MatmulDescriptors&) = delete;
  MatmulDescriptors& operator=(const MatmulDescriptors&) = delete;
  ~MatmulDescriptors() {
    if (matmul) cublasMpMatmulDescriptorDestroy(matmul);
    for (cublasMpMatrixDescriptor_t m : {a, b, d})
      if (m) cublasMpMatrixDescriptorDestroy(m);
  }
};

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
  MatmulDescriptors desc;
  auto describe = [](int64_t rows, int64_t cols, int64_t mb, int64_t nb, int64_t ld, cublasMpGrid_t grid,
                     cublasMpMatrixDescriptor_t* desc) {
    check(cublasMpMatrixDescriptorCreate(rows, cols, mb, nb, 0, 0, ld, CUDA_R_16BF, grid, desc),
          "cublasMpMatrixDescriptorCreate");
  };
  if (gather) {  // A and B split by columns, D by rows
    describe(k, m, k, m / p, k, ctx.row, &desc.a);
    describe(k, n, k, n / p, k, ctx.row, &desc.b);
    describe(m, n, m / p, n / p, m / p, ctx.column, &desc.d);
  } else {  // A and B split by rows (K); D split by columns, or whole on every rank
    describe(k, m, k / p, m, k / p, ctx.column, &desc.a);
    if (op == Op::GemmReduceScatter) {
      describe(k, n, k / p, n / p, k / p, ctx.column, &desc.b);
      describe(m, n, m, n / p, m, ctx.row, &desc.d);
    } else {  // GEMM-AR: every rank's m x n D is one column block of an m x (n p) matrix
      describe(k, n, k / p, n, k / p, ctx.column, &desc.b);
      describe(m, n * p, m, n, m, ctx.row, &desc.d);
    }
  }
  check(cublasMpMatmulDescriptorCreate(&desc.matmul, CUBLAS_COMPUTE_32F), "cublasMpMatmulDescriptorCreate");
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  const cublasMpMatmulAlgoType_t algo = CUBLASMP_MATMUL_ALGO_TYPE_DEFAULT;
  check(set_attribute(desc.matmul, CUBLASMP_MATMUL_DESCRIPTOR_ATTRIBUTE_TRANSA, &trans_a,
                                             sizeof trans_a), "TRANSA");
  check(set_attribute(desc.matmul, CUBLASMP_MATMUL_DESCRIPTOR_ATTRIBUTE_TRANSB, &trans_b,
                                             sizeof trans_b), "TRANSB");
  check(set_attribute(desc.matmul, CUBLASMP_MATMUL_DESCRIPTOR_ATTRIBUTE_ALGO_TYPE, &algo,
                                             sizeof algo), "ALGO_TYPE");
  if (op == Op::GemmAllReduce) {
    const cublasMpMatmulEpilogue_t epilogue = CUBLASMP_MATMUL_EPILOGUE_ALLREDUCE;
    check(set_attribute(desc.matmul, CUBLASMP_MATMUL_DESCRIPTOR_ATTRIBUTE_EPILOGUE, &epilogue,
                                               sizeof epilogue), "EPILOGUE");
  }
  const float alpha = 1.0f, beta = 0.0f;
  std::size_t device_bytes = 0, host_bytes = 0;
  check(cublasMpMatmul_bufferSize(ctx.handle, desc.matmul, m, n, k, &alpha, a.data(), 1, 1, desc.a, b.data(), 1, 1,
                                  desc.b, &beta, nullptr, 1, 1, desc.d, d.data(), 1, 1, desc.d, &device_bytes,
                                  &host_bytes),
        "cublasMpMatmul_bufferSize");
  Workspace work(gather ? ctx.column : ctx.row, device_bytes);
  std::vector<char> host_work(std::max<std::size_t>(host_bytes, 1));

  auto fused = [&] {
    check(cublasMpMatmul(ctx.handle, desc.matmul, m, n, k, &alpha, a.data(), 1, 1, desc.a, b.data(), 1, 1, desc.b,
                         &beta, nullptr, 1, 1, desc.d, d.data(), 1, 1, desc.d, work.data(), work.bytes(),
                         host_work.data(), host_bytes),
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

  return r;
}

// --- --ops gemm: the general 2-D matmul -----------------------------------------

// ScaLAPACK's NUMROC: how many of n indices, dealt in blocks of nb from
// process 0, process p of `procs` holds.
int64_t local_count(int64_t n, int64_t nb, int64_t p, int64_t procs) {
  const int64_t blocks = n / nb, extra = n % nb;
  int64_t count = blocks / procs * nb;
  const int64_t rest = blocks % procs;
  if (p < rest)
    count += nb;
  else if (p == rest)
    count += extra;
  return count;
}

// The global index of local index l of process p (blocks of nb from process 0).
int64_t global_index(int64_t l, int64_t nb, int64_t p, int64_t procs) { return (l / nb * procs + p) * nb + l % nb; }

// Entries known from their global indices on every rank: multiples of 1/8
// in [-1.125, 1], exact in bf16 (and the sums of their products exact in f64).
double a_entry(int64_t i, int64_t k) { return static_cast<double>((i * 7 + k * 13) % 17 - 8) / 8.0; }
double b_entry(int64_t k, int64_t j) { return static_cast<double>((k * 5 + j * 11) % 19 - 9) / 8.0; }

uint16_t to_bfloat16(double value) {  // exact for the entries above
  const float x = static_cast<float>(value);
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return static_cast<uint16_t>(bits >> 16);
}

// This rank's local array (column-major, ld = local rows) of a rows x cols
// matrix of entries entry(i, j), on the device, in f64 or bf16.
bench::Buffer local_array(int64_t rows, int64_t cols, int64_t nb, int pr, int pc, bool f64,
                          double (*entry)(int64_t, int64_t)) {
  const int myrow = g_rank / pc, mycol = g_rank % pc;
  const int64_t lr = local_count(rows, nb, myrow, pr), lc = local_count(cols, nb, mycol, pc);
  const std::size_t size = f64 ? 8 : 2;
  std::vector<unsigned char> host(static_cast<std::size_t>(lr * lc) * size);
  for (int64_t j = 0; j < lc; ++j)
    for (int64_t i = 0; i < lr; ++i) {
      const double v = entry(global_index(i, nb, myrow, pr), global_index(j, nb, mycol, pc));
      unsigned char* out = host.data() + static_cast<std::size_t>(i + j * lr) * size;
      if (f64) {
        std::memcpy(out, &v, 8);
      } else {
        const uint16_t h = to_bfloat16(v);
        std::memcpy(out, &h, 2);
      }
    }
  bench::Buffer b(static_cast<int64_t>(host.size()), true);
  if (!host.empty()) check(cudaMemcpy(b.data(), host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
  return b;
}

// C = A B (M x K times K x N) over `grid` (pr x pc, ranks in row-major order
// as weave-bench's grids), every matrix in nb x nb blocks from process (0, 0).
Result run_gemm2d(Context& ctx, cublasMpGrid_t grid, int pr, int pc, int64_t nb, const Shape& s, bool f64,
                  int warmup, int iterations) {
  const int myrow = g_rank / pc, mycol = g_rank % pc;
  const cudaDataType_t type = f64 ? CUDA_R_64F : CUDA_R_16BF;
  bench::Buffer a = local_array(s.m, s.k, nb, pr, pc, f64, a_entry);
  bench::Buffer b = local_array(s.k, s.n, nb, pr, pc, f64, b_entry);
  const int64_t c_rows = local_count(s.m, nb, myrow, pr), c_cols = local_count(s.n, nb, mycol, pc);
  bench::Buffer d(c_rows * c_cols * (f64 ? 8 : 2), true);
  auto describe = [&](int64_t rows, int64_t cols, cublasMpMatrixDescriptor_t* desc) {
    const int64_t ld = std::max<int64_t>(1, local_count(rows, nb, myrow, pr));
    check(cublasMpMatrixDescriptorCreate(rows, cols, nb, nb, 0, 0, ld, type, grid, desc),
          "cublasMpMatrixDescriptorCreate");
  };
  MatmulDescriptors desc;
  describe(s.m, s.k, &desc.a);
  describe(s.k, s.n, &desc.b);
  describe(s.m, s.n, &desc.d);
  check(cublasMpMatmulDescriptorCreate(&desc.matmul, f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F),
        "cublasMpMatmulDescriptorCreate");
  const cublasOperation_t no_transpose = CUBLAS_OP_N;
  check(set_attribute(desc.matmul, CUBLASMP_MATMUL_DESCRIPTOR_ATTRIBUTE_TRANSA, &no_transpose, sizeof no_transpose),
        "TRANSA");
  check(set_attribute(desc.matmul, CUBLASMP_MATMUL_DESCRIPTOR_ATTRIBUTE_TRANSB, &no_transpose, sizeof no_transpose),
        "TRANSB");
  const double alpha_d = 1.0, beta_d = 0.0;
  const float alpha_f = 1.0f, beta_f = 0.0f;
  const void* alpha = f64 ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = f64 ? static_cast<const void*>(&beta_d) : &beta_f;
  std::size_t device_bytes = 0, host_bytes = 0;
  check(cublasMpMatmul_bufferSize(ctx.handle, desc.matmul, s.m, s.n, s.k, alpha, a.data(), 1, 1, desc.a, b.data(), 1, 1,
                                  desc.b, beta, nullptr, 1, 1, desc.d, d.data(), 1, 1, desc.d, &device_bytes,
                                  &host_bytes),
        "cublasMpMatmul_bufferSize");
  Workspace work(grid, device_bytes);
  std::vector<char> host_work(std::max<std::size_t>(host_bytes, 1));
  auto matmul_call = [&] {
    check(cublasMpMatmul(ctx.handle, desc.matmul, s.m, s.n, s.k, alpha, a.data(), 1, 1, desc.a, b.data(), 1, 1, desc.b,
                         beta, nullptr, 1, 1, desc.d, d.data(), 1, 1, desc.d, work.data(), work.bytes(),
                         host_work.data(), host_bytes),
          "cublasMpMatmul");
  };
  Result r;
  r.fused_ms = bench::measure_in_turn(warmup, iterations, ctx.timer, {matmul_call})[0];
  // Once more into NaNs, then up to 4096 local entries, spread over the
  // block, against the product in double precision.
  bench::poison(d);
  matmul_call();
  check(cudaStreamSynchronize(ctx.stream), "cudaStreamSynchronize");
  const std::vector<double> got = bench::read_values(d, f64 ? WEAVE_FLOAT64 : WEAVE_BFLOAT16);
  const int64_t count = c_rows * c_cols, step = std::max<int64_t>(1, count / 4096);
  double sums[2] = {0, 0}, total[2] = {0, 0};
  for (int64_t e = 0; e < count; e += step) {
    const int64_t i = global_index(e % c_rows, nb, myrow, pr), j = global_index(e / c_rows, nb, mycol, pc);
    double want = 0;
    for (int64_t k = 0; k < s.k; ++k) want += a_entry(i, k) * b_entry(k, j);
    const double g = got[static_cast<std::size_t>(e)];
    sums[0] += (g - want) * (g - want);  // NaN propagates
    sums[1] += want * want;
  }
  MPI_Allreduce(sums, total, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  r.error = std::sqrt(total[0] / total[1]);
  r.note = work.note();
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
  std::vector<std::string> grid_texts;
  std::vector<int64_t> blocks = {1024};
  std::string dtype = "bf16";
  CLI::App app{"weave-bench-cublasmp: cuBLASMp's matmuls on weave-bench's shapes"};
  app.add_option("--shape", shape_texts,
                 "global MxKxN (repeatable; default: weave-bench's tp preset, even shapes; gemm: its gemm-gpu preset)");
  app.add_option("--ops,--op", ops, "ag rs ar (bf16, tensor-parallel layouts), gemm (2-D block-cyclic)")
      ->delimiter(',');
  app.add_option("--grids", grid_texts, "gemm: process grids PrxPc (default: 1xP and Px1)")->delimiter(',');
  app.add_option("--blocks", blocks, "gemm: block sizes mb = nb (default 1024)")->delimiter(',');
  app.add_option("--dtype", dtype, "gemm: bf16 or f64")->check(CLI::IsMember({"bf16", "f64"}));
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
    nlohmann::json results = nlohmann::json::array();
    if (std::find(ops.begin(), ops.end(), "gemm") != ops.end()) {
      ops.erase(std::remove(ops.begin(), ops.end(), "gemm"), ops.end());
      std::vector<std::pair<int, int>> grids;
      for (const std::string& text : grid_texts) {
        const std::pair<int, int> g = bench::parse_grid(text);
        if (g.first * g.second != g_size) throw std::runtime_error("grid " + text + " does not span the ranks");
        grids.push_back(g);
      }
      if (grids.empty()) grids = {{1, g_size}, {g_size, 1}};
      std::vector<Shape> shapes;
      for (const std::string& text : shape_texts) shapes.push_back(bench::parse_shape(text));
      if (shapes.empty()) shapes = bench::preset_shapes("gemm-gpu");
      if (g_rank == 0) {
        std::printf("cuBLASMp %d.%d.%d on %d x %s, cublasMpMatmul, %s, A, B, C block-cyclic, op N N; median of %d "
                    "(after %d warm-up), slowest rank\n",
                    version / 1000, version % 1000 / 100, version % 100, g_size, device.c_str(), dtype.c_str(),
                    iterations, warmup);
        std::printf("%-5s %6s %-20s %10s %8s %10s\n", "grid", "block", "shape MxKxN", "matmul ms", "TFLOP/s",
                    "rel. error");
      }
      const bool f64 = dtype == "f64";
      for (const auto& [pr, pc] : grids) {
        cublasMpGrid_t grid = nullptr;
        check(cublasMpGridCreate(pr, pc, CUBLASMP_GRID_LAYOUT_ROW_MAJOR, ctx.cublasmp_comm, &grid),
              "cublasMpGridCreate");
        for (int64_t block : blocks)
          for (const Shape& s : shapes) {
            const std::string grid_text = std::to_string(pr) + "x" + std::to_string(pc);
            nlohmann::json record = {{"op", "GEMM"}, {"grid", grid_text}, {"block", block}, {"shape", s.label()},
                                     {"m", s.m},     {"k", s.k},          {"n", s.n},       {"ranks", g_size},
                                     {"dtype", dtype}};
            Result r;
            try {  // cuBLASMp refusing a case (the same on every rank) ends that case only
              r = run_gemm2d(ctx, grid, pr, pc, block, s, f64, warmup, iterations);
            } catch (const std::exception& e) {
              record["error"] = e.what();
              results.push_back(record);
              status = 1;
              if (g_rank == 0)
                std::printf("%-5s %6lld %-20s failed: %s\n", grid_text.c_str(), static_cast<long long>(block),
                            s.label().c_str(), e.what());
              continue;
            }
            // bf16: one rounding of each entry of C; f64: exact sums.
            const bool correct = r.error <= (f64 ? 1e-12 : 1e-2);  // false for NaN too
            record["fused_ms"] = r.fused_ms;
            record["relative_error"] = r.error;
            if (!r.note.empty()) record["note"] = r.note;
            if (!correct) {
              record["error"] = "result differs from the double-precision product";
              status = 1;
            }
            results.push_back(record);
            const double tflops = 2.0 * s.m * s.n * s.k / g_size / (r.fused_ms * 1e-3) / 1e12;
            if (g_rank == 0)
              std::printf("%-5s %6lld %-20s %10.3f %8.1f %10.2e%s\n", grid_text.c_str(),
                          static_cast<long long>(block), s.label().c_str(), r.fused_ms, tflops, r.error,
                          correct ? "" : "  WRONG RESULT");
          }
        cublasMpGridDestroy(grid);
      }
    }
    if (g_rank == 0 && !ops.empty()) {
      std::printf("cuBLASMp %d.%d.%d on %d x %s, bf16, median of %d (after %d warm-up), slowest rank\n",
                  version / 1000, version % 1000 / 100, version % 100, g_size, device.c_str(), iterations, warmup);
      std::printf("%-8s %-22s %9s %9s %9s %10s\n", "op", "shape MxKxN", "fused ms", "seq ms", "fused/seq",
                  "rel. error");
    }
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
