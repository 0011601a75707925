// One tagged UCX message of a plan's execute, and the object that posts and
// completes them: it knows the worker, the endpoints, this plan's tag fields
// and the registered workspace.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <string>

#include "transport/ucx/ucx_group.hpp"

namespace weave::internal::transport {

struct UcxMessage {
  void* request = nullptr;  // the UCX request while in flight
  bool receive = false;
  bool finished = false;
  int peer = 0;             // rank in the group
  int64_t bytes = 0;
  const std::string* what = nullptr;  // the schedule step's label, for errors
};

class UcxMessenger {
 public:
  UcxMessenger(UcxGroup& group, uint32_t plan_id, uint32_t epoch, ucs_memory_type_t memory_type)
      : group_(group), plan_id_(plan_id), epoch_(epoch), memory_type_(memory_type) {}

  // Messages whose bytes lie inside [begin, begin + bytes) pass `handle` to
  // UCX so it need not register them itself.
  void set_registered(const void* begin, int64_t bytes, ucp_mem_h handle) {
    registered_begin_ = static_cast<const char*>(begin);
    registered_bytes_ = bytes;
    registered_handle_ = handle;
  }

  UcxMessage send(int peer, const void* data, int64_t bytes, int message_tag, const std::string& what);
  UcxMessage receive(int peer, void* data, int64_t bytes, int message_tag, const std::string& what);

  // Whether `message` has finished (releasing its request); throws
  // WEAVE_ERROR_UCX if UCX reports a failure or a receive got a message of
  // another length.
  bool finished(UcxMessage& message);

  // Asks UCX to cancel a receive that has not finished. Sends cannot be
  // cancelled, and need not be: they only read memory.
  void cancel(UcxMessage& message);
  // After a cancel: whether `message` has settled (finished, failed or
  // cancelled); releases its request then. Never throws.
  bool settled(UcxMessage& message) noexcept;
  // Gives up on a message that has not settled: UCX frees the request
  // whenever the operation ends.
  void abandon(UcxMessage& message) noexcept;

 private:
  ucp_request_param_t params_for(const void* data, int64_t bytes) const;

  UcxGroup& group_;
  uint32_t plan_id_, epoch_;
  ucs_memory_type_t memory_type_;
  const char* registered_begin_ = nullptr;
  int64_t registered_bytes_ = 0;
  ucp_mem_h registered_handle_ = nullptr;
};

}  // namespace weave::internal::transport
