# NCCL transport (included from src/CMakeLists.txt).
if(WEAVE_ENABLE_NCCL)
  message(FATAL_ERROR "WEAVE_ENABLE_NCCL: the NCCL transport is not part of this version yet")
else()
  target_sources(weave_objects PRIVATE transport/nccl/nccl_stub.cpp)
endif()
