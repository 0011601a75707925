# UCX transport (included from src/CMakeLists.txt). Needs UCX >= 1.10
# (ucp_context_query's memory types, ucp_request_param_t memory types).
if(WEAVE_ENABLE_UCX)
  # cmake/WeaveFindTransports.cmake, as the installed WeaveConfig.cmake does.
  # GLOBAL: the installation (cmake/WeaveInstall.cmake, at the top level)
  # follows the library's link dependencies to write weave.pc.
  weave_find_ucx(_weave_ucx_libraries _weave_ucx_version GLOBAL)
  if(NOT _weave_ucx_libraries)
    message(FATAL_ERROR "WEAVE_ENABLE_UCX=ON but UCX >= 1.10 was not found (neither ucx-config.cmake nor ucx.pc); "
                        "install it (Debian: libucx-dev) and point CMAKE_PREFIX_PATH or PKG_CONFIG_PATH at it, "
                        "or configure with -DWEAVE_ENABLE_UCX=OFF")
  endif()
  message(STATUS "Weave: UCX transport with UCX ${_weave_ucx_version}")
  target_sources(weave_objects PRIVATE
    transport/ucx/ucx_collective.cpp
    transport/ucx/ucx_group.cpp
    transport/ucx/ucx_message.cpp
    transport/ucx/ucx_transport.cpp)
  weave_link_private(${_weave_ucx_libraries})
  set(WEAVE_HAVE_UCX 1)
  string(APPEND WEAVE_BUILD_FEATURES ",ucx")
else()
  target_sources(weave_objects PRIVATE transport/ucx/ucx_stub.cpp)
endif()
