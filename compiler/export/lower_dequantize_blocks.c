/* lower_dequantize_blocks.c — kiln export's lowering of DequantizeBlocks
 * (ops.def's lower column): ONNX has no ggml block formats, so the blocks
 * are dequantized at export time into an f32 initializer (the reference
 * arithmetic, blockquant.h) that an Identity passes on. The exported file
 * is 4-8x larger than the blocks; it computes exactly what kiln's _eval
 * computes. */
#include "../blockquant.h"
#include "../build.h"
#include "../ops.h"

bool dequantize_blocks_lower(Graph *g, int node, Diag *d) {
  const Node *n = &g->nodes[node];
  Value *raw = gval(g, n->in[0]);
  if (!raw->data)
    return diag_node(d, g, n, "export: the blocks are not a constant; expected constant weights");
  Type yt = gval(g, n->out[0])->type;
  Tensor in = {raw->type, raw->data}, out = {yt, arena_alloc(g->arena, type_bytes(&yt) + 1)};
  if (!dequantize_blocks_eval(n, &in, &out, d))
    return false;
  Lowering l = lw_start(g, node, DT_F32, d);
  int c = ir_const_in_place(g, lw_name(&l, "f32"), DT_F32, yt.rank, yt.dims, out.data);
  return lw_result(&l, lw_unary(&l, OP_IDENTITY, c), 0);
}
