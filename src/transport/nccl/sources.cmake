# NCCL transport (included from src/CMakeLists.txt). cmake/WeaveDetectGpu.cmake
# found NCCL (in the CUDA toolkit or under NCCL_HOME) when it was available.
if(WEAVE_ENABLE_NCCL)
  if(NOT WEAVE_NCCL_INCLUDE_DIR OR NOT WEAVE_NCCL_LIBRARY)
    message(FATAL_ERROR "WEAVE_ENABLE_NCCL is ON but NCCL was not found (WEAVE_NCCL_INCLUDE_DIR="
                        "${WEAVE_NCCL_INCLUDE_DIR}, WEAVE_NCCL_LIBRARY=${WEAVE_NCCL_LIBRARY}): set NCCL_HOME to "
                        "the directory holding include/nccl.h and lib/libnccl.so, or -DWEAVE_ENABLE_NCCL=OFF")
  endif()
  target_sources(weave_objects PRIVATE
    transport/nccl/nccl_check.cpp
    transport/nccl/nccl_communicator.cpp
    transport/nccl/nccl_transport.cpp
    transport/nccl/nccl_watchdog.cpp)
  target_include_directories(weave_objects SYSTEM PRIVATE ${WEAVE_NCCL_INCLUDE_DIR})
  weave_link_private(${WEAVE_NCCL_LIBRARY})
  set(WEAVE_HAVE_NCCL 1)
  string(APPEND WEAVE_BUILD_FEATURES ",nccl")
else()
  target_sources(weave_objects PRIVATE transport/nccl/nccl_stub.cpp)
endif()
