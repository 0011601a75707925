#include "core/wait_bounds.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/error.hpp"

namespace weave::internal {

std::chrono::milliseconds WaitBounds::notice_interval() const {
  using std::chrono::milliseconds;
  milliseconds interval = bounded() ? timeout / 4 : milliseconds(60000);
  if (warning.count() > 0) interval = std::min(interval, warning / 2);
  return std::max(interval, milliseconds(1));
}

std::chrono::milliseconds resolve_timeout(int32_t timeout_ms, const char* weave_timeout) {
  if (timeout_ms > 0) return std::chrono::milliseconds(timeout_ms);
  if (timeout_ms < 0) return std::chrono::milliseconds(-1);
  if (!weave_timeout || !*weave_timeout) return kDefaultTimeout;
  char* end = nullptr;
  const long long seconds = std::strtoll(weave_timeout, &end, 10);
  if (!end || *end != '\0' || seconds < 0 || seconds > kMaxTimeoutSeconds)
    fail(WEAVE_ERROR_INVALID_VALUE, "WEAVE_TIMEOUT=", weave_timeout, " is not a number of seconds from 0 to ",
         kMaxTimeoutSeconds, " (100 years; longer would overflow the clock's deadline)");
  if (seconds == 0) return std::chrono::milliseconds(-1);  // 0: wait forever
  return std::chrono::milliseconds(seconds * 1000);
}

WaitBounds wait_bounds(int32_t timeout_ms) {
  WaitBounds bounds;
  bounds.timeout = resolve_timeout(timeout_ms, std::getenv("WEAVE_TIMEOUT"));
  if (const char* text = std::getenv("WEAVE_WAIT_WARNING"); text && *text) {
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (!end || *end != '\0' || !(seconds >= 0.0) || seconds > 365.0 * 24 * 3600)
      fail(WEAVE_ERROR_INVALID_VALUE, "WEAVE_WAIT_WARNING=", text, " is not a number of seconds >= 0");
    bounds.warning = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
  }
  return bounds;
}

WaitBounds wait_bounds_before_agreement(int32_t timeout_ms, std::string* malformed) {
  try {
    return wait_bounds(timeout_ms);
  } catch (const Error& e) {
    if (malformed) *malformed = e.what();
    WaitBounds defaults;
    defaults.timeout = resolve_timeout(timeout_ms, nullptr);
    return defaults;
  }
}

}  // namespace weave::internal
