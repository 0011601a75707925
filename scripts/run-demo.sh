#!/usr/bin/env bash
# Weave's main job: sets everything up (Debian packages, configure, build),
# then runs AG-GEMM, GEMM-RS and GEMM-AR on 4 MPI ranks, sequential and
# overlapped, checks them against the oracle and prints the table.
set -euo pipefail

usage() {
  cat <<'TEXT'
usage: bash scripts/run-demo.sh [--m M] [--n N] [--k K] [--iterations I] [--float]
  Installs the Debian packages Weave needs where missing, configures and
  builds Weave in build/ (only what changed, once it is configured), then runs
  the overlap demo: AG-GEMM, GEMM-RS and GEMM-AR, each sequential and
  overlapped, checked against a double-precision oracle and timed.
  --m M, --n N, --k K   the shape (default M=4096, N=1024, K=256)
  --iterations I        timed executes of each plan (default 5): median, min-max
  --float               f32 instead of f64
  Environment: WEAVE_DEMO_RANKS (MPI ranks, default 4), OPENBLAS_NUM_THREADS
  (default 1: the ranks share the cores), and setup.sh's WEAVE_BUILD_DIR,
  WEAVE_CMAKE_ARGS, WEAVE_SKIP_INSTALL.
TEXT
}
for arg in "$@"; do
  case "$arg" in -h | --help) usage; exit 0 ;; esac
done

echo "run-demo: setting up and building (only what changed)"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# One BLAS thread per rank: the ranks share the cores.
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
ranks="${WEAVE_DEMO_RANKS:-4}"
echo "run-demo: running the demo on $ranks ranks"
mpirun -np "$ranks" "$weave_build/examples/overlap_demo/weave_overlap_demo" "$@"
