#include "core/error.hpp"

#include <atomic>

namespace weave::internal {

namespace {
thread_local std::string g_last_error;
std::atomic<int> g_world_rank{-1};

struct PendingError {
  bool set = false;
  weave_status_t status = WEAVE_SUCCESS;
  std::string message;
};
thread_local PendingError g_pending;
}  // namespace

void set_last_error(std::string message) { g_last_error = std::move(message); }

const char* last_error() { return g_last_error.c_str(); }

void set_pending_argument_error(weave_status_t status, std::string message) {
  g_pending = {true, status, std::move(message)};
}

void raise_pending_argument_error() {
  if (!g_pending.set) return;
  PendingError pending = std::exchange(g_pending, {});
  throw Error(pending.status, std::move(pending.message));
}

void drop_pending_argument_error() { g_pending = {}; }

void remember_world_rank(int rank) { g_world_rank.store(rank, std::memory_order_relaxed); }

std::string naming_world_rank(const std::string& message) {
  const int rank = g_world_rank.load(std::memory_order_relaxed);
  return rank < 0 ? message : "rank " + std::to_string(rank) + " (MPI_COMM_WORLD): " + message;
}

const char* status_name(int status) {
  switch (status) {
    case WEAVE_SUCCESS: return "WEAVE_SUCCESS";
    case WEAVE_ERROR_NULL_ARGUMENT: return "WEAVE_ERROR_NULL_ARGUMENT";
    case WEAVE_ERROR_INVALID_VALUE: return "WEAVE_ERROR_INVALID_VALUE";
    case WEAVE_ERROR_INVALID_COUNTS: return "WEAVE_ERROR_INVALID_COUNTS";
    case WEAVE_ERROR_INVALID_LEADING_DIMENSION: return "WEAVE_ERROR_INVALID_LEADING_DIMENSION";
    case WEAVE_ERROR_SHAPE_MISMATCH: return "WEAVE_ERROR_SHAPE_MISMATCH";
    case WEAVE_ERROR_DISTRIBUTION_MISMATCH: return "WEAVE_ERROR_DISTRIBUTION_MISMATCH";
    case WEAVE_ERROR_UNSUPPORTED_TYPE: return "WEAVE_ERROR_UNSUPPORTED_TYPE";
    case WEAVE_ERROR_RANK_MISMATCH: return "WEAVE_ERROR_RANK_MISMATCH";
    case WEAVE_ERROR_NOT_COMPILED: return "WEAVE_ERROR_NOT_COMPILED";
    case WEAVE_ERROR_UNSUPPORTED: return "WEAVE_ERROR_UNSUPPORTED";
    case WEAVE_ERROR_POINTER_KIND: return "WEAVE_ERROR_POINTER_KIND";
    case WEAVE_ERROR_TIMEOUT: return "WEAVE_ERROR_TIMEOUT";
    case WEAVE_ERROR_OUT_OF_MEMORY: return "WEAVE_ERROR_OUT_OF_MEMORY";
    case WEAVE_ERROR_MPI: return "WEAVE_ERROR_MPI";
    case WEAVE_ERROR_CUDA: return "WEAVE_ERROR_CUDA";
    case WEAVE_ERROR_CUBLAS: return "WEAVE_ERROR_CUBLAS";
    case WEAVE_ERROR_NCCL: return "WEAVE_ERROR_NCCL";
    case WEAVE_ERROR_UCX: return "WEAVE_ERROR_UCX";
    case WEAVE_ERROR_PLAN_FAILED: return "WEAVE_ERROR_PLAN_FAILED";
    case WEAVE_ERROR_INTERNAL: return "WEAVE_ERROR_INTERNAL";
  }
  return "unknown weave_status_t";
}

}  // namespace weave::internal
