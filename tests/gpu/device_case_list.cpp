#include "device_case_list.hpp"

#include <string>
#include <vector>

namespace weave_gpu_test {

int run_device_case_list(int argc, char** argv, const weave_test::CaseGenerator& make_cases,
                         weave_test::DeviceMemory& memory) {
  // Defaults first: a later --memory or --types on the command line wins.
  static char memory_flag[] = "--memory", device[] = "device", types_flag[] = "--types", all[] = "all";
  std::vector<char*> arguments{argv[0], memory_flag, device, types_flag, all};
  for (int i = 1; i < argc; ++i) arguments.push_back(argv[i]);
  arguments.push_back(nullptr);
  weave_test::set_device_memory(&memory);
  const int status = weave_test::run_case_list(static_cast<int>(arguments.size()) - 1, arguments.data(), make_cases);
  weave_test::set_device_memory(nullptr);
  return status;
}

}  // namespace weave_gpu_test
