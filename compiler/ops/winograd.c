/* winograd.c — WinogradIn and WinogradOut, kiln ops: a 3x3 stride-1
 * convolution as Winograd's minimal filtering F(m x m, 3 x 3) (Lavin and
 * Gray, 2016), made by the conv_gemm pass (compiler/passes/conv_gemm.c)
 * where the multiplies it saves pay for its transforms:
 *
 *   V = WinogradIn(x) {tile=m, pads, out}     [α², T, C]   α = m + 2
 *   P = MatMul(V, U)                          [α², T, M]   U constant [α², C, M]
 *   y = WinogradOut(P, b[, r]) {tile, out, act}  [N, oh·ow, M]
 *
 * x is channels last, [N, H, W, C]; the output is cut into T = N·th·tw
 * tiles of m x m positions (th = ⌈oh/m⌉, tw = ⌈ow/m⌉, row-major per image),
 * tile t reading the α x α window d of x at (ty·m - pad_top, tx·m -
 * pad_left), zero outside x. Then
 *
 *   V[i·α + j][t][c] = (Bᵀ d_c B)[i][j]
 *   U[i·α + j][c][o] = (G w[o][c] Gᵀ)[i][j]            (winograd_weight)
 *   y[n][p][o]       = act((Aᵀ P_t,o A)[py][px] + b[o]) + r[n][p][o]
 *
 * for the output position p = (ty·m + py)·ow + tx·m + px inside oh x ow,
 * P_t,o[i][j] = P[i·α + j][t][o]. So the product by the weight is α² GEMMs
 * of [T, C] x [C, M], one per position of the tile, where the direct
 * convolution is one of [oh·ow, 9·C] x [9·C, M]: 16·T against 9·oh·ow rows
 * of multiplies for F(2, 3) (2.25x fewer on an even image), 36·T against
 * 9·oh·ow for F(4, 3) (4x). The price: the transforms (adds, and a few
 * multiplies by constants, over x and the products), U α²/9 times W's
 * size, and rounding: F(2, 3)'s matrices are 0, ±1 and ±1/2, its error
 * that of the direct sum; F(4, 3)'s points ±2 and ±1/2 lose a few bits
 * more.
 *
 * _eval computes the transforms in double from the matrices. _emit walks
 * the tiles (rows of tiles split among the threads), each tile's α² input
 * pointers set once (to x, or to a row of zeros outside it), then the
 * channels in GNU C vectors of 16 (AVX-512) or 8 floats, with plain C
 * after (#else); the transforms written out as sums of named values, a
 * term per non-zero entry of the matrix. */
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "window.h"
#include "winograd.h"

#define ALPHA_MAX 6

/* Bᵀ (α x α), G (α x 3), Aᵀ (m x α) of F(2, 3) and F(4, 3), row-major. */
static const double bt2[] = {1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1};
static const double g2[] = {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1};
static const double at2[] = {1, 1, 1, 0, 0, 1, -1, -1};
static const double bt4[] = {4, 0, -5, 0, 1, 0,  0, -4, -4, 1, 1, 0, 0, 4, -4, -1, 1, 0,
                             0, -2, -1, 2, 1, 0, 0, 2, -1, -2, 1, 0, 0, 4, 0, -5, 0, 1};
static const double g4[] = {1.0 / 4,  0,         0,        -1.0 / 6, -1.0 / 6, -1.0 / 6,
                            -1.0 / 6, 1.0 / 6,   -1.0 / 6, 1.0 / 24, 1.0 / 12, 1.0 / 6,
                            1.0 / 24, -1.0 / 12, 1.0 / 6,  0,        0,        1};
static const double at4[] = {1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0, 0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1};

typedef struct Wino {
  int m, a;            /* tile m x m outputs, window α x α = (m + 2)² */
  const double *bt, *g, *at;
} Wino;

bool winograd_tile_ok(int64_t m) { return m == 2 || m == 4; }

static Wino wino(int64_t m) {
  return m == 2 ? (Wino){2, 4, bt2, g2, at2} : (Wino){4, 6, bt4, g4, at4};
}

float *winograd_weight(Arena *a, int64_t m, const float *w, int64_t cout, int64_t cin) {
  Wino f = wino(m);
  int64_t aa = (int64_t)f.a * f.a;
  float *u = arena_alloc(a, sizeof(float) * (size_t)(aa * cin * cout));
  for (int64_t o = 0; o < cout; o++)
    for (int64_t c = 0; c < cin; c++) {
      const float *k = w + (o * cin + c) * 9;
      double gk[ALPHA_MAX][3]; /* G · k */
      for (int i = 0; i < f.a; i++)
        for (int j = 0; j < 3; j++) {
          gk[i][j] = 0;
          for (int t = 0; t < 3; t++)
            gk[i][j] += f.g[i * 3 + t] * k[t * 3 + j];
        }
      for (int i = 0; i < f.a; i++)
        for (int j = 0; j < f.a; j++) {
          double s = 0;
          for (int t = 0; t < 3; t++)
            s += gk[i][t] * f.g[j * 3 + t];
          u[((i * f.a + j) * cin + c) * cout + o] = (float)s;
        }
    }
  return u;
}

/* ---- geometry ----------------------------------------------------------------- */

typedef struct WinoGeom {
  Wino f;
  int64_t n, h, w, c;  /* x [N, H, W, C] (WinogradIn); c: the channels of either side */
  int64_t oh, ow, th, tw, t;
  int64_t pt, pl;      /* pads before the rows and the columns */
  bool bias, relu, res; /* WinogradOut's epilogue: bias, act relu, residual */
} WinoGeom;

/* n's tile, out and (WinogradIn) pads attributes, with the tile count for
 * `batch` images; false with the reason in why. */
static bool wino_attrs(const Node *n, WinoGeom *g, char *why) {
  int64_t m = attr_int(n, "tile", 0);
  const Attr *out = attr_get(n, "out"), *pads = attr_get(n, "pads");
  if (!winograd_tile_ok(m))
    return window_fail(why, "tile is %lld; expected 2 or 4", (long long)m);
  if (!out || out->kind != ATTR_INTS || out->n != 2 || out->ints[0] <= 0 || out->ints[1] <= 0 ||
      out->ints[0] > ATTR_MAX || out->ints[1] > ATTR_MAX)
    return window_fail(why, "out must be two ints in [1, 2^30] (the conv's output rows and columns)");
  g->f = wino(m);
  g->oh = out->ints[0];
  g->ow = out->ints[1];
  g->th = (g->oh + m - 1) / m;
  g->tw = (g->ow + m - 1) / m;
  g->pt = g->pl = 0;
  g->bias = g->relu = g->res = false;
  if (n->op == OP_WINOGRADIN) {
    if (!pads || pads->kind != ATTR_INTS || pads->n != 2 || pads->ints[0] < 0 || pads->ints[1] < 0 ||
        pads->ints[0] > ATTR_MAX || pads->ints[1] > ATTR_MAX)
      return window_fail(why, "pads must be two ints in [0, 2^30] (the pads before the rows and the columns; the "
                              "windows read 0 outside x)");
    g->pt = pads->ints[0];
    g->pl = pads->ints[1];
  }
  return true;
}

/* WinogradIn's geometry over x [N, H, W, C]. */
static bool wino_in_geom(const Node *n, const Type *x, WinoGeom *g, char *why) {
  if (!wino_attrs(n, g, why))
    return false;
  if (x->rank != 4 || x->dt != DT_F32)
    return window_fail(why, "x is %s of rank %d; expected f32 [N, H, W, C] (channels last)", dt_name(x->dt), x->rank);
  g->n = x->dims[0];
  g->h = x->dims[1];
  g->w = x->dims[2];
  g->c = x->dims[3];
  g->t = g->n * g->th * g->tw;
  return true;
}

/* WinogradOut's geometry over P [α², T, M]. */
static bool wino_out_geom(const Node *n, const Type *p, WinoGeom *g, char *why) {
  if (!wino_attrs(n, g, why))
    return false;
  int64_t aa = (int64_t)g->f.a * g->f.a;
  if (p->rank != 3 || p->dt != DT_F32 || p->dims[0] != aa || p->dims[1] % (g->th * g->tw))
    return window_fail(why, "the products are %s of rank %d; expected f32 [%lld, a multiple of %lld tiles, M]",
                       dt_name(p->dt), p->rank, (long long)aa, (long long)(g->th * g->tw));
  g->t = p->dims[1];
  g->n = g->t / (g->th * g->tw);
  g->c = p->dims[2];
  return true;
}

bool winograd_infer(Graph *g, Node *n, Diag *d) {
  char why[WHY];
  WinoGeom w;
  const Type *x = &node_in(g, n, 0)->type;
  Type t = {.dt = DT_F32, .rank = 3};
  if (n->op == OP_WINOGRADIN) {
    if (!wino_in_geom(n, x, &w, why))
      return diag_node(d, g, n, "%s", why);
    t.dims[0] = (int64_t)w.f.a * w.f.a;
    t.dims[1] = w.t;
    t.dims[2] = w.c;
  } else {
    if (!wino_out_geom(n, x, &w, why))
      return diag_node(d, g, n, "%s", why);
    t.dims[0] = w.n;
    t.dims[1] = w.oh * w.ow;
    t.dims[2] = w.c;
    if (!window_epilogue_infer(g, n, 1, 2, &t, d))
      return false;
  }
  node_out(g, n, 0)->type = t;
  return true;
}

/* ---- reference ------------------------------------------------------------------ */

static bool wino_in_eval(const Node *n, const Tensor *in, Tensor *out) {
  WinoGeom w;
  char why[WHY];
  KILN_ASSERT(wino_in_geom(n, &in[0].type, &w, why));
  const float *x = in[0].data;
  float *v = out[0].data;
  int a = w.f.a;
  for (int64_t t = 0; t < w.t; t++) {
    int64_t nb = t / (w.th * w.tw), ty = t / w.tw % w.th, tx = t % w.tw;
    for (int64_t c = 0; c < w.c; c++) {
      double d[ALPHA_MAX][ALPHA_MAX], u[ALPHA_MAX][ALPHA_MAX];
      for (int i = 0; i < a; i++)
        for (int j = 0; j < a; j++) {
          int64_t iy = ty * w.f.m - w.pt + i, ix = tx * w.f.m - w.pl + j;
          d[i][j] = iy >= 0 && iy < w.h && ix >= 0 && ix < w.w ? x[((nb * w.h + iy) * w.w + ix) * w.c + c] : 0;
        }
      for (int i = 0; i < a; i++) /* Bᵀ d */
        for (int j = 0; j < a; j++) {
          u[i][j] = 0;
          for (int k = 0; k < a; k++)
            u[i][j] += w.f.bt[i * a + k] * d[k][j];
        }
      for (int i = 0; i < a; i++) /* (Bᵀ d) B */
        for (int j = 0; j < a; j++) {
          double s = 0;
          for (int k = 0; k < a; k++)
            s += u[i][k] * w.f.bt[j * a + k];
          v[((int64_t)(i * a + j) * w.t + t) * w.c + c] = (float)s;
        }
    }
  }
  return true;
}

static bool wino_out_eval(const Node *n, const Tensor *in, Tensor *out) {
  WinoGeom w;
  char why[WHY];
  KILN_ASSERT(wino_out_geom(n, &in[0].type, &w, why));
  const float *p = in[0].data, *b = node_has_in(n, 1) ? in[1].data : NULL, *r = node_has_in(n, 2) ? in[2].data : NULL;
  float *y = out[0].data;
  bool relu = !strcmp(attr_str(n, "act", "none"), "relu");
  int a = w.f.a, m = w.f.m;
  for (int64_t t = 0; t < w.t; t++) {
    int64_t nb = t / (w.th * w.tw), ty = t / w.tw % w.th, tx = t % w.tw;
    for (int64_t o = 0; o < w.c; o++) {
      double u[ALPHA_MAX][ALPHA_MAX];
      for (int i = 0; i < m; i++) /* Aᵀ P */
        for (int j = 0; j < a; j++) {
          u[i][j] = 0;
          for (int k = 0; k < a; k++)
            u[i][j] += w.f.at[i * a + k] * p[((int64_t)(k * a + j) * w.t + t) * w.c + o];
        }
      for (int i = 0; i < m; i++) /* (Aᵀ P) A */
        for (int j = 0; j < m; j++) {
          int64_t py = ty * m + i, px = tx * m + j;
          if (py >= w.oh || px >= w.ow)
            continue;
          double s = b ? b[o] : 0;
          for (int k = 0; k < a; k++)
            s += u[i][k] * w.f.at[j * a + k];
          float v = (float)s;
          if (relu)
            v = v > 0 ? v : 0;
          int64_t yi = ((nb * w.oh + py) * w.ow + px) * w.c + o;
          y[yi] = r ? v + r[yi] : v;
        }
    }
  }
  return true;
}

bool winograd_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  return n->op == OP_WINOGRADIN ? wino_in_eval(n, in, out) : wino_out_eval(n, in, out);
}

/* ---- C --------------------------------------------------------------------------- */

/* A vector path: the channels vw at a time in the GNU C vector type wv
 * (vw 1: plain float, no vectors). */
typedef struct Lane {
  int vw;
  const char *ty; /* "wv" or "float" */
} Lane;

/* One term of a sum: " + x", " - x" or " + x * c"; "" for c = 0. The
 * first term of a sum drops its " + ". */
static void put_term(Emit *e, Buf *b, bool *first, double c, const char *x) {
  if (c == 0)
    return;
  const char *sign = *first ? (c < 0 ? "-" : "") : (c < 0 ? " - " : " + ");
  if (c == 1 || c == -1)
    buf_printf(b, "%s%s", sign, x);
  else
    buf_printf(b, "%s%s * %s", sign, x, emit_double_literal(e, DT_F32, c < 0 ? -c : c));
  *first = false;
}

/* Rows r < nr of L·X·Lᵀ as named values: L [nr x a], X the a x a values
 * x<i·a + j>; first tmp<r>_<j> = (L·X)[r][j], then out<r·nr + s> =
 * (L·X·Lᵀ)[r][s], one line a row. */
static void emit_sandwich(Emit *e, const Lane *l, const double *lm, int nr, int a, const char *x, const char *tmp,
                          const char *out) {
  Arena *ar = e->g->arena;
  for (int r = 0; r < nr; r++) {
    Buf b = {0};
    buf_printf(&b, "const %s ", l->ty);
    for (int j = 0; j < a; j++) {
      bool first = true;
      buf_printf(&b, "%s%s%d_%d = ", j ? ", " : "", tmp, r, j);
      for (int k = 0; k < a; k++)
        put_term(e, &b, &first, lm[r * a + k], arena_printf(ar, "%s%d", x, k * a + j));
      if (first)
        buf_puts(&b, "0");
    }
    emit_line(e, "%s;", b.s);
    buf_free(&b);
  }
  for (int r = 0; r < nr; r++) {
    Buf b = {0};
    buf_printf(&b, "const %s ", l->ty);
    for (int s = 0; s < nr; s++) {
      bool first = true;
      buf_printf(&b, "%s%s%d = ", s ? ", " : "", out, r * nr + s);
      for (int k = 0; k < a; k++)
        put_term(e, &b, &first, lm[s * a + k], arena_printf(ar, "%s%d_%d", tmp, r, k));
      if (first)
        buf_puts(&b, "0");
    }
    emit_line(e, "%s;", b.s);
    buf_free(&b);
  }
}

/* The loads x<k> = src<k>[c..] for k < n, a line of `per` a row. */
static void emit_loads(Emit *e, const Lane *l, int n, int per, const char *x,
                       const char *(*src)(Emit *, int, void *), void *arg) {
  for (int k0 = 0; k0 < n; k0 += per) {
    Buf b = {0};
    if (l->vw == 1) {
      buf_printf(&b, "const float ");
      for (int k = k0; k < k0 + per && k < n; k++)
        buf_printf(&b, "%s%s%d = (%s)[c]", k > k0 ? ", " : "", x, k, src(e, k, arg));
      buf_puts(&b, ";");
    } else {
      buf_printf(&b, "wv ");
      for (int k = k0; k < k0 + per && k < n; k++)
        buf_printf(&b, "%s%s%d", k > k0 ? ", " : "", x, k);
      buf_puts(&b, ";");
      for (int k = k0; k < k0 + per && k < n; k++)
        buf_printf(&b, " memcpy(&%s%d, %s + c, sizeof %s%d);", x, k, src(e, k, arg), x, k);
    }
    emit_line(e, "%s", b.s);
    buf_free(&b);
  }
}

static const char *in_src(Emit *e, int k, void *arg) {
  (void)arg;
  return arena_printf(e->g->arena, "d[%d]", k);
}

static const char *out_src(Emit *e, int k, void *arg) {
  const WinoGeom *w = arg;
  return k ? arena_printf(e->g->arena, "pt + %lld", (long long)k * w->t * w->c) : "pt";
}

/* The vector paths (16 floats under AVX-512, 8 under any GNU C, where C
 * divides; -DKILN_GEMM_V16 forces the 16, -DKILN_GEMM_SCALAR the plain C,
 * as for the GEMM) and the plain C, each a loop over the channels with
 * `body` writing one step; the plain C last. */
static void emit_lanes(Emit *e, int64_t c, void (*body)(Emit *, const Lane *, const WinoGeom *), const WinoGeom *w) {
  static const struct { int vw; const char *cond; } paths[] = {
      {16, "defined(__GNUC__) && !defined(KILN_GEMM_SCALAR) && (defined(__AVX512F__) || defined(KILN_GEMM_V16))"},
      {8, "defined(__GNUC__) && !defined(KILN_GEMM_SCALAR)"},
  };
  int opened = 0;
  for (int i = 0; i < 2; i++) {
    if (c % paths[i].vw)
      continue;
    emit_line(e, "#%s %s", opened ? "elif" : "if", paths[i].cond);
    opened++;
    emit_line(e, "typedef float wv __attribute__((vector_size(%d)));", 4 * paths[i].vw);
    if (w->relu) /* relu's mask */
      emit_line(e, "typedef int wi __attribute__((vector_size(%d)));", 4 * paths[i].vw);
    emit_line(e, "for (int c = 0; c < %lld; c += %d) {", (long long)c, paths[i].vw);
    e->indent++;
    body(e, &(Lane){paths[i].vw, "wv"}, w);
    e->indent--;
    emit_line(e, "}");
  }
  if (opened)
    emit_line(e, "#else");
  emit_line(e, "for (int c = 0; c < %lld; c++) {", (long long)c);
  e->indent++;
  body(e, &(Lane){1, "float"}, w);
  e->indent--;
  emit_line(e, "}");
  if (opened)
    emit_line(e, "#endif");
}

static void in_body(Emit *e, const Lane *l, const WinoGeom *w) {
  int a = w->f.a;
  emit_loads(e, l, a * a, a, "d", in_src, NULL);
  emit_sandwich(e, l, w->f.bt, a, a, "d", "u", "v");
  Buf b = {0};
  for (int k = 0; k < a * a; k++) {
    const char *dst = k ? arena_printf(e->g->arena, "vt + %lld", (long long)k * w->t * w->c) : "vt";
    if (l->vw == 1)
      buf_printf(&b, "%s(%s)[c] = v%d;", k % a ? " " : "", dst, k);
    else
      buf_printf(&b, "%smemcpy(%s + c, &v%d, sizeof v%d);", k % a ? " " : "", dst, k, k);
    if (k % a == a - 1) {
      emit_line(e, "%s", b.s);
      buf_free(&b);
      b = (Buf){0};
    }
  }
}

static void emit_tile_rows(Emit *e, const WinoGeom *w, double ns) {
  emit_parallel_for(e, w->n * w->th, ns);
  emit_line(e, "for (int r = 0; r < %lld; r++) { /* a row of tiles: image r / %lld, tile row r %% %lld */",
            (long long)(w->n * w->th), (long long)w->th, (long long)w->th);
  e->indent++;
  emit_line(e, "const int n = r / %lld, ty = r %% %lld;", (long long)w->th, (long long)w->th);
  emit_line(e, "for (int tx = 0; tx < %lld; tx++) {", (long long)w->tw);
  e->indent++;
  emit_line(e, "const int t = r * %lld + tx; /* the tile */", (long long)w->tw);
}

static void close_tile_rows(Emit *e) {
  for (int i = 0; i < 2; i++) {
    e->indent--;
    emit_line(e, "}");
  }
}

static void wino_in_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  WinoGeom w;
  char why[WHY], xs[96], vs[96];
  KILN_ASSERT(wino_in_geom(n, &node_in(g, n, 0)->type, &w, why));
  int a = w.f.a, m = w.f.m;
  emit_line(e, "/* Winograd F(%dx%d, 3x3)'s input transform: x %s (channels last) -> v %s, v[i·%d + j][t][c] = "
               "(Bᵀ d B)[i][j], d the %dx%d window of x at tile t's corner (ty·%d - %lld, tx·%d - %lld), 0 outside x */",
            m, m, type_str(&node_in(g, n, 0)->type, xs, sizeof xs), type_str(&node_out(g, n, 0)->type, vs, sizeof vs),
            a, a, a, m, (long long)w.pt, m, (long long)w.pl);
  emit_line(e, "static const float zero_row[%lld]; /* the window outside x */", (long long)w.c);
  emit_line(e, "const float *x = %s;", emit_ref(e, n->in[0]));
  emit_line(e, "float *v = %s;", emit_ref(e, n->out[0]));
  emit_tile_rows(e, &w, 0.5 * (double)(w.t * w.c * a * a));
  emit_line(e, "const float *xn = x + (int64_t)n * %lld, *d[%d]; /* the window's pixels, C channels each */",
            (long long)(w.h * w.w * w.c), a * a);
  emit_line(e, "for (int i = 0; i < %d; i++)", a);
  emit_line(e, "  for (int j = 0; j < %d; j++) {", a);
  emit_line(e, "    const int iy = ty * %d - %lld + i, ix = tx * %d - %lld + j;", m, (long long)w.pt, m, (long long)w.pl);
  emit_line(e, "    d[i * %d + j] = (unsigned)iy < %lldu && (unsigned)ix < %lldu ? xn + (iy * %lld + ix) * %lld : zero_row;",
            a, (long long)w.h, (long long)w.w, (long long)w.w, (long long)w.c);
  emit_line(e, "  }");
  emit_line(e, "float *vt = v + (int64_t)t * %lld; /* position k of the tile at vt + k * %lld */", (long long)w.c,
            (long long)(w.t * w.c));
  emit_lanes(e, w.c, in_body, &w);
  close_tile_rows(e);
}

/* WinogradOut's step: the transform, then per output bias, act,
 * residual and the store; an output past the image's last row or column
 * (the last tiles of an odd size) is skipped. */
static void out_body(Emit *e, const Lane *l, const WinoGeom *w) {
  int a = w->f.a, m = w->f.m;
  emit_loads(e, l, a * a, a, "p", out_src, (void *)w);
  emit_sandwich(e, l, w->f.at, m, a, "p", "u", "s");
  bool vec = l->vw > 1;
  if (w->bias)
    emit_line(e, vec ? "wv bv; memcpy(&bv, bias + c, sizeof bv);" : "const float bv = bias[c];");
  if (w->relu && vec)
    emit_line(e, "const wv zero = {0};");
  for (int i = 0; i < m; i++)
    for (int j = 0; j < m; j++) {
      Buf b = {0};
      int64_t o = (i * w->ow + j) * w->c;
      const char *off = o ? arena_printf(e->g->arena, " + %lld", (long long)o) : "";
      const char *guard = NULL;
      if (i && w->oh % m)
        guard = arena_printf(e->g->arena, "ty * %d + %d < %lld", m, i, (long long)w->oh);
      if (j && w->ow % m)
        guard = arena_printf(e->g->arena, "%s%stx * %d + %d < %lld", guard ? guard : "", guard ? " && " : "", m, j,
                             (long long)w->ow);
      if (guard)
        buf_printf(&b, "if (%s) ", guard);
      buf_printf(&b, "{ %s o = s%d%s;", l->ty, i * m + j, w->bias ? " + bv" : "");
      if (w->relu)
        buf_puts(&b, vec ? " o = (wv)((wi)o & (wi)(o > zero));" : " o = o > 0.0f ? o : 0.0f;");
      if (w->res)
        buf_printf(&b, vec ? " wv r; memcpy(&r, rt%s + c, sizeof r); o += r;" : " o += rt[c%s];", off);
      buf_printf(&b, vec ? " memcpy(yt%s + c, &o, sizeof o); }" : " yt[c%s] = o; }", off);
      emit_line(e, "%s", b.s);
      buf_free(&b);
    }
}

static void wino_out_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  WinoGeom w;
  char why[WHY], ps[96], ys[96];
  KILN_ASSERT(wino_out_geom(n, &node_in(g, n, 0)->type, &w, why));
  int a = w.f.a, m = w.f.m;
  w.bias = node_has_in(n, 1);
  w.relu = !strcmp(attr_str(n, "act", "none"), "relu");
  w.res = node_has_in(n, 2);
  emit_line(e, "/* Winograd F(%dx%d, 3x3)'s output transform: the products p %s -> y %s (channels last), "
               "y[n][(ty·%d + i)·%lld + tx·%d + j][o] = %s(Aᵀ P A)[i][j]%s%s, P[k][l] = p[k·%d + l][t][o] */",
            m, m, type_str(&node_in(g, n, 0)->type, ps, sizeof ps), type_str(&node_out(g, n, 0)->type, ys, sizeof ys),
            m, (long long)w.ow, m, w.relu ? "relu of " : "", w.bias ? " + bias[o]" : "",
            w.res ? ", + the residual r" : "", a);
  emit_line(e, "const float *p = %s;", emit_ref(e, n->in[0]));
  if (w.bias)
    emit_line(e, "const float *bias = %s; /* [%lld] */", emit_ref(e, n->in[1]), (long long)w.c);
  if (w.res)
    emit_line(e, "const float *res = %s; /* [%lld, %lld, %lld] */", emit_ref(e, n->in[2]), (long long)w.n,
              (long long)(w.oh * w.ow), (long long)w.c);
  emit_line(e, "float *y = %s;", emit_ref(e, n->out[0]));
  emit_tile_rows(e, &w, 0.5 * (double)(w.t * w.c * a * a));
  emit_line(e, "const float *pt = p + (int64_t)t * %lld; /* position k of the tile at pt + k * %lld */",
            (long long)w.c, (long long)(w.t * w.c));
  const char *yoff = arena_printf(g->arena, "((int64_t)n * %lld + ty * %lld + tx * %d) * %lld",
                                  (long long)(w.oh * w.ow), (long long)(m * w.ow), m, (long long)w.c);
  emit_line(e, "float *yt = y + %s; /* the tile's first output */", yoff);
  if (w.res)
    emit_line(e, "const float *rt = res + %s;", yoff);
  emit_lanes(e, w.c, out_body, &w);
  close_tile_rows(e);
}

bool winograd_emit(Emit *e, const Node *n) {
  if (n->op == OP_WINOGRADIN)
    wino_in_emit(e, n);
  else
    wino_out_emit(e, n);
  return true;
}
