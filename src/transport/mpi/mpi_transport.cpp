#include "transport/mpi/mpi_transport.hpp"

#include <algorithm>
#include <climits>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/mpi_check.hpp"

namespace weave::internal::transport {

namespace {

// Messages larger than an int count of bytes go out as several messages with
// one tag; MPI keeps messages of one (source, tag, communicator) in order.
constexpr int64_t kMaxMessageBytes = INT_MAX / 2;

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::F32: return MPI_FLOAT;
    case DType::F64: return MPI_DOUBLE;
    default:
      fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "MPI cannot sum ", dtype_name(t),
           " partial sums; leave WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE off so they travel as f32");
  }
}

int to_int(int64_t value, const char* what) {
  if (value > INT_MAX)
    fail(WEAVE_ERROR_UNSUPPORTED, what, " = ", value, " elements exceeds MPI's int counts; use the ring algorithm");
  return static_cast<int>(value);
}

// What one collective step hands MPI: its datatype and its int counts and
// displacements in that datatype's units. Fails where MPI cannot take them
// (checked for every collective when the transport is made, so that a plan
// that cannot run is refused at creation, not in an execute).
struct MpiCollective {
  MPI_Datatype datatype = MPI_BYTE;
  int64_t unit_bytes = 1;
  std::vector<int> counts, displs;  // an all-reduce: one count, the buffer's
};

MpiCollective mpi_collective(const plan::Schedule& s, const plan::CollectiveOp& op) {
  // Complex elements travel and are summed as pairs of their component type.
  const DType type = component_type(s.buffer(op.recv).dtype);
  MpiCollective c;
  const bool sums = op.kind != plan::CollectiveKind::AllGather;
  c.datatype = sums || type == DType::F64 || type == DType::F32 ? mpi_type(type) : MPI_BYTE;
  const int64_t scale = c.datatype == MPI_BYTE ? static_cast<int64_t>(dtype_size(type)) : components(s.buffer(op.recv).dtype);
  c.unit_bytes = c.datatype == MPI_BYTE ? 1 : static_cast<int64_t>(dtype_size(type));
  int64_t offset = 0;
  for (int64_t count : op.counts) {
    c.counts.push_back(to_int(checked_mul(count, scale, "a collective count"), "collective count"));
    c.displs.push_back(to_int(checked_mul(offset, scale, "a collective displacement"), "collective displacement"));
    offset = checked_add(offset, count, "a collective displacement");
  }
  return c;
}

}  // namespace

void MpiTransport::check_collectives(const plan::Schedule& schedule) {
  for (const plan::Step& step : schedule.steps)
    if (const auto* op = std::get_if<plan::CollectiveOp>(&step.op)) mpi_collective(schedule, *op);
}

MpiTransport::MpiTransport(SharedComm comm) : comm_(std::move(comm)) {
  int* tag_ub = nullptr;
  int found = 0;
  WEAVE_MPI_CHECK(MPI_Comm_get_attr(comm_->get(), MPI_TAG_UB, &tag_ub, &found));
  if (found && tag_ub) max_tag_ = *tag_ub;
}

MpiTransport::~MpiTransport() {
  // Nothing is in flight after a good execute (its request slots are all
  // null), and a failed one handed its requests over already; only then is
  // the communicator freed with the transport.
  if (mpi_is_running() && in_flight()) abandon_outstanding(nullptr);
}

bool MpiTransport::in_flight() const {
  for (const auto& group : requests_)
    for (MPI_Request r : group)
      if (r != MPI_REQUEST_NULL) return true;
  return false;
}

void MpiTransport::begin_execute() {
  requests_.clear();
  receive_.clear();
}

int MpiTransport::add(std::vector<MPI_Request> requests, bool receive) {
  requests_.push_back(std::move(requests));
  receive_.push_back(receive);
  return static_cast<int>(requests_.size()) - 1;
}

int MpiTransport::post(const plan::Step& step, const exec::Bindings& bindings) {
  const plan::Schedule& s = *bindings.schedule;
  std::vector<MPI_Request> out;
  auto point_to_point = [&](const plan::Region& region, int peer, int tag, bool send) {
    const exec::MatrixRef ref = bindings.resolve(region);
    char* data = static_cast<char*>(ref.data);
    const int64_t bytes = s.bytes(region);
    for (int64_t done = 0; done < bytes || (bytes == 0 && done == 0);) {
      const int n = static_cast<int>(std::min(kMaxMessageBytes, bytes - done));
      MPI_Request r = MPI_REQUEST_NULL;
      if (send)
        WEAVE_MPI_CHECK(MPI_Isend(data + done, n, MPI_BYTE, peer, tag, comm_->get(), &r));
      else
        WEAVE_MPI_CHECK(MPI_Irecv(data + done, n, MPI_BYTE, peer, tag, comm_->get(), &r));
      out.push_back(r);
      if (bytes == 0) break;
      done += n;
    }
  };
  switch (step.kind()) {
    case plan::StepKind::Send: {
      const auto& op = std::get<plan::SendOp>(step.op);
      point_to_point(op.src, op.peer, op.tag, true);
      break;
    }
    case plan::StepKind::Recv: {
      const auto& op = std::get<plan::RecvOp>(step.op);
      point_to_point(op.dst, op.peer, op.tag, false);
      break;
    }
    case plan::StepKind::Collective: {
      const auto& op = std::get<plan::CollectiveOp>(step.op);
      const exec::MatrixRef send = bindings.resolve(op.send), recv = bindings.resolve(op.recv);
      const MpiCollective c = mpi_collective(s, op);
      MPI_Request r = MPI_REQUEST_NULL;
      int rank = 0;
      MPI_Comm_rank(comm_->get(), &rank);
      switch (op.kind) {
        case plan::CollectiveKind::AllGather: {
          // In place when my part already sits where it belongs.
          const char* mine = static_cast<const char*>(recv.data) + c.displs[rank] * c.unit_bytes;
          const void* sendbuf = send.data == mine ? MPI_IN_PLACE : send.data;
          WEAVE_MPI_CHECK(MPI_Iallgatherv(sendbuf, c.counts[rank], c.datatype, recv.data, c.counts.data(),
                                          c.displs.data(), c.datatype, comm_->get(), &r));
          break;
        }
        case plan::CollectiveKind::ReduceScatter:
          WEAVE_MPI_CHECK(MPI_Ireduce_scatter(send.data, recv.data, c.counts.data(), c.datatype, MPI_SUM,
                                              comm_->get(), &r));
          break;
        case plan::CollectiveKind::AllReduce:
          WEAVE_MPI_CHECK(
              MPI_Iallreduce(MPI_IN_PLACE, recv.data, c.counts.at(0), c.datatype, MPI_SUM, comm_->get(), &r));
          break;
      }
      out.push_back(r);
      break;
    }
    default:
      fail(WEAVE_ERROR_INTERNAL, "the MPI transport was handed a compute step");
  }
  return add(std::move(out), step.kind() == plan::StepKind::Recv);
}

bool MpiTransport::test(int request) {
  auto& group = requests_.at(request);
  if (group.empty()) return true;
  int flag = 0;
  WEAVE_MPI_CHECK(MPI_Testall(static_cast<int>(group.size()), group.data(), &flag, MPI_STATUSES_IGNORE));
  if (flag) group.clear();
  return flag != 0;
}

void MpiTransport::progress() {
  // One test of any outstanding request drives MPI's progress engine for all.
  for (auto& group : requests_)
    for (MPI_Request& r : group)
      if (r != MPI_REQUEST_NULL) {
        int flag = 0;
        WEAVE_MPI_CHECK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
        return;
      }
}

void MpiTransport::abandon_outstanding(std::shared_ptr<const void> workspace_owner) {
  std::vector<MPI_Request> pending;
  for (std::size_t i = 0; i < requests_.size(); ++i)
    for (MPI_Request& r : requests_[i])
      if (r != MPI_REQUEST_NULL) {
        // A cancelled receive still completes (as cancelled), so it is
        // tested like the rest; one already matched completes normally.
        if (receive_[i]) MPI_Cancel(&r);
        pending.push_back(r);
      }
  requests_.clear();
  receive_.clear();
  if (!pending.empty()) abandon_requests(std::move(pending), {std::move(workspace_owner), comm_});
  // A late peer may still send on this communicator: it is never freed, so
  // no later communicator can receive those messages.
  quarantine(comm_);
}

}  // namespace weave::internal::transport
