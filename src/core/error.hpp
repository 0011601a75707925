// Errors inside Weave are C++ exceptions carrying a weave_status_t; the C API
// boundary (src/api) turns them into a status plus the thread-local message.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "weave/weave.h"

namespace weave::internal {

class Error : public std::runtime_error {
 public:
  // `names_its_rank`: the message starts with the rank it happened on (an
  // agreement's error), so an agreement around it adds no second one.
  Error(weave_status_t status, std::string message, bool names_its_rank = false)
      : std::runtime_error(std::move(message)), status_(status), names_its_rank_(names_its_rank) {}
  weave_status_t status() const noexcept { return status_; }
  bool names_its_rank() const noexcept { return names_its_rank_; }

 private:
  weave_status_t status_;
  bool names_its_rank_;
};

// Concatenate anything streamable into one string: str("m=", m, " < 0").
template <class... Parts>
std::string str(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

template <class... Parts>
[[noreturn]] void fail(weave_status_t status, const Parts&... parts) {
  throw Error(status, str(parts...));
}

// Thread-local last-error message read by weave_last_error().
void set_last_error(std::string message);
const char* last_error();

// An error a binding found in the arguments of this thread's next
// collective call (weave_report_argument_error): recorded here, raised by
// that call's first agreement as this rank's failure, and dropped at the
// end of whichever API call comes next.
void set_pending_argument_error(weave_status_t status, std::string message);
void raise_pending_argument_error();
void drop_pending_argument_error();

// This process's rank in MPI_COMM_WORLD, remembered by the first grid
// creation (a call that may use MPI on its thread), so that a message of
// a call that failed on this rank alone — a non-collective call, a handle
// check, an error before the ranks could agree — names the rank:
// "rank 3 (MPI_COMM_WORLD): grid is NULL". Messages that an agreement made
// name their rank already. Before any grid, or where MPI has no
// MPI_COMM_WORLD rank yet, the message stays as it is.
void remember_world_rank(int rank);
std::string naming_world_rank(const std::string& message);

// `status` is a weave_status_t as an int (see core/enum_value.hpp).
const char* status_name(int status);

}  // namespace weave::internal
