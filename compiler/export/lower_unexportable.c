/* lower_unexportable.c — kiln export's answer for ops that have no ONNX
 * form: a decoder's KV-cache write and cached attention (compiler/ops/
 * kv_cache.c) exist only inside a generative model's entry points, whose
 * state is updated in place between calls. ONNX has no such state, so
 * export refuses them with a message instead of writing a wrong graph.
 * Im2Row, conv_gemm's rows of windows, and its Winograd transforms are
 * refused the same way. */
#include "../ir/ops.h"

bool unexportable_lower(Graph *g, int node, Diag *d) {
  return diag_node(d, g, &g->nodes[node], "has no ONNX form: it is part of a decoder's KV cache (decoder{}), "
                   "which lives in the generated C's state; expected a model without decoder{} for kiln export");
}

/* Im2Row (compiler/ops/im2row.c) exists only after the conv_gemm pass,
 * which export does not run by default: the Conv it came from is the ONNX
 * form. */
bool im2row_lower(Graph *g, int node, Diag *d) {
  return diag_node(d, g, &g->nodes[node], "has no ONNX form: it is the conv_gemm pass's layout of a Conv; "
                   "expected --passes= without conv_gemm for kiln export (the Conv is exported as it is)");
}

/* WinogradIn and WinogradOut (compiler/ops/winograd.c), conv_gemm's form
 * of a 3x3 Conv, likewise. */
bool winograd_lower(Graph *g, int node, Diag *d) {
  return diag_node(d, g, &g->nodes[node], "has no ONNX form: it is the conv_gemm pass's Winograd transform of a "
                   "Conv; expected --passes= without conv_gemm for kiln export (the Conv is exported as it is)");
}
