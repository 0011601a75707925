#!/usr/bin/env bash
# Sourced by check-sanitizers.sh and fuzz.sh.
#
# weave_sanitizer_launcher BUILD-DIR C-COMPILER RUNTIME VARIABLE...
# sets the array `launcher`: mpiexec (MPIEXEC) with what sanitized ranks
# need. MPI_Finalize unloads Open MPI's components (dlclose) before
# LeakSanitizer looks at the stacks, which then point into unmapped code and
# cannot be named (nor matched by scripts/lsan.supp). A preloaded dlclose
# that keeps libraries loaded fixes that; RUNTIME, the sanitizer runtime of
# a shared build (or empty), is preloaded before it, as it must come first.
# With Open MPI only the ranks get the preload and the VARIABLEs (mpiexec
# itself is not instrumented), and more ranks than cores are allowed.
weave_sanitizer_launcher() {
  local build="$1" cc="$2" runtime="$3"
  shift 3
  local no_dlclose="$build/no_dlclose.so"
  printf 'int dlclose(void* handle) { (void)handle; return 0; }\n' | "$cc" -shared -fPIC -O2 -x c - -o "$no_dlclose"
  local preload="$no_dlclose"
  [ -n "$runtime" ] && preload="$runtime:$no_dlclose"
  launcher=("${MPIEXEC:-mpiexec}")
  if "${launcher[0]}" --version 2>&1 | grep -q "Open MPI\|OpenRTE"; then
    launcher+=(--oversubscribe)
    local variable
    for variable in "$@"; do launcher+=(-x "$variable"); done
    launcher+=(-x "LD_PRELOAD=$preload")
  else
    export LD_PRELOAD="$preload"
  fi
}
