#!/usr/bin/env bash
# Sets everything up (Debian packages, configure, build), then runs the whole
# test suite under ctest: unit tests, MPI tests at 1-4 ranks over MPI (shared
# memory and TCP) and UCX, the seeded fuzzer, examples, install tests; GPU
# tests report "skipped" without a GPU. Ends with one line that counts what
# ran, what passed and what was skipped (ctest's own summary counts skipped
# tests as passed), e.g.
#   weave: 294 tests: 200 passed, 94 skipped (no GPU), 0 failed
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$weave_build"
results="$weave_build/ctest-results.xml"
rm -f "$results"
status=0
ctest --output-on-failure --timeout 900 --output-junit "$results" "$@" || status=$?

# ctest's JUnit file marks every test run, failed (a timeout too), skipped
# (<skipped/>: SKIP_RETURN_CODE or SKIP_REGULAR_EXPRESSION) or not run.
# Skipped gpu tests (labels gpu, gpu-emulated and gpu-shared) are those without a GPU for
# every rank (exit code 77).
if [ -f "$results" ]; then
  gpu_tests=" $(ctest -N -L '^gpu(-emulated|-shared)?$' | sed -n 's/^ *Test *#[0-9]*: \(.*\)$/\1/p' | tr '\n' ' ') "
  awk -v gpu_tests="$gpu_tests" '
    function close_case() {
      if (name == "") return
      total++
      if (skipped) { if (index(gpu_tests, " " name " ")) no_gpu++; else { other++; others = others " " name } }
      else if (status == "run") passed++
      else failed++
      name = ""
    }
    /<testcase / {
      close_case()
      name = $0; sub(/.*<testcase name="/, "", name); sub(/".*/, "", name)
      status = $0; sub(/.* status="/, "", status); sub(/".*/, "", status)
      skipped = 0
    }
    /<skipped/ { skipped = 1 }
    END {
      close_case()
      reasons = ""
      if (no_gpu) reasons = no_gpu " no GPU"
      if (other) reasons = reasons (reasons == "" ? "" : "; ") other " other:" others
      if (no_gpu && !other) reasons = "no GPU"
      printf "weave: %d tests: %d passed, %d skipped%s, %d failed\n", total, passed, no_gpu + other,
             reasons == "" ? "" : " (" reasons ")", failed
    }' "$results"
fi
exit "$status"
