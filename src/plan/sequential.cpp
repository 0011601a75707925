// The sequential algorithms: one collective and one GEMM, one after the other
// (no overlap). They are the baseline the overlapped plans are measured
// against, the choice for shapes where overlap does not pay, and the whole
// story for a group of one rank.
//
//   AG-GEMM: all-gather op(A) rows (and scaled rows' scales) into one
//            buffer, one GEMM (one per shard where each shard's scales are
//            not simply consecutive rows of the gathered scales), bias.
//            With a wire type, each rank quantizes its rows into its place
//            of that buffer first (a single rank too).
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
  const ScaleMode mode = p.wire_scale;  // the scales of the rows as they travel
  const bool scaled = mode != ScaleMode::None, quantize = p.quantized();
  Region a_full = b.whole(kBufferA);
  // The gathered scales: each rank's scales as it holds them (the layout of
  // its own block), one after the other; views[q] is rank q's.
  std::vector<Region> scale_views(static_cast<std::size_t>(P));
  if (scaled && P == 1 && !quantize) scale_views[0] = b.whole(kBufferAScale);
  int gathered = -1, scales_gathered = -1, stacked = -1, prepared = -1;
  if (P > 1 || quantize) {
    const Order gather_order = p.op_a == Op::N ? Order::RowMajor : Order::ColMajor;
    const int gather = p.op_a == Op::N ? b.add_workspace("gathered op(A)", p.m, p.k, p.wire_type, gather_order)
                                       : b.add_workspace("gathered op(A)", p.k, p.m, p.wire_type, gather_order);
    const Region mine = b.whole(kBufferA);
    const Region my_slot = b.op_rows(gather, p.op_a, p.m_split.offset(r), p.m_split.count(r));
    if (scaled) {
      std::vector<int64_t> counts, first(static_cast<std::size_t>(P) + 1, 0);
      for (int q = 0; q < P; ++q) {
        counts.push_back(scale_layout(mode, p.m_split.count(q), p.k).elements());
        first[q + 1] = checked_add(first[q], counts.back(), "the gathered scales of op(A)");
      }
      const ScaleLayout all = scale_layout(mode, first[P], 1);
      stacked = b.add_workspace("gathered scales of op(A)", first[P], 1, all.dtype, Order::ColMajor);
      for (int q = 0; q < P; ++q)
        scale_views[q] = b.whole(b.add_view(stacked, str("scales of rank ", q, "'s rows of op(A)"), first[q],
                                            scale_layout(mode, p.m_split.count(q), p.k)));
      if (quantize && !my_slot.empty())
        prepared = b.add_step(QuantizeOp{mine, my_slot, p.op_a, true, scale_views[r]}, 0, {},
                              "quantize own rows of op(A)");
      if (P > 1) {
        // The caller's scales are tight for its block: they travel as they
        // are (quantized rows' scales from where the quantization put them).
        CollectiveOp gather_scales{CollectiveKind::AllGather, quantize ? scale_views[r] : b.whole(kBufferAScale),
                                   b.whole(stacked), counts};
        scales_gathered = b.add_step(gather_scales, kCommLane, {prepared}, "all-gather the scales of op(A)");
      }
    } else if (quantize && !my_slot.empty()) {
      prepared = b.add_step(QuantizeOp{mine, my_slot, p.op_a, false, {}}, 0, {}, "quantize own rows of op(A)");
    }
    Region send = quantize ? my_slot : mine;
    if (!quantize && !b.same_bytes_as_tight(mine, gather_order)) {
      send = my_slot;
      prepared = b.add_step(b.copy(my_slot, mine), 0, {}, "pack own rows of op(A)");
    }
    if (P > 1) {
      // After the scales' (a few bytes): collectives start in one order on
      // every rank, which host transports, which start whatever is ready,
      // need to see in the dependencies.
      CollectiveOp all_gather{CollectiveKind::AllGather, send, b.whole(gather), {}};
      for (int q = 0; q < P; ++q)
        all_gather.counts.push_back(
            checked_mul(p.m_split.count(q), p.k, "the elements of rank ", q, "'s rows of op(A)"));
      gathered = b.add_step(all_gather, kCommLane, {prepared, scales_gathered}, "all-gather op(A)");
    } else {
      gathered = prepared;
    }
    a_full = b.whole(gather);
  }
  const Region c_all = b.whole(kBufferC);
  if (!c_all.empty()) {
    const GemmOp whole_product{a_full, p.op_a, b.whole(kBufferB), p.op_b, c_all, Scalar::Alpha, Scalar::Beta,
                               {}, b.b_scales()};
    std::vector<int> gemms;
    if (!scaled) {
      gemms.push_back(b.add_step(whole_product, 0, {gathered}, "gemm"));
    } else if (mode == ScaleMode::RowWise || P == 1) {
      // Every rank's row-wise scales one after the other are the scales of
      // the gathered op(A): one GEMM.
      GemmOp g = whole_product;
      g.a_scale = ScaleOperand{mode, stacked >= 0 ? b.whole(stacked) : scale_views[0]};
      gemms.push_back(b.add_step(g, 0, {gathered, scales_gathered}, "gemm"));
    } else {
      // Otherwise each shard's rows with their own scales.
      for (int q = 0; q < P; ++q) {
        const int64_t rows = p.m_split.count(q), row0 = p.m_split.offset(q);
        if (rows == 0) continue;
        GemmOp g = whole_product;
        g.a = b.op_rows(a_full.buffer, p.op_a, row0, rows);
        g.c = Region{kBufferC, row0, 0, rows, c_all.cols};
        g.a_scale = ScaleOperand{mode, scale_views[q]};
        gemms.push_back(b.add_step(g, 0, {gathered, scales_gathered}, str("gemm of rank ", q, "'s rows")));
      }
    }
    if (p.has_bias) b.add_step(b.add_bias(c_all), 0, gemms, "bias");
  }
  if (b.options().gathered_output) {
    b.add_step(b.copy(b.whole(kBufferGathered), a_full), 0, {gathered}, "gathered output");
    if (scaled)
      for (int q = 0; q < P; ++q) {
        const int64_t rows = p.m_split.count(q), row0 = p.m_split.offset(q);
        if (scale_views[q].empty()) continue;  // no rows, or K = 0: no scales
        const Region out = mode == ScaleMode::Tensor
                               ? Region{kBufferGatheredScale, q, 0, 1, 1}
                               : b.scale_rows(kBufferGatheredScale, mode, row0, rows,
                                              str("the gathered scales of rank ", q, "'s rows"));
        b.add_step(b.copy(out, scale_views[q]), 0, {scales_gathered, prepared},
                   str("gathered output scales of rank ", q));
      }
  }
}

void sequential_reduction(ScheduleBuilder& b) {
  const Problem& p = b.problem();
  const ScheduleOptions& o = b.options();
  const int P = b.P(), r = b.rank();
  const DType acc = o.reduce_in_output_type ? p.dtype : accumulation_type(p.dtype);
  const Region c_all = b.whole(kBufferC);
  int scales_ready = -1;  // the caller's scales of all of A are tight: never packed
  const GemmOp product = b.gemm_of_a_rows(0, p.m, {}, Scalar::Alpha, Scalar::Zero, &scales_ready);

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
