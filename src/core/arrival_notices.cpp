#include "core/arrival_notices.hpp"

#include <limits>
#include <utility>

#include "core/abandoned_work.hpp"
#include "core/error.hpp"
#include "core/mpi_check.hpp"

namespace weave::internal {

namespace {
constexpr int kTag = 1;
constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
}  // namespace

std::string rank_list(const char* noun, const std::vector<int>& ranks) {
  std::string text = str(noun, ranks.size() == 1 ? " " : "s ");
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) text += i + 1 == ranks.size() ? " and " : ", ";
    text += std::to_string(ranks[i]);
  }
  return text;
}

ArrivalNotices::ArrivalNotices(SharedComm comm) : comm_(std::move(comm)) {
  WEAVE_MPI_CHECK(MPI_Comm_rank(comm_->get(), &rank_));
  WEAVE_MPI_CHECK(MPI_Comm_size(comm_->get(), &size_));
  reached_.assign(static_cast<std::size_t>(size_), 0);
  told_.assign(static_cast<std::size_t>(size_), 0);
  gave_up_.assign(static_cast<std::size_t>(size_), kNever);
}

ArrivalNotices::~ArrivalNotices() {
  if (!mpi_is_running()) return;
  std::vector<MPI_Request> requests;
  KeepAlive keep{comm_};
  for (Outgoing& o : outgoing_) {
    requests.push_back(o.request);
    keep.push_back(o.message);
  }
  if (!requests.empty()) abandon_requests(std::move(requests), std::move(keep));
}

void ArrivalNotices::enter(uint64_t call) {
  call_ = call;
  reached_[rank_] = call;
  poll();
}

void ArrivalNotices::send(int peer, Kind kind) {
  Outgoing o;
  o.message = std::shared_ptr<int64_t[]>(new int64_t[2]{static_cast<int64_t>(call_), kind});
  WEAVE_MPI_CHECK(MPI_Isend(o.message.get(), 2, MPI_INT64_T, peer, kTag, comm_->get(), &o.request));
  outgoing_.push_back(std::move(o));
  if (kind == kArrived || kind == kWorking) told_[peer] = std::max(told_[peer], call_);
}

void ArrivalNotices::send_to_all(Kind kind) {
  for (int q = 0; q < size_; ++q)
    if (q != rank_) send(q, kind);
}

void ArrivalNotices::reap_sends() {
  std::vector<Outgoing> still;
  for (Outgoing& o : outgoing_) {
    int done = 0;
    WEAVE_MPI_CHECK(MPI_Test(&o.request, &done, MPI_STATUS_IGNORE));
    if (!done) still.push_back(std::move(o));
  }
  outgoing_ = std::move(still);
}

void ArrivalNotices::poll() {
  if (size_ < 2) return;
  if (!outgoing_.empty()) reap_sends();
  for (;;) {
    int flag = 0;
    MPI_Status status;
    WEAVE_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, kTag, comm_->get(), &flag, &status));
    if (!flag) return;
    int64_t message[2] = {0, 0};
    WEAVE_MPI_CHECK(MPI_Recv(message, 2, MPI_INT64_T, status.MPI_SOURCE, kTag, comm_->get(), MPI_STATUS_IGNORE));
    const int q = status.MPI_SOURCE;
    const auto call = static_cast<uint64_t>(message[0]);
    switch (message[1]) {
      case kArrived:
        reached_[q] = std::max(reached_[q], call);
        // A peer waits in `call`: if this rank has reached it, say so.
        if (call_ >= call && told_[q] < call_) send(q, kArrived);
        break;
      case kWorking:
        reached_[q] = std::max(reached_[q], call);
        if (call >= call_) last_peer_working_ = std::chrono::steady_clock::now();
        break;
      case kGaveUp:
        gave_up_[q] = std::min(gave_up_[q], call);
        break;
      default:
        break;
    }
  }
}

void ArrivalNotices::announce_arrival() {
  if (size_ < 2 || arrival_announced_ == call_ + 1) return;
  arrival_announced_ = call_ + 1;
  for (int q = 0; q < size_; ++q)
    if (q != rank_ && told_[q] < call_) send(q, kArrived);
}

void ArrivalNotices::announce_working() {
  if (size_ > 1) send_to_all(kWorking);
}

void ArrivalNotices::announce_give_up() {
  if (size_ < 2 || give_up_announced_ == call_ + 1) return;
  give_up_announced_ = call_ + 1;
  send_to_all(kGaveUp);
}

std::vector<int> ArrivalNotices::not_arrived() const {
  std::vector<int> missing;
  for (int q = 0; q < size_; ++q)
    if (q != rank_ && reached_[q] < call_) missing.push_back(q);
  return missing;
}

int ArrivalNotices::gave_up() const {
  for (int q = 0; q < size_; ++q)
    if (q != rank_ && gave_up_[q] <= call_) return q;
  return -1;
}

}  // namespace weave::internal
