// WEAVE_GEMM (support/case_lists.hpp, gemm_cases): A, B and C each laid out
// over the whole grid, every grid shape of the world, checked against the
// oracle (case_runner) with guards, poisoned C and untouched inputs.
// Usage: weave_gemm_test [--quick] [--seed S] [--memory host|device] [--types LIST].
#include "support/case_lists.hpp"

int main(int argc, char** argv) { return weave_test::run_case_list(argc, argv, weave_test::gemm_cases); }
