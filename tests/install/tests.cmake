# tests/install/tests.cmake — kiln in someone else's build (included from
# tests/tests.cmake): the installed package (CMake's find_package(kiln) and
# kiln_add_model, pkg-config, the man page made from --help) used by
# examples/cmake from a fresh prefix, and compile's progress on a terminal.
add_test(NAME install_package
         COMMAND ${T}/install/check_install.sh ${CMAKE_BINARY_DIR} ${CMAKE_BINARY_DIR}/install_test)
set_tests_properties(install_package PROPERTIES TIMEOUT 600 RUN_SERIAL TRUE)
add_test(NAME progress_tty
         COMMAND ${T}/install/check_progress.sh ${KILN_BIN} ${CMAKE_BINARY_DIR}/progress_test)
