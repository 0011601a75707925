// One f32 multiplication on device memory for the GPU tests that steer
// each rank's stream by hand (peer flags, device-side timeouts): the
// descriptors of an operation over the grid, this rank's device buffers,
// and data that is exact in f32 (small integers, so every result is known
// exactly), filled from a seed.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "weave/weave.h"

namespace weave_gpu_test {

class PeerProblem {
 public:
  // Row-major A (M x K) and B (K x N) distributed as the operation needs;
  // C (M x N) in `order_c`. Collective over the grid.
  PeerProblem(weave_grid_t grid, weave_operation_t operation, int64_t m, int64_t n, int64_t k, weave_order_t order_c);
  ~PeerProblem();
  PeerProblem(const PeerProblem&) = delete;
  PeerProblem& operator=(const PeerProblem&) = delete;

  weave_plan_desc_t plan_desc() const;
  // A second set of device buffers (index 0 or 1), filled from `seed` (NaN
  // everywhere when `poison`).
  void fill(int set, uint64_t seed, bool poison = false);
  void* a(int set) const { return a_[set]; }
  void* b(int set) const { return b_[set]; }
  void* c(int set) const { return c_[set]; }
  std::size_t a_bytes() const { return a_elements_ * sizeof(float); }
  // Whether C of `set` holds exactly the product of `seed`'s data; else
  // what differs, in *why.
  bool check(int set, uint64_t seed, std::string* why) const;

 private:
  weave_operation_t operation_;
  int64_t m_, n_, k_;
  bool row_major_c_;
  weave_matrix_t a_desc_ = nullptr, b_desc_ = nullptr, c_desc_ = nullptr;
  int64_t a_elements_ = 0, b_elements_ = 0, c_elements_ = 0;
  void* a_[2] = {}, *b_[2] = {}, *c_[2] = {};
};

}  // namespace weave_gpu_test
