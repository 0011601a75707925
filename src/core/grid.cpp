#include "core/grid.hpp"

#include <algorithm>
#include <cstring>
#include <thread>
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

GridState::GridState(MPI_Comm comm, int prows, int pcols) : prows_(prows), pcols_(pcols) {
  WEAVE_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  // Weave reports errors itself; MPI errors on Weave's communicators come back
  // as codes instead of aborting the job.
  WEAVE_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  WEAVE_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  WEAVE_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  WEAVE_MPI_CHECK(MPI_Comm_split(comm_, row(), col(), &row_comm_));
  WEAVE_MPI_CHECK(MPI_Comm_split(comm_, col(), row(), &col_comm_));
}

GridState::~GridState() {
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    cache_.clear();  // transport state first: it may use the communicators
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // nothing can be freed any more; the job is ending
  for (MPI_Comm* c : {&row_comm_, &col_comm_, &comm_})
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
}

GroupView GridState::group(int kind) const {
  GroupView view;
  switch (kind) {
    case WEAVE_GROUP_GRID:
      view.comm = comm_;
      view.size = size_;
      view.rank = rank_;
      view.index = 0;
      break;
    case WEAVE_GROUP_ROW:
      view.comm = row_comm_;
      view.size = pcols_;
      view.rank = col();
      view.index = row();
      break;
    case WEAVE_GROUP_COLUMN:
      view.comm = col_comm_;
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

namespace {

// Runs the check and captures its failure as (status, message).
std::pair<weave_status_t, std::string> run_local_check(const std::function<void()>& local_check) {
  try {
    local_check();
  } catch (const Error& e) {
    return {e.status(), e.what()};
  } catch (const std::bad_alloc&) {
    return {WEAVE_ERROR_OUT_OF_MEMORY, "out of host memory"};
  } catch (const std::exception& e) {
    return {WEAVE_ERROR_INTERNAL, e.what()};
  }
  return {WEAVE_SUCCESS, std::string()};
}

// Completes a non-blocking collective, or throws WEAVE_ERROR_TIMEOUT.
void wait_until(MPI_Request* request, std::chrono::steady_clock::time_point deadline, bool bounded,
                std::chrono::milliseconds timeout) {
  if (!bounded) {
    WEAVE_MPI_CHECK(MPI_Wait(request, MPI_STATUS_IGNORE));
    return;
  }
  for (int done = 0;;) {
    WEAVE_MPI_CHECK(MPI_Test(request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    if (std::chrono::steady_clock::now() > deadline)
      fail(WEAVE_ERROR_TIMEOUT, "waited ", timeout.count() / 1000.0,
           " s for the other ranks of the group to agree on the arguments of this call; a peer may have failed "
           "or not made the call (set timeout_ms or WEAVE_TIMEOUT to wait longer)");
    std::this_thread::yield();
  }
}

}  // namespace

// The lowest failing rank's status and message reach every rank. Blocking
// when `timeout` is negative.
void agree_on_errors(MPI_Comm comm, const std::function<void()>& local_check, std::chrono::milliseconds timeout) {
  const auto [status, message] = run_local_check(local_check);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const bool bounded = timeout.count() >= 0;
  const auto deadline = std::chrono::steady_clock::now() + (bounded ? timeout : std::chrono::milliseconds(0));
  auto collective = [&](auto start) {
    MPI_Request request = MPI_REQUEST_NULL;
    WEAVE_MPI_CHECK(start(&request));
    wait_until(&request, deadline, bounded, timeout);
  };

  int mine = status == WEAVE_SUCCESS ? size : rank;
  int first_failing = size;
  collective([&](MPI_Request* r) { return MPI_Iallreduce(&mine, &first_failing, 1, MPI_INT, MPI_MIN, comm, r); });
  if (first_failing == size) return;

  int header[2] = {static_cast<int>(status), static_cast<int>(message.size())};
  collective([&](MPI_Request* r) { return MPI_Ibcast(header, 2, MPI_INT, first_failing, comm, r); });
  std::string text(static_cast<std::size_t>(header[1]), '\0');
  if (rank == first_failing) text = message;
  if (header[1] > 0)
    collective([&](MPI_Request* r) { return MPI_Ibcast(text.data(), header[1], MPI_CHAR, first_failing, comm, r); });
  throw Error(static_cast<weave_status_t>(header[0]), str("rank ", first_failing, ": ", text));
}

void check_same_on_all_ranks(MPI_Comm comm, const std::vector<Argument>& arguments,
                             const std::string& context) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  // Structure first: ranks must send equally long lists to the allgather.
  long long count = static_cast<long long>(arguments.size()), low = 0, high = 0;
  WEAVE_MPI_CHECK(MPI_Allreduce(&count, &low, 1, MPI_LONG_LONG, MPI_MIN, comm));
  WEAVE_MPI_CHECK(MPI_Allreduce(&count, &high, 1, MPI_LONG_LONG, MPI_MAX, comm));
  if (low != high)
    fail(WEAVE_ERROR_RANK_MISMATCH, context,
         ": ranks passed differently shaped arguments (e.g. counts of different length)");

  std::vector<long long> mine(arguments.size());
  for (std::size_t i = 0; i < arguments.size(); ++i) mine[i] = arguments[i].value;
  std::vector<long long> all(arguments.size() * static_cast<std::size_t>(size));
  WEAVE_MPI_CHECK(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_LONG_LONG, all.data(),
                                static_cast<int>(mine.size()), MPI_LONG_LONG, comm));
  for (int r = 1; r < size; ++r)
    for (std::size_t i = 0; i < arguments.size(); ++i) {
      long long reference = all[i], theirs = all[r * arguments.size() + i];
      if (reference != theirs)
        fail(WEAVE_ERROR_RANK_MISMATCH, context, ": ranks disagree on ", arguments[i].name,
             ": rank 0 of the group passed ", reference, ", rank ", r, " passed ", theirs);
    }
}

}  // namespace weave::internal
