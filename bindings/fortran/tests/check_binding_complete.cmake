# Every enumerator and function of weave.h must be in the Fortran module:
# enumerators as named constants of weave_constants (published by `weave`),
# functions as public procedures of `weave`. Run with
#   cmake -DWEAVE_H=... -DCONSTANTS=weave_constants.F90 -DMODULE=weave.F90 -P check_binding_complete.cmake
# Prints PASS or lists what is missing and fails.
cmake_minimum_required(VERSION 3.24)
file(READ "${WEAVE_H}" header)
file(READ "${CONSTANTS}" constants)
file(READ "${MODULE}" module)
string(TOLOWER "${module}" module_lower)

string(REGEX MATCHALL "\n[ \t]*WEAVE_[A-Z0-9_]+[ \t]*=" enumerators "${header}")
string(REGEX MATCHALL "[ *]weave_[a-z0-9_]+\\(" functions "${header}")

# Entry points the module uses internally instead of publishing them.
set(internal weave_grid_create_fortran)

set(missing "")
set(count 0)
foreach(match IN LISTS enumerators)
  string(REGEX REPLACE "[\n \t=]" "" name "${match}")
  math(EXPR count "${count} + 1")
  if(NOT constants MATCHES ":: ${name} =" OR NOT module MATCHES "[ ,]${name}[,\n ]")
    list(APPEND missing "constant ${name}")
  endif()
endforeach()
list(REMOVE_DUPLICATES functions)
foreach(match IN LISTS functions)
  string(REGEX REPLACE "[ *(]" "" name "${match}")
  if(name IN_LIST internal)
    continue()
  endif()
  math(EXPR count "${count} + 1")
  if(NOT module_lower MATCHES "public ::[^\n]*[ ,]${name}[,\n ]")
    list(APPEND missing "procedure ${name}")
  endif()
endforeach()

if(count LESS 50)
  message(FATAL_ERROR "FAIL: found only ${count} names in ${WEAVE_H}; the patterns no longer match the header")
endif()
if(missing)
  list(JOIN missing "\n  " missing)
  message(FATAL_ERROR "FAIL: the Fortran module lacks:\n  ${missing}")
endif()
message(STATUS "PASS: all ${count} enumerators and functions of weave.h are in the Fortran module")
