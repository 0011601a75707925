# What the transports among the GPUs of one node share (included from
# src/CMakeLists.txt): the peer-access probe, the workspaces and flags mapped
# between ranks (CUDA IPC), stream memory operations and the bounded device
# waits. Without CUDA only the probe exists, and says so.
if(WEAVE_ENABLE_CUDA)
  target_sources(weave_objects PRIVATE
    transport/peer/device_waits.cu
    transport/peer/peer_access.cpp
    transport/peer/peer_connection.cpp
    transport/peer/peer_mappings.cpp
    transport/peer/point_to_point_links.cpp
    transport/peer/stream_signals.cpp)
else()
  target_sources(weave_objects PRIVATE transport/peer/peer_stub.cpp)
endif()
