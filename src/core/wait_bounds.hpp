// How long Weave waits for its peers, and when it says that it is waiting.
//   timeout: a wait that sees no progress for this long gives up with
//     WEAVE_ERROR_TIMEOUT (negative: never). A plan's timeout_ms, else
//     WEAVE_TIMEOUT (seconds, 0: never), else 300 s.
//   warning: after waiting this long, a rank prints one line on stderr
//     naming whom it waits for. WEAVE_WAIT_WARNING (seconds, fractions
//     allowed, 0: never), else 10 s.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace weave::internal {

constexpr std::chrono::milliseconds kDefaultTimeout{300000};
// The longest timeout (WEAVE_TIMEOUT, in seconds; timeout_ms cannot exceed
// it): a deadline steady_clock::now() + timeout must not overflow the
// clock's 64-bit count, also after a century of uptime.
constexpr int64_t kMaxTimeoutSeconds = 100LL * 365 * 24 * 3600;
static_assert(std::chrono::seconds(kMaxTimeoutSeconds) <= std::chrono::steady_clock::duration::max() / 2,
              "now() + the longest timeout must fit steady_clock's representation");
constexpr std::chrono::milliseconds kDefaultWaitWarning{10000};

struct WaitBounds {
  std::chrono::milliseconds timeout = kDefaultTimeout;
  std::chrono::milliseconds warning = kDefaultWaitWarning;
  bool bounded() const { return timeout.count() >= 0; }
  // How often a rank that waits or works tells its peers so (arrival and
  // progress notices): often enough that a peer's timeout and warning never
  // fire while this rank is busy, rarely enough to cost nothing.
  std::chrono::milliseconds notice_interval() const;
};

// The timeout of `timeout_ms` as weave_plan_desc_t defines it (0: from
// `weave_timeout`, the value of WEAVE_TIMEOUT or NULL). Throws
// WEAVE_ERROR_INVALID_VALUE for a malformed WEAVE_TIMEOUT.
std::chrono::milliseconds resolve_timeout(int32_t timeout_ms, const char* weave_timeout);

// Bounds from `timeout_ms` (0: the environment) and WEAVE_WAIT_WARNING.
WaitBounds wait_bounds(int32_t timeout_ms = 0);

// The same for the first wait of a collective call, which comes before its
// ranks agree on errors: a malformed WEAVE_TIMEOUT or WEAVE_WAIT_WARNING
// does not throw here (this rank would leave the call while its peers wait
// for it); the defaults stand in and `malformed` says what was wrong, for
// the call to fail with inside its agreement, on every rank.
WaitBounds wait_bounds_before_agreement(int32_t timeout_ms, std::string* malformed);

}  // namespace weave::internal
