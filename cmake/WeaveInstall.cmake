# What `cmake --install` puts under the prefix:
#   include/weave/*.h, *.hpp            the C and C++ API
#   include/weave/fortran/*.mod         the Fortran modules (WEAVE_ENABLE_FORTRAN)
#   lib/libweave.so (or .a)             the library; lib/libweave_fortran.* likewise
#   lib/cmake/Weave/                    WeaveConfig.cmake, WeaveConfigVersion.cmake,
#                                       the exported targets, WeaveKokkos.cmake,
#                                       WeaveFindTransports.cmake
#   lib/pkgconfig/weave.pc              (and weave-fortran.pc)
# Included from the top-level CMakeLists.txt after every target exists.
include(CMakePackageConfigHelpers)

set(WEAVE_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/Weave" CACHE STRING
    "Where the CMake package files of Weave are installed (relative to the prefix)")
set(WEAVE_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig" CACHE STRING
    "Where weave.pc is installed (relative to the prefix)")
mark_as_advanced(WEAVE_INSTALL_CMAKEDIR WEAVE_INSTALL_PKGCONFIGDIR)
set(WEAVE_INSTALL_FORTRAN_MODULEDIR "${CMAKE_INSTALL_INCLUDEDIR}/weave/fortran")

# --- Libraries and headers ---------------------------------------------------
install(TARGETS weave EXPORT WeaveTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/weave" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES "${PROJECT_BINARY_DIR}/generated/include/weave/weave_version.h"
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/weave)
install(EXPORT WeaveTargets NAMESPACE Weave:: DESTINATION ${WEAVE_INSTALL_CMAKEDIR})

# The Fortran library has its own export set: WeaveConfig.cmake loads it only
# for projects that enable Fortran (its link interface names MPI::MPI_Fortran).
if(TARGET weave_fortran)
  install(TARGETS weave_fortran EXPORT WeaveFortranTargets
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  get_target_property(_weave_module_dir weave_fortran Fortran_MODULE_DIRECTORY)
  install(DIRECTORY "${_weave_module_dir}/" DESTINATION ${WEAVE_INSTALL_FORTRAN_MODULEDIR}
          FILES_MATCHING PATTERN "*.mod" PATTERN "*.smod")
  install(EXPORT WeaveFortranTargets NAMESPACE Weave:: DESTINATION ${WEAVE_INSTALL_CMAKEDIR})
endif()

# The pdgemm-compatible entry points (WEAVE_ENABLE_SCALAPACK): their own
# library, linked with ScaLAPACK privately.
if(TARGET weave_pblas)
  install(TARGETS weave_pblas EXPORT WeavePblasTargets
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(FILES "${PROJECT_SOURCE_DIR}/bindings/scalapack/weave_pblas.h" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/weave)
  install(EXPORT WeavePblasTargets NAMESPACE Weave:: DESTINATION ${WEAVE_INSTALL_CMAKEDIR})
endif()

# --- CMake package -------------------------------------------------------------
# 0.x releases may change the API between minor versions, hence SameMinorVersion.
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/WeaveConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/package/WeaveConfig.cmake"
  INSTALL_DESTINATION ${WEAVE_INSTALL_CMAKEDIR})
write_basic_package_version_file("${PROJECT_BINARY_DIR}/package/WeaveConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/package/WeaveConfig.cmake"
  "${PROJECT_BINARY_DIR}/package/WeaveConfigVersion.cmake"
  "${PROJECT_SOURCE_DIR}/cmake/WeaveKokkos.cmake"
  "${PROJECT_SOURCE_DIR}/cmake/WeaveFindTransports.cmake"
  DESTINATION ${WEAVE_INSTALL_CMAKEDIR})

# --- pkg-config ----------------------------------------------------------------
include(WeavePkgConfig)
weave_write_pkgconfig_files()
