#include "plan/calibration_schedules.hpp"

#include "core/checked.hpp"
#include "plan/schedule_builder.hpp"

namespace weave::internal::plan {

Problem calibration_problem(int group_size, int group_rank, DType dtype, Memory memory) {
  Problem p;
  p.group_size = group_size;
  p.group_rank = group_rank;
  p.dtype = p.a_type = p.b_type = p.c_type = p.bias_type = dtype;
  p.memory = memory;
  return p;
}

Schedule gemm_calibration(const Problem& problem, int64_t m, int64_t n, int64_t k) {
  const ScheduleOptions options;
  ScheduleBuilder b(problem, options);
  const int a = b.add_workspace("A", m, k, problem.dtype, Order::ColMajor);
  const int bb = b.add_workspace("B", k, n, problem.dtype, Order::ColMajor);
  const int c = b.add_workspace("C", m, n, problem.dtype, Order::ColMajor);
  b.add_step(GemmOp{b.whole(a), Op::N, b.whole(bb), Op::N, b.whole(c), Scalar::One, Scalar::Zero, {}, {}}, 0, {}, "gemm");
  return b.finish_schedule(Algorithm::Sequential, Direction::Forward, 1);
}

namespace {

Schedule exchanges(const Problem& problem, const std::vector<ExchangePartners>& partners, int64_t elements) {
  const ScheduleOptions options;
  ScheduleBuilder b(problem, options);
  const int batch = b.next_batch();
  for (const ExchangePartners& with : partners) {
    const int out = b.add_workspace("outgoing", elements, 1, problem.dtype, Order::ColMajor);
    const int in = b.add_workspace("incoming", elements, 1, problem.dtype, Order::ColMajor);
    b.add_step(SendOp{b.whole(out), with.send_to, 0}, kCommLane, {}, "send", batch);
    b.add_step(RecvOp{b.whole(in), with.receive_from, 0}, kCommLane, {}, "receive", batch);
  }
  return b.finish_schedule(Algorithm::Ring, Direction::Forward, 1);
}

}  // namespace

Schedule exchange_calibration(const Problem& problem, int send_to, int receive_from, int64_t elements) {
  return exchanges(problem, {ExchangePartners{send_to, receive_from}}, elements);
}

Schedule concurrent_exchange_calibration(const Problem& problem, ExchangePartners first, ExchangePartners second,
                                         int64_t elements) {
  return exchanges(problem, {first, second}, elements);
}

Schedule collective_calibration(const Problem& problem, CollectiveKind kind, int64_t elements, DType type) {
  const ScheduleOptions options;
  ScheduleBuilder b(problem, options);
  const int P = problem.group_size, r = problem.group_rank;
  const int64_t part = elements / P, whole = checked_mul(part, static_cast<int64_t>(P), "calibration elements");
  const int buffer = b.add_workspace("buffer", whole, 1, type, Order::ColMajor);
  const std::vector<int64_t> parts(static_cast<std::size_t>(P), part);
  switch (kind) {
    case CollectiveKind::AllGather:
      b.add_step(CollectiveOp{kind, Region{buffer, r * part, 0, part, 1}, b.whole(buffer), parts}, kCommLane, {},
                 "all-gather");
      break;
    case CollectiveKind::ReduceScatter: {
      const int mine = b.add_workspace("my part", part, 1, type, Order::ColMajor);
      b.add_step(CollectiveOp{kind, b.whole(buffer), b.whole(mine), parts}, kCommLane, {}, "reduce-scatter");
      break;
    }
    case CollectiveKind::AllReduce:
      b.add_step(CollectiveOp{kind, b.whole(buffer), b.whole(buffer), {whole}}, kCommLane, {}, "all-reduce");
      break;
  }
  return b.finish_schedule(Algorithm::Sequential, Direction::Forward, 1);
}

}  // namespace weave::internal::plan
