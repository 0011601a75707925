// One fuzz case of the C API: the bytes of an input decode into a grid
// shape, one to four matrix descriptors (every field, absurd sizes, leading
// dimensions, counts and enumeration values included), an environment
// variable and a plan descriptor over the matrices. The case calls
// weave_grid_create, weave_matrix_create and every weave_matrix_local_*
// query, weave_plan_create, weave_plan_get_info and weave_plan_describe, and
// for small accepted plans weave_execute_ex on buffers surrounded by guard
// values, and checks:
//   - every failure is a documented status (never WEAVE_ERROR_INTERNAL)
//     with a non-empty message, the same on every rank for the collective
//     creation calls, and leaves the output handle NULL;
//   - every accepted matrix's local extent is ld * (cols - 1) + rows (or
//     its row-major mirror) and that times the element size fits int64_t;
//   - every accepted plan's information is in range and its workspace is
//     consistent: a multiple of the 256-byte alignment of its slices, none
//     for a host plan over one rank, and for an AG-GEMM over several ranks
//     at least the gathered op(A), whose bytes must fit int64_t;
//   - execute writes nothing outside C's block: the guards around every
//     buffer, the gaps of C's leading dimension and the inputs A, B, bias
//     are unchanged, and C is finite.
// A violated invariant prints what was violated and aborts (libFuzzer then
// keeps the input). Collective over MPI_COMM_WORLD: every rank passes the
// same bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weave_fuzz {

// How far one case got, for the driver's counts.
struct CaseOutcome {
  bool grid = false;     // the grid was created
  int matrices = 0;      // matrices created
  bool plan = false;     // the plan was created
  bool executed = false; // and executed (successfully or with a documented status)
};

CaseOutcome run_case(const uint8_t* data, std::size_t size);

}  // namespace weave_fuzz
