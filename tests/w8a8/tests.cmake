# --quantize=w8a8 (compiler/passes/quantize.c, Linear's _eval in
# compiler/ops/fused.c, compiler/kernels/igemm_kernel.c): included from
# tests/tests.cmake.
#
# w8a8_<case>_<path>: the generated C against `kiln run` (Linear's _eval)
# on the shapes of make_cases.py, under every ISA path of the kernel, each
# picked by the flags the C is built with (tests/w8a8/kernel_case.sh has
# the tolerance): AVX512-VNNI 512-bit, the same on 256 bits (forced by
# -DKILN_IGEMM_NO512), AVX-VNNI, AVX2 (vpmaddwd), the plain C path
# (-DKILN_GEMM_SCALAR, and x86-64's baseline without AVX), the AMX path on
# kiln_rt.h's model of TDPBUSD (-DKILN_AMX_EMULATE; K padded to tiles of 64,
# rows to 16, edge panels of 16 and 32 columns), and 2 threads.
# The VNNI paths run where this CPU has them. The cases are written into
# the build folder by the w8a8_cases fixture (3 MB, seeded; skipped, and
# so are the cases, without python3's numpy and onnx).
set(KILN_W8A8_CASES ${CMAKE_BINARY_DIR}/w8a8-cases)
add_test(NAME w8a8_cases
         COMMAND sh -c "/usr/bin/python3 -c 'import numpy, onnx' 2>/dev/null || exit 77; /usr/bin/python3 \"$0\" \"$1\""
                 ${T}/w8a8/make_cases.py ${KILN_W8A8_CASES})
set_tests_properties(w8a8_cases PROPERTIES FIXTURES_SETUP w8a8_cases SKIP_RETURN_CODE 77)
set(KILN_W8A8_PATHS "native|-O2 -march=native -ffp-contract=fast" "scalar|-O1 -DKILN_GEMM_SCALAR" "baseline|-O2")
if(EXISTS /proc/cpuinfo)
  file(READ /proc/cpuinfo KILN_W8A8_CPU)
  if(KILN_W8A8_CPU MATCHES "[ \t]avx512_vnni[ \n]" AND KILN_W8A8_CPU MATCHES "[ \t]avx512vl[ \n]")
    list(APPEND KILN_W8A8_PATHS "vnni512|-O2 -mavx512vnni -mavx512vl -mfma"
         "vnni256|-O2 -mavx512vnni -mavx512vl -mfma -DKILN_IGEMM_NO512")
  endif()
  if(KILN_W8A8_CPU MATCHES "[ \t]avx_vnni[ \n]")
    list(APPEND KILN_W8A8_PATHS "avxvnni|-O2 -mavxvnni -mavx2 -mfma")
  endif()
  if(KILN_W8A8_CPU MATCHES "[ \t]avx2[ \n]" AND KILN_W8A8_CPU MATCHES "[ \t]fma[ \n]")
    list(APPEND KILN_W8A8_PATHS "avx2|-O2 -mavx2 -mfma")
  endif()
endif()
# the AMX path (TDPBUSD tiles) on kiln_rt.h's C model of the instruction,
# on any CPU; -march=native above runs the instruction where the CPU has it
list(APPEND KILN_W8A8_PATHS "amxemu|-O2 -DKILN_AMX_EMULATE")
if(KILN_SANITIZE) # the sanitizer suite checks kiln, not the C compiler: three paths suffice
  set(KILN_W8A8_PATHS "native|-O2 -march=native" "scalar|-O1 -DKILN_GEMM_SCALAR" "amxemu|-O1 -DKILN_AMX_EMULATE")
endif()
foreach(c m1_k4_n5_relu m3_k12_n19_bare m12_k64_n33_gelu m37_k384_n50_res m128_k1536_n40_gelu
          m37_k1003_n70_relu_res m128_k384_n97_gelu_tanh m5_k64_n64_gelu_res m300_k1003_n17)
  set(tests "")
  foreach(v ${KILN_W8A8_PATHS})
    string(REPLACE "|" ";" parts "${v}")
    list(GET parts 0 path)
    list(GET parts 1 flags)
    add_test(NAME w8a8_${c}_${path}
             COMMAND ${T}/w8a8/kernel_case.sh ${KILN_BIN} ${KILN_W8A8_CASES}/${c} ${CMAKE_BINARY_DIR}/w8a8-tests/${c}_${path} "${flags}")
    list(APPEND tests w8a8_${c}_${path})
  endforeach()
  add_test(NAME w8a8_${c}_threads2
           COMMAND ${T}/w8a8/kernel_case.sh ${KILN_BIN} ${KILN_W8A8_CASES}/${c} ${CMAKE_BINARY_DIR}/w8a8-tests/${c}_threads2
                   "-O2 -march=native" --threads 2)
  list(APPEND tests w8a8_${c}_threads2)
  set_tests_properties(${tests} PROPERTIES FIXTURES_REQUIRED w8a8_cases SKIP_RETURN_CODE 77)
endforeach()

# under ThreadSanitizer at 3 threads, cases with an edge panel (N 40, 97,
# 70; M 128 in blocks, M 37): the edge panel and AMX's zeroing of A's pad
# rows run on the lead alone (they were code every thread of the job ran:
# a late worker computed the edge columns from the next block's rows, 1 run
# in ~40 of w8a8_m128_k1536_n40_gelu_threads2 wrong in its last rows)
find_program(KILN_W8A8_CLANG_TSAN clang)
if(NOT KILN_SANITIZE AND KILN_W8A8_CLANG_TSAN)
  foreach(c m128_k1536_n40_gelu m128_k384_n97_gelu_tanh m37_k1003_n70_relu_res)
    foreach(v "native|-march=native" "plain|-DKILN_GEMM_SCALAR")
      string(REPLACE "|" ";" parts "${v}")
      list(GET parts 0 path)
      list(GET parts 1 flags)
      add_test(NAME w8a8_${c}_tsan_${path}
               COMMAND env TSAN_OPTIONS=halt_on_error=1 ${T}/w8a8/kernel_case.sh ${KILN_BIN} ${KILN_W8A8_CASES}/${c}
                       ${CMAKE_BINARY_DIR}/w8a8-tests/${c}_tsan_${path} "-O1 -g -fsanitize=thread ${flags}"
                       --cc=${KILN_W8A8_CLANG_TSAN} --threads 3)
      set_tests_properties(w8a8_${c}_tsan_${path} PROPERTIES FIXTURES_REQUIRED w8a8_cases SKIP_RETURN_CODE 77)
    endforeach()
  endforeach()
endif()

# the AMX path gives the bytes of every other path (the model of TDPBUSD,
# the instruction where this CPU has it, VNNI, AVX2, plain C:
# tests/amx/bitexact.sh), M off 32 (a tail of 16 rows) and K off 64
foreach(c m37_k1003_n70_relu_res m300_k1003_n17)
  add_test(NAME amx_bitexact_w8a8_${c}
           COMMAND ${T}/amx/bitexact.sh ${KILN_BIN} ${KILN_W8A8_CASES}/${c} ${CMAKE_BINARY_DIR}/amx-tests/${c} w8a8)
  set_tests_properties(amx_bitexact_w8a8_${c} PROPERTIES FIXTURES_REQUIRED w8a8_cases SKIP_RETURN_CODE 77)
endforeach()

# the IR: the quantize pass's Linear {act_quant="u8"} with W_colsum prints
# and parses back byte for byte (kiln opt on the dump after quantize)
add_test(NAME w8a8_kir_roundtrip COMMAND ${T}/w8a8/kir_roundtrip.sh ${KILN_BIN} ${KILN_W8A8_CASES}/m5_k64_n64_gelu_res
                                         ${CMAKE_BINARY_DIR}/w8a8-tests/kir)
set_tests_properties(w8a8_kir_roundtrip PROPERTIES FIXTURES_REQUIRED w8a8_cases SKIP_RETURN_CODE 77)

# bad input: an unknown scheme is one line and exit 1
add_test(NAME w8a8_bad_scheme
         COMMAND sh -c "out=$(\"$0\" compile --quantize=w8 \"$1\" -o /dev/null 2>&1); rc=$?; echo \"$out\"; [ $rc = 1 ] && [ \"$out\" = 'kiln: --quantize=w8: unknown scheme; expected int8, w8a8 (or none)' ]"
                 ${KILN_BIN} ${T}/models/encoder_2l_op14/model.onnx)

# the real all-MiniLM-L6-v2 with --quantize=w8a8 against PyTorch's f32
# outputs: a loose tolerance and every output's cosine with f32 >= 0.999
# (tests/w8a8/minilm_w8a8.sh has the figures); skipped (77) offline. The
# sanitizer suite compiles it only (kiln's own code on the real model)
set(KILN_W8A8_MINILM_MODE check)
if(KILN_SANITIZE)
  set(KILN_W8A8_MINILM_MODE --compile-only)
endif()
add_test(NAME w8a8_minilm COMMAND ${T}/w8a8/minilm_w8a8.sh ${KILN_BIN} ${CMAKE_BINARY_DIR}/w8a8-tests/minilm
                                  ${KILN_W8A8_MINILM_MODE})
set_tests_properties(w8a8_minilm PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)

# kiln info --quantize=w8a8 --json names the scheme and counts the Linears
# whose inputs are quantized (one, K = 384)
add_test(NAME w8a8_info_json
         COMMAND sh -c "[ -f \"$1/model.onnx\" ] || exit 77; \"$0\" info \"$1/model.onnx\" --quantize=w8a8 --json | grep -q '\"scheme\": \"w8a8\", \"f32_bytes\": 76800, \"int8_bytes\": 19600, \"kept_f32\": 0, \"act_u8\": 1, \"act_f32\": 0,'"
                 ${KILN_BIN} ${KILN_W8A8_CASES}/m37_k384_n50_res)
set_tests_properties(w8a8_info_json PROPERTIES FIXTURES_REQUIRED w8a8_cases SKIP_RETURN_CODE 77)

# the transformer fixtures with --quantize=w8a8 against their f32 (PyTorch)
# references: 5e-2 absolute and relative, as for int8 (measured: largest
# max_abs_err 0.057 of logits up to ~3 on transformer_ed, cosines with the
# f32 model 0.99986-0.99997); the interpreter on one of them, 2 threads on
# the encoder-decoder
foreach(m decoder_layer_causal encoder_2l_op14 encoder_2l_op17 encoder_2l_padmask encoder_2l_prenorm transformer_ed)
  add_test(NAME w8a8_model_${m} COMMAND ${KILN_BIN} check -q --quantize=w8a8 --cflags=-O2\ -march=native
                                        --rtol=5e-2 --atol=5e-2 ${T}/models/${m})
endforeach()
# the AMX path on kiln_rt.h's model of TDPBUSD (-march=native above runs
# the instruction where this CPU has it)
foreach(m encoder_2l_op14)
  add_test(NAME w8a8_model_${m}_amxemu COMMAND ${KILN_BIN} check -q --quantize=w8a8 --cflags=-O2\ -DKILN_AMX_EMULATE
                                               --rtol=5e-2 --atol=5e-2 ${T}/models/${m})
endforeach()
add_test(NAME w8a8_model_encoder_2l_op14_interp
         COMMAND ${KILN_BIN} check -q --interp --quantize=w8a8 --rtol=5e-2 --atol=5e-2 ${T}/models/encoder_2l_op14)
add_test(NAME w8a8_model_transformer_ed_threads2
         COMMAND ${KILN_BIN} check -q --quantize=w8a8 --threads 2 --cflags=-O2\ -march=native
                 --rtol=5e-2 --atol=5e-2 ${T}/models/transformer_ed)
# generative decoding: X is quantized per row, so a row's result does not
# depend on the other rows: prefill + steps == prefill, bit for bit, as in f32
foreach(threads 1 2)
  add_test(NAME w8a8_generate_cache_tiny_t${threads}
           COMMAND bash ${T}/generate/run_cache.sh ${KILN_BIN} ${T}/generate/tiny_decoder.lua native ${threads} 0
                   --quantize=w8a8)
  add_test(NAME w8a8_generate_cache_llama_t${threads}
           COMMAND bash ${T}/generate/run_cache.sh ${KILN_BIN} ${CMAKE_SOURCE_DIR}/examples/llama.lua native ${threads} 0
                   --set ctx=32 --set prefill=8 --quantize=w8a8)
endforeach()

# the w8a8 kernel's C under clang -Weverything (-Werror), on the 512-bit
# VNNI path and the plain C one, with a rotation (K 384) and without (K 1003)
find_program(KILN_W8A8_CLANG clang)
if(KILN_W8A8_CLANG)
  foreach(c m37_k1003_n70_relu_res m128_k384_n97_gelu_tanh)
    foreach(v "native|-march=native" "plain|-DKILN_GEMM_SCALAR")
      string(REPLACE "|" ";" parts "${v}")
      list(GET parts 0 path)
      list(GET parts 1 flags)
      add_test(NAME w8a8_${c}_clang_${path}
               COMMAND ${T}/w8a8/kernel_case.sh ${KILN_BIN} ${KILN_W8A8_CASES}/${c} ${CMAKE_BINARY_DIR}/w8a8-tests/${c}_clang_${path}
                       "-O1 ${flags} -Weverything -Werror -Wno-padded -Wno-declaration-after-statement -Wno-unused-macros"
                       --cc=${KILN_W8A8_CLANG})
      set_tests_properties(w8a8_${c}_clang_${path} PROPERTIES FIXTURES_REQUIRED w8a8_cases SKIP_RETURN_CODE 77)
    endforeach()
  endforeach()
endif()

# bad input in the IR: a w8a8 Linear whose attributes and inputs do not go
# together (tests/w8a8/bad_kir.sh): one line each, exit 1, no C
add_test(NAME w8a8_bad_kir COMMAND ${T}/w8a8/bad_kir.sh ${KILN_BIN} ${KILN_W8A8_CASES}/m5_k64_n64_gelu_res
                                   ${CMAKE_BINARY_DIR}/w8a8-tests/bad_kir)
set_tests_properties(w8a8_bad_kir PROPERTIES FIXTURES_REQUIRED w8a8_cases SKIP_RETURN_CODE 77)
