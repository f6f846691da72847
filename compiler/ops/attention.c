/* attention.c — kiln's Attention op (made by compiler/passes/
 * fuse_attention.c from Q·Kᵀ·scale (+ mask) -> Softmax -> ·V; see
 * attention.h for its operands and attributes): shapes, the reference
 * _eval, the mask test the pass and _emit share, and _emit, which fills
 * the spec of the kernel (compiler/kernels/attention_kernel.c).
 *
 * _eval follows the unfused graph's arithmetic, rounding where it rounded:
 * each score is a double dot product rounded to the tensor's type after
 * the scale and again after an additive mask (so a finite -1e9 mask
 * swallows the score exactly as the f32 Add does), softmax in double as
 * Softmax's _eval computes it (the first element seeds the max, so a row
 * masked entirely with -inf gives NaN, as PyTorch exports do), its output
 * rounded, then a double dot product with V. */
#include "attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/ops.h"

/* ---- attributes ------------------------------------------------------------ */

/* An attribute of another kind than string reads as "" and is rejected. */
static const char *mask_attr(const Node *n) {
  const Attr *a = attr_get(n, "mask");
  return !a ? "none" : a->kind == ATTR_STRING ? a->s : "";
}

static AttnMask mask_kind(const Node *n) {
  const char *s = mask_attr(n);
  for (int k = 0; k < ATTN_MASK_BAD; k++)
    if (!strcmp(s, attn_mask_name((AttnMask)k)))
      return (AttnMask)k;
  return ATTN_MASK_BAD;
}

/* perm from attribute `name` (identity when absent); false unless it is a
 * permutation of rank axes (that keeps the last axis last, for all but
 * Kᵀ's: the kernel packs keys that are not contiguous). */
static bool read_perm(const Node *n, const char *name, int rank, int *perm) {
  bool any = !strcmp(name, "k_perm");
  const Attr *a = attr_get(n, name);
  for (int i = 0; i < rank; i++)
    perm[i] = i;
  if (!a)
    return true;
  if (a->kind != ATTR_INTS || a->n != rank)
    return false;
  bool seen[MAX_RANK] = {0};
  for (int i = 0; i < rank; i++) {
    int64_t p = a->ints[i];
    if (p < 0 || p >= rank || seen[p])
      return false;
    seen[p] = true;
    perm[i] = (int)p;
  }
  return any || perm[rank - 1] == rank - 1;
}

/* ---- geometry --------------------------------------------------------------- */

/* The operand read from input type t through attribute `name` ([axis,
 * start, end]: a range of one axis, before the perm): its type in *sl and
 * the element offset of its start in t; false when the attribute is not
 * such a range of t. */
static bool read_slice(const Node *n, const char *name, const Type *t, Type *sl, int64_t *off) {
  const Attr *a = attr_get(n, name);
  *sl = *t;
  *off = 0;
  if (!a)
    return true;
  if (a->kind != ATTR_INTS || a->n != 3 || a->ints[0] < 0 || a->ints[0] >= t->rank)
    return false;
  int ax = (int)a->ints[0];
  int64_t start = a->ints[1], end = a->ints[2], st[MAX_RANK];
  if (start < 0 || end <= start || end > t->dims[ax])
    return false;
  type_strides(t, st);
  sl->dims[ax] = end - start;
  *off = start * st[ax];
  return true;
}

/* Logical dims and strides of Transpose(sl, perm), sl a view (read_slice)
 * of a tensor of type t. */
static void permuted(const Type *t, const Type *sl, const int *perm, int64_t *dims, int64_t *st) {
  int64_t pst[MAX_RANK];
  type_strides(t, pst);
  for (int i = 0; i < t->rank; i++) {
    dims[i] = sl->dims[perm[i]];
    st[i] = pst[perm[i]];
  }
}

/* Strides of mask type mt broadcast to the scores [lead..., S, T]; false
 * when it does not broadcast there. */
static bool mask_strides(const AttnGeom *ge, const Type *mt, int64_t *mst) {
  if (mt->rank > ge->rank)
    return false;
  int64_t pst[MAX_RANK];
  type_strides(mt, pst);
  for (int a = 0; a < ge->rank; a++) {
    int64_t want = a < ge->nlead ? ge->lead[a] : a == ge->nlead ? ge->s : ge->t;
    int ma = a - (ge->rank - mt->rank);
    int64_t d = ma < 0 ? 1 : mt->dims[ma];
    if (d != 1 && d != want)
      return false;
    mst[a] = d == 1 ? 0 : pst[ma];
  }
  return true;
}

/* The geometry of Q, Kᵀ, V as read through their perms; false + a reason
 * in why when they do not fit together. */
static bool geom_operands(const Node *n, const Type *q, const Type *k, const Type *v, AttnGeom *ge,
                          const char **why) {
  int r = q->rank, qp[MAX_RANK], kp[MAX_RANK], vp[MAX_RANK];
  *why = NULL;
  if (r < 2 || k->rank != r || v->rank != r)
    return *why = "Q, Kᵀ and V of one rank >= 2", false;
  if (!read_perm(n, "q_perm", r, qp) || !read_perm(n, "k_perm", r, kp) || !read_perm(n, "v_perm", r, vp))
    return *why = "q_perm, k_perm and v_perm permutations of the operand's axes (q_perm and v_perm keeping "
                  "the last axis last)",
           false;
  Type qs, ks, vs;
  if (!read_slice(n, "q_slice", q, &qs, &ge->qoff) || !read_slice(n, "k_slice", k, &ks, &ge->koff) ||
      !read_slice(n, "v_slice", v, &vs, &ge->voff))
    return *why = "q_slice, k_slice and v_slice [axis, start, end] with 0 <= start < end <= the operand's dim",
           false;
  int64_t qd[MAX_RANK], kd[MAX_RANK], vd[MAX_RANK];
  permuted(q, &qs, qp, qd, ge->qst);
  permuted(k, &ks, kp, kd, ge->kst);
  permuted(v, &vs, vp, vd, ge->vst);
  ge->rank = r;
  ge->nlead = r - 2;
  ge->nb = 1;
  for (int a = 0; a < r - 2; a++) {
    if (kd[a] < 1 || vd[a] < 1 || qd[a] % kd[a] || qd[a] % vd[a])
      return *why = "Q, Kᵀ and V with equal leading (batch, head) dims, or Kᵀ's and V's dividing Q's "
                    "(grouped heads)",
             false;
    ge->lead[a] = qd[a];
    ge->kdiv[a] = qd[a] / kd[a];
    ge->vdiv[a] = qd[a] / vd[a];
    ge->nb *= qd[a];
  }
  ge->s = qd[r - 2];
  ge->dh = qd[r - 1];
  ge->t = kd[r - 1];
  ge->dv = vd[r - 1];
  if (kd[r - 2] != ge->dh || vd[r - 2] != ge->t)
    return *why = "Q [..., S, Dh], Kᵀ [..., Dh, T] and V [..., T, Dv]", false;
  ge->dt = q->dt;
  return true;
}

/* The output's type, and the strides of the logical Y [..., S, Dv] in it. */
static bool geom_output(const Node *n, AttnGeom *ge, Type *yt) {
  int r = ge->rank, yp[MAX_RANK];
  if (!read_perm(n, "y_perm", r, yp))
    return false;
  int64_t ld[MAX_RANK], pst[MAX_RANK];
  for (int a = 0; a < r; a++)
    ld[a] = a < ge->nlead ? ge->lead[a] : a == ge->nlead ? ge->s : ge->dv;
  *yt = (Type){.dt = ge->dt, .rank = r};
  for (int i = 0; i < r; i++)
    yt->dims[i] = ld[yp[i]];
  type_strides(yt, pst);
  for (int i = 0; i < r; i++)
    ge->yst[yp[i]] = pst[i];
  return true;
}

static void read_spec(const Node *n, const AttnGeom *ge, AttnSpec *sp) {
  sp->scale = attr_float(n, "scale", ge->dh > 0 ? 1 / sqrt((double)ge->dh) : 1);
  sp->mask = mask_kind(n);
  sp->mask_fill = attr_float(n, "mask_fill", -INFINITY);
  sp->topk = attr_int(n, "topk", 0);
  sp->topk_fill = attr_float(n, "topk_fill", -INFINITY);
  sp->score_min = attr_float(n, "score_min", -INFINITY);
  sp->softcap = attr_float(n, "softcap", 0);
  sp->softcap_first = attr_int(n, "softcap_first", 0) != 0;
}

void attn_read(const Graph *g, const Node *n, AttnSpec *sp, AttnGeom *ge) {
  const char *why;
  Type yt;
  KILN_ASSERT(geom_operands(n, &gval(g, n->in[0])->type, &gval(g, n->in[1])->type, &gval(g, n->in[2])->type,
                            ge, &why));
  KILN_ASSERT(geom_output(n, ge, &yt));
  const Value *m = node_in(g, n, 3);
  ge->has_mask = m != NULL;
  ge->mdt = m ? m->type.dt : DT_UNDEF;
  KILN_ASSERT(!m || mask_strides(ge, &m->type, ge->mst));
  read_spec(n, ge, sp);
}

/* ---- the causal test ----------------------------------------------------------- */

/* Element i of a mask: masked with -inf (1), masked with a finite value
 * <= ATTN_MASKED_BELOW (2: Hugging Face's finfo.min), not masked (0), or
 * else (-1). */
static int causal_el(DType dt, const void *data, int64_t i, double fill) {
  double x = dt == DT_BOOL ? (el_get_u(dt, data, i) ? fill : 0) : el_get_f(dt, data, i);
  return x == 0 ? 0 : isinf(x) && x < 0 ? 1 : x <= ATTN_MASKED_BELOW ? 2 : -1;
}

/* A finite masked value is -inf to the kernel (it skips those keys) only
 * where the row keeps some key: exp(finfo.min - max) is 0 then, but a row
 * masked entirely by finite values has a uniform softmax, not NaN. So
 * those need off >= 0 (row 0 sees key 0). */
bool attn_mask_is_causal(const Type *mt, const void *data, double fill, int64_t s, int64_t t, int64_t *off) {
  if (!data || mt->rank < 2 || mt->dims[mt->rank - 2] != s || mt->dims[mt->rank - 1] != t || s * t == 0)
    return false;
  int64_t visible = 0; /* row 0 sees keys 0 .. off */
  while (visible < t && causal_el(mt->dt, data, visible, fill) == 0)
    visible++;
  *off = visible - 1;
  for (int64_t e = 0, n = type_numel(mt); e < n; e++) {
    int64_t j = e % t, i = e / t % s;
    int c = causal_el(mt->dt, data, e, fill);
    if (c < 0 || (c != 0) != (j > i + *off) || (c == 2 && *off < 0))
      return false;
  }
  return true;
}

/* ---- _infer ------------------------------------------------------------------- */

static bool float_dt(DType dt) { return dt == DT_F32 || dt == DT_F64; }

/* The mask input against the kind recorded for it. */
static bool check_mask(Graph *g, Node *n, const AttnGeom *ge, const AttnSpec *sp, Diag *d) {
  const Value *m = node_in(g, n, 3);
  char ts[128];
  if (sp->mask == ATTN_MASK_BAD)
    return diag_node(d, g, n, "mask is '%s'; expected \"none\", \"causal\", \"padding\", \"static\", "
                     "\"additive\" or \"bool\"", mask_attr(n));
  if ((sp->mask == ATTN_MASK_NONE) != (m == NULL))
    return diag_node(d, g, n, "mask is \"%s\" and the mask input is %s; expected a mask input exactly when "
                     "mask is not \"none\"", mask_attr(n), m ? "given" : "absent");
  if (!m)
    return true;
  int64_t mst[MAX_RANK], off;
  if ((m->type.dt != DT_BOOL && m->type.dt != ge->dt) || !mask_strides(ge, &m->type, mst))
    return diag_node(d, g, n, "mask '%s' is %s; expected bool or %s, broadcastable to the scores "
                     "[..., %lld, %lld]", m->name, type_str(&m->type, ts, sizeof ts), dt_name(ge->dt),
                     (long long)ge->s, (long long)ge->t);
  bool constant = m->data != NULL, is_bool = m->type.dt == DT_BOOL;
  if ((sp->mask == ATTN_MASK_CAUSAL || sp->mask == ATTN_MASK_STATIC) && !constant)
    return diag_node(d, g, n, "mask is \"%s\" but '%s' is computed at run time; expected a constant",
                     mask_attr(n), m->name);
  if (sp->mask == ATTN_MASK_CAUSAL &&
      !attn_mask_is_causal(&m->type, m->data, sp->mask_fill, ge->s, ge->t, &off))
    return diag_node(d, g, n, "mask is \"causal\" but '%s' is not -inf (or a finite fill <= -1e30, with "
                     "every row keeping a key) exactly above a diagonal and 0 elsewhere; expected a causal "
                     "mask, or mask=\"static\"", m->name);
  if (sp->mask == ATTN_MASK_PADDING && mst[ge->nlead] != 0)
    return diag_node(d, g, n, "mask is \"padding\" but '%s' %s varies along the query axis; expected "
                     "its query dim to be 1", m->name, type_str(&m->type, ts, sizeof ts));
  if ((sp->mask == ATTN_MASK_ADDITIVE && is_bool) || (sp->mask == ATTN_MASK_BOOL && !is_bool))
    return diag_node(d, g, n, "mask is \"%s\" and '%s' is %s; expected %s", mask_attr(n), m->name,
                     dt_name(m->type.dt), is_bool ? "mask=\"bool\"" : "mask=\"additive\"");
  return true;
}

bool attention_infer(Graph *g, Node *n, Diag *d) {
  Value *q = node_in(g, n, 0), *k = node_in(g, n, 1), *v = node_in(g, n, 2);
  if (!q || !k || !v)
    return diag_node(d, g, n, "input %s is absent; expected Q, Kᵀ and V", !q ? "Q" : !k ? "Kᵀ" : "V");
  char a[128], b[128], c[128];
  if (!float_dt(q->type.dt) || k->type.dt != q->type.dt || v->type.dt != q->type.dt)
    return diag_node(d, g, n, "Q, Kᵀ, V are %s, %s, %s; expected all f32 or all f64", dt_name(q->type.dt),
                     dt_name(k->type.dt), dt_name(v->type.dt));
  AttnGeom ge;
  AttnSpec sp;
  Type yt;
  const char *why;
  if (!geom_operands(n, &q->type, &k->type, &v->type, &ge, &why))
    return diag_node(d, g, n, "Q is %s, Kᵀ %s, V %s (after their perms); expected %s",
                     type_str(&q->type, a, sizeof a), type_str(&k->type, b, sizeof b),
                     type_str(&v->type, c, sizeof c), why);
  if (!geom_output(n, &ge, &yt))
    return diag_node(d, g, n, "y_perm is not a permutation of %d axes keeping the last axis last; expected "
                     "one, or no y_perm", ge.rank);
  read_spec(n, &ge, &sp);
  if (!isfinite(sp.scale))
    return diag_node(d, g, n, "scale is %g; expected a finite number", sp.scale);
  if (sp.topk < 0 || sp.topk > ge.t)
    return diag_node(d, g, n, "topk is %lld with %lld keys; expected 0 (off) to %lld", (long long)sp.topk,
                     (long long)ge.t, (long long)ge.t);
  if (!check_mask(g, n, &ge, &sp, d))
    return false;
  const Value *rows = node_in(g, n, 4);
  if (rows && (rows->type.dt != DT_I64 || type_numel(&rows->type) != 1 || ge.s != ge.t))
    return diag_node(d, g, n, "rows is %s with %lld queries and %lld keys; expected i64[1] and self-attention "
                     "(as many queries as keys)", type_str(&rows->type, a, sizeof a), (long long)ge.s, (long long)ge.t);
  if (!(sp.score_min <= ATTN_MASKED_BELOW) || (!isinf(sp.score_min) && sp.topk))
    return diag_node(d, g, n, "score_min is %g%s; expected -inf or a finite value <= -1e30 (it then changes "
                     "only rows whose every score is masked), without topk", sp.score_min,
                     sp.topk ? " with topk" : "");
  int64_t first = attr_int(n, "softcap_first", 0);
  if (first != 0 && first != 1)
    return diag_node(d, g, n, "softcap_first is %lld; expected 0 (after the mask) or 1 (before it)",
                     (long long)first);
  if (!(sp.softcap >= 0) || isinf(sp.softcap) || (sp.softcap > 0 && (sp.topk || !isinf(sp.score_min))))
    return diag_node(d, g, n, "softcap is %g%s; expected 0 (off) or a finite value > 0, without topk and "
                     "score_min", sp.softcap, sp.topk || !isinf(sp.score_min) ? " with topk or score_min" : "");
  node_out(g, n, 0)->type = yt;
  return true;
}

/* ---- _eval --------------------------------------------------------------------- */

/* Round x to dt, as storing it in a tensor of dt would. */
static double round_dt(DType dt, double x) { return dt == DT_F32 ? (double)(float)x : x; }

/* Descending, NaN last: the order TopK ranks scores in. */
static int by_value_desc(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  if (isnan(a) || isnan(b))
    return isnan(a) - isnan(b);
  return a < b ? 1 : a > b ? -1 : 0;
}

/* cap · tanh(s / cap) as Div, Tanh, Mul round it. */
static double capped(DType dt, double s, double cap) {
  return round_dt(dt, round_dt(dt, tanh(round_dt(dt, s / cap))) * cap);
}

/* Scores of query row i of head b into sc[0..T): scale · q·k, then mask
 * (and the softcap before or after it). */
static void row_scores(const AttnGeom *ge, const AttnSpec *sp, const Tensor *in, int64_t b, int64_t i,
                       double *sc) {
  DType dt = ge->dt;
  int64_t r = ge->rank;
  int64_t qo = ge->qoff + attn_lead_offset(ge, ge->qst, b) + i * ge->qst[r - 2];
  int64_t ko = ge->koff + attn_group_offset(ge, ge->kst, ge->kdiv, b), mo = 0;
  if (ge->has_mask)
    mo = attn_lead_offset(ge, ge->mst, b) + i * ge->mst[r - 2];
  for (int64_t j = 0; j < ge->t; j++) {
    double dot = 0;
    for (int64_t x = 0; x < ge->dh; x++)
      dot += el_get_f(dt, in[0].data, qo + x * ge->qst[r - 1]) *
             el_get_f(dt, in[1].data, ko + x * ge->kst[r - 2] + j * ge->kst[r - 1]);
    double s = round_dt(dt, sp->scale * dot);
    if (sp->softcap > 0 && sp->softcap_first)
      s = capped(dt, s, sp->softcap);
    if (ge->has_mask && ge->mdt == DT_BOOL)
      s = el_get_u(DT_BOOL, in[3].data, mo + j * ge->mst[r - 1]) ? round_dt(dt, sp->mask_fill) : s;
    else if (ge->has_mask)
      s = round_dt(dt, s + el_get_f(dt, in[3].data, mo + j * ge->mst[r - 1]));
    s = s < sp->score_min ? round_dt(dt, sp->score_min) : s; /* Max(s, score_min): NaN stays */
    if (sp->softcap > 0 && !sp->softcap_first)
      s = capped(dt, s, sp->softcap);
    sc[j] = s;
  }
}

/* Scores below the row's topk-th largest become topk_fill. */
static void row_topk(const AttnGeom *ge, const AttnSpec *sp, double *sc, double *tmp) {
  memcpy(tmp, sc, sizeof(double) * (size_t)ge->t);
  qsort(tmp, (size_t)ge->t, sizeof(double), by_value_desc);
  double thr = tmp[sp->topk - 1];
  for (int64_t j = 0; j < ge->t; j++)
    if (sc[j] < thr)
      sc[j] = round_dt(ge->dt, sp->topk_fill);
}

/* Softmax of sc as Softmax's _eval computes it, rounded to dt. */
static void row_softmax(DType dt, double *sc, int64_t t) {
  double m = -INFINITY, sum = 0;
  for (int64_t j = 0; j < t; j++)
    if (j == 0 || sc[j] > m)
      m = sc[j];
  for (int64_t j = 0; j < t; j++)
    sum += exp(sc[j] - m);
  for (int64_t j = 0; j < t; j++)
    sc[j] = round_dt(dt, exp(sc[j] - m) / sum);
}

bool attention_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  AttnGeom ge;
  AttnSpec sp;
  const char *why;
  Type yt;
  KILN_ASSERT(geom_operands(n, &in[0].type, &in[1].type, &in[2].type, &ge, &why));
  KILN_ASSERT(geom_output(n, &ge, &yt));
  ge.has_mask = n->nin > 3 && in[3].data;
  ge.mdt = ge.has_mask ? in[3].type.dt : DT_UNDEF;
  KILN_ASSERT(!ge.has_mask || mask_strides(&ge, &in[3].type, ge.mst));
  read_spec(n, &ge, &sp);
  if (n->nin > 4 && in[4].data) { /* an encoder's token count: the queries and keys before it (Y's other rows 0) */
    int64_t r = *(const int64_t *)in[4].data;
    ge.s = ge.t = r < 0 ? 0 : r < ge.s ? r : ge.s;
  }
  if (ge.t == 0) /* softmax over no keys, times an empty V: zeros (out is zeroed) */
    return true;
  double *sc = malloc(sizeof(double) * 2 * (size_t)ge.t);
  if (!sc)
    return diag_error(d, "out of memory evaluating Attention over %lld keys", (long long)ge.t);
  int r = ge.rank;
  for (int64_t b = 0; b < ge.nb; b++) {
    int64_t vo = ge.voff + attn_group_offset(&ge, ge.vst, ge.vdiv, b), yo = attn_lead_offset(&ge, ge.yst, b);
    for (int64_t i = 0; i < ge.s; i++) {
      row_scores(&ge, &sp, in, b, i, sc);
      if (sp.topk > 0)
        row_topk(&ge, &sp, sc, sc + ge.t);
      row_softmax(ge.dt, sc, ge.t);
      for (int64_t e = 0; e < ge.dv; e++) {
        double acc = 0;
        for (int64_t j = 0; j < ge.t; j++)
          acc += sc[j] * el_get_f(ge.dt, in[2].data, vo + j * ge.vst[r - 2] + e * ge.vst[r - 1]);
        el_set_f(ge.dt, out[0].data, yo + i * ge.yst[r - 2] + e * ge.yst[r - 1], acc);
      }
    }
  }
  free(sc);
  return true;
}

/* ---- _emit ------------------------------------------------------------------------ */

/* The kernel's spec from the node (compiler/kernels/attention_kernel.h):
 * no code for an empty Y; Q, Kᵀ and V referenced first, in this order
 * (emit_ref names weights by first use). */
bool attention_emit(Emit *e, const Node *n) {
  AttnSpec sp = {.name = n->name, .m_vid = node_has_in(n, 3) ? n->in[3] : -1, .y_vid = n->out[0]};
  attn_read(e->g, n, &sp, &sp.ge);
  if (sp.ge.nb * sp.ge.s * sp.ge.dv == 0)
    return true;
  const Value *m = node_in(e->g, n, 3);
  if (m) {
    sp.mask_name = m->name;
    sp.mask_data = m->data;
  }
  sp.q = emit_ref(e, n->in[0]);
  sp.k = emit_ref(e, n->in[1]);
  sp.v = emit_ref(e, n->in[2]);
  if (node_has_in(n, 4))
    sp.rows = arena_printf(e->g->arena, "%s[0]", emit_ref(e, n->in[4]));
  if (sp.mask == ATTN_MASK_CAUSAL && sp.ge.t > 0)
    KILN_ASSERT(attn_mask_is_causal(&m->type, m->data, sp.mask_fill, sp.ge.s, sp.ge.t, &sp.causal_off));
  attn_emit_kernel(e, &sp);
  return true;
}

/* ---- FLOP count (ops.def's flops column) --------------------------------------------- */

/* Per head, with S queries, T keys, head sizes Dh and Dv: Q·Kᵀ is 2·S·T·Dh
 * and P·V 2·S·T·Dv (multiply-adds count 2); each of the S·T scores then
 * costs 1 for the scale, 1 for the mask when there is one (the add, or the
 * select of a bool mask), 1 for top-k when on (the compare with the row's
 * k-th largest; finding it is not counted), 3 for the softcap when on
 * (divide, tanh, multiply) and Softmax's 5 (max, subtract,
 * exp, sum, normalise). Every score counts, masked or not: the op's
 * arithmetic, not what the kernel skips (blocks above a causal diagonal,
 * all-masked blocks of a static mask). */
int64_t attention_flops(const Graph *g, const Node *n) {
  AttnSpec sp;
  AttnGeom ge;
  attn_read(g, n, &sp, &ge);
  int64_t per_score = 2 * ge.dh + 2 * ge.dv + 1 + (ge.has_mask ? 1 : 0) + (sp.topk > 0 ? 1 : 0) +
                      (sp.softcap > 0 ? 3 : 0) + 5;
  return ge.nb * ge.s * ge.t * per_score;
}
