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

# the packed f32 GEMM (compiler/ops/gemm_kernel.c) on odd shapes — M, N, K
# off every tile, K = 1, N = 1, K split in blocks; tools/make_gemm_cases.py.
# Each --isa's panels are read by every vector width that divides them
# (the generated file picks the widest the compiler targets): 16-wide and
# 8-wide built with their -m flags where this CPU has them, else forced
# (-DKILN_GEMM_V16/V8: wide GNU vectors lowered for the baseline ISA, slow
# but the same generated code), 4-wide with plain -O2; then the plain C
# path, and MatMul/Gemm as themselves (no fuse pass, so no Linear).
set(KILN_V8 "-O2 -DKILN_GEMM_V8")
set(KILN_V16 "-O2 -DKILN_GEMM_V16")
if(EXISTS /proc/cpuinfo)
  file(READ /proc/cpuinfo KILN_CPUINFO)
  if(KILN_CPUINFO MATCHES "[ \t]avx2[ \n]" AND KILN_CPUINFO MATCHES "[ \t]fma[ \n]")
    set(KILN_V8 "-O2 -mavx2 -mfma")
  endif()
  if(KILN_CPUINFO MATCHES "[ \t]avx512f[ \n]")
    set(KILN_V16 "-O2 -mavx512f -mfma")
  endif()
endif()
set(KILN_GEMM_VARIANTS "generic|generic|-O2" "generic_v8|generic|${KILN_V8}" "avx2|avx2|${KILN_V8}"
    "avx2_v16|avx2|${KILN_V16}" "avx512|avx512|${KILN_V16}" "avx512_v8|avx512|${KILN_V8}"
    "avx512_v4|avx512|-O2" "scalar|generic|-O1 -DKILN_GEMM_SCALAR")
file(GLOB KILN_GEMM_CASES LIST_DIRECTORIES true ${T}/generated/gemm_shapes/*)
foreach(dir ${KILN_GEMM_CASES})
  if(IS_DIRECTORY ${dir})
    get_filename_component(name ${dir} NAME)
    foreach(variant ${KILN_GEMM_VARIANTS})
      string(REPLACE "|" ";" v "${variant}")
      list(GET v 0 vname)
      list(GET v 1 isa)
      list(GET v 2 flags)
      add_test(NAME gemm_${name}_${vname} COMMAND ${KILN_BIN} check -q --isa=${isa} "--cflags=${flags}" ${dir})
    endforeach()
    add_test(NAME gemm_${name}_nofuse
             COMMAND ${KILN_BIN} check -q --isa=avx2 --passes=bind,infer,fold,simplify,dce,plan
                     "--cflags=${KILN_V8}" ${dir})
  endif()
endforeach()

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

# kiln bench: random int64 token ids, --threads recorded, the last line parses
add_test(NAME bench_cli COMMAND sh -c "\"$0\" bench \"$1\" --runs 3 --threads 2 | tail -1 | grep -Ex \
  'median_ms=[0-9.]+ min_ms=[0-9.]+ runs=3 workspace_bytes=[0-9]+ rss_kb=[0-9]+'"
  ${KILN_BIN} ${T}/models/transformer_ed/model.onnx)

# the benchmark harness (bench/run.sh), smoke mode: the smallest model, 20
# inferences, kiln vs ONNX Runtime agreement; exit 77 (skip) when torch or
# the onnxruntime venv cannot be had. Timings here are not checked.
add_test(NAME bench_smoke COMMAND ${CMAKE_COMMAND} -E env KILN_BENCH_DIR=${CMAKE_BINARY_DIR}/bench-smoke
         bash ${CMAKE_SOURCE_DIR}/bench/run.sh --smoke --kiln ${KILN_BIN})
set_tests_properties(bench_smoke PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
