#include "plan/calibration_schedules.hpp"

#include <algorithm>

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

std::vector<int64_t> calibration_parts(int64_t elements, int parts, const std::vector<int64_t>& weights) {
  std::vector<int64_t> out(static_cast<std::size_t>(parts), elements / parts);
  if (static_cast<int>(weights.size()) != parts) return out;
  int64_t total = 0;
  for (int64_t w : weights) total = checked_add(total, std::max<int64_t>(w, 0), "calibration weights");
  if (total <= 0) return out;
  for (int q = 0; q < parts; ++q)
    out[static_cast<std::size_t>(q)] = static_cast<int64_t>(static_cast<double>(elements) *
                                                            static_cast<double>(std::max<int64_t>(weights[q], 0)) /
                                                            static_cast<double>(total));
  return out;
}

Schedule collective_calibration(const Problem& problem, CollectiveKind kind, int64_t elements, DType type,
                                const std::vector<int64_t>& weights) {
  const ScheduleOptions options;
  ScheduleBuilder b(problem, options);
  const int P = problem.group_size, r = problem.group_rank;
  const std::vector<int64_t> parts =
      kind == CollectiveKind::AllReduce ? calibration_parts(elements, P, {}) : calibration_parts(elements, P, weights);
  int64_t whole = 0, offset = 0;
  for (int q = 0; q < P; ++q) {
    if (q == r) offset = whole;
    whole = checked_add(whole, parts[static_cast<std::size_t>(q)], "calibration elements");
  }
  const int64_t part = parts[static_cast<std::size_t>(r)];
  const int buffer = b.add_workspace("buffer", std::max<int64_t>(whole, 1), 1, type, Order::ColMajor);
  switch (kind) {
    case CollectiveKind::AllGather:
      b.add_step(CollectiveOp{kind, Region{buffer, offset, 0, part, 1}, Region{buffer, 0, 0, whole, 1}, parts},
                 kCommLane, {}, "all-gather");
      break;
    case CollectiveKind::ReduceScatter: {
      const int mine = b.add_workspace("my part", std::max<int64_t>(part, 1), 1, type, Order::ColMajor);
      b.add_step(CollectiveOp{kind, Region{buffer, 0, 0, whole, 1}, Region{mine, 0, 0, part, 1}, parts}, kCommLane,
                 {}, "reduce-scatter");
      break;
    }
    case CollectiveKind::AllReduce:
      b.add_step(CollectiveOp{kind, b.whole(buffer), b.whole(buffer), {whole}}, kCommLane, {}, "all-reduce");
      break;
  }
  return b.finish_schedule(Algorithm::Sequential, Direction::Forward, 1);
}

}  // namespace weave::internal::plan
