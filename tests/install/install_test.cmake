# Driver of the install tests (cmake -P), one STEP per ctest test; the
# variables come from tests/install/CMakeLists.txt. Every command must
# succeed; a step that cannot run on this machine prints "install test:
# SKIPPED", which ctest reports as skipped.
cmake_minimum_required(VERSION 3.24)

foreach(list_variable PREFIX_PATH MPIEXEC_PREFLAGS MPIEXEC_POSTFLAGS)
  string(REPLACE "|" ";" ${list_variable} "${${list_variable}}")
endforeach()
list(PREPEND PREFIX_PATH "${WEAVE_PREFIX}")

function(run)
  message(STATUS "install test: ${ARGV}")
  execute_process(COMMAND ${ARGV} COMMAND_ECHO NONE RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "install test: failed (${result}): ${ARGV}")
  endif()
endfunction()

macro(skip reason)
  message(STATUS "install test: SKIPPED: ${reason}")
  return()
endmacro()

# Runs an MPI program on 2 ranks and requires "PASS" in its output.
function(run_on_two_ranks program)
  set(command ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${MPIEXEC_PREFLAGS} ${program} ${MPIEXEC_POSTFLAGS})
  list(REMOVE_ITEM command "")
  message(STATUS "install test: ${command}")
  execute_process(COMMAND ${command} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  message("${output}")
  if(NOT result EQUAL 0 OR NOT output MATCHES "PASS")
    message(FATAL_ERROR "install test: ${program} failed (${result})")
  endif()
endfunction()

# Where this build found dependencies outside the default search paths, as
# -D arguments for a consumer project's configure.
function(dependency_hints out)
  set(hints "")
  foreach(hint Kokkos_DIR ucx_DIR CUDAToolkit_ROOT)
    if(${hint})
      list(APPEND hints "-D${hint}=${${hint}}")
    endif()
  endforeach()
  set(${out} "${hints}" PARENT_SCOPE)
endfunction()

# A consumer's configure finds the installed Weave first, then the prefixes
# this build searched (CMAKE_PREFIX_PATH in the environment of its commands).
function(search_installed_prefixes)
  string(REPLACE ";" ":" prefix_path "${PREFIX_PATH}")
  set(ENV{CMAKE_PREFIX_PATH} "${prefix_path}")
endfunction()

if(STEP STREQUAL "prefix")
  file(REMOVE_RECURSE "${WEAVE_PREFIX}")
  run(${CMAKE_COMMAND} --install "${WEAVE_BUILD_DIR}" --prefix "${WEAVE_PREFIX}")
  # What a user of the package relies on.
  set(expected
    include/weave/weave.h include/weave/weave.hpp include/weave/weave_version.h
    ${WEAVE_LIBDIR}/cmake/Weave/WeaveConfig.cmake ${WEAVE_LIBDIR}/cmake/Weave/WeaveConfigVersion.cmake
    ${WEAVE_LIBDIR}/cmake/Weave/WeaveTargets.cmake ${WEAVE_LIBDIR}/cmake/Weave/WeaveKokkos.cmake
    ${WEAVE_LIBDIR}/pkgconfig/weave.pc)
  if(WEAVE_FORTRAN)
    list(APPEND expected include/weave/fortran/weave.mod ${WEAVE_LIBDIR}/cmake/Weave/WeaveFortranTargets.cmake
         ${WEAVE_LIBDIR}/pkgconfig/weave-fortran.pc)
  endif()
  foreach(file IN LISTS expected)
    if(NOT EXISTS "${WEAVE_PREFIX}/${file}")
      message(FATAL_ERROR "install test: ${file} is missing from the installation")
    endif()
  endforeach()

elseif(STEP STREQUAL "cmake_consumer")
  set(build "${WEAVE_WORK_DIR}/cmake_consumer")
  file(REMOVE_RECURSE "${build}")
  set(fortran OFF)
  if(WEAVE_FORTRAN AND WEAVE_FORTRAN_MPI_F08)
    set(fortran ON)
  endif()
  dependency_hints(dependency_hints)
  search_installed_prefixes()
  run(${CMAKE_COMMAND} -S "${WEAVE_CONSUMER_SOURCE_DIR}" -B "${build}" -G "${CMAKE_GENERATOR}"
      -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}
      -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER}
      -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
      -DCMAKE_Fortran_COMPILER=${CMAKE_Fortran_COMPILER}
      ${dependency_hints}
      -DWEAVE_EXAMPLES_DIR=${WEAVE_EXAMPLES_DIR}
      -DEXPECTED_WEAVE_VERSION=${WEAVE_VERSION}
      -DCONSUMER_FORTRAN=${fortran})
  run(${CMAKE_COMMAND} --build "${build}")
  set(programs consumer_c consumer_cpp)
  if(fortran)
    list(APPEND programs consumer_fortran)
  endif()
  foreach(program IN LISTS programs)
    run_on_two_ranks("${build}/${program}")
  endforeach()

elseif(STEP STREQUAL "pkgconfig_consumer")
  if(NOT PKG_CONFIG_EXECUTABLE)
    skip("pkg-config is not installed")
  endif()
  if(NOT EXISTS "${MPI_C_COMPILER}")
    skip("no MPI C compiler wrapper (mpicc) was found")
  endif()
  set(build "${WEAVE_WORK_DIR}/pkgconfig_consumer")
  file(REMOVE_RECURSE "${build}")
  file(MAKE_DIRECTORY "${build}")
  set(ENV{PKG_CONFIG_PATH} "${WEAVE_PREFIX}/${WEAVE_LIBDIR}/pkgconfig")
  set(static_flag "")
  if(NOT WEAVE_SHARED)
    set(static_flag --static)
  endif()

  # pkg-config output: one string of flags; separate_arguments makes a list.
  function(pkg_config out package)
    execute_process(COMMAND ${PKG_CONFIG_EXECUTABLE} ${static_flag} ${ARGN} ${package}
                    RESULT_VARIABLE result OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT result EQUAL 0)
      message(FATAL_ERROR "install test: pkg-config ${ARGN} ${package} failed")
    endif()
    message(STATUS "install test: pkg-config ${ARGN} ${package}: ${flags}")
    separate_arguments(flags UNIX_COMMAND "${flags}")
    set(${out} "${flags}" PARENT_SCOPE)
  endfunction()
  # The documented commands as they are written (user-guide.md, fortran.md),
  # through a shell, with an example for app.c / app.f90: no -Wl,-rpath and
  # no LD_LIBRARY_PATH, so the programs find libweave through the run path
  # that the .pc files' Libs carry.
  unset(ENV{LD_LIBRARY_PATH})
  function(documented_command program)
    string(JOIN " " command ${ARGN})
    message(STATUS "install test: ${command}")
    run(sh -c "${command}")
    run_on_two_ranks("${program}")
  endfunction()
  documented_command("${build}/consumer_c" "${MPI_C_COMPILER}" "${WEAVE_EXAMPLES_DIR}/c/mlp_step.c"
                     "$(${PKG_CONFIG_EXECUTABLE} ${static_flag} --cflags --libs weave)" -lm -o "${build}/consumer_c")
  if(WEAVE_FORTRAN AND WEAVE_FORTRAN_MPI_F08 AND EXISTS "${MPI_Fortran_COMPILER}")
    documented_command("${build}/consumer_fortran" "${MPI_Fortran_COMPILER}" "${WEAVE_EXAMPLES_DIR}/fortran/mlp_step.f90"
                       "$(${PKG_CONFIG_EXECUTABLE} ${static_flag} --cflags --libs weave-fortran)"
                       -o "${build}/consumer_fortran")
  endif()

elseif(STEP STREQUAL "fortran_only_consumer")
  if(NOT WEAVE_FORTRAN OR NOT WEAVE_FORTRAN_MPI_F08)
    skip("Weave was built without the Fortran module (or the MPI has no mpi_f08)")
  endif()
  # project(... LANGUAGES Fortran): find_package(Weave) enables C itself.
  set(build "${WEAVE_WORK_DIR}/fortran_only_consumer")
  file(REMOVE_RECURSE "${build}")
  search_installed_prefixes()
  set(kokkos_hint "")
  if(Kokkos_DIR)
    set(kokkos_hint "-DKokkos_DIR=${Kokkos_DIR}")
  endif()
  run(${CMAKE_COMMAND} -S "${WEAVE_CONSUMER_SOURCE_DIR}/../consumer_fortran_only" -B "${build}"
      -G "${CMAKE_GENERATOR}" -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}
      -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER} -DCMAKE_Fortran_COMPILER=${CMAKE_Fortran_COMPILER} ${kokkos_hint}
      -DWEAVE_EXAMPLES_DIR=${WEAVE_EXAMPLES_DIR})
  run(${CMAKE_COMMAND} --build "${build}")
  run_on_two_ranks("${build}/consumer_fortran")

elseif(STEP STREQUAL "unversioned_consumer")
  # No cmake_minimum_required: Weave's package files under CMake's oldest
  # policies (CMake warns that the project should call it).
  set(build "${WEAVE_WORK_DIR}/unversioned_consumer")
  file(REMOVE_RECURSE "${build}")
  search_installed_prefixes()
  dependency_hints(dependency_hints)
  run(${CMAKE_COMMAND} -S "${WEAVE_CONSUMER_SOURCE_DIR}/../consumer_unversioned" -B "${build}"
      -G "${CMAKE_GENERATOR}" -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE} -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER}
      ${dependency_hints} -DWEAVE_EXAMPLES_DIR=${WEAVE_EXAMPLES_DIR})
  run(${CMAKE_COMMAND} --build "${build}")
  run_on_two_ranks("${build}/consumer_unversioned")

elseif(STEP STREQUAL "installed_example")
  if(NOT WEAVE_EXAMPLES_BUILT)
    skip("the examples are not built (WEAVE_BUILD_EXAMPLES=OFF)")
  endif()
  # Found through its relative RUNPATH, with the build tree out of reach.
  run_on_two_ranks("${WEAVE_PREFIX}/${WEAVE_LIBEXECDIR}/weave/examples/weave_example_mlp_c")

else()
  message(FATAL_ERROR "install test: unknown STEP '${STEP}'")
endif()
