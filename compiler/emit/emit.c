/* emit.c — what an op's _emit writes C with (emit.h): value references,
 * derived weight arrays, lines and templates, the threads marker, and the
 * shared elementwise-loop generator. The files themselves are emit_file.c's;
 * turning each node's code into a kernel function is emit_kernel.c's. */
#include "emit.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_api.h"
#include "emit_kernel.h"
#include "emit_text.h"
#include "cnames.h"
#include "../ir/ops.h"
#include "templates.h"

/* ---- weights: what the code calls them ------------------------------------ */

Weight emit_weight_at(const Emit *e, int k) {
  const Graph *g = e->g;
  int id = e->consts[k].id;
  if (id < 0) {
    const EmitArray *x = &e->arrays[-1 - id];
    return (Weight){x->dt, x->data, x->n, emit_cm(g->arena, x->comment), true};
  }
  const Value *v = &g->vals[id];
  char ts[160];
  if (dt_is_narrow(v->type.dt)) /* float8 codes, packed 4- and 2-bit elements: their bytes */
    return (Weight){DT_U8, v->data, (int64_t)type_bytes(&v->type),
                    arena_printf(g->arena, "%s: %s", emit_cm(g->arena, v->name), type_str(&v->type, ts, sizeof ts)),
                    false};
  return (Weight){v->type.dt, v->data, type_numel(&v->type),
                  arena_printf(g->arena, "%s: %s", emit_cm(g->arena, v->name), type_str(&v->type, ts, sizeof ts)),
                  false};
}

bool emit_weight_in_blob(const Emit *e, int k) {
  Weight w = emit_weight_at(e, k);
  return e->blob && ((size_t)w.n * dt_size(w.dt) > EMIT_BLOB_INLINE_MAX || e->consts[k].group >= 0);
}

const char *emit_weight_name(Emit *e, int k) {
  EmitConst *c = &e->consts[k];
  if (!c->name)
    c->name = cname_unique(e->names, c->id < 0 ? e->arrays[-1 - c->id].stem : e->g->vals[c->id].name, "w");
  if (c->group >= 0 && e->blob) /* a member of its layer's struct in the blob */
    return arena_printf(e->g->arena, "weights->%s[%d].%s", e->groups[c->group].name, c->rep,
                        e->groups[c->group].mem[c->mem]);
  if (emit_weight_in_blob(e, k))
    return arena_printf(e->g->arena, "weights->%s", c->name);
  return c->name;
}


/* ---- small helpers for _emit functions ------------------------------------ */

/* Weight id (EmitConst.id) joins the weights: index k in e->consts. */
static int add_const(Emit *e, int id) {
  e->consts = arena_grow(e->g->arena, e->consts, &e->capconsts, e->nconsts + 1, sizeof(EmitConst));
  e->consts[e->nconsts] = (EmitConst){id, NULL, -1, 0, 0};
  return e->nconsts++;
}

/* Constants join the weights on first use, so only weights the code reads
 * are emitted, in the order the forward pass uses them. */
const char *emit_ref(Emit *e, int vid) {
  KILN_ASSERT(vid >= 0 && vid < e->g->nvals);
  int root = emit_storage_root(e, vid);
  if (e->g->vals[root].data && e->const_of[root] < 0)
    e->const_of[root] = add_const(e, root);
  if (e->ks->node)
    return kernel_param(e, vid, -1);
  if (!e->refs[vid] && e->g->vals[root].data)
    e->refs[vid] = emit_weight_name(e, e->const_of[root]);
  KILN_ASSERT(e->refs[vid] != NULL);
  return e->refs[vid];
}

const char *emit_const_array(Emit *e, DType dt, const void *data, int64_t n, const char *stem,
                             const char *comment) {
  Arena *a = e->g->arena;
  int arr = -1;
  /* the same bytes already emitted (a weight packed alike for two nodes:
   * a decoder's prefill and step, tied weights): one array */
  size_t bytes = (size_t)n * dt_size(dt);
  for (int i = 0; i < e->narrays && arr < 0; i++)
    if (e->arrays[i].dt == dt && e->arrays[i].n == n && (e->arrays[i].data == data || !memcmp(e->arrays[i].data, data, bytes)))
      arr = i;
  if (arr >= 0) {
    if (e->ks->node)
      return kernel_param(e, -1, arr);
    return emit_weight_name(e, e->arrays[arr].k);
  }
  e->arrays = arena_grow(a, e->arrays, &e->caparrays, e->narrays + 1, sizeof(EmitArray));
  arr = e->narrays++;
  e->arrays[arr] = (EmitArray){dt, data, n, stem, comment, add_const(e, -1 - arr)};
  if (e->ks->node)
    return kernel_param(e, -1, arr);
  return emit_weight_name(e, e->arrays[arr].k);
}

void emit_line(Emit *e, const char *fmt, ...) {
  for (int i = 0; i < e->indent; i++)
    buf_puts(e->out, "  ");
  va_list ap;
  va_start(ap, fmt);
  buf_vprintf(e->out, fmt, ap);
  va_end(ap);
  buf_puts(e->out, "\n");
}

const char *emit_tmpname(Emit *e, const char *stem) {
  return arena_printf(e->g->arena, "%s_%d", stem, e->tmp++);
}

const char *emit_int(Emit *e, int64_t v) { return arena_printf(e->g->arena, "%lld", (long long)v); }

const char *emit_double_literal(Emit *e, DType dt, double v) {
  if (dt_is_half(dt)) /* a value in an expression: f16/bf16 compute in f32 */
    dt = DT_F32;
  const char *suffix = dt == DT_F32 ? "f" : "";
  if (isnan(v))
    return "NAN";
  if (isinf(v))
    return v > 0 ? "INFINITY" : "-INFINITY";
  char s[64];
  snprintf(s, sizeof s, dt == DT_F32 ? "%.9g" : "%.17g", v);
  bool has_dot = strpbrk(s, ".eE") != NULL;
  return arena_printf(e->g->arena, "%s%s%s", s, has_dot ? "" : ".0", suffix);
}

const char *emit_literal(Emit *e, DType dt, const void *data, int64_t i) {
  if (dt_is_half(dt)) /* stored as its bit pattern */
    return arena_printf(e->g->arena, "0x%04x", ((const uint16_t *)data)[i]);
  KILN_ASSERT(!dt_is_packed(dt)); /* packed constants are emitted as their bytes (emit_file.c) */
  if (dt_is_minifloat(dt)) /* float8: its code */
    return arena_printf(e->g->arena, "0x%02x", ((const uint8_t *)data)[i]);
  if (dt_is_float(dt))
    return emit_double_literal(e, dt, el_get_f(dt, data, i));
  if (dt == DT_BOOL)
    return el_get_u(dt, data, i) ? "1" : "0";
  if (dt_is_signed_int(dt)) {
    int64_t v = el_get_i(dt, data, i);
    if (v == INT64_MIN)
      return "INT64_MIN";
    return arena_printf(e->g->arena, dt == DT_I64 ? "INT64_C(%lld)" : "%lld", (long long)v);
  }
  uint64_t v = el_get_u(dt, data, i);
  return arena_printf(e->g->arena, dt == DT_U64 ? "UINT64_C(%llu)" : dt == DT_U32 ? "%lluu" : "%llu",
                      (unsigned long long)v);
}

const char *emit_mathfn(Emit *e, DType dt, const char *fn) {
  if (dt_is_half(dt))
    dt = DT_F32;
  if (dt == DT_F32 && (!strcmp(fn, "exp") || !strcmp(fn, "erf") || !strcmp(fn, "tanh")))
    return arena_printf(e->g->arena, "kiln_%sf", fn); /* kiln_rt.h: loops over them vectorise */
  return dt == DT_F32 ? arena_printf(e->g->arena, "%sf", fn) : fn;
}

/* ---- threads -------------------------------------------------------------- */

bool emit_parallel_worth(const Emit *e, int64_t iters, double serial_ns) {
  return e->threads > 1 && iters >= e->threads && serial_ns >= EMIT_PARALLEL_MIN_NS;
}

void emit_shared_array(Emit *e, const char *type, const char *name, int64_t n, const char *what) {
  if (e->threads > 1)
    emit_line(e, "KILN_SHARED(%s, %s, %lld); /* %s */", type, name, (long long)n, what);
  else
    emit_line(e, "%s %s[%lld] __attribute__((aligned(64))); /* %s */", type, name, (long long)n, what);
}

const char *emit_lead_only(const Emit *e) {
  return e->threads > 1 ? "KILN_LEAD_ONLY " : "";
}

bool emit_parallel_for(Emit *e, int64_t iters, double serial_ns) {
  if (!emit_parallel_worth(e, iters, serial_ns)) {
    /* the loop writes outputs: where it shares a kernel with a split loop
     * (a GEMM's remainder row tiles), only the lead may run it */
    if (e->threads > 1)
      emit_line(e, "KILN_LEAD_ONLY");
    return false;
  }
  emit_line(e, "KILN_PARALLEL_FOR");
  e->nparallel++;
  return true;
}

/* ---- templates ------------------------------------------------------------ */

void emit_tmpl(Emit *e, const char *name, ...) {
  const char *text = template_text(name);
  KILN_ASSERT(text != NULL);
  const char *keys[32], *vals[32];
  int nk = 0;
  va_list ap;
  va_start(ap, name);
  for (const char *k; (k = va_arg(ap, const char *)) != NULL;) {
    KILN_ASSERT(nk < 32);
    keys[nk] = k;
    vals[nk++] = va_arg(ap, const char *);
  }
  va_end(ap);
  Buf line = {0};
  bool at_start = true;
  for (const char *p = text; *p;) {
    if (at_start) {
      /* template lines that are only a comment header are dropped */
      if (!strncmp(p, "//!", 3)) {
        while (*p && *p != '\n')
          p++;
        if (*p)
          p++;
        continue;
      }
      for (int i = 0; i < e->indent; i++)
        buf_puts(&line, "  ");
      at_start = false;
    }
    if (p[0] == '$' && p[1] == '{') {
      const char *end = strchr(p, '}');
      KILN_ASSERT(end != NULL);
      int k;
      for (k = 0; k < nk; k++)
        if (strlen(keys[k]) == (size_t)(end - p - 2) && !strncmp(keys[k], p + 2, (size_t)(end - p - 2)))
          break;
      if (k == nk) {
        fprintf(stderr, "kiln: internal error: template '%s' needs ${%.*s}\n", name,
                (int)(end - p - 2), p + 2);
        KILN_ASSERT(!"template key missing");
      }
      /* a value's later lines are indented like the line it starts in */
      size_t ind = 0;
      while (ind < line.len && line.s[ind] == ' ')
        ind++;
      for (const char *v = vals[k]; *v; v++) {
        buf_put(&line, v, 1);
        if (*v == '\n') {
          buf_put(e->out, line.s, line.len);
          line.len = 0;
          for (size_t i = 0; i < ind; i++)
            buf_puts(&line, " ");
        }
      }
      p = end + 1;
      continue;
    }
    buf_put(&line, p, 1);
    if (*p == '\n') {
      /* strip trailing blanks from indentation-only lines */
      buf_put(e->out, line.s, line.len);
      line.len = 0;
      at_start = true;
    }
    p++;
  }
  if (line.len) {
    buf_put(e->out, line.s, line.len);
    buf_puts(e->out, "\n");
  }
  buf_free(&line);
}

/* ---- elementwise loops ---------------------------------------------------- */

int emit_split_blocks(const Emit *e, int r, int64_t *dims, int nk, int64_t (*st)[MAX_RANK], double serial_ns) {
  if (r != 1 || !emit_parallel_worth(e, dims[0], serial_ns))
    return r;
  /* the largest block of 16 to 1024 elements (a multiple of 16: whole
   * vectors of any width) that divides the loop and leaves each thread
   * KILN_TILES_PER_THREAD (4) of them, else at least one */
  int64_t n = dims[0], b = 0;
  for (int64_t c = 1024; c >= 16 && !b; c /= 2)
    if (n % c == 0 && n / c >= 4 * e->threads)
      b = c;
  for (int64_t c = 1024; c >= 16 && !b; c /= 2)
    if (n % c == 0 && n / c >= e->threads)
      b = c;
  if (!b)
    return r;
  dims[0] = n / b;
  dims[1] = b;
  for (int k = 0; k < nk; k++) {
    st[k][1] = st[k][0];
    st[k][0] *= b;
  }
  return 2;
}

/* Estimated serial nanoseconds per element of expr (emit_parallel_for):
 * arithmetic vectorises; a call to libm (expf, erff; a cast is not a
 * call) runs scalar, a few nanoseconds each. */
static double elementwise_ns(const char *expr) {
  for (const char *p = expr; *p; p++)
    if (p[0] == '(' && p > expr && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
      return 4;
  return 0.25;
}

/* Loop nest over the output shape; each operand indexes with its own
 * broadcast strides. Adjacent dims that are contiguous for every operand
 * merge, so same-shape operands give a single flat loop. */
const char *emit_elem(Emit *e, int vid, const char *idx) {
  DType dt = e->g->vals[vid].type.dt;
  const char *ref = emit_ref(e, vid);
  Arena *a = e->g->arena;
  if (dt == DT_F4E2M1)
    return arena_printf(a, "kiln_f4e2m1_to_f32(kiln_get_u4(%s, %s))", ref, idx);
  if (dt_is_packed(dt))
    return arena_printf(a, "kiln_get_%s(%s, %s)", dt_name(dt), ref, idx);
  if (dt_is_half(dt) || dt_is_minifloat(dt)) /* read as floats */
    return arena_printf(a, "kiln_%s_to_f32(%s[%s])", dt_name(dt), ref, idx);
  return arena_printf(a, "%s[%s]", ref, idx);
}

void emit_elem_store(Emit *e, int out, const char *idx, const char *x, bool wide, const EmitStore *st) {
  static const EmitStore dflt = {true, MF_UP};
  st = st ? st : &dflt;
  DType dt = e->g->vals[out].type.dt;
  const char *ref = emit_ref(e, out);
  /* one rounding from double: through float "to odd" */
  const char *f = wide ? arena_printf(e->g->arena, "kiln_f64_to_f32_odd((double)(%s))", x)
                       : arena_printf(e->g->arena, "(float)(%s)", x);
  if (dt == DT_F8E8M0)
    emit_line(e, "%s[%s] = kiln_f32_to_f8e8m0(%s, %d, %d);", ref, idx, f, st->saturate, st->round_mode);
  else if (dt == DT_F4E2M1)
    emit_line(e, "kiln_set_4(%s, %s, kiln_f32_to_f4e2m1(%s));", ref, idx, f);
  else if (dt_is_minifloat(dt))
    emit_line(e, "%s[%s] = kiln_f32_to_%s(%s, %d);", ref, idx, dt_name(dt), f, st->saturate);
  else if (dt_is_packed(dt)) /* the low bits of the integer (a float truncates first) */
    emit_line(e, "kiln_set_%d(%s, %s, (unsigned)(int64_t)(%s));", dt_bits(dt), ref, idx, x);
  else if (dt_is_half(dt))
    emit_line(e, "%s[%s] = kiln_f32_to_%s(%s);", ref, idx, dt_name(dt), f);
  else
    emit_line(e, "%s[%s] = (%s)(%s);", ref, idx, dt_ctype(dt), x);
}

void emit_elementwise_vals(Emit *e, const int *ins, int nin, int out, const char *expr) {
  emit_elementwise_store(e, ins, nin, out, expr, NULL);
}

void emit_elementwise_store(Emit *e, const int *ins, int nin, int out, const char *expr, const EmitStore *how) {
  Graph *g = e->g;
  const Type *ot = &g->vals[out].type;
  int rank = ot->rank;
  int64_t dims[MAX_RANK], st[MAX_RANK + 1][MAX_RANK];
  for (int d = 0; d < rank; d++)
    dims[d] = ot->dims[d];
  for (int k = 0; k <= nin; k++) {
    const Type *t = k < nin ? &g->vals[ins[k]].type : ot;
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
      int td = d - (rank - t->rank);
      int64_t dim = td >= 0 ? t->dims[td] : 1;
      st[k][d] = dim == 1 ? 0 : s;
      s *= dim;
    }
  }
  /* merge dim d into d+1 where every operand is contiguous across them */
  int r = 0;
  int64_t md[MAX_RANK], ms[MAX_RANK + 1][MAX_RANK];
  for (int d = 0; d < rank; d++) {
    if (dims[d] == 1)
      continue;
    bool merge = r > 0;
    for (int k = 0; k <= nin && merge; k++)
      if (ms[k][r - 1] != st[k][d] * dims[d])
        merge = false;
    if (merge) {
      md[r - 1] *= dims[d];
      for (int k = 0; k <= nin; k++)
        ms[k][r - 1] = st[k][d];
      continue;
    }
    md[r] = dims[d];
    for (int k = 0; k <= nin; k++)
      ms[k][r] = st[k][d];
    r++;
  }
  if (type_numel(ot) == 0)
    return;
  if (!dt_is_packed(ot->dt))
    r = emit_split_blocks(e, r, md, nin + 1, ms, (double)type_numel(ot) * elementwise_ns(expr));
  const char *idx[MAX_RANK + 1] = {0};
  for (int k = 0; k <= nin; k++) {
    Buf b = {0};
    for (int d = 0; d < r; d++) {
      if (ms[k][d] == 0)
        continue;
      if (b.len)
        buf_puts(&b, " + ");
      if (ms[k][d] == 1)
        buf_printf(&b, "i%d", d);
      else
        buf_printf(&b, "i%d * %lld", d, (long long)ms[k][d]);
    }
    idx[k] = arena_strdup(g->arena, b.len ? b.s : "0");
    buf_free(&b);
  }
  if (r > 0 && !dt_is_packed(ot->dt))
    emit_parallel_for(e, md[0], (double)type_numel(ot) * elementwise_ns(expr));
  for (int d = 0; d < r; d++) {
    emit_line(e, "for (int i%d = 0; i%d < %lld; i%d++) {", d, d, (long long)md[d], d);
    e->indent++;
  }
  Buf x = {0};
  for (const char *p = expr; *p; p++) {
    if (*p == '$' && isdigit((unsigned char)p[1])) {
      int k = 0;
      while (isdigit((unsigned char)p[1]))
        k = k * 10 + (*++p - '0');
      KILN_ASSERT(k < nin);
      buf_puts(&x, emit_elem(e, ins[k], idx[k]));
    } else {
      buf_put(&x, p, 1);
    }
  }
  bool wide = false; /* an operand float cannot hold exactly: f64, 32- and 64-bit integers */
  for (int k = 0; k < nin; k++) {
    DType dt = g->vals[ins[k]].type.dt;
    wide = wide || dt == DT_F64 || (dt_is_int(dt) && dt_size(dt) >= 4);
  }
  emit_elem_store(e, out, idx[nin], x.s ? x.s : "", wide, how);
  buf_free(&x);
  for (int d = 0; d < r; d++) {
    e->indent--;
    emit_line(e, "}");
  }
}

void emit_elementwise(Emit *e, const Node *n, const char *expr) {
  emit_elementwise_vals(e, n->in, n->nin, n->out[0], expr);
}

