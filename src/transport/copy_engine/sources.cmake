# Copy-engine transport (included from src/CMakeLists.txt): CUDA peer copies
# between the GPUs of one node. Part of every CUDA build; its collectives
# (sequential algorithm) go through NCCL.
if(WEAVE_ENABLE_CUDA)
  target_sources(weave_objects PRIVATE transport/copy_engine/copy_engine_transport.cpp)
  set(WEAVE_HAVE_COPY_ENGINE 1)
  string(APPEND WEAVE_BUILD_FEATURES ",copy_engine")
else()
  target_sources(weave_objects PRIVATE transport/copy_engine/copy_engine_stub.cpp)
endif()
