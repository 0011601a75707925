// The process grid: a duplicated communicator, its P_r x P_c shape, and the
// row and column sub-communicators, each with the agreement channel that
// runs the collective creation calls on it bounded in time. Shared
// (std::shared_ptr) by the grid handle, matrices and plans, so a plan
// outlives the handle it came from and the communicators have one owner that
// outlives every user.
#pragma once

#include <mpi.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/agreement.hpp"
#include "weave/weave.h"

namespace weave::internal {

// One group of a grid as seen from this rank.
struct GroupView {
  weave_group_t kind = WEAVE_GROUP_GRID;
  MPI_Comm comm = MPI_COMM_NULL;  // owned by the GridState
  int size = 1;
  int rank = 0;
  int index = 0;  // which grid row / column this group is (0 for the grid)
  AgreementChannel* channel = nullptr;  // owned by the GridState; runs on `comm`
};

class GridState {
 public:
  // Collective over `comm` and bounded by WEAVE_TIMEOUT: duplicates it, runs
  // `local_check` on every rank and agrees on its errors (see
  // agree_on_errors), checks that every rank asked for the same shape, and
  // splits the rows and columns.
  static std::shared_ptr<GridState> create(MPI_Comm comm, int prows, int pcols,
                                           const std::function<void()>& local_check);
  ~GridState();
  GridState(const GridState&) = delete;
  GridState& operator=(const GridState&) = delete;

  MPI_Comm comm() const { return grid_channel_->comm(); }
  int size() const { return size_; }
  int rank() const { return rank_; }
  int prows() const { return prows_; }
  int pcols() const { return pcols_; }
  int row() const { return rank_ / pcols_; }
  int col() const { return rank_ % pcols_; }
  // `kind` is a weave_group_t as an int (see core/enum_value.hpp); any
  // other value is WEAVE_ERROR_INVALID_VALUE.
  GroupView group(int kind) const;

  // The channel of the whole grid, where its collective calls agree.
  AgreementChannel& channel() { return *grid_channel_; }
  // Starts one collective call on the grid (weave_matrix_create,
  // weave_plan_create) with its bounds on every channel of the grid. Throws
  // if an earlier call timed out on the grid.
  void begin_call(const WaitBounds& bounds, const std::string& call);

  // Per-grid cache for transports that create expensive per-group state once
  // (an NCCL communicator per group, a UCX context). Keyed by a string the
  // transport chooses. Creation is collective, so call it from collective code.
  std::shared_ptr<void> cached(const std::string& key, const std::function<std::shared_ptr<void>()>& make);
  // What `key` holds, or null. For state whose making itself uses the cache
  // (which `cached` would deadlock on): find, else make, then `cached`.
  std::shared_ptr<void> find_cached(const std::string& key);

 private:
  GridState(int prows, int pcols) : prows_(prows), pcols_(pcols) {}
  std::unique_ptr<AgreementChannel> grid_channel_, row_channel_, col_channel_;
  int size_ = 1, rank_ = 0, prows_ = 1, pcols_ = 1;
  std::mutex cache_mutex_;
  std::map<std::string, std::shared_ptr<void>> cache_;
};

const char* group_name(weave_group_t kind);

// How many ranks of `comm` share this rank's node. Collective over `comm`.
int ranks_on_my_node(MPI_Comm comm);

}  // namespace weave::internal
