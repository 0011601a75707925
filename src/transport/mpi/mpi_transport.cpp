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

}  // namespace

MpiTransport::MpiTransport(MPI_Comm group_comm) {
  WEAVE_MPI_CHECK(MPI_Comm_dup(group_comm, &comm_));
  WEAVE_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  int* tag_ub = nullptr;
  int found = 0;
  WEAVE_MPI_CHECK(MPI_Comm_get_attr(comm_, MPI_TAG_UB, &tag_ub, &found));
  if (found && tag_ub) max_tag_ = *tag_ub;
}

MpiTransport::~MpiTransport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  cancel_all();
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiTransport::begin_execute() {
  requests_.clear();
  collective_.clear();
}

int MpiTransport::add(std::vector<MPI_Request> requests, bool collective) {
  requests_.push_back(std::move(requests));
  collective_.push_back(collective);
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
        WEAVE_MPI_CHECK(MPI_Isend(data + done, n, MPI_BYTE, peer, tag, comm_, &r));
      else
        WEAVE_MPI_CHECK(MPI_Irecv(data + done, n, MPI_BYTE, peer, tag, comm_, &r));
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
      const DType type = s.buffer(op.recv).dtype;
      const MPI_Datatype mt = type == DType::F64 || type == DType::F32 ? mpi_type(type) : MPI_BYTE;
      const int64_t scale = mt == MPI_BYTE ? static_cast<int64_t>(dtype_size(type)) : 1;
      std::vector<int> counts, displs;
      int64_t offset = 0;
      for (int64_t c : op.counts) {
        counts.push_back(to_int(checked_mul(c, scale, "a collective count"), "collective count"));
        displs.push_back(to_int(checked_mul(offset, scale, "a collective displacement"), "collective displacement"));
        offset = checked_add(offset, c, "a collective displacement");
      }
      MPI_Request r = MPI_REQUEST_NULL;
      int rank = 0;
      MPI_Comm_rank(comm_, &rank);
      switch (op.kind) {
        case plan::CollectiveKind::AllGather: {
          // In place when my part already sits where it belongs.
          const char* mine = static_cast<const char*>(recv.data) + displs[rank] * (mt == MPI_BYTE ? 1 : dtype_size(type));
          const void* sendbuf = send.data == mine ? MPI_IN_PLACE : send.data;
          WEAVE_MPI_CHECK(MPI_Iallgatherv(sendbuf, counts[rank], mt, recv.data, counts.data(), displs.data(), mt,
                                          comm_, &r));
          break;
        }
        case plan::CollectiveKind::ReduceScatter:
          WEAVE_MPI_CHECK(MPI_Ireduce_scatter(send.data, recv.data, counts.data(), mpi_type(type), MPI_SUM, comm_, &r));
          break;
        case plan::CollectiveKind::AllReduce:
          WEAVE_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, recv.data, to_int(op.counts.at(0), "all-reduce count"),
                                         mpi_type(type), MPI_SUM, comm_, &r));
          break;
      }
      out.push_back(r);
      break;
    }
    default:
      fail(WEAVE_ERROR_INTERNAL, "the MPI transport was handed a compute step");
  }
  return add(std::move(out), step.kind() == plan::StepKind::Collective);
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

void MpiTransport::cancel_all() {
  for (std::size_t i = 0; i < requests_.size(); ++i) {
    if (collective_[i]) continue;
    for (MPI_Request& r : requests_[i])
      if (r != MPI_REQUEST_NULL) {
        MPI_Cancel(&r);
        MPI_Request_free(&r);
      }
  }
  requests_.clear();
  collective_.clear();
}

}  // namespace weave::internal::transport
