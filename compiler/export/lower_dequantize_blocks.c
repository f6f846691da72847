/* lower_dequantize_blocks.c — kiln export's lowering of DequantizeBlocks
 * (ops.def's lower column): ONNX has no ggml block formats, so the blocks
 * are dequantized at export time into an f32 initializer (the reference
 * arithmetic, blockquant.h) that an Identity passes on. The exported file
 * is 4-8x larger than the blocks; it computes exactly what kiln's _eval
 * computes. */
#include "../ir/blockquant.h"
#include "../ir/build.h"
#include "../ir/ops.h"

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

/* The blocks of node n's input `slot` as an f32 constant [rows, cols]. */
static int blocks_f32(Lowering *l, const Node *n, int slot) {
  Graph *g = l->g;
  Value *raw = gval(g, n->in[slot]);
  BqFormat fmt;
  if (!raw->data || !bq_format_from_name(attr_str(n, "format", NULL), &fmt)) {
    l->failed = !diag_node(l->d, g, n, "export: the blocks are not a constant; expected constant weights");
    return -1;
  }
  int64_t dims[2] = {raw->type.dims[0], raw->type.dims[1] / bq_formats[fmt].block_bytes * bq_formats[fmt].block_values};
  float *w = arena_alloc(g->arena, sizeof(float) * (size_t)(dims[0] * dims[1] + 1));
  for (int64_t r = 0; r < dims[0]; r++)
    bq_dequantize_row(fmt, (const uint8_t *)raw->data + r * raw->type.dims[1], w + r * dims[1], dims[1]);
  return ir_const_in_place(g, lw_name(l, "f32"), DT_F32, 2, dims, w);
}

/* BlockLinear(x, Wb, bias?): MatMul(x, Transpose(W)) (+ bias), the order
 * its _eval rounds in. */
bool block_linear_lower(Graph *g, int node, Diag *d) {
  Lowering l = lw_start(g, node, DT_F32, d);
  const Node *n = &g->nodes[node];
  int x = n->in[0], bias = node_has_in(n, 2) ? n->in[2] : -1;
  int w = blocks_f32(&l, n, 1);
  if (w < 0)
    return false;
  int t = lw_node(&l, OP_TRANSPOSE, &w, 1, 1);
  int64_t perm[2] = {1, 0};
  ir_attr_ints(g, t, "perm", perm, 2);
  int y = lw_binary(&l, OP_MATMUL, x, lw_finish(&l, t));
  if (bias >= 0 && lw_need_opset(&l, 7, "broadcasting Add"))
    y = lw_binary(&l, OP_ADD, y, bias);
  return lw_result(&l, y, 0);
}

/* BlockGather(Wb, ids): Gather(W, ids). */
bool block_gather_lower(Graph *g, int node, Diag *d) {
  Lowering l = lw_start(g, node, DT_F32, d);
  const Node *n = &g->nodes[node];
  int ids = n->in[1], w = blocks_f32(&l, n, 0);
  return lw_result(&l, lw_binary(&l, OP_GATHER, w, ids), 0);
}
