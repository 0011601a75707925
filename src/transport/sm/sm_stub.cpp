// Built instead of the SM transport when WEAVE_ENABLE_CUDA is OFF.
#include "core/error.hpp"
#include "transport/sm/sm_entry.hpp"

namespace weave::internal::transport {

std::unique_ptr<Transport> make_sm_transport(const TransportContext&) {
  fail(WEAVE_ERROR_NOT_COMPILED, "the SM transport is not compiled into this Weave; rebuild with -DWEAVE_ENABLE_CUDA=ON");
}

}  // namespace weave::internal::transport
