#!/usr/bin/env bash
# Weave's main job: sets everything up (Debian packages, configure, build),
# then runs AG-GEMM, GEMM-RS and GEMM-AR on 4 MPI ranks, sequential and
# overlapped, checks them against the oracle and prints the table.
# Extra arguments go to the demo (e.g. --m 8192 --n 2048 --k 512 --float).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# One BLAS thread per rank: the ranks share the cores.
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
mpirun -np "${WEAVE_DEMO_RANKS:-4}" "$weave_build/examples/overlap_demo/weave_overlap_demo" "$@"
