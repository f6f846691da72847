/* slice.c — windows onto a tensor: Slice (a strided box, steps may be
 * negative), Pad (constant, edge, reflect or wrap borders; negative pads
 * crop; opset 18's axes input names the axes the pads are for)
 * and Trilu (keep the upper or lower triangle of the last two dims).
 *
 * Every index is resolved at compile time: Slice's starts/ends/axes/steps
 * and Pad's pads and axes are constant inputs (attributes before opsets 10 and 11),
 * so _emit writes plain copy loops whose offsets and strides are numbers.
 * Pad's constant_value is the one run-time operand: it does not change the
 * shape, so the C reads it from its tensor when it is not a constant.
 * _eval walks the output element by element and copies element bytes, which
 * serves every dtype. */
#include <stdio.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

/* ---- a copy loop nest, shared by Slice and Pad ---------------------------- */

/* y[obase + sum_d i_d * os_d] = x[ibase + sum_d src_d(i_d)] over the box
 * dims, where src_d(i) is i * is_d, or tab_d[i] when dim d has a table of x
 * offsets (Pad's edge and reflect borders). */
typedef struct Nest {
  int rank;
  int64_t dims[MAX_RANK], os[MAX_RANK], is[MAX_RANK];
  int64_t *tab[MAX_RANK];
  int64_t obase, ibase;
} Nest;

/* Drop unit dims (folding their one table entry into ibase) and merge
 * neighbours that are contiguous on both sides, so a plain copy becomes
 * one flat loop. */
static void nest_merge(Nest *s) {
  Nest m = {.obase = s->obase, .ibase = s->ibase};
  for (int d = 0; d < s->rank; d++) {
    if (s->dims[d] == 1) {
      if (s->tab[d])
        m.ibase += s->tab[d][0];
      continue;
    }
    int r = m.rank;
    if (r > 0 && !m.tab[r - 1] && !s->tab[d] && m.os[r - 1] == s->os[d] * s->dims[d] &&
        m.is[r - 1] == s->is[d] * s->dims[d]) {
      m.dims[r - 1] *= s->dims[d];
      m.os[r - 1] = s->os[d];
      m.is[r - 1] = s->is[d];
      continue;
    }
    m.dims[r] = s->dims[d];
    m.os[r] = s->os[d];
    m.is[r] = s->is[d];
    m.tab[r] = s->tab[d];
    m.rank++;
  }
  *s = m;
}

/* "base + i0 * s0 - i1 * s1 + src2[i2]" (terms with stride 0 dropped). */
static const char *index_expr(Arena *a, int64_t base, int rank, const int64_t *st,
                              const char *const *tab) {
  Buf b = {0};
  if (base)
    buf_printf(&b, "%lld", (long long)base);
  for (int d = 0; d < rank; d++) {
    if (tab && tab[d]) {
      buf_printf(&b, "%s%s[i%d]", b.len ? " + " : "", tab[d], d);
      continue;
    }
    int64_t s = st[d] < 0 ? -st[d] : st[d];
    if (s == 0)
      continue;
    if (b.len)
      buf_puts(&b, st[d] < 0 ? " - " : " + ");
    else if (st[d] < 0)
      buf_puts(&b, "-");
    buf_printf(&b, s == 1 ? "i%d" : "i%d * %lld", d, (long long)s);
  }
  const char *r = arena_strdup(a, b.len ? b.s : "0");
  buf_free(&b);
  return r;
}

static void open_loops(Emit *e, int rank, const int64_t *dims) {
  for (int d = 0; d < rank; d++) {
    emit_line(e, "for (int i%d = 0; i%d < %lld; i%d++) {", d, d, (long long)dims[d], d);
    e->indent++;
  }
}

static void close_loops(Emit *e, int rank) {
  for (int d = 0; d < rank; d++) {
    e->indent--;
    emit_line(e, "}");
  }
}

/* The nest as C: tables first (static const), then the loops. */
static void emit_nest(Emit *e, Nest s, int x, int y) {
  Arena *a = e->g->arena;
  nest_merge(&s);
  const char *tab[MAX_RANK] = {0};
  for (int d = 0; d < s.rank; d++) {
    if (!s.tab[d])
      continue;
    Buf b = {0};
    tab[d] = emit_tmpname(e, "src");
    for (int64_t i = 0; i < s.dims[d]; i++)
      buf_printf(&b, "%s%lld", i ? ", " : "", (long long)s.tab[d][i]);
    emit_line(e, "static const int %s[%lld] = {%s};", tab[d], (long long)s.dims[d], b.s);
    buf_free(&b);
  }
  open_loops(e, s.rank, s.dims);
  emit_line(e, "%s[%s] = %s[%s];", emit_ref(e, y), index_expr(a, s.obase, s.rank, s.os, NULL),
            emit_ref(e, x), index_expr(a, s.ibase, s.rank, s.is, tab));
  close_loops(e, s.rank);
}

/* Row-major index of output element i in a tensor of type t: fills c. */
static void unravel(const Type *t, int64_t i, int64_t *c) {
  for (int d = t->rank - 1; d >= 0; d--) {
    c[d] = i % t->dims[d];
    i /= t->dims[d];
  }
}

static void copy_el(DType dt, void *dst, int64_t j, const void *src, int64_t i) {
  size_t sz = dt_size(dt);
  memcpy((char *)dst + (size_t)j * sz, (const char *)src + (size_t)i * sz, sz);
}

/* A 1-D integer tensor (absent: n = -1) into v[MAX_RANK]. */
static bool tensor_ints(const Tensor *t, const char *what, int64_t *v, int *n, int rank, char *err,
                        size_t errn) {
  *n = -1;
  if (!t || !t->data)
    return true;
  int64_t m = type_numel(&t->type);
  if (m > rank) {
    snprintf(err, errn, "%s has %lld entries; expected at most the input's rank %d", what,
             (long long)m, rank);
    return false;
  }
  for (int64_t k = 0; k < m; k++)
    v[k] = el_get_i(t->type.dt, t->data, k);
  *n = (int)m;
  return true;
}

static bool attr_ints(const Node *n, const char *name, int64_t *v, int *len, int rank, char *err,
                      size_t errn) {
  const Attr *at = attr_get(n, name);
  *len = -1;
  if (!at)
    return true;
  if (at->kind != ATTR_INTS || at->n > rank) {
    snprintf(err, errn, "attribute '%s' has %d entries; expected a list of at most %d ints", name,
             at->n, rank);
    return false;
  }
  for (int k = 0; k < at->n; k++)
    v[k] = at->ints[k];
  *len = at->n;
  return true;
}

/* ---- Slice ---------------------------------------------------------------- */

/* The resolved box: per input axis, the first element and the step; and the
 * output dims. */
typedef struct SlicePlan {
  int64_t start[MAX_RANK], step[MAX_RANK];
  Type out;
} SlicePlan;

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ONNX Slice semantics: negative starts/ends count from the end, then clamp
 * to [0, dim] for positive steps and [-1, dim - 1] for negative ones. `in`
 * holds the node's inputs (opset >= 10) or is unused (attributes). */
static bool slice_plan(const Node *n, const Type *x, const Tensor *in, SlicePlan *p, char *err,
                       size_t errn) {
  int rank = x->rank, ns, ne, na, nst;
  int64_t starts[MAX_RANK], ends[MAX_RANK], axes[MAX_RANK], steps[MAX_RANK];
  bool ok = n->opset < 10
                ? attr_ints(n, "starts", starts, &ns, rank, err, errn) &&
                      attr_ints(n, "ends", ends, &ne, rank, err, errn) &&
                      attr_ints(n, "axes", axes, &na, rank, err, errn)
                : tensor_ints(&in[1], "starts", starts, &ns, rank, err, errn) &&
                      tensor_ints(&in[2], "ends", ends, &ne, rank, err, errn) &&
                      tensor_ints(&in[3], "axes", axes, &na, rank, err, errn) &&
                      tensor_ints(&in[4], "steps", steps, &nst, rank, err, errn);
  if (!ok)
    return false;
  if (n->opset < 10)
    nst = -1;
  if (ns < 0 || ne < 0) {
    snprintf(err, errn, "starts or ends is missing; expected both");
    return false;
  }
  if (ne != ns || (na >= 0 && na != ns) || (nst >= 0 && nst != ns)) {
    const char *what = ne != ns ? "ends" : na >= 0 && na != ns ? "axes" : "steps";
    snprintf(err, errn, "starts has %d entries and %s %d; expected equal lengths", ns, what,
             ne != ns ? ne : na >= 0 && na != ns ? na : nst);
    return false;
  }
  p->out = *x;
  for (int d = 0; d < rank; d++)
    p->start[d] = 0, p->step[d] = 1;
  bool seen[MAX_RANK] = {0};
  for (int k = 0; k < ns; k++) {
    int ax = k;
    if (na >= 0 && !axis_norm(axes[k], rank, &ax)) {
      snprintf(err, errn, "axis %lld out of range; expected [%d, %d)", (long long)axes[k], -rank, rank);
      return false;
    }
    if (seen[ax]) {
      snprintf(err, errn, "axis %d is sliced twice; expected unique axes", ax);
      return false;
    }
    seen[ax] = true;
    int64_t dim = x->dims[ax], st = nst >= 0 ? steps[k] : 1, b = starts[k], e = ends[k];
    if (st == 0) {
      snprintf(err, errn, "step of axis %d is 0; expected a nonzero step", ax);
      return false;
    }
    if (b < 0)
      b += dim;
    if (e < 0)
      e += dim;
    if (st > 0) {
      b = clamp64(b, 0, dim);
      e = clamp64(e, 0, dim);
    } else {
      b = clamp64(b, 0, dim - 1);
      e = clamp64(e, -1, dim - 1);
    }
    /* b and e are now within [-1, dim]: the span cannot overflow; the step
     * may be anything down to INT64_MIN, hence unsigned */
    int64_t span = st > 0 ? e - b : b - e;
    uint64_t ast = st > 0 ? (uint64_t)st : 0 - (uint64_t)st;
    int64_t cnt = span > 0 && dim > 0 ? (int64_t)((uint64_t)(span - 1) / ast) + 1 : 0;
    p->start[ax] = cnt > 0 ? b : 0;
    p->step[ax] = cnt > 1 ? st : 1; /* a step taken never does not matter */
    p->out.dims[ax] = cnt;
  }
  return true;
}

/* Tensor views of a node's values (absent: data NULL), for the plan. */
static void node_tensors(const Graph *g, const Node *n, Tensor *t, int cnt) {
  for (int i = 0; i < cnt; i++) {
    const Value *v = node_in(g, n, i);
    t[i] = v ? (Tensor){v->type, v->data} : (Tensor){{0}, NULL};
  }
}

bool slice_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  static const char *names[] = {"data", "starts", "ends", "axes", "steps"};
  if (n->opset < 10 && n->nin > 1)
    return diag_node(d, g, n, "opset %d Slice has %d inputs; expected 1 (starts/ends/axes are "
                     "attributes before opset 10)", n->opset, n->nin);
  if (n->opset >= 10 && (!node_has_in(n, 1) || !node_has_in(n, 2)))
    return diag_node(d, g, n, "inputs 'starts' and 'ends' are required; expected both");
  for (int i = 1; i < n->nin; i++) {
    int64_t *v;
    int len;
    if (node_has_in(n, i) && !const_input_ints(g, n, i, names[i], &v, &len, d))
      return false;
  }
  if (x->type.rank < 1)
    return diag_node(d, g, n, "input '%s' is a scalar; expected rank >= 1", x->name);
  Tensor t[5];
  node_tensors(g, n, t, 5);
  SlicePlan p;
  char err[256];
  if (!slice_plan(n, &x->type, t, &p, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  node_out(g, n, 0)->type = p.out;
  return true;
}

bool slice_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  Tensor t[5] = {{{0}, NULL}};
  for (int i = 0; i < n->nin && i < 5; i++)
    t[i] = in[i];
  SlicePlan p;
  char err[256];
  if (!slice_plan(n, &in[0].type, t, &p, err, sizeof err))
    return diag_error(d, "node '%s' (Slice): %s", n->name, err);
  const Type *ot = &out[0].type, *xt = &in[0].type;
  int64_t xs[MAX_RANK], c[MAX_RANK], cnt = type_numel(ot);
  type_strides(xt, xs);
  for (int64_t i = 0; i < cnt; i++) {
    unravel(ot, i, c);
    int64_t src = 0;
    for (int k = 0; k < ot->rank; k++)
      src += (p.start[k] + c[k] * p.step[k]) * xs[k];
    copy_el(ot->dt, out[0].data, i, in[0].data, src);
  }
  return true;
}

static void emit_list(Buf *b, const int64_t *v, int n) {
  for (int k = 0; k < n; k++)
    buf_printf(b, "%s%lld", k ? ", " : "", (long long)v[k]);
}

bool slice_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Type *xt = &gval(g, n->in[0])->type;
  Tensor t[5] = {{{0}, NULL}};
  node_tensors(g, n, t, n->nin < 5 ? n->nin : 5);
  SlicePlan p;
  char err[256];
  if (!slice_plan(n, xt, t, &p, err, sizeof err))
    return false;
  if (type_numel(&p.out) == 0) {
    emit_line(e, "/* empty output: nothing to copy */");
    return true;
  }
  Buf b = {0};
  buf_puts(&b, "/* y[i] = x[start + i * step] per axis: start {");
  emit_list(&b, p.start, xt->rank);
  buf_puts(&b, "}, step {");
  emit_list(&b, p.step, xt->rank);
  buf_puts(&b, "} */");
  emit_line(e, "%s", b.s);
  buf_free(&b);
  Nest s = {.rank = xt->rank};
  int64_t xs[MAX_RANK];
  type_strides(xt, xs);
  type_strides(&p.out, s.os);
  for (int d = 0; d < xt->rank; d++) {
    s.dims[d] = p.out.dims[d];
    s.is[d] = p.step[d] * xs[d];
    s.ibase += p.start[d] * xs[d];
  }
  emit_nest(e, s, n->in[0], n->out[0]);
  return true;
}

/* ---- Pad ------------------------------------------------------------------ */

typedef enum { PAD_CONSTANT, PAD_EDGE, PAD_REFLECT, PAD_WRAP } PadMode;

typedef struct PadPlan {
  PadMode mode;
  int64_t begin[MAX_RANK];       /* elements added before each axis (negative: cropped) */
  int64_t lo[MAX_RANK], hi[MAX_RANK]; /* the part of each axis that negative pads keep */
  Type out;
} PadPlan;

/* Source coordinate in x for coordinate c of an axis whose kept part is
 * [lo, hi) (c = padded coordinate - begin pad): -1 means "the constant".
 * Negative pads crop first and the borders then come from what is kept,
 * as onnxruntime does. Reflect repeats with period 2 * (hi - lo - 1), as
 * numpy's pad does for borders wider than the axis; wrap with period
 * hi - lo. */
static int64_t pad_src(PadMode mode, int64_t c, int64_t lo, int64_t hi) {
  if (c >= lo && c < hi)
    return c;
  if (mode == PAD_CONSTANT)
    return -1;
  int64_t len = hi - lo;
  if (mode == PAD_WRAP) {
    int64_t r = (c - lo) % len;
    return lo + (r < 0 ? r + len : r);
  }
  if (mode == PAD_EDGE || len == 1)
    return c < lo ? lo : hi - 1;
  int64_t period = 2 * (len - 1), r = (c - lo) % period;
  if (r < 0)
    r += period;
  return lo + (r < len ? r : period - r);
}

static bool pad_plan(const Node *n, const Type *x, const Tensor *in, PadPlan *p, char *err,
                     size_t errn) {
  int rank = x->rank, np = -1, na = -1;
  int64_t given[2 * MAX_RANK], pads[2 * MAX_RANK] = {0}, axes[MAX_RANK];
  const char *mode = attr_str(n, "mode", "constant");
  if (!strcmp(mode, "constant"))
    p->mode = PAD_CONSTANT;
  else if (!strcmp(mode, "edge"))
    p->mode = PAD_EDGE;
  else if (!strcmp(mode, "reflect"))
    p->mode = PAD_REFLECT;
  else if (!strcmp(mode, "wrap") && n->opset >= 19)
    p->mode = PAD_WRAP;
  else {
    snprintf(err, errn, "mode is '%s'; expected \"constant\", \"reflect\", \"edge\"%s", mode,
             n->opset >= 19 ? " or \"wrap\"" : " (or \"wrap\" from opset 19)");
    return false;
  }
  bool ok = n->opset < 11 ? attr_ints(n, n->opset < 2 ? "paddings" : "pads", given, &np, 2 * rank,
                                      err, errn)
                          : tensor_ints(&in[1], "pads", given, &np, 2 * rank, err, errn) &&
                                tensor_ints(&in[3], "axes", axes, &na, rank, err, errn);
  if (!ok)
    return false;
  int nax = na >= 0 ? na : rank;
  if (np != 2 * nax) {
    snprintf(err, errn, "pads has %d entries; expected 2 * %s = %d", np,
             na >= 0 ? "the number of axes" : "rank", 2 * nax);
    return false;
  }
  bool seen[MAX_RANK] = {0};
  for (int k = 0; k < nax; k++) {
    int ax = k;
    if (na >= 0 && !axis_norm(axes[k], rank, &ax)) {
      snprintf(err, errn, "axis %lld out of range; expected [%d, %d)", (long long)axes[k], -rank,
               rank);
      return false;
    }
    if (seen[ax]) {
      snprintf(err, errn, "axis %d is padded twice; expected unique axes", ax);
      return false;
    }
    seen[ax] = true;
    pads[ax] = given[k];
    pads[rank + ax] = given[nax + k];
  }
  p->out = *x;
  for (int d = 0; d < rank; d++) {
    int64_t b = pads[d], e = pads[rank + d], lim = (int64_t)1 << 40;
    if (b < -lim || b > lim || e < -lim || e > lim) {
      snprintf(err, errn, "pads of axis %d are %lld and %lld; expected sizes below 2^40", d,
               (long long)b, (long long)e);
      return false;
    }
    p->begin[d] = b;
    p->lo[d] = b < 0 ? -b : 0;
    p->hi[d] = e < 0 ? x->dims[d] + e : x->dims[d];
    p->out.dims[d] = x->dims[d] + b + e;
    if (p->out.dims[d] < 0) {
      snprintf(err, errn, "pads %lld and %lld crop axis %d of size %lld below zero; expected a "
               "result of size >= 0", (long long)b, (long long)e, d, (long long)x->dims[d]);
      return false;
    }
  }
  if (p->mode != PAD_CONSTANT && type_numel(&p->out) > 0)
    for (int d = 0; d < rank; d++)
      if (p->hi[d] <= p->lo[d]) {
        snprintf(err, errn, "axis %d is empty after cropping; expected a non-empty axis to pad in "
                 "%s mode", d, mode);
        return false;
      }
  return true;
}

bool pad_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *cv = node_in(g, n, 2);
  if (n->opset < 11 && n->nin > 1)
    return diag_node(d, g, n, "opset %d Pad has %d inputs; expected 1 (pads and value are "
                     "attributes before opset 11)", n->opset, n->nin);
  if (n->opset < 18 && n->nin > 3)
    return diag_node(d, g, n, "opset %d Pad has %d inputs; expected at most 3 (the axes input "
                     "is new in opset 18)", n->opset, n->nin);
  if (n->opset >= 11) {
    int64_t *v;
    int len;
    if (!const_input_ints(g, n, 1, "pads", &v, &len, d))
      return false;
    if (node_has_in(n, 3) && !const_input_ints(g, n, 3, "axes", &v, &len, d))
      return false;
  }
  if (cv && cv->type.dt != x->type.dt)
    return diag_node(d, g, n, "constant_value '%s' is %s; expected %s like the data", cv->name,
                     dt_name(cv->type.dt), dt_name(x->type.dt));
  if (cv && type_numel(&cv->type) != 1)
    return diag_node(d, g, n, "constant_value '%s' has %lld elements; expected a scalar", cv->name,
                     (long long)type_numel(&cv->type));
  Tensor t[4];
  node_tensors(g, n, t, 4);
  PadPlan p;
  char err[256];
  if (!pad_plan(n, &x->type, t, &p, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  node_out(g, n, 0)->type = p.out;
  return true;
}

/* The constant mode's fill value as one element of dt in *buf. */
static void pad_value(const Node *n, DType dt, const Tensor *cv, uint64_t *buf) {
  *buf = 0;
  if (n->opset < 11)
    el_set_f(dt, buf, 0, attr_float(n, "value", 0.0));
  else if (cv && cv->data)
    copy_el(dt, buf, 0, cv->data, 0);
}

bool pad_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  Tensor t[4] = {{{0}, NULL}};
  for (int i = 0; i < n->nin && i < 4; i++)
    t[i] = in[i];
  PadPlan p;
  char err[256];
  if (!pad_plan(n, &in[0].type, t, &p, err, sizeof err))
    return diag_error(d, "node '%s' (Pad): %s", n->name, err);
  const Type *ot = &out[0].type, *xt = &in[0].type;
  uint64_t value;
  pad_value(n, ot->dt, &t[2], &value);
  int64_t xs[MAX_RANK], c[MAX_RANK], cnt = type_numel(ot);
  type_strides(xt, xs);
  for (int64_t i = 0; i < cnt; i++) {
    unravel(ot, i, c);
    int64_t src = 0;
    for (int k = 0; k < ot->rank && src >= 0; k++) {
      int64_t s = pad_src(p.mode, c[k] - p.begin[k], p.lo[k], p.hi[k]);
      src = s < 0 ? -1 : src + s * xs[k];
    }
    if (src < 0)
      copy_el(ot->dt, out[0].data, i, &value, 0);
    else
      copy_el(ot->dt, out[0].data, i, in[0].data, src);
  }
  return true;
}

/* Constant mode: fill y with the value, then copy x into the box it covers
 * (only the part that survives negative pads). */
static void emit_pad_constant(Emit *e, const Node *n, const PadPlan *p) {
  Graph *g = e->g;
  const Type *xt = &gval(g, n->in[0])->type;
  Value *cv = node_in(g, n, 2);
  DType dt = p->out.dt;
  const char *v;
  if (cv && !cv->data) {
    v = arena_printf(g->arena, "%s[0]", emit_ref(e, n->in[2]));
  } else {
    uint64_t buf;
    Tensor t = cv ? (Tensor){cv->type, cv->data} : (Tensor){{0}, NULL};
    pad_value(n, dt, &t, &buf);
    v = emit_literal(e, dt, &buf, 0);
  }
  emit_line(e, "const %s value = %s;", dt_ctype(dt), v);
  emit_line(e, "for (int i = 0; i < %lld; i++)", (long long)type_numel(&p->out));
  emit_line(e, "  %s[i] = value;", emit_ref(e, n->out[0]));
  Nest s = {.rank = xt->rank};
  int64_t xs[MAX_RANK];
  type_strides(xt, xs);
  type_strides(&p->out, s.os);
  for (int d = 0; d < xt->rank; d++) {
    int64_t lo = p->lo[d], hi = p->hi[d];
    if (hi <= lo)
      return; /* x is cropped away entirely */
    s.dims[d] = hi - lo;
    s.is[d] = xs[d];
    s.ibase += lo * xs[d];
    s.obase += (lo + p->begin[d]) * s.os[d];
  }
  emit_line(e, "/* x into y, offset by the begin pads */");
  emit_nest(e, s, n->in[0], n->out[0]);
}

bool pad_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Type *xt = &gval(g, n->in[0])->type;
  Tensor t[4] = {{{0}, NULL}};
  node_tensors(g, n, t, n->nin < 4 ? n->nin : 4);
  PadPlan p;
  char err[256];
  if (!pad_plan(n, xt, t, &p, err, sizeof err))
    return false;
  if (type_numel(&p.out) == 0) {
    emit_line(e, "/* empty output: nothing to write */");
    return true;
  }
  if (p.mode == PAD_CONSTANT) {
    emit_pad_constant(e, n, &p);
    return true;
  }
  /* edge / reflect / wrap: each padded axis gets a table of source offsets in x */
  Nest s = {.rank = xt->rank};
  int64_t xs[MAX_RANK];
  type_strides(xt, xs);
  type_strides(&p.out, s.os);
  for (int d = 0; d < xt->rank; d++) {
    s.dims[d] = p.out.dims[d];
    s.is[d] = xs[d];
    if (p.begin[d] == 0 && p.out.dims[d] == xt->dims[d])
      continue;
    s.tab[d] = arena_alloc(g->arena, sizeof(int64_t) * (size_t)p.out.dims[d]);
    for (int64_t i = 0; i < p.out.dims[d]; i++)
      s.tab[d][i] = pad_src(p.mode, i - p.begin[d], p.lo[d], p.hi[d]) * xs[d];
  }
  emit_line(e, "/* %s padding: y[i] = x[src(i)] per axis; src* are offsets into x */",
            p.mode == PAD_EDGE ? "edge" : p.mode == PAD_WRAP ? "wrap" : "reflect");
  emit_nest(e, s, n->in[0], n->out[0]);
  return true;
}

/* ---- Trilu ---------------------------------------------------------------- */

/* Keep element (i, j) of each matrix when j - i >= k (upper) or <= k
 * (lower). k is clamped into [-rows, cols], which keeps every decision and
 * keeps the literal small. */
static int64_t trilu_k(const Node *n, const Tensor *k, const Type *x) {
  int64_t v = k && k->data ? el_get_i(k->type.dt, k->data, 0) : 0;
  int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
  (void)n;
  return clamp64(v, -rows, cols);
}

bool trilu_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  if (x->type.rank < 2)
    return diag_node(d, g, n, "input '%s' has rank %d; expected rank >= 2", x->name, x->type.rank);
  int64_t upper = attr_int(n, "upper", 1);
  if (upper != 0 && upper != 1)
    return diag_node(d, g, n, "upper is %lld; expected 0 or 1", (long long)upper);
  if (node_has_in(n, 1)) {
    int64_t *k;
    int len;
    if (!const_input_ints(g, n, 1, "k", &k, &len, d))
      return false;
    if (len != 1)
      return diag_node(d, g, n, "k has %d elements; expected a scalar", len);
  }
  node_out(g, n, 0)->type = x->type;
  return true;
}

bool trilu_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  const Type *t = &out[0].type;
  int64_t k = trilu_k(n, n->nin > 1 ? &in[1] : NULL, t);
  int64_t rows = t->dims[t->rank - 2], cols = t->dims[t->rank - 1], cnt = type_numel(t);
  bool upper = attr_int(n, "upper", 1);
  for (int64_t i = 0; i < cnt; i++) {
    int64_t r = i / cols % rows, c = i % cols;
    if (upper ? c - r >= k : c - r <= k)
      copy_el(t->dt, out[0].data, i, in[0].data, i);
  }
  return true;
}

bool trilu_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Type *t = &gval(g, n->out[0])->type;
  Tensor kt = {{0}, NULL};
  if (node_has_in(n, 1))
    kt = (Tensor){gval(g, n->in[1])->type, gval(g, n->in[1])->data};
  int64_t k = trilu_k(n, &kt, t);
  int64_t rows = t->dims[t->rank - 2], cols = t->dims[t->rank - 1], cnt = type_numel(t);
  bool upper = attr_int(n, "upper", 1);
  if (cnt == 0) {
    emit_line(e, "/* empty output: nothing to compute */");
    return true;
  }
  const char *x = emit_ref(e, n->in[0]), *y = emit_ref(e, n->out[0]);
  emit_line(e, "/* keep the %s triangle: element (i, j) of each %lldx%lld matrix where j - i %s %lld */",
            upper ? "upper" : "lower", (long long)rows, (long long)cols, upper ? ">=" : "<=",
            (long long)k);
  int64_t batch = cnt / (rows * cols);
  if (batch > 1) {
    emit_line(e, "for (int b = 0; b < %lld; b++) {", (long long)batch);
    e->indent++;
  }
  emit_line(e, "for (int i = 0; i < %lld; i++) {", (long long)rows);
  emit_line(e, "  for (int j = 0; j < %lld; j++) {", (long long)cols);
  if (batch > 1)
    emit_line(e, "    int at = b * %lld + i * %lld + j;", (long long)(rows * cols), (long long)cols);
  else
    emit_line(e, "    int at = i * %lld + j;", (long long)cols);
  emit_line(e, "    %s[at] = j - i %s %lld ? %s[at] : 0;", y, upper ? ">=" : "<=", (long long)k, x);
  emit_line(e, "  }");
  emit_line(e, "}");
  if (batch > 1) {
    e->indent--;
    emit_line(e, "}");
  }
  return true;
}
