# weave_find_scalapack(<libraries_var>)
# The ScaLAPACK library with its BLACS, for the pdgemm-compatible entry
# points (bindings/scalapack) and the tests and benchmark that compare with
# ScaLAPACK itself: WEAVE_SCALAPACK_LIBRARIES when set (a Spack build passes
# its provider's libraries), else the pkg-config file of Debian's and most
# distributions' packages (scalapack-openmpi, scalapack-mpich, scalapack),
# else a library of one of those names. Sets <libraries_var> to the
# libraries to link, empty when none was found or when the one found lacks
# the BLACS calls the binding makes (Cblacs2sys_handle).
function(weave_find_scalapack libraries_var)
  set(libraries "${WEAVE_SCALAPACK_LIBRARIES}")
  if(NOT libraries)
    find_package(PkgConfig QUIET)
    if(PkgConfig_FOUND)
      foreach(module scalapack-openmpi scalapack-mpich scalapack)
        pkg_check_modules(_weave_scalapack QUIET ${module})
        if(_weave_scalapack_FOUND)
          find_library(_weave_scalapack_library NAMES ${_weave_scalapack_LIBRARIES}
                       HINTS ${_weave_scalapack_LIBRARY_DIRS} NO_CACHE)
          if(_weave_scalapack_library)
            set(libraries "${_weave_scalapack_library}")
            break()
          endif()
        endif()
      endforeach()
    endif()
  endif()
  if(NOT libraries)
    find_library(_weave_scalapack_library NAMES scalapack-openmpi scalapack-mpich scalapack NO_CACHE)
    if(_weave_scalapack_library)
      set(libraries "${_weave_scalapack_library}")
    endif()
  endif()
  if(libraries)
    # The cached result is of the libraries it was found for: checked again
    # when they change (a ScaLAPACK installed, WEAVE_SCALAPACK_LIBRARIES set).
    if(NOT "${libraries}" STREQUAL "${_WEAVE_SCALAPACK_CHECKED_LIBRARIES}")
      unset(WEAVE_SCALAPACK_HAS_BLACS CACHE)
      set(_WEAVE_SCALAPACK_CHECKED_LIBRARIES "${libraries}" CACHE INTERNAL
          "the libraries WEAVE_SCALAPACK_HAS_BLACS is of")
    endif()
    include(CheckCSourceCompiles)
    set(CMAKE_REQUIRED_LIBRARIES ${libraries} MPI::MPI_C)
    check_c_source_compiles([[
      #include <mpi.h>
      MPI_Comm Cblacs2sys_handle(int);
      void pdgemm_(void);
      int main(void) { (void)Cblacs2sys_handle; (void)pdgemm_; return 0; }
    ]] WEAVE_SCALAPACK_HAS_BLACS)
    unset(CMAKE_REQUIRED_LIBRARIES)
    if(NOT WEAVE_SCALAPACK_HAS_BLACS)
      message(STATUS "Weave: ${libraries} lacks BLACS (Cblacs2sys_handle) or pdgemm_; not using it")
      set(libraries "")
    endif()
  endif()
  set(${libraries_var} "${libraries}" PARENT_SCOPE)
endfunction()
