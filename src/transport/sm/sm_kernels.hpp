// The SM transport's kernels, behind a plain C++ interface (only
// sm_kernels.cu is CUDA source). Every kernel runs on the transport's
// budget of CTAs, waits inside itself for the flags it needs (bounded, as
// DeviceWaits), and raises the flags it owes with its last CTA, once every
// CTA is done: a CTA counts itself out on `counter` after a system-scope
// fence, and the CTA that counts last fences again and raises the flags.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.hpp"
#include "plan/schedule.hpp"
#include "transport/peer/device_flags.hpp"

namespace weave::internal::transport::sm {

constexpr int kThreadsPerCta = 512;

// Sends of one batch: for each, wait until the receiver has raised "clear
// to send" (my flag), copy `bytes` from `src` (mine) to `dst` (the
// receiver's workspace), then reset my flag and raise "data" in the
// receiver's.
constexpr int kMaxPushes = 8;
struct PushWork {
  int count = 0;
  const void* src[kMaxPushes] = {};
  void* dst[kMaxPushes] = {};
  int64_t bytes[kMaxPushes] = {};
  uint32_t* clear_flag[kMaxPushes] = {};
  uint32_t* data_flag[kMaxPushes] = {};
  int step[kMaxPushes] = {};
  int peer[kMaxPushes] = {};
};
void launch_push(const PushWork& work, int ctas, unsigned* counter, const DeviceWaitState& waits,
                 cudaStream_t stream);
// Loads the push kernel now (CUDA loads lazily; execute may be captured).
void prepare_push();

// One PeerSum step (plan/schedule.hpp): once every remote term's "ready"
// flag (mine) is raised,
//   dst = src_scale * (terms summed in order) + dst_scale * dst + bias,
// also stored into `copy` when given; then my ready flags are reset and
// each remote term's "released" flag (its publisher's) raised.
struct PeerSumLaunch {
  DType dst_type = DType::F64, term_type = DType::F64;
  void* dst = nullptr;
  int64_t dst_ld = 1;
  bool dst_row_major = false;
  void* copy = nullptr;  // tight row-major, dst_type; null: none
  int term_count = 0;
  const void* terms[plan::kMaxPeerSumTerms] = {};       // tight row-major rows x cols
  uint32_t* ready_flag[plan::kMaxPeerSumTerms] = {};    // mine; null for a term of my own memory
  uint32_t* release_flag[plan::kMaxPeerSumTerms] = {};  // its publisher's; null for my own
  int term_peer[plan::kMaxPeerSumTerms] = {};
  int step = -1;
  const void* bias = nullptr;  // dst_type, one entry per column, bias_stride apart
  int64_t bias_stride = 1;
  double src_scale = 1.0, dst_scale = 0.0;  // dst is not read when dst_scale is zero
  int64_t rows = 0, cols = 0;
};
bool peer_sum_supported(DType dst, DType term);
// Loads the kernels of a (dst, term) pair now.
void prepare_peer_sum(DType dst, DType term);
void launch_peer_sum(const PeerSumLaunch& launch, int ctas, unsigned* counter, const DeviceWaitState& waits,
                     cudaStream_t stream);

}  // namespace weave::internal::transport::sm
