// Built instead of the peer-memory machinery when WEAVE_ENABLE_CUDA is OFF.
#include "transport/peer/peer_entry.hpp"

namespace weave::internal::transport {

bool peer_access_usable(const GroupView&, std::string* why_not) {
  if (why_not) *why_not = "this Weave is built without CUDA";
  return false;
}

}  // namespace weave::internal::transport
