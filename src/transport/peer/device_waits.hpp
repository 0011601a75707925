// Waits of a GPU stream for flags that peers raise, bounded by the plan's
// timeout. A stream-ordered transfer cannot be waited for by the host, so a
// peer that fails (or never calls execute) after this rank enqueued its
// transfers would leave this GPU waiting forever. Instead, each wait is a
// one-warp kernel that polls the flag with a deadline measured on the device
// (%globaltimer, so it holds in a replayed CUDA graph too) and, when the
// deadline passes, records which step waited for which peer and how long in
// a host-mapped record of the plan and lets the stream continue. Once one
// wait has given up, every later wait of the plan gives up at once, so the
// streams drain within about one timeout. The plan reads the record at its
// next call and reports WEAVE_ERROR_TIMEOUT; the plan is failed from then on.
//
// WEAVE_DEVICE_WAIT=stream waits with CUDA stream memory operations instead
// (cuStreamWaitValue32: no kernel launch, no bound), for measuring what the
// bound costs.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/schedule.hpp"

#include "transport/peer/device_flags.hpp"
#include "transport/peer/stream_signals.hpp"

namespace weave::internal::transport {

// One flag a stream waits for.
struct FlagWait {
  uint32_t* flag = nullptr;
  uint32_t value = 1;  // wait until *flag == value
  bool reset = true;   // then set *flag = 0: the rank that waited resets the flag
  int step = -1;       // schedule step and group rank, for the record
  int peer = -1;
};

// What the record says about the first wait that gave up.
struct DeviceWaitFailure {
  int step = -1;
  int peer = -1;
  double waited_seconds = 0;
  int alarm_from = -1;  // the group rank that had given up first (the alarm), else -1
};

class DeviceWaits {
 public:
  // `timeout` negative: never give up. `bounded` false: stream memory
  // operations (no bound whatever the timeout).
  DeviceWaits(std::chrono::milliseconds timeout, bool bounded);
  ~DeviceWaits();
  DeviceWaits(const DeviceWaits&) = delete;
  DeviceWaits& operator=(const DeviceWaits&) = delete;

  // The alarm words (DeviceWaitState): `own` in this rank's flag block,
  // `peers` every other rank's, as mapped here; `rank` this rank's group
  // rank. Before any wait is enqueued; without it no alarm is sounded.
  void connect_alarms(int rank, uint32_t* own, const std::vector<uint32_t*>& peers);

  // Work enqueued on `stream` after this starts once every flag holds its
  // value (and was reset where asked).
  void wait(cudaStream_t stream, const std::vector<FlagWait>& waits) const;
  // *flag = value once everything before it on `stream` has completed, with
  // a fence first so a peer that sees the value sees what preceded it.
  void raise(cudaStream_t stream, uint32_t* flag, uint32_t value = 1) const { signals_.write(stream, flag, value); }

  bool bounded() const { return bounded_; }
  // For transports' own kernels, which wait inside themselves.
  DeviceWaitState state() const { return state_; }
  // The first wait that gave up, if one has (read without synchronizing:
  // the device writes the record when it gives up).
  std::optional<DeviceWaitFailure> failure() const;
  // The same as a message naming the step (from `schedule`) and the peer;
  // empty while no wait gave up.
  std::string failure_message(const plan::Schedule& schedule) const;

 private:
  void release() noexcept;

  bool bounded_ = true;
  StreamSignals signals_;
  DeviceWaitState state_{};
  DeviceWaitRecord* host_record_ = nullptr;  // the same record as the host sees it
};

}  // namespace weave::internal::transport
