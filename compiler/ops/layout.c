/* layout.c — data movement: Transpose; Reshape, Flatten, Squeeze and
 * Unsqueeze (the "reshape" family: same elements, new dims); Concat, Split,
 * Expand and Tile.
 *
 * None of these computes anything: every output element is a copy of one
 * input element. So _eval copies elements as bytes (dt_size each, which
 * serves all 11 dtypes) with plain index arithmetic, and _emit describes each
 * copy as a strided loop nest (struct Copy) that one generator, emit_copy,
 * turns into C: unit dims are dropped, neighbouring dims that stay contiguous
 * on both sides merge, and the innermost contiguous run becomes one memcpy.
 * The reshape family is free after the simplify pass (the output aliases the
 * input's storage) and then emits only a comment. */
#include <limits.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

/* The largest tensor an op here may create (the importer's MAX_NUMEL). */
#define MAX_ELEMS ((int64_t)1 << 34)

/* Does t stay under MAX_ELEMS elements? (Checked without overflowing.) */
static bool size_ok(const Type *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->dims[i] < 0 || t->dims[i] > MAX_ELEMS)
      return false;
    if (t->dims[i] && n > MAX_ELEMS / t->dims[i])
      return false;
    n *= t->dims[i];
  }
  return true;
}

static bool check_size(Graph *g, Node *n, const Type *t, Diag *d) {
  char ts[160];
  if (!size_ok(t))
    return diag_node(d, g, n, "output %s is too large; expected at most %lld elements",
                     type_str(t, ts, sizeof ts), (long long)MAX_ELEMS);
  return true;
}

/* ---- shared by the _eval functions ---------------------------------------- */

/* Element i of src to element j of dst (dtype dt). */
static void copy_el(DType dt, void *dst, int64_t j, const void *src, int64_t i) {
  size_t es = dt_size(dt);
  memcpy((char *)dst + (size_t)j * es, (const char *)src + (size_t)i * es, es);
}

/* Coordinates c of flat row-major index i in a tensor of type t. */
static void unravel(const Type *t, int64_t i, int64_t c[MAX_RANK]) {
  for (int d = t->rank - 1; d >= 0; d--) {
    c[d] = i % t->dims[d];
    i /= t->dims[d];
  }
}

/* Flat index of coordinates c given strides st. */
static int64_t ravel(int rank, const int64_t c[MAX_RANK], const int64_t st[MAX_RANK]) {
  int64_t i = 0;
  for (int d = 0; d < rank; d++)
    i += c[d] * st[d];
  return i;
}

/* ---- shared by the _emit functions: strided copies -------------------------- */

#define COPY_RANK (2 * MAX_RANK)

/* dst[dst_off + sum c[k] * dst_st[k]] = src[src_off + sum c[k] * src_st[k]]
 * for every c in dims (element strides; a source stride of 0 repeats). */
typedef struct Copy {
  int rank;
  int64_t dims[COPY_RANK];
  int64_t dst_st[COPY_RANK], src_st[COPY_RANK];
  int64_t dst_off, src_off;
} Copy;

/* Drop unit dims; merge dim k into the one outside it where both sides step
 * contiguously from one to the other. */
static void copy_simplify(Copy *c) {
  int r = 0;
  for (int k = 0; k < c->rank; k++) {
    int64_t n = c->dims[k], ds = c->dst_st[k], ss = c->src_st[k];
    if (n == 1)
      continue;
    if (r > 0 && c->dst_st[r - 1] == ds * n && c->src_st[r - 1] == ss * n) {
      c->dims[r - 1] *= n;
      c->dst_st[r - 1] = ds;
      c->src_st[r - 1] = ss;
      continue;
    }
    c->dims[r] = n;
    c->dst_st[r] = ds;
    c->src_st[r] = ss;
    r++;
  }
  c->rank = r;
}

/* "i0 * s0 + i1 * s1 + off" over the first `rank` loop counters ("0" if
 * nothing). */
static const char *index_expr(Emit *e, int64_t off, const int64_t *st, int rank) {
  Buf b = {0};
  for (int k = 0; k < rank; k++) {
    if (st[k] == 0)
      continue;
    buf_puts(&b, b.len ? " + " : "");
    if (st[k] == 1)
      buf_printf(&b, "i%d", k);
    else
      buf_printf(&b, "i%d * %lld", k, (long long)st[k]);
  }
  if (off)
    buf_printf(&b, "%s%lld", b.len ? " + " : "", (long long)off);
  const char *r = arena_strdup(e->g->arena, b.len ? b.s : "0");
  buf_free(&b);
  return r;
}

/* "p" or "p + idx" */
static const char *ptr_expr(Emit *e, const char *p, const char *idx) {
  return strcmp(idx, "0") ? arena_printf(e->g->arena, "%s + %s", p, idx) : p;
}

#define COPY_TILE 16 /* the tile of a transposing copy */

/* Write the loop nest for c from value src into value dst. */
static void emit_copy(Emit *e, int dst, int src, Copy c) {
  for (int k = 0; k < c.rank; k++)
    if (c.dims[k] == 0)
      return;
  copy_simplify(&c);
  int64_t big = type_numel(&gval(e->g, dst)->type);
  if (type_numel(&gval(e->g, src)->type) > big)
    big = type_numel(&gval(e->g, src)->type);
  const char *ity = big > INT_MAX ? "int64_t" : "int";
  const char *ct = dt_ctype(gval(e->g, dst)->type.dt);
  /* the innermost dim is one memcpy when it is contiguous on both sides */
  bool run = c.rank > 0 && c.dst_st[c.rank - 1] == 1 && c.src_st[c.rank - 1] == 1;
  int loops = run ? c.rank - 1 : c.rank;
  /* a transpose of the last two dims (dst contiguous along the last, src
   * along the one before): walked in COPY_TILE x COPY_TILE tiles, so that
   * both sides touch few cache lines at a time (a conv_gemm result going
   * back to channels-first is [P, M] -> [M, P]) */
  int r = c.rank, tiled = !run && r >= 2 && c.src_st[r - 2] == 1 && c.dst_st[r - 1] == 1 &&
                          c.dims[r - 2] > COPY_TILE && c.dims[r - 1] > COPY_TILE;
  /* the same transpose to a last dim of at most 4 (an image's channels last:
   * [3, P] -> [P, 3]): the loop over that dim outside the one along which
   * src is contiguous, so the reads run in order (PP-OCRv6's input, 15360
   * x 3: 2x faster with AVX-512) */
  int swap = !run && !tiled && r >= 2 && c.src_st[r - 2] == 1 && c.dst_st[r - 1] == 1 &&
             c.dims[r - 1] <= 4;
  for (int kl = 0; kl < loops; kl++) {
    int k = swap && kl >= r - 2 ? 2 * r - 3 - kl : kl;
    if (tiled && k == r - 2) {
      for (int t = r - 2; t < r; t++) {
        emit_line(e, "for (%s i%db = 0; i%db < %lld; i%db += %d) {", ity, t, t, (long long)c.dims[t], t, COPY_TILE);
        e->indent++;
      }
      for (int t = r - 2; t < r; t++)
        emit_line(e, "const %s i%de = i%db + %d < %lld ? i%db + %d : %lld;", ity, t, t, COPY_TILE,
                  (long long)c.dims[t], t, COPY_TILE, (long long)c.dims[t]);
      loops += 2;
      for (int t = r - 2; t < r; t++) {
        emit_line(e, "for (%s i%d = i%db; i%d < i%de; i%d++) {", ity, t, t, t, t, t);
        e->indent++;
      }
      break;
    }
    emit_line(e, "for (%s i%d = 0; i%d < %lld; i%d++) {", ity, k, k, (long long)c.dims[k], k);
    e->indent++;
  }
  int inner = tiled ? r : loops; /* the counters the index uses */
  const char *di = index_expr(e, c.dst_off, c.dst_st, inner);
  const char *si = index_expr(e, c.src_off, c.src_st, inner);
  if (run)
    emit_line(e, "memcpy(%s, %s, %lld * sizeof(%s));", ptr_expr(e, emit_ref(e, dst), di),
              ptr_expr(e, emit_ref(e, src), si), (long long)c.dims[c.rank - 1], ct);
  else
    emit_line(e, "%s[%s] = %s[%s];", emit_ref(e, dst), di, emit_ref(e, src), si);
  for (int k = 0; k < loops; k++) {
    e->indent--;
    emit_line(e, "}");
  }
}

/* A copy over t's dims, both sides dense row-major of type t. */
static Copy copy_dense(const Type *t) {
  Copy c = {.rank = t->rank};
  type_strides(t, c.dst_st);
  type_strides(t, c.src_st);
  for (int k = 0; k < t->rank; k++)
    c.dims[k] = t->dims[k];
  return c;
}

/* ---- Transpose -------------------------------------------------------------- */

/* The perm attribute (default: reversed dims) into perm; false if it is not
 * a permutation of 0..rank-1. */
static bool get_perm(const Node *n, int rank, int perm[MAX_RANK]) {
  const Attr *a = attr_get(n, "perm");
  if (!a) {
    for (int d = 0; d < rank; d++)
      perm[d] = rank - 1 - d;
    return true;
  }
  if (a->kind != ATTR_INTS || a->n != rank)
    return false;
  bool seen[MAX_RANK] = {0};
  for (int d = 0; d < rank; d++) {
    if (a->ints[d] < 0 || a->ints[d] >= rank || seen[a->ints[d]])
      return false;
    perm[d] = (int)a->ints[d];
    seen[perm[d]] = true;
  }
  return true;
}

bool transpose_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *y = node_out(g, n, 0);
  int perm[MAX_RANK];
  if (!get_perm(n, x->type.rank, perm))
    return diag_node(d, g, n, "perm is not a permutation of the %d dims of input '%s'; expected "
                     "each of 0..%d exactly once", x->type.rank, x->name, x->type.rank - 1);
  Type t = x->type;
  for (int k = 0; k < t.rank; k++)
    t.dims[k] = x->type.dims[perm[k]];
  y->type = t;
  return true;
}

bool transpose_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Type *it = &in[0].type, *ot = &out[0].type;
  int perm[MAX_RANK];
  if (!get_perm(n, it->rank, perm))
    return diag_error(d, "Transpose: bad perm; expected a permutation");
  int64_t ist[MAX_RANK], pst[MAX_RANK], c[MAX_RANK];
  type_strides(it, ist);
  for (int k = 0; k < ot->rank; k++)
    pst[k] = ist[perm[k]];
  int64_t cnt = type_numel(ot);
  for (int64_t i = 0; i < cnt; i++) {
    unravel(ot, i, c);
    copy_el(ot->dt, out[0].data, i, in[0].data, ravel(ot->rank, c, pst));
  }
  return true;
}

bool transpose_emit(Emit *e, const Node *n) {
  const Type *it = &gval(e->g, n->in[0])->type, *ot = &gval(e->g, n->out[0])->type;
  int perm[MAX_RANK];
  if (!get_perm(n, it->rank, perm))
    return false;
  Copy c = copy_dense(ot);
  int64_t ist[MAX_RANK];
  type_strides(it, ist);
  for (int k = 0; k < ot->rank; k++)
    c.src_st[k] = ist[perm[k]];
  emit_copy(e, n->out[0], n->in[0], c);
  return true;
}

/* ---- Reshape, Flatten, Squeeze, Unsqueeze ------------------------------------ */

/* The list of ints that opset < `since` gives as attribute `name` and later
 * opsets as input 1. *len = -1 when neither is present. */
static bool ints_attr_or_input(Graph *g, Node *n, int since, const char *name, int64_t **vals,
                               int *len, Diag *d) {
  *len = -1;
  if (n->opset >= since || node_has_in(n, 1)) {
    if (!node_has_in(n, 1))
      return true;
    return const_input_ints(g, n, 1, name, vals, len, d);
  }
  const Attr *a = attr_get(n, name);
  if (a && a->kind != ATTR_INTS)
    return diag_node(d, g, n, "attribute '%s' is not a list of ints; expected ints", name);
  if (a) {
    *vals = a->ints;
    *len = a->n;
  }
  return true;
}

/* Reshape: 0 copies the input dim (unless allowzero), one -1 is inferred. */
static bool reshape_shape(Graph *g, Node *n, const Type *it, Type *t, Diag *d) {
  int64_t *s;
  int len;
  if (!ints_attr_or_input(g, n, 5, "shape", &s, &len, d))
    return false;
  if (len < 0)
    return diag_node(d, g, n, "no target shape; expected the 'shape' %s",
                     n->opset >= 5 ? "input" : "attribute");
  if (len > MAX_RANK)
    return diag_node(d, g, n, "target shape has %d dims; expected at most %d", len, MAX_RANK);
  bool allowzero = attr_int(n, "allowzero", 0) != 0;
  int infer_at = -1;
  int64_t known = 1;
  t->rank = len;
  for (int k = 0; k < len; k++) {
    int64_t v = s[k];
    if (v == 0 && !allowzero) {
      if (k >= it->rank)
        return diag_node(d, g, n, "shape[%d] is 0 (copy the input dim) but the input has rank "
                         "%d; expected 0 only where the input has that dim", k, it->rank);
      v = it->dims[k];
    } else if (v == -1) {
      if (infer_at >= 0)
        return diag_node(d, g, n, "shape has more than one -1; expected at most one dim to infer");
      infer_at = k;
      continue;
    } else if (v < 0) {
      return diag_node(d, g, n, "shape[%d] is %lld; expected a size >= 0, 0 or -1", k, (long long)v);
    }
    if (v > MAX_ELEMS || (v && known > MAX_ELEMS / v))
      return diag_node(d, g, n, "target shape is too large; expected at most %lld elements",
                       (long long)MAX_ELEMS);
    t->dims[k] = v;
    known *= v;
  }
  int64_t total = type_numel(it);
  if (infer_at >= 0) {
    if (known == 0 || total % known)
      return diag_node(d, g, n, "cannot infer the -1 dim: %lld elements do not divide into the "
                       "other dims (product %lld); expected a whole multiple", (long long)total,
                       (long long)known);
    t->dims[infer_at] = total / known;
    known = total;
  }
  if (known != total) {
    char a[160], b[160];
    return diag_node(d, g, n, "cannot reshape %s (%lld elements) to %s (%lld elements); expected "
                     "the same number of elements", type_str(it, a, sizeof a), (long long)total,
                     type_str(t, b, sizeof b), (long long)known);
  }
  return true;
}

static bool flatten_shape(Graph *g, Node *n, const Type *it, Type *t, Diag *d) {
  int64_t axis = attr_int(n, "axis", 1);
  if (axis < -it->rank || axis > it->rank)
    return diag_node(d, g, n, "axis %lld is out of range for rank %d; expected %d..%d",
                     (long long)axis, it->rank, -it->rank, it->rank);
  if (axis < 0)
    axis += it->rank;
  t->rank = 2;
  t->dims[0] = t->dims[1] = 1;
  for (int k = 0; k < it->rank; k++)
    t->dims[k < axis ? 0 : 1] *= it->dims[k];
  return true;
}

static bool squeeze_shape(Graph *g, Node *n, const Type *it, Type *t, Diag *d) {
  int64_t *axes;
  int len;
  if (!ints_attr_or_input(g, n, 13, "axes", &axes, &len, d))
    return false;
  bool drop[MAX_RANK] = {0};
  for (int k = 0; k < it->rank; k++)
    drop[k] = len < 0 && it->dims[k] == 1;
  for (int k = 0; k < len; k++) {
    int a;
    if (!axis_norm(axes[k], it->rank, &a))
      return diag_node(d, g, n, "axes[%d] = %lld is out of range for rank %d; expected %d..%d", k,
                       (long long)axes[k], it->rank, -it->rank, it->rank - 1);
    if (drop[a])
      return diag_node(d, g, n, "axis %d is listed twice; expected distinct axes", a);
    if (it->dims[a] != 1)
      return diag_node(d, g, n, "cannot squeeze axis %d of size %lld; expected size 1", a,
                       (long long)it->dims[a]);
    drop[a] = true;
  }
  t->rank = 0;
  for (int k = 0; k < it->rank; k++)
    if (!drop[k])
      t->dims[t->rank++] = it->dims[k];
  return true;
}

/* Unsqueeze: the axes index the output. */
static bool unsqueeze_shape(Graph *g, Node *n, const Type *it, Type *t, Diag *d) {
  int64_t *axes;
  int len;
  if (!ints_attr_or_input(g, n, 13, "axes", &axes, &len, d))
    return false;
  if (len < 0)
    return diag_node(d, g, n, "no axes; expected the 'axes' %s", n->opset >= 13 ? "input" : "attribute");
  int r = it->rank + len;
  if (r > MAX_RANK)
    return diag_node(d, g, n, "output rank would be %d; expected at most %d", r, MAX_RANK);
  bool ins[MAX_RANK] = {0};
  for (int k = 0; k < len; k++) {
    int a;
    if (!axis_norm(axes[k], r, &a))
      return diag_node(d, g, n, "axes[%d] = %lld is out of range for output rank %d; expected "
                       "%d..%d", k, (long long)axes[k], r, -r, r - 1);
    if (ins[a])
      return diag_node(d, g, n, "axis %d is listed twice; expected distinct axes", a);
    ins[a] = true;
  }
  t->rank = r;
  for (int k = 0, j = 0; k < r; k++)
    t->dims[k] = ins[k] ? 1 : it->dims[j++];
  return true;
}

bool reshape_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *y = node_out(g, n, 0);
  Type t = {.dt = x->type.dt};
  bool ok;
  switch (n->op) {
  case OP_RESHAPE: ok = reshape_shape(g, n, &x->type, &t, d); break;
  case OP_FLATTEN: ok = flatten_shape(g, n, &x->type, &t, d); break;
  case OP_SQUEEZE: ok = squeeze_shape(g, n, &x->type, &t, d); break;
  case OP_UNSQUEEZE: ok = unsqueeze_shape(g, n, &x->type, &t, d); break;
  default: KILN_ASSERT(!"reshape family op"); return false;
  }
  if (!ok)
    return false;
  y->type = t;
  return true;
}

bool reshape_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)n, (void)d;
  size_t bytes = type_bytes(&out[0].type);
  if (bytes)
    memcpy(out[0].data, in[0].data, bytes);
  return true;
}

bool reshape_emit(Emit *e, const Node *n) {
  if (gval(e->g, n->out[0])->alias_of >= 0) {
    emit_line(e, "/* no copy: the output shares the input's storage */");
    return true;
  }
  const Type *ot = &gval(e->g, n->out[0])->type;
  if (dt_is_packed(ot->dt)) { /* 4- and 2-bit elements: the same bytes */
    if (type_bytes(ot))
      emit_line(e, "memcpy(%s, %s, %zu);", emit_ref(e, n->out[0]), emit_ref(e, n->in[0]), type_bytes(ot));
    return true;
  }
  Copy c = {.rank = 1, .dims = {type_numel(ot)}, .dst_st = {1}, .src_st = {1}};
  emit_copy(e, n->out[0], n->in[0], c);
  return true;
}

/* ---- Concat ------------------------------------------------------------------ */

/* Concat's axis (absent before opset 4 means 1), normalised for rank. */
static bool concat_axis(const Node *n, int rank, int *axis) {
  const Attr *a = attr_get(n, "axis");
  if (!a && n->opset >= 4)
    return false;
  return axis_norm(a ? a->i : 1, rank, axis);
}

bool concat_infer(Graph *g, Node *n, Diag *d) {
  Value *x0 = node_in(g, n, 0), *y = node_out(g, n, 0);
  if (!x0)
    return diag_node(d, g, n, "input 0 is missing; expected a tensor");
  int r = x0->type.rank, axis;
  if (r < 1)
    return diag_node(d, g, n, "input '%s' is a scalar; expected rank >= 1", x0->name);
  if (!attr_get(n, "axis") && n->opset >= 4)
    return diag_node(d, g, n, "no axis attribute; expected one (required since opset 4)");
  if (!concat_axis(n, r, &axis))
    return diag_node(d, g, n, "axis %lld is out of range for rank %d; expected %d..%d",
                     (long long)attr_int(n, "axis", 1), r, -r, r - 1);
  Type t = x0->type;
  t.dims[axis] = 0;
  for (int i = 0; i < n->nin; i++) {
    Value *x = node_in(g, n, i);
    char a[160], b[160];
    if (!x)
      return diag_node(d, g, n, "input %d is missing; expected a tensor", i);
    if (x->type.dt != x0->type.dt)
      return diag_node(d, g, n, "input '%s' is %s but '%s' is %s; expected the same type", x->name,
                       dt_name(x->type.dt), x0->name, dt_name(x0->type.dt));
    bool same = x->type.rank == r;
    for (int k = 0; k < r && same; k++)
      same = k == axis || x->type.dims[k] == x0->type.dims[k];
    if (!same)
      return diag_node(d, g, n, "input '%s' is %s but '%s' is %s; expected equal dims except on "
                       "axis %d", x->name, type_str(&x->type, a, sizeof a), x0->name,
                       type_str(&x0->type, b, sizeof b), axis);
    t.dims[axis] += x->type.dims[axis];
  }
  if (!check_size(g, n, &t, d))
    return false;
  y->type = t;
  return true;
}

bool concat_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Type *ot = &out[0].type;
  int axis;
  if (!concat_axis(n, ot->rank, &axis))
    return diag_error(d, "Concat: bad axis; expected one in range");
  int64_t c[MAX_RANK], st[MAX_RANK], cnt = type_numel(ot);
  for (int64_t i = 0; i < cnt; i++) {
    unravel(ot, i, c);
    int k = 0;
    while (c[axis] >= in[k].type.dims[axis])
      c[axis] -= in[k++].type.dims[axis];
    type_strides(&in[k].type, st);
    copy_el(ot->dt, out[0].data, i, in[k].data, ravel(ot->rank, c, st));
  }
  return true;
}

bool concat_emit(Emit *e, const Node *n) {
  const Type *ot = &gval(e->g, n->out[0])->type;
  int axis;
  if (!concat_axis(n, ot->rank, &axis))
    return false;
  int64_t ost[MAX_RANK], at = 0;
  type_strides(ot, ost);
  for (int i = 0; i < n->nin; i++) {
    const Type *it = &gval(e->g, n->in[i])->type;
    Copy c = copy_dense(it);
    for (int k = 0; k < it->rank; k++)
      c.dst_st[k] = ost[k];
    c.dst_off = at * ost[axis];
    emit_copy(e, n->out[0], n->in[i], c);
    at += it->dims[axis];
  }
  return true;
}

/* ---- Split ------------------------------------------------------------------- */

/* Sizes of the parts: from the 'split' input (opset 13+, and opset 1's
 * optional input) or attribute, else equal parts (opset 18: the last part
 * may be smaller, and num_outputs, when given, must be the output count). */
static bool split_sizes(Graph *g, Node *n, int64_t dim, int64_t *sizes, Diag *d) {
  int64_t *s;
  int len;
  if (!ints_attr_or_input(g, n, 13, "split", &s, &len, d))
    return false;
  const Attr *num = attr_get(n, "num_outputs");
  if (num && (n->opset < 18 || len >= 0 || num->i != n->nout))
    return diag_node(d, g, n, "num_outputs is %lld with %d outputs%s at opset %d; expected it only from "
                     "opset 18, without a 'split' input, equal to the number of outputs", (long long)num->i,
                     n->nout, len >= 0 ? " and a 'split' input" : "", n->opset);
  if (len < 0) {
    int64_t part = n->nout ? (dim + n->nout - 1) / n->nout : 0;
    if (dim % n->nout && (n->opset < 18 || part * (n->nout - 1) > dim))
      return diag_node(d, g, n, "cannot split a dim of %lld into %d equal parts; expected a "
                       "'split' list or a multiple of %d", (long long)dim, n->nout, n->nout);
    for (int j = 0; j < n->nout; j++)
      sizes[j] = j < n->nout - 1 ? part : dim - part * (n->nout - 1);
    return true;
  }
  if (len != n->nout)
    return diag_node(d, g, n, "split has %d sizes for %d outputs; expected one size per output",
                     len, n->nout);
  int64_t sum = 0;
  for (int j = 0; j < len; j++) {
    if (s[j] < 0 || s[j] > dim)
      return diag_node(d, g, n, "split[%d] is %lld; expected a size in 0..%lld", j,
                       (long long)s[j], (long long)dim);
    sizes[j] = s[j];
    sum += s[j];
  }
  if (sum != dim)
    return diag_node(d, g, n, "split sizes add up to %lld; expected the axis size %lld",
                     (long long)sum, (long long)dim);
  return true;
}

bool split_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  int r = x->type.rank, axis;
  if (!axis_norm(attr_int(n, "axis", 0), r, &axis))
    return diag_node(d, g, n, "axis %lld is out of range for rank %d; expected %d..%d",
                     (long long)attr_int(n, "axis", 0), r, -r, r - 1);
  int64_t *sizes = arena_alloc(g->arena, sizeof(int64_t) * (size_t)n->nout);
  if (!split_sizes(g, n, x->type.dims[axis], sizes, d))
    return false;
  for (int j = 0; j < n->nout; j++) {
    Value *y = node_out(g, n, j);
    if (!y)
      continue;
    y->type = x->type;
    y->type.dims[axis] = sizes[j];
  }
  return true;
}

bool split_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Type *it = &in[0].type;
  int axis;
  if (!axis_norm(attr_int(n, "axis", 0), it->rank, &axis))
    return diag_error(d, "Split: bad axis; expected one in range");
  int64_t ist[MAX_RANK], c[MAX_RANK], at = 0;
  type_strides(it, ist);
  for (int j = 0; j < n->nout; j++) {
    const Type *ot = &out[j].type;
    int64_t cnt = type_numel(ot);
    for (int64_t i = 0; i < cnt; i++) {
      unravel(ot, i, c);
      c[axis] += at;
      copy_el(it->dt, out[j].data, i, in[0].data, ravel(it->rank, c, ist));
    }
    at += ot->dims[axis];
  }
  return true;
}

bool split_emit(Emit *e, const Node *n) {
  const Type *it = &gval(e->g, n->in[0])->type;
  int axis;
  if (!axis_norm(attr_int(n, "axis", 0), it->rank, &axis))
    return false;
  int64_t ist[MAX_RANK], at = 0;
  type_strides(it, ist);
  for (int j = 0; j < n->nout; j++) {
    const Type *ot = &gval(e->g, n->out[j])->type;
    Copy c = copy_dense(ot);
    for (int k = 0; k < ot->rank; k++)
      c.src_st[k] = ist[k];
    c.src_off = at * ist[axis];
    emit_copy(e, n->out[j], n->in[0], c);
    at += ot->dims[axis];
  }
  return true;
}

/* ---- Expand -------------------------------------------------------------------- */

bool expand_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *y = node_out(g, n, 0);
  int64_t *s;
  int len;
  if (!const_input_ints(g, n, 1, "shape", &s, &len, d))
    return false;
  if (len > MAX_RANK)
    return diag_node(d, g, n, "shape has %d dims; expected at most %d", len, MAX_RANK);
  Type st = {.dt = x->type.dt, .rank = len}, t;
  for (int k = 0; k < len; k++) {
    if (s[k] < 0)
      return diag_node(d, g, n, "shape[%d] is %lld; expected a size >= 0", k, (long long)s[k]);
    st.dims[k] = s[k];
  }
  if (!shape_broadcast(&x->type, &st, &t)) {
    char a[160], b[160];
    return diag_node(d, g, n, "input %s does not broadcast to shape %s; expected equal dims or 1",
                     type_str(&x->type, a, sizeof a), type_str(&st, b, sizeof b));
  }
  if (!check_size(g, n, &t, d))
    return false;
  y->type = t;
  return true;
}

bool expand_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)n, (void)d;
  const Type *ot = &out[0].type;
  int64_t cnt = type_numel(ot);
  for (int64_t i = 0; i < cnt; i++)
    copy_el(ot->dt, out[0].data, i, in[0].data, bcast_src(ot, &in[0].type, i));
  return true;
}

bool expand_emit(Emit *e, const Node *n) {
  const Type *it = &gval(e->g, n->in[0])->type, *ot = &gval(e->g, n->out[0])->type;
  Copy c = copy_dense(ot);
  int64_t ist[MAX_RANK];
  type_strides(it, ist);
  for (int k = 0; k < ot->rank; k++) {
    int ik = k - (ot->rank - it->rank);
    c.src_st[k] = ik < 0 || it->dims[ik] == 1 ? 0 : ist[ik];
  }
  emit_copy(e, n->out[0], n->in[0], c);
  return true;
}

/* ---- Tile ---------------------------------------------------------------------- */

bool tile_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *y = node_out(g, n, 0);
  int64_t *rep;
  int len;
  if (!const_input_ints(g, n, 1, "repeats", &rep, &len, d))
    return false;
  if (len != x->type.rank)
    return diag_node(d, g, n, "repeats has %d entries for input '%s' of rank %d; expected one "
                     "per dim", len, x->name, x->type.rank);
  Type t = x->type;
  for (int k = 0; k < len; k++) {
    if (rep[k] < 0)
      return diag_node(d, g, n, "repeats[%d] is %lld; expected a count >= 0", k, (long long)rep[k]);
    if (t.dims[k] && rep[k] > MAX_ELEMS / t.dims[k])
      return diag_node(d, g, n, "repeats[%d] = %lld makes the output too large; expected at most "
                       "%lld elements", k, (long long)rep[k], (long long)MAX_ELEMS);
    t.dims[k] *= rep[k];
  }
  if (!check_size(g, n, &t, d))
    return false;
  y->type = t;
  return true;
}

bool tile_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)n, (void)d;
  const Type *it = &in[0].type, *ot = &out[0].type;
  int64_t ist[MAX_RANK], c[MAX_RANK], cnt = type_numel(ot);
  type_strides(it, ist);
  for (int64_t i = 0; i < cnt; i++) {
    unravel(ot, i, c);
    for (int k = 0; k < ot->rank; k++)
      c[k] %= it->dims[k];
    copy_el(ot->dt, out[0].data, i, in[0].data, ravel(it->rank, c, ist));
  }
  return true;
}

/* Output dim k splits into (repeat r, input position p): two copy dims. */
bool tile_emit(Emit *e, const Node *n) {
  const Type *it = &gval(e->g, n->in[0])->type, *ot = &gval(e->g, n->out[0])->type;
  if (type_numel(ot) == 0)
    return true;
  int64_t ist[MAX_RANK], ost[MAX_RANK];
  type_strides(it, ist);
  type_strides(ot, ost);
  Copy c = {.rank = 2 * ot->rank};
  for (int k = 0; k < ot->rank; k++) {
    c.dims[2 * k] = ot->dims[k] / it->dims[k];
    c.dst_st[2 * k] = it->dims[k] * ost[k];
    c.src_st[2 * k] = 0;
    c.dims[2 * k + 1] = it->dims[k];
    c.dst_st[2 * k + 1] = ost[k];
    c.src_st[2 * k + 1] = ist[k];
  }
  emit_copy(e, n->out[0], n->in[0], c);
  return true;
}
