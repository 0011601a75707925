#include "core/abandoned_work.hpp"

#include <mutex>
#include <utility>

#include "core/communicator.hpp"

namespace weave::internal {

namespace {

class AbandonedRequests final : public AbandonedWork {
 public:
  AbandonedRequests(std::vector<MPI_Request> requests, KeepAlive keep_alive)
      : requests_(std::move(requests)), keep_alive_(std::move(keep_alive)) {}
  bool finished() override {
    if (requests_.empty()) return true;
    int done = 0;
    if (MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
      return false;  // an error on a dead peer's request: keep everything as it is
    return done != 0;
  }

 private:
  std::vector<MPI_Request> requests_;
  KeepAlive keep_alive_;
};

struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<AbandonedWork>> work;
  std::vector<std::shared_ptr<const void>> quarantined;
};

// Never destroyed: at exit, work still pending must not run its destructors
// (they would free communicators and buffers after MPI is gone), and it stays
// reachable from here.
Registry& registry() {
  static Registry* const instance = new Registry();
  return *instance;
}

}  // namespace

void abandon(std::unique_ptr<AbandonedWork> work) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.work.push_back(std::move(work));
}

void abandon_requests(std::vector<MPI_Request> requests, KeepAlive keep_alive) {
  abandon(std::make_unique<AbandonedRequests>(std::move(requests), std::move(keep_alive)));
}

void quarantine(std::shared_ptr<const void> communicator) {
  if (!communicator) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.quarantined.push_back(std::move(communicator));
}

void reap_abandoned_work() noexcept {
  if (!mpi_is_running()) return;
  Registry& r = registry();
  std::vector<std::unique_ptr<AbandonedWork>> finished;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.work.empty()) return;
    std::vector<std::unique_ptr<AbandonedWork>> still;
    for (auto& w : r.work) {
      bool done = false;
      try {
        done = w->finished();
      } catch (...) {
        done = false;
      }
      (done ? finished : still).push_back(std::move(w));
    }
    r.work = std::move(still);
  }
  // Released outside the lock: a keep-alive's destructor may free a
  // communicator or a transport, which may abandon work of its own.
  finished.clear();
}

std::size_t abandoned_work_in_flight() {
  reap_abandoned_work();
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.work.size();
}

}  // namespace weave::internal
