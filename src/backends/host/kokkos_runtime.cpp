#include "backends/host/kokkos_runtime.hpp"

#include <Kokkos_Core.hpp>
#include <cstdlib>
#include <mutex>

#include "core/error.hpp"

namespace weave::internal::host {

namespace {
bool g_weave_initialized_kokkos = false;

void finalize_kokkos_at_exit() {
  if (g_weave_initialized_kokkos && Kokkos::is_initialized()) Kokkos::finalize();
}

bool kokkos_finalized() {
#if KOKKOS_VERSION >= 30700
  return Kokkos::is_finalized();
#else
  return false;
#endif
}
}  // namespace

void ensure_kokkos_initialized() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (Kokkos::is_initialized()) return;
  if (kokkos_finalized())
    fail(WEAVE_ERROR_UNSUPPORTED, "Kokkos has already been finalized in this process; Weave needs it. "
         "Create Weave objects before Kokkos::finalize()");
#if KOKKOS_VERSION >= 30700
  Kokkos::InitializationSettings settings;
#if defined(KOKKOS_ENABLE_CUDA)
  // The device the caller made current (each rank its own GPU), not the
  // one Kokkos would pick by itself.
  int device = 0;
  if (cudaGetDevice(&device) == cudaSuccess) settings.set_device_id(device);
#endif
  Kokkos::initialize(settings);
#else
  int argc = 1;
  char name[] = "weave";
  char* argv[] = {name, nullptr};
  Kokkos::initialize(argc, argv);
#endif
  g_weave_initialized_kokkos = true;
  std::atexit(finalize_kokkos_at_exit);
}

std::string kokkos_description() {
  return str("kokkos ", KOKKOS_VERSION / 10000, ".", KOKKOS_VERSION / 100 % 100, ".", KOKKOS_VERSION % 100, " (",
             Kokkos::DefaultHostExecutionSpace::name(),
#if defined(KOKKOS_ENABLE_CUDA)
             ", ", Kokkos::Cuda::name(),
#endif
             ")");
}

}  // namespace weave::internal::host
