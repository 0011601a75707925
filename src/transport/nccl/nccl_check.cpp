#include "transport/nccl/nccl_check.hpp"

#include <string>

namespace weave::internal::transport {

void fail_nccl(ncclResult_t result, const char* call, ncclComm_t comm, const char* file, int line) {
  const char* last = ncclGetLastError(comm);
  const std::string detail = last && *last ? str("; NCCL says: ", last) : std::string();
  fail(WEAVE_ERROR_NCCL, call, " failed: ", ncclGetErrorString(result), detail, " (", file, ":", line, ")");
}

}  // namespace weave::internal::transport
