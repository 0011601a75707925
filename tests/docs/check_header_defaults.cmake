# The API reference states each automatic choice in the words of weave.h:
# the comment of every WEAVE_<X>_AUTO enumerator ("automatic: ...") must
# appear, whitespace aside, in doc/api-reference.md twice (the enumeration
# table and the plan descriptor's field), and weave_build_features()'s
# example in the header must be the one the reference shows.
#   cmake -DHEADER=include/weave/weave.h -DREFERENCE=doc/api-reference.md -P check_header_defaults.cmake
cmake_minimum_required(VERSION 3.24)
file(READ "${HEADER}" header)
file(READ "${REFERENCE}" reference)
string(REGEX REPLACE "[ \t\r\n]+" " " reference "${reference}")

set(failures 0)
foreach(kind ALGORITHM BACKEND TRANSPORT DIRECTION PROGRESS)
  if(NOT header MATCHES "WEAVE_${kind}_AUTO = 0, */\\* (automatic: [^*]*[^* ]) *\\*/")
    message(SEND_ERROR "weave.h: WEAVE_${kind}_AUTO has no \"automatic: ...\" comment")
    math(EXPR failures "${failures} + 1")
    continue()
  endif()
  string(REGEX REPLACE "[ \t\r\n]+" " " text "${CMAKE_MATCH_1}")
  string(REPLACE "${text}" "" rest "${reference}")
  string(LENGTH "${reference}" before)
  string(LENGTH "${rest}" after)
  string(LENGTH "${text}" length)
  math(EXPR copies "(${before} - ${after}) / ${length}")
  if(NOT copies EQUAL 2)
    message(SEND_ERROR "api-reference.md states WEAVE_${kind}_AUTO's default ${copies} times in weave.h's words "
                       "(expected 2, the enumeration and the plan descriptor): \"${text}\"")
    math(EXPR failures "${failures} + 1")
  endif()
endforeach()

if(NOT header MATCHES "e\\.g\\.[ \n*]*\"(host,mpi,[^\"]*)\"")
  message(SEND_ERROR "weave.h: weave_build_features() has no example")
  math(EXPR failures "${failures} + 1")
else()
  set(example "${CMAKE_MATCH_1}")
  string(FIND "${reference}" "`\"${example}\"`" at)
  if(at EQUAL -1)
    message(SEND_ERROR "api-reference.md does not show weave.h's weave_build_features() example \"${example}\"")
    math(EXPR failures "${failures} + 1")
  endif()
endif()
if(failures EQUAL 0)
  message(STATUS "api-reference.md agrees with weave.h on the automatic choices and the features example")
endif()
