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
else()
  target_sources(weave_objects PRIVATE backends/cuda/cuda_stub.cpp)
endif()
