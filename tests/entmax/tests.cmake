# tests/entmax/tests.cmake — the Entmax op (α-entmax for α in [1, 2],
# compiler/ops/entmax.c) and nn.entmax_attention's alpha: generated C,
# interpreter and kiln export's lowering (kiln check, ONNX Runtime when the
# venv can be had) against a numpy bisection (tests/entmax/reference.py),
# and bad input; included by tests/tests.cmake.
add_test(NAME entmax_ops COMMAND ${T}/entmax/run_tests.sh ${KILN_BIN})
set_tests_properties(entmax_ops PROPERTIES TIMEOUT 900)
# the kernel split among threads (rows are independent), and its C under
# clang -Weverything (f32 with a run-time Alpha, f64 with the attribute)
add_test(NAME entmax_threads COMMAND ${KILN_BIN} check -q --threads 2 ${T}/entmax/cases/causal)
find_program(KILN_ENTMAX_CLANG clang)
if(KILN_ENTMAX_CLANG)
  foreach(case per_head alphas_f64)
    add_test(NAME entmax_${case}_clang COMMAND ${KILN_BIN} check -q --cc=${KILN_ENTMAX_CLANG}
             "--cflags=-O1 -Weverything -Wno-padded -Wno-declaration-after-statement -Wno-unused-macros"
             ${T}/entmax/cases/${case})
  endforeach()
endif()
