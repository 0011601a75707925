#!/usr/bin/env bash
# Leak and memory-error check: builds Weave with AddressSanitizer (which
# includes LeakSanitizer) in its own build directory, then runs the unit
# tests and the MPI tests (operations and random shapes in their quick
# form, errors in full, the fault scenarios of late and absent peers) at 1
# and 2 ranks. Every process writes its report
# to the log directory; the check fails on any AddressSanitizer error and on
# any leak that LeakSanitizer reports.
#
# Leaks inside Open MPI's own machinery (what MPI_Init sets up for the
# process, its PMIx client, messages its progress engine buffered) are
# suppressed by scripts/lsan.supp, which names only Open MPI functions that
# Weave never calls; the suppressions that were used are printed at the
# end. Anything else, in particular any leak allocated by Weave, fails.
#
# Usage: scripts/check-leaks.sh [build-dir]   (default: build-asan)
# Environment: WEAVE_LEAK_RANKS (default "1 2"), MPIEXEC (default mpiexec),
#              CMAKE_ARGS (extra configure arguments).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build-asan}"
ranks="${WEAVE_LEAK_RANKS:-1 2}"
mpiexec="${MPIEXEC:-mpiexec}"
logs="$build/leak-logs"

# --- Build --------------------------------------------------------------------
# Sanitizer flags on the command line only; the project's CMake is unchanged.
# Fortran and the examples stay out: they add nothing here and would need
# the sanitizer on their own compiler too.
sanitize="-fsanitize=address -fno-omit-frame-pointer"
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS="$sanitize" -DCMAKE_CXX_FLAGS="$sanitize" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address" \
  -DWEAVE_ENABLE_CUDA=OFF -DWEAVE_ENABLE_FORTRAN=OFF -DWEAVE_BUILD_EXAMPLES=OFF -DWEAVE_BUILD_TESTS=ON \
  ${CMAKE_ARGS:-}
cmake --build "$build" --parallel "${WEAVE_BUILD_JOBS:-2}" \
  --target weave weave_operations_test weave_random_shapes_test weave_errors_test weave_fault_test
if cmake --build "$build" --target help 2>/dev/null | grep -q weave_unit_tests; then
  cmake --build "$build" --parallel "${WEAVE_BUILD_JOBS:-2}" --target weave_unit_tests
  unit_tests="$build/tests/unit/weave_unit_tests"
else
  unit_tests=""
  echo "check-leaks: GoogleTest not found, the unit tests are not checked" >&2
fi

# --- Run ------------------------------------------------------------------------
rm -rf "$logs"
mkdir -p "$logs"
# fast_unwind_on_malloc=0: Open MPI is built without frame pointers, so only
# the slow unwinder gives whole stacks (the suppressions match on them).
export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0:malloc_context_size=48:log_path=$logs/asan:log_exe_name=1"
lsan_options="print_suppressions=1:report_objects=0"
export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp:$lsan_options"
# Runs that time out on purpose keep their communicators until exit (see
# scripts/lsan-timeouts.supp): they add that file's suppressions.
timeouts_supp="$logs/lsan-with-timeouts.supp"
cat "$root/scripts/lsan.supp" "$root/scripts/lsan-timeouts.supp" > "$timeouts_supp"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

# MPI_Finalize unloads Open MPI's components (dlclose) before LeakSanitizer
# looks at the stacks, which then point into unmapped code and cannot be
# named. A preloaded dlclose that keeps libraries loaded fixes that; the
# sanitizer runtime is preloaded first, as it must come first.
no_dlclose="$build/no_dlclose.so"
printf 'int dlclose(void* handle) { (void)handle; return 0; }\n' |
  "${CC:-cc}" -shared -fPIC -O2 -x c - -o "$no_dlclose"
preload="$("${CC:-cc}" -print-file-name=libasan.so):$no_dlclose"

launcher=("$mpiexec")
if "$mpiexec" --version 2>&1 | grep -q "Open MPI\|OpenRTE"; then
  # Only the ranks get the preload; mpiexec itself is not instrumented.
  launcher+=(--oversubscribe -x ASAN_OPTIONS -x LSAN_OPTIONS -x OPENBLAS_NUM_THREADS -x OMP_NUM_THREADS
             -x "LD_PRELOAD=$preload")
else
  export LD_PRELOAD="$preload"
fi

failed=0
run() {  # run <description> <command...>
  local description="$1"
  shift
  echo "check-leaks: $description"
  local status=0
  "$@" > "$logs/$(echo "$description" | tr ' /' '__').out" 2>&1 || status=$?
  if [ "$status" != 0 ]; then
    echo "check-leaks:   exit status $status (a leak, a sanitizer error or a failed test); output in $logs" >&2
    failed=1
  fi
}
run_with_timeouts() {  # as run, for tests that time out on purpose
  LSAN_OPTIONS="suppressions=$timeouts_supp:$lsan_options" run "$@"
}

if [ -n "$unit_tests" ]; then
  run "unit tests" "$unit_tests"
fi
for n in $ranks; do
  run "operations np$n" "${launcher[@]}" -n "$n" "$build/tests/mpi/weave_operations_test" --quick
  run "random shapes np$n" "${launcher[@]}" -n "$n" "$build/tests/mpi/weave_random_shapes_test" --quick
  run_with_timeouts "errors np$n" "${launcher[@]}" -n "$n" "$build/tests/mpi/weave_errors_test"
  if [ "$n" -ge 2 ]; then
    # Late peers and absent ones: work a timeout left in flight completes
    # later, and must never touch memory that was freed.
    for scenario in late-execute late-collective absent-creation; do
      run_with_timeouts "fault $scenario np$n" "${launcher[@]}" -n "$n" "$build/tests/mpi/weave_fault_test" "$scenario"
    done
  fi
done

# --- Verdict --------------------------------------------------------------------
reports=("$logs"/asan.*)
if [ ! -e "${reports[0]}" ]; then
  echo "check-leaks: no sanitizer reports were written; nothing leaked and no errors"
else
  if grep -l "ERROR: AddressSanitizer" "${reports[@]}" > /dev/null 2>&1; then
    echo "check-leaks: AddressSanitizer errors:" >&2
    grep -h -A30 "ERROR: AddressSanitizer" "${reports[@]}" >&2
    failed=1
  fi
  if grep -l "ERROR: LeakSanitizer" "${reports[@]}" > /dev/null 2>&1; then
    echo "check-leaks: leaks:" >&2
    grep -h -A40 "ERROR: LeakSanitizer" "${reports[@]}" >&2
    failed=1
  fi
  echo "check-leaks: suppressed (inside Open MPI and its libraries only):"
  grep -h -A50 "Suppressions used:" "${reports[@]}" | grep -E "^ *[0-9]+ +[0-9]+ " |
    awk '{count[$3] += $1; bytes[$3] += $2} END {for (p in count) printf "  %-40s %6d leaks %10d bytes\n", p, count[p], bytes[p]}' |
    sort
fi

if [ "$failed" = 0 ]; then
  echo "check-leaks: PASSED (no leaks in Weave, no memory errors)"
else
  echo "check-leaks: FAILED" >&2
fi
exit "$failed"
