# install.cmake — what `cmake --install` puts where, and the package other
# builds find kiln by (included from the top CMakeLists.txt).
#
#   bin/kiln                           the compiler
#   include/kiln_rt.h                  the runtime header generated code includes
#   share/man/man1/kiln.1              the man page, made at build time from
#                                      `kiln --help` (kiln_man.cmake), so they agree
#   lib/cmake/kiln/kilnConfig.cmake    find_package(kiln): kiln::kiln, kiln::runtime,
#                                      kiln_add_model() (KilnAddModel.cmake)
#   lib/pkgconfig/kiln.pc              pkg-config --cflags kiln (and --variable=kiln)
#   share/kiln/arch/ARCH.lua           the GGUF architectures' descriptions kiln
#                                      embeds (KILN_ARCHS), to read or to adapt
#
# Every installed path is relative to the prefix, so `cmake --install build
# --prefix DIR` works for any DIR. The build tree is a package too:
# CMAKE_PREFIX_PATH=build finds kilnConfig.cmake there.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KILN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)

# the runtime header as a target: kiln::runtime carries its include folder
add_library(kiln_runtime INTERFACE)
set_target_properties(kiln_runtime PROPERTIES EXPORT_NAME runtime)
target_include_directories(kiln_runtime INTERFACE
  $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/runtime>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
add_executable(kiln::kiln ALIAS kiln)   # kiln_add_model() inside this project

install(TARGETS kiln kiln_runtime EXPORT kilnTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES runtime/kiln_rt.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# the man page, from the built kiln's --help and kiln.1.in's prose
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/kiln.1
  COMMAND ${CMAKE_COMMAND} -DKILN=$<TARGET_FILE:kiln> -DMAN_IN=${CMAKE_SOURCE_DIR}/cmake/kiln.1.in
          -DMAN_OUT=${CMAKE_BINARY_DIR}/kiln.1 -P ${CMAKE_SOURCE_DIR}/cmake/kiln_man.cmake
  DEPENDS kiln ${CMAKE_SOURCE_DIR}/cmake/kiln.1.in ${CMAKE_SOURCE_DIR}/cmake/kiln_man.cmake
  COMMENT "kiln.1 from kiln --help"
  VERBATIM)
add_custom_target(kiln_man ALL DEPENDS ${CMAKE_BINARY_DIR}/kiln.1)
install(FILES ${CMAKE_BINARY_DIR}/kiln.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
# bash completion (commands and options read from kiln's own help)
install(FILES cmake/kiln.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME kiln)
# the descriptions `kiln compile FILE.gguf` runs (the binary has them too)
install(FILES ${KILN_ARCHS} DESTINATION ${CMAKE_INSTALL_DATADIR}/kiln/arch)

# CMake package: installed, and in the build tree
configure_file(cmake/kilnConfig.cmake.in ${CMAKE_BINARY_DIR}/kilnConfig.cmake @ONLY)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/kilnConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
foreach(f KilnAddModel.cmake kiln_weights_stub.cmake)
  configure_file(cmake/${f} ${CMAKE_BINARY_DIR}/${f} COPYONLY)
endforeach()
export(EXPORT kilnTargets NAMESPACE kiln:: FILE ${CMAKE_BINARY_DIR}/kilnTargets.cmake)
install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${KILN_CMAKE_DIR})
install(FILES ${CMAKE_BINARY_DIR}/kilnConfig.cmake ${CMAKE_BINARY_DIR}/kilnConfigVersion.cmake
  cmake/KilnAddModel.cmake cmake/kiln_weights_stub.cmake DESTINATION ${KILN_CMAKE_DIR})

# pkg-config: the prefix is found from the .pc file's own folder
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(KILN_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH KILN_PC_UP /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)   # ../..
  string(REGEX REPLACE "/$" "" KILN_PC_UP "${KILN_PC_UP}")
  set(KILN_PC_PREFIX "\${pcfiledir}/${KILN_PC_UP}")
endif()
configure_file(cmake/kiln.pc.in ${CMAKE_BINARY_DIR}/kiln.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
