/* qgemm_kernel.c — products by ggml block-quantized weights (Q8_0, Q4_0,
 * Q4_1; compiler/blockquant.h): Y[M,N] = X[M,K] · Wᵀ (+ bias), W[N,K] kept
 * as its blocks, K/32 blocks of 32 values a row, weight-only (X and Y f32).
 *
 * Layout. None of its own: the kernel reads the blocks where the GGUF file
 * put them (a row of W, i.e. an output column, is one contiguous run of
 * blocks), so the blob holds exactly the file's bytes and an embedding
 * gather of the same table (tied embeddings) reads the same array.
 *
 * Decode (M < QG_BUF_MIN_ROWS: a GEMV, memory-bound). Output columns go in
 * tiles of QG_R rows of W; for each row of X, each step reads one block of
 * each of the QG_R rows and the 32 values of X it multiplies (32/VW
 * vectors, loaded once for the QG_R rows). A block is unpacked in
 * registers: Q8_0's int8 and Q4's nibbles (b & 15 for values 0..15,
 * b >> 4 for 16..31) are widened and converted to f32 vectors
 * (__builtin_convertvector), multiplied by X's vectors and summed into p;
 * then acc += p·d, and for Q4_1 + xs·m, xs being the block's sum of X (the
 * minimum multiplies every value: Σ(d·q + m)·x = d·Σq·x + m·Σx). Scales
 * are f16, converted by kiln_f16_to_f32 (exact). The weight is streamed
 * once; each byte is touched by one load.
 *
 * Prefill (M >= QG_BUF_MIN_ROWS). For each tile of QG_R rows of W, a chunk
 * of K (at most QG_KC values) is dequantized once into a local f32 array
 * (the reference arithmetic, 32 KiB at most) that every row of X then
 * reads, two rows of X by QG_R rows of W in 8 vector accumulators: the
 * dequantization is paid once per M rows.
 *
 * Rounding. The sums are f32 in a different order from the _eval (which
 * sums exactly in double and rounds once), and decode multiplies d after
 * summing a block (d·Σq·x, not Σ(d·q)·x): the tests use the f32 GEMM's
 * tolerance scaled for K (see tests/blockquant).
 *
 * Vector widths. GNU C vectors of 16, 8 and 4 floats, picked when the
 * generated file is compiled as the f32 GEMM's are (vector_views.h): the
 * widest the C compiler targets, or the one -DKILN_GEMM_V16/V8 forces;
 * -DKILN_GEMM_SCALAR (or a compiler without __builtin_convertvector) takes
 * plain C loops over the reference block dequantization. --isa does not
 * change the layout, so it does not change these kernels.
 *
 * Threads. The tiles of W's rows (output columns) are independent: one
 * loop over them, split among the threads by emit_parallel_for; each
 * thread streams its share of the weight; the rows left over (N % QG_R)
 * follow serially. */
#include "qgemm_kernel.h"
#include "vector_views.h"

#include <string.h>

#define QG_R 4               /* rows of W (output columns) a tile */
#define QG_BUF_MIN_ROWS 4    /* M from which a tile is dequantized once into a local array */
#define QG_KC 2048           /* values of K a local array holds: QG_R x 2048 floats = 32 KiB */

typedef struct QGeo {
  int bb, vw;              /* block bytes; floats a vector */
  int64_t nb, rb;          /* blocks a row; bytes a row of W */
  int64_t nt;              /* full tiles of QG_R rows */
  int rem;                 /* rows of W left over */
  int64_t kc, nkc;         /* prefill: K chunks */
  double ns;               /* estimated serial time */
} QGeo;

static const char *ll(Emit *e, int64_t v) { return emit_int(e, v); }

void qgemm_emit_block(Emit *e, BqFormat fmt, const char *b, const char *y) {
  emit_line(e, "const float d = kiln_f16_to_f32((uint16_t)(%s[0] | %s[1] << 8));", b, b);
  switch (fmt) {
  case BQ_Q8_0:
    emit_line(e, "for (int l = 0; l < 32; l++)");
    emit_line(e, "  %s[l] = d * (float)(int8_t)%s[2 + l];", y, b);
    break;
  case BQ_Q4_0:
    emit_line(e, "for (int l = 0; l < 16; l++) {");
    emit_line(e, "  %s[l] = d * (float)((%s[2 + l] & 15) - 8);", y, b);
    emit_line(e, "  %s[l + 16] = d * (float)((%s[2 + l] >> 4) - 8);", y, b);
    emit_line(e, "}");
    break;
  case BQ_Q4_1:
    emit_line(e, "const float mn = kiln_f16_to_f32((uint16_t)(%s[2] | %s[3] << 8));", b, b);
    emit_line(e, "for (int l = 0; l < 16; l++) {");
    emit_line(e, "  const float lo = d * (float)(%s[4 + l] & 15), hi = d * (float)(%s[4 + l] >> 4);", b, b);
    emit_line(e, "  %s[l] = lo + mn;", y);
    emit_line(e, "  %s[l + 16] = hi + mn;", y);
    emit_line(e, "}");
    break;
  default:
    KILN_ASSERT(0);
  }
}

/* The f32 values of one block at q multiplied by X's vectors x0.. and
 * summed into the vector p (decode). */
static void emit_block_dot(Emit *e, BqFormat fmt, int vw) {
  Buf b = {0};
  int nx = 32 / vw;
  if (fmt == BQ_Q8_0) {
    for (int h = 0; h < nx; h++)
      emit_line(e, "v%di8 q%d;", vw, h), emit_line(e, "memcpy(&q%d, q + %d, sizeof q%d);", h, 2 + h * vw, h);
    for (int h = 0; h < nx; h++)
      buf_printf(&b, "%s__builtin_convertvector(q%d, v%df) * x%d", h ? " + " : "", h, vw, h);
  } else {
    int off = fmt == BQ_Q4_1 ? 4 : 2, nh = 16 / vw;
    const char *sub = fmt == BQ_Q4_0 ? " - 8.0f" : "";
    for (int h = 0; h < nh; h++)
      emit_line(e, "v%du8 q%d;", vw, h), emit_line(e, "memcpy(&q%d, q + %d, sizeof q%d);", h, off + h * vw, h);
    for (int h = 0; h < nh; h++)
      buf_printf(&b, "%s(__builtin_convertvector(q%d & 15, v%df)%s) * x%d", h ? " + " : "", h, vw, sub, h);
    for (int h = 0; h < nh; h++)
      buf_printf(&b, " + (__builtin_convertvector(q%d >> 4, v%df)%s) * x%d", h, vw, sub, h + nh);
  }
  emit_line(e, "const v%df p = %s;", vw, b.s);
  buf_free(&b);
}

/* Decode: rows base .. base + nrows - 1 of W by every row of X, the blocks
 * unpacked in registers. */
static void emit_reg_tile(Emit *e, const QGemmSpec *s, const QGeo *g, int nrows, const char *base) {
  int vw = g->vw, nx = 32 / vw;
  for (int r = 0; r < nrows; r++)
    emit_line(e, "const uint8_t *w%d = w + (int64_t)(%s + %d) * %s;", r, base, r, ll(e, g->rb));
  emit_line(e, "for (int i = 0; i < %s; i++) {", ll(e, s->m));
  e->indent++;
  emit_line(e, "const float *x = a + (int64_t)i * %s;", ll(e, s->k));
  for (int r = 0; r < nrows; r++)
    emit_line(e, "v%df acc%d = {0};", vw, r);
  emit_line(e, "for (int c = 0; c < %s; c++) { /* block c of each row */", ll(e, g->nb));
  e->indent++;
  for (int h = 0; h < nx; h++)
    emit_line(e, "v%df x%d;", vw, h), emit_line(e, "memcpy(&x%d, x + c * 32 + %d, sizeof x%d);", h, h * vw, h);
  if (s->fmt == BQ_Q4_1) {
    Buf b = {0};
    for (int h = 0; h < nx; h++)
      buf_printf(&b, "%sx%d", h ? " + " : "", h);
    emit_line(e, "const v%df xs = %s; /* the block's sum of x, for the minimum */", vw, b.s);
    buf_free(&b);
  }
  for (int r = 0; r < nrows; r++) {
    emit_line(e, "{ /* row %d */", r);
    e->indent++;
    emit_line(e, "const uint8_t *q = w%d + c * %d;", r, g->bb);
    emit_line(e, "const float d = kiln_f16_to_f32((uint16_t)(q[0] | q[1] << 8));");
    if (s->fmt == BQ_Q4_1)
      emit_line(e, "const float mn = kiln_f16_to_f32((uint16_t)(q[2] | q[3] << 8));");
    emit_block_dot(e, s->fmt, vw);
    emit_line(e, "acc%d += p * d%s;", r, s->fmt == BQ_Q4_1 ? " + xs * mn" : "");
    e->indent--;
    emit_line(e, "}");
  }
  e->indent--;
  emit_line(e, "}");
  for (int r = 0; r < nrows; r++) {
    emit_line(e, "float s%d = 0;", r);
    emit_line(e, "for (int l = 0; l < %d; l++)", vw);
    emit_line(e, "  s%d += acc%d[l];", r, r);
    emit_line(e, "y[(int64_t)i * %s + %s + %d] = s%d%s;", ll(e, s->n), base, r, r,
              s->bias ? arena_printf(e->g->arena, " + bias[%s + %d]", base, r) : "");
  }
  e->indent--;
  emit_line(e, "}");
}

/* Prefill: mr rows of X from row `i` by the nrows rows of W in wt. */
static void emit_buf_rows(Emit *e, const QGemmSpec *s, const QGeo *g, int nrows, const char *base, int mr) {
  int vw = g->vw;
  for (int mi = 0; mi < mr; mi++) {
    emit_line(e, "const float *x%d = a + (int64_t)(i + %d) * %s + k0;", mi, mi, ll(e, s->k));
    for (int r = 0; r < nrows; r++)
      emit_line(e, "v%df acc%d_%d = {0};", vw, mi, r);
  }
  emit_line(e, "for (int kk = 0; kk < %s; kk += %d) {", ll(e, g->kc), vw);
  e->indent++;
  for (int mi = 0; mi < mr; mi++)
    emit_line(e, "v%df xv%d;", vw, mi), emit_line(e, "memcpy(&xv%d, x%d + kk, sizeof xv%d);", mi, mi, mi);
  for (int r = 0; r < nrows; r++)
    emit_line(e, "const v%df wv%d = *(const v%df *)(wt + %s + kk);", vw, r, vw, ll(e, r * g->kc));
  for (int mi = 0; mi < mr; mi++)
    for (int r = 0; r < nrows; r++)
      emit_line(e, "acc%d_%d += xv%d * wv%d;", mi, r, mi, r);
  e->indent--;
  emit_line(e, "}");
  for (int mi = 0; mi < mr; mi++)
    for (int r = 0; r < nrows; r++) {
      emit_line(e, "{");
      e->indent++;
      emit_line(e, "float sv = 0;");
      emit_line(e, "for (int l = 0; l < %d; l++)", vw);
      emit_line(e, "  sv += acc%d_%d[l];", mi, r);
      emit_line(e, "float *yo = y + (int64_t)(i + %d) * %s + %s + %d;", mi, ll(e, s->n), base, r);
      emit_line(e, "*yo = (k0 ? *yo : %s) + sv;",
                s->bias ? arena_printf(e->g->arena, "bias[%s + %d]", base, r) : "0.0f");
      e->indent--;
      emit_line(e, "}");
    }
}

/* Prefill: rows base .. base + nrows - 1 of W dequantized a K chunk at a
 * time into wt, then read by every row of X. */
static void emit_buf_tile(Emit *e, const QGemmSpec *s, const QGeo *g, int nrows, const char *base) {
  emit_line(e, "float wt[%s] __attribute__((aligned(64))); /* %d rows of W, %s values of K */",
            ll(e, nrows * g->kc), nrows, ll(e, g->kc));
  emit_line(e, "for (int k0 = 0; k0 < %s; k0 += %s) {", ll(e, s->k), ll(e, g->kc));
  e->indent++;
  emit_line(e, "for (int r = 0; r < %d; r++)", nrows);
  emit_line(e, "  for (int c = 0; c < %s; c++) {", ll(e, g->kc / 32));
  e->indent += 2;
  emit_line(e, "const uint8_t *b = w + (int64_t)(%s + r) * %s + (k0 / 32 + c) * %d;", base, ll(e, g->rb), g->bb);
  emit_line(e, "float *wb = wt + r * %s + c * 32;", ll(e, g->kc));
  qgemm_emit_block(e, s->fmt, "b", "wb");
  e->indent -= 2;
  emit_line(e, "  }");
  int64_t m2 = s->m - s->m % 2;
  if (m2 > 0) {
    emit_line(e, "for (int i = 0; i < %s; i += 2) {", ll(e, m2));
    e->indent++;
    emit_buf_rows(e, s, g, nrows, base, 2);
    e->indent--;
    emit_line(e, "}");
  }
  if (s->m % 2) {
    emit_line(e, "{");
    e->indent++;
    emit_line(e, "const int i = %s;", ll(e, s->m - 1));
    emit_buf_rows(e, s, g, nrows, base, 1);
    e->indent--;
    emit_line(e, "}");
  }
  e->indent--;
  emit_line(e, "}");
}

static void emit_tile(Emit *e, const QGemmSpec *s, const QGeo *g, int nrows, const char *base) {
  if (s->m >= QG_BUF_MIN_ROWS)
    emit_buf_tile(e, s, g, nrows, base);
  else
    emit_reg_tile(e, s, g, nrows, base);
}

/* One vector width: the full tiles (split among threads), then the rest. */
static void emit_vector_path(Emit *e, const QGemmSpec *s, QGeo *g, int vw) {
  g->vw = vw;
  emit_line(e, "typedef float v%df __attribute__((vector_size(%d)));", vw, 4 * vw);
  if (s->m < QG_BUF_MIN_ROWS) /* decode reads the quants as byte vectors */
    emit_line(e, "typedef %s v%d%s __attribute__((vector_size(%d)));",
              s->fmt == BQ_Q8_0 ? "signed char" : "unsigned char", vw, s->fmt == BQ_Q8_0 ? "i8" : "u8", vw);
  if (g->nt > 0) {
    emit_parallel_for(e, g->nt, g->ns);
    emit_line(e, "for (int t = 0; t < %s; t++) { /* rows %d t .. %d t + %d of W */", ll(e, g->nt), QG_R, QG_R,
              QG_R - 1);
    e->indent++;
    emit_tile(e, s, g, QG_R, arena_printf(e->g->arena, "t * %d", QG_R));
    e->indent--;
    emit_line(e, "}");
  }
  if (g->rem > 0) {
    emit_line(e, "{ /* the last %d rows of W */", g->rem);
    e->indent++;
    emit_tile(e, s, g, g->rem, ll(e, g->nt * QG_R));
    e->indent--;
    emit_line(e, "}");
  }
}

/* Plain C: each block dequantized as the reference does, then a dot. */
static void emit_scalar_path(Emit *e, const QGemmSpec *s, const QGeo *g) {
  emit_line(e, "for (int j = 0; j < %s; j++)", ll(e, s->n));
  emit_line(e, "  for (int i = 0; i < %s; i++) {", ll(e, s->m));
  e->indent += 2;
  emit_line(e, "float sv = 0;");
  emit_line(e, "for (int c = 0; c < %s; c++) {", ll(e, g->nb));
  e->indent++;
  emit_line(e, "const uint8_t *b = w + (int64_t)j * %s + c * %d;", ll(e, g->rb), g->bb);
  emit_line(e, "float wb[32];");
  qgemm_emit_block(e, s->fmt, "b", "wb");
  emit_line(e, "for (int l = 0; l < 32; l++)");
  emit_line(e, "  sv += a[(int64_t)i * %s + c * 32 + l] * wb[l];", ll(e, s->k));
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "y[(int64_t)i * %s + j] = sv%s;", ll(e, s->n), s->bias ? " + bias[j]" : "");
  e->indent -= 2;
  emit_line(e, "  }");
}

bool emit_qgemm(Emit *e, const QGemmSpec *s) {
  if (s->m < 0 || s->n < 0 || s->k < 0 || s->k % BQ_BLOCK_VALUES)
    return false;
  if (s->m == 0 || s->n == 0)
    return true;
  QGeo g = {.bb = bq_formats[s->fmt].block_bytes, .nb = s->k / BQ_BLOCK_VALUES, .nt = s->n / QG_R,
            .rem = (int)(s->n % QG_R)};
  g.rb = g.nb * g.bb;
  g.kc = s->k <= QG_KC ? s->k : QG_KC;
  while (g.kc > 0 && s->k % g.kc) /* equal chunks, a multiple of 32 */
    g.kc -= BQ_BLOCK_VALUES;
  g.nkc = g.kc ? s->k / g.kc : 0;
  /* about 10 GB/s of weight or 20 GFLOP/s, whichever is slower */
  double wbytes = (double)s->n * (double)g.rb, flops = 2.0 * (double)s->m * (double)s->n * (double)s->k;
  g.ns = wbytes / 10 > flops / 20 ? wbytes / 10 : flops / 20;
  const char *wn = s->w_name ? arena_printf(e->g->arena, " '%s'", s->w_name) : "";
  emit_line(e, "{ /* Y[%lld,%lld] = X[%lld,%lld] x W%s^T%s, W [%lld,%lld] as %s blocks (%d bytes a 32 values) */",
            (long long)s->m, (long long)s->n, (long long)s->m, (long long)s->k, wn, s->bias ? " + bias" : "",
            (long long)s->n, (long long)s->k, bq_formats[s->fmt].name, g.bb);
  e->indent++;
  emit_line(e, "const float *a = %s; /* [%lld,%lld] */", s->a, (long long)s->m, (long long)s->k);
  emit_line(e, "const uint8_t *w = %s; /* [%lld,%lld]: row j of W is %lld blocks */", s->w, (long long)s->n,
            (long long)g.rb, (long long)g.nb);
  if (s->bias)
    emit_line(e, "const float *bias = %s; /* [%lld] */", s->bias, (long long)s->n);
  emit_line(e, "float *y = %s; /* [%lld,%lld] */", s->y, (long long)s->m, (long long)s->n);
  if (s->k == 0) {
    emit_line(e, "for (int i = 0; i < %lld; i++)", (long long)(s->m * s->n));
    emit_line(e, "  y[i] = %s;", s->bias ? arena_printf(e->g->arena, "bias[i %% %lld]", (long long)s->n) : "0.0f");
  } else {
    const char *gnu = "defined(__GNUC__) && !defined(KILN_GEMM_SCALAR) && (defined(__clang__) || __GNUC__ >= 9)";
    for (int i = 0; i < KILN_COUNT(views); i++) {
      const View *v = &views[i];
      if (v->cpp)
        emit_line(e, "#%s %s && (defined(%s) || defined(%s))", i ? "elif" : "if", gnu, v->cpp, v->force);
      else
        emit_line(e, "#elif %s", gnu);
      emit_line(e, "/* %d-wide vectors: %s */", v->vw,
                s->m >= QG_BUF_MIN_ROWS ? "tiles of W dequantized once, read by every row of X"
                                        : "blocks unpacked in registers");
      emit_vector_path(e, s, &g, v->vw);
    }
    emit_line(e, "#else");
    emit_scalar_path(e, s, &g);
    emit_line(e, "#endif");
  }
  e->indent--;
  emit_line(e, "}");
  return true;
}
