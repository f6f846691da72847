/* bound_rows.c — a decoder's prefill computes only its chunk's real tokens
 * in the products that dominate it. A prefill entry always has P rows (its
 * shapes are fixed), but a prompt of n < P tokens fills only n of them;
 * the rest are padding whose results nothing reads (cached attention
 * skips them, the cache write clips to the count, the logits come from
 * row count-1). So each BlockLinear of the entry whose X has one row per
 * token gets the entry's count as its `rows` input: the kernel multiplies
 * those rows and zeroes the others, and a 5-token prompt costs about 5
 * rows of work instead of P. Nothing to do outside decoders, for the step
 * entry (one row), or with the f32 GEMM (its kernels have fixed M). */
#include "../ops.h"
#include "../passes.h"

bool pass_bound_rows(Graph *g, const PassOptions *o, Diag *d) {
  (void)o;
  if (!g->decoder)
    return true;
  int *entry = graph_decoder_entries(g, d);
  if (!entry)
    return false;
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = &g->nodes[i];
    if (n->dead || n->op != OP_BLOCKLINEAR || entry[i] < 0 || node_has_in(n, 3))
      continue;
    const DecoderEntry *en = &g->decoder->entries[entry[i]];
    const Type *x = &gval(g, n->in[0])->type;
    int64_t k = x->rank > 0 ? x->dims[x->rank - 1] : 0;
    if (en->tokens < 2 || k <= 0 || type_numel(x) / k != en->tokens)
      continue; /* not one row per token */
    int in[4] = {n->in[0], n->in[1], node_has_in(n, 2) ? n->in[2] : -1, en->count_vid};
    n->in = arena_dup(g->arena, in, sizeof in);
    n->nin = 4;
  }
  graph_count_uses(g);
  return true;
}
