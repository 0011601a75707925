// The plan fuzz case (plan_fuzz_case.hpp) as a libFuzzer target: MPI is
// initialised once, on a single rank, and every input is one case.
// Built by scripts/fuzz.sh with clang and -fsanitize=fuzzer,address,undefined.
#include <mpi.h>

#include <cstdint>
#include <cstdlib>

#include "plan_fuzz_case.hpp"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  // libFuzzer ends the process with exit(); MPI is finalised on the way out.
  std::atexit([] {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  weave_fuzz::run_case(data, size);
  return 0;
}
