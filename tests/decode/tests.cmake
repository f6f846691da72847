# ---- decode speed (tests/decode/) ----
# The prefill's rows bound on the f32 GEMM (compiler/passes/bound_rows.c,
# Linear's rows input): Linear with a run-time row count against numpy
# (tools/make_rows_bound_cases.py: rows past the count are 0; counts 1, all,
# past M and negative; M off the row tiles; K split in blocks; relu, gelu,
# gelu_tanh and a residual; int8 W; W not a constant), under every GEMM
# variant, the interpreter, 2 threads (the panels split, and one panel's
# row tiles split) and OpenBLAS where it is installed
file(GLOB KILN_ROWS_CASES LIST_DIRECTORIES true ${T}/generated/rows_bound/*)
foreach(dir ${KILN_ROWS_CASES})
  if(IS_DIRECTORY ${dir})
    get_filename_component(name ${dir} NAME)
    kiln_variant_tests(${dir} decode_rows_${name} "${KILN_GEMM_VARIANTS}" --rtol=1e-4 --atol=1e-4)
    add_test(NAME decode_rows_${name}_interp COMMAND ${KILN_BIN} check -q --interp --rtol=1e-4 --atol=1e-4 ${dir})
    add_test(NAME decode_rows_${name}_threads2 COMMAND ${KILN_BIN} check -q --threads 2 --rtol=1e-4 --atol=1e-4 ${dir})
    add_test(NAME decode_rows_${name}_threads2_avx512
             COMMAND ${KILN_BIN} check -q --threads 2 --isa=avx512 --rtol=1e-4 --atol=1e-4 "--cflags=${KILN_V16}" ${dir})
    if(KILN_CBLAS_H AND KILN_OPENBLAS)
      add_test(NAME decode_rows_${name}_openblas
               COMMAND ${KILN_BIN} check -q --gemm=openblas --rtol=1e-4 --atol=1e-4 ${dir})
    endif()
  endif()
endforeach()
# ... and whole decoders built with and without bound_rows (tests/decode/
# rows_match.sh): every prefill length 1 .. P, then a second chunk and a
# step, bit for bit in logits and caches. P 13 and 7 are off every row
# tile; ONNX decoders (Llama-like, GPT-2-like) and a Lua decoder{}; one
# and two threads; --quantize=int8, --precision=bf16, an f16 cache
set(D ${T}/decode/rows_match.sh)
set(P ${T}/generate/past)
add_test(NAME decode_rows_match_llama_native_t1 COMMAND bash ${D} ${KILN_BIN} ${P}/decoder_llama.onnx 13 native 1)
add_test(NAME decode_rows_match_llama_generic_t2 COMMAND bash ${D} ${KILN_BIN} ${P}/decoder_llama.onnx 13 generic 2)
add_test(NAME decode_rows_match_gpt2_int8
         COMMAND bash ${D} ${KILN_BIN} ${P}/decoder_with_past.onnx 8 native 1 --quantize=int8)
add_test(NAME decode_rows_match_llama_bf16
         COMMAND bash ${D} ${KILN_BIN} ${P}/decoder_llama.onnx 7 avx512 1 --precision=bf16)
add_test(NAME decode_rows_match_hf_kv_f16
         COMMAND bash ${D} ${KILN_BIN} ${P}/decoder_hf_style.onnx 5 native 1 --kv-dtype=f16)
add_test(NAME decode_rows_match_lua_t2 COMMAND bash ${D} ${KILN_BIN} ${T}/generate/tiny_decoder.lua 8 generic 2)
# Linear's rows in the text IR: _eval zeroes the rows past the count
# (folded), and a rows input of another type or a sixth input is refused
file(GLOB KILN_DECODE_KIR ${T}/decode/*.kir)
add_test(NAME decode_linear_rows_kir COMMAND ${T}/passes/run_pass_tests.sh ${KILN_BIN} ${KILN_DECODE_KIR})
# f16 KV caches read by the hardware conversion (compiler/ops/kv_cache.c:
# vcvtph2ps, 16 values under AVX-512, 8 under F16C): the same decoder's C
# built with AVX-512, with F16C only and with neither (-mno-f16c
# -mno-avx512f: the portable widening) gives the same logits byte for
# byte, prompt and steps to a full cache of 300 (over the attention's
# chunk of 256 keys): a Lua decoder with head dim 32 (both widths) and an
# ONNX one with --kv-dtype=f16 and head dim 8 (F16C's width only)
add_test(NAME decode_f16_match_lua COMMAND bash ${T}/decode/f16_match.sh ${KILN_BIN} ${T}/decode/f16_decoder.lua)
add_test(NAME decode_f16_match_onnx COMMAND bash ${T}/decode/f16_match.sh ${KILN_BIN} ${P}/decoder_llama.onnx)
