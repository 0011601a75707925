// Random problems through the public C API (support/case_lists.hpp,
// random_cases): random sizes (including tiny and zero), random uneven counts,
// and random choices of operation, type, transposes, orders, bias, beta,
// chunking, direction, algorithm and grid, each checked against the oracle.
// A fresh seed every run (printed; replay with --seed S).
// Usage: weave_random_shapes_test [--quick] [--seed S] [--memory host|device] [--types LIST].
#include "support/case_lists.hpp"

int main(int argc, char** argv) { return weave_test::run_case_list(argc, argv, weave_test::random_cases); }
