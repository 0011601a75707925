#!/usr/bin/env bash
# Sets everything up (Debian packages, configure, build), then runs the whole
# test suite under ctest: unit tests, MPI tests at 1-4 ranks over MPI (and
# UCX), examples, install tests; GPU tests report "skipped" without a GPU.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$weave_build"
ctest --output-on-failure --timeout 900 "$@"
