# SM transport (included from src/CMakeLists.txt): SM-driven transfers
# between the GPUs of one node, over the peer mappings of transport/peer.
# Part of every CUDA build; its collectives (sequential algorithm) go
# through NCCL.
if(WEAVE_ENABLE_CUDA)
  target_sources(weave_objects PRIVATE
    transport/sm/peer_sum_links.cpp
    transport/sm/sm_kernels.cu
    transport/sm/sm_transport.cpp)
  string(APPEND WEAVE_BUILD_FEATURES ",sm")
else()
  target_sources(weave_objects PRIVATE transport/sm/sm_stub.cpp)
endif()
