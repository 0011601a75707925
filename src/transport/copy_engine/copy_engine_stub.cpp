// Built instead of the copy-engine transport when WEAVE_ENABLE_CUDA is OFF.
#include "core/error.hpp"
#include "transport/copy_engine/copy_engine_entry.hpp"

namespace weave::internal::transport {

std::unique_ptr<Transport> make_copy_engine_transport(const TransportContext&) {
  fail(WEAVE_ERROR_NOT_COMPILED, "the copy-engine transport is not compiled into this Weave; rebuild with "
       "-DWEAVE_ENABLE_CUDA=ON");
}

}  // namespace weave::internal::transport
