// What a GEMM-RS or GEMM-AR moves between ranks, per algorithm: partial
// sums (each rank adds its product to what it received and passes the sum
// on, or a collective library sums them on the way) or products (each rank
// sends each owner its product for the owner's rows and the owner sums them
// all in one pass), and in which element type. Across a network the bytes
// are the time, so where a reduction can move 16-bit products (half the
// bytes of float32 partial sums, each product rounded once and summed in
// float32) it does unless asked otherwise. The schedule builders and
// describe read the same rule.
#pragma once

#include <string>

#include "plan/schedule.hpp"

namespace weave::internal::plan {

struct ReductionWire {
  bool products = false;  // true: products summed by their owner; false: partial sums
  // Partial sums summed by the collective library (MPI's or NCCL's
  // reduce-scatter and all-reduce) rather than by Weave.
  bool summed_by_collective = false;
  DType type = DType::F64;  // what travels
  DType summed_in = DType::F64;  // what the sums accumulate in
  // Summed by the collective, and what it sums are the two ranks' products
  // in C's type (each rounded once), not partial sums passed along a ring.
  bool collective_sums_products = false;
};

// The rule for `algorithm` (not AG-GEMM):
//   sequential, ring: partial sums in the accumulation type, or in C's type
//     with reduce_in_output_type (rounded at every hop);
//   direct, hierarchical: products in C's type, or in the accumulation type
//     with reduce_in_accumulation_type;
//   pipelined: the collective library's reduce-scatter / all-reduce of
//     partial sums where those are in C's type anyway (f32, f64) or where a
//     type was asked for (either flag); else (16-bit C) products in C's
//     type: over two ranks whose collectives sum 16-bit types
//     (ScheduleOptions::collectives_sum_16_bit) handed to the library's
//     collective, which adds the two once (the owner's float32 sum of two
//     rounded products, rounded once), otherwise point to point, summed by
//     their owner.
ReductionWire reduction_wire(const Problem& p, const ScheduleOptions& o, Algorithm algorithm);

// For describe: "products travel as bf16, summed in f32 by their owner".
std::string describe_wire(const ReductionWire& wire);

}  // namespace weave::internal::plan
