#!/usr/bin/env bash
# Configures, builds and runs Weave's GPU tests (ctest label "gpu") on a
# machine with NVIDIA GPUs, then prints a summary table.
#
# Run from the repository root:   bash scripts/gpu/check.sh
#
# What the machine needs: nvidia-smi and a GPU driver, the CUDA toolkit
# (nvcc, cuBLAS), an MPI (mpirun, mpicc), cmake, ninja, a C++ compiler,
# dpkg, and NCCL (NCCL_HOME). Kokkos, OpenBLAS (with libgfortran) and
# GoogleTest come as Debian packages in .deps/debs/, unpacked into
# .deps/root/ by this script.
#
# Environment (all optional):
#   OUT              where logs and the summary go (default: <build dir>/gpu-check)
#   NCCL_HOME        NCCL's prefix, holding include/nccl.h and lib/libnccl.so*
#                    (default: the NCCL of the PyTorch virtual environment)
#   CUDA_HOME        the CUDA toolkit (default: /usr/local/cuda)
#   BUILD_DIR        build directory (default: build-gpu)
#   GPU_COUNT        use this many GPUs instead of all that nvidia-smi lists
#   CTEST_ARGS       extra ctest arguments of the gpu tests (e.g. "-R graph_capture";
#                    the Kokkos tests of a KOKKOS_CUDA_ROOT run all run)
#   KOKKOS_CUDA_ROOT a Kokkos 4.x install with its CUDA backend (lib/cmake/Kokkos,
#                    bin/nvcc_wrapper), used instead of Debian's Serial Kokkos;
#                    where the folder is missing but <folder>.tar.xz exists, the
#                    tarball (holding one top folder) is unpacked there first.
#                    Weave's C++ is then compiled with its nvcc_wrapper, the
#                    element-wise steps of device plans run on Kokkos::Cuda, and
#                    the kokkos tests and the Kokkos example (ctest label kokkos)
#                    run after the gpu tests (default build dir build-gpu-kokkos;
#                    no benchmark: GPU_BENCH=0, WEAVE_BUILD_BENCH=OFF).
#                    doc/kokkos.md says how such a Kokkos is built.
#
#   GPU_TESTS        0 to skip the gpu tests (default 1)
#   TEST_JOBS        gpu tests run this many at a time (default 1: each test
#                    has the GPUs to itself). Above 1, tests share GPUs, so
#                    the ones that fail are run again one at a time and the
#                    serial result counts (both are in ctest.log)
#   TEST_TIMEOUT     seconds one gpu test may take before ctest stops it
#                    (default 600)
#   FP8_SUPPORT      0 to skip weave-fp8-support (default 1): which scaled
#                    FP8 GEMMs cuBLASLt runs on GPU 0 (fp8-support.txt)
#   GPU_BENCH        0 to skip the benchmark (default 1): weave-bench on every
#                    GPU (bf16, tensor-parallel shapes) and, where PyTorch is
#                    installed, its fused operations on the same shapes
#   BENCH_ARGS       extra weave-bench arguments (e.g. "--shape 8192x8192x8192")
#   BENCH_SECOND_ARGS  if set, a second weave-bench run with these arguments
#   SM_BENCH         0 to skip the run that measures the SM transport against
#                    the copy engines (default 1 where there are 2 GPUs or
#                    more): weave-bench again (output bench-<N>gpu-sm.*) with
#                    SM_VARIANTS, then one trace per entry of SM_TRACES over
#                    WEAVE_TRANSPORT=sm
#   SM_VARIANTS      the variants of that run (default below: the SM transport
#                    with the direct reductions at automatic, 2 and 4 chunks,
#                    two-shot GEMM-AR, 8 and 32 CTAs, its rings, and both
#                    transports with unbounded stream-memory-op waits)
#   SM_BENCH_ARGS    extra weave-bench arguments of that run (e.g. "--ops rs,ar")
#   SM_TRACES        traced executes over the SM transport, each op:MxKxN
#                    (default "ar:8192x8192x8192 rs:8192x8192x8192")
#   FP8_BENCH        0 to skip the FP8 benchmark (default 1; doc/fp8.md):
#                    weave-bench --dtype fp8 (e4m3 A and B, row-wise scales,
#                    bf16 C) on FP8_SHAPES (output bench-<N>gpu-fp8.*), with
#                    block scales (1x128 A, 128x128 B) on FP8_BLOCK_SHAPES
#                    (bench-<N>gpu-fp8-block.*), AG-GEMM with bf16 A sent as
#                    e4m3 (--wire-type e4m3, bench-<N>gpu-fp8-wire.*) on
#                    FP8_SHAPES, and where PyTorch is installed its FP8 peers
#                    (bench/torch_peers.py --fp8, torch-<N>gpu-fp8.*); with
#                    CUBLASMP_PEER also cuBLASMp's FP8 matmuls on FP8_SHAPES
#                    (cublasmp-<N>gpu-fp8.*)
#   FP8_RUNS         which of the FP8 runs (default "rowwise block wire"; "tensor"
#                    adds tensor-wise scales, bench-<N>gpu-fp8-tensor.*, the
#                    scales cuBLASMp's FP8 peer uses; "cublaslt" and "cutlass"
#                    the row-wise run again with WEAVE_FP8_GEMM set so on every
#                    rank, bench-<N>gpu-fp8-cublaslt.* and -fp8-cutlass.*)
#   FP8_BENCH_ARGS   extra weave-bench arguments of the row-wise FP8 runs (e.g.
#                    "--variants auto/auto/0/auto/-1/WEAVE_FP8_GEMM=cutlass")
#   FP8_SHAPES       global MxKxN shapes of the FP8 runs (default
#                    "4096x8192x8192 8192x8192x8192 16384x8192x28672 16384x16384x16384")
#   FP8_BLOCK_SHAPES shapes of the block-scaled run (default: FP8_SHAPES)
#   BENCH_TIMEOUT    seconds the benchmark may take (default 300)
#   TORCH_PEERS      0 to skip PyTorch's fused operations (default 1)
#   TORCH_BF16_PEERS 0 to skip PyTorch's bf16 operations only (its FP8 ones
#                    still run with the FP8 benchmark)
#   BUILD_TARGETS    build only these targets (space-separated, e.g.
#                    "weave-bench weave_operations_device_test"); default all
#   TRACES           traced executes of the default plan, each op:MxKxN
#                    (default "ag:8192x8192x8192"), one merged Chrome trace each
#   FP8_TRACES       likewise with FP8 A and B (e4m3, row-wise scales, bf16 C;
#                    default none), outputs trace-<op>-<shape>-<N>gpu-fp8.json
#   PEER_COPY        0 to skip timing GPU-to-GPU copies alone (bench/peer_copy.py,
#                    needs PyTorch and 2 GPUs; default 1)
#   REMOTE_OUTPUT    1 to run weave-remote-output-probe (default 0): GEMMs writing
#                    their products into peer GPUs' memory against local GEMMs and
#                    copy-engine copies, on REMOTE_OUTPUT_SHAPES (default
#                    "4096x8192x8192:4 8192x8192x8192:4 16384x8192x28672:4", each
#                    MxKxN:chunks; output remote-output.txt)
#   COPY_RATE        1 to run weave-copy-rate-probe (default 0): every GPU sending
#                    to every other at once by copy engines, SM kernels and NCCL,
#                    idle and beside a GEMM, blocks of COPY_RATE_MIB (default
#                    "4 16 64") per peer; also with 2 GPUs where more are
#                    visible; output copy-rate.txt
#   BENCH_TABLE      0 to skip weave-bench's table (the traces and PyTorch's
#                    operations still run; default 1)
#   CUBLASMP_PEER    0 to skip NVIDIA cuBLASMp's tensor-parallel matmuls
#                    (weave-bench-cublasmp; default 1). Runs where .deps/peers/
#                    holds an nvidia-cublasmp-cu13 wheel (pip download --no-deps
#                    nvidia-cublasmp-cu13==0.7.0.125 -d .deps/peers: 0.7 is the
#                    last release for NCCL 2.28; 0.8 and later want NCCL >= 2.29).
#                    cuBLASMp 0.7 loads NVSHMEM 3: from NVSHMEM_LIB, else the
#                    PyTorch environment's, else .deps/peers/nvshmem-host.tar.xz
#                    (lib/libnvshmem_host.so.3 and lib/nvshmem_bootstrap_uid.so.3).
#                    Outputs cublasmp-<N>gpu.* (bf16); with FP8_BENCH also
#                    cublasmp-<N>gpu-fp8.*: e4m3 A and B with tensor-wise scales
#                    (one float32 per operand; cuBLASMp 0.7 does not document
#                    how its row-wise scale vectors are laid out), bf16 D, on
#                    FP8_SHAPES, against NCCL and a cuBLASLt FP8 GEMM.
#   CUTLASS_DIR      CUTLASS's include directory (holding cutlass/ and cute/):
#                    the row-wise scaled FP8 GEMMs then run on CUTLASS's kernel
#                    (doc/fp8.md; the gpu test cutlass_fp8_device checks they do).
#                    Default: the headers of an nvidia-cutlass wheel in
#                    .deps/peers/ where one is (pip download --no-deps
#                    nvidia-cutlass==4.2.0 -d .deps/peers), else none; "none":
#                    cuBLASLt alone even with the wheel there
#   GEMM2D_BENCH     1 to measure WEAVE_GEMM (A, B, C block-cyclic over a 2-D grid;
#                    default 0): weave-bench --ops gemm (SUMMA, sequential, GEMM
#                    alone, communication alone) in bf16 and f64 on GEMM2D_RANKS
#                    GPUs (default 2) over the grids GEMM2D_GRIDS (default
#                    "1x2,2x1") with block sizes GEMM2D_BLOCKS (default 1024), then
#                    cuBLASMp's cublasMpMatmul on the same matrices where its wheel
#                    is in .deps/peers; outputs gemm2d-<dtype>.* and
#                    cublasmp-gemm2d-<dtype>.*. Runs whether or not GPU_BENCH does.
#   GEMM2D_ARGS      extra weave-bench and weave-bench-cublasmp arguments for it
#                    (e.g. "--shape 16384x16384x16384 --iterations 20")
#   GEMM2D_TYPES     its element types (default "bf16 f64")
#   GEMM2D_PANEL_WIDTHS  panel widths (comma-separated, e.g. "1024,2048,4096,8192";
#                    default none): with GEMM2D_BENCH=1, weave-bench --ops gemm
#                    runs once more per width and type with WEAVE_PANEL_WIDTH set
#                    on every rank; outputs gemm2d-<dtype>-w<width>.{txt,json}
#                    (what the device default panel width is chosen from)
#   GEMM2D_SETTINGS  Weave settings to measure against the default (space-separated
#                    NAME=VALUE, e.g. "WEAVE_GEMM_BANDS=0 WEAVE_GEMM_BANDS=8"):
#                    weave-bench --ops gemm runs once more per setting and type with
#                    it set on every rank; outputs gemm2d-<dtype>-<name><value>.*
#                    (name lower-case, without WEAVE_)
#
#   HOST_BENCH       1 to measure the host backend on this machine's cores (default 0),
#                    HOST_RANKS ranks (default 4) with HOST_BLAS_THREADS BLAS threads
#                    each (default 4, fewer where that would leave a rank no core
#                    beside BLAS's: cores / ranks - 1, at least 1) and cores to
#                    spare (progress thread automatic):
#                    WEAVE_GEMM (weave-bench --ops gemm, the gemm-host preset, f64 and
#                    c128, a 2 x 2 grid, blocks 64 and 256) against ScaLAPACK's pdgemm
#                    where .deps/debs holds libscalapack-openmpi2.2 and
#                    libscalapack-openmpi-dev (outputs host-gemm2d-<dtype>.*); then
#                    the host preset (f64) over Open MPI's TCP transport as 2 emulated
#                    nodes with the ring, pipelined and hierarchical plans as variants
#                    (host-tcp.*). Runs whether or not GPU_BENCH does.
#   HOST_BENCH_ARGS  extra weave-bench arguments of both (e.g. "--iterations 5")
#   HOST_BENCH_PARTS which of the two run (default "gemm tcp"; "tcp": the host
#                    preset over TCP alone)
#   HOST_BENCH_LOG   WEAVE_LOG for those runs (e.g. info: every plan's description)
#   EMULATE_NODES    network, host-staged or both: also run as 2 emulated nodes
#                    (scripts/emulate-nodes.sh; 1 GPU each on 2 GPUs, 2 each
#                    where 4 GPUs or more exist): the gpu-emulated tests (the
#                    quick device and FP8 matrices and random shapes over
#                    NCCL) and weave-bench (bf16,
#                    --preset tp) with the ring and pipelined (on 2 x 2 also
#                    the hierarchical) plans as variants, then
#                    bench/emulated_targets.py on its JSON. "network": NCCL
#                    over sockets between the nodes; "host-staged":
#                    NCCL_P2P_DISABLE=1. Outputs ctest-emulated-<flavour>.log,
#                    bench-<N>gpu-emulated-<flavour>.{txt,json}. GPU_TESTS=0
#                    GPU_BENCH=0 leave only this. On one GPU the network
#                    flavour's 2 ranks share it (WEAVE_TEST_SHARE_GPUS=1):
#                    the tests, and the benchmark only with EMULATED_BENCH=1
#                    (two ranks taking turns on one GPU: communication-bound
#                    shapes only mean something); host-staged needs 2 GPUs.
#   SHARED_TESTS     1 to run the gpu-shared tests at more ranks than GPUs, up
#                    to 4, where there are fewer than 4 GPUs (default: as
#                    GPU_TESTS): the device, FP8 and random-shape matrices
#                    at 2-4 ranks sharing the GPUs, over every transport, and 2
#                    emulated nodes of 2 ranks (scripts/share-gpus.sh gives
#                    each rank its own NCCL host identity). Correctness only:
#                    the ranks' kernels take turns on a GPU. Output
#                    ctest-shared.log
#   EMULATED_TESTS   0 to skip the gpu-emulated tests (default 1)
#   EMULATED_BENCH   0 to skip the emulated benchmark (default 1)
#   EMULATED_BENCH_ARGS  its weave-bench arguments (default
#                    "--preset tp --iterations 5 --warmup 2")
#   EMULATED_BENCH_LOG   WEAVE_LOG for that benchmark (e.g. info: every plan's description)
#   EMULATED_VARIANTS    its variants (default nccl/auto/0/ring,nccl/auto/0/pipelined,
#                    and nccl/auto/0/hierarchical on 2 x 2)
#   EMULATED_DTYPES  element types of the emulated benchmark, each one run
#                    (default "bf16"; "bf16 fp8" adds FP8 e4m3 with row-wise
#                    scales and bf16 C, outputs ...-emulated-<flavour>-fp8.*)
#   EMULATED_TIMEOUT seconds each emulated benchmark may take (default 240)
#
# Exit status: 0 when every gpu test passed; 1 when a step or a test failed;
# 2 when tests were skipped although GPUs are present (the skip reason is in
# the log).
set -euo pipefail

say() { printf '[gpu-check %4ds] %s\n' "$SECONDS" "$*"; }
die() {
  printf '[gpu-check] ERROR: %s\n' "$*" >&2
  exit 1
}

if [ ! -f CMakeLists.txt ] || [ ! -d src/backends/cuda ]; then
  die "run this from the root of the Weave repository"
fi
ROOT=$(pwd)
if [ -n "${KOKKOS_CUDA_ROOT:-}" ]; then
  BUILD_DIR=${BUILD_DIR:-build-gpu-kokkos}
else
  BUILD_DIR=${BUILD_DIR:-build-gpu}
fi
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
OUT=${OUT:-$BUILD_DIR/gpu-check}
mkdir -p "$OUT"
say "logs and summary: $OUT"

# Variables that keep NCCL and friends away from NVLink multicast (NVLS).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

# --- Tools ------------------------------------------------------------------
for tool in cmake ninja mpirun dpkg nvidia-smi; do
  command -v "$tool" >/dev/null 2>&1 || die "'$tool' is not on PATH"
done
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if command -v nvcc >/dev/null 2>&1; then
  NVCC=$(command -v nvcc)
elif [ -x "$CUDA_HOME/bin/nvcc" ]; then
  NVCC="$CUDA_HOME/bin/nvcc"
else
  die "nvcc not found on PATH nor in CUDA_HOME=$CUDA_HOME"
fi
NCCL_HOME=${NCCL_HOME:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl}
[ -f "$NCCL_HOME/include/nccl.h" ] || die "no include/nccl.h under NCCL_HOME=$NCCL_HOME (set NCCL_HOME)"
ls "$NCCL_HOME"/lib/libnccl.so* >/dev/null 2>&1 || die "no lib/libnccl.so* under NCCL_HOME=$NCCL_HOME"
export NCCL_HOME

# --- GPUs -------------------------------------------------------------------
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv >"$OUT/gpus.txt" 2>&1 ||
  die "nvidia-smi cannot list the GPUs: $(cat "$OUT/gpus.txt")"
nvidia-smi topo -m >>"$OUT/gpus.txt" 2>&1 || true
DETECTED=$(nvidia-smi --query-gpu=index --format=csv,noheader | grep -c .) || DETECTED=0
GPUS=${GPU_COUNT:-$DETECTED}
[ "$GPUS" -ge 1 ] 2>/dev/null || die "no GPU found (nvidia-smi lists $DETECTED)"
# One GPU per rank; 3 ranks only where there are at least 4 GPUs.
if [ "$GPUS" -ge 4 ]; then MAX_RANKS=4; elif [ "$GPUS" -ge 2 ]; then MAX_RANKS=2; else MAX_RANKS=1; fi
say "$GPUS GPU(s): gpu tests run at up to $MAX_RANKS ranks"
sed 's/^/[gpu-check]   /' "$OUT/gpus.txt" | head -n $((GPUS + 1))

# --- Dependencies from .deps/debs ---------------------------------------------
DEBS="$ROOT/.deps/debs"
DEPS_ROOT="$ROOT/.deps/root"
for package in libtrilinos-kokkos-13.2 libtrilinos-kokkos-dev libopenblas0-pthread libopenblas-pthread-dev \
  libgfortran5 libquadmath0 libgtest-dev googletest; do
  ls "$DEBS/${package}"_*.deb >/dev/null 2>&1 || die "missing $DEBS/${package}_*.deb"
done
mkdir -p "$DEPS_ROOT"
for deb in "$DEBS"/*.deb; do
  dpkg -x "$deb" "$DEPS_ROOT" || die "cannot unpack $deb"
done
LIBDIR="$DEPS_ROOT/usr/lib/x86_64-linux-gnu"
KOKKOS_DIR="$LIBDIR/cmake/Kokkos"
GTEST_DIR="$LIBDIR/cmake/GTest"
BLAS_LIBRARY="$LIBDIR/openblas-pthread/libblas.so.3"
for required in "$KOKKOS_DIR/KokkosConfig.cmake" "$GTEST_DIR/GTestConfig.cmake" "$BLAS_LIBRARY" \
  "$LIBDIR/libgfortran.so.5"; do
  [ -e "$required" ] || die "unpacking .deps/debs did not give $required"
done
say "dependencies unpacked into $DEPS_ROOT"

# --- CUTLASS's headers (row-wise scaled FP8 GEMMs, doc/fp8.md) --------------------
CUTLASS_ARGS=()
if [ -z "${CUTLASS_DIR:-}" ]; then
  cutlass_wheel=$(ls "$ROOT"/.deps/peers/nvidia_cutlass-*.whl 2>/dev/null | sort | tail -n 1 || true)
  if [ -n "$cutlass_wheel" ]; then
    if [ ! -f "$DEPS_ROOT/cutlass/cutlass_library/source/include/cutlass/cutlass.h" ]; then
      python3 -m zipfile -e "$cutlass_wheel" "$DEPS_ROOT/cutlass" || die "cannot unpack $cutlass_wheel"
    fi
    CUTLASS_DIR="$DEPS_ROOT/cutlass/cutlass_library/source/include"
  fi
fi
if [ -n "${CUTLASS_DIR:-}" ] && [ "$CUTLASS_DIR" != "none" ]; then
  CUTLASS_ARGS=(-DWEAVE_CUTLASS_DIR="$CUTLASS_DIR")
  say "CUTLASS headers from $CUTLASS_DIR: row-wise scaled FP8 GEMMs on CUTLASS's kernel"
fi

# --- A CUDA Kokkos instead of Debian's Serial one (KOKKOS_CUDA_ROOT) -----------------
KOKKOS_ARGS=()
if [ -n "${KOKKOS_CUDA_ROOT:-}" ]; then
  case "$KOKKOS_CUDA_ROOT" in /*) ;; *) KOKKOS_CUDA_ROOT="$ROOT/$KOKKOS_CUDA_ROOT" ;; esac
  if [ ! -d "$KOKKOS_CUDA_ROOT" ] && [ -f "$KOKKOS_CUDA_ROOT.tar.xz" ]; then
    mkdir -p "$KOKKOS_CUDA_ROOT"
    tar -xJf "$KOKKOS_CUDA_ROOT.tar.xz" -C "$KOKKOS_CUDA_ROOT" --strip-components=1 ||
      die "cannot unpack $KOKKOS_CUDA_ROOT.tar.xz"
  fi
  KOKKOS_DIR=$(dirname "$(ls "$KOKKOS_CUDA_ROOT"/lib*/cmake/Kokkos/KokkosConfig.cmake 2>/dev/null | head -n 1)")
  [ -f "$KOKKOS_DIR/KokkosConfig.cmake" ] || die "no lib/cmake/Kokkos/KokkosConfig.cmake under KOKKOS_CUDA_ROOT=$KOKKOS_CUDA_ROOT"
  grep -q "Kokkos_DEVICES .*CUDA" "$KOKKOS_DIR/KokkosConfigCommon.cmake" || die "the Kokkos in $KOKKOS_CUDA_ROOT has no CUDA backend"
  [ -x "$KOKKOS_CUDA_ROOT/bin/nvcc_wrapper" ] || die "no bin/nvcc_wrapper under KOKKOS_CUDA_ROOT=$KOKKOS_CUDA_ROOT"
  # nvcc_wrapper calls the nvcc on PATH.
  export PATH="$(dirname "$NVCC"):$PATH"
  # The benchmark (CLI11, nlohmann-json through nvcc) is left out: this run
  # is about the tests and the example on Kokkos' CUDA backend.
  KOKKOS_ARGS=(-DCMAKE_CXX_COMPILER="$KOKKOS_CUDA_ROOT/bin/nvcc_wrapper" -DWEAVE_BUILD_BENCH=OFF)
  GPU_BENCH=0
  export LD_LIBRARY_PATH="$(dirname "$KOKKOS_DIR")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  say "Kokkos with CUDA from $KOKKOS_CUDA_ROOT ($(grep -o "Kokkos_DEVICES .*)" "$KOKKOS_DIR/KokkosConfigCommon.cmake"))"
fi

# ScaLAPACK from .deps/debs (optional): the benchmark's pdgemm peer on the host.
SCALAPACK_ARGS=()
if [ -e "$LIBDIR/libscalapack-openmpi.so" ]; then
  SCALAPACK_ARGS=(-DWEAVE_SCALAPACK_LIBRARIES="$LIBDIR/libscalapack-openmpi.so")
fi

# The unpacked libraries, NCCL and CUDA, for the linker and for the tests.
export LD_LIBRARY_PATH="$LIBDIR:$LIBDIR/openblas-pthread:$NCCL_HOME/lib:$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# --- cuBLASMp, a peer measured by the benchmark (optional) ------------------------
PEERS="$ROOT/.deps/peers"
# Empty unless this run measures cuBLASMp: a build directory configured by an
# earlier run with the peer would otherwise keep it in CMake's cache and need
# the unpacked wheel that this run does not unpack.
CUBLASMP_ARGS=(-DWEAVE_BENCH_CUBLASMP_ROOT=)
CUBLASMP_LIBS=""
if [ "${CUBLASMP_PEER:-1}" = 1 ] && { [ "${GPU_BENCH:-1}" = 1 ] || [ "${GEMM2D_BENCH:-0}" = 1 ]; } &&
  ls "$PEERS"/nvidia_cublasmp_cu13-*.whl >/dev/null 2>&1; then
  wheel=$(ls "$PEERS"/nvidia_cublasmp_cu13-*.whl | tail -n 1)
  python3 -m zipfile -e "$wheel" "$PEERS/root" || die "cannot unpack $wheel"
  CUBLASMP_ARGS=(-DWEAVE_BENCH_CUBLASMP_ROOT="$PEERS/root/nvidia/cublasmp/cu13")
  CUBLASMP_LIBS="$PEERS/root/nvidia/cublasmp/cu13/lib"
  NVSHMEM_LIB=${NVSHMEM_LIB:-$(dirname "$NCCL_HOME")/nvshmem/lib}
  if ! ls "$NVSHMEM_LIB"/libnvshmem_host.so.3 >/dev/null 2>&1 && [ -f "$PEERS/nvshmem-host.tar.xz" ]; then
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$PEERS/nvshmem-host.tar.xz" "$PEERS/root/nvshmem" || die "cannot unpack nvshmem-host.tar.xz"
    NVSHMEM_LIB="$PEERS/root/nvshmem/lib"
  fi
  ls "$NVSHMEM_LIB"/libnvshmem_host.so.3 >/dev/null 2>&1 && CUBLASMP_LIBS="$CUBLASMP_LIBS:$NVSHMEM_LIB"
  say "cuBLASMp peer from $(basename "$wheel"); libraries: $CUBLASMP_LIBS"
fi

# --- Configure and build ---------------------------------------------------------
# Every rank gets the variables above (Open MPI: -x) and may run as root.
FORWARDED=(NCCL_NVLS_ENABLE TORCH_SYMM_MEM_DISABLE_MULTICAST NVSHMEM_DISABLE_NVLS LD_LIBRARY_PATH)
# FP8 as the tensor-parallel codes run it (the FP8 table, its traces and the
# emulated FP8 run): e4m3 A and B with row-wise scales, bf16 C.
FP8_TABLE_ARGS=(--dtype fp8 --scales rowwise)
PREFLAGS="--allow-run-as-root;--bind-to;none"
for variable in "${FORWARDED[@]}"; do
  PREFLAGS="$PREFLAGS;-x;$variable"
done
say "configuring in $BUILD_DIR"
if ! cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CUDA_COMPILER="$NVCC" \
  -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES:-90}" \
  -DWEAVE_ENABLE_CUDA=ON \
  -DWEAVE_ENABLE_NCCL=ON \
  -DWEAVE_ENABLE_FORTRAN=OFF \
  -DNCCL_HOME="$NCCL_HOME" \
  -DKokkos_DIR="$KOKKOS_DIR" \
  -DGTest_DIR="$GTEST_DIR" \
  -DBLAS_LIBRARIES="$BLAS_LIBRARY" \
  -DWEAVE_GPU_TEST_MAX_RANKS="$MAX_RANKS" \
  -DWEAVE_TEST_TIMEOUT="${TEST_TIMEOUT:-600}" \
  -DMPIEXEC_PREFLAGS="$PREFLAGS" \
  "${KOKKOS_ARGS[@]}" \
  "${CUBLASMP_ARGS[@]}" \
  "${SCALAPACK_ARGS[@]}" \
  "${CUTLASS_ARGS[@]}" \
  >"$OUT/configure.log" 2>&1; then
  tail -n 30 "$OUT/configure.log" >&2
  die "configure failed (full log: $OUT/configure.log)"
fi
grep -E "Weave .*features" "$OUT/configure.log" | sed 's/^-- /[gpu-check] /' || true
grep -E "features " "$OUT/configure.log" | grep -q ",cuda" && grep -E "features " "$OUT/configure.log" | grep -q ",nccl" ||
  die "the build lacks the cuda or the nccl feature (see $OUT/configure.log)"
if [ -n "${KOKKOS_CUDA_ROOT:-}" ]; then
  grep -q "features .*kokkos-[0-9.]*-cuda" "$OUT/configure.log" || die "the build does not use Kokkos' CUDA backend (see $OUT/configure.log)"
fi

JOBS=$(nproc 2>/dev/null || echo 4)
say "building with $JOBS jobs"
BUILD_TARGET_ARGS=()
for target in ${BUILD_TARGETS:-}; do BUILD_TARGET_ARGS+=(--target "$target"); done
if ! cmake --build "$BUILD_DIR" -j "$JOBS" "${BUILD_TARGET_ARGS[@]}" >"$OUT/build.log" 2>&1; then
  grep -E "error|FAILED" "$OUT/build.log" | head -n 30 >&2 || true
  die "build failed (full log: $OUT/build.log)"
fi
WARNINGS=$(grep -c "warning" "$OUT/build.log" || true)
say "build done ($WARNINGS warning lines in $OUT/build.log)"

# --- What cuBLASLt's FP8 GEMMs take on this GPU ------------------------------------
if [ "${FP8_SUPPORT:-1}" = 1 ] && [ -x "$BUILD_DIR/bench/weave-fp8-support" ]; then
  CUDA_VISIBLE_DEVICES=0 timeout 150 "$BUILD_DIR/bench/weave-fp8-support" >"$OUT/fp8-support.txt" 2>&1 ||
    say "weave-fp8-support failed (see $OUT/fp8-support.txt)"
  say "FP8 support on GPU 0: $(tail -n 1 "$OUT/fp8-support.txt") ($OUT/fp8-support.txt)"
fi

# --- Benchmark -------------------------------------------------------------------
# Weave against the GEMM alone, the communication alone and the sequential
# baseline, and PyTorch's fused operations on the same shapes, in one run.
run_bench() {
  local launcher=(mpirun -np "$GPUS" --allow-run-as-root --oversubscribe --bind-to none)
  for variable in "${FORWARDED[@]}"; do launcher+=(-x "$variable"); done
  local budget=${BENCH_TIMEOUT:-300}
  say "benchmark on $GPUS GPU(s) (budget ${budget} s)"
  # weave-bench on the tensor-parallel shapes; $1: suffix of its output files.
  bench_tp() {
    local suffix=$1
    shift
    timeout "$budget" "${launcher[@]}" "$BUILD_DIR/bench/weave-bench" --backend cuda --dtype bf16 --preset tp \
      --json "$OUT/bench-${GPUS}gpu$suffix.json" "$@" 2>&1 | tee "$OUT/bench-${GPUS}gpu$suffix.txt"
  }
  if [ "${BENCH_TABLE:-1}" = 1 ]; then
    # shellcheck disable=SC2086
    bench_tp "" ${BENCH_ARGS:-} || say "weave-bench failed or ran out of time"
  fi
  # A second benchmark run with other options (e.g. 16-bit partial sums).
  if [ -n "${BENCH_SECOND_ARGS:-}" ]; then
    # shellcheck disable=SC2086
    bench_tp -second $BENCH_SECOND_ARGS || say "second weave-bench run failed or ran out of time"
  fi
  # The SM transport against the copy engines (doc/performance.md says what
  # each variant decides): the default plan (copy engines) and each variant
  # take turns within every iteration.
  if [ "${SM_BENCH:-1}" = 1 ] && [ "$GPUS" -ge 2 ]; then
    local sm_variants=${SM_VARIANTS:-sm/auto/0/direct,sm/auto/2/direct,sm/auto/4/direct,sm/auto/0/direct/0/WEAVE_ALL_REDUCE=two_shot,sm/auto/0/direct/0/WEAVE_SM_TRANSPORT_CTAS=8,sm/auto/0/direct/0/WEAVE_SM_TRANSPORT_CTAS=32,sm/auto/0,sm/auto/0/direct/0/WEAVE_DEVICE_WAIT=stream,copy_engine/auto/0/auto/0/WEAVE_DEVICE_WAIT=stream}
    # shellcheck disable=SC2086
    bench_tp -sm --variants "$sm_variants" ${SM_BENCH_ARGS:-} || say "SM transport weave-bench run failed or ran out of time"
  fi
  # FP8: weave-bench with FP8 A and B (row-wise scales, then block scales),
  # bf16 A sent as e4m3, and PyTorch's FP8 operations on the same shapes.
  if [ "${FP8_BENCH:-1}" = 1 ]; then
    bench_fp8() {
      local suffix=$1
      shift
      timeout "$budget" "${launcher[@]}" "$BUILD_DIR/bench/weave-bench" --backend cuda \
        --json "$OUT/bench-${GPUS}gpu$suffix.json" "$@" 2>&1 | tee "$OUT/bench-${GPUS}gpu$suffix.txt"
    }
    local fp8_shapes=() block_shapes=() shape
    local default_shapes="4096x8192x8192 8192x8192x8192 16384x8192x28672 16384x16384x16384"
    for shape in ${FP8_SHAPES:-$default_shapes}; do fp8_shapes+=(--shape "$shape"); done
    for shape in ${FP8_BLOCK_SHAPES:-${FP8_SHAPES:-$default_shapes}}; do block_shapes+=(--shape "$shape"); done
    local runs=" ${FP8_RUNS:-rowwise block wire} "
    if [[ "$runs" == *" rowwise "* ]]; then
      # shellcheck disable=SC2086
      bench_fp8 -fp8 "${FP8_TABLE_ARGS[@]}" "${fp8_shapes[@]}" ${FP8_BENCH_ARGS:-} ||
        say "FP8 weave-bench failed or ran out of time"
    fi
    # The same with every FP8 GEMM on one kernel (WEAVE_FP8_GEMM on every
    # rank): cuBLASLt's, or CUTLASS's where the build has it.
    local kernel
    for kernel in cublaslt cutlass; do
      if [[ "$runs" == *" $kernel "* ]]; then
        local all_launcher=("${launcher[@]}")
        launcher+=(-x WEAVE_FP8_GEMM)
        # shellcheck disable=SC2086
        WEAVE_FP8_GEMM=$kernel bench_fp8 -fp8-$kernel "${FP8_TABLE_ARGS[@]}" "${fp8_shapes[@]}" ${FP8_BENCH_ARGS:-} ||
          say "FP8 weave-bench with WEAVE_FP8_GEMM=$kernel failed or ran out of time"
        launcher=("${all_launcher[@]}")
      fi
    done
    # Tensor-wise scales: what cuBLASMp's FP8 peer runs (below).
    if [[ "$runs" == *" tensor "* ]]; then
      bench_fp8 -fp8-tensor --dtype fp8 --scales tensor "${fp8_shapes[@]}" ||
        say "tensor-scaled FP8 weave-bench failed or ran out of time"
    fi
    if [[ "$runs" == *" block "* ]]; then
      bench_fp8 -fp8-block --dtype fp8 --scales block "${block_shapes[@]}" ||
        say "block-scaled FP8 weave-bench failed or ran out of time"
    fi
    if [[ "$runs" == *" wire "* ]]; then
      bench_fp8 -fp8-wire --dtype bf16 --wire-type e4m3 --ops ag "${fp8_shapes[@]}" ||
        say "e4m3-wire weave-bench failed or ran out of time"
    fi
    if [ "${TORCH_PEERS:-1}" = 1 ] && python3 -c "import torch.distributed._symmetric_memory" >/dev/null 2>&1; then
      timeout "$budget" "${launcher[@]}" -x PYTHONUNBUFFERED=1 python3 "$ROOT/bench/torch_peers.py" --fp8 \
        "${fp8_shapes[@]}" --json "$OUT/torch-${GPUS}gpu-fp8.json" 2>&1 | tee "$OUT/torch-${GPUS}gpu-fp8.txt" ||
        say "PyTorch FP8 peers failed or ran out of time"
    fi
  fi
  # One traced execute of the default plan per entry of TRACES (and over the
  # SM transport per entry of SM_TRACES), merged over ranks.
  trace_run() {
    local entry=$1 suffix=$2
    shift 2
    local op=${entry%%:*} shape=${entry#*:} type_args=(--dtype bf16)
    if [ "$suffix" = -fp8 ]; then type_args=("${FP8_TABLE_ARGS[@]}"); fi
    rm -f "$OUT"/trace-rank*.json
    timeout 120 "${launcher[@]}" "$@" "$BUILD_DIR/bench/weave-bench" --backend cuda "${type_args[@]}" --ops "$op" \
      --shape "$shape" --iterations 5 --warmup 2 --trace "$OUT/trace-rank%r.json" 2>&1 | sed "s/^/[trace $entry$suffix] /" &&
      python3 "$ROOT/bench/merge_traces.py" "$OUT"/trace-rank*.json -o "$OUT/trace-$op-$shape-${GPUS}gpu$suffix.json" &&
      rm -f "$OUT"/trace-rank*.json || say "trace run $entry$suffix failed"
  }
  local entry
  for entry in ${TRACES:-ag:8192x8192x8192}; do trace_run "$entry" ""; done
  for entry in ${FP8_TRACES:-}; do trace_run "$entry" "-fp8"; done
  if [ "${SM_BENCH:-1}" = 1 ] && [ "$GPUS" -ge 2 ]; then
    for entry in ${SM_TRACES:-ar:8192x8192x8192 rs:8192x8192x8192}; do
      (export WEAVE_TRANSPORT=sm && trace_run "$entry" "-sm" -x WEAVE_TRANSPORT)
    done
  fi
  # The copy engines alone (one copy to one peer, two to two peers at once),
  # to compare with the transfer times in the traces.
  if [ "${PEER_COPY:-1}" = 1 ] && [ "$GPUS" -ge 2 ] && python3 -c "import torch" >/dev/null 2>&1; then
    timeout 120 python3 "$ROOT/bench/peer_copy.py" 2>&1 | sed 's/^/[peer-copy] /' || say "peer_copy.py failed"
  fi
  if [ "${REMOTE_OUTPUT:-0}" = 1 ] && [ "$GPUS" -ge 2 ] && [ -x "$BUILD_DIR/bench/weave-remote-output-probe" ]; then
    for entry in ${REMOTE_OUTPUT_SHAPES:-4096x8192x8192:4 8192x8192x8192:4 16384x8192x28672:4}; do
      shape=${entry%%:*}
      IFS=x read -r pm pk pn <<<"$shape"
      CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((GPUS - 1))) timeout 120 "$BUILD_DIR/bench/weave-remote-output-probe" \
        "$pm" "$pk" "$pn" "${entry##*:}" 2>&1 |
        tee -a "$OUT/remote-output.txt" || say "weave-remote-output-probe $entry failed"
    done
  fi
  if [ "${COPY_RATE:-0}" = 1 ] && [ "$GPUS" -ge 2 ] && [ -x "$BUILD_DIR/bench/weave-copy-rate-probe" ]; then
    local visible
    for visible in $(seq -s, 0 $((GPUS - 1))) $([ "$GPUS" -gt 2 ] && echo 0,1); do
      CUDA_VISIBLE_DEVICES=$visible timeout 120 "$BUILD_DIR/bench/weave-copy-rate-probe" ${COPY_RATE_MIB:-4 16 64} 2>&1 |
        tee -a "$OUT/copy-rate.txt" || say "weave-copy-rate-probe on GPUs $visible failed"
    done
  fi
  if [ "${TORCH_PEERS:-1}" != 1 ] || [ "${TORCH_BF16_PEERS:-1}" != 1 ]; then
    say "PyTorch's bf16 peers skipped (TORCH_PEERS=0 or TORCH_BF16_PEERS=0)"
  elif python3 -c "import torch.distributed._symmetric_memory" >/dev/null 2>&1; then
    timeout "$budget" "${launcher[@]}" -x PYTHONUNBUFFERED=1 python3 "$ROOT/bench/torch_peers.py" \
      --json "$OUT/torch-${GPUS}gpu.json" 2>&1 | tee "$OUT/torch-${GPUS}gpu.txt" || say "PyTorch peers failed or ran out of time"
  else
    say "PyTorch with symmetric memory not found: no peer measurements"
  fi
  if [ -x "$BUILD_DIR/bench/weave-bench-cublasmp" ] && [ -n "$CUBLASMP_LIBS" ]; then
    LD_LIBRARY_PATH="$CUBLASMP_LIBS:$LD_LIBRARY_PATH" timeout "$budget" "${launcher[@]}" \
      "$BUILD_DIR/bench/weave-bench-cublasmp" --json "$OUT/cublasmp-${GPUS}gpu.json" 2>&1 |
      tee "$OUT/cublasmp-${GPUS}gpu.txt" || say "cuBLASMp peer failed or ran out of time"
    # FP8 on the FP8 table's shapes, tensor-wise scales (that table's are
    # row-wise: cuBLASMp's row-wise layout is not documented).
    if [ "${FP8_BENCH:-1}" = 1 ]; then
      LD_LIBRARY_PATH="$CUBLASMP_LIBS:$LD_LIBRARY_PATH" timeout "$budget" "${launcher[@]}" \
        "$BUILD_DIR/bench/weave-bench-cublasmp" --dtype fp8 --scales tensor "${fp8_shapes[@]}" \
        --json "$OUT/cublasmp-${GPUS}gpu-fp8.json" 2>&1 | tee "$OUT/cublasmp-${GPUS}gpu-fp8.txt" ||
        say "cuBLASMp FP8 peer failed or ran out of time"
    fi
  elif [ "${CUBLASMP_PEER:-1}" = 1 ]; then
    say "no cuBLASMp wheel in .deps/peers: no cuBLASMp measurements"
  fi
}

# --- WEAVE_GEMM over 2-D grids (GEMM2D_BENCH=1) -----------------------------------
# Weave's SUMMA and sequential plans, the GEMM alone and the communication
# alone (weave-bench --ops gemm), then cuBLASMp's general cublasMpMatmul on
# matrices of the same shapes, grids and blocks, each result checked.
run_gemm2d_bench() {
  local ranks=${GEMM2D_RANKS:-2}
  if [ "$GPUS" -lt "$ranks" ]; then
    say "GEMM2D_BENCH: $ranks GPUs needed, $GPUS present: skipped"
    return
  fi
  local launcher=(mpirun -np "$ranks" --allow-run-as-root --oversubscribe --bind-to none)
  for variable in "${FORWARDED[@]}"; do launcher+=(-x "$variable"); done
  local budget=${BENCH_TIMEOUT:-300} grids=${GEMM2D_GRIDS:-1x2,2x1} blocks=${GEMM2D_BLOCKS:-1024} dtype
  for dtype in ${GEMM2D_TYPES:-bf16 f64}; do
    # The defaults, then each width of GEMM2D_PANEL_WIDTHS (WEAVE_PANEL_WIDTH)
    # and each setting of GEMM2D_SETTINGS, set on every rank.
    local width widths=${GEMM2D_PANEL_WIDTHS:-} setting variant variants=(default)
    for width in ${widths//,/ }; do variants+=("WEAVE_PANEL_WIDTH=$width"); done
    for setting in ${GEMM2D_SETTINGS:-}; do variants+=("$setting"); done
    for variant in "${variants[@]}"; do
      local suffix="" set_variant=() forward_variant=()
      if [ "$variant" != default ]; then
        local name=${variant%%=*} value=${variant#*=}
        if [ "$name" = WEAVE_PANEL_WIDTH ]; then
          suffix="-w$value"
        else
          suffix="-$(printf '%s' "${name#WEAVE_}" | tr '[:upper:]' '[:lower:]')$value"
        fi
        set_variant=(env "$variant") forward_variant=(-x "$name")
      fi
      say "WEAVE_GEMM benchmark, $dtype, grids $grids, blocks $blocks, setting $variant on $ranks GPUs (budget ${budget} s)"
      # shellcheck disable=SC2086
      timeout "$budget" "${set_variant[@]}" "${launcher[@]}" "${forward_variant[@]}" "$BUILD_DIR/bench/weave-bench" \
        --backend cuda --ops gemm --dtype "$dtype" --grids "$grids" --blocks "$blocks" \
        --json "$OUT/gemm2d-$dtype$suffix.json" ${GEMM2D_ARGS:-} 2>&1 | tee "$OUT/gemm2d-$dtype$suffix.txt" ||
        say "weave-bench --ops gemm ($dtype, setting $variant) failed or ran out of time"
    done
    if [ -x "$BUILD_DIR/bench/weave-bench-cublasmp" ] && [ -n "$CUBLASMP_LIBS" ]; then
      # shellcheck disable=SC2086
      LD_LIBRARY_PATH="$CUBLASMP_LIBS:$LD_LIBRARY_PATH" timeout "$budget" "${launcher[@]}" \
        "$BUILD_DIR/bench/weave-bench-cublasmp" --ops gemm --dtype "$dtype" --grids "$grids" --blocks "$blocks" \
        --json "$OUT/cublasmp-gemm2d-$dtype.json" ${GEMM2D_ARGS:-} 2>&1 | tee "$OUT/cublasmp-gemm2d-$dtype.txt" ||
        say "cuBLASMp gemm ($dtype) failed or ran out of time"
    fi
  done
  if ! { [ -x "$BUILD_DIR/bench/weave-bench-cublasmp" ] && [ -n "$CUBLASMP_LIBS" ]; }; then
    say "no cuBLASMp wheel in .deps/peers: WEAVE_GEMM measured without cuBLASMp"
  fi
}

# --- The host backend on this machine's cores (HOST_BENCH=1) ----------------------
# Ranks with BLAS threads and cores to spare, as on a cluster node: WEAVE_GEMM
# against ScaLAPACK's pdgemm, then the host preset over TCP as 2 emulated nodes.
run_host_bench() {
  local ranks=${HOST_RANKS:-4} dtype
  # A core beside BLAS's for each rank's progress thread: on a 16-core host
  # 4 ranks of 4 BLAS threads took every core, and the same plan then timed
  # up to 45% apart from one minute to the next (doc/performance.md, 2026-11-29).
  local spare=$(( $(nproc) / ranks - 1 ))
  [ "$spare" -ge 1 ] || spare=1
  local threads=${HOST_BLAS_THREADS:-$(( spare < 4 ? spare : 4 ))}
  say "HOST_BENCH: $ranks ranks of $threads BLAS threads each on $(nproc) cores"
  local launcher=(mpirun -np "$ranks" --allow-run-as-root --oversubscribe --bind-to none -x LD_LIBRARY_PATH
    -x OPENBLAS_NUM_THREADS)
  # HOST_BENCH_LOG=info: every plan's description (the model's choice) in the output.
  if [ -n "${HOST_BENCH_LOG:-}" ]; then launcher+=(-x "WEAVE_LOG=$HOST_BENCH_LOG"); fi
  export OPENBLAS_NUM_THREADS=$threads
  grep -q "WEAVE_BENCH_SCALAPACK=1" "$BUILD_DIR/build.ninja" 2>/dev/null ||
    say "HOST_BENCH: the benchmark has no ScaLAPACK (libscalapack-openmpi debs not in .deps/debs): no pdgemm column"
  local parts=" ${HOST_BENCH_PARTS:-gemm tcp} "
  for dtype in f64 c128; do
    [[ "$parts" == *" gemm "* ]] || break
    say "host WEAVE_GEMM, $dtype, $ranks ranks x $threads BLAS threads (budget ${BENCH_TIMEOUT:-300} s)"
    # shellcheck disable=SC2086
    timeout "${BENCH_TIMEOUT:-300}" "${launcher[@]}" "$BUILD_DIR/bench/weave-bench" --backend host --ops gemm \
      --dtype "$dtype" --grids 2x2 --blocks 64,256 --json "$OUT/host-gemm2d-$dtype.json" ${HOST_BENCH_ARGS:-} 2>&1 |
      tee "$OUT/host-gemm2d-$dtype.txt" || say "host weave-bench --ops gemm ($dtype) failed or ran out of time"
  done
  if [ $((ranks % 2)) -eq 0 ] && [[ "$parts" == *" tcp "* ]]; then
    say "host preset over TCP, 2 emulated nodes of $((ranks / 2)) rank(s)"
    # shellcheck disable=SC2086
    WEAVE_EMULATED_NODES=2 timeout "${BENCH_TIMEOUT:-300}" "${launcher[@]}" -x WEAVE_EMULATED_NODES \
      --mca pml ob1 --mca btl tcp,self sh "$ROOT/scripts/emulate-nodes.sh" "$BUILD_DIR/bench/weave-bench" \
      --backend host --dtype f64 --preset host --variants mpi/auto/0/ring,mpi/auto/0/pipelined,mpi/auto/0/hierarchical \
      --json "$OUT/host-tcp.json" ${HOST_BENCH_ARGS:-} 2>&1 | tee "$OUT/host-tcp.txt" ||
      say "host weave-bench over TCP failed or ran out of time"
  fi
  unset OPENBLAS_NUM_THREADS
}

# --- Tests ---------------------------------------------------------------------
# One test at a time: each uses every GPU it needs.
CTEST_RC=0
if [ "${GPU_TESTS:-1}" = 1 ]; then
  say "running ctest -L gpu"
  # shellcheck disable=SC2086
  (cd "$BUILD_DIR" && ctest -L "^gpu$" -j "${TEST_JOBS:-1}" --output-on-failure --output-junit "$OUT/junit.xml" \
    ${CTEST_ARGS:-}) >"$OUT/ctest.log" 2>&1 || CTEST_RC=$?
  # Tests that shared their GPUs with others and failed: again, alone; the
  # summary below reads the last line of each test, so this result counts.
  if [ "$CTEST_RC" -ne 0 ] && [ "${TEST_JOBS:-1}" -gt 1 ]; then
    say "tests ran ${TEST_JOBS} at a time and some failed: running those again one at a time"
    echo "=== failed tests again, one at a time ===" >>"$OUT/ctest.log"
    CTEST_RC=0
    (cd "$BUILD_DIR" && ctest --rerun-failed -j 1 --output-on-failure) >>"$OUT/ctest.log" 2>&1 || CTEST_RC=$?
  fi
  # With a CUDA Kokkos: the Kokkos View tests and the Kokkos example, whose
  # Views then live in CUDA memory, at up to MAX_RANKS ranks (the compile-time
  # rejection tests rebuild the tree and say nothing about CUDA: left out).
  if [ -n "${KOKKOS_CUDA_ROOT:-}" ]; then
    say "running ctest -L kokkos -LE compile (Kokkos with CUDA)"
    # shellcheck disable=SC2086
    (cd "$BUILD_DIR" && ctest -L "^kokkos$" -LE "^compile$" -R "\\.np[1-$MAX_RANKS]$" -j 1 --output-on-failure \
      --output-junit "$OUT/junit-kokkos.xml") >>"$OUT/ctest.log" 2>&1 || CTEST_RC=$?
  fi
else
  say "gpu tests skipped (GPU_TESTS=0)"
  : >"$OUT/ctest.log"
fi
# More ranks than GPUs: the gpu-shared tests at GPUS+1 .. 4 ranks.
SHARED_SUMMARY=""
SHARED_RC=0
if [ "${SHARED_TESTS:-${GPU_TESTS:-1}}" = 1 ] && [ "$GPUS" -lt 4 ]; then
  say "running ctest -L gpu-shared at $((GPUS + 1))-4 ranks on $GPUS GPU(s) (ranks share GPUs: correctness only)"
  (cd "$BUILD_DIR" && ctest -L "^gpu-shared$" -R "\\.np[$((GPUS + 1))-4]$" -j 1 --output-on-failure) \
    >"$OUT/ctest-shared.log" 2>&1 || SHARED_RC=$?
  SHARED_SUMMARY="ranks sharing GPUs: $(grep -E "tests passed|tests failed" "$OUT/ctest-shared.log" | tail -n 1) (log: $OUT/ctest-shared.log)"
fi
if [ "${GPU_BENCH:-1}" = 1 ]; then run_bench; fi
if [ "${GEMM2D_BENCH:-0}" = 1 ]; then run_gemm2d_bench; fi
if [ "${HOST_BENCH:-0}" = 1 ]; then run_host_bench; fi

# --- Emulated nodes ----------------------------------------------------------------
# Two emulated nodes on this host (scripts/emulate-nodes.sh): the gpu-emulated
# tests and the benchmark, per network flavour.
EMULATED_RC=0
EMULATED_SUMMARY=""
run_emulated() {
  local network=$1 ranks=2 bench=${EMULATED_BENCH:-1}
  if [ "$GPUS" -lt 2 ]; then
    # One GPU: the two ranks of the network flavour share it (NCCL takes
    # them for two hosts; their kernels take turns), for the tests alone.
    # NCCL refuses two ranks of one host on one GPU (host-staged).
    if [ "$network" != network ]; then
      say "EMULATE_NODES: 2 emulated nodes host-staged need 2 GPUs, $GPUS present"
      return
    fi
    export WEAVE_TEST_SHARE_GPUS=1
    bench=${EMULATED_BENCH:-0}
    say "EMULATE_NODES: one GPU, shared by the 2 emulated nodes (the benchmark only where EMULATED_BENCH=1 asks:" \
      "its ranks take turns on the GPU)"
  fi
  if [ "$GPUS" -ge 4 ]; then ranks=4; fi
  export WEAVE_EMULATED_NODES=2 WEAVE_EMULATED_NETWORK=$network
  say "2 emulated nodes of $((ranks / 2)) GPU(s) each, $network"
  if [ "${EMULATED_TESTS:-1}" = 1 ]; then
    local log="$OUT/ctest-emulated-$network.log" rc=0
    (cd "$BUILD_DIR" && ctest -L "^gpu-emulated$" -R "^emulated_${network}_.*\.np${ranks}$" -j 1 --output-on-failure) \
      >"$log" 2>&1 || rc=$?
    [ "$rc" -eq 0 ] || EMULATED_RC=1
    EMULATED_SUMMARY="$EMULATED_SUMMARY
emulated $network: $(grep -E "tests passed|tests failed" "$log" | tail -n 1) (log: $log)"
  fi
  if [ "$bench" = 1 ]; then
    local variants=${EMULATED_VARIANTS:-nccl/auto/0/ring,nccl/auto/0/pipelined}
    if [ -z "${EMULATED_VARIANTS:-}" ] && [ "$ranks" -ge 4 ]; then variants="$variants,nccl/auto/0/hierarchical"; fi
    local launcher=(mpirun -np "$ranks" --allow-run-as-root --oversubscribe --bind-to none)
    for variable in "${FORWARDED[@]}" WEAVE_EMULATED_NODES WEAVE_EMULATED_NETWORK; do launcher+=(-x "$variable"); done
    if [ -n "${EMULATED_BENCH_LOG:-}" ]; then launcher+=(-x "WEAVE_LOG=$EMULATED_BENCH_LOG"); fi
    local dtype
    for dtype in ${EMULATED_DTYPES:-bf16}; do
      local name="bench-${ranks}gpu-emulated-$network" type_args=(--dtype "$dtype")
      if [ "$GPUS" -lt 2 ]; then name="bench-${ranks}ranks-1gpu-emulated-$network"; fi
      if [ "$dtype" = fp8 ]; then
        name="$name-fp8"
        type_args=("${FP8_TABLE_ARGS[@]}")
      fi
      # shellcheck disable=SC2086
      timeout "${EMULATED_TIMEOUT:-240}" "${launcher[@]}" sh "$ROOT/scripts/emulate-nodes.sh" "$BUILD_DIR/bench/weave-bench" \
        --backend cuda "${type_args[@]}" ${EMULATED_BENCH_ARGS:---preset tp --iterations 5 --warmup 2} \
        --variants "$variants" --json "$OUT/$name.json" 2>&1 | tee "$OUT/$name.txt" ||
        say "emulated weave-bench ($network, $dtype) failed or ran out of time"
      if [ -f "$OUT/$name.json" ]; then
        local staged=()
        if [ "$network" = host-staged ]; then staged=(--host-staged); fi
        python3 "$ROOT/bench/emulated_targets.py" "$OUT/$name.json" "${staged[@]}" | tee "$OUT/$name-targets.txt" || true
        EMULATED_SUMMARY="$EMULATED_SUMMARY
emulated $network $dtype benchmark: $(tail -n 1 "$OUT/$name-targets.txt") ($OUT/$name-targets.txt)"
      fi
    done
  fi
  unset WEAVE_EMULATED_NODES WEAVE_EMULATED_NETWORK WEAVE_TEST_SHARE_GPUS
}
case "${EMULATE_NODES:-}" in
  "") ;;
  network | host-staged) run_emulated "$EMULATE_NODES" ;;
  both)
    run_emulated network
    run_emulated host-staged
    ;;
  *) say "EMULATE_NODES=$EMULATE_NODES is not network, host-staged or both: nothing emulated" ;;
esac
# Every test's full output (passed ones too), for the record.
cp "$BUILD_DIR/Testing/Temporary/LastTest.log" "$OUT/LastTest.log" 2>/dev/null || true

# --- Summary -------------------------------------------------------------------
# ctest lines look like "  3/20 Test #13: graph_capture.np2 ....***Failed  2.01 sec".
SUMMARY="$OUT/summary.txt"
awk -v gpus="$GPUS" -v max_ranks="$MAX_RANKS" '
  / Test +#[0-9]+: / {
    line = $0
    sub(/.*Test +#[0-9]+: /, "", line)
    split(line, parts, " ")
    full = parts[1]
    status = line
    sub(/^[^ ]+ [. ]*(\*\*\*)?/, "", status)
    split(status, words, " ")
    status = words[1]
    if (status == "Not") status = "NotRun"
    name = full; ranks = full
    sub(/\.np[0-9]+$/, "", name)
    sub(/^.*\.np/, "", ranks)
    if (!(name in seen)) { seen[name] = 1; order[++count] = name }
    result[name, ranks] = status
    total[status]++
  }
  END {
    printf "GPU test summary (%d GPU(s), up to %d ranks)\n", gpus, max_ranks
    printf "%-44s %-9s %-9s %-9s %-9s\n", "test", "1 rank", "2 ranks", "3 ranks", "4 ranks"
    for (i = 1; i <= count; i++) {
      printf "%-44s", order[i]
      for (r = 1; r <= 4; r++) {
        s = ((order[i], r) in result) ? result[order[i], r] : "-"
        printf " %-9s", s
      }
      printf "\n"
    }
    printf "passed %d, failed %d, skipped %d, other %d\n", total["Passed"], total["Failed"], total["Skipped"],
      count_other()
  }
  function count_other(  s, n) {
    n = 0
    for (s in total) if (s != "Passed" && s != "Failed" && s != "Skipped") n += total[s]
    return n
  }
' "$OUT/ctest.log" >"$SUMMARY"

PASSED=$(grep -cE "Test +#[0-9]+: .* Passed" "$OUT/ctest.log" || true)
SKIPPED_TESTS=$(grep -cE "Test +#[0-9]+: .*Skipped" "$OUT/ctest.log" || true)
echo >>"$SUMMARY"
if [ "$CTEST_RC" -ne 0 ]; then
  echo "ctest failed (exit $CTEST_RC): see $OUT/ctest.log (failures with their output) and $OUT/LastTest.log" >>"$SUMMARY"
elif [ "$SKIPPED_TESTS" -gt 0 ]; then
  echo "$SKIPPED_TESTS test(s) skipped although $GPUS GPU(s) are present: see the SKIPPED lines in $OUT/LastTest.log" >>"$SUMMARY"
elif [ "$PASSED" -eq 0 ]; then
  echo "no gpu test ran: see $OUT/ctest.log" >>"$SUMMARY"
else
  echo "all gpu tests passed" >>"$SUMMARY"
fi
if [ -n "$SHARED_SUMMARY" ]; then
  echo "$SHARED_SUMMARY" >>"$SUMMARY"
fi
if [ -n "$EMULATED_SUMMARY" ]; then
  echo "$EMULATED_SUMMARY" >>"$SUMMARY"
fi
echo
cat "$SUMMARY"

if [ "$CTEST_RC" -ne 0 ] || [ "$EMULATED_RC" -ne 0 ] || [ "$SHARED_RC" -ne 0 ]; then exit 1; fi
if [ "${GPU_TESTS:-1}" != 1 ]; then exit 0; fi
if [ "$SKIPPED_TESTS" -gt 0 ]; then exit 2; fi
if [ "$PASSED" -eq 0 ]; then exit 1; fi
exit 0
