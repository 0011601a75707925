# Repairs one known packaging defect of a Kokkos found before this file is
# included: Debian's Kokkos 3.4 (built inside Trilinos) declares
# Kokkos::kokkos with the include directory <prefix>/lib/include, which does
# not exist; its headers are in Kokkos_INCLUDE_DIRS (/usr/include/trilinos).
# Kokkos 4 installs are left as they are. Installed with Weave so consumers
# get the same repair.

function(weave_repair_kokkos_target)
  if(NOT TARGET Kokkos::kokkos)
    return()
  endif()
  get_target_property(_includes Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
  if(NOT _includes)
    set(_includes "")
  endif()
  set(_kept "")
  set(_dropped FALSE)
  foreach(_dir IN LISTS _includes)
    if(_dir MATCHES "^\\$<" OR EXISTS "${_dir}")
      list(APPEND _kept "${_dir}")
    else()
      set(_dropped TRUE)
    endif()
  endforeach()
  if(_dropped)
    foreach(_dir IN LISTS Kokkos_INCLUDE_DIRS)
      get_filename_component(_dir "${_dir}" REALPATH)
      if(EXISTS "${_dir}/Kokkos_Core.hpp")
        list(APPEND _kept "${_dir}")
      endif()
    endforeach()
    set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_kept}")
    message(STATUS "Weave: repaired Kokkos::kokkos include directories -> ${_kept}")
  endif()
endfunction()
weave_repair_kokkos_target()

# A Kokkos with its CUDA backend: the CUDA backend's element-wise steps run
# on Kokkos::Cuda (src/backends/cuda/kokkos_lanes.cpp). Kokkos then compiles
# its users' C++ through its compiler, nvcc_wrapper (or clang): configure
# Weave with -DCMAKE_CXX_COMPILER=<kokkos prefix>/bin/nvcc_wrapper.
# (list(FIND), not IN_LIST: a consumer project without cmake_minimum_required
# runs this file under policies older than IN_LIST, CMP0057.)
set(WEAVE_KOKKOS_CUDA OFF)
list(FIND Kokkos_DEVICES "CUDA" _weave_kokkos_cuda_index)
if(NOT _weave_kokkos_cuda_index EQUAL -1)
  set(WEAVE_KOKKOS_CUDA ON)
  if(NOT CMAKE_CXX_COMPILER MATCHES "nvcc_wrapper|clang" AND NOT Kokkos_ENABLE_COMPILE_AS_CMAKE_LANGUAGE)
    message(FATAL_ERROR "This Kokkos has its CUDA backend, so Weave's C++ must be compiled with Kokkos' "
                        "compiler: configure with -DCMAKE_CXX_COMPILER=${Kokkos_CXX_COMPILER} "
                        "(nvcc_wrapper in the Kokkos prefix' bin/)")
  endif()
endif()
