/* fuse_attention.c — the fuse_attention pass: Q·Kᵀ·scale (+ mask) (+
 * top-k) -> Softmax -> ·V into one Attention node (compiler/ops/attention.h),
 * from every form PyTorch 1.13 exports, normalised on the way:
 *
 *   scale   Div or Mul by a scalar constant, on Q, on Kᵀ or on the scores
 *           (several multiply: MultiheadAttention's Div(q, √d) and the
 *           Mul(scores, 1.0) it adds before a mask);
 *   mask    Add(scores, mask) in either order (a Mul(mask, 1.0) read
 *           through), Where(mask, fill, scores) (masked_fill), or
 *           Where(keep, scores, fill) with a constant keep (inverted) or
 *           keep = Not(mask); recorded as causal / static (constant),
 *           padding (runtime, the same for every query) or additive / bool;
 *   clamp   Max(scores, c) after the mask, c <= ATTN_MASKED_BELOW (Llama's
 *           finfo.min): score_min;
 *   softcap Mul(Tanh(Div(scores, c)), c), c > 0 a scalar constant, last
 *           before the Softmax (ONNX's Attention: softcap) or before the
 *           mask (Gemma 2, ONNX Runtime's GroupQueryAttention: softcap_first);
 *   top-k   TopK(x, k) -> the k-th value (Gather -1 or k-1, or Slice) ->
 *           Unsqueeze [-> Expand] -> Less(x, kth) [-> Cast] -> Where(less,
 *           fill, x), the Explicit Sparse Transformer's masked_fill;
 *   layout  a Transpose before Q, Kᵀ or V or after the output (the head
 *           split and merge) becomes q_perm / k_perm / v_perm / y_perm,
 *           when it keeps the last axis last (for Kᵀ, always: the kernel
 *           packs keys that are not contiguous, once per head).
 *
 * Then each fused node's Q, K and V that are Slices of one tensor (the
 * fused QKV projection's output, through the head-split Reshape) are read
 * in place: the Slice becomes a free Reshape of that tensor and the range
 * an attribute (q_slice, k_slice, v_slice), so no copy is made and the
 * three slices take no workspace.
 *
 * Like the other fusions it needs every intermediate to be read by the
 * pattern alone and no broadcast to grow a shape. With -v it prints each
 * fusion, and for each Softmax fed (through the scale and mask) by a
 * MatMul that stays unfused, one line saying why. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../ir/build.h"
#include "../ir/ops.h"
#include "../ops/attention.h"
#include "passes.h"
#include "fuse_match.h"

typedef struct Attn {
  Match m;
  int sm;                     /* the Softmax node */
  int q, k, v, mask;          /* the fused node's inputs (mask -1: none) */
  int perm[4][MAX_RANK];      /* q, k, v, y; identity when unused */
  double scale;
  AttnMask kind;
  double fill;                /* bool masks */
  int64_t topk;
  double topk_fill;
  double score_min;           /* a clamp of the masked scores (-inf: none) */
  double softcap;             /* c · tanh(scores / c) before the Softmax (0: none) */
  bool softcap_first;         /* ... before the mask */
  int64_t groups;             /* query heads per K/V head (1: one to one) */
  Node *last;
  const char *why;            /* set when it does not fuse */
} Attn;

enum { P_Q, P_K, P_V, P_Y };

/* Stop with a reason (always returns false). */
static bool no(Attn *a, const char *why) {
  if (!a->why)
    a->why = why;
  return false;
}

static bool take(Attn *a, const Graph *g, const Node *n) {
  if (a->m.n >= MAX_MATCH)
    return no(a, "the pattern has more nodes than the matcher holds");
  fm_take(&a->m, g, n);
  return true;
}

static int rank_of(const Graph *g, int v) { return gval(g, v)->type.rank; }

/* ---- scale and layout around an operand ------------------------------------------ */

/* n is Mul(x, c) / Mul(c, x) / Div(x, c) with c a scalar constant; the
 * factor it applies in *f, x in *x. */
static bool scale_node(const Graph *g, const Node *n, double *f, int *x) {
  double c;
  if ((n->op == OP_MUL || n->op == OP_DIV) && fm_scalar_const(g, n->in[1], &c)) {
    *x = n->in[0];
    *f = n->op == OP_MUL ? c : 1 / c;
    return c != 0 || n->op == OP_MUL;
  }
  if (n->op == OP_MUL && fm_scalar_const(g, n->in[0], &c)) {
    *x = n->in[1];
    *f = c;
    return true;
  }
  return false;
}

/* A Transpose (keeping the last axis last unless any_last); its perm
 * into perm. */
static bool layout_node(const Graph *g, const Node *n, int *perm, bool any_last) {
  const Attr *p = attr_get(n, "perm");
  int r = rank_of(g, n->in[0]);
  if (n->op != OP_TRANSPOSE || !p || p->kind != ATTR_INTS || p->n != r || r < 2 ||
      (!any_last && p->ints[r - 1] != r - 1))
    return false;
  for (int i = 0; i < r; i++)
    perm[i] = (int)p->ints[i];
  return true;
}

/* Walk back from operand v of the MatMul through scale nodes (into
 * a->scale) and one layout Transpose (into perm), each read only here;
 * for Kᵀ (any_last) also one that makes the keys not contiguous. */
static int peel_operand(Fuser *f, Attn *a, int v, int *perm, bool any_last) {
  bool laid = false;
  for (;;) {
    Node *p = fm_sole(f, v) ? fm_def(f, v, -1) : NULL;
    double c;
    int x;
    if (p && scale_node(f->g, p, &c, &x) && fm_float_value(f->g, x) && take(a, f->g, p)) {
      a->scale *= c;
      v = x;
    } else if (p && !laid && layout_node(f->g, p, perm, any_last) && take(a, f->g, p)) {
      laid = true;
      v = p->in[0];
    } else {
      return v;
    }
  }
}

/* ---- grouped heads ----------------------------------------------------------------- */

/* Is u x with a 1 inserted after axis ax, e that with g at ax + 1, and y
 * x with axis ax g times larger? (Reshape(Expand(Unsqueeze(x))): each
 * index i of ax repeated g times in place, y's index j reading x's j / g.) */
static bool repeat_shapes(const Type *x, const Type *u, const Type *e, const Type *y, int ax, int64_t *g) {
  if (u->rank != x->rank + 1 || e->rank != u->rank || y->rank != x->rank || u->dims[ax + 1] != 1)
    return false;
  *g = e->dims[ax + 1];
  for (int i = 0; i < x->rank; i++) {
    int ui = i <= ax ? i : i + 1;
    if (u->dims[ui] != x->dims[i] || e->dims[ui] != x->dims[i] || y->dims[i] != x->dims[i] * (i == ax ? *g : 1))
      return false;
  }
  return *g >= 1;
}

/* v = Reshape(Expand(Unsqueeze or Reshape(x))), Hugging Face's repeat_kv
 * (K or V shared by groups of query heads), each read only here, along a
 * physical axis the operand's perm makes a leading (head) axis: x, which
 * the Attention reads once per group (its divisor follows from the
 * shapes: compiler/ops/attention.h); else v. */
static int peel_repeat(Fuser *f, Attn *a, int v, const int *perm) {
  const Graph *g = f->g;
  Node *rs = fm_sole(f, v) ? fm_def(f, v, OP_RESHAPE) : NULL;
  Node *ex = rs && fm_sole(f, rs->in[0]) ? fm_def(f, rs->in[0], OP_EXPAND) : NULL;
  Node *un = ex && fm_sole(f, ex->in[0]) ? fm_def(f, ex->in[0], -1) : NULL;
  if (!un || (un->op != OP_UNSQUEEZE && un->op != OP_RESHAPE))
    return v;
  const Type *x = &gval(g, un->in[0])->type, *y = &gval(g, v)->type;
  int r = y->rank;
  for (int ax = 0; ax < x->rank; ax++) {
    int64_t grp;
    int lead = -1; /* the logical axis that reads physical axis ax */
    for (int j = 0; j < r; j++)
      lead = perm[j] == ax ? j : lead;
    if (lead < 0 || lead >= r - 2 ||
        !repeat_shapes(x, &gval(g, un->out[0])->type, &gval(g, ex->out[0])->type, y, ax, &grp))
      continue;
    if (a->m.n + 3 > MAX_MATCH) /* all three or none */
      return no(a, "the pattern has more nodes than the matcher holds"), v;
    take(a, g, rs);
    take(a, g, ex);
    take(a, g, un);
    return un->in[0];
  }
  return v;
}

/* After a repeat: one more layout Transpose of x before it (the head
 * split, when the repeat came between it and the Kᵀ transpose), composed
 * into perm (the one applied after it): Transpose(Transpose(x, inner),
 * perm) reads x through inner[perm[i]]. Q and V keep their last axis last. */
static int peel_inner_layout(Fuser *f, Attn *a, int x, int *perm, bool any_last) {
  Node *t = fm_sole(f, x) ? fm_def(f, x, OP_TRANSPOSE) : NULL;
  int inner[MAX_RANK], r = rank_of(f->g, x), comp[MAX_RANK];
  if (!t || !layout_node(f->g, t, inner, true))
    return x;
  for (int i = 0; i < r; i++)
    comp[i] = inner[perm[i]];
  if ((!any_last && comp[r - 1] != r - 1) || !take(a, f->g, t))
    return x;
  memcpy(perm, comp, sizeof(int) * (size_t)r);
  return t->in[0];
}

/* K or V through its repeat of grouped heads, and the layout before it. */
static int peel_groups(Fuser *f, Attn *a, int v, int *perm, bool any_last) {
  int x = peel_repeat(f, a, v, perm);
  return x == v ? v : peel_inner_layout(f, a, x, perm, any_last);
}

/* ---- the mask --------------------------------------------------------------------- */

/* v, or x when v = Cast(x, to bool) of a bool x read only here. */
static int bool_source(Fuser *f, Attn *a, int v) {
  Node *c = fm_sole(f, v) ? fm_def(f, v, OP_CAST) : NULL;
  if (c && gval(f->g, c->in[0])->type.dt == DT_BOOL && take(a, f->g, c))
    return c->in[0];
  return v;
}

/* v, or x when v = Mul(x, 1.0): x * 1 is x, so the mask is x itself (the
 * Mul stays for any other reader, or dce removes it). */
static int unit_source(Fuser *f, int v) {
  Node *p = fm_def(f, v, OP_MUL);
  if (p && fm_const_is(f->g, p->in[1], 1, 0) && gval(f->g, p->in[0])->type.dt == gval(f->g, v)->type.dt)
    return p->in[0];
  if (p && fm_const_is(f->g, p->in[0], 1, 0) && gval(f->g, p->in[1])->type.dt == gval(f->g, v)->type.dt)
    return p->in[1];
  return v;
}

/* A constant bool mask with every element negated, as a new constant. */
static int negated_const(Graph *g, int v) {
  const Value *c = gval(g, v);
  int64_t n = type_numel(&c->type);
  bool *neg = arena_alloc(g->arena, (size_t)n + 1);
  for (int64_t i = 0; i < n; i++)
    neg[i] = !el_get_u(DT_BOOL, c->data, i);
  return ir_const(g, arena_printf(g->arena, "%s_masked", c->name), DT_BOOL, c->type.rank, c->type.dims, neg);
}

/* The kind of mask value m (bool or float), for scores [..., S, T]. */
static AttnMask mask_kind(const Graph *g, int m, double fill, const Type *st) {
  const Value *mv = gval(g, m);
  int64_t s = st->dims[st->rank - 2], t = st->dims[st->rank - 1], off;
  if (mv->data)
    return attn_mask_is_causal(&mv->type, mv->data, fill, s, t, &off) ? ATTN_MASK_CAUSAL : ATTN_MASK_STATIC;
  if (mv->type.rank < 2 || mv->type.dims[mv->type.rank - 2] == 1)
    return ATTN_MASK_PADDING;
  return mv->type.dt == DT_BOOL ? ATTN_MASK_BOOL : ATTN_MASK_ADDITIVE;
}

/* Where(c, fill, x) or Where(keep, x, fill) on the scores x: the mask and
 * its fill. */
static bool where_mask(Fuser *f, Attn *a, Node *w, int x) {
  Graph *g = f->g;
  int fillv = w->in[1] == x ? w->in[2] : w->in[1];
  if (!fm_scalar_const(g, fillv, &a->fill))
    return no(a, "the masked_fill value is not a scalar constant");
  int c = bool_source(f, a, w->in[0]);
  if (w->in[1] == x) { /* Where(keep, x, fill): masked where keep is false */
    Node *nt = fm_sole(f, c) ? fm_def(f, c, OP_NOT) : NULL;
    if (gval(g, c)->data) { /* an unused constant is never printed or emitted */
      c = negated_const(g, c);
      f->ustart = NULL; /* the reader lists, sized by the values, sized anew */
      fm_index_users(f);
    } else if (nt && take(a, g, nt))
      c = nt->in[0];
    else
      return no(a, "a runtime bool mask keeps the scores where it is true (Where(mask, scores, fill)); "
                   "expected masked_fill's Where(mask, fill, scores) or a Not");
  }
  a->mask = c;
  return true;
}

/* Add(x, mask) / Add(mask, x) / Where on the scores: which operand is the
 * mask is decided by the caller (x). */
static bool take_mask(Fuser *f, Attn *a, Node *n, int x, const Type *st) {
  Graph *g = f->g;
  if (n->op == OP_WHERE) {
    if (!where_mask(f, a, n, x))
      return false;
  } else {
    a->mask = unit_source(f, fm_other(n, x));
    a->fill = -INFINITY;
  }
  const Value *mv = gval(g, a->mask);
  if (mv->type.dt != DT_BOOL && mv->type.dt != st->dt)
    return no(a, "the mask's dtype differs from the scores'");
  if (mv->type.rank > st->rank || !type_equal(&gval(g, n->out[0])->type, &gval(g, x)->type))
    return no(a, mv->data ? "the constant mask does not broadcast to the scores"
                       : "mask is runtime and not broadcastable to the scores");
  a->kind = mask_kind(g, a->mask, a->fill, st);
  return true;
}

/* ---- top-k ------------------------------------------------------------------------ */

/* kth = the k-th value of TopK(x, k): Gather(values, -1 or k-1) ->
 * Unsqueeze(-1), or Slice(values, k-1 .. k on the last axis), optionally
 * Expanded to the scores' shape. Takes the nodes; returns the TopK node. */
static Node *kth_value(Fuser *f, Attn *a, int kth) {
  Graph *g = f->g;
  Node *ex = fm_sole(f, kth) ? fm_def(f, kth, OP_EXPAND) : NULL;
  if (ex && take(a, g, ex))
    kth = ex->in[0];
  Node *u = fm_sole(f, kth) ? fm_def(f, kth, -1) : NULL;
  int vals = -1;
  if (u && u->op == OP_UNSQUEEZE && take(a, g, u)) {
    Node *ga = fm_sole(f, u->in[0]) ? fm_def(f, u->in[0], OP_GATHER) : NULL;
    if (!ga || !take(a, g, ga))
      return NULL;
    vals = ga->in[0];
    double idx;
    int r = rank_of(g, vals), ax;
    int64_t k = gval(g, vals)->type.dims[r - 1];
    if (!axis_norm(attr_int(ga, "axis", 0), r, &ax) || ax != r - 1 || !fm_scalar_const(g, ga->in[1], &idx) ||
        (idx != -1 && idx != (double)(k - 1)) || rank_of(g, u->out[0]) != r)
      return NULL;
  } else if (u && u->op == OP_SLICE && take(a, g, u)) {
    vals = u->in[0];
    int r = rank_of(g, vals);
    if (r < 1 || gval(g, u->out[0])->type.dims[r - 1] != 1)
      return NULL;
    /* a one-wide slice of the last axis; which element is checked below */
    int64_t *st, *en, *ax = NULL;
    int ns, ne, na = 0;
    Diag d = {0};
    if (!const_input_ints(g, u, 1, "starts", &st, &ns, &d) || !const_input_ints(g, u, 2, "ends", &en, &ne, &d) ||
        ns != 1 || (node_has_in(u, 3) && !const_input_ints(g, u, 3, "axes", &ax, &na, &d)))
      return NULL;
    int64_t k = gval(g, vals)->type.dims[r - 1];
    int axn;
    if ((ax && (na != 1 || !axis_norm(ax[0], r, &axn) || axn != r - 1)) || (!ax && r != 1) ||
        (st[0] != -1 && st[0] != k - 1))
      return NULL;
  } else {
    return NULL;
  }
  Node *tk = fm_def(f, vals, OP_TOPK);
  if (!tk || tk->out[0] != vals || fm_nreaders(f, vals) != 1 || gval(g, vals)->is_output ||
      (tk->out[1] >= 0 && (fm_nreaders(f, tk->out[1]) || gval(g, tk->out[1])->is_output)))
    return NULL;
  return tk;
}

/* Where(lt, fill, x) with lt = Less(x, kth) or Greater(kth, x): x's top-k.
 * Sets *x0 to the scores before it. */
static bool take_topk(Fuser *f, Attn *a, Node *w, int *x0) {
  Graph *g = f->g;
  int x = w->in[2];
  Node *cmp = fm_def(f, bool_source(f, a, w->in[0]), -1);
  int kth = !cmp ? -1 : cmp->op == OP_LESS && cmp->in[0] == x ? cmp->in[1]
                    : cmp->op == OP_GREATER && cmp->in[1] == x ? cmp->in[0] : -1;
  if (kth < 0 || !fm_sole(f, cmp->out[0]) || !take(a, g, cmp))
    return false;
  Node *tk = kth_value(f, a, kth);
  int ax, r = rank_of(g, x);
  double k;
  if (!tk || tk->in[0] != x || !axis_norm(attr_int(tk, "axis", -1), r, &ax) || ax != r - 1 ||
      attr_int(tk, "largest", 1) != 1 || !fm_scalar_const(g, tk->in[1], &k) ||
      !fm_scalar_const(g, w->in[1], &a->topk_fill) || fm_nreaders(f, x) != 3 || gval(g, x)->is_output)
    return no(a, "a top-k-like Where is not TopK(x, k) -> k-th value -> Less(x, kth) -> Where(less, fill, x)");
  if (!take(a, g, tk))
    return false;
  a->topk = (int64_t)k;
  *x0 = x;
  return true;
}

/* ---- the scores ------------------------------------------------------------------- */

/* Scale nodes on the scores, from v (read by `readers` nodes of the
 * pattern) back to the MatMul, each read only here. */
static Node *scores_matmul(Fuser *f, Attn *a, int v, int readers) {
  for (;;) {
    Node *p = fm_nreaders(f, v) == readers && !gval(f->g, v)->is_output ? fm_def(f, v, -1) : NULL;
    double c;
    int x;
    if (p && p->op == OP_MATMUL)
      return take(a, f->g, p) ? p : NULL;
    if (!p || !scale_node(f->g, p, &c, &x) || !fm_float_value(f->g, x) || !take(a, f->g, p))
      return NULL;
    a->scale *= c;
    v = x;
    readers = 1;
  }
}

/* Does v come from a MatMul through (at most 8) elementwise steps? The
 * test for "attention-shaped", which decides whether -v explains. */
static bool fed_by_matmul(const Fuser *f, int v, int depth) {
  Node *p = fm_def(f, v, -1);
  if (!p || depth > 8)
    return false;
  if (p->op == OP_MATMUL)
    return true;
  if (p->op != OP_ADD && p->op != OP_MUL && p->op != OP_DIV && p->op != OP_WHERE && p->op != OP_SUB &&
      p->op != OP_MAX)
    return false;
  for (int i = 0; i < p->nin; i++)
    if (p->in[i] >= 0 && fed_by_matmul(f, p->in[i], depth + 1))
      return true;
  return false;
}

/* x's top-k, when x = Where(less, fill, x0) is one: on a copy, so that a
 * Where that is a mask instead leaves a untouched. */
static int peel_topk(Fuser *f, Attn *a, int x) {
  Node *w = fm_sole(f, x) ? fm_def(f, x, OP_WHERE) : NULL;
  Attn t = *a;
  int x0;
  if (w && take_topk(f, &t, w, &x0) && take(&t, f->g, w)) {
    *a = t;
    return x0;
  }
  return x;
}

/* x = Max(y, c) (either order) with c a scalar constant <= ATTN_MASKED_BELOW,
 * Hugging Face Llama's torch.max(scores, finfo.min) after its mask: y, the
 * clamp in a->score_min. It changes only rows whose every score is masked
 * (uniform instead of NaN), which the kernel gives (score_min). */
static int peel_clamp(Fuser *f, Attn *a, int x) {
  Graph *g = f->g;
  Node *mx = fm_sole(f, x) ? fm_def(f, x, OP_MAX) : NULL;
  double c;
  for (int i = 0; mx && mx->nin == 2 && i < 2; i++)
    if (fm_scalar_const(g, mx->in[1 - i], &c) && c <= ATTN_MASKED_BELOW &&
        type_equal(&gval(g, mx->in[i])->type, &gval(g, x)->type) && take(a, g, mx)) {
      a->score_min = c;
      return mx->in[i];
    }
  return x;
}

/* x = Mul(Tanh(Div(y, c)), c) (the Mul's operands in either order), c a
 * positive scalar constant, each node read only here: y, the softcap in
 * a->softcap. */
static int peel_softcap(Fuser *f, Attn *a, int x) {
  Graph *g = f->g;
  Node *mul = fm_sole(f, x) ? fm_def(f, x, OP_MUL) : NULL;
  double c, c2;
  for (int i = 0; mul && i < 2; i++) {
    Node *th = fm_sole(f, mul->in[i]) ? fm_def(f, mul->in[i], OP_TANH) : NULL;
    Node *dv = th && fm_sole(f, th->in[0]) ? fm_def(f, th->in[0], OP_DIV) : NULL;
    if (!dv || !fm_scalar_const(g, mul->in[1 - i], &c) || !fm_scalar_const(g, dv->in[1], &c2) || c != c2 ||
        !(c > 0) || isinf(c) || !type_equal(&gval(g, dv->in[0])->type, &gval(g, x)->type))
      continue;
    if (a->m.n + 3 > MAX_MATCH)
      return no(a, "the pattern has more nodes than the matcher holds"), x;
    take(a, g, mul);
    take(a, g, th);
    take(a, g, dv);
    a->softcap = c;
    return dv->in[0];
  }
  return x;
}

/* x = Mul(y, 1.0) (either order), read only here, as many times as it
 * is: y (MultiheadAttention's Mul(scores, 1.0) before its mask, after a
 * softcap that other scales may not cross). */
static int peel_units(Fuser *f, Attn *a, int x) {
  for (;;) {
    Node *p = fm_sole(f, x) ? fm_def(f, x, OP_MUL) : NULL;
    double c;
    int y;
    if (!p || !scale_node(f->g, p, &c, &y) || c != 1 || !take(a, f->g, p))
      return x;
    x = y;
  }
}

/* From the Softmax's input back to the MatMul: softcap, clamp, top-k,
 * mask, scale. */
static Node *match_scores(Fuser *f, Attn *a, int x, const Type *st) {
  Graph *g = f->g;
  x = peel_softcap(f, a, x);
  x = peel_clamp(f, a, x);
  x = peel_topk(f, a, x);
  int readers = a->topk ? 3 : 1;
  Node *mm = scores_matmul(f, a, x, readers);
  if (mm)
    return mm;
  Node *p = fm_def(f, x, -1);
  if (p && (fm_nreaders(f, x) != readers || gval(g, x)->is_output))
    return no(a, arena_printf(g->arena, "'%s' is also read outside the attention pattern", gval(g, x)->name)), NULL;
  if (!p || (p->op != OP_ADD && p->op != OP_WHERE))
    return no(a, "the scores reach the Softmax through something other than a scale, a mask and top-k"), NULL;
  if (!take(a, g, p))
    return NULL;
  for (int i = p->op == OP_WHERE ? 1 : 0; i < p->nin; i++) {
    Attn t = *a;
    int x0 = a->softcap > 0 ? p->in[i] : peel_softcap(f, &t, peel_units(f, &t, p->in[i]));
    if (t.softcap == 0) /* no softcap before the mask: the Mul by 1.0 is scores_matmul's */
      t = *a, x0 = p->in[i];
    t.softcap_first = t.softcap > 0 && a->softcap == 0;
    Node *mm2 = scores_matmul(f, &t, x0, 1);
    if (mm2) {
      *a = t;
      return take_mask(f, a, p, p->in[i], st) ? mm2 : NULL;
    }
  }
  return no(a, "the masked scores do not come from a MatMul through scale ops (by scalar constants) read only "
               "here"), NULL;
}

/* ---- the whole pattern ------------------------------------------------------------- */

static bool softmax_on_last_axis(const Graph *g, const Node *sm) {
  int r = rank_of(g, sm->in[0]), ax;
  int64_t axis = attr_int(sm, "axis", sm->opset < 13 ? 1 : -1);
  if (sm->opset < 13) /* coerced to 2-D at axis: the last axis alone only when axis = rank - 1 */
    return (axis == -1 || axis == r - 1) && r >= 1;
  return axis_norm(axis, r, &ax) && ax == r - 1;
}

/* Q [..., S, Dh], Kᵀ [..., Dh, T], V [..., T, Dv] with equal leading dims,
 * or Kᵀ's and V's dividing Q's (grouped heads: repeat_kv peeled, or a
 * MatMul broadcasting a dim of 1), f32 or f64. */
static bool operands_fit(const Graph *g, Attn *a, const Type *qt, const Type *kt, const Type *vt) {
  if (!fm_float_value(g, a->q) || qt->dt != kt->dt || qt->dt != vt->dt)
    return no(a, "Q, Kᵀ and V are not all f32 or all f64");
  if (qt->rank < 2 || kt->rank != qt->rank || vt->rank != qt->rank)
    return no(a, "Q, Kᵀ and V differ in rank (MatMul broadcasts them)");
  for (int i = 0; i < qt->rank - 2; i++)
    if (kt->dims[i] < 1 || vt->dims[i] < 1 || qt->dims[i] % kt->dims[i] || qt->dims[i] % vt->dims[i])
      return no(a, "Kᵀ's or V's batch dims do not divide Q's (MatMul broadcasts them)");
  return true;
}

/* The logical type of physical value v read through perm. */
static Type through(const Graph *g, int v, const int *perm) {
  Type t = gval(g, v)->type;
  for (int i = 0; i < t.rank; i++)
    t.dims[i] = gval(g, v)->type.dims[perm[i]];
  return t;
}

/* P = Softmax(...) -> MatMul(P, V) [-> Transpose]: V (through a layout
 * Transpose read only here), the output, the last node. */
static bool match_output(Fuser *f, Attn *a, Node *sm) {
  Graph *g = f->g;
  Node *mm = fm_sole_user(f, sm->out[0], OP_MATMUL);
  if (!mm || mm->in[0] != sm->out[0])
    return no(a, "the softmax output is not only multiplied by V (a MatMul reading it alone)");
  take(a, g, mm);
  a->last = mm;
  a->v = mm->in[1];
  Node *vt = fm_sole(f, a->v) ? fm_def(f, a->v, OP_TRANSPOSE) : NULL;
  if (vt && layout_node(g, vt, a->perm[P_V], false) && take(a, g, vt))
    a->v = vt->in[0];
  a->v = peel_groups(f, a, a->v, a->perm[P_V], false);
  Node *tr = fm_sole_user(f, mm->out[0], OP_TRANSPOSE);
  if (tr && layout_node(g, tr, a->perm[P_Y], false) && take(a, g, tr))
    a->last = tr;
  return true;
}

static void identity_perms(Attn *a) {
  for (int p = 0; p < 4; p++)
    for (int i = 0; i < MAX_RANK; i++)
      a->perm[p][i] = i;
}

static bool match_attention(Fuser *f, Attn *a, Node *sm) {
  Graph *g = f->g;
  a->sm = (int)(sm - g->nodes);
  a->scale = 1;
  a->mask = -1;
  a->score_min = -INFINITY;
  a->softcap = 0;
  a->softcap_first = false;
  identity_perms(a);
  if (!softmax_on_last_axis(g, sm))
    return no(a, "softmax axis is not the key axis");
  const Type *st = &gval(g, sm->in[0])->type;
  if (!fm_float_value(g, sm->in[0]) || st->rank < 2)
    return no(a, "the scores are not f32 or f64 of rank >= 2");
  if (!match_output(f, a, sm))
    return false;
  take(a, g, sm);
  Node *mm = match_scores(f, a, sm->in[0], st);
  if (!mm)
    return no(a, "the Softmax input is not Q·Kᵀ (a MatMul) through scale, mask and top-k ops read only here");
  if (a->softcap > 0 && (a->topk || !isinf(a->score_min)))
    return no(a, "a softcap with top-k or a clamp of the scores (kiln's Attention takes one of them)");
  if (!type_equal(&gval(g, mm->out[0])->type, st))
    return no(a, "the MatMul's scores change shape before the Softmax (a broadcast)");
  a->q = peel_operand(f, a, mm->in[0], a->perm[P_Q], false);
  a->k = peel_groups(f, a, peel_operand(f, a, mm->in[1], a->perm[P_K], true), a->perm[P_K], true);
  Type qt = through(g, a->q, a->perm[P_Q]), kt = through(g, a->k, a->perm[P_K]),
       vt = through(g, a->v, a->perm[P_V]);
  if (!operands_fit(g, a, &qt, &kt, &vt))
    return false;
  a->groups = 1;
  for (int i = 0; i < qt.rank - 2; i++)
    a->groups *= qt.dims[i] / kt.dims[i];
  return true;
}

/* ---- the rewrite --------------------------------------------------------------------- */

static bool is_identity(const int *perm, int r) {
  for (int i = 0; i < r; i++)
    if (perm[i] != i)
      return false;
  return true;
}

static void set_perm(Graph *g, Node *n, const char *name, const int *perm, int r) {
  if (is_identity(perm, r))
    return;
  Attr *at = node_add_attr(g, n, name, ATTR_INTS);
  at->n = r;
  at->ints = arena_alloc(g->arena, sizeof(int64_t) * (size_t)r);
  for (int i = 0; i < r; i++)
    at->ints[i] = perm[i];
}

static void rewrite(Fuser *f, Attn *a) {
  Graph *g = f->g;
  int in[4] = {a->q, a->k, a->v, a->mask}, r = rank_of(g, a->q);
  bool is_bool = a->mask >= 0 && gval(g, a->mask)->type.dt == DT_BOOL;
  Node *n = fm_fuse_into(f, &a->m, a->last, OP_ATTENTION, in, a->mask >= 0 ? 4 : 3);
  node_add_attr(g, n, "scale", ATTR_FLOAT)->f = a->scale;
  fm_set_str(g, n, "mask", attn_mask_name(a->kind));
  if (is_bool)
    node_add_attr(g, n, "mask_fill", ATTR_FLOAT)->f = a->fill;
  if (!isinf(a->score_min))
    node_add_attr(g, n, "score_min", ATTR_FLOAT)->f = a->score_min;
  if (a->softcap > 0)
    node_add_attr(g, n, "softcap", ATTR_FLOAT)->f = a->softcap;
  if (a->softcap_first)
    node_add_attr(g, n, "softcap_first", ATTR_INT)->i = 1;
  if (a->topk) {
    node_add_attr(g, n, "topk", ATTR_INT)->i = a->topk;
    node_add_attr(g, n, "topk_fill", ATTR_FLOAT)->f = a->topk_fill;
  }
  const char *names[4] = {"q_perm", "k_perm", "v_perm", "y_perm"};
  for (int p = 0; p < 4; p++)
    set_perm(g, n, names[p], a->perm[p], r);
  const char *what = arena_printf(g->arena, "attention{mask=%s%s%s%s}", attn_mask_name(a->kind),
                                  a->topk ? arena_printf(g->arena, ", topk=%lld", (long long)a->topk) : "",
                                  a->softcap > 0 ? arena_printf(g->arena, ", softcap=%g%s", a->softcap,
                                                                a->softcap_first ? " first" : "") : "",
                                  a->groups > 1 ? arena_printf(g->arena, ", kv shared by %lld query heads",
                                                               (long long)a->groups) : "");
  fm_fuse_done(f, n, what);
}

/* The nodes the match took must all feed the last one (fm_fuse_into's
 * contract): none may come after it. */
static bool ordered(const Graph *g, const Attn *a) {
  int last = (int)(a->last - g->nodes);
  for (int i = 0; i < a->m.n; i++)
    if (a->m.idx[i] > last)
      return false;
  return true;
}

/* ---- Q, K and V read in place from the QKV projection ------------------------------- */

/* A Slice's range: the one axis it narrows (others whole, every step 1),
 * its start and length. */
typedef struct Range {
  int axis;
  int64_t start, len;
} Range;

/* The start of axis ax in Slice s's starts (0 when ax is not listed). */
static bool slice_start(Graph *g, const Node *s, int ax, int64_t dim, int64_t *start) {
  Diag d = {0};
  int64_t *st, *axes = NULL, *steps = NULL;
  int ns, na = 0, nst = 0, r = rank_of(g, s->in[0]), a;
  if (!const_input_ints(g, s, 1, "starts", &st, &ns, &d) ||
      (node_has_in(s, 3) && !const_input_ints(g, s, 3, "axes", &axes, &na, &d)) ||
      (node_has_in(s, 4) && !const_input_ints(g, s, 4, "steps", &steps, &nst, &d)) || (axes && na != ns) ||
      (steps && nst != ns))
    return false;
  *start = 0;
  for (int i = 0; i < ns; i++) {
    if ((steps && steps[i] != 1) || !axis_norm(axes ? axes[i] : i, r, &a))
      return false;
    if (a == ax)
      *start = st[i] < 0 ? st[i] + dim : st[i];
  }
  return *start >= 0;
}

/* Slice node s (opset 10+: bounds as inputs) as a range of one axis. */
static bool slice_range(Graph *g, const Node *s, Range *rg) {
  const Type *x = &gval(g, s->in[0])->type, *y = &gval(g, s->out[0])->type;
  if (s->opset < 10 || s->nin < 3 || x->rank != y->rank || gval(g, s->in[0])->data)
    return false;
  rg->axis = -1;
  for (int a = 0; a < x->rank; a++)
    if (x->dims[a] != y->dims[a]) {
      if (rg->axis >= 0)
        return false;
      rg->axis = a;
    }
  if (rg->axis < 0)
    return false;
  rg->len = y->dims[rg->axis];
  return slice_start(g, s, rg->axis, x->dims[rg->axis], &rg->start) && rg->len > 0 &&
         rg->start + rg->len <= x->dims[rg->axis];
}

/* The slice rg of x [X], read as y [Y] (the slice's output reshaped), as
 * a range of axis *p of x reshaped to z: the first axis p of Y whose
 * leading dims hold exactly the dims before the sliced axis, and whose
 * inner dims divide the range's start and x's sliced axis. */
static bool view_of(const Type *x, const Range *rg, const Type *y, Type *z, Range *zr) {
  int64_t outer = 1, inner = 1, lead = 1;
  for (int a = 0; a < x->rank; a++)
    if (a < rg->axis)
      outer *= x->dims[a];
    else if (a > rg->axis)
      inner *= x->dims[a];
  for (int p = 0; p < y->rank && lead <= outer; lead *= y->dims[p++]) {
    int64_t u = 1;
    for (int a = p + 1; a < y->rank; a++)
      u *= y->dims[a];
    if (lead != outer || u == 0 || (x->dims[rg->axis] * inner) % u || (rg->start * inner) % u)
      continue;
    *z = *y;
    z->dims[p] = x->dims[rg->axis] * inner / u;
    *zr = (Range){.axis = p, .start = rg->start * inner / u, .len = y->dims[p]};
    return true;
  }
  return false;
}

/* Operand `which` (0 Q, 1 Kᵀ, 2 V) of Attention node at: when it is a
 * Slice, or a Reshape read only here of a Slice read only there, the
 * Slice becomes Reshape(its input, z) and the operand that with the
 * range as `name`. */
static void read_in_place(Fuser *f, int at, int which, const char *name) {
  Graph *g = f->g;
  int v = g->nodes[at].in[which];
  Node *rs = fm_sole(f, v) ? fm_def(f, v, OP_RESHAPE) : NULL;
  int sv = rs ? rs->in[0] : v;
  Node *sl = fm_sole(f, sv) ? fm_def(f, sv, OP_SLICE) : NULL;
  Range rg, zr;
  Type z;
  if (!sl || attr_get(&g->nodes[at], name) || !slice_range(g, sl, &rg) ||
      !view_of(&gval(g, sl->in[0])->type, &rg, &gval(g, v)->type, &z, &zr))
    return;
  int si = (int)(sl - g->nodes), x = sl->in[0];
  int shape = ir_const_i64(g, arena_printf(g->arena, "%s_view", gval(g, sv)->name), z.dims, z.rank);
  sl = &g->nodes[si]; /* ir_const may move the values, never the nodes */
  sl->op = OP_RESHAPE;
  sl->in[0] = x;
  sl->in[1] = shape;
  sl->nin = 2;
  sl->nattr = 0;
  Diag d = {0};
  KILN_ASSERT(op_table[OP_RESHAPE].infer(g, sl, &d) && type_equal(&gval(g, sv)->type, &z));
  gval(g, sv)->alias_of = x;
  if (rs)
    rs->dead = true;
  Node *n = &g->nodes[at];
  n->in[which] = sv;
  ir_attr_ints(g, at, name, (int64_t[]){zr.axis, zr.start, zr.start + zr.len}, 3);
  if (f->verbose)
    fprintf(stderr, "fuse: attention reads %s in place <- %s\n", which == 0 ? "Q" : which == 1 ? "K" : "V",
            sl->name);
}

/* Every Attention's Q, K and V that are slices, read in place; the reader
 * lists rebuilt after (new constants: sized anew). */
static void read_operands_in_place(Fuser *f) {
  Graph *g = f->g;
  const char *names[3] = {"q_slice", "k_slice", "v_slice"};
  for (int i = 0; i < g->nnodes; i++)
    for (int w = 0; w < 3; w++)
      if (!g->nodes[i].dead && g->nodes[i].op == OP_ATTENTION)
        read_in_place(f, i, w, names[w]);
  f->ustart = NULL;
  fm_index_users(f);
}

/* Fuse every Q·Kᵀ·scale (+ mask) (+ top-k) -> Softmax -> ·V into one
 * Attention node, then read the fused nodes' slices in place. It runs
 * before the other fusions (but fuse_normalize), so that none of them takes
 * the scale or mask apart first. */
bool pass_fuse_attention(Graph *g, const PassOptions *o, Diag *d) {
  (void)d;
  Fuser fuser, *f = &fuser;
  if (!fm_begin(f, g, o->verbose))
    return true;
  for (int i = 0; i < g->nnodes; i++) {
    Node *sm = &g->nodes[i];
    if (sm->dead || sm->op != OP_SOFTMAX)
      continue;
    Attn a = {0};
    if (match_attention(f, &a, sm) && ordered(g, &a)) {
      rewrite(f, &a);
      continue;
    }
    if (f->verbose && fed_by_matmul(f, sm->in[0], 0))
      fprintf(stderr, "fuse: attention not fused at '%s' (Softmax): %s\n", sm->name,
              a.why ? a.why : "the nodes are not in the order the pattern needs");
  }
  read_operands_in_place(f);
  graph_compact(g);
  return true;
}
