# Default for WEAVE_ENABLE_FORTRAN: on when a Fortran compiler is found; the
# user's -D always wins. Included from the top-level CMakeLists.txt before the
# options are declared, like WeaveDetectGpu.
#
# The Fortran language itself is enabled at the top level (by
# weave_enable_fortran below) because the binding (bindings/fortran), the
# Fortran example and the install tests all compile Fortran.
include(CheckLanguage)
set(WEAVE_FORTRAN_FOUND_DEFAULT OFF)
if(NOT DEFINED WEAVE_ENABLE_FORTRAN OR WEAVE_ENABLE_FORTRAN)
  check_language(Fortran)
  if(CMAKE_Fortran_COMPILER)
    set(WEAVE_FORTRAN_FOUND_DEFAULT ON)
  endif()
endif()

# Called once WEAVE_ENABLE_FORTRAN is known.
macro(weave_enable_fortran)
  if(WEAVE_ENABLE_FORTRAN)
    if(NOT CMAKE_Fortran_COMPILER)
      message(FATAL_ERROR "WEAVE_ENABLE_FORTRAN is ON but no Fortran compiler was found: put one on PATH, set "
                          "CMAKE_Fortran_COMPILER (e.g. -DCMAKE_Fortran_COMPILER=gfortran) or FC, or configure "
                          "with -DWEAVE_ENABLE_FORTRAN=OFF")
    endif()
    enable_language(Fortran)
  endif()
endmacro()
