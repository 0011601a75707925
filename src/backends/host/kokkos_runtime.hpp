// Weave's element-wise kernels run on Kokkos execution spaces, so Kokkos must
// be initialized. Applications that use Kokkos initialize it themselves
// before creating a grid (and finalize it after destroying every Weave
// object); otherwise Weave initializes it on first use and finalizes it when
// the program exits.
#pragma once

#include <string>

namespace weave::internal::host {

void ensure_kokkos_initialized();
// "kokkos 3.4.1 (Serial)" for describe and weave_build_features.
std::string kokkos_description();

}  // namespace weave::internal::host
