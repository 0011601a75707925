// Built instead of the UCX transport when WEAVE_ENABLE_UCX is OFF.
#include "core/error.hpp"
#include "transport/ucx/ucx_entry.hpp"

namespace weave::internal::transport {

std::unique_ptr<Transport> make_ucx_transport(GridState&, const GroupView&, const plan::Schedule&, bool) {
  fail(WEAVE_ERROR_NOT_COMPILED, "the UCX transport is not compiled into this Weave; rebuild with -DWEAVE_ENABLE_UCX=ON");
}

}  // namespace weave::internal::transport
