# UCX transport (included from src/CMakeLists.txt).
if(WEAVE_ENABLE_UCX)
  message(FATAL_ERROR "WEAVE_ENABLE_UCX: the UCX transport is not part of this version yet")
else()
  target_sources(weave_objects PRIVATE transport/ucx/ucx_stub.cpp)
endif()
