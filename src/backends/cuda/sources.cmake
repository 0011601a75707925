# CUDA backend (included from src/CMakeLists.txt).
#
# cuBLASLt GEMM tiles and the element-wise kernels on CUDA streams. The
# host-side code is plain C++ against the CUDA runtime; only the kernel
# launcher is CUDA source. The CUDA language itself is enabled at the top
# level (cmake/WeaveDetectGpu.cmake), which also defaults the architectures
# to sm_80 and sm_90.
if(WEAVE_ENABLE_CUDA)
  target_sources(weave_objects PRIVATE
    backends/cuda/cuda_backend.cpp
    backends/cuda/cuda_check.cpp
    backends/cuda/cuda_entry.cpp
    backends/cuda/cublaslt_gemm.cpp
    backends/cuda/cutlass_fp8_gemm.cpp
    backends/cuda/epilogue_launcher.cu
    backends/cuda/gemm_tuning.cpp
    backends/cuda/kokkos_lanes.cpp
    backends/cuda/quantize_launcher.cu
    backends/cuda/scale_broadcast.cu)
  set_target_properties(weave_objects PROPERTIES
    CUDA_STANDARD 17
    CUDA_STANDARD_REQUIRED ON
    CUDA_VISIBILITY_PRESET hidden)
  target_compile_options(weave_objects PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
  weave_link_private(CUDA::cudart CUDA::cublasLt ${CMAKE_DL_LIBS})
  set(WEAVE_HAVE_CUDA 1)
  string(APPEND WEAVE_BUILD_FEATURES ",cuda")

  # FP8 GEMMs with row-wise scales from CUTLASS on sm_90
  # (cutlass_rowwise_fp8.hpp): only where CUTLASS's headers are named. The
  # kernels need sm_90a (wgmma, TMA), so they are compiled for it alone, in
  # an object library of their own whose objects go into the library and,
  # through weave_internal, into the unit tests.
  set(WEAVE_CUTLASS_DIR "" CACHE PATH
      "CUTLASS's include directory (holding cutlass/ and cute/, e.g. the nvidia-cutlass wheel's cutlass_library/source/include); empty: FP8 GEMMs on cuBLASLt alone")
  if(WEAVE_CUTLASS_DIR)
    if(NOT EXISTS "${WEAVE_CUTLASS_DIR}/cutlass/cutlass.h" OR NOT EXISTS "${WEAVE_CUTLASS_DIR}/cute/tensor.hpp")
      message(FATAL_ERROR "WEAVE_CUTLASS_DIR=${WEAVE_CUTLASS_DIR} holds no cutlass/cutlass.h and cute/tensor.hpp")
    endif()
    add_library(weave_cutlass_fp8 OBJECT backends/cuda/cutlass_rowwise_fp8.cu backends/cuda/cutlass_rowwise_fp8_f32.cu)
    set_target_properties(weave_cutlass_fp8 PROPERTIES
      CUDA_ARCHITECTURES OFF
      CUDA_STANDARD 17
      CUDA_STANDARD_REQUIRED ON
      POSITION_INDEPENDENT_CODE ON
      CUDA_VISIBILITY_PRESET hidden)
    target_compile_options(weave_cutlass_fp8 PRIVATE -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr)
    target_include_directories(weave_cutlass_fp8 SYSTEM PRIVATE "${WEAVE_CUTLASS_DIR}")
    target_include_directories(weave_cutlass_fp8 PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
    target_link_libraries(weave_cutlass_fp8 PRIVATE CUDA::cudart)
    target_sources(weave PRIVATE $<TARGET_OBJECTS:weave_cutlass_fp8>)
    set(WEAVE_EXTRA_OBJECTS $<TARGET_OBJECTS:weave_cutlass_fp8>)
    string(APPEND WEAVE_BUILD_FEATURES ",cutlass-fp8")
    message(STATUS "Weave: FP8 GEMMs with row-wise scales from CUTLASS in ${WEAVE_CUTLASS_DIR} (sm_90a)")
  else()
    target_sources(weave_objects PRIVATE backends/cuda/cutlass_rowwise_fp8_stub.cpp)
  endif()
else()
  target_sources(weave_objects PRIVATE backends/cuda/cuda_stub.cpp)
endif()
