# How Weave looks for the libraries of its NCCL and UCX transports, written
# once for its build and for the installed WeaveConfig.cmake, so a consumer
# looks where the build looked. Installed with Weave.

# weave_find_nccl(<include_var> <library_var> [HINTS dir...])
# nccl.h and libnccl under NCCL_HOME (a CMake or environment variable; it may
# be the nvidia/nccl directory of a Python wheel, which ships only
# libnccl.so.2), the CUDA toolkit (find_package(CUDAToolkit) first), and the
# HINTS. The results are cache variables, empty-NOTFOUND when not found.
function(weave_find_nccl include_var library_var)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "HINTS")
  find_path(${include_var} nccl.h
            HINTS ${NCCL_HOME} ENV NCCL_HOME ${CUDAToolkit_INCLUDE_DIRS} ${arg_HINTS}
            PATH_SUFFIXES include)
  find_library(${library_var} NAMES nccl libnccl.so.2
               HINTS ${NCCL_HOME} ENV NCCL_HOME ${CUDAToolkit_LIBRARY_DIR} ${arg_HINTS}
               PATH_SUFFIXES lib lib64)
endfunction()

# weave_find_ucx(<targets_var> <version_var> [GLOBAL])
# UCX >= 1.10 (ucp_context_query's memory types): its CMake package
# (ucx::ucp ucx::ucs), else its pkg-config file (PkgConfig::WEAVE_UCX, for
# UCX installs without CMake files). Sets <targets_var> to the targets to
# link, empty when neither was found, and <version_var> to UCX's version.
# GLOBAL makes a pkg-config target visible in every directory (the build
# needs that; a consumer does not). A macro: the imported targets and
# find_package's variables belong to the caller's scope.
macro(weave_find_ucx _weave_targets_var _weave_version_var)
  cmake_parse_arguments(_weave_ucx "GLOBAL" "" "" ${ARGN})
  set(${_weave_targets_var} "")
  set(${_weave_version_var} "")
  if(NOT (TARGET ucx::ucp AND TARGET ucx::ucs))
    find_package(ucx 1.10 CONFIG QUIET)
  endif()
  if(TARGET ucx::ucp AND TARGET ucx::ucs)
    set(${_weave_targets_var} ucx::ucp ucx::ucs)
    set(${_weave_version_var} "${ucx_VERSION}")
  else()
    if(NOT TARGET PkgConfig::WEAVE_UCX)
      find_package(PkgConfig QUIET)
      if(PkgConfig_FOUND AND _weave_ucx_GLOBAL)
        pkg_check_modules(WEAVE_UCX QUIET IMPORTED_TARGET GLOBAL ucx>=1.10)
      elseif(PkgConfig_FOUND)
        pkg_check_modules(WEAVE_UCX QUIET IMPORTED_TARGET ucx>=1.10)
      endif()
    endif()
    if(TARGET PkgConfig::WEAVE_UCX)
      set(${_weave_targets_var} PkgConfig::WEAVE_UCX)
      set(${_weave_version_var} "${WEAVE_UCX_VERSION}")
    endif()
  endif()
endmacro()
