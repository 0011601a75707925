// main() of a GPU case-list program: support/case_runner.hpp's
// run_case_list with `memory` installed, and --memory device --types all
// unless the command line says otherwise.
#pragma once

#include "support/case_runner.hpp"

namespace weave_gpu_test {

int run_device_case_list(int argc, char** argv, const weave_test::CaseGenerator& make_cases,
                         weave_test::DeviceMemory& memory);

}  // namespace weave_gpu_test
