// The process grid: a duplicated communicator, its P_r x P_c shape, and the
// row and column sub-communicators. Shared (std::shared_ptr) by the grid
// handle, matrices and plans, so a plan outlives the handle it came from and
// the communicators have one owner that outlives every user.
#pragma once

#include <mpi.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "weave/weave.h"

namespace weave::internal {

// One group of a grid as seen from this rank.
struct GroupView {
  weave_group_t kind = WEAVE_GROUP_GRID;
  MPI_Comm comm = MPI_COMM_NULL;  // owned by the GridState
  int size = 1;
  int rank = 0;
  int index = 0;  // which grid row / column this group is (0 for the grid)
};

class GridState {
 public:
  GridState(MPI_Comm comm, int prows, int pcols);
  ~GridState();
  GridState(const GridState&) = delete;
  GridState& operator=(const GridState&) = delete;

  MPI_Comm comm() const { return comm_; }
  int size() const { return size_; }
  int rank() const { return rank_; }
  int prows() const { return prows_; }
  int pcols() const { return pcols_; }
  int row() const { return rank_ / pcols_; }
  int col() const { return rank_ % pcols_; }
  // `kind` is a weave_group_t as an int (see core/enum_value.hpp); any
  // other value is WEAVE_ERROR_INVALID_VALUE.
  GroupView group(int kind) const;

  // Per-grid cache for transports that create expensive per-group state once
  // (an NCCL communicator per group, a UCX context). Keyed by a string the
  // transport chooses. Creation is collective, so call it from collective code.
  std::shared_ptr<void> cached(const std::string& key, const std::function<std::shared_ptr<void>()>& make);

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm row_comm_ = MPI_COMM_NULL;
  MPI_Comm col_comm_ = MPI_COMM_NULL;
  int size_ = 1, rank_ = 0, prows_ = 1, pcols_ = 1;
  std::mutex cache_mutex_;
  std::map<std::string, std::shared_ptr<void>> cache_;
};

const char* group_name(weave_group_t kind);

// How many ranks of `comm` share this rank's node. Collective over `comm`.
int ranks_on_my_node(MPI_Comm comm);

// Runs `local_check` on every rank of `comm` and makes them agree: if it threw
// on any rank, every rank throws the error of the lowest failing rank, with
// "rank R: " in front of its message. Never leaves a rank waiting.
// With a non-negative `timeout` it gives up after that long with
// WEAVE_ERROR_TIMEOUT if some rank of `comm` does not take part, e.g. a peer
// that failed before calling execute. The agreement then stays pending on
// `comm`, which must not be used again.
void agree_on_errors(MPI_Comm comm, const std::function<void()>& local_check,
                     std::chrono::milliseconds timeout = std::chrono::milliseconds(-1));

// A named integer argument that every rank of a group must pass identically.
struct Argument {
  std::string name;
  int64_t value;
};

// Throws WEAVE_ERROR_RANK_MISMATCH on every rank of `comm` if any rank's
// arguments differ from those of the group's rank 0, naming the first field
// and both values. Collective.
void check_same_on_all_ranks(MPI_Comm comm, const std::vector<Argument>& arguments,
                             const std::string& context);

}  // namespace weave::internal
