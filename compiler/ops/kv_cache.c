/* kv_cache.c — the two ops of a decoder's key/value cache (issue 10,
 * generative decoding; the Lua frontend's decoder{} makes them, DESIGN.md
 * "Generative models" says how the entry points use them):
 *
 *   CacheWrite(Cache [C, ...], Rows [T, ...], Start i64[1], Count i64[1]) -> Cache'
 *     Cache' = Cache with rows Start .. Start+Count-1 replaced by Rows[0 .. Count-1].
 *     The cache may be f16 or bf16 with f32 rows (half the bytes a step
 *     reads back): each value is rounded to nearest, ties to even, on the
 *     way in.
 *     Cache is a state and the output is that state changed where it
 *     lives (OPF_UPDATE): the generated code writes Count rows, never a
 *     copy of the C-row cache. Count <= T and Start + Count <= C are the
 *     entry point's checks (a full cache is an error code there); the
 *     kernel clips to both anyway, so no input can make it write outside.
 *
 *   CachedAttention(Q [T, H, D], K [C, Hkv, D], V [C, Hkv, Dv], Start i64[1]
 *                   [, Count i64[1]]) {scale = 1/√D} -> Y [T, H, Dv]
 *     query t is the token at position Start + t and sees the keys at
 *     positions 0 .. Start + t (causal over the cache):
 *       Y[t, h] = softmax_j(scale · Q[t, h] · K[j, h / (H / Hkv)]) · V[j, h / (H / Hkv)]
 *     Query heads share K/V heads in groups of H / Hkv (grouped-query
 *     attention; Hkv = H is ordinary multi-head attention). Queries t >=
 *     Count (padding of a prefill chunk) give zeros and read nothing.
 *     With {window=W} (W > 0: Gemma's local layers, a sliding window)
 *     query t sees only positions Start + t - W + 1 .. Start + t: its loops
 *     start at the window's first key, so the keys before it cost nothing.
 *     Loops run to the number of keys a query sees, not to the capacity,
 *     so a step costs what the cache holds; the softmax is computed
 *     online over chunks of keys (a running max rescales what was summed),
 *     so the kernel's stack does not grow with the capacity. K and V may be
 *     f16 or bf16 caches (widened to f32 as they are read: exact; f16 by
 *     vcvtph2ps where the C is compiled for F16C or AVX-512, see below).
 *
 * _eval computes scores and softmax in double, rounding the output to f32. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

/* ---- CacheWrite ------------------------------------------------------------- */

/* An i64 tensor of one element (Start, Count). */
static bool check_index(const Graph *g, const Node *n, int slot, const char *what, Diag *d) {
  const Value *v = node_in(g, n, slot);
  char ts[128];
  if (!v || v->type.dt != DT_I64 || type_numel(&v->type) != 1)
    return diag_node(d, g, n, "%s is %s; expected i64[1]", what,
                     v ? type_str(&v->type, ts, sizeof ts) : "absent");
  return true;
}

bool cache_write_infer(Graph *g, Node *n, Diag *d) {
  Value *c = node_in(g, n, 0);
  const Value *r = node_in(g, n, 1);
  char a[128], b[128];
  if (!c || !r)
    return diag_node(d, g, n, "%s is absent; expected Cache and Rows", !c ? "Cache" : "Rows");
  if (!c->is_state)
    return diag_node(d, g, n, "Cache '%s' is not a state; expected a state (the cache lives in the "
                     "caller's state struct and is written in place)", c->name);
  bool narrow = dt_is_half(c->type.dt) && r->type.dt == DT_F32; /* an f16/bf16 cache of f32 rows */
  bool same_rows = c->type.rank >= 1 && r->type.rank == c->type.rank && (r->type.dt == c->type.dt || narrow);
  for (int i = 1; same_rows && i < c->type.rank; i++)
    same_rows = r->type.dims[i] == c->type.dims[i];
  if (!same_rows || r->type.dims[0] > c->type.dims[0])
    return diag_node(d, g, n, "Cache is %s and Rows %s; expected Rows [T, ...] of the cache's dtype (or f32 "
                     "for an f16/bf16 cache) and row shape, T <= the cache's %lld rows", type_str(&c->type, a, sizeof a),
                     type_str(&r->type, b, sizeof b), (long long)c->type.dims[0]);
  if (!check_index(g, n, 2, "Start", d) || !check_index(g, n, 3, "Count", d))
    return false;
  Value *y = node_out(g, n, 0);
  y->type = c->type;
  y->alias_of = n->in[0]; /* the state itself, changed where it lives */
  return true;
}

/* Rows [start, start + count) of the cache, clipped to Rows and the cache. */
static void write_span(int64_t start, int64_t count, int64_t t, int64_t cap, int64_t *lo, int64_t *n) {
  if (start < 0 || start > cap)
    start = cap;
  if (count > t)
    count = t;
  if (count > cap - start)
    count = cap - start;
  *lo = start;
  *n = count > 0 ? count : 0;
}

bool cache_write_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)n, (void)d;
  size_t row = type_bytes(&in[0].type) / (size_t)in[0].type.dims[0];
  int64_t lo, cnt;
  write_span(*(const int64_t *)in[2].data, *(const int64_t *)in[3].data, in[1].type.dims[0],
             in[0].type.dims[0], &lo, &cnt);
  memcpy(out[0].data, in[0].data, type_bytes(&in[0].type));
  DType cd = in[0].type.dt;
  if (cd == in[1].type.dt) {
    memcpy((char *)out[0].data + (size_t)lo * row, in[1].data, (size_t)cnt * row);
    return true;
  }
  int64_t per = type_numel(&in[0].type) / in[0].type.dims[0]; /* f32 rows into an f16/bf16 cache */
  uint16_t *c = (uint16_t *)out[0].data + lo * per;
  for (int64_t i = 0; i < cnt * per; i++)
    c[i] = half_from_double(cd, ((const float *)in[1].data)[i]);
  return true;
}

bool cache_write_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Type *ct = &node_in(g, n, 0)->type;
  int64_t cap = ct->dims[0], t = node_in(g, n, 1)->type.dims[0];
  int64_t row = type_numel(ct) / cap;
  const char *y = emit_ref(e, n->out[0]), *r = emit_ref(e, n->in[1]);
  const char *st = emit_ref(e, n->in[2]), *cn = emit_ref(e, n->in[3]);
  emit_line(e, "/* rows start .. start+count-1 of the cache [%lld, ...] <- Rows [%lld, ...] (clipped to both) */",
            (long long)cap, (long long)t);
  emit_line(e, "int64_t start = %s[0], count = %s[0];", st, cn);
  emit_line(e, "if (start < 0 || start > %lld)", (long long)cap);
  emit_line(e, "  start = %lld;", (long long)cap);
  emit_line(e, "if (count > %lld)", (long long)t);
  emit_line(e, "  count = %lld;", (long long)t);
  emit_line(e, "if (count > %lld - start)", (long long)cap);
  emit_line(e, "  count = %lld - start;", (long long)cap);
  DType cd = ct->dt;
  if (cd == node_in(g, n, 1)->type.dt) {
    emit_line(e, "if (count > 0)");
    emit_line(e, "  memcpy(%s + start * %lld, %s, (size_t)count * %lld * sizeof *%s);", y, (long long)row, r,
              (long long)row, y);
    return true;
  }
  emit_line(e, "/* f32 rows rounded to %s (nearest, ties to even) */", dt_name(cd));
  emit_line(e, "for (int64_t i = 0; i < count * %lld; i++)", (long long)row);
  emit_line(e, "  %s[start * %lld + i] = %s(%s[i]);", y, (long long)row,
            cd == DT_F16 ? "kiln_f32_to_f16" : "kiln_f32_to_bf16", r);
  return true;
}

/* ---- CachedAttention ------------------------------------------------------------ */

typedef struct CacheGeom {
  int64_t t, h, d, c, hkv, dv;
} CacheGeom;

static void cache_geom(const Graph *g, const Node *n, CacheGeom *ge) {
  const Type *q = &node_in(g, n, 0)->type, *k = &node_in(g, n, 1)->type, *v = &node_in(g, n, 2)->type;
  *ge = (CacheGeom){q->dims[0], q->dims[1], q->dims[2], k->dims[0], k->dims[1], v->dims[2]};
}

static double cache_scale(const Node *n, int64_t d) { return attr_float(n, "scale", 1 / sqrt((double)d)); }

/* The sliding window: a query at position p sees keys p - window + 1 .. p
 * (Gemma's local layers, Mistral's sliding window); 0, the default, is no
 * window (keys 0 .. p). */
static int64_t cache_window(const Node *n) { return attr_int(n, "window", 0); }

bool cached_attention_infer(Graph *g, Node *n, Diag *d) {
  const Value *q = node_in(g, n, 0), *k = node_in(g, n, 1), *v = node_in(g, n, 2);
  char a[128], b[128], c[128];
  if (!q || !k || !v)
    return diag_node(d, g, n, "input %s is absent; expected Q, K and V", !q ? "Q" : !k ? "K" : "V");
  bool kv_ok = (k->type.dt == DT_F32 || dt_is_half(k->type.dt)) && (v->type.dt == DT_F32 || dt_is_half(v->type.dt));
  if (q->type.dt != DT_F32 || !kv_ok || q->type.rank != 3 || k->type.rank != 3 || v->type.rank != 3)
    return diag_node(d, g, n, "Q is %s, K %s, V %s; expected f32 Q [T, H, D], K [C, Hkv, D], V [C, Hkv, Dv] "
                     "(K and V f32, f16 or bf16)",
                     type_str(&q->type, a, sizeof a), type_str(&k->type, b, sizeof b),
                     type_str(&v->type, c, sizeof c));
  CacheGeom ge;
  cache_geom(g, n, &ge);
  if (k->type.dims[2] != ge.d || v->type.dims[0] != ge.c || v->type.dims[1] != ge.hkv || ge.hkv < 1 ||
      ge.h % ge.hkv || ge.c < 1 || ge.d < 1 || ge.dv < 1)
    return diag_node(d, g, n, "Q is %s, K %s, V %s; expected K [C, Hkv, D] and V [C, Hkv, Dv] with the "
                     "query heads H a multiple of Hkv", type_str(&q->type, a, sizeof a),
                     type_str(&k->type, b, sizeof b), type_str(&v->type, c, sizeof c));
  if (!check_index(g, n, 3, "Start", d) || (node_in(g, n, 4) && !check_index(g, n, 4, "Count", d)))
    return false;
  double s = cache_scale(n, ge.d);
  if (!isfinite(s))
    return diag_node(d, g, n, "scale is %g; expected a finite number", s);
  if (cache_window(n) < 0)
    return diag_node(d, g, n, "window is %lld; expected 0 (none) or the keys a query sees, itself included",
                     (long long)cache_window(n));
  Value *y = node_out(g, n, 0);
  y->type = (Type){.dt = DT_F32, .rank = 3, .dims = {ge.t, ge.h, ge.dv}};
  return true;
}

/* The keys query t sees: positions 0 .. start + t, within the cache. */
static int64_t keys_seen(int64_t start, int64_t t, int64_t cap) {
  int64_t nk = start + t + 1;
  return nk < 0 ? 0 : nk > cap ? cap : nk;
}

/* The first of them a window lets it see (0 without one). */
static int64_t first_key(int64_t start, int64_t t, int64_t window) {
  int64_t lo = window > 0 ? start + t + 1 - window : 0;
  return lo < 0 ? 0 : lo;
}

/* An f16/bf16 cache as f32 (malloc'd: free it), or the f32 data itself. */
static const float *widened(const Tensor *t) {
  if (!dt_is_half(t->type.dt))
    return t->data;
  int64_t n = type_numel(&t->type);
  float *f = malloc(sizeof(float) * (size_t)(n ? n : 1));
  for (int64_t i = 0; f && i < n; i++)
    f[i] = (float)half_to_double(t->type.dt, ((const uint16_t *)t->data)[i]);
  return f;
}

bool cached_attention_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  CacheGeom ge = {in[0].type.dims[0], in[0].type.dims[1], in[0].type.dims[2], in[1].type.dims[0],
                  in[1].type.dims[1], in[2].type.dims[2]};
  const float *q = in[0].data, *k = widened(&in[1]), *v = widened(&in[2]);
  if (!k || !v) {
    if (k && k != in[1].data)
      free((void *)k);
    if (v && v != in[2].data)
      free((void *)v);
    return diag_error(d, "out of memory widening the cache");
  }
  float *y = out[0].data;
  int64_t start = *(const int64_t *)in[3].data;
  int64_t count = in[4].data ? *(const int64_t *)in[4].data : ge.t;
  double scale = cache_scale(n, ge.d);
  int64_t window = cache_window(n);
  double *s = calloc((size_t)ge.c + 1, sizeof *s);
  for (int64_t t = 0; t < ge.t; t++)
    for (int64_t h = 0; h < ge.h; h++) {
      int64_t kv = h / (ge.h / ge.hkv), nk = t < count ? keys_seen(start, t, ge.c) : 0;
      int64_t lo = first_key(start, t, window);
      const float *qr = q + (t * ge.h + h) * ge.d;
      float *yr = y + (t * ge.h + h) * ge.dv;
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < nk; j++) {
        if (j < lo) { /* outside the window */
          s[j] = -INFINITY;
          continue;
        }
        const float *kr = k + (j * ge.hkv + kv) * ge.d;
        double dot = 0;
        for (int64_t i = 0; i < ge.d; i++)
          dot += (double)qr[i] * kr[i];
        s[j] = scale * dot;
        mx = s[j] > mx ? s[j] : mx;
      }
      for (int64_t j = lo; j < nk; j++)
        sum += s[j] = exp(s[j] - mx);
      for (int64_t i = 0; i < ge.dv; i++) {
        double acc = 0;
        for (int64_t j = lo; j < nk; j++)
          acc += s[j] * v[(j * ge.hkv + kv) * ge.dv + i];
        yr[i] = nk > lo ? (float)(acc / sum) : 0.0f;
      }
    }
  free(s);
  if (k != in[1].data)
    free((void *)k);
  if (v != in[2].data)
    free((void *)v);
  return true;
}

/* Keys per chunk of the online softmax: the scores array's length. */
#define KEY_CHUNK 256

/* Lanes of the dot product's partial sums: a width dividing D that the C
 * compiler turns into one vector register. */
static int dot_lanes(int64_t d) {
  return d % 16 == 0 ? 16 : d % 8 == 0 ? 8 : d % 4 == 0 ? 4 : 1;
}

/* A cache element as f32: itself, or widened from f16/bf16 by arithmetic
 * the C compiler vectorises (kiln_rt.h). */
static const char *widen_load(Graph *g, DType dt, const char *x) {
  if (dt == DT_F16)
    return arena_printf(g->arena, "kiln_f16_to_f32_branchless(%s)", x);
  if (dt == DT_BF16)
    return arena_printf(g->arena, "kiln_bf16_to_f32(%s)", x);
  return x;
}

/* ---- f16 caches by the hardware conversion ----------------------------------
 * An f16 cache read through kiln_f16_to_f32_branchless costs several vector
 * instructions per 8 or 16 values (a mask, a shift, a multiply, a compare,
 * two ors); vcvtph2ps is one. Where the generated file is compiled for
 * AVX-512 (16 values a vcvtph2ps) or F16C (8), the f16 loops load whole
 * vectors of halves and convert them with the instruction (GNU C vectors,
 * the builtins the intrinsics wrap); elsewhere they keep the portable
 * form. The conversion is exact either way and each vector lane does the
 * arithmetic the portable loop does for that element, in the same order,
 * so the results are bit for bit the same (tests/decode/f16_match.sh). */

typedef struct F16Path {
  int vw;            /* halves a conversion */
  const char *cond;  /* the #if condition */
  const char *cvt;   /* the call that widens vector %s of halves (printf format) */
} F16Path;

/* widest first; 4 in the AVX-512 form is _MM_FROUND_CUR_DIRECTION (an
 * exact conversion has nothing to round), 0xffff all 16 lanes */
static const F16Path f16_paths[] = {
    {16, "defined(__GNUC__) && defined(__AVX512F__)", "__builtin_ia32_vcvtph2ps512_mask(%s, (kv_f32x16){0}, 0xffff, 4)"},
    {8, "defined(__GNUC__) && defined(__F16C__)", "__builtin_ia32_vcvtph2ps256(%s)"},
};

/* Does --isa write path p? portable both, avx512 the 16-wide, avx2 F16C's
 * 8-wide (compiler/kernels/vector_views.h). */
static bool f16_written(EmitIsa isa, const F16Path *p) {
  return isa == ISA_GENERIC || p->vw == (isa == ISA_AVX512 ? 16 : 8);
}

/* The GNU C vector types of path p (in the block that uses them). */
static void f16_types(Emit *e, const F16Path *p) {
  emit_line(e, "      typedef float kv_f32x%d __attribute__((vector_size(%d)));", p->vw, 4 * p->vw);
  emit_line(e, "      typedef short kv_f16x%d __attribute__((vector_size(%d)));", p->vw, 2 * p->vw);
}

/* Q[t,h]·K[j] into part[lanes] over D by path p (its width divides
 * lanes): vector dk<v> holds part[v·vw ..], the sums of the elements i
 * with i % lanes in that range, as the portable loop sums them. */
static void f16_key_dot(Emit *e, const F16Path *p, int lanes, long long D) {
  Arena *a = e->g->arena;
  int nv = lanes / p->vw;
  for (int v = 0; v < nv; v++)
    emit_line(e, "      kv_f32x%d dk%d = {0};", p->vw, v);
  emit_line(e, "      for (int i = 0; i < %lld; i += %d) {", D, lanes);
  for (int v = 0; v < nv; v++) {
    emit_line(e, "        kv_f16x%d hk%d;", p->vw, v);
    emit_line(e, "        kv_f32x%d qv%d;", p->vw, v);
    emit_line(e, "        memcpy(&hk%d, kr + i + %d, sizeof hk%d);", v, v * p->vw, v);
    emit_line(e, "        memcpy(&qv%d, qr + i + %d, sizeof qv%d);", v, v * p->vw, v);
    emit_line(e, "        dk%d += qv%d * %s;", v, v, arena_printf(a, p->cvt, arena_printf(a, "hk%d", v)));
  }
  emit_line(e, "      }");
  for (int v = 0; v < nv; v++)
    emit_line(e, "      memcpy(part + %d, &dk%d, sizeof dk%d);", v * p->vw, v, v);
}

/* acc[DV] += p · V[j] (vr) by path p (its width divides DV). */
static void f16_value_acc(Emit *e, const F16Path *p, long long DV) {
  emit_line(e, "      for (int i = 0; i < %lld; i += %d) {", DV, p->vw);
  emit_line(e, "        kv_f16x%d hv;", p->vw);
  emit_line(e, "        kv_f32x%d av;", p->vw);
  emit_line(e, "        memcpy(&hv, vr + i, sizeof hv);");
  emit_line(e, "        memcpy(&av, acc + i, sizeof av);");
  emit_line(e, "        av += p * %s;", arena_printf(e->g->arena, p->cvt, "hv"));
  emit_line(e, "        memcpy(acc + i, &av, sizeof av);");
  emit_line(e, "      }");
}

/* One key's dot product into part[lanes]: for an f16 cache, each hardware
 * path whose width divides lanes under its #if, then the portable loop. */
static void emit_key_dot(Emit *e, DType kd, int lanes, long long D) {
  int opened = 0;
  for (int i = 0; kd == DT_F16 && i < KILN_COUNT(f16_paths); i++)
    if (lanes % f16_paths[i].vw == 0 && f16_written(e->isa, &f16_paths[i])) {
      emit_line(e, "      #%s %s", opened++ ? "elif" : "if", f16_paths[i].cond);
      f16_types(e, &f16_paths[i]);
      f16_key_dot(e, &f16_paths[i], lanes, D);
    }
  if (opened)
    emit_line(e, "      #else");
  emit_line(e, "      for (int i = 0; i < %lld; i += %d)", D, lanes);
  emit_line(e, "        for (int l = 0; l < %d; l++)", lanes);
  emit_line(e, "          part[l] += qr[i + l] * %s;", widen_load(e->g, kd, "kr[i + l]"));
  if (opened)
    emit_line(e, "      #endif");
}

/* acc[DV] += p · V[j]: the same choice for an f16 cache. */
static void emit_value_acc(Emit *e, DType vd, long long DV) {
  int opened = 0;
  for (int i = 0; vd == DT_F16 && i < KILN_COUNT(f16_paths); i++)
    if (DV % f16_paths[i].vw == 0 && f16_written(e->isa, &f16_paths[i])) {
      emit_line(e, "      #%s %s", opened++ ? "elif" : "if", f16_paths[i].cond);
      f16_types(e, &f16_paths[i]);
      f16_value_acc(e, &f16_paths[i], DV);
    }
  if (opened)
    emit_line(e, "      #else");
  emit_line(e, "      for (int i = 0; i < %lld; i++)", DV);
  emit_line(e, "        acc[i] += p * %s;", widen_load(e->g, vd, "vr[i]"));
  if (opened)
    emit_line(e, "      #endif");
}

bool cached_attention_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  CacheGeom ge;
  cache_geom(g, n, &ge);
  int lanes = dot_lanes(ge.d);
  const char *q = emit_ref(e, n->in[0]), *k = emit_ref(e, n->in[1]), *v = emit_ref(e, n->in[2]);
  const char *st = emit_ref(e, n->in[3]);
  const char *cn = n->nin > 4 && n->in[4] >= 0 ? emit_ref(e, n->in[4]) : NULL;
  const char *y = emit_ref(e, n->out[0]);
  long long T = ge.t, H = ge.h, D = ge.d, C = ge.c, HKV = ge.hkv, DV = ge.dv, G = ge.h / ge.hkv;
  long long W = (long long)cache_window(n);
  if (W)
    emit_line(e, "/* query t (position start + t) of head h sees keys start + t - %lld .. start + t of kv head h / "
                 "%lld (a sliding window of %lld: the keys before it are never read) */", W - 1, G, W);
  else
    emit_line(e, "/* query t (position start + t) of head h sees keys 0 .. start + t of kv head h / %lld */", G);
  emit_line(e, "const int64_t start = %s[0], count = %s;", st, cn ? arena_printf(g->arena, "%s[0]", cn) : emit_int(e, T));
  emit_parallel_for(e, T * H, (double)(T * H) * (double)C * (double)(D + DV) * 0.5);
  emit_line(e, "for (int th = 0; th < %lld; th++) {", T * H);
  emit_line(e, "  const int t = th / %lld, h = th %% %lld;", H, H);
  emit_line(e, "  float *yr = %s + (int64_t)th * %lld; /* Y[t, h, :] [%lld] */", y, DV, DV);
  emit_line(e, "  int64_t nk = t < count ? start + t + 1 : 0; /* keys this query sees */");
  emit_line(e, "  nk = nk < 0 ? 0 : nk > %lld ? %lld : nk;", C, C);
  if (W) {
    emit_line(e, "  int64_t lo = start + t + 1 - %lld; /* the window's first key */", W);
    emit_line(e, "  lo = lo < 0 ? 0 : lo;");
  }
  emit_line(e, "  const float *qr = %s + (int64_t)th * %lld; /* Q[t, h, :] [%lld] */", q, D, D);
  DType kd = node_in(g, n, 1)->type.dt, vd = node_in(g, n, 2)->type.dt;
  emit_line(e, "  const %s *kh = %s + (int64_t)(h / %lld) * %lld;%s", dt_is_half(kd) ? "uint16_t" : "float", k, G, D,
            dt_is_half(kd) ? arena_printf(g->arena, " /* %s keys */", dt_name(kd)) : "");
  emit_line(e, "  const %s *vh = %s + (int64_t)(h / %lld) * %lld;%s", dt_is_half(vd) ? "uint16_t" : "float", v, G, DV,
            dt_is_half(vd) ? arena_printf(g->arena, " /* %s values */", dt_name(vd)) : "");
  /* keys in chunks of KEY_CHUNK with a running max (the online softmax):
   * a fixed-size scores array, whatever the cache's capacity */
  emit_line(e, "  float mx = -INFINITY, sum = 0;");
  emit_line(e, "  float acc[%lld] = {0};", DV);
  emit_line(e, "  for (int64_t j0 = %s; j0 < nk; j0 += %d) {", W ? "lo" : "0", KEY_CHUNK);
  emit_line(e, "    const int64_t nj = nk - j0 < %d ? nk - j0 : %d;", KEY_CHUNK, KEY_CHUNK);
  emit_line(e, "    float s[%d]; /* this chunk's scores, then their exponentials */", KEY_CHUNK);
  emit_line(e, "    float cmx = -INFINITY;");
  emit_line(e, "    for (int64_t j = 0; j < nj; j++) {");
  emit_line(e, "      const %s *kr = kh + (j0 + j) * %lld; /* K[j0 + j, h / %lld, :] */",
            dt_is_half(kd) ? "uint16_t" : "float", HKV * D, G);
  emit_line(e, "      float part[%d] = {0};", lanes);
  emit_key_dot(e, kd, lanes, D);
  for (int half = lanes / 2; half >= 1; half /= 2) /* the lanes summed pairwise: no chain of adds */
    emit_line(e, "      for (int l = 0; l < %d; l++) part[l] += part[l + %d];", half, half);
  emit_line(e, "      const float dot = part[0];");
  emit_line(e, "      s[j] = dot * %s;", emit_double_literal(e, DT_F32, cache_scale(n, ge.d)));
  emit_line(e, "      cmx = s[j] > cmx ? s[j] : cmx;");
  emit_line(e, "    }");
  emit_line(e, "    if (cmx > mx) { /* a new max: what was summed so far shrinks by exp(old - new) */");
  emit_line(e, "      const float r = mx == -INFINITY ? 0.0f : %s(mx - cmx);", emit_mathfn(e, DT_F32, "exp"));
  emit_line(e, "      sum *= r;");
  emit_line(e, "      for (int i = 0; i < %lld; i++)", DV);
  emit_line(e, "        acc[i] *= r;");
  emit_line(e, "      mx = cmx;");
  emit_line(e, "    }");
  emit_line(e, "    for (int64_t j = 0; j < nj; j++) {");
  emit_line(e, "      s[j] = %s(s[j] - mx);", emit_mathfn(e, DT_F32, "exp"));
  emit_line(e, "      sum += s[j];");
  emit_line(e, "    }");
  emit_line(e, "    for (int64_t j = 0; j < nj; j++) {");
  emit_line(e, "      const %s *vr = vh + (j0 + j) * %lld; /* V[j0 + j, h / %lld, :] */",
            dt_is_half(vd) ? "uint16_t" : "float", HKV * DV, G);
  emit_line(e, "      const float p = s[j];");
  emit_value_acc(e, vd, DV);
  emit_line(e, "    }");
  emit_line(e, "  }");
  emit_line(e, "  const float inv = nk > %s ? 1.0f / sum : 0.0f;", W ? "lo" : "0");
  emit_line(e, "  for (int i = 0; i < %lld; i++)", DV);
  emit_line(e, "    yr[i] = acc[i] * inv;");
  emit_line(e, "}");
  return true;
}

/* Counted at a full cache: Q·K and P·V multiply-adds, exp and softmax. */
int64_t cached_attention_flops(const Graph *g, const Node *n) {
  CacheGeom ge;
  cache_geom(g, n, &ge);
  int64_t w = cache_window(n), keys = w > 0 && w < ge.c ? w : ge.c;
  return ge.t * ge.h * keys * (2 * ge.d + 2 * ge.dv + 5);
}
