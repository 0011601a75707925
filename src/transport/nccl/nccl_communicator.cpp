#include "transport/nccl/nccl_communicator.hpp"

#include <thread>

#include "backends/cuda/cuda_check.hpp"
#include "core/error.hpp"
#include "core/mpi_check.hpp"
#include "transport/nccl/nccl_check.hpp"

namespace weave::internal::transport {

NcclCommunicator::NcclCommunicator(MPI_Comm group_comm) {
  WEAVE_MPI_CHECK(MPI_Comm_size(group_comm, &size_));
  WEAVE_MPI_CHECK(MPI_Comm_rank(group_comm, &rank_));
  // The id is made on group rank 0 only; agree first, so a failure there is
  // reported on every rank instead of leaving the others in the broadcast.
  ncclUniqueId id{};
  agree_on_errors(group_comm, [&] {
    WEAVE_CUDA_CHECK(cudaGetDevice(&device_));
    if (rank_ == 0) WEAVE_NCCL_CHECK(ncclGetUniqueId(&id), nullptr);
  });
  WEAVE_MPI_CHECK(MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, group_comm));
  try {
    agree_on_errors(group_comm, [&] {
      WEAVE_NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_), nullptr);
    });
  } catch (...) {
    // Another rank failed: the communicator this rank joined is unusable.
    if (comm_) ncclCommDestroy(comm_);
    comm_ = nullptr;
    throw;
  }
  watchdog_ = std::make_unique<NcclWatchdog>(
      device_, [this](const std::string& why, std::chrono::milliseconds timeout) { expire(why, timeout); });
}

NcclCommunicator::~NcclCommunicator() {
  // The watchdog first: it may abort the communicator from its thread.
  watchdog_.reset();
  if (!comm_ || aborted_.load()) return;  // ncclCommAbort freed it
  // A destructor reports nothing; destroying a communicator is local.
  const cuda::DeviceGuard guard(device_, std::nothrow);
  ncclCommDestroy(comm_);
}

void NcclCommunicator::abort_now(const std::string& why) noexcept {
  if (aborted_.exchange(true)) return;
  try {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    failure_ = why;
  } catch (...) {
  }
  const cuda::DeviceGuard guard(device_, std::nothrow);
  ncclCommAbort(comm_);
}

void NcclCommunicator::expire(const std::string& why, std::chrono::milliseconds timeout) {
  const auto last_chance = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::unique_lock<std::mutex> lock(calls_mutex_, std::try_to_lock);
    if (lock.owns_lock()) {
      abort_now(why);
      return;
    }
    if (std::chrono::steady_clock::now() > last_chance) {
      // An execute's NCCL call has waited a whole timeout more: it is the
      // one waiting for the absent peer, and NCCL's abort flag ends it.
      abort_now(str(why, "; an NCCL call of this rank waited for it on the host too"));
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::string NcclCommunicator::failure() const {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return failure_;
}

void NcclCommunicator::enqueue_group(const std::function<void(ncclComm_t)>& calls, cudaStream_t stream,
                                     std::chrono::milliseconds timeout, const std::string& what) {
  const cuda::DeviceGuard guard(device_);
  const uint64_t watch = watchdog_->before(stream, timeout, what);
  try {
    std::lock_guard<std::mutex> lock(calls_mutex_);
    if (aborted_.load())
      fail(WEAVE_ERROR_PLAN_FAILED, "the NCCL communicator was aborted: ", failure(),
           "; destroy the plans and the grid on every rank");
    WEAVE_NCCL_CHECK(ncclGroupStart(), comm_);
    try {
      calls(comm_);
    } catch (...) {
      ncclGroupEnd();  // keep NCCL's group nesting balanced for later calls
      throw;
    }
    const ncclResult_t ended = ncclGroupEnd();
    // Aborted while NCCL waited in these calls: a timeout, not NCCL's error.
    if (aborted_.load())
      fail(WEAVE_ERROR_TIMEOUT, failure(), "; the NCCL communicator was aborted");
    if (ended != ncclSuccess) fail_nccl(ended, "ncclGroupEnd()", comm_, __FILE__, __LINE__);
  } catch (...) {
    watchdog_->forget(watch);
    throw;
  }
  watchdog_->after(watch, stream);
}

std::shared_ptr<NcclCommunicator> nccl_communicator(GridState& grid, const GroupView& group) {
  int device = -1;
  WEAVE_CUDA_CHECK(cudaGetDevice(&device));
  // One communicator per group kind (this rank is in one group of each kind)
  // and device (NCCL binds a communicator to the device it was made on).
  const std::string key = str("nccl:", group_name(group.kind), ":device ", device);
  std::shared_ptr<void> made = grid.cached(key, [&] { return std::make_shared<NcclCommunicator>(group.comm); });
  auto communicator = std::static_pointer_cast<NcclCommunicator>(made);
  const std::string failure = communicator->failure();
  if (!failure.empty())
    fail(WEAVE_ERROR_PLAN_FAILED, "the grid's NCCL communicator of this group was aborted (", failure,
         "); destroy the grid on every rank and create a new one");
  return communicator;
}

}  // namespace weave::internal::transport
