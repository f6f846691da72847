# tests/hf/tests.cmake — Hugging Face exports (transformers 4.30 on torch
# 1.13, opset 14; tools/export_hf_fixtures.py writes tests/hf/<arch>/ with
# torch's outputs, not run by CI): each fixture through `kiln check`
# (generated C, --isa=native, 2 threads, the interpreter), and a fusion
# check that fails if what fuses today regresses (tests/hf/check_fused.sh:
# exact "compiled" counts in `kiln info`). Included by tests/tests.cmake.
set(KILN_HF_FUSED_gpt2 Attention=2 Softmax=0 Linear=8 Gelu=2 AddLayerNorm=5 Cast=0 Pow=0 Where=0)
set(KILN_HF_FUSED_gptneo Attention=2 Softmax=0 Linear=6 AddLayerNorm=5 Cast=0 Pow=0 Where=0)
set(KILN_HF_FUSED_t5enc Attention=2 Softmax=0 RMSNormalization=5 Pow=0 ReduceMean=0 Sqrt=0)
set(KILN_HF_FUSED_llama Attention=2 Softmax=0 Max=0 RMSNormalization=5 Pow=0 ReduceMean=0 Sqrt=0)
set(KILN_HF_FUSED_bart Attention=3 Softmax=0 Transpose=0 Mul=2 Linear=16 AddLayerNorm=7 Pow=0)
foreach(arch gpt2 gptneo t5enc llama bart)
  set(dir ${T}/hf/${arch})
  add_test(NAME hf_${arch}_c COMMAND ${KILN_BIN} check -q ${dir})
  add_test(NAME hf_${arch}_native COMMAND ${KILN_BIN} check -q --isa=native ${dir})
  add_test(NAME hf_${arch}_threads COMMAND ${KILN_BIN} check -q --threads 2 ${dir})
  add_test(NAME hf_${arch}_interp COMMAND ${KILN_BIN} check -q --interp ${dir})
  add_test(NAME hf_${arch}_fused COMMAND ${T}/hf/check_fused.sh ${KILN_BIN} ${dir} ${KILN_HF_FUSED_${arch}})
endforeach()
# Llama's clamp of the masked scores (Attention's score_min) on rows masked
# entirely, against numpy (tools/make_hf_clamp_case.py): generated C (the
# vector and plain C paths), the fused and the unfused _evals
set(dir ${T}/hf/clamp_masked_rows)
add_test(NAME hf_clamp_masked_rows_c COMMAND ${KILN_BIN} check -q ${dir})
add_test(NAME hf_clamp_masked_rows_scalar COMMAND ${KILN_BIN} check -q "--cflags=-O2 -DKILN_GEMM_SCALAR" ${dir})
add_test(NAME hf_clamp_masked_rows_threads COMMAND ${KILN_BIN} check -q --threads 2 --isa=native ${dir})
add_test(NAME hf_clamp_masked_rows_interp COMMAND ${KILN_BIN} check -q --interp ${dir})
add_test(NAME hf_clamp_masked_rows_unfused
         COMMAND ${KILN_BIN} check -q --interp --passes=bind,infer,fold,simplify,dce,plan ${dir})
add_test(NAME hf_clamp_masked_rows_fused COMMAND ${T}/hf/check_fused.sh ${KILN_BIN} ${dir} Attention=1 Max=0)
