// One wait for peers, bounded in time. The waiting loop calls idle() each
// time it found nothing to do and progressed() each time it advanced; the
// wait gives up (WEAVE_ERROR_TIMEOUT) once neither this rank nor a peer it
// hears from (ArrivalNotices) has advanced for the timeout: a timeout
// measures waiting for peers, never this rank's own work. Nor does it count
// a pause between two idle() calls longer than kNotWaiting: the rank was not
// polling then (stopped, descheduled, or at work elsewhere), so what it
// waits for may have come meanwhile; and once the timeout has passed, the
// wait returns from idle() once more so that its loop tests what it waits
// for before giving up. Both keep a rank that was itself stopped from
// failing a call its peers completed. While it waits it announces its
// arrival after the notice interval, prints one warning line after
// WaitBounds::warning, and names the peers that have not arrived.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "core/arrival_notices.hpp"
#include "core/wait_bounds.hpp"

namespace weave::internal {

class BoundedWait {
 public:
  // A pause between two polls longer than this is not waiting (see above).
  // Long enough that an oversubscribed rank's yield never reaches it.
  static constexpr std::chrono::milliseconds kNotWaiting{100};

  // `notices` may be null (nobody can be named then); `noun` names the
  // peers ("group rank", "rank"); `call` says where ("weave_execute of
  // plan AG-GEMM ...").
  BoundedWait(const WaitBounds& bounds, ArrivalNotices* notices, const char* noun, std::string call);

  void progressed() { last_progress_ = std::chrono::steady_clock::now(); }
  // `waiting_for` says for what ("step 3 (all-reduce partial sums)"); it is
  // called only to print a warning or a timeout.
  void idle(const std::function<std::string()>& waiting_for);
  // Throws WEAVE_ERROR_TIMEOUT if a peer announced that it gave up in this
  // call (it has left; waiting longer is pointless).
  void check_no_peer_gave_up(const std::function<std::string()>& waiting_for);

 private:
  // `left`: a peer that left the call (gave up or failed), not counted
  // among those that did not arrive (-1: none).
  std::string whom(const std::string& waiting_for, bool still, int left = -1) const;
  [[noreturn]] void give_up(const std::string& waiting_for, int gave_up);

  WaitBounds bounds_;
  ArrivalNotices* notices_;
  const char* noun_;
  std::string call_;
  std::chrono::steady_clock::time_point start_, last_progress_, last_idle_, last_poll_{};
  bool warned_ = false;
  bool past_timeout_ = false;  // the last idle() found the timeout passed
};

}  // namespace weave::internal
