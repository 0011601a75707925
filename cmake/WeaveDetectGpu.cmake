# Defaults for WEAVE_ENABLE_CUDA / WEAVE_ENABLE_NCCL: on when a CUDA compiler
# and toolkit, and NCCL, are found; the user's -D always wins.
#
# Included from the top-level CMakeLists.txt before the options are declared.
# When CUDA will be built, the CUDA language is enabled here, at the top
# level, because CMake requires a language to be enabled in the highest
# directory that compiles it: the library (src/) and the GPU tests (tests/gpu)
# both compile .cu files.
#
# NCCL is looked for in the CUDA toolkit and under NCCL_HOME (a CMake
# variable or an environment variable), which may also point at the NCCL of
# a Python wheel (nvidia/nccl, which ships only libnccl.so.2).
include(CheckLanguage)
include(WeaveFindTransports)
set(WEAVE_CUDA_FOUND_DEFAULT OFF)
set(WEAVE_NCCL_FOUND_DEFAULT OFF)

if(NOT DEFINED WEAVE_ENABLE_CUDA OR WEAVE_ENABLE_CUDA)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    find_package(CUDAToolkit QUIET)
    if(CUDAToolkit_FOUND)
      set(WEAVE_CUDA_FOUND_DEFAULT ON)
      weave_find_nccl(WEAVE_NCCL_INCLUDE_DIR WEAVE_NCCL_LIBRARY)
      if(WEAVE_NCCL_INCLUDE_DIR AND WEAVE_NCCL_LIBRARY)
        set(WEAVE_NCCL_FOUND_DEFAULT ON)
      endif()
    endif()
  endif()
endif()

# Whether CUDA will be built: the user's choice, else what was found.
if(DEFINED WEAVE_ENABLE_CUDA)
  set(_weave_cuda_wanted ${WEAVE_ENABLE_CUDA})
else()
  set(_weave_cuda_wanted ${WEAVE_CUDA_FOUND_DEFAULT})
endif()

if(_weave_cuda_wanted)
  if(NOT CMAKE_CUDA_COMPILER OR NOT CUDAToolkit_FOUND)
    message(FATAL_ERROR "WEAVE_ENABLE_CUDA is ON but no CUDA compiler and toolkit were found: put nvcc on PATH "
                        "or set CMAKE_CUDA_COMPILER (e.g. -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc), "
                        "or configure with -DWEAVE_ENABLE_CUDA=OFF")
  endif()
  # sm_80 (A100) and sm_90 (H100/H200) unless the user chose (-D or CUDAARCHS).
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
    set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "CUDA architectures Weave is compiled for")
  endif()
  # One CUDA runtime per process: the shared one, which the application, NCCL
  # and cuBLASLt also use (the static default would put a second runtime,
  # with its own device state, inside libweave).
  if(NOT DEFINED CMAKE_CUDA_RUNTIME_LIBRARY)
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  endif()
  enable_language(CUDA)
endif()
unset(_weave_cuda_wanted)
