// The sequential algorithms: one collective and one GEMM, one after the other
// (no overlap). They are the baseline the overlapped plans are measured
// against, the choice for shapes where overlap does not pay, and the whole
// story for a group of one rank.
//
//   AG-GEMM: all-gather op(A) rows into one buffer, one GEMM, bias.
//   GEMM-RS: one GEMM of all partial sums, reduce-scatter, finish my rows.
//   GEMM-AR: one GEMM of all partial sums, all-reduce, finish every row.
#include "core/checked.hpp"
#include "core/error.hpp"
#include "plan/schedule_builder.hpp"

namespace weave::internal::plan {

namespace {

void sequential_ag_gemm(ScheduleBuilder& b) {
  const Problem& p = b.problem();
  const int P = b.P(), r = b.rank();
  Region a_full = b.whole(kBufferA);
  int gathered = -1;
  if (P > 1) {
    const Order gather_order = p.op_a == Op::N ? Order::RowMajor : Order::ColMajor;
    const int gather = p.op_a == Op::N ? b.add_workspace("gathered op(A)", p.m, p.k, p.dtype, gather_order)
                                       : b.add_workspace("gathered op(A)", p.k, p.m, p.dtype, gather_order);
    const Region mine = b.whole(kBufferA);
    const Region my_slot = b.op_rows(gather, p.op_a, p.m_split.offset(r), p.m_split.count(r));
    Region send = mine;
    int pack = -1;
    if (!b.same_bytes_as_tight(mine, gather_order)) {
      send = my_slot;
      pack = b.add_step(b.copy(my_slot, mine), 0, {}, "pack own rows of op(A)");
    }
    CollectiveOp all_gather{CollectiveKind::AllGather, send, b.whole(gather), {}};
    for (int q = 0; q < P; ++q)
      all_gather.counts.push_back(checked_mul(p.m_split.count(q), p.k, "the elements of rank ", q, "'s rows of op(A)"));
    gathered = b.add_step(all_gather, kCommLane, {pack}, "all-gather op(A)");
    a_full = b.whole(gather);
  }
  const Region c_all = b.whole(kBufferC);
  if (!c_all.empty()) {
    const int gemm = b.add_step(GemmOp{a_full, p.op_a, b.whole(kBufferB), p.op_b, c_all, Scalar::Alpha, Scalar::Beta},
                                0, {gathered}, "gemm");
    if (p.has_bias) b.add_step(b.add_bias(c_all), 0, {gemm}, "bias");
  }
  if (b.options().gathered_output)
    b.add_step(b.copy(b.whole(kBufferGathered), a_full), 0, {gathered}, "gathered output");
}

void sequential_reduction(ScheduleBuilder& b) {
  const Problem& p = b.problem();
  const ScheduleOptions& o = b.options();
  const int P = b.P(), r = b.rank();
  const DType acc = o.reduce_in_output_type ? p.dtype : accumulation_type(p.dtype);
  const Region c_all = b.whole(kBufferC);
  const GemmOp product{b.whole(kBufferA), p.op_a, b.whole(kBufferB), p.op_b, {}, Scalar::Alpha, Scalar::Zero};

  if (P == 1 && acc == p.dtype) {
    // Nothing to sum across ranks: straight into C.
    GemmOp g = product;
    g.c = c_all;
    g.beta = Scalar::Beta;
    const int gemm = b.add_step(g, 0, {}, "gemm");
    if (p.has_bias) b.add_step(b.add_bias(c_all), 0, {gemm}, "bias");
    return;
  }
  // Row-major partial sums keep every rank's row block contiguous.
  const int partial = b.add_workspace("partial sums", p.m, p.n, acc, Order::RowMajor);
  GemmOp g = product;
  g.c = b.whole(partial);
  int last = b.add_step(g, 0, {}, "gemm of all partial sums");
  Region sum = b.whole(partial);
  if (P > 1) {
    if (p.operation == Operation::GemmRs) {
      const int mine = b.add_workspace("my summed rows", p.m_split.count(r), p.n, acc, Order::RowMajor);
      CollectiveOp rs{CollectiveKind::ReduceScatter, b.whole(partial), b.whole(mine), {}};
      for (int q = 0; q < P; ++q)
        rs.counts.push_back(checked_mul(p.m_split.count(q), p.n, "the elements of rank ", q, "'s rows of C"));
      last = b.add_step(rs, kCommLane, {last}, "reduce-scatter partial sums");
      sum = b.whole(mine);
    } else {
      CollectiveOp ar{CollectiveKind::AllReduce, b.whole(partial), b.whole(partial),
                      {checked_mul(p.m, p.n, "the elements of C")}};
      last = b.add_step(ar, kCommLane, {last}, "all-reduce partial sums");
    }
  }
  b.add_step(b.finish(c_all, sum), 0, {last}, "finish C");
}

}  // namespace

void build_sequential(ScheduleBuilder& b) {
  if (b.problem().operation == Operation::AgGemm)
    sequential_ag_gemm(b);
  else
    sequential_reduction(b);
}

}  // namespace weave::internal::plan
