// NCCL calls inside Weave go through WEAVE_NCCL_CHECK, so a failure becomes
// a weave::internal::Error (WEAVE_ERROR_NCCL) naming the call, NCCL's error string and
// NCCL's own last message for the communicator.
#pragma once

#include <nccl.h>

#include "core/error.hpp"

namespace weave::internal::transport {

// comm may be null (before a communicator exists).
[[noreturn]] void fail_nccl(ncclResult_t result, const char* call, ncclComm_t comm, const char* file, int line);

}  // namespace weave::internal::transport

#define WEAVE_NCCL_CHECK(call, comm)                                                                      \
  do {                                                                                                    \
    ncclResult_t weave_nccl_result_ = (call);                                                             \
    if (weave_nccl_result_ != ncclSuccess)                                                                \
      ::weave::internal::transport::fail_nccl(weave_nccl_result_, #call, (comm), __FILE__, __LINE__);               \
  } while (0)
