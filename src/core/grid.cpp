#include "core/grid.hpp"

#include <utility>

#include "core/error.hpp"
#include "core/mpi_check.hpp"

namespace weave::internal {

void fail_mpi(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  MPI_Error_string(code, text, &length);
  fail(WEAVE_ERROR_MPI, call, " failed: ", text, " (", file, ":", line, ")");
}

std::shared_ptr<GridState> GridState::create(MPI_Comm comm, int prows, int pcols,
                                             const std::function<void()>& local_check) {
  std::string malformed;
  const WaitBounds bounds = wait_bounds_before_agreement(0, &malformed);
  const std::string call = "weave_grid_create";
  std::shared_ptr<GridState> grid(new GridState(prows, pcols));
  // The caller's communicator carries nothing of Weave's but these two
  // duplicates: one for the grid's calls, one for their arrival notices.
  SharedComm mine = duplicate(comm, bounds, call);
  auto notices = std::make_unique<ArrivalNotices>(duplicate(mine->get(), bounds, call));
  grid->grid_channel_ = std::make_unique<AgreementChannel>(mine, std::move(notices), "grid", "rank");
  AgreementChannel& channel = *grid->grid_channel_;
  channel.begin_call(bounds, call);
  agree_on_errors(channel, [&] {
    if (!malformed.empty()) fail(WEAVE_ERROR_INVALID_VALUE, malformed);
    local_check();
  });
  agree_on_errors(channel, [&] { check_same_on_all_ranks(channel, {{"prows", prows}, {"pcols", pcols}}, call); });
  grid->size_ = channel.size();
  grid->rank_ = channel.rank();
  // Every rank has just agreed, so the blocking splits find every rank.
  auto split = [&](int color, int key) {
    auto made = std::make_shared<Communicator>();
    WEAVE_MPI_CHECK(MPI_Comm_split(channel.comm(), color, key, made->out()));
    WEAVE_MPI_CHECK(MPI_Comm_set_errhandler(made->get(), MPI_ERRORS_RETURN));
    return std::make_unique<AgreementChannel>(made, nullptr, "grid", "rank");
  };
  grid->row_channel_ = split(grid->row(), grid->col());
  grid->col_channel_ = split(grid->col(), grid->row());
  return grid;
}

GridState::~GridState() {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  cache_.clear();  // transport state first: it may use the communicators
}

void GridState::begin_call(const WaitBounds& bounds, const std::string& call) {
  grid_channel_->begin_call(bounds, call);
  row_channel_->begin_call(bounds, call);
  col_channel_->begin_call(bounds, call);
  // A rank that skipped a call of the grid is found here, before any
  // collective whose size depends on the call.
  check_same_call(*grid_channel_);
}

GroupView GridState::group(int kind) const {
  GroupView view;
  switch (kind) {
    case WEAVE_GROUP_GRID:
      view.comm = grid_channel_->comm();
      view.channel = grid_channel_.get();
      view.size = size_;
      view.rank = rank_;
      view.index = 0;
      break;
    case WEAVE_GROUP_ROW:
      view.comm = row_channel_->comm();
      view.channel = row_channel_.get();
      view.size = pcols_;
      view.rank = col();
      view.index = row();
      break;
    case WEAVE_GROUP_COLUMN:
      view.comm = col_channel_->comm();
      view.channel = col_channel_.get();
      view.size = prows_;
      view.rank = row();
      view.index = col();
      break;
    default:
      fail(WEAVE_ERROR_INVALID_VALUE, "group = ", kind, " is not a weave_group_t (WEAVE_GROUP_GRID, _ROW or _COLUMN)");
  }
  view.kind = static_cast<weave_group_t>(kind);
  return view;
}

std::shared_ptr<void> GridState::cached(const std::string& key,
                                        const std::function<std::shared_ptr<void>()>& make) {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  auto found = cache_.find(key);
  if (found != cache_.end()) return found->second;
  auto made = make();
  cache_[key] = made;
  return made;
}

std::shared_ptr<void> GridState::find_cached(const std::string& key) {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  auto found = cache_.find(key);
  return found == cache_.end() ? nullptr : found->second;
}

const char* group_name(weave_group_t kind) {
  switch (kind) {
    case WEAVE_GROUP_GRID: return "grid";
    case WEAVE_GROUP_ROW: return "grid row";
    case WEAVE_GROUP_COLUMN: return "grid column";
  }
  return "?";
}

int ranks_on_my_node(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  WEAVE_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int size = 1;
  MPI_Comm_size(node, &size);
  MPI_Comm_free(&node);
  return size;
}

}  // namespace weave::internal
