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
 * the step entry (one row).
 *
 * An encoder compiled with --rows-axis=INPUT:AXIS[,INPUT:AXIS...] gets a
 * run-time token count the same way (NAME_run_rows, docs/rows.md): the
 * listed inputs' AXIS is the token axis, of compiled length S. The pass
 * follows that axis through the graph (views and transposes move it,
 * elementwise ops broadcast it) and gives every row-wise op that costs
 * per token the count as its `rows` input: Linear (and MatMul by a
 * constant), AddLayerNorm, Attention (queries and keys past the count are
 * not visited). Those products and norms write 0 to their rows past the
 * count; other row-local ops (elementwise, Gather by token ids, views)
 * run over all S rows, their rows past the count unused. An op that
 * mixes tokens is handled exactly or refused with the node's name:
 * ReduceSum over the token axis reads rows that must be 0 past the count
 * (a bounded product or norm, or a Mul by one: the masked-mean pooling of
 * sentence encoders), so it sums the live rows; anything else across
 * the axis (ReduceMean over tokens, a Reshape merging the token axis
 * with another, a Slice of it, Linear rows that are not one per token) is
 * an error. A second walk (pack_walk) decides whether NAME_run_batch may
 * run several sentences' rows end to end through one call (docs/batch.md,
 * compiler/emit/emit_pack.h) and keeps its token axes in RowsBound. */
#include <stdlib.h>
#include <string.h>

#include "../ir/build.h"
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

static bool bound_encoder(Graph *g, const char *spec, Diag *d);

bool pass_bound_rows(Graph *g, const PassOptions *o, Diag *d) {
  if (o && o->rows_axis) {
    if (g->decoder)
      return diag_error(d, "%s: --rows-axis is for encoders; a decoder's prefill already takes its token count",
                        g->file ? g->file : "model");
    return bound_encoder(g, o->rows_axis, d);
  }
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

/* ---- encoders: --rows-axis ------------------------------------------------ */

typedef struct Rows {
  Graph *g;
  int *ax;     /* per value: its token axis, -1 none */
  bool *zero;  /* per value: its rows past the count are 0 */
  int64_t s;   /* the token axis's length */
  Diag *d;
  bool dry;    /* the packs' walk (pack_walk): the graph is left as it is */
} Rows;

/* "f32[1,128,384]" of value v, for messages. */
static const char *tstr(Rows *r, int v) {
  char b[160];
  return arena_strdup(r->g->arena, type_str(&gval(r->g, v)->type, b, sizeof b));
}

static bool refuse(Rows *r, const Node *n, int v, const char *why) {
  return diag_node(r->d, r->g, n, "reads the token axis (--rows-axis) of '%s' (axis %d of %s), and %s; expected "
                   "ops that keep each token's row apart (docs/rows.md)", gval(r->g, v)->name, r->ax[v], tstr(r, v),
                   why);
}

/* The only axis of t besides `ax` and `keep` (or -1) whose dim is not 1? */
static bool one_row_per_token(const Type *t, int ax, int keep) {
  for (int i = 0; i < t->rank; i++)
    if (i != ax && i != keep && t->dims[i] != 1)
      return false;
  return true;
}

/* Where a view (Reshape, Flatten, Squeeze, Unsqueeze) puts axis `ax` of
 * in: the out axis with the same elements before it and the same length,
 * or -1 when the view merges or splits it. */
static int view_axis(const Type *in, int ax, const Type *out) {
  int64_t before = 1, o = 1;
  for (int i = 0; i < ax; i++)
    before *= in->dims[i];
  for (int j = 0; j < out->rank; j++) {
    if (o == before && out->dims[j] == in->dims[ax] && (in->dims[ax] != 1))
      return j;
    o *= out->dims[j];
  }
  return -1;
}

/* The perm attribute's inverse image of axis ax (out axis j with perm[j]
 * == ax), or -1. */
static int perm_axis(const Node *n, const char *name, int rank, int ax) {
  const Attr *a = attr_get(n, name);
  if (!a)
    return ax;
  if (a->kind != ATTR_INTS || a->n != rank)
    return -1;
  for (int j = 0; j < rank; j++)
    if (a->ints[j] == ax)
      return j;
  return -1;
}

static void set_rows(Rows *r, Node *n, int slot) {
  if (!r->dry)
    set_input(r->g, n, slot, r->g->rows->vid);
}

/* An elementwise op (broadcasting, numpy rules): the output's token axis
 * from its inputs'; all that have one must agree. */
static bool rows_elementwise(Rows *r, Node *n) {
  const Type *yt = &gval(r->g, n->out[0])->type;
  int at = -1;
  bool zero = false;
  for (int i = 0; i < n->nin; i++) {
    int v = n->in[i];
    if (v < 0 || r->ax[v] < 0)
      continue;
    int j = r->ax[v] + yt->rank - gval(r->g, v)->type.rank;
    if (at >= 0 && j != at)
      return refuse(r, n, v, "another input has its token axis elsewhere");
    at = j;
    zero = zero || r->zero[v];
  }
  r->ax[n->out[0]] = at;
  /* 0 · x is 0 (x finite): a Mul keeps rows of 0; a Cast too */
  r->zero[n->out[0]] = zero && (n->op == OP_MUL || n->op == OP_CAST);
  return true;
}

/* The reduced axes of a Reduce* node (true for all when it lists none). */
static void reduced_axes(const Graph *g, const Node *n, int rank, bool *red) {
  const Attr *a = attr_get(n, "axes");
  const Value *ai = node_in(g, n, 1);
  int na = 0;
  int64_t axes[MAX_RANK];
  if (ai && ai->data)
    for (int64_t k = 0; k < type_numel(&ai->type) && na < MAX_RANK; k++)
      axes[na++] = el_get_i(ai->type.dt, ai->data, k);
  else if (a && a->kind == ATTR_INTS)
    for (int k = 0; k < a->n && na < MAX_RANK; k++)
      axes[na++] = a->ints[k];
  for (int i = 0; i < rank; i++)
    red[i] = na == 0;
  for (int k = 0; k < na; k++) {
    int x;
    if (axis_norm(axes[k], rank, &x))
      red[x] = true;
  }
}

static bool rows_reduce(Rows *r, Node *n) {
  int v = n->in[0], ax = r->ax[v];
  const Type *t = &gval(r->g, v)->type;
  bool red[MAX_RANK];
  reduced_axes(r->g, n, t->rank, red);
  if (red[ax]) {
    if (n->op != OP_REDUCESUM)
      return refuse(r, n, v, "reduces over it (a mean or max over the padded length differs from one over the "
                             "live tokens)");
    if (!r->zero[v])
      return refuse(r, n, v, "sums over it, but its rows past the count are not known to be 0 (expected the "
                             "output of a Linear, AddLayerNorm, or a Mul by one)");
    return true; /* no token axis left: the sum of the live rows */
  }
  bool keep = attr_int(n, "keepdims", 1) != 0;
  int j = ax;
  for (int i = 0; i < ax && !keep; i++)
    j -= red[i];
  r->ax[n->out[0]] = j;
  return true;
}

static bool rows_linear(Rows *r, Node *n) {
  int v = n->in[0];
  const Type *x = &gval(r->g, v)->type;
  if (r->ax[v] == x->rank - 1)
    return refuse(r, n, v, "multiplies along it");
  if (!one_row_per_token(x, r->ax[v], x->rank - 1))
    return refuse(r, n, v, "its rows are not one per token (other dims than the token axis and the last are not 1)");
  for (int i = 1; i < n->nin; i++)
    if (n->in[i] >= 0 && r->ax[n->in[i]] >= 0 && i != 3)
      return refuse(r, n, n->in[i], "it is a weight");
  if (r->dry && n->op == OP_LINEAR && !strcmp(attr_str(n, "act_quant", "none"), "u8_tensor"))
    return refuse(r, n, v, "it quantizes all its rows with one scale (sentences packed together would share it)");
  if (n->op == OP_MATMUL && !r->dry)
    n->op = OP_LINEAR;
  set_rows(r, n, n->op == OP_BLOCKLINEAR ? 3 : 6);
  r->ax[n->out[0]] = r->ax[v];
  r->zero[n->out[0]] = true;
  return true;
}

static bool rows_addnorm(Rows *r, Node *n) {
  int v = n->in[0], w = n->in[1];
  if (r->ax[v] < 0) { /* A and B have one shape: the one with a token axis decides */
    v = n->in[1];
    w = n->in[0];
  }
  const Type *t = &gval(r->g, v)->type;
  int axis;
  if (!axis_norm(attr_int(n, "axis", -1), t->rank, &axis) || r->ax[v] >= axis)
    return refuse(r, n, v, "normalises along it");
  if (r->ax[w] >= 0 && r->ax[w] != r->ax[v])
    return refuse(r, n, w, "the other addend has its token axis elsewhere");
  for (int i = 2; i < n->nin; i++)
    if (n->in[i] >= 0 && r->ax[n->in[i]] >= 0)
      return refuse(r, n, n->in[i], "it is a scale or bias");
  for (int i = 0; i < t->rank; i++)
    if (i < axis && i != r->ax[v] && t->dims[i] != 1)
      return refuse(r, n, v, "its rows are not one per token");
  set_rows(r, n, 4);
  for (int j = 0; j < n->nout; j++) {
    r->ax[n->out[j]] = r->ax[v];
    r->zero[n->out[j]] = true;
  }
  return true;
}

/* Q [.., S, Dh], Kᵀ [.., Dh, T], V [.., T, Dv] (after their perms): the
 * token axis must be S of Q and T of K and V, no slice across it. */
static bool rows_attention(Rows *r, Node *n) {
  static const char *const perm[3] = {"q_perm", "k_perm", "v_perm"}, *const slice[3] = {"q_slice", "k_slice",
                                                                                        "v_slice"};
  for (int i = 0; i < 3; i++) {
    int v = n->in[i], rank = gval(r->g, v)->type.rank;
    if (r->ax[v] < 0)
      return diag_node(r->d, r->g, n, "input %d ('%s') has no token axis (--rows-axis) but Q does or K does; expected "
                       "self-attention over the tokens", i, gval(r->g, v)->name);
    const Attr *sl = attr_get(n, slice[i]);
    if (sl && sl->kind == ATTR_INTS && sl->n == 3 && sl->ints[0] == r->ax[v])
      return refuse(r, n, v, "takes a slice of it");
    if (perm_axis(n, perm[i], rank, r->ax[v]) != (i == 1 ? rank - 1 : rank - 2))
      return refuse(r, n, v, i == 1 ? "it is not the key axis of K^T" : i ? "it is not V's key axis"
                                                                         : "it is not Q's query axis");
  }
  set_rows(r, n, 4);
  int rank = gval(r->g, n->out[0])->type.rank;
  r->ax[n->out[0]] = perm_axis(n, "y_perm", rank, rank - 2);
  return true;
}

static bool rows_node(Rows *r, Node *n) {
  int first = -1;
  for (int i = 0; i < n->nin && first < 0; i++)
    if (n->in[i] >= 0 && r->ax[n->in[i]] >= 0)
      first = n->in[i];
  if (first < 0)
    return true; /* nothing per token */
  const OpInfo *op = &op_table[n->op];
  switch (n->op) {
  case OP_LINEAR:
  case OP_BLOCKLINEAR:
    if (n->in[0] != first)
      return refuse(r, n, first, "it is a weight");
    return rows_linear(r, n);
  case OP_MATMUL:
    if (n->in[0] != first || !weight_matmul(r->g, n))
      return refuse(r, n, first, "it is a MatMul of two run-time operands");
    return rows_linear(r, n);
  case OP_ADDLAYERNORM:
    return rows_addnorm(r, n);
  case OP_ATTENTION:
    return rows_attention(r, n);
  case OP_LAYERNORM: {
    int axis;
    const Type *t = &gval(r->g, first)->type;
    if (first != n->in[0] || !axis_norm(attr_int(n, "axis", -1), t->rank, &axis) || r->ax[first] >= axis)
      return refuse(r, n, first, "normalises along it");
    r->ax[n->out[0]] = r->ax[first];
    return true;
  }
  case OP_GATHER: {
    int axis;
    const Type *data = &gval(r->g, n->in[0])->type;
    if (first == n->in[0] || !axis_norm(attr_int(n, "axis", 0), data->rank, &axis))
      return refuse(r, n, first, "it gathers along it");
    r->ax[n->out[0]] = axis + r->ax[first];
    return true;
  }
  case OP_DEQUANTIZEGATHER: /* (table, ids, scale) and (blocks, ids): a row per id, ids' axes first */
  case OP_BLOCKGATHER:
    if (first != n->in[1])
      return refuse(r, n, first, "it gathers along it");
    r->ax[n->out[0]] = (int)attr_int(n, "axis", 0) + r->ax[first]; /* Gather's axis; BlockGather: 0 */
    return true;
  case OP_TRANSPOSE:
    r->ax[n->out[0]] = perm_axis(n, "perm", gval(r->g, first)->type.rank, r->ax[first]);
    r->zero[n->out[0]] = r->zero[first];
    return r->ax[n->out[0]] >= 0 || refuse(r, n, first, "its perm is not one");
  case OP_REDUCESUM: case OP_REDUCEMEAN: case OP_REDUCEMAX: case OP_REDUCEMIN: case OP_REDUCEPROD:
  case OP_REDUCEL1: case OP_REDUCEL2: case OP_REDUCESUMSQUARE: case OP_REDUCELOGSUM: case OP_REDUCELOGSUMEXP:
    return first == n->in[0] ? rows_reduce(r, n) : refuse(r, n, first, "it is the axes list");
  default:
    break;
  }
  if ((op->flags & OPF_VIEW) && first == n->in[0]) {
    int j = view_axis(&gval(r->g, first)->type, r->ax[first], &gval(r->g, n->out[0])->type);
    if (j < 0)
      return refuse(r, n, first, "merges it with another axis or splits it");
    r->ax[n->out[0]] = j;
    r->zero[n->out[0]] = r->zero[first];
    return true;
  }
  if ((op->flags & OPF_INPLACE) || n->op == OP_CAST || n->op == OP_CASTLIKE)
    return rows_elementwise(r, n);
  return refuse(r, n, first, "kiln does not know whether it keeps tokens apart");
}

/* Rows past the count that nothing reads need not be written: the
 * bounded Linears and AddLayerNorms leave them as they are (rows_keep=1)
 * unless a graph output or a ReduceSum over the token axis reads them,
 * directly or through Muls, Casts, views and transposes (the ops that
 * carry rows of 0: rows_elementwise, rows_node). Saves a memset of every
 * product's padding rows. */
static void keep_rows(Rows *r) {
  Graph *g = r->g;
  bool *need = arena_alloc(g->arena, sizeof(bool) * (size_t)(g->nvals + 1));
  for (int k = 0; k < g->noutputs; k++)
    need[g->outputs[k]] = true;
  for (int i = g->nnodes - 1; i >= 0; i--) {
    Node *n = &g->nodes[i];
    if (n->dead)
      continue;
    bool needed = false;
    for (int j = 0; j < n->nout; j++)
      needed = needed || need[n->out[j]];
    int slot = n->op == OP_LINEAR ? 6 : n->op == OP_ADDLAYERNORM ? 4 : -1;
    if (slot >= 0 && node_has_in(n, slot) && n->in[slot] == g->rows->vid) {
      if (!needed)
        ir_attr_int(g, i, "rows_keep", 1);
      continue;
    }
    bool carries = n->op == OP_MUL || n->op == OP_CAST || n->op == OP_TRANSPOSE || (op_table[n->op].flags & OPF_VIEW);
    if (n->op == OP_REDUCESUM && r->zero[n->in[0]] && r->ax[n->in[0]] >= 0 && r->ax[n->out[0]] < 0)
      needed = carries = true; /* sums over the token axis: reads every row */
    for (int k = 0; needed && carries && k < n->nin; k++)
      if (n->in[k] >= 0 && r->zero[n->in[k]])
        need[n->in[k]] = true;
  }
}

/* "input_ids:1,attention_mask:1": mark each listed input's axis; all of
 * one length S. */
static bool parse_rows_axis(Rows *r, const char *spec) {
  Graph *g = r->g;
  const char *p = spec;
  while (*p) {
    const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
    const char *colon = NULL;
    for (const char *q = p; q < end; q++)
      if (*q == ':')
        colon = q;
    char *num_end = NULL;
    long ax = colon ? strtol(colon + 1, &num_end, 10) : -1;
    if (!colon || colon == p || num_end != end || colon + 1 == end)
      return diag_error(r->d, "--rows-axis=%s: '%.*s' is not INPUT:AXIS; expected e.g. input_ids:1", spec,
                        (int)(end - p), p);
    char *name = arena_printf(g->arena, "%.*s", (int)(colon - p), p);
    int vid = -1;
    for (int i = 0; i < g->ninputs; i++)
      if (!strcmp(gval(g, g->inputs[i])->name, name))
        vid = g->inputs[i];
    if (vid < 0)
      return diag_error(r->d, "--rows-axis=%s: the model has no input '%s'", spec, name);
    const Type *t = &gval(g, vid)->type;
    int a;
    if (!axis_norm(ax, t->rank, &a))
      return diag_error(r->d, "--rows-axis=%s: axis %ld is out of range for input '%s' (%s); expected 0 to %d", spec,
                        ax, name, tstr(r, vid), t->rank - 1);
    if (r->s < 0)
      r->s = t->dims[a];
    if (t->dims[a] != r->s || r->s < 1)
      return diag_error(r->d, "--rows-axis=%s: axis %d of '%s' (%s) has %lld elements; expected %lld, as the first "
                        "listed, and at least 1", spec, a, name, tstr(r, vid), (long long)t->dims[a],
                        (long long)r->s);
    r->ax[vid] = a;
    p = comma ? comma + 1 : end;
  }
  return r->s > 0 || diag_error(r->d, "--rows-axis=: expected INPUT:AXIS[,INPUT:AXIS...]");
}

/* NAME_run_batch's packs (docs/batch.md, compiler/emit/emit_pack.c): the
 * walk again, leaving the graph as it is, with each unlisted input that has
 * exactly one axis of the token length S (the dims before it 1) taken as a
 * token input whose rows past the count are 0 — an attention_mask read
 * whole by NAME_run_rows (1 for the tokens, 0 after; the batch entry checks
 * each sentence's and runs one that is not so alone). What this walk
 * accepts is what a pack may compute once over several sentences' rows
 * end to end; where it refuses, the reason is kept and batches run
 * sentence after sentence. */
static void pack_walk(Graph *g, const Rows *r0, RowsBound *rb) {
  Diag d = {0};
  Rows r = {.g = g, .s = r0->s, .d = &d, .dry = true};
  int nv = g->nvals + 1;
  r.ax = arena_alloc(g->arena, sizeof(int) * (size_t)nv);
  r.zero = arena_alloc(g->arena, sizeof(bool) * (size_t)nv);
  for (int v = 0; v < nv; v++)
    r.ax[v] = -1;
  if (r.s < 2) {
    rb->pack_why = "the token axis has one element";
    return;
  }
  for (int i = 0; i < g->ninputs; i++) {
    int v = g->inputs[i];
    const Type *t = &gval(g, v)->type;
    r.ax[v] = r0->ax[v];
    if (r.ax[v] >= 0 || gval(g, v)->is_state)
      continue;
    int at = -1, found = 0;
    for (int a = 0; a < t->rank; a++)
      if (t->dims[a] == r.s) {
        at = a;
        found++;
      }
    bool lead = found == 1;
    for (int a = 0; lead && a < at; a++)
      lead = t->dims[a] == 1;
    if (lead) {
      r.ax[v] = at;
      r.zero[v] = true;
    }
  }
  for (int i = 0; i < g->nnodes; i++)
    if (!g->nodes[i].dead && !rows_node(&r, &g->nodes[i])) {
      rb->pack_why = arena_strdup(g->arena, d.msg);
      return;
    }
  rb->pack_axis = r.ax;
  rb->pack_zero = r.zero;
}

static bool bound_encoder(Graph *g, const char *spec, Diag *d) {
  Rows r = {.g = g, .s = -1, .d = d};
  int nv = g->nvals + 1;
  r.ax = arena_alloc(g->arena, sizeof(int) * (size_t)nv);
  r.zero = arena_alloc(g->arena, sizeof(bool) * (size_t)nv);
  for (int v = 0; v < nv; v++)
    r.ax[v] = -1;
  if (!parse_rows_axis(&r, spec))
    return false;
  const char *name = "rows";
  for (int k = 2; graph_find_value(g, name) >= 0; k++)
    name = arena_printf(g->arena, "rows_%d", k);
  RowsBound *rb = arena_alloc(g->arena, sizeof *rb);
  rb->vid = graph_add_value(g, name);
  rb->max = r.s;
  Value *rv = gval(g, rb->vid);
  rv->type.dt = DT_I64;
  rv->type.rank = 1;
  rv->type.dims[0] = 1;
  rv->is_input = true; /* made by no node: the entry point's argument */
  g->rows = rb;
  for (int i = 0; i < g->nnodes; i++)
    if (!g->nodes[i].dead && !rows_node(&r, &g->nodes[i]))
      return false;
  keep_rows(&r);
  pack_walk(g, &r, rb);
  rb->axis = r.ax;
  rb->zero = r.zero;
  rb->naxis = nv - 1;
  graph_count_uses(g);
  return true;
}
