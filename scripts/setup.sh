#!/usr/bin/env bash
# Sourced by run-demo.sh and run-tests.sh: installs the Debian packages Weave
# needs when they are missing, then configures and builds Weave in build/.
# Environment: WEAVE_BUILD_DIR (default build), WEAVE_CMAKE_ARGS (extra
# configure arguments), WEAVE_SKIP_INSTALL=1 (never call apt-get).
set -euo pipefail

weave_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$weave_root/scripts/packages.sh"
weave_build="${WEAVE_BUILD_DIR:-$weave_root/build}"

weave_packages=(
  build-essential cmake ninja-build pkg-config gfortran
  libopenmpi-dev openmpi-bin libopenblas-dev
  libtrilinos-kokkos-dev libucx-dev libgtest-dev
  libcli11-dev nlohmann-json3-dev
  libscalapack-openmpi-dev  # tests and benchmark compare with ScaLAPACK; builds weave_pdgemm
)

weave_configure_and_build() {
  # The CUDA toolkit, where installed, is compiled in even without a GPU.
  if [ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
    export PATH="/usr/local/cuda/bin:$PATH"
  fi
  # Configured once; after that the build re-runs CMake itself where a
  # CMakeLists.txt changed, so an up-to-date build is not reconfigured.
  # WEAVE_CMAKE_ARGS always configures (they may change the cache).
  if [ ! -f "$weave_build/CMakeCache.txt" ] || [ ! -f "$weave_build/build.ninja" ] || [ -n "${WEAVE_CMAKE_ARGS:-}" ]; then
    # shellcheck disable=SC2086
    cmake -S "$weave_root" -B "$weave_build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${WEAVE_CMAKE_ARGS:-}
  fi
  cmake --build "$weave_build" --parallel "$(nproc)"
}

# Open MPI refuses to run as root and to start more ranks than cores unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

weave_install_packages "${weave_packages[@]}"
weave_configure_and_build
