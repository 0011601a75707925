#include "peer_problem.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "cuda_device_memory.hpp"

namespace weave_gpu_test {

namespace {

float a_value(int64_t i, int64_t k, uint64_t seed) { return static_cast<float>((i * 7 + k * 3 + seed) % 5) - 2.0f; }
float b_value(int64_t k, int64_t j, uint64_t seed) { return static_cast<float>((k * 5 + j * 11 + seed) % 7) - 3.0f; }

weave_matrix_t make(weave_grid_t grid, int64_t rows, int64_t cols, weave_distribution_t distribution,
                    weave_order_t order) {
  weave_matrix_desc_t d{};
  d.rows = rows;
  d.cols = cols;
  d.dtype = WEAVE_FLOAT32;
  d.distribution = distribution;
  d.order = order;
  d.memory = WEAVE_MEMORY_DEVICE;
  weave_matrix_t m = nullptr;
  if (weave_matrix_create(grid, &d, &m) != WEAVE_SUCCESS)
    throw std::runtime_error(std::string("weave_matrix_create: ") + weave_last_error());
  return m;
}

struct Block {
  int64_t rows = 0, cols = 0, row0 = 0, col0 = 0, ld = 1, elements = 0;
};

Block block_of(weave_matrix_t m) {
  Block b;
  weave_matrix_local_shape(m, &b.rows, &b.cols);
  weave_matrix_local_offset(m, &b.row0, &b.col0);
  weave_matrix_ld(m, &b.ld);
  weave_matrix_local_elements(m, &b.elements);
  return b;
}

}  // namespace

PeerProblem::PeerProblem(weave_grid_t grid, weave_operation_t operation, int64_t m, int64_t n, int64_t k,
                         weave_order_t order_c)
    : operation_(operation), m_(m), n_(n), k_(k), row_major_c_(order_c == WEAVE_ORDER_ROW_MAJOR) {
  const bool gather = operation == WEAVE_AG_GEMM;
  a_desc_ = make(grid, m, k, gather ? WEAVE_DIST_BLOCK_ROW : WEAVE_DIST_BLOCK_COLUMN, WEAVE_ORDER_ROW_MAJOR);
  b_desc_ = make(grid, k, n, gather ? WEAVE_DIST_BLOCK_COLUMN : WEAVE_DIST_BLOCK_ROW, WEAVE_ORDER_ROW_MAJOR);
  c_desc_ = make(grid, m, n,
                 gather                         ? WEAVE_DIST_BLOCK_COLUMN
                 : operation == WEAVE_GEMM_RS ? WEAVE_DIST_BLOCK_ROW
                                                : WEAVE_DIST_REPLICATED,
                 order_c);
  a_elements_ = block_of(a_desc_).elements;
  b_elements_ = block_of(b_desc_).elements;
  c_elements_ = block_of(c_desc_).elements;
  for (int set = 0; set < 2; ++set) {
    WEAVE_TEST_CUDA(cudaMalloc(&a_[set], std::max<int64_t>(1, a_elements_) * sizeof(float)));
    WEAVE_TEST_CUDA(cudaMalloc(&b_[set], std::max<int64_t>(1, b_elements_) * sizeof(float)));
    WEAVE_TEST_CUDA(cudaMalloc(&c_[set], std::max<int64_t>(1, c_elements_) * sizeof(float)));
  }
}

PeerProblem::~PeerProblem() {
  for (int set = 0; set < 2; ++set) {
    cudaFree(a_[set]);
    cudaFree(b_[set]);
    cudaFree(c_[set]);
  }
  weave_matrix_destroy(a_desc_);
  weave_matrix_destroy(b_desc_);
  weave_matrix_destroy(c_desc_);
}

weave_plan_desc_t PeerProblem::plan_desc() const {
  weave_plan_desc_t pd{};
  pd.operation = operation_;
  pd.a = a_desc_;
  pd.b = b_desc_;
  pd.c = c_desc_;
  return pd;
}

void PeerProblem::fill(int set, uint64_t seed, bool poison) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto upload = [&](weave_matrix_t desc, void* device, float (*value)(int64_t, int64_t, uint64_t)) {
    const Block b = block_of(desc);
    std::vector<float> host(static_cast<std::size_t>(b.elements), nan);
    if (!poison)
      for (int64_t i = 0; i < b.rows; ++i)
        for (int64_t j = 0; j < b.cols; ++j) host[i * b.ld + j] = value(b.row0 + i, b.col0 + j, seed);
    WEAVE_TEST_CUDA(cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  };
  upload(a_desc_, a_[set], a_value);
  upload(b_desc_, b_[set], b_value);
  // C starts as NaN: beta is 0, so nothing may read it, and every element must be written.
  std::vector<float> c(static_cast<std::size_t>(c_elements_), nan);
  WEAVE_TEST_CUDA(cudaMemcpy(c_[set], c.data(), c.size() * sizeof(float), cudaMemcpyHostToDevice));
}

bool PeerProblem::check(int set, uint64_t seed, std::string* why) const {
  const Block b = block_of(c_desc_);
  std::vector<float> host(static_cast<std::size_t>(std::max<int64_t>(1, b.elements)));
  WEAVE_TEST_CUDA(cudaMemcpy(host.data(), c_[set], b.elements * sizeof(float), cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int64_t i = 0; i < b.rows; ++i)
    for (int64_t j = 0; j < b.cols; ++j) {
      double want = 0;
      for (int64_t l = 0; l < k_; ++l) want += double(a_value(b.row0 + i, l, seed)) * b_value(l, b.col0 + j, seed);
      const float got = host[static_cast<std::size_t>(row_major_c_ ? i * b.ld + j : i + j * b.ld)];
      if (!(got == static_cast<float>(want)) && bad++ == 0)
        *why = "C(" + std::to_string(b.row0 + i) + "," + std::to_string(b.col0 + j) + ") = " + std::to_string(got) +
               ", expected " + std::to_string(want);
    }
  if (bad > 1) *why += " (and " + std::to_string(bad - 1) + " more)";
  return bad == 0;
}

}  // namespace weave_gpu_test
