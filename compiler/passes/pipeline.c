/* pipeline.c — the one list of passes, in the order `kiln compile` runs
 * them. `kiln passes` prints this table; --passes= picks from it. */
#include <string.h>

#include "passes.h"

const Pass pass_list[] = {
    {"kv_cache", pass_kv_cache, "with --kv-cache=N: an ONNX decoder exported with its past to prefill and step "
                                "entries, each Concat(past, new) a CacheWrite into an N-position cache and the "
                                "attention over it a CachedAttention"},
    {"bind", pass_bind, "give symbolic input dims their --shape values"},
    {"infer", pass_infer, "infer every dtype and shape, evaluating constant nodes on the way"},
    {"fold", pass_fold, "drop nodes whose outputs are all constants"},
    {"simplify", pass_simplify, "remove Identity/Dropout and same-dtype Casts, Pow 1 and 2 to x and x·x, make Reshape-like ops free aliases"},
    {"fold_bn", pass_fold_bn, "BatchNormalization, and Mul/Add by a per-channel constant, after a Conv by a "
                              "constant weight into that weight and bias"},
    {"fuse_blocks", pass_fuse_blocks, "x·Wᵀ and Gather of ggml block-quantized W to BlockLinear/BlockGather, "
                                      "reading the blocks"},
    {"fuse_normalize", pass_fuse_normalize, "Gemm by a constant to Linear, Transposes that move only dims of 1 to views"},
    {"fuse_attention", pass_fuse_attention, "Q K^T scale [+ mask] [+ top-k] -> Softmax -> . V to one "
                                            "Attention, reading sliced Q, K, V in place"},
    {"fuse_gelu", pass_fuse_gelu, "the erf and tanh GELU decompositions to Gelu"},
    {"conv_gemm", pass_conv_gemm, "f32 Conv by a constant weight (group 1) [+ Relu/Gelu] to Im2Row -> Linear (the "
                                  "packed GEMM, bias and act in its epilogue) -> Transpose, large rows a block at a "
                                  "time (ConvBlocks), 3x3 stride 1 by Winograd (WinogradIn -> MatMul -> "
                                  "WinogradOut); a ConvTranspose whose kernel is its stride to Linear -> the taps "
                                  "placed by a Transpose; elementwise ops, MaxPool and depthwise convs after it "
                                  "computed channels last"},
    {"fuse_layernorm", pass_fuse_layernorm, "the LayerNorm decomposition (ReduceMean .. Sqrt .. Div) to LayerNormalization"},
    {"fuse_rmsnorm", pass_fuse_rmsnorm, "the RMSNorm decomposition (x·x .. ReduceMean .. Sqrt .. Div) to RMSNormalization"},
    {"fuse_dynquant", pass_fuse_dynquant, "DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul [+ bias] "
                                          "[+ Relu/Gelu] (ONNX Runtime's quantize_dynamic) to a w8a8 Linear"},
    {"fuse_linear", pass_fuse_linear, "MatMul by a constant weight [+ bias] [+ Relu/Gelu] to Linear"},
    {"fuse_qdq", pass_fuse_qdq, "QuantizeLinear -> DequantizeLinear (static, per tensor) before an int8 Linear "
                                "(quantize_static's QDQ) to a w8a8 Linear with that scale and zero point"},
    {"fuse_addnorm", pass_fuse_addnorm, "Add then LayerNormalization to AddLayerNorm"},
    {"fuse_residual", pass_fuse_residual, "Linear [-> views] + residual Add to Linear with a residual input"},
    {"fuse_transpose", pass_fuse_transpose, "Transposes around a MatMul of run-time operands to PermutedMatMul"},
    {"fuse_chain", pass_fuse_chain, "chains of elementwise ops to one ElementwiseChain loop"},
    {"quantize", pass_quantize, "with --quantize=int8|w8a8: constant f32 weights of Linear and MatMul to int8 "
                                "with a scale per output column, Gather tables with one per row; w8a8: Linear "
                                "quantizes its input per row to u8 {act_quant}"},
    {"bound_rows", pass_bound_rows, "in a decoder's prefill, products by a weight compute only the chunk's "
                                    "real tokens (BlockLinear's and Linear's rows = the entry's count); with "
                                    "--rows-axis, an encoder's products, norms and attention its run-time count's"},
    {"dce", pass_dce, "remove nodes whose results nobody uses"},
    {"equal_layers", pass_equal_layers, "make equal layers the same nodes: what the first computes for all moves "
                                        "before it; a graph output the last writes goes to the workspace, copied out"},
    {"plan", pass_plan, "place intermediate tensors in one workspace by liveness, equal layers at equal offsets"},
};
const int pass_count = KILN_COUNT(pass_list);

const Pass *pass_find(const char *name) {
  for (int i = 0; i < pass_count; i++)
    if (strcmp(pass_list[i].name, name) == 0)
      return &pass_list[i];
  return NULL;
}

/* The passes an option asks for, and how it asks. */
static const struct {
  PassFn fn;
  bool (*asked)(const PassOptions *o);
  const char *option;
} asked_passes[] = {
    {pass_kv_cache, pass_kv_cache_asked, "--kv-cache=N"},
};

bool pass_runs(const Pass *p, const PassOptions *o) {
  for (int i = 0; i < KILN_COUNT(asked_passes); i++)
    if (asked_passes[i].fn == p->fn)
      return asked_passes[i].asked(o);
  return true;
}

const char *pass_option(const Pass *p) {
  for (int i = 0; i < KILN_COUNT(asked_passes); i++)
    if (asked_passes[i].fn == p->fn)
      return asked_passes[i].option;
  return NULL;
}
