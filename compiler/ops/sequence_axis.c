/* sequence_axis.c — copies along a sequence axis driven by per-batch
 * run-time integers: ReverseSequence (opset 10: reverse the first
 * sequence_lens[b] steps of each batch entry) and TensorScatter (opset 24:
 * write an update into a cache at write_indices[b], linearly or
 * circularly, the in-place KV-cache write of ONNX 1.20's attention).
 *
 * The integers are data, not shapes, so they may be computed at run time;
 * the C checks them where it uses them, never trusting a length or index
 * to stay in bounds: a sequence length is clamped to [0, steps], and a
 * linear write that would land outside the cache is skipped (ONNX leaves
 * both undefined). _eval does the same. Elements move as bytes, so every
 * dtype, f16 and bf16 included, is served. */
#include <stdio.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

/* ---- ReverseSequence --------------------------------------------------------- */

/* [batch, time] or [time, batch] leading dims, then `inner` elements. */
typedef struct RevGeom {
  int64_t batch, steps, inner;
  bool batch_first;
} RevGeom;

static RevGeom rev_geom(const Node *n, const Type *x) {
  RevGeom q = {.batch_first = attr_int(n, "batch_axis", 1) == 0, .inner = 1};
  q.batch = x->dims[q.batch_first ? 0 : 1];
  q.steps = x->dims[q.batch_first ? 1 : 0];
  for (int d = 2; d < x->rank; d++)
    q.inner *= x->dims[d];
  return q;
}

bool reverse_sequence_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *lens = node_in(g, n, 1);
  int64_t ba = attr_int(n, "batch_axis", 1), ta = attr_int(n, "time_axis", 0);
  if (x->type.rank < 2)
    return diag_node(d, g, n, "input '%s' has rank %d; expected rank >= 2", x->name, x->type.rank);
  if (!((ba == 0 && ta == 1) || (ba == 1 && ta == 0)))
    return diag_node(d, g, n, "batch_axis is %lld and time_axis %lld; expected 0 and 1 or 1 and 0",
                     (long long)ba, (long long)ta);
  RevGeom q = rev_geom(n, &x->type);
  char ts[128];
  if (lens->type.dt != DT_I64 || lens->type.rank != 1 || lens->type.dims[0] != q.batch)
    return diag_node(d, g, n, "sequence_lens '%s' is %s; expected i64[%lld], one length per batch "
                     "entry", lens->name, type_str(&lens->type, ts, sizeof ts), (long long)q.batch);
  node_out(g, n, 0)->type = x->type;
  return true;
}

static int64_t clamp_len(int64_t v, int64_t hi) { return v < 0 ? 0 : v > hi ? hi : v; }

bool reverse_sequence_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  RevGeom q = rev_geom(n, &in[0].type);
  size_t blk = (size_t)q.inner * dt_size(in[0].type.dt);
  const int64_t *lens = in[1].data;
  for (int64_t b = 0; b < q.batch; b++) {
    int64_t len = clamp_len(lens[b], q.steps);
    for (int64_t t = 0; t < q.steps; t++) {
      int64_t s = t < len ? len - 1 - t : t;
      int64_t yo = q.batch_first ? b * q.steps + t : t * q.batch + b;
      int64_t xo = q.batch_first ? b * q.steps + s : s * q.batch + b;
      memcpy((char *)out[0].data + (size_t)yo * blk, (const char *)in[0].data + (size_t)xo * blk, blk);
    }
  }
  return true;
}

bool reverse_sequence_emit(Emit *e, const Node *n) {
  const Value *x = node_in(e->g, n, 0);
  RevGeom q = rev_geom(n, &x->type);
  if (type_numel(&x->type) == 0)
    return true;
  const char *X = emit_ref(e, n->in[0]), *L = emit_ref(e, n->in[1]), *Y = emit_ref(e, n->out[0]);
  const char *at = q.batch_first ? "b * %lld + %s" : "%s * %lld + b";
  char yo[64], xo[64];
  if (q.batch_first) {
    snprintf(yo, sizeof yo, at, (long long)q.steps, "t");
    snprintf(xo, sizeof xo, at, (long long)q.steps, "s");
  } else {
    snprintf(yo, sizeof yo, at, "t", (long long)q.batch);
    snprintf(xo, sizeof xo, at, "s", (long long)q.batch);
  }
  long long blk = (long long)(q.inner * (int64_t)dt_size(x->type.dt));
  emit_line(e, "/* each batch entry's first len steps reversed (len clamped to [0, %lld]) */",
            (long long)q.steps);
  emit_line(e, "for (int64_t b = 0; b < %lld; b++) {", (long long)q.batch);
  emit_line(e, "  int64_t len = %s[b] < 0 ? 0 : %s[b] > %lld ? %lld : %s[b];", L, L,
            (long long)q.steps, (long long)q.steps, L);
  emit_line(e, "  for (int64_t t = 0; t < %lld; t++) {", (long long)q.steps);
  emit_line(e, "    int64_t s = t < len ? len - 1 - t : t;");
  emit_line(e, "    memcpy(%s + (%s) * %lld, %s + (%s) * %lld, %lld);", Y, yo, (long long)q.inner, X,
            xo, (long long)q.inner, blk);
  emit_line(e, "  }");
  emit_line(e, "}");
  return true;
}

/* ---- TensorScatter ----------------------------------------------------------- */

/* The cache as [outer, slots, inner] around the axis, the update as
 * [outer, steps, inner]; the batch entry of outer index p is p / per. */
typedef struct ScatGeom {
  int64_t outer, per, slots, steps, inner;
  bool circular;
} ScatGeom;

static bool scat_geom(const Node *n, const Type *cache, const Type *upd, ScatGeom *q, char *err,
                      size_t errn) {
  int axis;
  int64_t a = attr_int(n, "axis", -2);
  const char *mode = attr_str(n, "mode", "linear");
  if (strcmp(mode, "linear") && strcmp(mode, "circular")) {
    snprintf(err, errn, "mode is '%s'; expected \"linear\" or \"circular\"", mode);
    return false;
  }
  if (!axis_norm(a, cache->rank, &axis) || axis == 0) {
    snprintf(err, errn, "axis is %lld; expected a sequence axis in [%d, %d) other than the batch "
             "axis 0", (long long)a, -cache->rank, cache->rank);
    return false;
  }
  if (upd->rank != cache->rank || upd->dt != cache->dt) {
    snprintf(err, errn, "update is %s of rank %d; expected %s of rank %d like past_cache",
             dt_name(upd->dt), upd->rank, dt_name(cache->dt), cache->rank);
    return false;
  }
  *q = (ScatGeom){.outer = 1, .per = 1, .inner = 1, .slots = cache->dims[axis],
                  .steps = upd->dims[axis], .circular = !strcmp(mode, "circular")};
  for (int d = 0; d < cache->rank; d++) {
    bool bad = d == axis ? upd->dims[d] > cache->dims[d] : upd->dims[d] != cache->dims[d];
    if (bad) {
      snprintf(err, errn, "update's dim %d is %lld and past_cache's %lld; expected %s", d,
               (long long)upd->dims[d], (long long)cache->dims[d],
               d == axis ? "at most the cache's length on the axis" : "them equal");
      return false;
    }
    if (d < axis)
      q->outer *= cache->dims[d];
    if (d > 0 && d < axis)
      q->per *= cache->dims[d];
    if (d > axis)
      q->inner *= cache->dims[d];
  }
  return true;
}

bool tensor_scatter_infer(Graph *g, Node *n, Diag *d) {
  Value *c = node_in(g, n, 0), *u = node_in(g, n, 1), *w = node_in(g, n, 2);
  ScatGeom q;
  char err[256];
  if (!scat_geom(n, &c->type, &u->type, &q, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  char ts[128];
  if (w && (w->type.dt != DT_I64 || w->type.rank != 1 || w->type.dims[0] != c->type.dims[0]))
    return diag_node(d, g, n, "write_indices '%s' is %s; expected i64[%lld], one index per batch "
                     "entry", w->name, type_str(&w->type, ts, sizeof ts), (long long)c->type.dims[0]);
  node_out(g, n, 0)->type = c->type;
  return true;
}

/* The slot step s of batch entry b goes to, or -1 when a linear write
 * falls outside the cache. */
static int64_t scat_slot(const ScatGeom *q, int64_t start, int64_t s) {
  if (q->circular) { /* start reduced first: start + s could overflow */
    int64_t r = start % q->slots;
    return (r < 0 ? r + q->slots + s : r + s) % q->slots;
  }
  return start >= -s && start <= q->slots - 1 - s ? start + s : -1;
}

bool tensor_scatter_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  ScatGeom q;
  char err[256];
  if (!scat_geom(n, &in[0].type, &in[1].type, &q, err, sizeof err))
    return diag_error(d, "node '%s' (TensorScatter): %s", n->name, err);
  size_t blk = (size_t)q.inner * dt_size(in[0].type.dt);
  memcpy(out[0].data, in[0].data, type_bytes(&in[0].type));
  const int64_t *wi = n->nin > 2 && in[2].data ? in[2].data : NULL;
  for (int64_t p = 0; p < q.outer; p++)
    for (int64_t s = 0; s < q.steps; s++) {
      int64_t slot = scat_slot(&q, wi ? wi[p / q.per] : 0, s);
      if (slot >= 0)
        memcpy((char *)out[0].data + (size_t)(p * q.slots + slot) * blk,
               (const char *)in[1].data + (size_t)(p * q.steps + s) * blk, blk);
    }
  return true;
}

bool tensor_scatter_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Value *c = node_in(g, n, 0), *u = node_in(g, n, 1);
  ScatGeom q;
  char err[256];
  if (!scat_geom(n, &c->type, &u->type, &q, err, sizeof err))
    return false;
  const char *C = emit_ref(e, n->in[0]), *U = emit_ref(e, n->in[1]);
  const char *W = node_has_in(n, 2) ? emit_ref(e, n->in[2]) : NULL;
  const char *Y = emit_ref(e, n->out[0]);
  if (strcmp(C, Y))
    emit_line(e, "memcpy(%s, %s, %zu); /* the cache, then the update over it */", Y, C,
              type_bytes(&c->type));
  if (type_numel(&u->type) == 0)
    return true;
  long long blk = (long long)(q.inner * (int64_t)dt_size(c->type.dt));
  emit_line(e, "/* %s writes of %lld steps into %lld slots per batch entry%s */",
            q.circular ? "circular" : "linear", (long long)q.steps, (long long)q.slots,
            q.circular ? "" : "; a step past the cache is skipped");
  emit_line(e, "for (int64_t p = 0; p < %lld; p++) {", (long long)q.outer);
  emit_line(e, "  int64_t start = %s;",
            W ? arena_printf(g->arena, "%s[p / %lld]", W, (long long)q.per) : "0");
  emit_line(e, "  for (int64_t s = 0; s < %lld; s++) {", (long long)q.steps);
  if (q.circular) { /* start reduced first: start + s could overflow */
    emit_line(e, "    int64_t r = start %% %lld;", (long long)q.slots);
    emit_line(e, "    int64_t slot = (r < 0 ? r + %lld + s : r + s) %% %lld;", (long long)q.slots,
              (long long)q.slots);
  } else {
    emit_line(e, "    if (start < -s || start > %lld - s)", (long long)(q.slots - 1));
    emit_line(e, "      continue;");
    emit_line(e, "    int64_t slot = start + s;");
  }
  emit_line(e, "    memcpy(%s + (p * %lld + slot) * %lld, %s + (p * %lld + s) * %lld, %lld);", Y,
            (long long)q.slots, (long long)q.inner, U, (long long)q.steps, (long long)q.inner, blk);
  emit_line(e, "  }");
  emit_line(e, "}");
  return true;
}
