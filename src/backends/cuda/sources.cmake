# CUDA backend (included from src/CMakeLists.txt).
if(WEAVE_ENABLE_CUDA)
  message(FATAL_ERROR "WEAVE_ENABLE_CUDA: the CUDA backend is not part of this version yet")
else()
  target_sources(weave_objects PRIVATE backends/cuda/cuda_stub.cpp)
endif()
