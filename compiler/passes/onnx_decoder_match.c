/* onnx_decoder_match.c — finding, in an ONNX decoder exported with its
 * past (torch `use_cache=True`), what `kiln compile --kv-cache`
 * (onnx_decoder.c) turns into cache ops. Only connectivity and the past
 * inputs' declared shapes are read: nothing is inferred yet.
 *
 * The pattern, per layer, as torch exports it (the first mismatch is the
 * error, naming the node):
 *
 *   K = Concat(past.L.key, k_new) on axis 2     V = Concat(past.L.value, v_new) on axis 2
 *   [K, V -> repeat_kv: Unsqueeze(axes 2) -> Expand -> Reshape, grouped-query attention]
 *   s = MatMul(q, Transpose(K, perm 0,1,3,2))
 *   s -> any of: Div/Mul by a scale, Add of a mask, Where(mask, ., s), Cast -> Softmax(last axis) [-> Cast]
 *   y = MatMul(softmax, V)
 *
 * A term added to the scores must look like a mask (it is dropped): made
 * of comparisons or attention_mask, not of weights. Then: what the logits
 * need (whatever of it reads the mask, a past or K/V other than through
 * Shape is an error naming the node), what is the same in both entries
 * (constants), and the row-wise tail before the logits. */
#include <string.h>

#include "onnx_decoder.h"
#include "onnx_decoder_match.h"
#include "../ir/ops.h"

static bool const_ints(const Graph *g, int vid, int64_t *v, int *n);

static bool is_past(const Value *v, bool *key) {
  size_t n = strlen(v->name);
  if (strncmp(v->name, "past", 4) || v->data)
    return false;
  if (n > 4 && !strcmp(v->name + n - 4, ".key"))
    return *key = true;
  if (n > 6 && !strcmp(v->name + n - 6, ".value"))
    return !(*key = false);
  return false;
}

bool onnx_has_past_inputs(const Graph *g) {
  bool key;
  for (int i = 0; i < g->ninputs; i++)
    if (is_past(gval(g, g->inputs[i]), &key))
      return true;
  return false;
}

/* The nodes reading value vid: how many, the first in *first. */
static int readers(const Graph *g, int vid, int *first) {
  int k = 0;
  *first = -1;
  for (int i = 0; i < g->nnodes; i++)
    for (int j = 0; j < g->nodes[i].nin; j++)
      if (g->nodes[i].in[j] == vid) {
        if (!k++)
          *first = i;
        break;
      }
  return k;
}

/* A scalar the model fixes: an initializer, or a Constant node's value. */
static bool const_scalar(const Graph *g, int vid, double *x) {
  const Value *v = gval(g, vid);
  if (v->data && v->type.rank >= 0 && type_numel(&v->type) == 1 && dt_is_float(v->type.dt) && !dt_is_half(v->type.dt))
    return *x = el_get_f(v->type.dt, v->data, 0), true;
  if (v->producer < 0 || g->nodes[v->producer].op != OP_CONSTANT)
    return false;
  const Node *n = &g->nodes[v->producer];
  const Attr *a = attr_get(n, "value");
  if (a && a->kind == ATTR_TENSOR && a->t && a->t->data && type_numel(&a->t->type) == 1 &&
      dt_is_float(a->t->type.dt) && !dt_is_half(a->t->type.dt))
    return *x = el_get_f(a->t->type.dt, a->t->data, 0), true;
  if ((a = attr_get(n, "value_float")) && a->kind == ATTR_FLOAT)
    return *x = a->f, true;
  return false;
}

/* past: f32 [B, H, past, D] with B 1 or symbolic, H and D fixed. */
static bool check_past(const Graph *g, int vid, Diag *d) {
  const Value *v = gval(g, vid);
  const Type *t = &v->type;
  char ts[128];
  if (t->dt != DT_F32 || t->rank != 4 || t->dims[1] < 1 || t->dims[3] < 1 || (t->dims[0] != -1 && t->dims[0] != 1))
    return diag_error(d, "input '%s' is %s; expected f32 [batch, heads, past, head_dim] with heads and head_dim "
                      "fixed numbers (batch 1 or symbolic)", v->name, type_str(t, ts, sizeof ts));
  return true;
}

/* The one Concat(past, new) on the sequence axis that appends to past;
 * its node index, or -1 + d. */
static int past_concat(const Graph *g, int past, Diag *d) {
  const char *name = gval(g, past)->name;
  int found = -1;
  for (int i = 0; i < g->nnodes; i++) {
    const Node *n = &g->nodes[i];
    if (n->op != OP_CONCAT)
      continue;
    for (int j = 0; j < n->nin; j++)
      if (n->in[j] == past) {
        if (found >= 0)
          return diag_node(d, g, n, "appends to '%s' a second time; expected one Concat(past, new) per past", name), -1;
        if (n->nin != 2 || j != 0)
          return diag_node(d, g, n, "reads '%s' as input %d of %d; expected Concat(past, new): the past first, "
                           "then the new rows", name, j, n->nin), -1;
        int axis;
        int64_t a = attr_int(n, "axis", 1 << 20);
        if (!axis_norm(a, 4, &axis) || axis != 2)
          return diag_node(d, g, n, "concatenates '%s' on axis %lld; expected axis 2 (or -2), the sequence axis "
                           "of [batch, heads, past, head_dim]", name, (long long)a), -1;
        found = i;
      }
  }
  if (found < 0)
    diag_error(d, "input '%s' is not appended to; expected present = Concat('%s', new rows) on the sequence axis",
               name, name);
  return found;
}

/* The nodes reading vid other than Shape nodes (the shape of the keys
 * or values with their past is made, not read: put_shape): how many, the
 * first in *first. */
static int data_readers(const Graph *g, int vid, int *first) {
  int k = 0;
  *first = -1;
  for (int i = 0; i < g->nnodes; i++)
    for (int j = 0; j < g->nodes[i].nin; j++)
      if (g->nodes[i].in[j] == vid && g->nodes[i].op != OP_SHAPE) {
        if (!k++)
          *first = i;
        break;
      }
  return k;
}

/* Is node n Unsqueeze(x, axes [2])? (opset 13 on: axes an input) */
static bool unsqueeze_axis2(const Graph *g, const Node *n) {
  int64_t ax[8];
  int na = 0;
  if (n->op != OP_UNSQUEEZE)
    return false;
  const Attr *a = attr_get(n, "axes");
  if (a && a->kind == ATTR_INTS)
    return a->n == 1 && a->ints[0] == 2;
  return n->nin > 1 && const_ints(g, n->in[1], ax, &na) && na == 1 && ax[0] == 2;
}

/* Hugging Face's repeat_kv after the keys or values with their past:
 * Unsqueeze(axes 2) -> Expand -> Reshape, each key/value head once per
 * query head of its group — what CachedAttention does by indexing
 * (h / (H / Hkv)). The value after it, or v when there is none. */
static int skip_repeat(const Graph *g, int v) {
  int u, e, r;
  if (data_readers(g, v, &u) != 1 || !unsqueeze_axis2(g, &g->nodes[u]) ||
      data_readers(g, g->nodes[u].out[0], &e) != 1 || g->nodes[e].op != OP_EXPAND || g->nodes[e].in[0] != g->nodes[u].out[0] ||
      data_readers(g, g->nodes[e].out[0], &r) != 1 || g->nodes[r].op != OP_RESHAPE || g->nodes[r].in[0] != g->nodes[e].out[0])
    return v;
  return g->nodes[r].out[0];
}

/* The same backwards: the value repeat_kv read, or v. */
static int before_repeat(const Graph *g, int v) {
  int r = gval(g, v)->producer;
  if (r < 0 || g->nodes[r].op != OP_RESHAPE || g->nodes[r].in[0] < 0)
    return v;
  int e = gval(g, g->nodes[r].in[0])->producer;
  if (e < 0 || g->nodes[e].op != OP_EXPAND || g->nodes[e].in[0] < 0)
    return v;
  int u = gval(g, g->nodes[e].in[0])->producer;
  if (u < 0 || !unsqueeze_axis2(g, &g->nodes[u]) || g->nodes[u].in[0] < 0 || skip_repeat(g, g->nodes[u].in[0]) != v)
    return v;
  return g->nodes[u].in[0];
}

/* What the nodes a value is computed from say about it (up to 4096 of
 * them, through every input). */
typedef struct Cone {
  bool compare;      /* a comparison or boolean op, a bool constant: a mask is made of these */
  bool mask_input;   /* attention_mask */
  bool table;        /* a float constant of more than one element, a MatMul or Gemm: data, not a mask */
  bool input;        /* a graph input read other than by Shape */
  bool too_big;
} Cone;

static void cone_of(const Graph *g, int vid, Cone *c, bool *seen, int *budget) {
  if (vid < 0 || seen[vid])
    return;
  seen[vid] = true;
  if (--*budget < 0) {
    c->too_big = true;
    return;
  }
  const Value *v = gval(g, vid);
  if (v->producer < 0) {
    if (v->data && dt_is_float(v->type.dt) && type_numel(&v->type) > 1)
      c->table = true;
    else if (v->data && v->type.dt == DT_BOOL)
      c->compare = true;
    else if (!v->data) {
      c->input = true;
      c->mask_input = c->mask_input || !strcmp(v->name, "attention_mask");
    }
    return;
  }
  const Node *n = &g->nodes[v->producer];
  const Attr *a;
  switch (n->op) {
  case OP_SHAPE:
    return; /* a shape: numbers, whatever it reads */
  case OP_CONSTANT:
    if ((a = attr_get(n, "value")) && a->kind == ATTR_TENSOR && a->t) {
      c->table = c->table || (dt_is_float(a->t->type.dt) && type_numel(&a->t->type) > 1);
      c->compare = c->compare || a->t->type.dt == DT_BOOL;
    }
    return;
  case OP_LESS: case OP_LESSOREQUAL: case OP_GREATER: case OP_GREATEROREQUAL: case OP_EQUAL:
  case OP_NOT: case OP_AND: case OP_OR: case OP_XOR: case OP_TRILU: case OP_ISINF: case OP_ISNAN:
    c->compare = true;
    break;
  case OP_CAST:
    c->compare = c->compare || attr_int(n, "to", 0) == DT_BOOL;
    break;
  case OP_MATMUL: case OP_GEMM:
    c->table = true;
    break;
  default:
    break;
  }
  for (int j = 0; j < n->nin; j++)
    cone_of(g, n->in[j], c, seen, budget);
}

static Cone cone(const Graph *g, int vid) {
  Cone c = {0};
  bool *seen = arena_alloc(g->arena, (size_t)g->nvals + 1);
  int budget = 4096;
  cone_of(g, vid, &c, seen, &budget);
  return c;
}

/* The attention reading the keys K (a past Concat's output): fills q,
 * out_node, the scale and the value past; false + d. */
static bool match_attention(Src *s, PastAttn *at, int kcat, Diag *d) {
  Graph *g = s->g;
  int K = skip_repeat(g, g->nodes[kcat].out[0]), t, m;
  const char *kn = gval(g, K)->name;
  if (data_readers(g, K, &t) != 1 || g->nodes[t].op != OP_TRANSPOSE)
    return t < 0 ? diag_node(d, g, &g->nodes[kcat], "output '%s' is read by no node; expected the attention's "
                             "Transpose(perm 0,1,3,2) -> MatMul(q, keys)", kn)
                 : diag_node(d, g, &g->nodes[t], "reads the keys '%s'%s; expected them read by one Transpose(perm "
                             "0,1,3,2) into MatMul(q, keys), and by the present output", kn,
                             g->nodes[t].op == OP_TRANSPOSE ? " with other readers beside it" : "");
  const Attr *perm = attr_get(&g->nodes[t], "perm");
  static const int64_t want[4] = {0, 1, 3, 2};
  if (!perm || perm->n != 4 || memcmp(perm->ints, want, sizeof want))
    return diag_node(d, g, &g->nodes[t], "transposes the keys '%s' with another perm; expected perm [0, 1, 3, 2] "
                     "(the keys transposed for MatMul(q, keys))", kn);
  int kt = g->nodes[t].out[0];
  if (readers(g, kt, &m) != 1 || g->nodes[m].op != OP_MATMUL || g->nodes[m].in[1] != kt)
    return diag_node(d, g, m >= 0 ? &g->nodes[m] : &g->nodes[t], "reads the transposed keys; expected one "
                     "MatMul(q, transposed keys) making the scores");
  at->q = g->nodes[m].in[0];
  if (at->q < 0)
    return diag_node(d, g, &g->nodes[m], "has no queries; expected MatMul(q, transposed keys)");
  at->scale = 1;
  at->scale_vid = -1;
  int x = g->nodes[m].out[0];
  for (int steps = 0; steps < 32; steps++) {
    int c;
    int nr = readers(g, x, &c);
    if (nr != 1)
      return diag_node(d, g, &g->nodes[gval(g, x)->producer], "its output is read by %d nodes; expected one chain "
                       "scores -> scale / mask -> Softmax -> MatMul(probs, values)", nr);
    Node *n = &g->nodes[c];
    double f;
    Cone c2;
    int other = n->nin == 2 ? n->in[n->in[0] == x ? 1 : 0] : -1;
    if ((n->op == OP_DIV || n->op == OP_MUL) && other < 0)
      return diag_node(d, g, n, "has an absent input; expected the scores scaled by a value");
    switch (n->op) {
    case OP_DIV:
    case OP_MUL:
      if (n->op == OP_DIV && n->in[0] != x)
        return diag_node(d, g, n, "divides by the scores; expected the scores divided by a scale");
      if (const_scalar(g, other, &f))
        at->scale = n->op == OP_DIV ? at->scale / f : at->scale * f;
      else if ((c2 = cone(g, other)).input || c2.table || c2.too_big)
        return diag_node(d, g, n, "scales the scores by '%s', computed from %s; expected a scale: a constant, or "
                         "a number made from shapes (value.size(-1) ** 0.5)", gval(g, other)->name,
                         c2.too_big ? "more than 4096 values" : c2.input ? "an input" : "weights");
      else if (at->scale_vid < 0)
        at->scale_vid = other, at->scale_op = n->op;
      else
        return diag_node(d, g, n, "scales the scores a second time by a value that is not a constant; expected "
                         "at most one computed scale");
      break;
    case OP_ADD: /* + mask: made of comparisons (or attention_mask), not of weights (ALiBi slopes,
                    a relative-position table), which would be wrong to drop */
      c2 = cone(g, other);
      if (other < 0 || (!c2.compare && !c2.mask_input) || c2.table || c2.too_big)
        return diag_node(d, g, n, "adds '%s' to the scores, computed %s; expected a mask (made of comparisons or "
                         "attention_mask), which kiln drops: a bias on the scores (ALiBi, relative positions) is "
                         "not supported", other >= 0 ? gval(g, other)->name : "",
                         c2.too_big ? "from more than 4096 values" : c2.table ? "from weights" : "without a comparison");
      break;
    case OP_CAST:
      break;
    case OP_WHERE: /* Where(mask, fill, scores) or Where(mask, scores, fill), fill very negative */
      if (n->in[0] == x || n->nin != 3)
        return diag_node(d, g, n, "uses the scores as its condition; expected Where(mask, scores, fill) or "
                         "Where(mask, fill, scores)");
      if (!const_scalar(g, n->in[n->in[1] == x ? 2 : 1], &f) || f > -1e4)
        return diag_node(d, g, n, "fills the scores with '%s'; expected a mask's fill, a constant of -1e4 or less "
                         "(-inf, the float's lowest)", n->in[n->in[1] == x ? 2 : 1] >= 0 ?
                         gval(g, n->in[n->in[1] == x ? 2 : 1])->name : "");
      break;
    case OP_SOFTMAX: {
      int64_t axis = attr_int(n, "axis", n->opset >= 13 ? -1 : 1);
      if (axis != -1 && axis != 3)
        return diag_node(d, g, n, "has axis %lld; expected the softmax over the keys, axis -1 (or 3)", (long long)axis);
      int y = n->out[0], o;
      for (int casts = 0; casts < 4 && readers(g, y, &o) == 1 && g->nodes[o].op == OP_CAST; casts++)
        y = g->nodes[o].out[0]; /* softmax(.., dtype=float32).to(q.dtype) */
      if (readers(g, y, &o) != 1 || g->nodes[o].op != OP_MATMUL || g->nodes[o].in[0] != y)
        return diag_node(d, g, n, "its output is read by %s; expected one MatMul(probs, values)",
                         o < 0 ? "no node" : node_op_name(&g->nodes[o]));
      int V = g->nodes[o].in[1] >= 0 ? before_repeat(g, g->nodes[o].in[1]) : -1;
      int vc = V >= 0 ? gval(g, V)->producer : -1;
      bool key;
      if (vc < 0 || g->nodes[vc].op != OP_CONCAT || g->nodes[vc].nin != 2 || g->nodes[vc].in[0] < 0 ||
          !is_past(gval(g, g->nodes[vc].in[0]), &key) || key)
        return diag_node(d, g, &g->nodes[o], "multiplies the attention by '%s'; expected the values with their "
                         "past, Concat(past_key_values.L.value, new values)", V >= 0 ? gval(g, V)->name : "");
      at->vpast = g->nodes[vc].in[0];
      at->vall = V;
      at->vnew = g->nodes[vc].in[1];
      at->out_node = o;
      if (!check_past(g, at->vpast, d) || past_concat(g, at->vpast, d) != vc)
        return false;
      return true;
    }
    default:
      return diag_node(d, g, n, "reads the attention scores; expected only Div/Mul by a scale, Add or Where of "
                       "a mask, and Cast between MatMul(q, keys) and the Softmax (Cast after it)");
    }
    x = n->out[0];
  }
  return diag_node(d, g, &g->nodes[m], "starts a chain of more than 32 nodes; expected scores -> scale / mask -> "
                   "Softmax -> MatMul(probs, values)");
}

static bool heads_swap(const Node *n) {
  static const int64_t swap[4] = {0, 2, 1, 3};
  const Attr *perm = n->op == OP_TRANSPOSE ? attr_get(n, "perm") : NULL;
  return perm && perm->kind == ATTR_INTS && perm->n == 4 && !memcmp(perm->ints, swap, sizeof swap);
}

/* torch makes q, k, v heads-first with Transpose(0,2,1,3) and turns the
 * result back the same way; the cache wants rows [S, H, D]: read the
 * values before the first transpose and give the one after the second. */
static void peel_transposes(const Graph *g, PastAttn *at) {
  int *v[3] = {&at->q, &at->knew, &at->vnew};
  for (int i = 0; i < 3; i++) {
    int p = gval(g, *v[i])->producer;
    if (p >= 0 && heads_swap(&g->nodes[p]) && g->nodes[p].in[0] >= 0) {
      *v[i] = g->nodes[p].in[0];
      at->seq_first[i] = true;
    }
  }
  int y = g->nodes[at->out_node].out[0], r;
  if (!gval(g, y)->is_output && readers(g, y, &r) == 1 && heads_swap(&g->nodes[r]))
    at->out_t = r;
}

/* Inputs, outputs and the attentions of the source graph. */
static bool analyse(Src *s, Diag *d) {
  Graph *g = s->g;
  Arena *a = g->arena;
  s->ids = s->mask = s->pos = s->logits = -1;
  s->at = arena_alloc(a, sizeof(PastAttn) * (size_t)(g->ninputs + 1));
  s->poison = arena_alloc(a, sizeof(char *) * (size_t)(g->nvals + 1));
  s->attn_at = arena_alloc(a, sizeof(int) * (size_t)(g->nnodes + 1));
  s->skip = arena_alloc(a, (size_t)g->nnodes + 1);
  s->cat_of = arena_alloc(a, sizeof(int) * (size_t)(g->nvals + 1));
  s->shape_kind = arena_alloc(a, (size_t)g->nnodes + 1);
  for (int i = 0; i < g->nnodes; i++)
    s->attn_at[i] = -1;
  for (int i = 0; i < g->ninputs; i++) {
    int vid = g->inputs[i];
    const Value *v = gval(g, vid);
    bool key;
    char ts[128];
    if (v->data)
      continue;
    if (!strcmp(v->name, "input_ids") || !strcmp(v->name, "position_ids")) {
      if (v->type.dt != DT_I64 || v->type.rank != 2 || (v->type.dims[0] != -1 && v->type.dims[0] != 1))
        return diag_error(d, "input '%s' is %s; expected i64 [batch, seq]", v->name, type_str(&v->type, ts, sizeof ts));
      *(v->name[0] == 'i' ? &s->ids : &s->pos) = vid;
    } else if (!strcmp(v->name, "attention_mask")) {
      s->mask = vid;
      s->poison[vid] = "outside the attentions' masking; expected the mask used only to mask scores (kiln drops "
                       "it: one stream, every position real)";
    } else if (is_past(v, &key)) {
      if (!check_past(g, vid, d))
        return false;
      s->poison[vid] = "other than through the Concat that appends to it; expected the past read by that Concat "
                       "only (positions given as position_ids, the mask built from attention_mask)";
    } else
      return diag_error(d, "input '%s' is not one kiln knows in a model with a past; expected input_ids, "
                        "attention_mask, position_ids and past_key_values.L.key / .value", v->name);
  }
  if (s->ids < 0)
    return diag_error(d, "the model has no input 'input_ids'; expected the token ids as input_ids [batch, seq]");
  for (int i = 0; s->pos >= 0 && i < g->nnodes; i++) { /* learned positions: a table of enough rows */
    const Node *n = &g->nodes[i];
    const Value *t = n->op == OP_GATHER && n->nin == 2 && n->in[1] == s->pos && n->in[0] >= 0 ? gval(g, n->in[0]) : NULL;
    if (t && t->data && t->type.rank >= 1 && t->type.dims[0] < s->ctx)
      return diag_node(d, g, n, "looks position_ids up in '%s', a table of %lld positions; expected --kv-cache=%lld "
                       "or less (the model knows no later positions)", t->name, (long long)t->type.dims[0],
                       (long long)t->type.dims[0]);
  }
  for (int i = 0; i < g->noutputs; i++) {
    const char *name = gval(g, g->outputs[i])->name;
    if (!strncmp(name, "present", 7))
      continue;
    if (s->logits >= 0)
      return diag_error(d, "outputs '%s' and '%s' are not present.*; expected one output, the logits, beside the "
                        "present keys and values", gval(g, s->logits)->name, name);
    s->logits = g->outputs[i];
  }
  if (s->logits < 0)
    return diag_error(d, "every output is a present.*; expected the logits [batch, seq, vocab] among them");
  /* each key past: its Concat, the attention that reads it, the value past */
  for (int i = 0; i < g->ninputs; i++) {
    int vid = g->inputs[i];
    bool key;
    if (!is_past(gval(g, vid), &key) || !key)
      continue;
    int kc = past_concat(g, vid, d);
    if (kc < 0)
      return false;
    PastAttn *at = &s->at[s->nat];
    *at = (PastAttn){.kpast = vid, .knew = g->nodes[kc].in[1], .kstate = -1, .vstate = -1, .out_t = -1};
    if (at->knew < 0)
      return diag_node(d, g, &g->nodes[kc], "appends nothing to '%s'; expected Concat(past, new rows)",
                       gval(g, vid)->name);
    if (!match_attention(s, at, kc, d))
      return false;
    if (at->vnew < 0)
      return diag_error(d, "the Concat that appends to '%s' appends nothing; expected Concat(past, new rows)",
                        gval(g, at->vpast)->name);
    peel_transposes(g, at);
    const Type *kt = &gval(g, vid)->type, *vt = &gval(g, at->vpast)->type;
    if (kt->dims[1] != vt->dims[1])
      return diag_error(d, "inputs '%s' and '%s' have %lld and %lld heads; expected the same", gval(g, vid)->name,
                        gval(g, at->vpast)->name, (long long)kt->dims[1], (long long)vt->dims[1]);
    for (int k = 0; k < s->nat; k++)
      if (s->at[k].vpast == at->vpast)
        return diag_error(d, "input '%s' is the values of two attentions; expected one past per layer",
                          gval(g, at->vpast)->name);
    s->cat_of[g->nodes[kc].out[0]] = 1 + 2 * s->nat;
    s->cat_of[at->vall] = 2 + 2 * s->nat;
    s->attn_at[at->out_node] = s->nat++;
    if (at->out_t >= 0)
      s->skip[at->out_t] = true;
    s->poison[g->nodes[kc].out[0]] = "(the keys with their past) other than through the attention; expected "
                                     "them read by the attention and the present output only";
    s->poison[at->vall] =
        "(the values with their past) other than through the attention; expected them read by the attention "
        "and the present output only";
  }
  for (int i = 0; i < g->ninputs; i++) { /* a value past no attention reads */
    int vid = g->inputs[i];
    bool key, used = false;
    if (!is_past(gval(g, vid), &key))
      continue;
    for (int k = 0; k < s->nat; k++)
      used = used || s->at[k].vpast == vid || s->at[k].kpast == vid;
    if (!used)
      return diag_error(d, "input '%s' is not the keys or values of an attention kiln recognises; expected "
                        "past_key_values.L.key read by MatMul(q, keys) and .value by MatMul(probs, values)",
                        gval(g, vid)->name);
  }
  if (!s->nat)
    return diag_error(d, "the model has no past_key_values.L.key input; expected a decoder exported with its "
                      "past (use_cache=True)");
  return true;
}

/* A small integer tensor the model fixes (an initializer or a Constant
 * node's value): its elements into v[0..*n), at most 8. */
static bool const_ints(const Graph *g, int vid, int64_t *v, int *n) {
  if (vid < 0)
    return false;
  const Value *x = gval(g, vid);
  const Tensor *t = NULL;
  Tensor tmp;
  if (x->data && x->producer < 0) {
    tmp = (Tensor){x->type, x->data};
    t = &tmp;
  } else if (x->producer >= 0 && g->nodes[x->producer].op == OP_CONSTANT) {
    const Attr *a = attr_get(&g->nodes[x->producer], "value");
    t = a && a->kind == ATTR_TENSOR ? a->t : NULL;
  }
  if (!t || !t->data || t->type.rank < 0 || !dt_is_int(t->type.dt) || type_numel(&t->type) > 8)
    return false;
  *n = (int)type_numel(&t->type);
  for (int i = 0; i < *n; i++)
    v[i] = el_get_i(t->type.dt, t->data, i);
  return true;
}

/* Does a live reader of Shape node i's output (the shape of a past
 * Concat, [1, H, past + T, D]) read its dim 2, or read it in a way kiln
 * cannot tell? Gather(axis 0) and Slice(axis 0, step 1) with constant
 * indices are told apart. */
static bool shape_reads_seq(const Src *s, int i) {
  const Graph *g = s->g;
  int y = g->nodes[i].out[0];
  for (int k = 0; k < g->nnodes; k++) {
    const Node *n = &g->nodes[k];
    if (!s->live[k] || n->nin < 1 || n->in[0] != y)
      continue;
    for (int j = 1; j < n->nin; j++)
      if (n->in[j] == y)
        return true;
    int64_t a[8], b[8], ax[8], st[8];
    int na, nb, nax = 0, nst = 0;
    if (n->op == OP_GATHER && attr_int(n, "axis", 0) == 0 && const_ints(g, n->in[1], a, &na)) {
      for (int j = 0; j < na; j++)
        if (a[j] == 2 || a[j] == -2 || a[j] < -4 || a[j] > 3)
          return true;
      continue;
    }
    if (n->op == OP_SLICE && n->opset >= 10 && const_ints(g, n->in[1], a, &na) && const_ints(g, n->in[2], b, &nb) &&
        na == 1 && nb == 1 && (n->nin < 4 || n->in[3] < 0 || (const_ints(g, n->in[3], ax, &nax) && nax == 1 && ax[0] == 0)) &&
        (n->nin < 5 || n->in[4] < 0 || (const_ints(g, n->in[4], st, &nst) && nst == 1 && st[0] == 1))) {
      int64_t lo = a[0] < 0 ? a[0] + 4 : a[0], hi = b[0] < 0 ? b[0] + 4 : b[0];
      lo = lo < 0 ? 0 : lo > 4 ? 4 : lo;
      hi = hi < 0 ? 0 : hi > 4 ? 4 : hi;
      if (lo <= 2 && 2 < hi)
        return true;
      continue;
    }
    return true;
  }
  return false;
}

/* What the logits need, and which of it is the same in both entries;
 * false + d when they need the mask, a past or a concatenation. */
static bool mark_live(Src *s, Diag *d) {
  Graph *g = s->g;
  Arena *a = g->arena;
  bool *need = arena_alloc(a, (size_t)g->nvals + 1);
  s->live = arena_alloc(a, (size_t)g->nnodes + 1);
  s->shared = arena_alloc(a, (size_t)g->nvals + 1);
  s->shared_node = arena_alloc(a, (size_t)g->nnodes + 1);
  need[s->logits] = true;
  if (s->poison[s->logits])
    return diag_error(d, "output '%s' is a past or the mask; expected the logits", gval(g, s->logits)->name);
  for (int i = g->nnodes - 1; i >= 0; i--) {
    const Node *n = &g->nodes[i];
    for (int j = 0; j < n->nout; j++)
      s->live[i] = s->live[i] || need[n->out[j]];
    if (!s->live[i])
      continue;
    if (n->op == OP_SHAPE && n->nin == 1 && n->in[0] >= 0 && s->cat_of[n->in[0]] && !attr_get(n, "start") &&
        !attr_get(n, "end")) {
      s->shape_kind[i] = 1; /* [1, H, start + T, D]: made, not read (shape_reads_seq decides how) */
      continue;
    }
    int at = s->attn_at[i];
    int deps[4], nd = 0;
    if (at >= 0) {
      const PastAttn *p = &s->at[at];
      deps[nd++] = p->q, deps[nd++] = p->knew, deps[nd++] = p->vnew;
      if (p->scale_vid >= 0)
        deps[nd++] = p->scale_vid;
    }
    for (int j = 0; j < (at >= 0 ? nd : n->nin); j++) {
      int v = at >= 0 ? deps[j] : n->in[j];
      if (v < 0)
        continue;
      if (s->poison[v])
        return diag_node(d, g, n, "reads '%s' %s", gval(g, v)->name, s->poison[v]);
      need[v] = true;
    }
  }
  for (int i = 0; i < g->nnodes; i++)
    if (s->shape_kind[i] && s->live[i])
      s->shape_kind[i] = shape_reads_seq(s, i) ? 1 : 2;
  for (int v = 0; v < g->nvals; v++)
    s->shared[v] = gval(g, v)->data && gval(g, v)->producer < 0;
  for (int i = 0; i < g->nnodes; i++) {
    const Node *n = &g->nodes[i];
    bool sh = s->live[i] && s->attn_at[i] < 0;
    for (int j = 0; sh && j < n->nin; j++)
      sh = n->in[j] < 0 || s->shared[n->in[j]];
    s->shared_node[i] = sh;
    for (int j = 0; j < n->nout; j++)
      s->shared[n->out[j]] = sh;
  }
  return true;
}

/* ---- the logits of the last token only ------------------------------------------
 * A prefill chunk needs one row of logits, and the head (final norm, the
 * vocabulary projection, sometimes the last feed-forward) works row by
 * row: the row is taken where that tail starts, so the head runs on one
 * token instead of T (for GPT-2 small at T = 64, 5 of 16 GFLOP). */

/* The rank of a shared value before inference: an initializer's, or a
 * Constant node's tensor; -1 when not known. */
static int shared_rank(const Src *s, int v) {
  const Value *x = gval(s->g, v);
  if (x->data)
    return x->type.rank;
  if (x->producer < 0 || s->g->nodes[x->producer].op != OP_CONSTANT)
    return -1;
  const Node *n = &s->g->nodes[x->producer];
  const Attr *a = attr_get(n, "value");
  if (a && a->kind == ATTR_TENSOR && a->t)
    return a->t->type.rank;
  return attr_get(n, "value_float") || attr_get(n, "value_int") ? 0 : -1;
}

static bool last_axis(const Node *n, const char *attr, int64_t dflt) {
  const Attr *a = attr_get(n, attr);
  if (!a)
    return dflt == -1;
  return a->kind == ATTR_INTS ? a->n == 1 && a->ints[0] == -1 : a->kind == ATTR_INT && a->i == -1;
}

/* Does node n compute each row (every axis but the last) from the same
 * row of its inputs that are not shared, the shared ones broadcast over
 * the rows? */
static bool row_wise(const Src *s, const Node *n) {
  if (n->nout != 1 || s->attn_at[n - s->g->nodes] >= 0)
    return false;
  for (int j = 0; j < n->nin; j++) /* shared inputs: vectors along the last axis, or scalars */
    if (n->in[j] >= 0 && s->shared[n->in[j]] && !(n->op == OP_MATMUL && j == 1) &&
        !(n->op == OP_REDUCEMEAN && j == 1) && (shared_rank(s, n->in[j]) < 0 || shared_rank(s, n->in[j]) > 1))
      return false;
  switch (n->op) {
  case OP_MATMUL: /* x · W, W a matrix */
    return n->in[1] >= 0 && s->shared[n->in[1]] && shared_rank(s, n->in[1]) == 2 && !s->shared[n->in[0]];
  case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_POW:
  case OP_ABS: case OP_ERF: case OP_EXP: case OP_LOG: case OP_NEG: case OP_RECIPROCAL: case OP_RELU:
  case OP_SIGMOID: case OP_SOFTPLUS: case OP_SQRT: case OP_TANH: case OP_IDENTITY: case OP_CAST: case OP_GELU:
    return true;
  case OP_REDUCEMEAN:
    return n->nin == 1 && last_axis(n, "axes", 0);
  case OP_SOFTMAX:
    return last_axis(n, "axis", n->opset >= 13 ? -1 : 1);
  case OP_LAYERNORM: case OP_RMSNORM:
    return last_axis(n, "axis", -1);
  default:
    return false;
  }
}

/* The tail: grown back from the logits' producer, a value at a time (the
 * latest producer first) while the value's producer is row-wise and
 * every reader of the value is in the tail; the cut is the earliest
 * point where one value feeds the whole tail. */
static void find_tail(Src *s) {
  Graph *g = s->g;
  Arena *a = g->arena;
  bool *in = arena_alloc(a, (size_t)g->nnodes + 1);
  s->tail = arena_alloc(a, (size_t)g->nnodes + 1);
  s->cut = s->logits;
  int first = gval(g, s->logits)->producer, r;
  if (first < 0 || !row_wise(s, &g->nodes[first]) || readers(g, s->logits, &r))
    return;
  in[first] = true;
  for (;;) {
    /* the frontier: values tail nodes read that are not made in the tail nor shared */
    int front = -1, nfront = 0, best = -1;
    for (int i = 0; i < g->nnodes; i++)
      for (int j = 0; in[i] && j < g->nodes[i].nin; j++) {
        int v = g->nodes[i].in[j];
        if (v < 0 || s->shared[v] || (gval(g, v)->producer >= 0 && in[gval(g, v)->producer]) || v == front)
          continue;
        if (front != v && nfront++ == 0)
          front = v;
        int p = gval(g, v)->producer;
        bool all_in = p >= 0 && row_wise(s, &g->nodes[p]) && !gval(g, v)->is_output;
        for (int k = 0; all_in && k < g->nnodes; k++)
          for (int m = 0; all_in && m < g->nodes[k].nin; m++)
            all_in = g->nodes[k].in[m] != v || in[k];
        if (all_in && p > best)
          best = p;
      }
    if (nfront == 1) { /* one value feeds it all: a cut */
      s->cut = front;
      memcpy(s->tail, in, (size_t)g->nnodes);
    }
    if (best < 0)
      return;
    in[best] = true;
  }
}

bool past_match(Src *s, Diag *d) {
  if (!analyse(s, d) || !mark_live(s, d))
    return false;
  find_tail(s);
  return true;
}
