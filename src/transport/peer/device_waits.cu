#include "transport/peer/device_waits.hpp"

#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_check.hpp"
#include "core/error.hpp"

namespace weave::internal::transport {

namespace {

constexpr int kMaxFlagsPerKernel = 8;

struct FlagWaitList {
  uint32_t* flag[kMaxFlagsPerKernel];
  uint32_t value[kMaxFlagsPerKernel];
  int step[kMaxFlagsPerKernel];
  int peer[kMaxFlagsPerKernel];
  uint32_t reset_mask;
  int count;
};

// One thread waits for every flag in turn, all against one deadline from
// the kernel's start; the others of the warp only keep it company (a warp
// is the smallest unit the GPU schedules).
__global__ void wait_for_flags_kernel(FlagWaitList list, DeviceWaitState state) {
  if (threadIdx.x != 0) return;
  const uint64_t start = global_time_ns();
  for (int i = 0; i < list.count; ++i) {
    if (!wait_for_flag(state, list.flag[i], list.value[i], start, list.step[i], list.peer[i])) return;
    if (list.reset_mask & (1u << i)) store_release(list.flag[i], 0u);
  }
}

}  // namespace

DeviceWaits::DeviceWaits(std::chrono::milliseconds timeout, bool bounded) : bounded_(bounded) {
  try {
    state_.timeout_ns = timeout.count() < 0 ? -1 : static_cast<int64_t>(timeout.count()) * 1000000;
    WEAVE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&state_.claimed), sizeof(uint32_t)));
    WEAVE_CUDA_CHECK(cudaMemset(state_.claimed, 0, sizeof(uint32_t)));
    WEAVE_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host_record_), sizeof(DeviceWaitRecord),
                                   cudaHostAllocMapped | cudaHostAllocPortable));
    *host_record_ = DeviceWaitRecord{};
    WEAVE_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&state_.record), host_record_, 0));
    // The kernel is loaded now: CUDA loads lazily, and execute must not
    // (it may be captured into a graph).
    cudaFuncAttributes attributes{};
    WEAVE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, wait_for_flags_kernel));
    WEAVE_CUDA_CHECK(cudaDeviceSynchronize());
  } catch (...) {
    release();
    throw;
  }
}

DeviceWaits::~DeviceWaits() { release(); }

void DeviceWaits::connect_alarms(int rank, uint32_t* own, const std::vector<uint32_t*>& peers) {
  state_.rank = rank;
  state_.alarm = own;
  if (peers.empty()) return;
  uint32_t** list = nullptr;
  WEAVE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&list), sizeof(uint32_t*) * peers.size()));
  state_.peer_alarms = list;  // released with the rest, even if the copy fails
  WEAVE_CUDA_CHECK(cudaMemcpy(list, peers.data(), sizeof(uint32_t*) * peers.size(), cudaMemcpyHostToDevice));
  state_.peer_count = static_cast<int>(peers.size());
}

void DeviceWaits::release() noexcept {
  if (state_.peer_alarms) cudaFree(const_cast<uint32_t**>(state_.peer_alarms));
  if (state_.claimed) cudaFree(state_.claimed);
  if (host_record_) cudaFreeHost(host_record_);
  cudaGetLastError();
  state_ = DeviceWaitState{};
  host_record_ = nullptr;
}

void DeviceWaits::wait(cudaStream_t stream, const std::vector<FlagWait>& waits) const {
  if (!bounded_) {
    for (const FlagWait& w : waits) {
      signals_.wait_equal(stream, w.flag, w.value);
      if (w.reset) signals_.write(stream, w.flag, 0);
    }
    return;
  }
  for (std::size_t first = 0; first < waits.size(); first += kMaxFlagsPerKernel) {
    FlagWaitList list{};
    for (std::size_t i = first; i < waits.size() && list.count < kMaxFlagsPerKernel; ++i, ++list.count) {
      list.flag[list.count] = waits[i].flag;
      list.value[list.count] = waits[i].value;
      list.step[list.count] = waits[i].step;
      list.peer[list.count] = waits[i].peer;
      if (waits[i].reset) list.reset_mask |= 1u << list.count;
    }
    wait_for_flags_kernel<<<1, 32, 0, stream>>>(list, state_);
    WEAVE_CUDA_CHECK(cudaGetLastError());
  }
}

std::optional<DeviceWaitFailure> DeviceWaits::failure() const {
  if (!host_record_) return std::nullopt;
  const volatile DeviceWaitRecord* record = host_record_;
  if (record->timed_out == 0) return std::nullopt;
  DeviceWaitFailure f;
  f.step = record->step;
  f.peer = record->peer;
  f.waited_seconds = static_cast<double>(record->waited_ns) * 1e-9;
  f.alarm_from = static_cast<int>(record->alarm_from) - 1;
  return f;
}

std::string DeviceWaits::failure_message(const plan::Schedule& schedule) const {
  const std::optional<DeviceWaitFailure> f = failure();
  if (!f) return {};
  std::string step = str("step ", f->step);
  if (f->step >= 0 && f->step < static_cast<int>(schedule.steps.size()))
    step += str(" (", schedule.steps[static_cast<std::size_t>(f->step)].label, ")");
  if (f->alarm_from >= 0)
    return str("a device-side wait of group rank ", schedule.group_rank, " of ", schedule.group_size, " stopped after ",
               f->waited_seconds, " s: ", step, " waited for a flag of group rank ", f->peer, ", and group rank ",
               f->alarm_from, " had given up waiting for a peer first, so what arrived since is not trusted (",
               "that rank's own error names the step and the peer it waited for; set timeout_ms or WEAVE_TIMEOUT to ",
               "wait longer)");
  return str("a device-side wait of group rank ", schedule.group_rank, " of ", schedule.group_size, " gave up after ",
             f->waited_seconds, " s: ", step, " waited for a flag of group rank ", f->peer,
             ", which may have failed or not called execute (set timeout_ms or WEAVE_TIMEOUT to wait longer)");
}

}  // namespace weave::internal::transport
