/* onnx_decoder.c — `kiln compile decoder_with_past.onnx --kv-cache=N`: an
 * ONNX decoder exported with a KV cache in its interface (torch
 * `use_cache=True`: inputs input_ids [B, S], optional attention_mask
 * [B, past+S] and position_ids [B, S], past_key_values.L.key / .value
 * [B, H, past, D]; outputs logits [B, S, V] and present.L.key / .value
 * [B, H, past+S, D]) into kiln's generative model (Graph.decoder, issue
 * 10): the graph the Lua frontend's decoder{} builds, so the emitter
 * writes NAME_prefill / NAME_step / NAME_length for it.
 *
 * onnx_decoder_match.c finds the pattern; here the graph is copied twice
 * into a new one — for T = prefill tokens and for T = 1, B = 1 — with a
 * value map: constants (and nodes that read only constants) once, shared;
 * input_ids from the entry's tokens, position_ids from start + 0..T-1;
 * each Concat becomes a CacheWrite of k_new as rows [T, Hkv, D] into a
 * state [ctx, Hkv, D] both entries share, and y becomes
 * CachedAttention(q, kcache, vcache, start, count) with the scale folded
 * in (torch's Transpose to heads-first and back peeled off where it is
 * there); Shape of K or V is made ([1, Hkv, start + T, D]); the logits are
 * the last real token's row, taken where the row-wise tail before them
 * starts. attention_mask is dropped (one stream, every position real: all
 * ones), and with it the causal-mask arithmetic that read the past's
 * shape; present.* outputs are dropped (the caches are the present).
 * DESIGN.md, "ONNX decoders with a past", says why it is done this way. */
#include <string.h>

#include "../ir/build.h"
#include "onnx_decoder.h"
#include "onnx_decoder_match.h"
#include "../ir/ops.h"

/* ---- the new graph ------------------------------------------------------------ */

typedef struct Out {
  Graph *g;                  /* the decoder graph */
  Src *s;
  int *smap;                 /* source value -> new value, for shared values */
  int *map;                  /* the same for the entry being copied */
  const char *entry;
  DType kv_dt;               /* the caches' dtype: f32, or f16/bf16 (--kv-dtype) */
} Out;

/* op(in) with one new output named entry:hint; returns the output. */
static int add(Out *o, int op, const char *hint, const int *in, int nin, int *node) {
  Graph *g = o->g;
  int y = ir_value(g, arena_printf(g->arena, "%s:%s", o->entry, hint));
  int idx = graph_add_node(g, op, arena_printf(g->arena, "%s:%s", o->entry, hint), in, nin, &y, 1);
  g->nodes[idx].origin = "kiln --kv-cache";
  if (node)
    *node = idx;
  return y;
}

static int add_i64(Out *o, const char *hint, const int64_t *v, int n) {
  return ir_const_i64(o->g, arena_printf(o->g->arena, "%s:%s", o->entry, hint), v, n);
}

static int reshape(Out *o, const char *hint, int x, const int64_t *shape, int n) {
  int in[2] = {x, add_i64(o, arena_printf(o->g->arena, "%s_shape", hint), shape, n)};
  return add(o, OP_RESHAPE, hint, in, 2, NULL);
}

static int transpose(Out *o, const char *hint, int x, const int64_t *perm) {
  int idx, y = add(o, OP_TRANSPOSE, hint, &x, 1, &idx);
  ir_attr_ints(o->g, idx, "perm", perm, 4);
  return y;
}

/* Source value v in the new graph. */
static int lookup(Out *o, int v) {
  if (v < 0)
    return -1;
  if (!o->s->shared[v])
    return o->map[v];
  if (o->smap[v] < 0) { /* an initializer, copied once */
    const Value *sv = gval(o->s->g, v);
    int nv = graph_add_value(o->g, sv->name);
    Value *w = gval(o->g, nv);
    w->type = sv->type;
    w->data = sv->data;
    o->smap[v] = nv;
  }
  return o->smap[v];
}

/* A KV cache: state [ctx, H, D] named like its past, zeros at first. */
static int cache_state(Out *o, int past, int64_t ctx) {
  const Value *p = gval(o->s->g, past);
  Type t = {.dt = o->kv_dt, .rank = 3, .dims = {ctx, p->type.dims[1], p->type.dims[3]}};
  return graph_add_state_in_place(o->g, p->name, t);
}

/* The attention ending in source node i, over the caches. */
static void put_attention(Out *o, PastAttn *p, const DecoderEntry *e, int i, int64_t ctx) {
  const Graph *sg = o->s->g;
  const char *nm = sg->nodes[i].name ? sg->nodes[i].name : "attention";
  static const int64_t heads_first[4] = {0, 2, 1, 3};
  int64_t hd = gval(sg, p->kpast)->type.dims[3], vd = gval(sg, p->vpast)->type.dims[3];
  Arena *a = o->g->arena;
  if (p->kstate < 0) {
    p->kstate = cache_state(o, p->kpast, ctx);
    p->vstate = cache_state(o, p->vpast, ctx);
  }
  /* [1, H, T, D] -> [1, T, H, D] (unless torch's transpose was peeled off) -> [T, H, D] */
  int q = lookup(o, p->q);
  if (!p->seq_first[0])
    q = transpose(o, arena_printf(a, "%s/q_t", nm), q, heads_first);
  q = reshape(o, arena_printf(a, "%s/q_rows", nm), q, (int64_t[]){e->tokens, -1, hd}, 3);
  if (p->scale_vid >= 0) {
    int in[2] = {q, lookup(o, p->scale_vid)};
    q = add(o, p->scale_op, arena_printf(a, "%s/q_scaled", nm), in, 2, NULL);
  }
  int rows[2], caches[2];
  for (int kv = 0; kv < 2; kv++) {
    const char *what = kv ? "v" : "k";
    int x = lookup(o, kv ? p->vnew : p->knew);
    if (!p->seq_first[1 + kv])
      x = transpose(o, arena_printf(a, "%s/%s_t", nm, what), x, heads_first);
    rows[kv] = reshape(o, arena_printf(a, "%s/%s_rows", nm, what), x,
                       (int64_t[]){e->tokens, -1, kv ? vd : hd}, 3);
    int in[4] = {kv ? p->vstate : p->kstate, rows[kv], e->start_vid, e->count_vid};
    caches[kv] = add(o, OP_CACHEWRITE, arena_printf(a, "%s/%s_cache", nm, what), in, 4, NULL);
  }
  int idx, in[5] = {q, caches[0], caches[1], e->start_vid, e->count_vid};
  int y = add(o, OP_CACHEDATTENTION, arena_printf(a, "%s/cached", nm), in, 5, &idx);
  ir_attr_float(o->g, idx, "scale", p->scale);
  /* [T, H, Dv] -> [1, T, H, Dv]: what the transpose after the MatMul gave,
   * or -> [1, H, T, Dv], what the MatMul gave */
  y = reshape(o, arena_printf(a, "%s/y4", nm), y, (int64_t[]){1, e->tokens, -1, vd}, 4);
  if (p->out_t >= 0)
    o->map[sg->nodes[p->out_t].out[0]] = y;
  else
    o->map[sg->nodes[i].out[0]] = transpose(o, arena_printf(a, "%s/y", nm), y, heads_first);
}

/* Shape of a past Concat's output, [1, H, start + T, D]: a constant when
 * nothing reads the sequence dim (a scale from the head size), else
 * computed from start. */
static void put_shape(Out *o, const DecoderEntry *e, int i) {
  const Graph *sg = o->s->g;
  int c = o->s->cat_of[sg->nodes[i].in[0]] - 1;
  const PastAttn *p = &o->s->at[c / 2];
  const Type *pt = &gval(sg, c % 2 ? p->vpast : p->kpast)->type;
  const char *nm = sg->nodes[i].name ? sg->nodes[i].name : "Shape";
  Arena *a = o->g->arena;
  int y;
  if (o->s->shape_kind[i] == 2) {
    y = add_i64(o, nm, (int64_t[]){1, pt->dims[1], 1, pt->dims[3]}, 4);
  } else {
    int in[2] = {e->start_vid, add_i64(o, arena_printf(a, "%s/T", nm), &e->tokens, 1)}, idx;
    int parts[3] = {add_i64(o, arena_printf(a, "%s/BH", nm), (int64_t[]){1, pt->dims[1]}, 2),
                    add(o, OP_ADD, arena_printf(a, "%s/keys", nm), in, 2, NULL),
                    add_i64(o, arena_printf(a, "%s/D", nm), &pt->dims[3], 1)};
    y = add(o, OP_CONCAT, nm, parts, 3, &idx);
    ir_attr_int(o->g, idx, "axis", 0);
  }
  o->map[sg->nodes[i].out[0]] = y;
}

/* A copy of source node i reading the mapped inputs. */
static void put_copy(Out *o, int i, bool shared) {
  const Graph *sg = o->s->g;
  const Node *n = &sg->nodes[i];
  Arena *a = o->g->arena;
  int *in = arena_alloc(a, sizeof(int) * (size_t)(n->nin + 1));
  int *out = arena_alloc(a, sizeof(int) * (size_t)(n->nout + 1));
  for (int j = 0; j < n->nin; j++)
    in[j] = lookup(o, n->in[j]);
  for (int j = 0; j < n->nout; j++) {
    const char *vn = gval(sg, n->out[j])->name;
    out[j] = ir_value(o->g, shared ? vn : arena_printf(a, "%s:%s", o->entry, vn));
    *(shared ? &o->smap[n->out[j]] : &o->map[n->out[j]]) = out[j];
  }
  const char *name = n->name ? n->name : node_op_name(n);
  int idx = graph_add_node(o->g, n->op, shared ? name : arena_printf(a, "%s:%s", o->entry, name), in, n->nin,
                           out, n->nout);
  Node *m = &o->g->nodes[idx];
  m->opset = n->opset;
  m->origin = n->origin;
  m->nattr = n->nattr;
  m->attrs = n->nattr ? arena_dup(a, n->attrs, sizeof(Attr) * (size_t)n->nattr) : NULL;
}

/* The source graph once more, as entry e. */
static void put_entry(Out *o, DecoderEntry *e, int64_t ctx) {
  Src *s = o->s;
  Graph *sg = s->g, *g = o->g;
  o->entry = e->name;
  for (int v = 0; v < sg->nvals; v++)
    o->map[v] = -1;
  decoder_entry_inputs(g, e);
  o->map[s->ids] = reshape(o, "input_ids", e->tokens_vid, (int64_t[]){1, -1}, 2);
  if (s->pos >= 0) { /* start + 0 .. T-1 */
    int64_t *steps = arena_alloc(g->arena, sizeof(int64_t) * (size_t)e->tokens);
    for (int64_t i = 0; i < e->tokens; i++)
      steps[i] = i;
    int in[2] = {e->start_vid, add_i64(o, "steps", steps, (int)e->tokens)};
    o->map[s->pos] = reshape(o, "position_ids", add(o, OP_ADD, "positions", in, 2, NULL), (int64_t[]){1, -1}, 2);
  }
  bool first = e == &g->decoder->entries[0];
  for (int i = 0; i < sg->nnodes; i++) {
    if (!s->live[i] || s->skip[i] || s->tail[i] || (s->shared_node[i] && !first))
      continue;
    if (s->attn_at[i] >= 0)
      put_attention(o, &s->at[s->attn_at[i]], e, i, ctx);
    else if (s->shape_kind[i])
      put_shape(o, e, i);
    else
      put_copy(o, i, s->shared_node[i]);
  }
  /* the row of the last real token where the tail starts ([1, T, ...] ->
   * [1, 1, ...]), the tail on it, the logits flattened */
  int one = add_i64(o, "one", (int64_t[]){1}, 1);
  int last = add(o, OP_SUB, "last", (int[]){e->count_vid, one}, 2, NULL);
  int idx, in[2] = {lookup(o, s->cut), last};
  o->map[s->cut] = add(o, OP_GATHER, "last_row", in, 2, &idx);
  ir_attr_int(g, idx, "axis", 1);
  for (int i = 0; i < sg->nnodes; i++)
    if (s->tail[i])
      put_copy(o, i, false);
  int y = reshape(o, "logits", lookup(o, s->logits), (int64_t[]){-1}, 1);
  Value *v = gval(g, y);
  v->name = arena_printf(g->arena, "%s.logits", e->name);
  v->is_output = true;
  graph_add_output(g, y);
  e->logits_out = g->noutputs - 1;
}

Graph *onnx_decoder_from_past(Graph *sg, int64_t ctx, int64_t prefill, DType kv_dt, Diag *d) {
  KILN_ASSERT(prefill >= 1 && prefill <= ctx);
  Src s = {.g = sg, .ctx = ctx};
  if (!past_match(&s, d))
    return NULL;
  Arena *a = sg->arena;
  Graph *g = graph_new(a, sg->file);
  g->name = sg->name;
  g->opset = sg->opset;
  Decoder *dec = arena_alloc(a, sizeof *dec);
  *dec = (Decoder){.ctx = ctx, .nentries = 2,
                   .entries = {{.name = "prefill", .tokens = prefill}, {.name = "step", .tokens = 1}}};
  g->decoder = dec;
  Out o = {.g = g, .s = &s, .kv_dt = kv_dt};
  o.smap = arena_alloc(a, sizeof(int) * (size_t)(sg->nvals + 1));
  o.map = arena_alloc(a, sizeof(int) * (size_t)(sg->nvals + 1));
  for (int v = 0; v < sg->nvals; v++)
    o.smap[v] = -1;
  for (int k = 0; k < dec->nentries; k++)
    put_entry(&o, &dec->entries[k], ctx);
  if (!graph_toposort(g, d))
    return NULL;
  return g;
}
