#include "transport/ucx/ucx_transport.hpp"

#include <chrono>
#include <mutex>

#include "core/error.hpp"
#include "transport/ucx/ucx_entry.hpp"
#include "transport/ucx/ucx_tag.hpp"

namespace weave::internal::transport {

namespace {

// After a failed execute, cancelled receives settle within a few progress
// calls; one still going after this long is a rendezvous transfer UCX cannot
// stop (see abandon_locked).
constexpr std::chrono::milliseconds kCancelGracePeriod{2000};

// UCX requests of a failed execute that had not settled when it gave up:
// sends a peer has not taken yet, receives UCX could not cancel. They keep
// the worker, the workspace (and its registration) and the collectives'
// scratch alive until UCX has finished with them.
class AbandonedUcxRequests final : public AbandonedWork {
 public:
  AbandonedUcxRequests(std::shared_ptr<UcxGroup> group, std::vector<void*> requests, KeepAlive keep_alive)
      : group_(std::move(group)), requests_(std::move(requests)), keep_alive_(std::move(keep_alive)) {}
  bool finished() override {
    std::lock_guard<std::mutex> lock(group_->mutex());
    ucp_worker_progress(group_->worker());
    std::vector<void*> still;
    for (void* request : requests_) {
      if (ucp_request_check_status(request) == UCS_INPROGRESS)
        still.push_back(request);
      else
        ucp_request_free(request);
    }
    requests_ = std::move(still);
    return requests_.empty();
  }

 private:
  std::shared_ptr<UcxGroup> group_;
  std::vector<void*> requests_;
  KeepAlive keep_alive_;
};

bool has_collectives(const plan::Schedule& schedule) {
  for (const plan::Step& s : schedule.steps)
    if (s.kind() == plan::StepKind::Collective) return true;
  return false;
}

}  // namespace

void check_ucx_schedule(const plan::Schedule& schedule, int group_size, bool device_memory, const UcxGroup& group) {
  if (group_size > ucx_tag::kMaxGroupSize)
    fail(WEAVE_ERROR_UNSUPPORTED, "the ucx transport addresses groups of up to ", ucx_tag::kMaxGroupSize,
         " ranks; this group has ", group_size, "; use the mpi transport");
  int64_t collectives = 0;
  for (const plan::Step& s : schedule.steps) {
    int tag = 0;
    if (s.kind() == plan::StepKind::Send) tag = std::get<plan::SendOp>(s.op).tag;
    if (s.kind() == plan::StepKind::Recv) tag = std::get<plan::RecvOp>(s.op).tag;
    if (tag < 0 || tag > ucx_tag::kMaxStepTag)
      fail(WEAVE_ERROR_UNSUPPORTED, "this schedule needs message tags up to ", tag, " but the ucx transport carries ",
           ucx_tag::kMaxStepTag, "; use fewer chunks_per_shard");
    if (s.kind() != plan::StepKind::Collective) continue;
    if (2 * collectives++ + 1 > ucx_tag::kMaxStepTag)
      fail(WEAVE_ERROR_UNSUPPORTED, "this schedule has more collective steps than the ucx transport can number (",
           (ucx_tag::kMaxStepTag + 1) / 2, ")");
    if (device_memory)
      fail(WEAVE_ERROR_UNSUPPORTED, "the ucx transport builds the sequential algorithm's collectives from messages "
           "and sums in host memory, but this plan's matrices live in device memory; use the ring algorithm "
           "(WEAVE_ALGORITHM_RING) with ucx, or the nccl transport");
    const auto& op = std::get<plan::CollectiveOp>(s.op);
    const DType type = component_type(schedule.buffer(op.recv).dtype);
    if (op.kind != plan::CollectiveKind::AllGather && type != DType::F32 && type != DType::F64)
      fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the ucx transport sums f32 and f64 partial sums, not ", dtype_name(type),
           "; leave WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE off so they travel as f32");
  }
  if (device_memory && !group.cuda_memory())
    fail(WEAVE_ERROR_UNSUPPORTED, "this UCX library (", group.version(), ") cannot move CUDA device memory: its "
         "context reports no cuda memory type (UCX built without CUDA, or UCX_TLS leaves out cuda_copy/cuda_ipc); "
         "use a CUDA-enabled UCX or the nccl transport");
}

std::unique_ptr<Transport> make_ucx_transport(GridState& grid, const GroupView& group, const plan::Schedule& schedule,
                                              bool device_memory) {
  // One UCX context per grid and group kind, shared by the plans over it.
  auto shared = std::static_pointer_cast<UcxGroup>(grid.cached(
      str("ucx:", group_name(group.kind)), [&] { return std::make_shared<UcxGroup>(group); }));
  uint32_t plan_id = 0;
  std::string unusable;
  {
    std::lock_guard<std::mutex> lock(shared->mutex());
    plan_id = shared->next_plan_id();
    unusable = shared->unusable_reason();
  }
  agree_on_errors(*group.channel, [&] {
    if (!unusable.empty()) fail(WEAVE_ERROR_UCX, unusable);
    check_ucx_schedule(schedule, group.size, device_memory, *shared);
  });
  // The tags of this plan's messages carry its number; a disagreement would
  // leave receives unmatched, so it is checked rather than assumed.
  check_same_on_all_ranks(*group.channel, {{"UCX plan number", static_cast<int64_t>(plan_id)}}, "weave_plan_create");
  return std::make_unique<UcxTransport>(std::move(shared), schedule, device_memory, plan_id);
}

UcxTransport::UcxTransport(std::shared_ptr<UcxGroup> group, const plan::Schedule& schedule, bool device_memory,
                           uint32_t plan_id)
    : group_(std::move(group)), schedule_(schedule), device_memory_(device_memory), plan_id_(plan_id) {
  // Scratch for the collectives' incoming parts, allocated now: execute
  // allocates nothing.
  int64_t total = 0;
  int collectives = 0;
  collective_slots_.assign(schedule_.steps.size(), CollectiveSlot{});
  for (std::size_t i = 0; i < schedule_.steps.size(); ++i) {
    const plan::Step& s = schedule_.steps[i];
    if (s.kind() != plan::StepKind::Collective) continue;
    const auto& op = std::get<plan::CollectiveOp>(s.op);
    collective_slots_[i] = CollectiveSlot{collectives++, total};
    total += UcxCollective::scratch_bytes(op, schedule_.buffer(op.recv).dtype, schedule_.group_size,
                                          schedule_.group_rank);
  }
  try {
    scratch_ = std::make_shared<std::vector<std::byte>>(static_cast<std::size_t>(total));
  } catch (const std::bad_alloc&) {
    fail(WEAVE_ERROR_OUT_OF_MEMORY, "cannot allocate ", total, " bytes of scratch for the ucx transport's collectives");
  }
}

UcxTransport::~UcxTransport() {
  std::lock_guard<std::mutex> lock(group_->mutex());
  abandon_locked(nullptr);
}

std::string UcxTransport::name() const {
  std::string text = str("ucx ", group_->version(), " (tag send/receive, ", device_memory_ ? "cuda" : "host",
                         " memory; cuda memory supported: ", group_->cuda_memory() ? "yes" : "no", ")");
  if (has_collectives(schedule_)) text += "; collectives over ucx point-to-point";
  return text;
}

UcxMessenger UcxTransport::messenger(const exec::Bindings* bindings) {
  UcxMessenger m(*group_, plan_id_, epoch_, device_memory_ ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST);
  if (bindings && bindings->workspace != registered_workspace_) register_workspace(bindings->workspace);
  if (workspace_handle_) m.set_registered(registered_workspace_, schedule_.workspace_bytes, workspace_handle_);
  return m;
}

void UcxTransport::register_workspace(void* workspace) {
  release_workspace();
  if (!workspace || schedule_.workspace_bytes == 0) return;
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = workspace;
  params.length = static_cast<std::size_t>(schedule_.workspace_bytes);
  const ucs_status_t status = ucp_mem_map(group_->context(), &params, &workspace_handle_);
  if (status != UCS_OK) {
    workspace_handle_ = nullptr;
    fail(WEAVE_ERROR_UCX, "ucp_mem_map of the plan's ", schedule_.workspace_bytes,
         "-byte workspace failed: ", ucs_status_string(status));
  }
  registered_workspace_ = workspace;
}

void UcxTransport::release_workspace() noexcept {
  if (workspace_handle_) ucp_mem_unmap(group_->context(), workspace_handle_);
  workspace_handle_ = nullptr;
  registered_workspace_ = nullptr;
}

void UcxTransport::begin_execute() {
  std::lock_guard<std::mutex> lock(group_->mutex());
  if (!group_->unusable_reason().empty()) fail(WEAVE_ERROR_UCX, group_->unusable_reason());
  operations_.clear();  // the last execute finished (or was cancelled) all of them
  epoch_ = (epoch_ + 1) & ucx_tag::kEpochMask;
}

int UcxTransport::post(const plan::Step& step, const exec::Bindings& bindings) {
  std::lock_guard<std::mutex> lock(group_->mutex());
  UcxMessenger m = messenger(&bindings);
  Operation op;
  switch (step.kind()) {
    case plan::StepKind::Send: {
      const auto& send = std::get<plan::SendOp>(step.op);
      op.messages.push_back(m.send(send.peer, bindings.resolve(send.src).data, schedule_.bytes(send.src), send.tag,
                                   step.label));
      break;
    }
    case plan::StepKind::Recv: {
      const auto& recv = std::get<plan::RecvOp>(step.op);
      op.messages.push_back(m.receive(recv.peer, bindings.resolve(recv.dst).data, schedule_.bytes(recv.dst),
                                      recv.tag, step.label));
      break;
    }
    case plan::StepKind::Collective: {
      const CollectiveSlot& slot = collective_slots_.at(static_cast<std::size_t>(&step - schedule_.steps.data()));
      op.collective = std::make_unique<UcxCollective>(step, slot.ordinal, bindings, schedule_.group_size,
                                                      schedule_.group_rank, scratch_->data() + slot.scratch_offset);
      op.done = op.collective->next_phase(m, op.messages);
      break;
    }
    default:
      fail(WEAVE_ERROR_INTERNAL, "the ucx transport was handed a compute step");
  }
  operations_.push_back(std::move(op));
  return static_cast<int>(operations_.size()) - 1;
}

bool UcxTransport::advance(Operation& op) {
  if (op.done) return true;
  UcxMessenger m = messenger(nullptr);
  for (UcxMessage& message : op.messages)
    if (!m.finished(message)) return false;
  if (!op.collective) {
    op.done = true;
    return true;
  }
  // Every message of the collective's phase is in: local work, next phase.
  op.messages.clear();
  op.done = op.collective->next_phase(m, op.messages);
  return op.done;
}

bool UcxTransport::test(int request) {
  std::lock_guard<std::mutex> lock(group_->mutex());
  Operation& op = operations_.at(request);
  if (op.done) return true;
  ucp_worker_progress(group_->worker());
  return advance(op);
}

void UcxTransport::progress() {
  std::lock_guard<std::mutex> lock(group_->mutex());
  // A call handles the events UCX has queued; a few more calls let a
  // rendezvous move through its handshake within one GEMM tile.
  for (int round = 0; round < 4 && ucp_worker_progress(group_->worker()) != 0; ++round) {
  }
  // Collectives move to their next phase as soon as one ends.
  for (Operation& op : operations_)
    if (op.collective && !op.done) advance(op);
}

void UcxTransport::abandon_outstanding(std::shared_ptr<const void> workspace_owner) {
  std::lock_guard<std::mutex> lock(group_->mutex());
  abandon_locked(std::move(workspace_owner));
}

void UcxTransport::abandon_locked(std::shared_ptr<const void> workspace_owner) {
  // Nothing may write into the caller's memory after an execute has failed:
  // cancel every receive and wait until UCX has let go of each.
  UcxMessenger m = messenger(nullptr);
  for (Operation& op : operations_)
    for (UcxMessage& message : op.messages) m.cancel(message);
  const auto deadline = std::chrono::steady_clock::now() + kCancelGracePeriod;
  bool pending = true;
  while (pending) {
    ucp_worker_progress(group_->worker());
    pending = false;
    for (Operation& op : operations_)
      for (UcxMessage& message : op.messages) pending = !m.settled(message) || pending;
    if (std::chrono::steady_clock::now() > deadline) break;
  }
  std::vector<void*> unsettled;
  for (Operation& op : operations_)
    for (UcxMessage& message : op.messages) {
      // A receive UCX already matched to a rendezvous transfer cannot be
      // cancelled, and the peer may still complete it; no later execute may
      // trust this worker.
      if (message.receive && !message.finished && message.request)
        group_->mark_unusable(str("an earlier failed execute left a ", message.bytes, "-byte receive from group rank ",
                                  message.peer, " (", message.what ? *message.what : std::string("?"),
                                  ") that UCX could not cancel; create a new grid to use the ucx transport again"));
      if (message.request && !message.finished) unsettled.push_back(message.request);
      message.request = nullptr;
    }
  operations_.clear();
  auto registration = std::make_shared<UcxRegistration>(group_, workspace_handle_);
  workspace_handle_ = nullptr;
  registered_workspace_ = nullptr;
  if (!unsettled.empty())
    abandon(std::make_unique<AbandonedUcxRequests>(group_, std::move(unsettled),
                                                   KeepAlive{std::move(workspace_owner), scratch_, registration}));
}

UcxRegistration::~UcxRegistration() {
  if (handle) ucp_mem_unmap(group->context(), handle);
}

}  // namespace weave::internal::transport
