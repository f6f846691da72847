# tests.cmake — kiln's CTest suite (included from the top CMakeLists.txt).
# Layers (DESIGN.md): unit tests of the IR; ONNX node-test conformance for
# generated C and the interpreter; transformer model fixtures; bad input;
# properties of the generated code (determinism, clang -Werror).
set(KILN_BIN $<TARGET_FILE:kiln>)
set(T ${CMAKE_SOURCE_DIR}/tests)

# unit tests of the compiler's own data structures
add_executable(unit_ir ${T}/unit/unit_ir.c)
target_link_libraries(unit_ir PRIVATE kilnlib)
add_test(NAME unit_ir COMMAND unit_ir)

# ONNX backend node tests, against the committed pass lists
add_test(NAME node_c COMMAND ${T}/node/run_node_tests.sh ${KILN_BIN} c)
add_test(NAME node_interp COMMAND ${T}/node/run_node_tests.sh ${KILN_BIN} interp)
set_tests_properties(node_c node_interp PROPERTIES TIMEOUT 1200)

# transformer fixtures (PyTorch exports, tools/export_fixtures.py)
file(GLOB KILN_FIXTURES LIST_DIRECTORIES true ${T}/models/*)
foreach(dir ${KILN_FIXTURES})
  if(IS_DIRECTORY ${dir})
    get_filename_component(name ${dir} NAME)
    add_test(NAME model_${name}_c COMMAND ${KILN_BIN} check ${dir})
    add_test(NAME model_${name}_interp COMMAND ${KILN_BIN} check --interp ${dir})
  endif()
endforeach()

# the generated C builds warning-free under clang too, and is deterministic
find_program(CLANG clang)
if(CLANG)
  add_test(NAME generated_c_clang
           COMMAND ${KILN_BIN} check --cc=${CLANG} --cflags=-O1\ -Weverything\ -Wno-padded\ -Wno-declaration-after-statement\ -Wno-unused-macros ${T}/models/encoder_2l_op14)
endif()
add_test(NAME generated_c_deterministic
         COMMAND ${T}/generated/deterministic.sh ${KILN_BIN} ${T}/models/transformer_ed/model.onnx)

# bad input: one line, exit 1, no output file
if(EXISTS ${T}/bad/run_bad.sh)
  add_test(NAME bad_input COMMAND ${T}/bad/run_bad.sh ${KILN_BIN})
endif()

# model names that are C keywords, libm functions or comment terminators
# must not break (or inject into) the generated C
add_test(NAME generated_c_hostile_names COMMAND ${KILN_BIN} check ${T}/generated/hostile_names)

# passes: text IR in, text IR out (tests/passes/*.kir)
add_test(NAME passes COMMAND ${T}/passes/run_pass_tests.sh ${KILN_BIN})

# the text IR round-trips exactly on every dump of every fixture, and a
# compiled dump gives the same C as the model it came from
file(GLOB KILN_FIXTURE_MODELS ${T}/models/*/model.onnx)
add_test(NAME kir_roundtrip COMMAND ${T}/generated/roundtrip.sh ${KILN_BIN} ${KILN_FIXTURE_MODELS}
         ${T}/generated/hostile_names/model.onnx)

# fuzzing (libFuzzer + ASan + UBSan): a bounded smoke run of the ONNX
# importer and the .kir parser, each followed by every pass and emission
if(CLANG AND NOT KILN_SANITIZE)
  add_test(NAME fuzz_smoke COMMAND ${CMAKE_COMMAND} -E env KILN_FUZZ_DIR=${CMAKE_BINARY_DIR}/fuzz
           ${T}/fuzz/run_fuzz.sh 30)
  set_tests_properties(fuzz_smoke PROPERTIES TIMEOUT 600)
endif()

# pictures: dot output is accepted by Graphviz, memory SVGs are well-formed
find_program(DOT dot)
find_program(XMLLINT xmllint)
if(DOT AND XMLLINT)
  add_test(NAME pictures COMMAND ${T}/generated/pictures.sh ${KILN_BIN} ${KILN_FIXTURE_MODELS}
           ${T}/generated/hostile_names/model.onnx)
endif()
