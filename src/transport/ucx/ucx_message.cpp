#include "transport/ucx/ucx_message.hpp"

#include <cstdint>

#include "core/error.hpp"
#include "transport/ucx/ucx_tag.hpp"

namespace weave::internal::transport {

namespace {

[[noreturn]] void fail_message(const UcxMessage& m, ucs_status_t status) {
  fail(WEAVE_ERROR_UCX, m.receive ? "receiving " : "sending ", m.bytes, " bytes ", m.receive ? "from" : "to",
       " group rank ", m.peer, " (", m.what ? *m.what : std::string("?"), ") failed: ", ucs_status_string(status));
}

void check_length(const UcxMessage& m, const ucp_tag_recv_info_t& info) {
  if (static_cast<int64_t>(info.length) != m.bytes)
    fail(WEAVE_ERROR_INTERNAL, "received ", info.length, " bytes from group rank ", m.peer, " (",
         m.what ? *m.what : std::string("?"), ") but expected ", m.bytes,
         "; the ranks' schedules disagree (were the plans created with the same arguments?)");
}

}  // namespace

ucp_request_param_t UcxMessenger::params_for(const void* data, int64_t bytes) const {
  ucp_request_param_t params{};
  // The plan knows where its matrices live; telling UCX saves it a lookup.
  params.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  params.memory_type = memory_type_;
#if UCP_API_VERSION >= UCP_VERSION(1, 13)
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const auto registered = reinterpret_cast<std::uintptr_t>(registered_begin_);
  if (registered_handle_ && bytes > 0 && begin >= registered &&
      begin + static_cast<std::uintptr_t>(bytes) <= registered + static_cast<std::uintptr_t>(registered_bytes_)) {
    params.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    params.memh = registered_handle_;
  }
#else
  (void)data, (void)bytes;
#endif
  return params;
}

UcxMessage UcxMessenger::send(int peer, const void* data, int64_t bytes, int message_tag, const std::string& what) {
  UcxMessage m;
  m.peer = peer;
  m.bytes = bytes;
  m.what = &what;
  const ucp_request_param_t params = params_for(data, bytes);
  const ucp_tag_t tag = ucx_tag::make(group_.rank(), plan_id_, epoch_, message_tag);
  const ucs_status_ptr_t request =
      ucp_tag_send_nbx(group_.endpoint(peer), data, static_cast<std::size_t>(bytes), tag, &params);
  if (UCS_PTR_IS_ERR(request)) fail_message(m, UCS_PTR_STATUS(request));
  m.request = request;
  m.finished = request == nullptr;  // sent (or buffered) at once
  return m;
}

UcxMessage UcxMessenger::receive(int peer, void* data, int64_t bytes, int message_tag, const std::string& what) {
  UcxMessage m;
  m.receive = true;
  m.peer = peer;
  m.bytes = bytes;
  m.what = &what;
  ucp_request_param_t params = params_for(data, bytes);
  // Always a request, even when the message is already there: only a
  // request tells the received length (UCX 1.13 leaves recv_info unfilled
  // on immediate completion), and a message of the wrong length means the
  // ranks' schedules disagree.
  params.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  const ucp_tag_t tag = ucx_tag::make(peer, plan_id_, epoch_, message_tag);
  const ucs_status_ptr_t request = ucp_tag_recv_nbx(group_.worker(), data, static_cast<std::size_t>(bytes), tag,
                                                    ucx_tag::kFullMask, &params);
  if (UCS_PTR_IS_ERR(request)) fail_message(m, UCS_PTR_STATUS(request));
  m.request = request;
  m.finished = request == nullptr;  // a UCX that ignores the flag: done, length unchecked
  return m;
}

bool UcxMessenger::finished(UcxMessage& m) {
  if (m.finished) return true;
  ucp_tag_recv_info_t info{};
  const ucs_status_t status =
      m.receive ? ucp_tag_recv_request_test(m.request, &info) : ucp_request_check_status(m.request);
  if (status == UCS_INPROGRESS) return false;
  ucp_request_free(m.request);
  m.request = nullptr;
  m.finished = true;
  if (status != UCS_OK) fail_message(m, status);
  if (m.receive) check_length(m, info);
  return true;
}

void UcxMessenger::cancel(UcxMessage& m) {
  if (m.receive && m.request && !m.finished) ucp_request_cancel(group_.worker(), m.request);
}

bool UcxMessenger::settled(UcxMessage& m) noexcept {
  if (m.finished || !m.request) return true;
  if (ucp_request_check_status(m.request) == UCS_INPROGRESS) return false;
  ucp_request_free(m.request);
  m.request = nullptr;
  m.finished = true;
  return true;
}

void UcxMessenger::abandon(UcxMessage& m) noexcept {
  if (m.request && !m.finished) ucp_request_free(m.request);
  m.request = nullptr;
}

}  // namespace weave::internal::transport
