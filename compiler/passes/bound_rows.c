/* bound_rows.c — a decoder's prefill computes only its chunk's real tokens
 * in the products that dominate it. A prefill entry always has P rows (its
 * shapes are fixed), but a prompt of n < P tokens fills only n of them;
 * the rest are padding whose results nothing reads (cached attention
 * skips them, the cache write clips to the count, the logits come from
 * row count-1). So each product of the entry whose X has one row per
 * token — BlockLinear (block-quantized W) and Linear (f32 or int8 W, the
 * packed GEMM) — gets the entry's count as its `rows` input (BlockLinear's
 * fourth, Linear's seventh): the kernel multiplies those rows and zeroes
 * the others, and a 5-token prompt costs about 5 rows of work instead of
 * P. An f32 MatMul by a constant weight (a projection without bias, which
 * fuse_linear leaves alone) becomes the Linear that computes the same: its
 * kernel is the same packed GEMM. Nothing to do outside decoders or for
 * the step entry (one row). */
#include "../ir/ops.h"
#include "passes.h"

/* MatMul(X f32[..., K], W f32[K, N] constant): Linear(X, W) is the same
 * product, rounded the same, emitted by the same GEMM. */
static bool weight_matmul(const Graph *g, const Node *n) {
  if (n->op != OP_MATMUL || n->nin != 2)
    return false;
  const Value *x = gval(g, n->in[0]), *w = gval(g, n->in[1]);
  return x->type.dt == DT_F32 && x->type.rank >= 2 && w->data && w->type.dt == DT_F32 && w->type.rank == 2;
}

/* The input slot of the op's rows count, or -1 for other ops. */
static int rows_slot(const Graph *g, const Node *n) {
  return n->op == OP_BLOCKLINEAR ? 3 : n->op == OP_LINEAR || weight_matmul(g, n) ? 6 : -1;
}

/* n's inputs with slot `at` set to vid (absent ones between are '_'). */
static void set_input(Graph *g, Node *n, int at, int vid) {
  int *in = arena_alloc(g->arena, sizeof(int) * (size_t)(at + 1));
  for (int j = 0; j <= at; j++)
    in[j] = j < n->nin ? n->in[j] : -1;
  in[at] = vid;
  n->in = in;
  n->nin = at + 1;
}

bool pass_bound_rows(Graph *g, const PassOptions *o, Diag *d) {
  (void)o;
  if (!g->decoder)
    return true;
  int *entry = graph_decoder_entries(g, d);
  if (!entry)
    return false;
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = &g->nodes[i];
    int slot = rows_slot(g, n);
    if (n->dead || slot < 0 || entry[i] < 0 || node_has_in(n, slot))
      continue;
    const DecoderEntry *en = &g->decoder->entries[entry[i]];
    const Type *x = &gval(g, n->in[0])->type;
    int64_t k = x->rank > 0 ? x->dims[x->rank - 1] : 0;
    if (en->tokens < 2 || k <= 0 || type_numel(x) / k != en->tokens)
      continue; /* not one row per token */
    if (n->op == OP_MATMUL)
      n->op = OP_LINEAR; /* no attributes: act "none" */
    set_input(g, n, slot, en->count_vid);
  }
  graph_count_uses(g);
  return true;
}
