#include "core/agreement.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/abandoned_work.hpp"
#include "core/bounded_wait.hpp"
#include "core/error.hpp"
#include "core/mpi_check.hpp"

namespace weave::internal {

using Start = std::function<int(MPI_Request*)>;

namespace {

// A check's failure: its status, its message, and whether the message
// names the rank it happened on already (an inner agreement's error).
struct LocalFailure {
  weave_status_t status = WEAVE_SUCCESS;
  std::string message;
  bool names_its_rank = false;
};

LocalFailure run_local_check(const std::function<void()>& local_check) {
  try {
    local_check();
  } catch (const Error& e) {
    return {e.status(), e.what(), e.names_its_rank()};
  } catch (const std::bad_alloc&) {
    return {WEAVE_ERROR_OUT_OF_MEMORY, "out of host memory"};
  } catch (const std::exception& e) {
    return {WEAVE_ERROR_INTERNAL, e.what()};
  }
  return {};
}

// Waits for `request`; on a timeout it goes to the abandoned work with
// `keep_alive` and the wait's error is thrown.
void complete(MPI_Request request, BoundedWait& wait, KeepAlive keep_alive, const std::string& what) {
  try {
    for (;;) {
      int done = 0;
      WEAVE_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
      if (done) return;
      wait.idle([&] { return what; });
    }
  } catch (...) {
    abandon_requests({request}, std::move(keep_alive));
    throw;
  }
}

// The agreement itself, over any way of running a collective to the end:
// every buffer a collective touches lives in `state`, on the heap, so a
// collective that a timeout leaves pending never writes into a returned
// function's stack.
template <class Run>
void agree(MPI_Comm comm, const std::function<void()>& local_check, Run&& run) {
  const LocalFailure failure = run_local_check(local_check);
  const weave_status_t status = failure.status;
  const std::string& message = failure.message;
  struct State {
    int mine = 0, first_failing = 0;
    int header[3] = {0, 0, 0};
    std::vector<char> text;
  };
  auto state = std::make_shared<State>();
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // The error every rank throws: the lowest rank's that failed for another
  // reason than a timeout, else the lowest rank's that timed out. A timeout
  // is most often what another rank's failure left behind (its peers waited
  // for a rank that had left), so the cause wins over its consequences.
  state->mine = status == WEAVE_SUCCESS ? 2 * size : status == WEAVE_ERROR_TIMEOUT ? size + rank : rank;
  State* s = state.get();
  run([=](MPI_Request* r) { return MPI_Iallreduce(&s->mine, &s->first_failing, 1, MPI_INT, MPI_MIN, comm, r); },
      state);
  if (s->first_failing == 2 * size) return;
  const int first_failing = s->first_failing % size;
  if (rank == first_failing) {
    s->header[0] = static_cast<int>(status);
    s->header[1] = static_cast<int>(std::min<std::size_t>(message.size(), INT_MAX));
    s->header[2] = failure.names_its_rank ? 1 : 0;
  }
  run([=](MPI_Request* r) { return MPI_Ibcast(s->header, 3, MPI_INT, first_failing, comm, r); }, state);
  s->text.assign(static_cast<std::size_t>(s->header[1]), '\0');
  if (rank == first_failing) std::memcpy(s->text.data(), message.data(), s->text.size());
  if (!s->text.empty())
    run([=](MPI_Request* r) {
      return MPI_Ibcast(s->text.data(), static_cast<int>(s->text.size()), MPI_CHAR, first_failing, comm, r);
    }, state);
  const std::string text(s->text.begin(), s->text.end());
  throw Error(static_cast<weave_status_t>(s->header[0]), s->header[2] ? text : str("rank ", first_failing, ": ", text),
              true);
}

// A value as messages show it.
std::string shown(const Argument& argument, long long value) {
  if (argument.shown == Argument::Shown::Integer) return std::to_string(value);
  double x = 0;
  const int64_t bits = value;
  std::memcpy(&x, &bits, sizeof x);
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", x);  // 0.1 as 0.1, unless that is not exactly it
  if (std::strtod(text, nullptr) != x) std::snprintf(text, sizeof text, "%.17g", x);
  return text;
}

template <class Run>
void check_same(MPI_Comm comm, const std::vector<Argument>& arguments, const std::string& context, Run&& run) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  struct State {
    long long counts[2] = {0, 0}, extremes[2] = {0, 0};
    std::vector<long long> mine, all;
  };
  auto state = std::make_shared<State>();
  State* s = state.get();
  // Structure first: ranks send equally long lists to the all-gather, the
  // fields every rank has (the shortest list; the fields that decide the
  // length, such as the distribution, come before those whose number they
  // decide, such as counts, so the cause is named where one differs).
  s->counts[0] = static_cast<long long>(arguments.size());
  s->counts[1] = -s->counts[0];
  run([=](MPI_Request* r) { return MPI_Iallreduce(s->counts, s->extremes, 2, MPI_LONG_LONG, MPI_MIN, comm, r); },
      state);
  const auto common = static_cast<std::size_t>(s->extremes[0]);
  for (std::size_t i = 0; i < common; ++i) s->mine.push_back(arguments[i].value);
  s->all.assign(common * static_cast<std::size_t>(size), 0);
  const int n = static_cast<int>(common);
  run([=](MPI_Request* r) {
    return MPI_Iallgather(s->mine.data(), n, MPI_LONG_LONG, s->all.data(), n, MPI_LONG_LONG, comm, r);
  }, state);
  for (int r = 1; r < size; ++r)
    for (std::size_t i = 0; i < common; ++i) {
      const long long reference = s->all[i], theirs = s->all[r * common + i];
      if (reference != theirs)
        fail(WEAVE_ERROR_RANK_MISMATCH, context, ": ranks disagree on ", arguments[i].name,
             ": rank 0 of the group passed ", shown(arguments[i], reference), ", rank ", r, " passed ",
             shown(arguments[i], theirs));
    }
  if (s->extremes[0] != -s->extremes[1])
    fail(WEAVE_ERROR_RANK_MISMATCH, context, ": ranks passed differently shaped arguments (", s->extremes[0],
         " fields on some ranks, ", -s->extremes[1], " on others: counts of different length, say); this rank passed ",
         arguments.size());
}

// Runs a collective on `channel` under `what`.
auto on(AgreementChannel& channel, std::string what) {
  return [&channel, what](const Start& start, std::shared_ptr<const void> buffers) {
    channel.collective(start, std::move(buffers), what);
  };
}

}  // namespace

AgreementChannel::AgreementChannel(SharedComm comm, std::unique_ptr<ArrivalNotices> notices, std::string owner,
                                   const char* noun)
    : comm_(std::move(comm)), notices_(std::move(notices)), owner_(std::move(owner)), noun_(noun) {
  WEAVE_MPI_CHECK(MPI_Comm_size(comm_->get(), &size_));
  WEAVE_MPI_CHECK(MPI_Comm_rank(comm_->get(), &rank_));
}

AgreementChannel::~AgreementChannel() = default;

void AgreementChannel::begin_call(const WaitBounds& bounds, std::string call) {
  // Every collective call of a grid starts here: after MPI_Finalize any MPI
  // call would make Open MPI abort the process, so the call fails instead.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized)
    fail(WEAVE_ERROR_MPI, call, ": MPI has been finalized (a Weave grid, and its matrices and plans, can only be used "
         "between MPI_Init and MPI_Finalize; destroying them afterwards is allowed)");
  require_usable();
  bounds_ = bounds;
  call_ = std::move(call);
  ++calls_;
  if (notices_) notices_->enter(calls_);
}

void AgreementChannel::require_usable() const {
  if (failed())
    fail(WEAVE_ERROR_TIMEOUT, "this ", owner_, " cannot be used any more: ", failure_, " (destroy the ", owner_,
         " and create a new one)");
}

void AgreementChannel::mark_failed(const std::string& why) {
  if (failed()) return;
  failure_ = str("an earlier ", call_, " failed: ", why);
  quarantine(comm_);
  if (notices_) quarantine(notices_->comm());
}

void AgreementChannel::collective(const Start& start, std::shared_ptr<const void> buffers, const std::string& what) {
  require_usable();
  MPI_Request request = MPI_REQUEST_NULL;
  WEAVE_MPI_CHECK(start(&request));
  BoundedWait wait(bounds_, notices_.get(), noun_, call_);
  try {
    KeepAlive keep{std::move(buffers), comm_};
    if (notices_) keep.push_back(notices_->comm());
    complete(request, wait, std::move(keep), what);
    // Everyone took part; but a peer that gave up in this call has left and
    // will not take part in what follows.
    wait.check_no_peer_gave_up([&] { return what; });
  } catch (const Error& e) {
    mark_failed(e.what());
    throw;
  }
}

void agree_on_errors(AgreementChannel& channel, const std::function<void()>& local_check, const std::string& stage) {
  agree(channel.comm(), local_check, on(channel, stage));
}

void agree_on_errors(MPI_Comm comm, const std::function<void()>& local_check) {
  agree(comm, local_check, [](const Start& start, const std::shared_ptr<const void>&) {
    MPI_Request request = MPI_REQUEST_NULL;
    WEAVE_MPI_CHECK(start(&request));
    WEAVE_MPI_CHECK(MPI_Wait(&request, MPI_STATUS_IGNORE));
  });
}

void check_same_call(AgreementChannel& channel) {
  // Names longer than this are told apart by their first characters.
  constexpr std::size_t kNameBytes = 48;
  const int size = channel.size();
  const MPI_Comm comm = channel.comm();
  struct State {
    std::vector<char> mine, all;
  };
  auto state = std::make_shared<State>();
  State* s = state.get();
  s->mine.assign(kNameBytes, '\0');
  std::memcpy(s->mine.data(), channel.call().data(), std::min(kNameBytes - 1, channel.call().size()));
  s->all.assign(kNameBytes * static_cast<std::size_t>(size), '\0');
  channel.collective([=](MPI_Request* r) {
    return MPI_Iallgather(s->mine.data(), static_cast<int>(kNameBytes), MPI_CHAR, s->all.data(),
                          static_cast<int>(kNameBytes), MPI_CHAR, comm, r);
  }, state, "the check that every rank is in the same call");
  auto name_of = [&](int q) { return std::string(s->all.data() + static_cast<std::size_t>(q) * kNameBytes); };
  for (int q = 1; q < size; ++q)
    if (name_of(q) != name_of(0))
      throw Error(WEAVE_ERROR_RANK_MISMATCH,
                  str(channel.noun(), " ", q, ": in ", name_of(q), " while ", channel.noun(), " 0 is in ", name_of(0),
                      ": every rank must make the same collective calls in the same order (a rank skipped one, or "
                      "made one the others did not)"),
                  true);
}

void check_same_on_all_ranks(AgreementChannel& channel, const std::vector<Argument>& arguments,
                             const std::string& context) {
  check_same(channel.comm(), arguments, context, on(channel, "the check that every rank passed the same arguments"));
}

namespace {

SharedComm finish_duplicate(SharedComm made) {
  WEAVE_MPI_CHECK(MPI_Comm_set_errhandler(made->get(), MPI_ERRORS_RETURN));
  return made;
}

}  // namespace

SharedComm duplicate(AgreementChannel& channel) {
  auto made = std::make_shared<Communicator>();
  Communicator* out = made.get();
  const MPI_Comm parent = channel.comm();
  channel.collective([=](MPI_Request* r) { return MPI_Comm_idup(parent, out->out(), r); }, made,
                     "the duplication of the communicator");
  return finish_duplicate(std::move(made));
}

SharedComm duplicate(MPI_Comm comm, const WaitBounds& bounds, const std::string& call) {
  auto made = std::make_shared<Communicator>();
  MPI_Request request = MPI_REQUEST_NULL;
  WEAVE_MPI_CHECK(MPI_Comm_idup(comm, made->out(), &request));
  int size = 1;
  MPI_Comm_size(comm, &size);
  BoundedWait wait(bounds, nullptr, "rank", call);
  complete(request, wait, {made},
           str("the other ranks of the communicator (", size, " ranks) to make the call; which of them did not "
               "cannot be told before the grid has a communicator of its own"));
  return finish_duplicate(std::move(made));
}

std::vector<char> all_gather_bytes(AgreementChannel& channel, const std::vector<char>& mine,
                                   std::vector<int>* offsets) {
  if (mine.size() > static_cast<std::size_t>(INT_MAX))
    fail(WEAVE_ERROR_UNSUPPORTED, "cannot gather ", mine.size(), " bytes per rank (more than MPI's int counts)");
  const int size = channel.size();
  const MPI_Comm comm = channel.comm();
  struct State {
    int length = 0;
    std::vector<int> lengths, offsets;
    std::vector<char> mine, all;
  };
  auto state = std::make_shared<State>();
  State* s = state.get();
  s->length = static_cast<int>(mine.size());
  s->mine = mine;
  s->lengths.assign(static_cast<std::size_t>(size), 0);
  channel.collective([=](MPI_Request* r) { return MPI_Iallgather(&s->length, 1, MPI_INT, s->lengths.data(), 1, MPI_INT, comm, r); },
                     state, "the exchange of lengths");
  int64_t total = 0;
  for (int q = 0; q < size; ++q) {
    if (total > INT_MAX) fail(WEAVE_ERROR_UNSUPPORTED, "the gathered bytes exceed MPI's int counts");
    s->offsets.push_back(static_cast<int>(total));
    total += s->lengths[q];
  }
  s->all.assign(static_cast<std::size_t>(total), 0);
  channel.collective([=](MPI_Request* r) {
    return MPI_Iallgatherv(s->mine.data(), s->length, MPI_BYTE, s->all.data(), s->lengths.data(), s->offsets.data(),
                           MPI_BYTE, comm, r);
  }, state, "the exchange of addresses");
  *offsets = s->offsets;
  offsets->push_back(static_cast<int>(total));
  return s->all;
}

}  // namespace weave::internal
