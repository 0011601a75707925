#include "core/bounded_wait.hpp"

#include <algorithm>
#include <cstdio>
#include <thread>
#include <utility>

#include "core/error.hpp"

namespace weave::internal {

namespace {

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

BoundedWait::BoundedWait(const WaitBounds& bounds, ArrivalNotices* notices, const char* noun, std::string call)
    : bounds_(bounds), notices_(notices), noun_(noun), call_(std::move(call)) {
  start_ = last_progress_ = last_idle_ = std::chrono::steady_clock::now();
}

std::string BoundedWait::whom(const std::string& waiting_for, bool still, int left) const {
  if (!notices_) return waiting_for;
  std::vector<int> missing = notices_->not_arrived();
  missing.erase(std::remove(missing.begin(), missing.end(), left), missing.end());
  if (missing.empty()) return waiting_for;
  const char* verb = still ? (missing.size() == 1 ? " has not arrived" : " have not arrived") : " did not arrive";
  return str(waiting_for, "; ", rank_list(noun_, missing), verb);
}

void BoundedWait::give_up(const std::string& waiting_for, int gave_up) {
  if (notices_) notices_->announce_give_up();
  const std::string self =
      notices_ ? str(noun_, " ", notices_->rank(), " of ", notices_->size()) : std::string("this rank");
  const std::string peer_left =
      gave_up >= 0 ? str("; ", noun_, " ", gave_up, " left this call (it failed or gave up waiting)") : "";
  fail(WEAVE_ERROR_TIMEOUT, self, " waited ", seconds(std::chrono::steady_clock::now() - last_progress_), " s in ",
       call_, " for ", whom(waiting_for, false, gave_up), peer_left,
       "; a peer may have failed or not made the call (set timeout_ms or WEAVE_TIMEOUT to wait longer)");
}

void BoundedWait::check_no_peer_gave_up(const std::function<std::string()>& waiting_for) {
  if (!notices_) return;
  notices_->poll();
  const int q = notices_->gave_up();
  if (q >= 0) give_up(waiting_for(), q);
}

void BoundedWait::idle(const std::function<std::string()>& waiting_for) {
  const auto now = std::chrono::steady_clock::now();
  // Only the time spent polling counts: after a pause since the last poll,
  // the clock keeps what was waited before it and nothing of the pause.
  if (now - last_idle_ > kNotWaiting)
    last_progress_ = now - std::max(std::chrono::steady_clock::duration::zero(), last_idle_ - last_progress_);
  last_idle_ = now;
  if (notices_ && now - last_poll_ >= std::chrono::milliseconds(1)) {
    last_poll_ = now;
    check_no_peer_gave_up(waiting_for);
    last_progress_ = std::max(last_progress_, notices_->last_peer_working());
  }
  const auto waited = now - last_progress_;
  if (notices_ && waited >= bounds_.notice_interval()) notices_->announce_arrival();
  if (!warned_ && bounds_.warning.count() > 0 && waited >= bounds_.warning) {
    warned_ = true;
    const std::string left = bounds_.bounded() ? str("timeout in ", seconds(bounds_.timeout - waited), " s")
                                               : std::string("no timeout");
    std::fprintf(stderr, "weave: rank %d has waited %g s in %s for %s; %s\n", world_rank(), seconds(waited),
                 call_.c_str(), whom(waiting_for(), true).c_str(), left.c_str());
    std::fflush(stderr);
  }
  const bool past_timeout = bounds_.bounded() && waited > bounds_.timeout;
  // The first time past the timeout, return: the caller tests once more.
  if (past_timeout && past_timeout_) give_up(waiting_for(), -1);
  past_timeout_ = past_timeout;
  std::this_thread::yield();
}

}  // namespace weave::internal
