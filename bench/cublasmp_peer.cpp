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
// --dtype fp8 runs the same three operations with A and B in e4m3 and D in
// bf16 (float32 compute), each operand with one float32 scale
// (--scales tensor: CUBLASMP_MATMUL_MATRIX_SCALE_SCALAR_FP32; 0.5 for A,
// 0.25 for B, the same on every rank). The sequential version then gathers
// the e4m3 bytes (AG) or reduces the bf16 products (RS, AR) and multiplies
// with cuBLASLt (cublasGemmEx takes no FP8) on the same scale pointers.
// cuBLASMp's row-wise scales (OUTER_VEC_FP32) are not offered: its header
// does not say how the scale vectors are distributed over the ranks.
//
//   mpirun -np 4 weave-bench-cublasmp --dtype fp8 --scales tensor
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
#include <cublasLt.h>
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
#include <memory>
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
  cublasLtHandle_t lt = nullptr;  // the sequential FP8 GEMM
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

// The sequential version's FP8 GEMM, through cuBLASLt (cublasGemmEx takes
// no FP8): D (m x n, bf16) = a_scale b_scale A^T B with A (k x m) and B
// (k x n) in e4m3, all column-major with leading dimension = rows, as
// cuBLASMp's TN problem; descriptors and algorithm chosen once per case,
// outside the timing.
class ScaledGemm {
 public:
  ScaledGemm(cublasLtHandle_t lt, int64_t m, int64_t n, int64_t k, const void* a_scale, const void* b_scale)
      : lt_(lt), workspace_(kWorkspaceBytes, true) {
    check(cublasLtMatmulDescCreate(&d_.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
    set(CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a, "cuBLASLt TRANSA");
    set(CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b, "cuBLASLt TRANSB");
    set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale, sizeof a_scale, "cuBLASLt A_SCALE_POINTER");
    set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale, sizeof b_scale, "cuBLASLt B_SCALE_POINTER");
    const auto rows = [](int64_t r) { return static_cast<uint64_t>(r); };
    check(cublasLtMatrixLayoutCreate(&d_.a, CUDA_R_8F_E4M3, rows(k), rows(m), k), "cublasLtMatrixLayoutCreate A");
    check(cublasLtMatrixLayoutCreate(&d_.b, CUDA_R_8F_E4M3, rows(k), rows(n), k), "cublasLtMatrixLayoutCreate B");
    check(cublasLtMatrixLayoutCreate(&d_.d, CUDA_R_16BF, rows(m), rows(n), m), "cublasLtMatrixLayoutCreate D");
    check(cublasLtMatmulPreferenceCreate(&d_.preference), "cublasLtMatmulPreferenceCreate");
    const std::size_t workspace_bytes = kWorkspaceBytes;
    check(cublasLtMatmulPreferenceSetAttribute(d_.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &workspace_bytes, sizeof workspace_bytes),
          "cublasLtMatmulPreferenceSetAttribute");
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    check(cublasLtMatmulAlgoGetHeuristic(lt_, d_.op, d_.a, d_.b, d_.d, d_.d, d_.preference, 1, &heuristic, &found),
          "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) throw std::runtime_error("cublasLtMatmulAlgoGetHeuristic: no FP8 algorithm for this GEMM");
    algo_ = heuristic.algo;
  }
  // C is D with beta = 0 (cuBLASLt wants C's type to be D's).
  void run(cudaStream_t stream, const void* a, const void* b, void* d) {
    const float alpha = 1.0f, beta = 0.0f;
    check(cublasLtMatmul(lt_, d_.op, &alpha, a, d_.a, b, d_.b, &beta, d, d_.d, d, d_.d, &algo_, workspace_.data(),
                         kWorkspaceBytes, stream),
          "cublasLtMatmul");
  }

 private:
  static constexpr std::size_t kWorkspaceBytes = 32u << 20;  // cuBLASLt's recommendation for Hopper
  void set(cublasLtMatmulDescAttributes_t attribute, const void* value, std::size_t size, const char* what) {
    check(cublasLtMatmulDescSetAttribute(d_.op, attribute, value, size), what);
  }
  // Destroyed also when the constructor throws half way.
  struct Descriptors {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulPreference_t preference = nullptr;
    Descriptors() = default;
    Descriptors(const Descriptors&) = delete;
    Descriptors& operator=(const Descriptors&) = delete;
    ~Descriptors() {
      if (preference) cublasLtMatmulPreferenceDestroy(preference);
      for (cublasLtMatrixLayout_t l : {a, b, d})
        if (l) cublasLtMatrixLayoutDestroy(l);
      if (op) cublasLtMatmulDescDestroy(op);
    }
  };
  cublasLtHandle_t lt_;
  bench::Buffer workspace_;
  Descriptors d_;
  cublasLtMatmulAlgo_t algo_{};
};

struct Result {
  double fused_ms = 0, sequential_ms = 0, error = 0;
  std::string note;
};

// One operation on one shape, in bf16 or (fp8) with e4m3 A and B scaled
// tensor-wise and bf16 D. The matrices are the local shards, column-major
// as cuBLASMp reads them (see the file comment): A = W's shard (K x N),
// B = X's shard (K x M), D = Y's shard (N x M).
Result run_case(Context& ctx, Op op, const Shape& s, bool fp8, int warmup, int iterations) {
  const int64_t p = g_size, m = s.n, n = s.m, k = s.k;  // cuBLASMp's m, n, k
  const bool gather = op == Op::AllGatherGemm;
  if ((gather ? m % p != 0 || n % p != 0 : k % p != 0 || n % p != 0))
    throw std::runtime_error("cuBLASMp's tensor-parallel layouts need shards of equal size");
  const cudaDataType_t input_type = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  const weave_dtype_t input_dtype = fp8 ? WEAVE_FLOAT8_E4M3 : WEAVE_BFLOAT16;
  const int64_t input_size = fp8 ? 1 : 2;  // bytes per element of A and B; D is bf16
  // Local shapes (rows x columns, column-major, leading dimension = rows).
  const int64_t a_rows = gather ? k : k / p, a_cols = gather ? m / p : m;
  const int64_t b_rows = gather ? k : k / p, b_cols = gather ? n / p : n;
  const int64_t d_rows = gather ? m / p : m;
  const int64_t d_cols = op == Op::GemmReduceScatter ? n / p : n;
  bench::Buffer a(a_rows * a_cols * input_size, true), b(b_rows * b_cols * input_size, true);
  bench::Buffer d(d_rows * d_cols * 2, true), reference(d_rows * d_cols * 2, true);
  bench::fill_random(a, input_dtype, 1000 + g_rank);
  bench::fill_random(b, input_dtype, 2000 + g_rank);
  // The sequential version's intermediate: X gathered (K x M, A's type), or
  // the full product before the reduction (N x M, bf16).
  bench::Buffer staging(gather ? k * n * input_size : m * n * 2, true);
  // FP8: one float32 scale per operand, the same on every rank; not 1, so
  // that a scale left out shows in the result.
  bench::Buffer a_scale, b_scale;
  if (fp8) {
    a_scale = bench::Buffer(4, true);
    b_scale = bench::Buffer(4, true);
    const float scales[2] = {0.5f, 0.25f};
    check(cudaMemcpy(a_scale.data(), &scales[0], 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(b_scale.data(), &scales[1], 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  }

  // Block sizes as NVIDIA's samples give them; where the grid has one
  // process in a direction the block size there does not change the local
  // layout.
  MatmulDescriptors desc;
  auto describe = [](int64_t rows, int64_t cols, int64_t mb, int64_t nb, int64_t ld, cudaDataType_t type,
                     cublasMpGrid_t grid, cublasMpMatrixDescriptor_t* desc) {
    check(cublasMpMatrixDescriptorCreate(rows, cols, mb, nb, 0, 0, ld, type, grid, desc),
          "cublasMpMatrixDescriptorCreate");
  };
  if (gather) {  // A and B split by columns, D by rows
    describe(k, m, k, m / p, k, input_type, ctx.row, &desc.a);
    describe(k, n, k, n / p, k, input_type, ctx.row, &desc.b);
    describe(m, n, m / p, n / p, m / p, CUDA_R_16BF, ctx.column, &desc.d);
  } else {  // A and B split by rows (K); D split by columns, or whole on every rank
    describe(k, m, k / p, m, k / p, input_type, ctx.column, &desc.a);
    if (op == Op::GemmReduceScatter) {
      describe(k, n, k / p, n / p, k / p, input_type, ctx.column, &desc.b);
      describe(m, n, m, n / p, m, CUDA_R_16BF, ctx.row, &desc.d);
    } else {  // GEMM-AR: every rank's m x n D is one column block of an m x (n p) matrix
      describe(k, n, k / p, n, k / p, input_type, ctx.column, &desc.b);
      describe(m, n * p, m, n, m, CUDA_R_16BF, ctx.row, &desc.d);
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
  if (fp8) {  // the attribute's value is the device pointer itself
    const cublasMpMatmulMatrixScale_t mode = CUBLASMP_MATMUL_MATRIX_SCALE_SCALAR_FP32;
    const void* a_scale_pointer = a_scale.data();
    const void* b_scale_pointer = b_scale.data();
    check(set_attribute(desc.matmul, CUBLASMP_MATMUL_DESCRIPTOR_ATTRIBUTE_A_SCALE_POINTER, &a_scale_pointer,
                        sizeof a_scale_pointer), "A_SCALE_POINTER");
    check(set_attribute(desc.matmul, CUBLASMP_MATMUL_DESCRIPTOR_ATTRIBUTE_A_SCALE_MODE, &mode, sizeof mode),
          "A_SCALE_MODE");
    check(set_attribute(desc.matmul, CUBLASMP_MATMUL_DESCRIPTOR_ATTRIBUTE_B_SCALE_POINTER, &b_scale_pointer,
                        sizeof b_scale_pointer), "B_SCALE_POINTER");
    check(set_attribute(desc.matmul, CUBLASMP_MATMUL_DESCRIPTOR_ATTRIBUTE_B_SCALE_MODE, &mode, sizeof mode),
          "B_SCALE_MODE");
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
  // The local GEMM of the sequential version: gemm_m x n = A^T (gemm_k x
  // gemm_m) times gemm_k x n.
  const int64_t gemm_m = gather ? a_cols : m, gemm_k = a_rows;
  std::unique_ptr<ScaledGemm> scaled_gemm;
  if (fp8) scaled_gemm = std::make_unique<ScaledGemm>(ctx.lt, gemm_m, n, gemm_k, a_scale.data(), b_scale.data());
  auto gemm = [&](const void* b_data, void* out) {
    if (fp8) {
      scaled_gemm->run(ctx.stream, a.data(), b_data, out);
      return;
    }
    check(cublasGemmEx(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(gemm_m), static_cast<int>(n),
                       static_cast<int>(gemm_k), &alpha, a.data(), CUDA_R_16BF, static_cast<int>(gemm_k), b_data,
                       CUDA_R_16BF, static_cast<int>(gemm_k), &beta, out, CUDA_R_16BF, static_cast<int>(gemm_m),
                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  };
  auto sequential = [&] {
    switch (op) {
      case Op::AllGatherGemm:  // FP8: the e4m3 bytes, as cuBLASMp gathers them
        check(ncclAllGather(b.data(), staging.data(), static_cast<std::size_t>(b_rows * b_cols),
                            fp8 ? ncclUint8 : ncclBfloat16, ctx.sequential_comm, ctx.stream), "ncclAllGather");
        gemm(staging.data(), reference.data());
        break;
      case Op::GemmReduceScatter:
        gemm(b.data(), staging.data());
        check(ncclReduceScatter(staging.data(), reference.data(), static_cast<std::size_t>(m * n / p), ncclBfloat16,
                                ncclSum, ctx.sequential_comm, ctx.stream), "ncclReduceScatter");
        break;
      case Op::GemmAllReduce:
        gemm(b.data(), staging.data());
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
  std::string scales = "tensor";
  CLI::App app{"weave-bench-cublasmp: cuBLASMp's matmuls on weave-bench's shapes"};
  app.add_option("--shape", shape_texts,
                 "global MxKxN (repeatable; default: weave-bench's tp preset, even shapes; gemm: its gemm-gpu preset)");
  app.add_option("--ops,--op", ops, "ag rs ar (bf16 or fp8, tensor-parallel layouts), gemm (2-D block-cyclic)")
      ->delimiter(',');
  app.add_option("--grids", grid_texts, "gemm: process grids PrxPc (default: 1xP and Px1)")->delimiter(',');
  app.add_option("--blocks", blocks, "gemm: block sizes mb = nb (default 1024)")->delimiter(',');
  app.add_option("--dtype", dtype, "bf16; f64 (gemm only); fp8: e4m3 A and B, bf16 D (ag rs ar only)")
      ->check(CLI::IsMember({"bf16", "f64", "fp8"}));
  // Row-wise (OUTER_VEC_FP32) is left out: cuBLASMp 0.7's header does not
  // say how its scale vectors are distributed over the ranks.
  app.add_option("--scales", scales, "fp8: tensor (one float32 scale per operand, SCALAR_FP32)")
      ->check(CLI::IsMember({"tensor"}));
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
  // What each operation takes, said before anything runs (the same on every
  // rank), rather than a type silently ignored.
  const bool has_gemm = std::find(ops.begin(), ops.end(), "gemm") != ops.end();
  const bool has_tp = std::any_of(ops.begin(), ops.end(), [](const std::string& o) { return o != "gemm"; });
  std::string usage_error;
  if (dtype == "fp8" && has_gemm) usage_error = "--dtype fp8 is for --ops ag,rs,ar only";
  if (dtype == "f64" && has_tp) usage_error = "--dtype f64 is for --ops gemm only";
  if (dtype != "fp8" && app.count("--scales") > 0) usage_error = "--scales needs --dtype fp8";
  if (!usage_error.empty()) {
    if (g_rank == 0) std::fprintf(stderr, "weave-bench-cublasmp: %s\n", usage_error.c_str());
    MPI_Finalize();
    return 2;
  }
  const bool fp8 = dtype == "fp8";
  const std::string type_text = fp8 ? "fp8 e4m3 A and B (" + scales + "-wise scales 0.5 and 0.25), bf16 D" : "bf16";

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
    check(cublasLtCreate(&ctx.lt), "cublasLtCreate");
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
      std::printf("cuBLASMp %d.%d.%d on %d x %s, %s, median of %d (after %d warm-up), slowest rank\n",
                  version / 1000, version % 1000 / 100, version % 100, g_size, device.c_str(), type_text.c_str(),
                  iterations, warmup);
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
                                 {"n", s.n},          {"ranks", g_size},    {"dtype", fp8 ? "fp8" : "bf16"}};
        if (fp8) record["scales"] = scales;
        // A result passes when it is as close to the sequential one as two
        // bf16 roundings of sums over K allow; layout errors give ~1. FP8
        // takes the same bound: both versions multiply the same e4m3 values
        // (each product exact in float32) with the same scales, so they
        // differ only in the order and precision of the accumulation and in
        // the bf16 roundings of D (and of the partial sums RS and AR reduce),
        // each within 2^-8 relative; a scale (0.5, 0.25) left out or applied
        // twice scales the result by 2 or 4 or their inverses, an error of
        // 0.5 or more.
        const double tolerance = 1e-2;
        Result r;
        try {  // cuBLASMp or cuBLASLt refusing a case (the same on every rank) ends that case only
          r = run_case(ctx, op, s, fp8, warmup, iterations);
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
    cublasLtDestroy(ctx.lt);
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
