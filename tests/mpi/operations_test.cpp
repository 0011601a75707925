// The MPI test matrix (support/case_lists.hpp, sweep_cases): every
// operation, element type, transpose pair, storage order, shard pattern,
// bias, beta, chunking, ring direction, algorithm, host progress mechanism
// and grid, each case checked against the oracle (case_runner).
// Usage: weave_operations_test [--quick] [--seed S] [--memory host|device] [--types LIST].
#include "support/case_lists.hpp"

int main(int argc, char** argv) { return weave_test::run_case_list(argc, argv, weave_test::sweep_cases); }
