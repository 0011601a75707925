// MPI calls inside Weave go through WEAVE_MPI_CHECK so a failure becomes a
// weave::internal::Error naming the call and MPI's own error string.
#pragma once

#include <mpi.h>

#include "core/error.hpp"

namespace weave::internal {

[[noreturn]] void fail_mpi(int code, const char* call, const char* file, int line);

}  // namespace weave::internal

#define WEAVE_MPI_CHECK(call)                                                          \
  do {                                                                                 \
    int weave_mpi_code_ = (call);                                                      \
    if (weave_mpi_code_ != MPI_SUCCESS) ::weave::internal::fail_mpi(weave_mpi_code_, #call, __FILE__, __LINE__); \
  } while (0)
