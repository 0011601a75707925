#include "transport/nccl/nccl_watchdog.hpp"

#include <algorithm>
#include <utility>

#include "backends/cuda/cuda_check.hpp"
#include "core/error.hpp"

namespace weave::internal::transport {

namespace {

// How often the thread looks while batches are watched: a tenth of the
// shortest timeout, between 1 and 50 ms (a few event queries each time).
std::chrono::milliseconds poll_interval(std::chrono::milliseconds timeout) {
  return std::clamp(timeout / 10, std::chrono::milliseconds(1), std::chrono::milliseconds(50));
}

}  // namespace

NcclWatchdog::NcclWatchdog(int device, Expire expire)
    : device_(device), expire_(std::move(expire)) {}

NcclWatchdog::~NcclWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  // A destructor reports nothing; an event still pending is released by
  // CUDA once it completes.
  const cuda::DeviceGuard guard(device_, std::nothrow);
  for (const Watch& w : watches_) {
    cudaEventDestroy(w.begun);
    if (w.done) cudaEventDestroy(w.done);
  }
  for (cudaEvent_t e : spare_events_) cudaEventDestroy(e);
  cudaGetLastError();
}

cudaEvent_t NcclWatchdog::record_event(cudaStream_t stream) {
  cudaEvent_t e = nullptr;
  if (!spare_events_.empty()) {
    e = spare_events_.back();
    spare_events_.pop_back();
  } else {
    WEAVE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  const cudaError_t recorded = cudaEventRecord(e, stream);
  if (recorded != cudaSuccess) {
    spare_events_.push_back(e);
    WEAVE_CUDA_CHECK(recorded);
  }
  return e;
}

std::list<NcclWatchdog::Watch>::iterator NcclWatchdog::find(uint64_t watch) {
  return std::find_if(watches_.begin(), watches_.end(), [&](const Watch& w) { return w.number == watch; });
}

uint64_t NcclWatchdog::before(cudaStream_t stream, std::chrono::milliseconds timeout, std::string what) {
  if (timeout.count() < 0) return 0;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  WEAVE_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) return 0;
  std::lock_guard<std::mutex> lock(mutex_);
  if (expired_ || stop_) return 0;
  Watch w;
  w.number = next_number_++;
  w.begun = record_event(stream);
  w.timeout = timeout;
  w.what = std::move(what);
  watches_.push_back(std::move(w));
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  wake_.notify_all();
  return watches_.back().number;
}

void NcclWatchdog::after(uint64_t watch, cudaStream_t stream) {
  if (watch == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = find(watch);
  if (found == watches_.end()) return;  // expired meanwhile
  found->done = record_event(stream);
}

void NcclWatchdog::forget(uint64_t watch) noexcept {
  if (watch == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = find(watch);
  if (found == watches_.end()) return;
  // Its event may still be pending: CUDA releases a destroyed event once it completes.
  const cuda::DeviceGuard guard(device_, std::nothrow);
  cudaEventDestroy(found->begun);
  watches_.erase(found);
}

std::optional<std::pair<std::string, std::chrono::milliseconds>> NcclWatchdog::scan(
    std::chrono::steady_clock::time_point now) {
  for (auto w = watches_.begin(); w != watches_.end();) {
    if (!w->reached) {
      const cudaError_t begun = cudaEventQuery(w->begun);
      if (begun == cudaSuccess) w->reached = now;
      else if (begun != cudaErrorNotReady) cudaGetLastError();  // a broken context: Weave's next CUDA call reports it
    }
    bool finished = false;
    if (w->done) {
      const cudaError_t done = cudaEventQuery(w->done);
      finished = done != cudaErrorNotReady;
      if (done != cudaSuccess && finished) cudaGetLastError();
    }
    if (finished) {
      spare_events_.push_back(w->begun);
      spare_events_.push_back(w->done);
      w = watches_.erase(w);
      continue;
    }
    if (w->reached && now - *w->reached > w->timeout)
      return std::make_pair(str(w->what, " did not complete within ", static_cast<double>(w->timeout.count()) / 1000.0,
                                " s of its stream reaching it (a peer that did not take part)"),
                            w->timeout);
    ++w;
  }
  return std::nullopt;
}

void NcclWatchdog::run() {
  const cuda::DeviceGuard guard(device_, std::nothrow);
  // Relaxed: this thread's event queries must not invalidate a CUDA graph
  // that another thread of the process is capturing meanwhile (in the
  // default global mode a query from any thread during a capture would).
  cudaStreamCaptureMode relaxed = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&relaxed);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    if (watches_.empty()) {
      wake_.wait(lock, [&] { return stop_ || !watches_.empty(); });
      continue;
    }
    const auto expired = scan(std::chrono::steady_clock::now());
    if (expired) {
      expired_ = true;
      lock.unlock();
      expire_(expired->first, expired->second);  // aborts the communicator; the watched kernels return
      lock.lock();
      return;
    }
    std::chrono::milliseconds interval = std::chrono::milliseconds(50);
    for (const Watch& w : watches_) interval = std::min(interval, poll_interval(w.timeout));
    wake_.wait_for(lock, interval, [&] { return stop_; });
  }
}

}  // namespace weave::internal::transport
