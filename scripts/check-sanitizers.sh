#!/usr/bin/env bash
# Sanitizer check: builds Weave with AddressSanitizer (which includes
# LeakSanitizer) and UndefinedBehaviorSanitizer in its own build directory
# (gcc, -fsanitize=address,undefined -fno-sanitize-recover=undefined, the
# CUDA backend off), then runs the unit tests and, at 1 and 2 ranks, every
# host program of the MPI suite, with the arguments and environment ctest
# gives it (the quick form of the long ones):
#   - operations, FP8 operations, random shapes (--quick), and at 2 ranks
#     operations again with WEAVE_OWN_PRODUCT=accumulates and with
#     WEAVE_ALL_GATHER_LAG=1, FP8 operations with WEAVE_OWN_PRODUCT=accumulates
#     (other schedules, other buffers);
#   - WEAVE_GEMM (SUMMA and the redistribution of operands into C's layout),
#     real and complex types (--quick), and at 2 ranks over UCX;
#   - the nodes and model tests (WEAVE_NODE, the calibration);
#   - the ABI programs: structs read by their struct_size, whose bytes past
#     it must never be read, and a program built with 0.1's header;
#   - the observe program (WEAVE_LOG, WEAVE_TRACE and its trace files, the
#     invalid values);
#   - errors in full over MPI and over UCX, the UCX plan test, and with UCX
#     its transport test and its progress check (2 ranks);
#   - the fault scenarios at 2 ranks (late and absent peers, a plan kept
#     after a timeout, a slow GEMM, the waiting warning);
# and the seeded descriptor fuzzer (tests/fuzz). The build, with the CUDA
# backend off, is also checked to load without any CUDA library (the
# README's CPU-only build). Left out, for time: 3 and
# more ranks (WEAVE_SANITIZER_RANKS="1 2 3 4" adds them), the runs over TCP
# (Open MPI's transport under the same Weave code) and the killed rank
# (killed_rank.sh under mpirun's --enable-recovery), which stay ctest's.
# Every process writes its reports to the log directory; the
# check fails on any AddressSanitizer error, any undefined behaviour
# (UBSan halts the process at the first one) and any leak that
# LeakSanitizer reports.
#
# Leaks inside Open MPI's own machinery (what MPI_Init sets up for the
# process, its PMIx client, messages its progress engine buffered) are
# suppressed by scripts/lsan.supp, which names only Open MPI functions that
# Weave never calls; the suppressions that were used are printed at the
# end. Anything else, in particular any leak allocated by Weave, fails. The
# runs that time out on purpose (errors, the fault scenarios of late and
# absent peers) add scripts/lsan-timeouts.supp: the communicators a
# timed-out wait keeps until exit, on purpose; the other runs do not, so a communicator Weave forgot to
# free in normal use fails the check. Undefined behaviour has no suppressions: it is fixed where it is found.
#
# Usage: scripts/check-sanitizers.sh [build-dir]   (default: build-sanitize)
# Environment: WEAVE_SANITIZER_RANKS (default "1 2"), WEAVE_FUZZ_RUNS (inputs
#              of the seeded fuzzer per rank count, default 3000), MPIEXEC
#              (default mpiexec), CMAKE_ARGS (extra configure arguments),
#              WEAVE_BUILD_JOBS (default 2).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build-sanitize}"
ranks="${WEAVE_SANITIZER_RANKS:-${WEAVE_LEAK_RANKS:-1 2}}"
fuzz_runs="${WEAVE_FUZZ_RUNS:-3000}"
logs="$build/sanitizer-logs"
say() { echo "check-sanitizers: $*"; }

# --- Build --------------------------------------------------------------------
# Sanitizer flags on the command line only; the project's CMake is unchanged.
# Fortran, the examples and the benchmarks stay out: they add nothing here
# and Fortran would need the sanitizer on its own compiler too.
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="${CC:-gcc}" -DCMAKE_CXX_COMPILER="${CXX:-g++}" \
  -DCMAKE_C_FLAGS="$sanitize" -DCMAKE_CXX_FLAGS="$sanitize" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DWEAVE_ENABLE_CUDA=OFF -DWEAVE_ENABLE_FORTRAN=OFF -DWEAVE_BUILD_EXAMPLES=OFF -DWEAVE_BUILD_BENCH=OFF \
  -DWEAVE_BUILD_TESTS=ON \
  ${CMAKE_ARGS:-}
ucx=0
grep -q "^WEAVE_ENABLE_UCX:BOOL=ON" "$build/CMakeCache.txt" && ucx=1
targets=(weave weave_operations_test weave_fp8_operations_test weave_random_shapes_test weave_gemm_test weave_nodes_test
         weave_model_test weave_sized_structs_test weave_legacy_abi_test weave_observe_program weave_errors_test
         weave_ucx_plan_test weave_fault_test weave_fuzz_driver)
[ "$ucx" = 1 ] && targets+=(weave_ucx_transport_test weave_ucx_progress_check)
if cmake --build "$build" --target help 2>/dev/null | grep -q weave_unit_tests; then
  targets+=(weave_unit_tests)
  unit_tests="$build/tests/unit/weave_unit_tests"
else
  unit_tests=""
  say "GoogleTest not found, the unit tests are not checked" >&2
fi
cmake --build "$build" --parallel "${WEAVE_BUILD_JOBS:-2}" --target "${targets[@]}"

# This build is also the README's CPU-only one (-DWEAVE_ENABLE_CUDA=OFF,
# where the CUDA toolkit is installed): libweave must then need no CUDA
# library to load, or CPU nodes without CUDA could not use it.
cpu_only_failed=0
library="$(find "$build/src" -maxdepth 1 -name 'libweave.so.*' -type f | head -1)"
if [ -z "$library" ]; then
  say "the CPU-only check found no libweave.so in $build/src" >&2
  cpu_only_failed=1
elif ldd "$library" | grep -Ei "libcuda|libcudart|libcublas|libnccl" >&2; then
  say "the CPU-only build's $library needs the CUDA libraries above" >&2
  cpu_only_failed=1
else
  say "CPU-only build: $(basename "$library") needs no CUDA library"
fi

# --- Run ------------------------------------------------------------------------
rm -rf "$logs"
mkdir -p "$logs"
# fast_unwind_on_malloc=0: Open MPI is built without frame pointers, so only
# the slow unwinder gives whole stacks (the suppressions match on them).
# allocator_may_return_null=1: a workspace too large for the machine is
# WEAVE_ERROR_OUT_OF_MEMORY (the fuzzer asks for such plans), not an abort.
export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0:malloc_context_size=48:allocator_may_return_null=1"
ASAN_OPTIONS+=":log_path=$logs/asan:log_exe_name=1"
lsan_options="print_suppressions=1:report_objects=0"
export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp:$lsan_options"
timeouts_supp="$logs/lsan-with-timeouts.supp"
cat "$root/scripts/lsan.supp" "$root/scripts/lsan-timeouts.supp" > "$timeouts_supp"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan:log_exe_name=1"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# UCX on one machine: shared memory and self (as the ucx tests use it).
export UCX_TLS=self,sysv,posix UCX_WARN_UNUSED_ENV_VARS=n UCX_LOG_LEVEL=error

source "$root/scripts/sanitizer-launcher.sh"
weave_sanitizer_launcher "$build" "${CC:-cc}" "$("${CC:-cc}" -print-file-name=libasan.so)" ASAN_OPTIONS LSAN_OPTIONS \
  UBSAN_OPTIONS OPENBLAS_NUM_THREADS OMP_NUM_THREADS UCX_TLS UCX_WARN_UNUSED_ENV_VARS UCX_LOG_LEVEL

failed=$cpu_only_failed
run() {  # run <description> <command...>
  local description="$1"
  shift
  say "$description"
  local status=0
  "$@" > "$logs/$(echo "$description" | tr ' /=' '___').out" 2>&1 || status=$?
  if [ "$status" != 0 ]; then
    say "  exit status $status (a leak, a sanitizer report or a failed test); output in $logs" >&2
    failed=1
  fi
}
run_with_timeouts() {  # as run, for tests that time out on purpose
  LSAN_OPTIONS="suppressions=$timeouts_supp:$lsan_options" run "$@"
}
run_matching() {  # run_matching <pattern> <description> <command...>: passes
  # when the output matches the pattern (grep -E), whatever the exit status,
  # as ctest's PASS_REGULAR_EXPRESSION; sanitizer reports still fail.
  local pattern="$1" description="$2"
  shift 2
  say "$description"
  local out
  out="$logs/$(echo "$description" | tr ' /=' '___').out"
  "$@" > "$out" 2>&1 || true
  if ! grep -Eq "$pattern" "$out"; then
    say "  the output lacks \"$pattern\"; output in $logs" >&2
    failed=1
  fi
}

if [ -n "$unit_tests" ]; then
  run "unit tests" "$unit_tests"
fi
mpi="$build/tests/mpi"
for n in $ranks; do
  run "operations np$n" "${launcher[@]}" -n "$n" "$mpi/weave_operations_test" --quick
  if [ "$n" -ge 2 ]; then
    # The direct reductions' own GEMMs adding onto the received products, and
    # two-shot GEMM-AR's all-gather one chunk behind the reduce-scatter.
    run "operations own product accumulates np$n" "${launcher[@]}" -n "$n" -x WEAVE_OWN_PRODUCT=accumulates \
      "$mpi/weave_operations_test" --quick
    run "operations gather lag 1 np$n" "${launcher[@]}" -n "$n" -x WEAVE_ALL_GATHER_LAG=1 \
      "$mpi/weave_operations_test" --quick
  fi
  run "FP8 operations np$n" "${launcher[@]}" -n "$n" "$mpi/weave_fp8_operations_test" --quick
  if [ "$n" -ge 2 ]; then
    run "FP8 operations own product accumulates np$n" "${launcher[@]}" -n "$n" -x WEAVE_OWN_PRODUCT=accumulates \
      "$mpi/weave_fp8_operations_test"
  fi
  run "random shapes np$n" "${launcher[@]}" -n "$n" "$mpi/weave_random_shapes_test" --quick
  # WEAVE_GEMM: SUMMA's panels and the operands moved into C's layout.
  run "gemm np$n" "${launcher[@]}" -n "$n" "$mpi/weave_gemm_test" --quick
  run "gemm complex np$n" "${launcher[@]}" -n "$n" "$mpi/weave_gemm_test" --quick --types c128,c64
  run "nodes np$n" "${launcher[@]}" -n "$n" "$mpi/weave_nodes_test"
  run "model np$n" "${launcher[@]}" -n "$n" "$mpi/weave_model_test"
  # Structs read by their struct_size: what lies past it must never be read.
  run "sized structs np$n" "${launcher[@]}" -n "$n" "$build/tests/abi/weave_sized_structs_test"
  run "legacy ABI np$n" "${launcher[@]}" -n "$n" "$build/tests/abi/weave_legacy_abi_test"
  # What the environment alone shows of a program (tests/observe).
  observe="$build/tests/observe/weave_observe_program"
  if [ "$n" = 1 ]; then
    run_matching "WEAVE_LOG=verbose is not info, debug or trace" "observe log unknown np$n" \
      "${launcher[@]}" -n "$n" -x WEAVE_LOG=verbose "$observe"
    run_matching "WEAVE_TRACE_LAST=0 is not a number of executes >= 1" "observe trace last invalid np$n" \
      "${launcher[@]}" -n "$n" -x WEAVE_TRACE="$logs/unused.json" -x WEAVE_TRACE_LAST=0 "$observe"
  else
    run_matching "weave\[0\]: plan 1 execute 2: [0-9]+\.[0-9]+ ms \(GEMM-RS f64" "observe log info np$n" \
      "${launcher[@]}" -n "$n" -x WEAVE_LOG=info "$observe"
  fi
  if [ "$n" = 2 ]; then
    # The trace files, written and read back as ctest's observe.trace does.
    run "observe trace np$n" cmake -DPROGRAM="$observe" -DMPIEXEC_EXECUTABLE="${launcher[0]}" -DMPIEXEC_NUMPROC_FLAG=-n \
      "-DMPIEXEC_PREFLAGS=$(IFS='|'; echo "${launcher[*]:1}")" -DWORK_DIR="$logs/trace" \
      -P "$root/tests/observe/check_trace.cmake"
  fi
  run_with_timeouts "errors np$n" "${launcher[@]}" -n "$n" "$mpi/weave_errors_test"
  # Plans that choose UCX (descriptor or WEAVE_TRANSPORT) say so; without
  # UCX, asking for it fails as not compiled on every rank.
  run "ucx plan np$n" "${launcher[@]}" -n "$n" "$build/tests/ucx/weave_ucx_plan_test"
  if [ "$ucx" = 1 ]; then
    run_with_timeouts "errors over ucx np$n" "${launcher[@]}" -n "$n" -x WEAVE_TRANSPORT=ucx \
      "$mpi/weave_errors_test"
    if [ "$n" -ge 2 ]; then
      # SUMMA's panels over UCX's sends and receives.
      run "gemm over ucx np$n" "${launcher[@]}" -n "$n" -x WEAVE_TRANSPORT=ucx "$mpi/weave_gemm_test" --quick
      # Cancelled receives stay cancelled; executes and plans keep apart.
      run "ucx transport np$n" "${launcher[@]}" -n "$n" "$build/tests/ucx/weave_ucx_transport_test"
    fi
    if [ "$n" = 2 ]; then
      # Chunks large enough for UCX's rendezvous protocol, progressed
      # between GEMM tiles.
      run "ucx progress np$n" "${launcher[@]}" -n "$n" "$build/tests/ucx/weave_ucx_progress_check"
    fi
  fi
  if [ "$n" -ge 2 ]; then
    # Late peers and absent ones: work a timeout left in flight completes
    # later, and must never touch memory that was freed (late-kept: the
    # plan that timed out is kept, and its next executes fail at once).
    for scenario in late-execute late-kept late-collective absent-creation; do
      run_with_timeouts "fault $scenario np$n" "${launcher[@]}" -n "$n" "$mpi/weave_fault_test" "$scenario"
    done
    # A rank's own GEMM that outlasts the timeout, the one-line warning
    # while a rank waits for a late peer, and a rank in another call than
    # the others (an error at once on every rank): nothing times out, so
    # nothing may stay behind.
    for scenario in slow-gemm warning skipped-call; do
      run "fault $scenario np$n" "${launcher[@]}" -n "$n" "$mpi/weave_fault_test" "$scenario"
    done
  fi
  # After a crash, fuzz-input.np<n>.<rank> holds the input that caused it.
  run "descriptor fuzzer np$n" "${launcher[@]}" -n "$n" "$build/tests/fuzz/weave_fuzz_driver" \
    --runs "$fuzz_runs" --seed "$n" --last-input "$logs/fuzz-input.np$n" "$root/tests/fuzz/corpus"
done

# --- Verdict --------------------------------------------------------------------
shopt -s nullglob
reports=("$logs"/asan.* "$logs"/ubsan.*)
if [ ${#reports[@]} = 0 ]; then
  say "no sanitizer reports were written; nothing leaked, no memory errors, no undefined behaviour"
else
  if grep -l "ERROR: AddressSanitizer" "${reports[@]}" > /dev/null 2>&1; then
    say "AddressSanitizer errors:" >&2
    grep -h -A30 "ERROR: AddressSanitizer" "${reports[@]}" >&2
    failed=1
  fi
  if grep -l "ERROR: LeakSanitizer" "${reports[@]}" > /dev/null 2>&1; then
    say "leaks:" >&2
    grep -h -A40 "ERROR: LeakSanitizer" "${reports[@]}" >&2
    failed=1
  fi
  if grep -l "runtime error:" "${reports[@]}" > /dev/null 2>&1; then
    say "undefined behaviour:" >&2
    grep -h -A20 "runtime error:" "${reports[@]}" >&2
    failed=1
  fi
  say "suppressed leaks (inside Open MPI and its libraries only):"
  grep -h -A50 "Suppressions used:" "${reports[@]}" | grep -E "^ *[0-9]+ +[0-9]+ " |
    awk '{count[$3] += $1; bytes[$3] += $2} END {for (p in count) printf "  %-40s %6d leaks %10d bytes\n", p, count[p], bytes[p]}' |
    sort
fi

if [ "$failed" = 0 ]; then
  say "PASSED (no leaks in Weave, no memory errors, no undefined behaviour)"
else
  say "FAILED" >&2
fi
exit "$failed"
