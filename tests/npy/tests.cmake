# tests/npy/tests.cmake — .npy tensor files (compiler/frontend/npy.c), included from
# tests/tests.cmake. numpy is the reference: every element type kiln reads,
# 0-d, empty and rank-8 shapes and .npy versions 1.0-3.0 through kiln run
# and back with --out-format=npy; a run on .npy inputs prints what the
# same run on .pb inputs prints; kiln check on a data set of .npy files,
# and with a reference output of the wrong shape or type (one line naming
# the file); kiln bench on a .npy input; damaged, lying and unsupported
# .npy and .pb files (one line naming the file, exit 1). Skipped (77) when
# the venv with numpy and onnx cannot be made.
add_test(NAME npy_files
         COMMAND sh -c "py=$(bash \"$1/tools/venv.sh\") || exit 77; \"$py\" \"$1/tests/npy/run_npy.py\" \"$0\""
                 ${KILN_BIN} ${CMAKE_SOURCE_DIR})
set_tests_properties(npy_files PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
