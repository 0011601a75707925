#include "transport/ucx/ucx_group.hpp"

#include <chrono>
#include <climits>

#include "core/error.hpp"
#include "core/mpi_check.hpp"

namespace weave::internal::transport {

void check_ucx(ucs_status_t status, const char* call) {
  if (status != UCS_OK) fail(WEAVE_ERROR_UCX, call, " failed: ", ucs_status_string(status));
}

namespace {

// Closing an endpoint flushes what is still queued on it. Peers may already
// have left (grids are destroyed without a collective call), so the wait is
// bounded; whatever is left is released with the worker.
constexpr std::chrono::milliseconds kCloseGracePeriod{1000};

}  // namespace

UcxGroup::UcxGroup(const GroupView& group) : rank_(group.rank) {
  try {
    agree_on_errors(*group.channel, [&] { create_local_state(group.size); });

    // Worker addresses of every rank, back to back; bounded like every
    // creation step.
    const std::vector<char> mine(reinterpret_cast<const char*>(address_),
                                 reinterpret_cast<const char*>(address_) + address_length_);
    std::vector<int> offsets;
    const std::vector<char> addresses = all_gather_bytes(*group.channel, mine, &offsets);
    std::vector<int> lengths(group.size);
    for (int r = 0; r < group.size; ++r) lengths[r] = offsets[r + 1] - offsets[r];
    offsets.pop_back();

    agree_on_errors(*group.channel, [&] { connect(addresses, lengths, offsets); });
  } catch (...) {
    release();
    throw;
  }
}

UcxGroup::~UcxGroup() { release(); }

void UcxGroup::create_local_state(int group_size) {
  unsigned major = 0, minor = 0, release_number = 0;
  ucp_get_version(&major, &minor, &release_number);
  version_ = str(major, ".", minor, ".", release_number);

  ucp_config_t* config = nullptr;  // UCX_* environment variables (UCX_TLS, ...)
  check_ucx(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_TAG;
  params.estimated_num_eps = static_cast<std::size_t>(group_size);
  params.mt_workers_shared = 0;
  const ucs_status_t init = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  check_ucx(init, "ucp_init");

  ucp_context_attr_t attributes{};
  attributes.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  check_ucx(ucp_context_query(context_, &attributes), "ucp_context_query");
  cuda_memory_ = (attributes.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;

  // SERIALIZED: the worker is called from the caller's thread and from an
  // executor's progress thread, never at the same time (mutex()).
  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  check_ucx(ucp_worker_create(context_, &worker_params, &worker_), "ucp_worker_create");
  check_ucx(ucp_worker_get_address(worker_, &address_, &address_length_), "ucp_worker_get_address");
}

void UcxGroup::connect(const std::vector<char>& addresses, const std::vector<int>& lengths,
                       const std::vector<int>& offsets) {
  endpoints_.assign(lengths.size(), nullptr);
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address = reinterpret_cast<const ucp_address_t*>(addresses.data() + offsets[r]);
    const ucs_status_t status = ucp_ep_create(worker_, &params, &endpoints_[r]);
    if (status != UCS_OK)
      fail(WEAVE_ERROR_UCX, "ucp_ep_create to group rank ", r, " failed: ", ucs_status_string(status),
           " (UCX_TLS selects the transports UCX may use)");
  }
  ucp_worker_release_address(worker_, address_);
  address_ = nullptr;
}

ucp_ep_h UcxGroup::endpoint(int group_rank) const {
  if (group_rank < 0 || group_rank >= size())
    fail(WEAVE_ERROR_INTERNAL, "the UCX transport has no endpoint for group rank ", group_rank, " (group of ", size(), ")");
  return endpoints_[group_rank];
}

void UcxGroup::mark_unusable(const std::string& why) {
  if (unusable_.empty()) unusable_ = why;
}

void UcxGroup::release() noexcept {
  if (worker_) {
    std::vector<void*> closing;
    for (ucp_ep_h& ep : endpoints_) {
      if (!ep) continue;
      ucp_request_param_t params{};
      params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      params.flags = 0;  // flush what is queued, then close
      ucs_status_ptr_t request = ucp_ep_close_nbx(ep, &params);
      if (UCS_PTR_IS_PTR(request)) closing.push_back(request);
      ep = nullptr;
    }
    const auto deadline = std::chrono::steady_clock::now() + kCloseGracePeriod;
    for (void* request : closing) {
      while (ucp_request_check_status(request) == UCS_INPROGRESS && std::chrono::steady_clock::now() < deadline)
        ucp_worker_progress(worker_);
      ucp_request_free(request);
    }
    if (address_) ucp_worker_release_address(worker_, address_);
    address_ = nullptr;
    ucp_worker_destroy(worker_);
    worker_ = nullptr;
  }
  endpoints_.clear();
  if (context_) ucp_cleanup(context_);
  context_ = nullptr;
}

}  // namespace weave::internal::transport
