/* fuse_blocks.c — the fuse_blocks pass: products and gathers that
 * read ggml block-quantized weights (DequantizeBlocks of a u8 constant,
 * compiler/ir/blockquant.h) read the blocks themselves instead
 * (compiler/ops/block_linear.c):
 *
 *   MatMul(x, Transpose(DequantizeBlocks(Wb))) [-> Add bias[N]]  -> BlockLinear(x, Wb, bias?)
 *   Gemm(x, DequantizeBlocks(Wb), c[N]?) {transB=1}               -> BlockLinear(x, Wb, c?)
 *   Gather(DequantizeBlocks(Wb), ids) {axis=0}                     -> BlockGather(Wb, ids)
 *
 * W is [N,K] as torch's Linear holds it and GGUF stores it (nn.linear's
 * x:matmul(w:transpose())), so the product's output columns are W's rows
 * of blocks. The DequantizeBlocks node is not part of the match: one table
 * may feed a gather and a product (tied embeddings), and each reader is
 * rewritten on its own; dce drops the node once nobody reads it. A
 * DequantizeBlocks with another reader (a MatMul by W untransposed, whose
 * blocks run along N) stays and runs as itself. Runs before fuse_normalize
 * and fuse_linear, which would otherwise see the Transpose and MatMul.
 *
 * With --kquant-act=q8 a product by K-quant blocks (Q4_K, Q5_K, Q6_K,
 * Q8_K) or Q5_0/Q5_1 gets act="q8": its GEMVs (fewer than 4 rows of X) quantize X to
 * int8 and sum in integers (block_linear.c, qgemm_q8act.c). */
#include <string.h>

#include "../ir/blockquant.h"
#include "../ir/ops.h"
#include "passes.h"
#include "fuse_match.h"

/* v = DequantizeBlocks(Wb) of a 2-D shape [rows, cols]: that node. */
static Node *blocks_of(Fuser *f, int v) {
  Node *dq = v >= 0 ? fm_def(f, v, OP_DEQUANTIZEBLOCKS) : NULL;
  return dq && f->g->vals[v].type.rank == 2 ? dq : NULL;
}

/* w = Transpose(DequantizeBlocks(Wb)) swapping the two dims, read only by
 * the product: the DequantizeBlocks node, the Transpose in *tr. */
static Node *transposed_blocks(Fuser *f, int w, Node **tr) {
  *tr = fm_def(f, w, OP_TRANSPOSE);
  if (!*tr || !fm_sole(f, w))
    return NULL;
  const Attr *perm = attr_get(*tr, "perm");
  if (perm && (perm->kind != ATTR_INTS || perm->n != 2 || perm->ints[0] != 1 || perm->ints[1] != 0))
    return NULL;
  return blocks_of(f, (*tr)->in[0]);
}

/* Gemm(x, W, c) computes x·Wᵀ + c exactly when transB=1, transA=0 and
 * alpha = beta = 1. */
static bool gemm_is_linear(const Node *n) {
  return attr_int(n, "transA", 0) == 0 && attr_int(n, "transB", 0) == 1 && attr_float(n, "alpha", 1.0) == 1.0 &&
         attr_float(n, "beta", 1.0) == 1.0;
}

static bool fuse_product(Fuser *f, Node *n) {
  Graph *g = f->g;
  int x = n->in[0], bias = -1;
  Node *tr = NULL, *dq = NULL;
  if (n->op == OP_MATMUL)
    dq = transposed_blocks(f, n->in[1], &tr);
  else if (gemm_is_linear(n))
    dq = blocks_of(f, n->in[1]);
  if (!dq)
    return false;
  const Type *wt = &g->vals[dq->out[0]].type, *xt = &g->vals[x].type;
  int64_t nn = wt->dims[0], k = wt->dims[1];
  if (xt->dt != DT_F32 || xt->rank < 1 || xt->dims[xt->rank - 1] != k || (n->op == OP_GEMM && xt->rank != 2))
    return false;
  if (n->op == OP_GEMM && node_has_in(n, 2)) {
    bias = n->in[2];
    if (!fm_is_param(g, bias, DT_F32, nn))
      return false;
  }
  Match m = {0};
  if (tr)
    fm_take(&m, g, tr);
  fm_take(&m, g, n);
  Node *last = n;
  int y = n->out[0];
  Node *add = bias < 0 ? fm_sole_user(f, y, OP_ADD) : NULL;
  if (add && fm_is_param(g, fm_other(add, y), DT_F32, nn) && type_equal(&g->vals[add->out[0]].type, &g->vals[y].type)) {
    bias = fm_other(add, y);
    fm_take(&m, g, add);
    last = add;
  }
  const char *fmt = attr_str(dq, "format", "");
  int in[3] = {x, dq->in[0], bias};
  Node *fn = fm_fuse_into(f, &m, last, OP_BLOCKLINEAR, in, bias >= 0 ? 3 : 2);
  fm_set_str(g, fn, "format", fmt);
  fm_fuse_done(f, fn, "block_linear");
  return true;
}

static bool fuse_gather(Fuser *f, Node *n) {
  Graph *g = f->g;
  Node *dq = blocks_of(f, n->in[0]);
  if (!dq || attr_int(n, "axis", 0) != 0)
    return false;
  Match m = {0};
  fm_take(&m, g, n);
  const char *fmt = attr_str(dq, "format", "");
  int in[2] = {dq->in[0], n->in[1]};
  Node *fn = fm_fuse_into(f, &m, n, OP_BLOCKGATHER, in, 2);
  fm_set_str(g, fn, "format", fmt);
  fm_fuse_done(f, fn, "block_gather");
  return true;
}

static bool blocks_at(Fuser *f, Node *n) {
  if (n->op == OP_MATMUL || n->op == OP_GEMM)
    return fuse_product(f, n);
  return n->op == OP_GATHER && fuse_gather(f, n);
}

bool pass_fuse_blocks(Graph *g, const PassOptions *o, Diag *d) {
  (void)d;
  if (!fm_sweep(g, o, -1, blocks_at))
    return false;
  for (int i = 0; o->kquant_act_q8 && i < g->nnodes; i++) {
    Node *n = &g->nodes[i];
    BqFormat bf;
    if (n->op == OP_BLOCKLINEAR && bq_format_from_name(attr_str(n, "format", ""), &bf) && bq_act_q8_format(bf) &&
        !attr_get(n, "act"))
      fm_set_str(g, n, "act", "q8");
  }
  return true;
}
