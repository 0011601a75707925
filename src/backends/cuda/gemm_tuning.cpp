#include "backends/cuda/gemm_tuning.hpp"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>

namespace weave::internal::cuda {

namespace {

// Runs per candidate: one to warm up, then these, timed together.
constexpr int kTimedRuns = 3;

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, int>& cache() {
  static std::map<std::string, int> c;
  return c;
}

// Scratch device memory freed on every path; `ok` is false when any
// allocation failed (the error is cleared: tuning never fails a plan). It
// is filled on the stream the timing runs use, so that they read it filled
// (that stream does not wait for the legacy default stream).
struct Scratch {
  explicit Scratch(cudaStream_t s) : stream(s) {}
  cudaStream_t stream;
  std::vector<void*> pointers;
  bool ok = true;
  void* get(std::size_t bytes, unsigned char fill) {
    if (bytes == 0 || !ok) return nullptr;
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      ok = false;
      return nullptr;
    }
    pointers.push_back(p);
    // Some value, the same for every candidate (timings do not depend on
    // it beyond power draw); scales and sizes of 1.0 would do as well.
    if (cudaMemsetAsync(p, fill, bytes, stream) != cudaSuccess) {
      (void)cudaGetLastError();
      ok = false;
    }
    return p;
  }
  ~Scratch() {
    for (void* p : pointers) cudaFree(p);
  }
};

struct Timer {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  bool ok = false;
  Timer() {
    ok = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess &&
         cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess;
    if (!ok) (void)cudaGetLastError();
  }
  ~Timer() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
  }
};

}  // namespace

int choose_by_timing(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                     const std::array<cublasLtMatrixLayout_t, 3>& layouts,
                     const std::vector<cublasLtMatmulHeuristicResult_t>& candidates, const TuningBuffers& buffers,
                     bool double_scalars, const std::string& key, TuningOutcome* outcome) {
  TuningOutcome local;
  TuningOutcome& out = outcome ? *outcome : local;
  out = TuningOutcome{};
  out.candidates = static_cast<int>(candidates.size());
  if (candidates.size() < 2) {
    out.why_not = "one candidate";
    return 0;
  }
  {
    std::lock_guard<std::mutex> lock(cache_mutex());
    const auto found = cache().find(key);
    if (found != cache().end() && found->second < out.candidates) {
      out.remembered = true;
      out.chosen = found->second;
      return out.chosen;
    }
  }
  Timer timer;
  Scratch scratch(timer.stream);
  void* left = scratch.get(buffers.left, 0x3c);
  void* right = scratch.get(buffers.right, 0x3c);
  void* result = scratch.get(buffers.out, 0);
  void* left_scales = scratch.get(buffers.left_scales, 0);
  void* right_scales = scratch.get(buffers.right_scales, 0);
  void* bias = scratch.get(buffers.bias, 0);
  void* workspace = scratch.get(buffers.workspace, 0);
  if (!scratch.ok || !timer.ok) {
    out.why_not = "no scratch memory or stream for timing";
    return 0;
  }
  auto set_pointer = [&](cublasLtMatmulDescAttributes_t attribute, const void* pointer) {
    return cublasLtMatmulDescSetAttribute(desc, attribute, &pointer, sizeof pointer) == CUBLAS_STATUS_SUCCESS;
  };
  // The scale and bias pointers the timing runs read (execute sets the
  // real ones before every run).
  if ((left_scales && !set_pointer(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, left_scales)) ||
      (right_scales && !set_pointer(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, right_scales)) ||
      (bias && !set_pointer(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias))) {
    out.why_not = "scale or bias pointers not accepted";
    return 0;
  }
  const double alpha_d[2] = {1.0, 0.0}, beta_d[2] = {0.0, 0.0};
  const float alpha_f[2] = {1.0f, 0.0f}, beta_f[2] = {0.0f, 0.0f};
  const void* alpha = double_scalars ? static_cast<const void*>(alpha_d) : static_cast<const void*>(alpha_f);
  const void* beta = double_scalars ? static_cast<const void*>(beta_d) : static_cast<const void*>(beta_f);
  std::string failure;  // the first candidate's failure, for describe
  auto run = [&](const cublasLtMatmulAlgo_t& algo) {
    const cublasStatus_t status = cublasLtMatmul(handle, desc, alpha, left, layouts[0], right, layouts[1], beta, result,
                                                 layouts[2], result, layouts[2], &algo, workspace, buffers.workspace,
                                                 timer.stream);
    if (status != CUBLAS_STATUS_SUCCESS && failure.empty())
      failure = std::string("cublasLtMatmul: ") + cublasLtGetStatusName(status);
    return status == CUBLAS_STATUS_SUCCESS;
  };
  int best = 0;
  double best_ms = -1;
  for (int i = 0; i < out.candidates; ++i) {
    const cublasLtMatmulAlgo_t& algo = candidates[static_cast<std::size_t>(i)].algo;
    bool ok = run(algo) && cudaEventRecord(timer.start, timer.stream) == cudaSuccess;
    for (int r = 0; ok && r < kTimedRuns; ++r) ok = run(algo);
    ok = ok && cudaEventRecord(timer.stop, timer.stream) == cudaSuccess &&
         cudaEventSynchronize(timer.stop) == cudaSuccess;
    float ms = 0;
    ok = ok && cudaEventElapsedTime(&ms, timer.start, timer.stop) == cudaSuccess;
    if (!ok) {
      const cudaError_t error = cudaGetLastError();
      if (error != cudaSuccess && failure.empty()) failure = cudaGetErrorName(error);
      (void)cudaStreamSynchronize(timer.stream);
      continue;
    }
    const double each = ms / kTimedRuns;
    if (i == 0) out.first_ms = each;
    if (best_ms < 0 || each < best_ms) {
      best_ms = each;
      best = i;
    }
  }
  if (best_ms < 0) {
    out.why_not = "no candidate ran (" + (failure.empty() ? std::string("a timing call failed") : failure) + ")";
    return 0;
  }
  out.timed = true;
  out.chosen = best;
  out.chosen_ms = best_ms;
  std::lock_guard<std::mutex> lock(cache_mutex());
  cache()[key] = best;
  return best;
}

}  // namespace weave::internal::cuda
