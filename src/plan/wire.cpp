#include "plan/wire.hpp"

#include "core/error.hpp"
#include "plan/schedule_builder.hpp"

namespace weave::internal::plan {

ReductionWire reduction_wire(const Problem& p, const ScheduleOptions& o, Algorithm algorithm) {
  const DType acc = accumulation_type(p.dtype);
  ReductionWire w;
  w.summed_in = acc;
  switch (algorithm) {
    case Algorithm::Sequential:
    case Algorithm::Ring:
      w.type = o.reduce_in_output_type ? p.dtype : acc;
      w.summed_by_collective = algorithm == Algorithm::Sequential;
      return w;
    case Algorithm::Direct:
    case Algorithm::Hierarchical:
      w.products = true;
      w.type = product_type(p, o);
      return w;
    case Algorithm::Pipelined:
      if (p.dtype == acc || o.reduce_in_output_type || o.reduce_in_accumulation_type) {
        w.summed_by_collective = true;
        w.type = o.reduce_in_output_type ? p.dtype : acc;
        // The collective sums in what travels.
        w.summed_in = w.type;
        return w;
      }
      w.type = p.dtype;
      // Two ranks: the collective adds the two ranks' products once, as
      // their owner would in float32, and its library moves the bytes (over
      // NCCL's socket path its reduce-scatter of bf16 took 166 ms where
      // point-to-point products took 232-250, doc/performance.md). Beyond
      // two ranks a collective's ring would round at every hop.
      if (p.group_size == 2 && o.collectives_sum_16_bit) {
        w.summed_by_collective = true;
        w.collective_sums_products = true;
        w.summed_in = p.dtype;
        return w;
      }
      w.products = true;
      return w;
    case Algorithm::Summa: break;  // WEAVE_GEMM reduces nothing
  }
  fail(WEAVE_ERROR_INTERNAL, "no reduction wire for algorithm ", static_cast<int>(algorithm));
}

std::string describe_wire(const ReductionWire& w) {
  if (w.collective_sums_products)
    return str("products travel as ", dtype_name(w.type), ", the two ranks' summed once by the collective");
  if (w.products) return str("products travel as ", dtype_name(w.type), ", summed in ", dtype_name(w.summed_in));
  return str("partial sums travel as ", dtype_name(w.type),
             w.summed_by_collective ? ", summed by the collective" : str(", summed in ", dtype_name(w.summed_in)));
}

}  // namespace weave::internal::plan
