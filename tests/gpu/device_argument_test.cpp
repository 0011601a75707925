// Wrong kinds of arguments for device plans are caught on every rank, with
// the exact status:
//   - a host pointer passed to a device plan (on one rank only), and a
//     device pointer passed to a host plan: WEAVE_ERROR_POINTER_KIND at
//     execute; the plan still runs afterwards with the right pointers;
//   - device matrices with the host backend: WEAVE_ERROR_POINTER_KIND at
//     plan creation;
//   - a host plan given a stream: WEAVE_ERROR_INVALID_VALUE;
//   - empty blocks take any pointer (never read): a host address runs;
//   - a device plan with a transport the host drives: the mpi transport is
//     refused at plan creation (WEAVE_ERROR_UNSUPPORTED); where this build
//     has a host-driven transport that device plans can use (ucx), capturing
//     its execute into a CUDA graph is refused (WEAVE_ERROR_UNSUPPORTED).
// Exits with 77 (skipped) without a GPU per rank.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_device_memory.hpp"
#include "support/case_runner.hpp"

namespace {

int g_rank = 0, g_size = 1;
int g_failures = 0;

// Every rank must see `want`, and the message must mention `mention`.
void expect_status(const char* what, weave_status_t got, weave_status_t want, const char* mention) {
  const std::string message = weave_last_error();
  int ok = got == want && (!mention || message.find(mention) != std::string::npos) ? 1 : 0, all = 0;
  if (!ok)
    std::fprintf(stderr, "rank %d: %s: got %s (%s), expected %s mentioning '%s'\n", g_rank, what,
                 weave_status_string(got), message.c_str(), weave_status_string(want), mention ? mention : "");
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) ++g_failures;
  if (g_rank == 0) std::printf("%s %s\n", all ? "ok  " : "FAIL", what);
}

struct Matrices {
  weave_matrix_t a = nullptr, b = nullptr, c = nullptr;
  ~Matrices() {
    weave_matrix_destroy(a);
    weave_matrix_destroy(b);
    weave_matrix_destroy(c);
  }
};

// AG-GEMM f32: A block-row (M x K), B and C block-column; M = 4 per rank
// unless given.
bool make_matrices(weave_grid_t grid, weave_memory_t memory, Matrices* m, int64_t M = -1) {
  if (M < 0) M = 4 * g_size;
  const int64_t N = 2 * g_size, K = 8;
  weave_matrix_desc_t d{};
  d.dtype = WEAVE_FLOAT32;
  d.memory = memory;
  d.rows = M;
  d.cols = K;
  d.distribution = WEAVE_DIST_BLOCK_ROW;
  if (weave_matrix_create(grid, &d, &m->a) != WEAVE_SUCCESS) return false;
  d.rows = K;
  d.cols = N;
  d.distribution = WEAVE_DIST_BLOCK_COLUMN;
  if (weave_matrix_create(grid, &d, &m->b) != WEAVE_SUCCESS) return false;
  d.rows = M;
  if (weave_matrix_create(grid, &d, &m->c) != WEAVE_SUCCESS) return false;
  return true;
}

int64_t elements(weave_matrix_t m) {
  int64_t n = 0;
  weave_matrix_local_elements(m, &n);
  return n;
}

weave_plan_desc_t plan_desc(const Matrices& m) {
  weave_plan_desc_t pd{};
  pd.operation = WEAVE_AG_GEMM;
  pd.a = m.a;
  pd.b = m.b;
  pd.c = m.c;
  pd.timeout_ms = 60000;
  return pd;
}

void run(weave_grid_t grid, cudaStream_t stream) {
  Matrices device_m, host_m;
  if (!make_matrices(grid, WEAVE_MEMORY_DEVICE, &device_m) || !make_matrices(grid, WEAVE_MEMORY_HOST, &host_m)) {
    std::fprintf(stderr, "rank %d: matrix creation failed: %s\n", g_rank, weave_last_error());
    ++g_failures;
    return;
  }
  // Buffers of either kind, large enough for any of the blocks (all f32).
  const int64_t n = std::max({elements(device_m.a), elements(device_m.b), elements(device_m.c), int64_t(1)});
  std::vector<float> host_a(n, 1.0f), host_b(n, 1.0f), host_c(n, 0.0f);
  void *dev_a = nullptr, *dev_b = nullptr, *dev_c = nullptr;
  WEAVE_TEST_CUDA(cudaMalloc(&dev_a, n * sizeof(float)));
  WEAVE_TEST_CUDA(cudaMalloc(&dev_b, n * sizeof(float)));
  WEAVE_TEST_CUDA(cudaMalloc(&dev_c, n * sizeof(float)));
  WEAVE_TEST_CUDA(cudaMemcpy(dev_a, host_a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  WEAVE_TEST_CUDA(cudaMemcpy(dev_b, host_b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  // Copies from pageable memory may still be in flight; the executes below
  // run on a non-blocking stream.
  WEAVE_TEST_CUDA(cudaDeviceSynchronize());

  // A device plan: a host A on rank 0 only is reported on every rank.
  weave_plan_desc_t pd = plan_desc(device_m);
  weave_plan_t device_plan = nullptr;
  expect_status("device plan creation", weave_plan_create(grid, &pd, &device_plan), WEAVE_SUCCESS, nullptr);
  if (device_plan) {
    const void* a = g_rank == 0 ? static_cast<const void*>(host_a.data()) : dev_a;
    expect_status("host pointer to a device plan (rank 0 only)",
                  weave_execute(device_plan, 1.0, a, dev_b, 0.0, dev_c, nullptr, stream), WEAVE_ERROR_POINTER_KIND,
                  "host pointer");
    expect_status("the device plan still runs with device pointers",
                  weave_execute(device_plan, 1.0, dev_a, dev_b, 0.0, dev_c, nullptr, stream), WEAVE_SUCCESS, nullptr);
    WEAVE_TEST_CUDA(cudaStreamSynchronize(stream));
    // Every element of C is K (= 8) times 1 * 1.
    WEAVE_TEST_CUDA(cudaMemcpy(host_c.data(), dev_c, elements(device_m.c) * sizeof(float), cudaMemcpyDeviceToHost));
    bool right = true;
    for (int64_t i = 0; i < elements(device_m.c); ++i) right = right && host_c[i] == 8.0f;
    expect_status(right ? "device plan result is right" : "device plan result is wrong",
                  right ? WEAVE_SUCCESS : WEAVE_ERROR_INTERNAL, WEAVE_SUCCESS, nullptr);
    weave_plan_destroy(device_plan);
  }

  // A host plan: a device C on the last rank only is reported on every rank.
  pd = plan_desc(host_m);
  weave_plan_t host_plan = nullptr;
  expect_status("host plan creation", weave_plan_create(grid, &pd, &host_plan), WEAVE_SUCCESS, nullptr);
  if (host_plan) {
    void* c = g_rank == g_size - 1 ? dev_c : static_cast<void*>(host_c.data());
    expect_status("device pointer to a host plan (last rank only)",
                  weave_execute(host_plan, 1.0, host_a.data(), host_b.data(), 0.0, c, nullptr, nullptr),
                  WEAVE_ERROR_POINTER_KIND, "device pointer");
    expect_status("a stream given to a host plan",
                  weave_execute(host_plan, 1.0, host_a.data(), host_b.data(), 0.0, host_c.data(), nullptr, stream),
                  WEAVE_ERROR_INVALID_VALUE, "stream");
    weave_plan_destroy(host_plan);
  }

  // Device matrices cannot run on the host backend.
  pd = plan_desc(device_m);
  pd.backend = WEAVE_BACKEND_HOST;
  weave_plan_t refused = nullptr;
  expect_status("device matrices with the host backend", weave_plan_create(grid, &pd, &refused),
                WEAVE_ERROR_POINTER_KIND, "device");
  weave_plan_destroy(refused);

  // Transports driven by the host.
  pd = plan_desc(device_m);
  pd.transport = WEAVE_TRANSPORT_MPI;
  refused = nullptr;
  expect_status("device plan with the mpi transport", weave_plan_create(grid, &pd, &refused),
                WEAVE_ERROR_UNSUPPORTED, "nccl");
  weave_plan_destroy(refused);

  if (std::strstr(weave_build_features(), "ucx")) {
    pd.transport = WEAVE_TRANSPORT_UCX;
    weave_plan_t ucx_plan = nullptr;
    const weave_status_t created = weave_plan_create(grid, &pd, &ucx_plan);
    if (created == WEAVE_SUCCESS) {
      WEAVE_TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
      const weave_status_t captured = weave_execute(ucx_plan, 1.0, dev_a, dev_b, 0.0, dev_c, nullptr, stream);
      cudaGraph_t graph = nullptr;
      cudaStreamEndCapture(stream, &graph);
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      expect_status("capturing a device plan with the ucx transport", captured, WEAVE_ERROR_UNSUPPORTED, "graph");
      weave_plan_destroy(ucx_plan);
    } else if (g_rank == 0) {
      std::printf("note: device plans with the ucx transport are refused at creation (%s), so there is no "
                  "capture to refuse\n",
                  weave_last_error());
    }
  }
  cudaFree(dev_a);
  cudaFree(dev_b);
  cudaFree(dev_c);
}

// FP8 on the device: a scale buffer in host memory (on one rank) is
// WEAVE_ERROR_POINTER_KIND on every rank and C stays as it was; MXFP8 scales
// before sm_100, and FP8 operands that are not K-contiguous before sm_100,
// are WEAVE_ERROR_UNSUPPORTED at plan creation naming the device's
// architecture, as is a pair of scale modes cuBLASLt does not multiply;
// then a good FP8 execute runs.
void run_fp8(weave_grid_t grid, cudaStream_t stream) {
  cudaDeviceProp properties{};
  int device = 0;
  WEAVE_TEST_CUDA(cudaGetDevice(&device));
  WEAVE_TEST_CUDA(cudaGetDeviceProperties(&properties, device));
  const int compute = properties.major * 10 + properties.minor;
  if (compute < 89) {
    if (g_rank == 0) std::printf("note: sm_%d runs no FP8 GEMMs; the FP8 checks expect the refusal\n", compute);
  }
  const int64_t M = 32 * g_size, N = 16 * g_size, K = 64;
  auto make = [&](int64_t rows, int64_t cols, weave_dtype_t type, weave_distribution_t dist, weave_order_t order,
                  weave_scale_mode_t mode, weave_matrix_t* out) {
    weave_matrix_desc_t d = WEAVE_MATRIX_DESC_INIT;
    d.rows = rows;
    d.cols = cols;
    d.dtype = type;
    d.distribution = dist;
    d.order = order;
    d.memory = WEAVE_MEMORY_DEVICE;
    d.scale_mode = mode;
    return weave_matrix_create(grid, &d, out) == WEAVE_SUCCESS;
  };
  // AG-GEMM e4m3: A row-major M x K (row-wise), B row-major N x K with op T
  // (tensor-wise), C row-major bf16: PyTorch's x @ w.T.
  Matrices m;
  weave_matrix_t b_mx = nullptr, b_column = nullptr, b_blocks = nullptr;
  if (!make(M, K, WEAVE_FLOAT8_E4M3, WEAVE_DIST_BLOCK_ROW, WEAVE_ORDER_ROW_MAJOR, WEAVE_SCALE_ROW_WISE, &m.a) ||
      !make(N, K, WEAVE_FLOAT8_E4M3, WEAVE_DIST_BLOCK_ROW, WEAVE_ORDER_ROW_MAJOR, WEAVE_SCALE_TENSOR, &m.b) ||
      !make(M, N, WEAVE_BFLOAT16, WEAVE_DIST_BLOCK_COLUMN, WEAVE_ORDER_ROW_MAJOR, WEAVE_SCALE_NONE, &m.c) ||
      !make(N, K, WEAVE_FLOAT8_E4M3, WEAVE_DIST_BLOCK_ROW, WEAVE_ORDER_ROW_MAJOR, WEAVE_SCALE_MXFP8, &b_mx) ||
      !make(N, K, WEAVE_FLOAT8_E4M3, WEAVE_DIST_BLOCK_ROW, WEAVE_ORDER_COLUMN_MAJOR, WEAVE_SCALE_TENSOR, &b_column) ||
      !make(N, K, WEAVE_FLOAT8_E4M3, WEAVE_DIST_BLOCK_ROW, WEAVE_ORDER_ROW_MAJOR, WEAVE_SCALE_BLOCK_128X128, &b_blocks)) {
    std::fprintf(stderr, "rank %d: FP8 matrix creation failed: %s\n", g_rank, weave_last_error());
    ++g_failures;
    weave_matrix_destroy(b_mx);
    weave_matrix_destroy(b_column);
    weave_matrix_destroy(b_blocks);
    return;
  }
  weave_plan_desc_t pd = plan_desc(m);
  pd.op_b = WEAVE_OP_T;
  const std::string arch = "sm_" + std::to_string(compute);
  weave_plan_t refused = nullptr;
  pd.b = b_mx;
  if (compute < 100)
    expect_status("MXFP8 scales before sm_100", weave_plan_create(grid, &pd, &refused), WEAVE_ERROR_UNSUPPORTED,
                  arch.c_str());
  weave_plan_destroy(refused);
  refused = nullptr;
  pd.b = b_column;  // column-major with op T: K is not contiguous
  if (compute >= 89 && compute < 100)
    expect_status("an FP8 B that is not K-contiguous before sm_100", weave_plan_create(grid, &pd, &refused),
                  WEAVE_ERROR_UNSUPPORTED, "K-contiguous");
  weave_plan_destroy(refused);
  refused = nullptr;
  // Row-wise A with 128x128 B: a pair cuBLASLt has no kernel for (it
  // aborted the process when asked on sm_90), refused before it is asked.
  pd.b = b_blocks;
  if (compute >= 89)
    expect_status("row-wise x 128x128 scales", weave_plan_create(grid, &pd, &refused), WEAVE_ERROR_UNSUPPORTED,
                  "row-wise scales on A with 128x128 blocks scales on B");
  weave_plan_destroy(refused);
  weave_matrix_destroy(b_mx);
  weave_matrix_destroy(b_column);
  weave_matrix_destroy(b_blocks);
  pd.b = m.b;
  weave_plan_t plan = nullptr;
  const weave_status_t created = weave_plan_create(grid, &pd, &plan);
  if (compute < 89) {
    expect_status("FP8 before sm_89", created, WEAVE_ERROR_UNSUPPORTED, arch.c_str());
    weave_plan_destroy(plan);
    return;
  }
  expect_status("FP8 device plan creation", created, WEAVE_SUCCESS, nullptr);
  if (!plan) return;
  // Every A and B byte e4m3 1.0 (0x38); scales: A's rows 0.5, B's 2: C = K.
  const int64_t a_bytes = std::max<int64_t>(elements(m.a), 1), b_bytes = std::max<int64_t>(elements(m.b), 1);
  const int64_t c_elements = std::max<int64_t>(elements(m.c), 1);
  void *a = nullptr, *b = nullptr, *c = nullptr, *a_scale = nullptr, *b_scale = nullptr;
  WEAVE_TEST_CUDA(cudaMalloc(&a, a_bytes));
  WEAVE_TEST_CUDA(cudaMalloc(&b, b_bytes));
  WEAVE_TEST_CUDA(cudaMalloc(&c, c_elements * 2));
  WEAVE_TEST_CUDA(cudaMalloc(&a_scale, M * sizeof(float)));
  WEAVE_TEST_CUDA(cudaMalloc(&b_scale, sizeof(float)));
  WEAVE_TEST_CUDA(cudaMemset(a, 0x38, a_bytes));
  WEAVE_TEST_CUDA(cudaMemset(b, 0x38, b_bytes));
  WEAVE_TEST_CUDA(cudaMemset(c, 0x77, c_elements * 2));
  std::vector<float> a_scales(static_cast<std::size_t>(M), 0.5f), b_scales(1, 2.0f);
  WEAVE_TEST_CUDA(cudaMemcpy(a_scale, a_scales.data(), M * sizeof(float), cudaMemcpyHostToDevice));
  WEAVE_TEST_CUDA(cudaMemcpy(b_scale, b_scales.data(), sizeof(float), cudaMemcpyHostToDevice));
  WEAVE_TEST_CUDA(cudaDeviceSynchronize());
  weave_execute_args_t args = WEAVE_EXECUTE_ARGS_INIT;
  args.alpha = 1.0;
  args.a = a;
  args.b = b;
  args.c = c;
  args.a_scale = g_rank == 0 ? static_cast<const void*>(a_scales.data()) : a_scale;  // host memory on rank 0
  args.b_scale = b_scale;
  args.stream = stream;
  expect_status("a host scale buffer for a device plan (rank 0 only)", weave_execute_ex(plan, &args),
                WEAVE_ERROR_POINTER_KIND, "a_scale");
  std::vector<uint16_t> host_c(static_cast<std::size_t>(c_elements));
  WEAVE_TEST_CUDA(cudaMemcpy(host_c.data(), c, c_elements * 2, cudaMemcpyDeviceToHost));
  bool untouched = true;
  for (uint16_t x : host_c) untouched = untouched && x == 0x7777;
  expect_status(untouched ? "C untouched by the refused execute" : "the refused execute wrote C",
                untouched ? WEAVE_SUCCESS : WEAVE_ERROR_INTERNAL, WEAVE_SUCCESS, nullptr);
  args.a_scale = a_scale;
  expect_status("the FP8 device plan runs", weave_execute_ex(plan, &args), WEAVE_SUCCESS, nullptr);
  WEAVE_TEST_CUDA(cudaStreamSynchronize(stream));
  WEAVE_TEST_CUDA(cudaMemcpy(host_c.data(), c, c_elements * 2, cudaMemcpyDeviceToHost));
  bool right = true;
  for (int64_t i = 0; i < elements(m.c); ++i) right = right && host_c[static_cast<std::size_t>(i)] == 0x4280;  // bf16 64
  expect_status(right ? "FP8 device result is right (64)" : "FP8 device result is wrong",
                right ? WEAVE_SUCCESS : WEAVE_ERROR_INTERNAL, WEAVE_SUCCESS, nullptr);
  weave_plan_destroy(plan);
  for (void* p : {a, b, c, a_scale, b_scale}) cudaFree(p);
}

// Empty blocks are never read or written, so their pointers are not
// checked: a host address for an empty block of a device plan (what Kokkos
// hands out for a zero-extent CudaSpace View) runs like NULL.
void run_empty_blocks(weave_grid_t grid, cudaStream_t stream) {
  Matrices m;
  if (!make_matrices(grid, WEAVE_MEMORY_DEVICE, &m, 0)) {  // M = 0: A and C are empty on every rank, B is not
    std::fprintf(stderr, "rank %d: matrix creation failed: %s\n", g_rank, weave_last_error());
    ++g_failures;
    return;
  }
  weave_plan_desc_t pd = plan_desc(m);
  weave_plan_t plan = nullptr;
  expect_status("device plan with empty A and C", weave_plan_create(grid, &pd, &plan), WEAVE_SUCCESS, nullptr);
  if (!plan) return;
  void* dev_b = nullptr;
  WEAVE_TEST_CUDA(cudaMalloc(&dev_b, static_cast<std::size_t>(std::max<int64_t>(elements(m.b), 1)) * sizeof(float)));
  float host_a = 1.0f, host_c = 2.0f;
  expect_status("host pointers for empty blocks of a device plan",
                weave_execute(plan, 1.0, &host_a, dev_b, 0.0, &host_c, nullptr, stream), WEAVE_SUCCESS, nullptr);
  WEAVE_TEST_CUDA(cudaStreamSynchronize(stream));
  expect_status(host_c == 2.0f ? "the empty C's pointer was not written" : "the empty C's pointer was written",
                host_c == 2.0f ? WEAVE_SUCCESS : WEAVE_ERROR_INTERNAL, WEAVE_SUCCESS, nullptr);
  weave_plan_destroy(plan);
  cudaFree(dev_b);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  int device = -1;
  std::string why_not;
  const int attached = weave_gpu_test::select_device_for_rank(&device, &why_not) ? 1 : 0;
  int all_attached = 0;
  MPI_Allreduce(&attached, &all_attached, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_attached) {
    if (!attached) std::printf("SKIPPED on rank %d: %s\n", g_rank, why_not.c_str());
    MPI_Finalize();
    return weave_test::kSkipExitCode;
  }
  weave_grid_t grid = nullptr;
  cudaStream_t stream = nullptr;
  try {
    if (weave_grid_create(MPI_COMM_WORLD, g_size, 1, &grid) != WEAVE_SUCCESS) throw std::runtime_error(weave_last_error());
    WEAVE_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    run(grid, stream);
    run_fp8(grid, stream);
    run_empty_blocks(grid, stream);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", g_rank, e.what());
    ++g_failures;
  }
  weave_grid_destroy(grid);
  if (stream) cudaStreamDestroy(stream);
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("%s: device argument checks on %d ranks\n", failures ? "FAILED" : "PASSED", g_size);
  MPI_Finalize();
  return failures ? 1 : 0;
}
