# UCX transport (included from src/CMakeLists.txt). Needs UCX >= 1.10
# (ucp_context_query's memory types, ucp_request_param_t memory types).
if(WEAVE_ENABLE_UCX)
  # The top level looked for UCX's CMake package (for the option's default).
  if(TARGET ucx::ucp AND TARGET ucx::ucs)
    set(_weave_ucx_libraries ucx::ucp ucx::ucs)
    set(_weave_ucx_version "${ucx_VERSION}")
  else()
    # UCX installs without CMake files (older or hand-built ones) ship ucx.pc.
    # GLOBAL: the installation (cmake/WeaveInstall.cmake, at the top level)
    # follows the library's link dependencies to write weave.pc.
    find_package(PkgConfig QUIET)
    if(PkgConfig_FOUND)
      pkg_check_modules(WEAVE_UCX QUIET IMPORTED_TARGET GLOBAL ucx>=1.10)
    endif()
    if(NOT TARGET PkgConfig::WEAVE_UCX)
      message(FATAL_ERROR "WEAVE_ENABLE_UCX=ON but UCX >= 1.10 was not found (neither ucx-config.cmake nor ucx.pc); "
                          "install it (Debian: libucx-dev) and point CMAKE_PREFIX_PATH or PKG_CONFIG_PATH at it, "
                          "or configure with -DWEAVE_ENABLE_UCX=OFF")
    endif()
    set(_weave_ucx_libraries PkgConfig::WEAVE_UCX)
    set(_weave_ucx_version "${WEAVE_UCX_VERSION}")
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
