// Bounds the device side of a communicator's NCCL work. An NCCL kernel that
// waits for a peer that never comes (a rank that failed, or skipped its
// execute, after this rank enqueued its transfers) spins on the GPU forever,
// and the caller's stream with it; no host call of Weave's is running by
// then to notice. So, as NCCL's users do (PyTorch's watchdog), a thread per
// communicator watches every batch of NCCL calls through two CUDA events,
// one recorded before the batch and one after it: once the stream has
// reached the first, the batch has the timeout to complete; past it the
// thread calls `expire`, which aborts the communicator (NCCL's kernels then
// return and the stream drains) and makes the plans over it fail with
// WEAVE_ERROR_TIMEOUT at their next call.
//
// A batch enqueued while its stream is being captured into a CUDA graph is
// not watched: its events would be nodes of the graph, not something the
// host can query.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace weave::internal::transport {

class NcclWatchdog {
 public:
  // `expire(why, timeout)` runs on the watchdog's thread, at most once,
  // with the timeout of the batch that expired.
  using Expire = std::function<void(const std::string& why, std::chrono::milliseconds timeout)>;
  NcclWatchdog(int device, Expire expire);
  ~NcclWatchdog();  // stops the thread and releases its events
  NcclWatchdog(const NcclWatchdog&) = delete;
  NcclWatchdog& operator=(const NcclWatchdog&) = delete;

  // Before a batch's NCCL calls on `stream` (the current device is the
  // communicator's). Returns the watch's number for after(), or 0 when the
  // batch is not watched (negative timeout, or a capturing stream).
  uint64_t before(cudaStream_t stream, std::chrono::milliseconds timeout, std::string what);
  // After them, on the same stream.
  void after(uint64_t watch, cudaStream_t stream);
  // Instead of after(), when the batch failed to enqueue: no longer watched.
  void forget(uint64_t watch) noexcept;

 private:
  struct Watch {
    uint64_t number = 0;
    cudaEvent_t begun = nullptr;  // recorded before the batch
    cudaEvent_t done = nullptr;   // after it; null until after() has run
    std::chrono::milliseconds timeout{0};
    std::optional<std::chrono::steady_clock::time_point> reached;  // when the stream was seen past `begun`
    std::string what;
  };

  void run();
  // Under mutex_: the first watch past its timeout, if any (its why and
  // timeout), and drops the watches that completed.
  std::optional<std::pair<std::string, std::chrono::milliseconds>> scan(std::chrono::steady_clock::time_point now);
  // Under mutex_: a spare event (or a new one) recorded on `stream`.
  cudaEvent_t record_event(cudaStream_t stream);
  // Under mutex_: the watch numbered `watch`, or watches_.end().
  std::list<Watch>::iterator find(uint64_t watch);

  int device_ = -1;
  Expire expire_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::list<Watch> watches_;
  std::vector<cudaEvent_t> spare_events_;
  uint64_t next_number_ = 1;
  bool stop_ = false, expired_ = false;
  std::thread thread_;
};

}  // namespace weave::internal::transport
