# pkg-config files: weave.pc (C and C++) and, with Fortran, weave-fortran.pc.
#
# MPI is deliberately absent from them: every MPI ships compiler wrappers
# (mpicc, mpicxx, mpifort) and their pkg-config names differ between MPI
# implementations, so consumers compile with the wrapper of the MPI Weave was
# built with:
#   mpicc app.c $(pkg-config --cflags --libs weave)
#
# The files are relocatable: prefix is computed from ${pcfiledir}, so
# `cmake --install build --prefix <anywhere>` gives working files.
# Libs.private lists what a static libweave needs (BLAS, Kokkos, CUDA, NCCL,
# UCX, the C++ runtime), read from the link interface of the target `weave`.

# Appends to <out_var> the linker arguments for link items: targets (followed
# through their INTERFACE_LINK_LIBRARIES), paths, -l/-Wl flags and bare names.
# MPI's targets are skipped (see above), as are compile-only flags (-D...) and
# build-tree-only generator expressions.
function(_weave_link_arguments out_var)
  set(arguments "")
  set(seen "")
  set(pending ${ARGN})
  while(pending)
    list(POP_FRONT pending item)
    if(item MATCHES "^\\$<LINK_ONLY:(.*)>$")
      set(item "${CMAKE_MATCH_1}")
    endif()
    if(item STREQUAL "" OR item MATCHES "^\\$<" OR item MATCHES "^MPI::")
      continue()
    endif()
    if(TARGET "${item}")
      get_target_property(aliased "${item}" ALIASED_TARGET)
      if(aliased)
        set(item "${aliased}")
      endif()
      if(item IN_LIST seen)
        continue()
      endif()
      list(APPEND seen "${item}")
      get_target_property(type "${item}" TYPE)
      if(type STREQUAL "SHARED_LIBRARY")
        list(APPEND arguments "$<TARGET_LINKER_FILE:${item}>")
      elseif(type MATCHES "^(STATIC|UNKNOWN)_LIBRARY$")
        list(APPEND arguments "$<TARGET_FILE:${item}>")
      endif()
      get_target_property(dependencies "${item}" INTERFACE_LINK_LIBRARIES)
      if(dependencies)
        list(APPEND pending ${dependencies})
      endif()
    elseif(IS_ABSOLUTE "${item}" OR item MATCHES "^-(l|Wl,|pthread)")
      list(APPEND arguments "${item}")
    elseif(NOT item MATCHES "^-")
      list(APPEND arguments "-l${item}")
    endif()
  endwhile()
  # A static link needs each library after its users: keep last occurrences.
  list(REVERSE arguments)
  list(REMOVE_DUPLICATES arguments)
  list(REVERSE arguments)
  list(JOIN arguments " " joined)
  set(${out_var} "${joined}" PARENT_SCOPE)
endfunction()

function(weave_write_pkgconfig_files)
  # prefix relative to the directory the .pc file is installed in.
  if(IS_ABSOLUTE "${WEAVE_INSTALL_PKGCONFIGDIR}")
    set(WEAVE_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  else()
    file(RELATIVE_PATH to_prefix "/prefix/${WEAVE_INSTALL_PKGCONFIGDIR}" "/prefix")
    string(REGEX REPLACE "/$" "" to_prefix "${to_prefix}")
    set(WEAVE_PC_PREFIX "\${pcfiledir}/${to_prefix}")
  endif()
  foreach(dir LIBDIR INCLUDEDIR)
    if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
      set(WEAVE_PC_${dir} "${CMAKE_INSTALL_${dir}}")
    else()
      set(WEAVE_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
    endif()
  endforeach()

  get_target_property(link_libraries weave LINK_LIBRARIES)
  _weave_link_arguments(WEAVE_PC_LIBS_PRIVATE ${link_libraries})
  # libweave is C++; a C program linked by mpicc needs the C++ runtime too.
  set(cxx_runtime ${CMAKE_CXX_IMPLICIT_LINK_LIBRARIES})
  if(CMAKE_C_IMPLICIT_LINK_LIBRARIES)
    list(REMOVE_ITEM cxx_runtime ${CMAKE_C_IMPLICIT_LINK_LIBRARIES})
  endif()
  list(TRANSFORM cxx_runtime PREPEND "-l")
  list(JOIN cxx_runtime " " cxx_runtime)
  string(STRIP "${WEAVE_PC_LIBS_PRIVATE} ${cxx_runtime}" WEAVE_PC_LIBS_PRIVATE)

  set(pc_dir "${PROJECT_BINARY_DIR}/pkgconfig")
  configure_file("${PROJECT_SOURCE_DIR}/cmake/weave.pc.in" "${pc_dir}/weave.pc.in" @ONLY)
  file(GENERATE OUTPUT "${pc_dir}/weave.pc" INPUT "${pc_dir}/weave.pc.in")
  install(FILES "${pc_dir}/weave.pc" DESTINATION ${WEAVE_INSTALL_PKGCONFIGDIR})

  if(TARGET weave_fortran)
    if(IS_ABSOLUTE "${WEAVE_INSTALL_FORTRAN_MODULEDIR}")
      set(WEAVE_PC_FORTRAN_MODULEDIR "${WEAVE_INSTALL_FORTRAN_MODULEDIR}")
    else()
      set(WEAVE_PC_FORTRAN_MODULEDIR "\${prefix}/${WEAVE_INSTALL_FORTRAN_MODULEDIR}")
    endif()
    configure_file("${PROJECT_SOURCE_DIR}/cmake/weave-fortran.pc.in" "${pc_dir}/weave-fortran.pc" @ONLY)
    install(FILES "${pc_dir}/weave-fortran.pc" DESTINATION ${WEAVE_INSTALL_PKGCONFIGDIR})
  endif()
endfunction()
