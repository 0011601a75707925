#!/usr/bin/env bash
# Fuzzes the C API's descriptors and plans with libFuzzer (tests/fuzz): builds
# Weave with clang in its own build directory (the library instrumented for
# the fuzzer's coverage, everything with AddressSanitizer and UBSan, which
# halts at the first undefined behaviour; CUDA, UCX, Fortran, the examples
# and the benchmarks off), then runs the target on a single MPI rank for a
# bounded time, starting from the seed corpus in tests/fuzz/corpus. Fails
# on any finding: a violated invariant, a sanitizer report, a leak, a crash,
# or an input that runs past the per-input timeout. libFuzzer saves the
# input of a finding as <build-dir>/findings/crash-* (or leak-, timeout-);
# replay it with <build-dir>/tests/fuzz/weave_fuzz_plans FILE, or with the
# seeded driver of any build (weave_fuzz_driver FILE). Inputs that reached
# new code are kept in <build-dir>/corpus for the next run.
#
# Usage: scripts/fuzz.sh [build-dir]   (default: build-fuzz)
# Environment: WEAVE_FUZZ_SECONDS (how long to fuzz, default 60),
#              WEAVE_FUZZ_SEED (default 1), WEAVE_FUZZ_CC / WEAVE_FUZZ_CXX
#              (default clang-14 / clang++-14, installed from Debian when
#              missing), WEAVE_BUILD_JOBS (default 2).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build-fuzz}"
seconds="${WEAVE_FUZZ_SECONDS:-60}"
seed="${WEAVE_FUZZ_SEED:-1}"
cc="${WEAVE_FUZZ_CC:-clang-14}"
cxx="${WEAVE_FUZZ_CXX:-clang++-14}"
say() { echo "fuzz: $*"; }

if [ -z "${WEAVE_FUZZ_CC:-}" ]; then
  # Debian 12: clang 14, and libFuzzer's runtime (libclang_rt.fuzzer).
  source "$root/scripts/packages.sh"
  weave_install_packages clang-14 libclang-rt-14-dev
fi

# --- Build --------------------------------------------------------------------
# fuzzer-no-link: coverage of the library and the case for libFuzzer; the
# target itself links -fsanitize=fuzzer (tests/fuzz/CMakeLists.txt). Static,
# so the one executable carries everything the sanitizers instrument.
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DBUILD_SHARED_LIBS=OFF \
  -DWEAVE_ENABLE_CUDA=OFF -DWEAVE_ENABLE_UCX=OFF -DWEAVE_ENABLE_FORTRAN=OFF \
  -DWEAVE_BUILD_EXAMPLES=OFF -DWEAVE_BUILD_BENCH=OFF -DWEAVE_BUILD_TESTS=ON -DWEAVE_LIBFUZZER=ON
cmake --build "$build" --parallel "${WEAVE_BUILD_JOBS:-2}" --target weave_fuzz_plans

# --- Run ------------------------------------------------------------------------
# Findings are this run's; the work corpus carries over.
rm -rf "$build/findings"
mkdir -p "$build/corpus" "$build/findings"
# allocator_may_return_null=1: a workspace too large for the machine is
# WEAVE_ERROR_OUT_OF_MEMORY, not an abort. max_allocation_size_mb=2048:
# allocations beyond 2 GiB fail the same way, before libFuzzer's malloc hook
# (whose limit is -rss_limit_mb) would report a plan's legitimately large
# workspace for a large problem (16 GiB of emulation scratch, found by a
# 15-minute run) as the fuzzer running out of memory. Leaks inside Open MPI's own
# machinery are suppressed as in the sanitizer check (scripts/lsan.supp),
# which names them from whole stacks: the slow unwinder (Open MPI has no
# frame pointers), and the launcher's dlclose (scripts/sanitizer-launcher.sh).
# The inputs set timeouts down to 1 ms, so an execute may give up on
# purpose and keep its communicators until the process ends (what
# scripts/lsan-timeouts.supp names, as for the sanitizer check's timeout
# tests); the per-input leak check still sees every allocation of Weave's.
suppressions="$build/lsan-fuzz.supp"
cat "$root/scripts/lsan.supp" "$root/scripts/lsan-timeouts.supp" > "$suppressions"
export ASAN_OPTIONS="allocator_may_return_null=1:max_allocation_size_mb=2048:detect_leaks=1:fast_unwind_on_malloc=0:malloc_context_size=48"
export LSAN_OPTIONS="suppressions=$suppressions:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# One rank under mpiexec, which launches it as the tests are launched (a
# singleton MPI_Init starts Open MPI's runtime inside the process, with its
# own allocations at exit). The ASan runtime is linked in, not preloaded.
source "$root/scripts/sanitizer-launcher.sh"
weave_sanitizer_launcher "$build" "$cc" "" ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS OPENBLAS_NUM_THREADS OMP_NUM_THREADS
say "fuzzing for $seconds s from $(find "$root/tests/fuzz/corpus" -type f | wc -l) seed inputs"
status=0
# The work corpus comes first: libFuzzer adds the inputs it finds to it, and
# never to the seeds in the repository.
"${launcher[@]}" -n 1 "$build/tests/fuzz/weave_fuzz_plans" -max_total_time="$seconds" -seed="$seed" -timeout=60 \
  -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$build/findings/" "$build/corpus" \
  "$root/tests/fuzz/corpus" > "$build/fuzz.log" 2>&1 || status=$?
grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)" "$build/fuzz.log" || true
shopt -s nullglob
findings=("$build"/findings/*)
if [ "$status" != 0 ] || [ ${#findings[@]} != 0 ]; then
  say "FAILED (exit status $status); the end of $build/fuzz.log:" >&2
  tail -60 "$build/fuzz.log" >&2
  say "findings: ${findings[*]:-none saved}" >&2
  exit 1
fi
say "PASSED: no finding in $seconds s ($(find "$build/corpus" -type f | wc -l) inputs in the work corpus)"
