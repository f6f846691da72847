/* lower_unexportable.c — kiln export's answer for ops that have no ONNX
 * form: a decoder's KV-cache write and cached attention (compiler/ops/
 * kv_cache.c) exist only inside a generative model's entry points, whose
 * state is updated in place between calls. ONNX has no such state, so
 * export refuses them with a message instead of writing a wrong graph. */
#include "../ir/ops.h"

bool unexportable_lower(Graph *g, int node, Diag *d) {
  return diag_node(d, g, &g->nodes[node], "has no ONNX form: it is part of a decoder's KV cache (decoder{}), "
                   "which lives in the generated C's state; expected a model without decoder{} for kiln export");
}
