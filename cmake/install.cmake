# Installing pk: `cmake --install <build> --prefix <prefix>` puts
#   <prefix>/bin/pkc
#   <prefix>/include/pk/*.h                  (the language and the runtime)
#   <prefix>/lib/cmake/pk/pkConfig.cmake      (find_package(pk CONFIG))
#   <prefix>/lib/cmake/pk/pkConfigVersion.cmake
#   <prefix>/lib/libpk_runtime.a             (the matrix product, compiled once)
#   <prefix>/lib/cmake/pk/pkTargets.cmake     (pk::headers, pk::runtime)
#   <prefix>/lib/cmake/pk/pk.cmake            (pk_add_kernels)
# An outside project then writes
#   find_package(pk CONFIG REQUIRED)
#   pk_add_kernels(app SOURCES kernels.cpp)
# pkc itself links Debian's shared libclang-cpp and libLLVM, so the installed
# tree runs where those packages are installed (cmake/install-deps.sh).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(PK_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/pk")

install(TARGETS pkc RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/pk"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")

target_include_directories(pk_headers INTERFACE
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(pk_headers PROPERTIES EXPORT_NAME headers)
install(TARGETS pk_headers EXPORT pkTargets)
install(TARGETS pk_runtime EXPORT pkTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}")
install(EXPORT pkTargets NAMESPACE pk:: DESTINATION "${PK_INSTALL_CMAKEDIR}")

configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/pkConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/pkConfig.cmake"
  INSTALL_DESTINATION "${PK_INSTALL_CMAKEDIR}"
  PATH_VARS CMAKE_INSTALL_BINDIR CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/pkConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/pkConfig.cmake"
              "${PROJECT_BINARY_DIR}/pkConfigVersion.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/pk.cmake"
        DESTINATION "${PK_INSTALL_CMAKEDIR}")
