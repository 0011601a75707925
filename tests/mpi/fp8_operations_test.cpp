// The FP8 test matrix (support/case_lists.hpp, fp8_cases): FP8 A and B with
// every scale mode, checked against the oracle, which decodes the FP8
// values and applies the scales in double precision (case_runner).
// Usage: weave_fp8_operations_test [--quick] [--seed S] [--memory host|device].
#include "support/case_lists.hpp"

int main(int argc, char** argv) { return weave_test::run_case_list(argc, argv, weave_test::fp8_cases); }
