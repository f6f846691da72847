# tests/entmax/tests.cmake — the Entmax op (α-entmax for α in [1, 2],
# compiler/ops/entmax.c) and nn.entmax_attention's alpha: generated C,
# interpreter and kiln export's lowering (kiln check, ONNX Runtime when the
# venv can be had) against a numpy bisection (tests/entmax/reference.py),
# and bad input; included by tests/tests.cmake.
add_test(NAME entmax_ops COMMAND ${T}/entmax/run_tests.sh ${KILN_BIN})
set_tests_properties(entmax_ops PROPERTIES TIMEOUT 900)
