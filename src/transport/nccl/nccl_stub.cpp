// Built instead of the NCCL transport when WEAVE_ENABLE_NCCL is OFF.
#include "core/error.hpp"
#include "transport/nccl/nccl_entry.hpp"

namespace weave::internal::transport {

std::unique_ptr<Transport> make_nccl_transport(GridState&, const GroupView&, std::chrono::milliseconds) {
  fail(WEAVE_ERROR_NOT_COMPILED, "the NCCL transport is not compiled into this Weave; rebuild with -DWEAVE_ENABLE_NCCL=ON");
}

}  // namespace weave::internal::transport
