// weave-fp8-support: which scaled FP8 GEMMs the cuBLASLt of this machine
// runs on this GPU. For every pair of FP8 formats, pair of scale modes,
// output type, bias epilogue and shape it asks cuBLASLt's heuristic for an
// algorithm and, where one comes back, runs the GEMM once (all ones, unit
// scales) and checks one element of the result. It uses cuBLASLt alone, no
// Weave: the table is what Weave's CUDA backend can be given, and
// doc/fp8.md records it for the GPUs measured.
//
// Usage: weave-fp8-support [--device D] [--shape MxNxK]...
// Each pair of formats and scale modes runs in a child process, so that a
// configuration that makes cuBLASLt abort is reported as crashed.
// (cuBLASLt's m, n, k, "TN" operands as Hopper's FP8 kernels take them;
// default shapes below). One line per configuration:
//   <a> <b> <a scale> <b scale> <out> <bias> <m>x<n>x<k> <result>
// where result is "runs", "no-algorithm" (the heuristic found none or
// refused: its status), or what failed when it ran.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace {

struct Shape {
  uint64_t m, n, k;
};

struct Format {
  const char* name;
  cudaDataType_t type;
};

struct Mode {
  const char* name;
  int32_t value;
  bool block;  // covers 128 elements of K: wants K of several blocks
};

struct Output {
  const char* name;
  cudaDataType_t type;
  std::size_t size;
};

const Format kFormats[] = {{"e4m3", CUDA_R_8F_E4M3}, {"e5m2", CUDA_R_8F_E5M2}};
const Mode kModes[] = {{"tensor", CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, false},
                       {"row-wise", CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F, false},
                       {"1x128", CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F, true},
                       {"128x128", CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, true}};
const Output kOutputs[] = {{"bf16", CUDA_R_16BF, 2}, {"f16", CUDA_R_16F, 2}, {"f32", CUDA_R_32F, 4}};

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "weave-fp8-support: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

const char* status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "not-initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "alloc-failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid-value";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "arch-mismatch";
    case CUBLAS_STATUS_MAPPING_ERROR: return "mapping-error";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "execution-failed";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "internal-error";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not-supported";
    default: return "other";
  }
}

// One configuration: the heuristic, then one run. Returns the result word.
std::string probe(cublasLtHandle_t handle, const Format& fa, const Format& fb, const Mode& ma, const Mode& mb,
                  const Output& out, bool bias, const Shape& s, void* a, void* b, void* d, void* bias_data,
                  float* scales, void* workspace, std::size_t workspace_bytes) {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  std::string result;
  auto done = [&](const std::string& r) {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (ld) cublasLtMatrixLayoutDestroy(ld);
    if (desc) cublasLtMatmulDescDestroy(desc);
    return r;
  };
  auto check = [&](cublasStatus_t st, const char* what) {
    if (st != CUBLAS_STATUS_SUCCESS) result = std::string(what) + ":" + status_name(st);
    return st == CUBLAS_STATUS_SUCCESS;
  };
  if (!check(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc")) return done(result);
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
  if (!check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &ma.value, sizeof ma.value),
             "a-scale-mode") ||
      !check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mb.value, sizeof mb.value),
             "b-scale-mode"))
    return done(result);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scales, sizeof scales);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scales, sizeof scales);
  if (bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const int32_t bias_type = out.type;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_data, sizeof bias_data);
  }
  // "TN": A stored k x m, B stored k x n, both K-contiguous; D m x n.
  cublasLtMatrixLayoutCreate(&la, fa.type, s.k, s.m, s.k);
  cublasLtMatrixLayoutCreate(&lb, fb.type, s.k, s.n, s.k);
  cublasLtMatrixLayoutCreate(&ld, out.type, s.m, s.n, s.m);
  cublasLtMatmulPreferenceCreate(&pref);
  const uint64_t bytes = workspace_bytes;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes, sizeof bytes);
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle, desc, la, lb, ld, ld, pref, 1, &heuristic, &found);
  if (st != CUBLAS_STATUS_SUCCESS) return done(std::string("no-algorithm:") + status_name(st));
  if (found == 0) return done("no-algorithm:none-found");
  const float alpha = 1.0f, beta = 0.0f;
  if (!check(cublasLtMatmul(handle, desc, &alpha, a, la, b, lb, &beta, d, ld, d, ld, &heuristic.algo, workspace,
                            workspace_bytes, nullptr),
             "matmul"))
    return done(result);
  if (cudaDeviceSynchronize() != cudaSuccess) return done(std::string("run:") + cudaGetErrorString(cudaGetLastError()));
  // All ones, unit scales: D(0,0) = k (+1 with the bias of ones).
  double first = 0;
  if (out.size == 4) {
    float v = 0;
    cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost);
    first = v;
  } else if (out.type == CUDA_R_16BF) {
    __nv_bfloat16 v;
    cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost);
    first = __bfloat162float(v);
  } else {
    __half v;
    cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost);
    first = __half2float(v);
  }
  const double expected = static_cast<double>(s.k) + (bias ? 1.0 : 0.0);
  if (std::fabs(first - expected) > 1e-2 * expected)
    return done("wrong:" + std::to_string(first) + "!=" + std::to_string(expected));
  return done("runs");
}


// Every configuration of one pair of formats and one pair of scale modes, in
// this process (a child of main's): all output types, with and without the
// bias, every shape. Returns how many ran.
int probe_group(int device, const std::vector<Shape>& shapes, const Format& fa, const Format& fb, const Mode& ma,
                const Mode& mb) {
  if (!ok(cudaSetDevice(device), "cudaSetDevice")) return 0;
  uint64_t max_elements = 0, max_k = 0, max_outer = 0;
  for (const Shape& s : shapes) {
    max_elements = std::max({max_elements, s.m * s.k, s.n * s.k, s.m * s.n});
    max_k = std::max(max_k, s.k);
    max_outer = std::max({max_outer, s.m, s.n});
  }
  const std::size_t scale_count = (max_outer + 4) * ((max_k + 127) / 128 + 4) + 1024;
  const std::size_t workspace_bytes = 32u << 20;
  void *a = nullptr, *b = nullptr, *d = nullptr, *bias = nullptr, *workspace = nullptr;
  float* scales = nullptr;
  if (!ok(cudaMalloc(&a, max_elements), "cudaMalloc") || !ok(cudaMalloc(&b, max_elements), "cudaMalloc") ||
      !ok(cudaMalloc(&d, max_elements * 4), "cudaMalloc") || !ok(cudaMalloc(&bias, max_outer * 4), "cudaMalloc") ||
      !ok(cudaMalloc(&workspace, workspace_bytes), "cudaMalloc") ||
      !ok(cudaMalloc(reinterpret_cast<void**>(&scales), scale_count * sizeof(float)), "cudaMalloc"))
    return 0;
  std::vector<float> ones(scale_count, 1.0f);
  cudaMemcpy(scales, ones.data(), scale_count * sizeof(float), cudaMemcpyHostToDevice);
  // 1.0 is 0x38 in e4m3 and 0x3C in e5m2.
  cudaMemset(a, fa.type == CUDA_R_8F_E4M3 ? 0x38 : 0x3C, max_elements);
  cudaMemset(b, fb.type == CUDA_R_8F_E4M3 ? 0x38 : 0x3C, max_elements);
  cublasLtHandle_t handle = nullptr;
  if (cublasLtCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "weave-fp8-support: cublasLtCreate failed\n");
    return 0;
  }
  int runs = 0;
  for (const Output& out : kOutputs) {
    // A bias of ones in the output type.
    if (out.size == 4) {
      std::vector<float> v(max_outer, 1.0f);
      cudaMemcpy(bias, v.data(), v.size() * 4, cudaMemcpyHostToDevice);
    } else {
      std::vector<uint16_t> v(max_outer, out.type == CUDA_R_16BF ? 0x3F80 : 0x3C00);
      cudaMemcpy(bias, v.data(), v.size() * 2, cudaMemcpyHostToDevice);
    }
    for (int with_bias = 0; with_bias < 2; ++with_bias)
      for (const Shape& s : shapes) {
        const std::string r =
            probe(handle, fa, fb, ma, mb, out, with_bias == 1, s, a, b, d, bias, scales, workspace, workspace_bytes);
        runs += r == "runs";
        std::printf("%s %s %s %s %s %s %lux%lux%lu %s\n", fa.name, fb.name, ma.name, mb.name, out.name,
                    with_bias ? "bias" : "-", static_cast<unsigned long>(s.m), static_cast<unsigned long>(s.n),
                    static_cast<unsigned long>(s.k), r.c_str());
        if (r.rfind("run:", 0) == 0) return runs;  // a sticky CUDA error ends this group
      }
  }
  cublasLtDestroy(handle);
  return runs;
}

}  // namespace

int main(int argc, char** argv) {
  int device = 0;
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      device = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--shape") && i + 1 < argc) {
      Shape s{};
      if (std::sscanf(argv[++i], "%lux%lux%lu", &s.m, &s.n, &s.k) != 3) {
        std::fprintf(stderr, "weave-fp8-support: --shape wants MxNxK, got %s\n", argv[i]);
        return 2;
      }
      shapes.push_back(s);
    } else {
      std::fprintf(stderr, "usage: weave-fp8-support [--device D] [--shape MxNxK]...\n");
      return 2;
    }
  }
  // Multiples of 128; K one 16-element step past a block; sizes of 16.
  if (shapes.empty())
    shapes = {{256, 256, 512}, {384, 128, 1024}, {256, 256, 528}, {64, 96, 144}, {48, 80, 512}, {320, 64, 512}};
  // Lines as they come: a configuration that kills the process still
  // leaves the ones before it.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // Each group in a child process of its own (main never touches CUDA
  // before forking), so that one that aborts inside the library is
  // reported and the others still run.
  int runs = 0, groups = 0, crashed = 0;
  for (const Format& fa : kFormats)
    for (const Format& fb : kFormats)
      for (const Mode& ma : kModes)
        for (const Mode& mb : kModes) {
          int pipe_fd[2];
          if (pipe(pipe_fd) != 0) return 1;
          std::fflush(stdout);
          const pid_t child = fork();
          if (child < 0) return 1;
          if (child == 0) {
            close(pipe_fd[0]);
            const int n = probe_group(device, shapes, fa, fb, ma, mb);
            std::fflush(stdout);
            (void)!write(pipe_fd[1], &n, sizeof n);
            _exit(0);
          }
          close(pipe_fd[1]);
          int n = 0, status = 0;
          const bool got = read(pipe_fd[0], &n, sizeof n) == static_cast<ssize_t>(sizeof n);
          close(pipe_fd[0]);
          waitpid(child, &status, 0);
          ++groups;
          if (got) {
            runs += n;
          } else {
            ++crashed;
            std::printf("%s %s %s %s * * * crashed:%s\n", fa.name, fb.name, ma.name, mb.name,
                        WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exit");
          }
        }
  if (cudaSetDevice(device) == cudaSuccess) {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, device);
    std::printf("# device %d: %s, sm_%d%d; cuBLASLt %zu\n", device, prop.name, prop.major, prop.minor,
                cublasLtGetVersion());
  }
  std::printf("# %d configurations ran; %d of %d groups crashed\n", runs, crashed, groups);
  return crashed ? 1 : 0;
}
