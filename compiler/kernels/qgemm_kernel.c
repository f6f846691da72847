/* qgemm_kernel.c — products by ggml block-quantized weights (Q8_0, Q4_0,
 * Q4_1, Q5_0, Q5_1 and the K-quants Q4_K, Q5_K, Q6_K, Q8_K;
 * compiler/ir/blockquant.h): Y[M,N] = X[M,K] · Wᵀ (+ bias), W[N,K] kept as
 * its blocks, K/bv blocks of bv values a row (bv 32, or 256 for the
 * K-quants' super-blocks), weight-only (X and Y f32).
 *
 * Layout. None of its own: the kernel reads the blocks where the GGUF file
 * put them (a row of W, i.e. an output column, is one contiguous run of
 * blocks), so the blob holds exactly the file's bytes and an embedding
 * gather of the same table (tied embeddings) reads the same array.
 *
 * Decode (M < QG_PREFILL_MIN_ROWS: a GEMV, memory-bound). Output columns go in
 * tiles of QG_R rows of W; for each row of X, each step reads one block of
 * each of the QG_R rows and the 32 values of X it multiplies (32/VW
 * vectors, loaded once for the QG_R rows). A block is unpacked in
 * registers: Q8_0's int8 and Q4's nibbles (b & 15 for values 0..15,
 * b >> 4 for 16..31) are widened to int vectors straight from memory
 * ("(v8i){q[0], .., q[7]}": one vpmovzxbd/vpmovsxbd; gcc 12 scalarises a
 * conversion of a byte vector), converted to f32, multiplied by X's
 * vectors and summed into p; then acc += p·d, and for Q4_1 + xs·m, xs being
 * the block's sum of X (the minimum multiplies every value: Σ(d·q + m)·x
 * = d·Σq·x + m·Σx). The f16 scales go through kiln_f16_to_f32_fast (one
 * vcvtph2ps with F16C, else a branch-free exact bit trick: with the
 * branchy kiln_f16_to_f32 they cost a third of the time). The weight is
 * streamed once.
 *
 * Prefill (M >= QG_PREFILL_MIN_ROWS). A panel of NR = 2 vectors of W's rows is
 * dequantized once per K chunk (32 KiB at most) into a local K-major
 * array, each block in vectors and then scattered into its column, and
 * every row of X runs over it in the f32 GEMM's register tiles (MR rows x
 * 2 vectors of accumulators, X broadcast): the dequantization is paid once
 * for all M rows.
 *
 * Rounding. The sums are f32 in a different order from the _eval (which
 * sums exactly in double and rounds once), decode multiplies d after
 * summing a block (d·Σq·x, not Σ(d·q)·x), and a compiler may contract
 * Q4_1's d·q + m: tests/tests.cmake's tolerance says how much that is.
 *
 * Speed (one core of the 2-core AVX2 EPYC this was written on, thread CPU
 * time; bench/blockquant_gemv.sh): decode Q4_1 576 -> 1536 0.08-0.09 ms
 * where the f32 GEMV takes 0.12, Q8_0 576 -> 49152 (30 MB, out of cache)
 * 2.6 ms where f32 (113 MB) takes 8.5; 64 rows of Q4_1 576 -> 1536
 * 2.0-2.5 ms where the f32 GEMM takes 1.5.
 *
 * Vector widths. GNU C vectors of 16, 8 and 4 floats, written as the f32
 * GEMM's are (vector_views.h): --isa=avx512 the 16-wide body, avx2 the
 * 8-wide, each after the plain C; portable all three, the widest the C
 * compiler targets (or the one -DKILN_GEMM_V16/V8 forces) picked when the
 * file is compiled. The plain C loops over the reference block
 * dequantization run under -DKILN_GEMM_SCALAR, a compiler without
 * __builtin_convertvector, or one not targeting avx2/avx512's width.
 * --isa does not change the layout or the arithmetic of a width. gcc
 * tuned for recent Intel CPUs would split the 16-wide vectors (256-bit
 * preference, 3-9x slower): the generated file asks for 512 (emit_file.c,
 * DESIGN.md "Vector width under gcc").
 *
 * K-quants (decode). A super-block a step; its scales unpacked in vectors
 * once per row of W (emit_k_scales) and read back as scalars by the fmas;
 * Q4_K/Q5_K's minima as Σ_j (dmin·mn_j)·xs_j against the sub-blocks' sums
 * of X, computed once per call (kxs).
 *
 * K-quants (prefill). A super-block at a time dequantized in vectors into
 * the panel's block buffer (emit_k_block_store: the sub-blocks' scales as
 * the reference's scalars, the quants unpacked as in decode), then
 * scattered into its column like the 32-value blocks. The reference's
 * scalar loop (qgemm_emit_block) took 3x as long on Gemma 3's Q6_K
 * 64 x 640 x 2048 product, twice as long on its Q4_K ones.
 *
 * Threads. The tiles of W's rows (output columns) are independent: one
 * loop over them, split among the threads by emit_parallel_for; each
 * thread streams its share of the weight; the rows left over (N % QG_R)
 * follow serially. */
#include "qgemm_kernel.h"
#include "vector_views.h"

#include <string.h>

#define QG_R 4                /* decode: rows of W (output columns) a tile */
#define QG_PREFILL_MIN_ROWS QG_ACT_Q8_MAX_ROWS /* M from which panels of W are dequantized once into a local array */
#define QG_PREFETCH_TILES 2   /* decode: how many tiles ahead the weight is prefetched */

typedef struct QGeo {
  int bb, vw;              /* block bytes; floats a vector */
  int64_t nb, rb;          /* blocks a row; bytes a row of W */
  int64_t nt;              /* full tiles of QG_R rows */
  int rem;                 /* rows of W left over */
  double ns;               /* estimated serial time */
} QGeo;

static const char *ll(Emit *e, int64_t v) { return emit_int(e, v); }

/* The bound of a loop over X's rows: M, or the run-time m_run. */
static const char *rows_bound(Emit *e, const QGemmSpec *s) { return s->rows ? "m_run" : ll(e, s->m); }

void qgemm_emit_block(Emit *e, BqFormat fmt, const char *b, const char *y) {
  switch (fmt) {
  case BQ_Q8_0:
    emit_line(e, "const float d = kiln_f16_to_f32((uint16_t)(%s[0] | %s[1] << 8));", b, b);
    emit_line(e, "for (int l = 0; l < 32; l++)");
    emit_line(e, "  %s[l] = d * (float)(int8_t)%s[2 + l];", y, b);
    break;
  case BQ_Q4_0:
    emit_line(e, "const float d = kiln_f16_to_f32((uint16_t)(%s[0] | %s[1] << 8));", b, b);
    emit_line(e, "for (int l = 0; l < 16; l++) {");
    emit_line(e, "  %s[l] = d * (float)((%s[2 + l] & 15) - 8);", y, b);
    emit_line(e, "  %s[l + 16] = d * (float)((%s[2 + l] >> 4) - 8);", y, b);
    emit_line(e, "}");
    break;
  case BQ_Q4_1:
    emit_line(e, "const float d = kiln_f16_to_f32((uint16_t)(%s[0] | %s[1] << 8));", b, b);
    emit_line(e, "const float mn = kiln_f16_to_f32((uint16_t)(%s[2] | %s[3] << 8));", b, b);
    emit_line(e, "for (int l = 0; l < 16; l++) {");
    emit_line(e, "  const float lo = d * (float)(%s[4 + l] & 15), hi = d * (float)(%s[4 + l] >> 4);", b, b);
    emit_line(e, "  %s[l] = lo + mn;", y);
    emit_line(e, "  %s[l + 16] = hi + mn;", y);
    emit_line(e, "}");
    break;
  case BQ_Q5_0:
  case BQ_Q5_1: { /* Q4's nibbles with a fifth bit each from the 32 bits qh */
    bool m1 = fmt == BQ_Q5_1;
    int o = m1 ? 4 : 2;
    emit_line(e, "const float d = kiln_f16_to_f32((uint16_t)(%s[0] | %s[1] << 8));", b, b);
    if (m1)
      emit_line(e, "const float mn = kiln_f16_to_f32((uint16_t)(%s[2] | %s[3] << 8));", b, b);
    emit_line(e, "const uint32_t qh = (uint32_t)%s[%d] | (uint32_t)%s[%d] << 8 | (uint32_t)%s[%d] << 16 | "
                 "(uint32_t)%s[%d] << 24;", b, o, b, o + 1, b, o + 2, b, o + 3);
    emit_line(e, "for (int l = 0; l < 16; l++) {");
    emit_line(e, "  const int lo = (%s[%d + l] & 15) | (int)(qh >> l & 1) << 4;", b, o + 4);
    emit_line(e, "  const int hi = (%s[%d + l] >> 4) | (int)(qh >> (l + 16) & 1) << 4;", b, o + 4);
    if (m1) {
      emit_line(e, "  const float pl = d * (float)lo, ph = d * (float)hi;");
      emit_line(e, "  %s[l] = pl + mn;", y);
      emit_line(e, "  %s[l + 16] = ph + mn;", y);
    } else {
      emit_line(e, "  %s[l] = d * (float)(lo - 16);", y);
      emit_line(e, "  %s[l + 16] = d * (float)(hi - 16);", y);
    }
    emit_line(e, "}");
    break;
  }
  case BQ_Q4_K:
  case BQ_Q5_K: /* 8 sub-blocks of 32: (d·sc)·q − dmin·mn, 6-bit sc and mn packed in bytes 4..15 */
    emit_line(e, "const float d = kiln_f16_to_f32((uint16_t)(%s[0] | %s[1] << 8));", b, b);
    emit_line(e, "const float dmin = kiln_f16_to_f32((uint16_t)(%s[2] | %s[3] << 8));", b, b);
    emit_line(e, "for (int sb = 0; sb < 8; sb++) {");
    e->indent++;
    emit_line(e, "const uint8_t *kp = %s + 4, *qp = %s + %d + 32 * (sb / 2);", b, b, fmt == BQ_Q5_K ? 48 : 16);
    emit_line(e, "const int sc = sb < 4 ? kp[sb] & 63 : (kp[sb + 4] & 15) | (kp[sb - 4] >> 6) << 4;");
    emit_line(e, "const int mn = sb < 4 ? kp[sb + 4] & 63 : (kp[sb + 4] >> 4) | (kp[sb] >> 6) << 4;");
    emit_line(e, "const float d1 = d * (float)sc, m1 = dmin * (float)mn;");
    emit_line(e, "for (int l = 0; l < 32; l++)");
    emit_line(e, "  %s[32 * sb + l] = d1 * (float)((sb & 1 ? qp[l] >> 4 : qp[l] & 15)%s) - m1;", y,
              fmt == BQ_Q5_K ? arena_printf(e->g->arena, " | (%s[16 + l] >> sb & 1) << 4", b) : "");
    e->indent--;
    emit_line(e, "}");
    break;
  case BQ_Q6_K: /* 16 sub-blocks of 16: (d·scales[v/16])·q, q 6 bits (ql's nibble, qh's 2 bits) − 32 */
    emit_line(e, "const float d = kiln_f16_to_f32((uint16_t)(%s[208] | %s[209] << 8));", b, b);
    emit_line(e, "for (int v = 0; v < 256; v++) {");
    e->indent++;
    emit_line(e, "const int hv = v >> 7, kv = v >> 5 & 3, lv = v & 31, lov = %s[64 * hv + 32 * (kv & 1) + lv];", b);
    emit_line(e, "const int qv = ((kv < 2 ? lov & 15 : lov >> 4) | (%s[128 + 32 * hv + lv] >> 2 * kv & 3) << 4) - 32;",
              b);
    emit_line(e, "const float d1 = d * (float)(int8_t)%s[192 + v / 16];", b);
    emit_line(e, "%s[v] = d1 * (float)qv;", y);
    e->indent--;
    emit_line(e, "}");
    break;
  case BQ_Q8_K: /* an f32 d, 256 int8 (and 16 sums not read) */
    emit_line(e, "float d;");
    emit_line(e, "memcpy(&d, %s, sizeof d);", b);
    emit_line(e, "for (int l = 0; l < 256; l++)");
    emit_line(e, "  %s[l] = d * (float)(int8_t)%s[4 + l];", y, b);
    break;
  default:
    KILN_ASSERT(0);
  }
}

/* vw bytes at p + off as an int vector: "(v8i){p[off], .., p[off + 7]}",
 * which gcc and clang compile to one vpmovzxbd (vpmovsxbd through an
 * int8_t pointer); gcc 12 scalarises a conversion of a byte vector. */
static const char *bytes_expr(Emit *e, int vw, const char *p, int off) {
  Buf b = {0};
  buf_printf(&b, "(v%di){", vw);
  for (int l = 0; l < vw; l++)
    buf_printf(&b, "%s%s[%d]", l ? ", " : "", p, off + l);
  buf_puts(&b, "}");
  const char *r = arena_strdup(e->g->arena, b.s);
  buf_free(&b);
  return r;
}

/* Q4_0/Q4_1/Q5_0/Q5_1's byte offset of qs. */
static int qs_offset(BqFormat fmt) { return fmt == BQ_Q4_0 ? 2 : fmt == BQ_Q4_1 ? 4 : fmt == BQ_Q5_0 ? 6 : 8; }

/* A Q4/Q5 block at q (32 values, the nibbles of 16 bytes): declares the
 * int vectors q0.. of its bytes (and Q5's fifth bits h5_0.., bit 4 of each lane) and
 * sets lo[h], hi[h] to the expressions of the quants of values h·vw.. and
 * 16 + h·vw.. (minus 8 or 16 for Q4_0 and Q5_0). */
static void emit_nibbles(Emit *e, BqFormat fmt, int vw, const char **lo, const char **hi) {
  int off = qs_offset(fmt);
  const char *sub = fmt == BQ_Q4_0 ? " - 8" : fmt == BQ_Q5_0 ? " - 16" : "";
  if (bq_is_q5(fmt)) {
    int o = off - 4;
    emit_line(e, "const uint32_t qh = (uint32_t)q[%d] | (uint32_t)q[%d] << 8 | (uint32_t)q[%d] << 16 | "
                 "(uint32_t)q[%d] << 24;", o, o + 1, o + 2, o + 3);
    emit_line(e, "const v%du qhv = (v%du){0} + qh;", vw, vw);
    for (int h = 0; h < 32 / vw; h++) { /* bit j of qh to bit 4 of lane j - h·vw: to the top, then down 27 (bits
                                            j - 4 .. j - 1 land below it: masked off where it is used) */
      Buf b = {0};
      for (int l = 0; l < vw; l++)
        buf_printf(&b, "%s%d", l ? ", " : "", 31 - h * vw - l);
      emit_line(e, "const v%di h5_%d = (v%di)((qhv << (v%du){%s}) >> 27);", vw, h, vw, vw, b.s);
      buf_free(&b);
    }
  }
  for (int h = 0; h < 16 / vw; h++) {
    emit_line(e, "const v%di q%d = %s;", vw, h, bytes_expr(e, vw, "q", off + h * vw));
    if (bq_is_q5(fmt)) {
      lo[h] = arena_printf(e->g->arena, "(((q%d & 15) | (h5_%d & 16))%s)", h, h, sub);
      hi[h] = arena_printf(e->g->arena, "(((q%d >> 4) | (h5_%d & 16))%s)", h, h + 16 / vw, sub);
    } else {
      lo[h] = arena_printf(e->g->arena, "((q%d & 15)%s)", h, sub);
      hi[h] = arena_printf(e->g->arena, "((q%d >> 4)%s)", h, sub);
    }
  }
}

/* The f32 values of one block at q multiplied by X's vectors x0.. and
 * summed into the vector p (decode). */
static void emit_block_dot(Emit *e, BqFormat fmt, int vw) {
  Buf b = {0};
  int nx = 32 / vw;
  if (fmt == BQ_Q8_0) {
    emit_line(e, "const int8_t *qi = (const int8_t *)q;");
    for (int h = 0; h < nx; h++)
      buf_printf(&b, "%s__builtin_convertvector(%s, v%df) * x%d", h ? " + " : "", bytes_expr(e, vw, "qi", 2 + h * vw),
                 vw, h);
  } else {
    int nh = 16 / vw;
    const char *lo[16], *hi[16];
    emit_nibbles(e, fmt, vw, lo, hi);
    for (int h = 0; h < nh; h++)
      buf_printf(&b, "%s__builtin_convertvector(%s, v%df) * x%d", h ? " + " : "", lo[h], vw, h);
    for (int h = 0; h < nh; h++)
      buf_printf(&b, " + __builtin_convertvector(%s, v%df) * x%d", hi[h], vw, h + nh);
  }
  emit_line(e, "const v%df p = %s;", vw, b.s);
  buf_free(&b);
}

/* The block at q dequantized into the 32 floats at wb (64-byte aligned),
 * in vectors: prefill's tile. d·q (+ m) as the reference, though a C
 * compiler may contract Q4_1's and Q5_1's into an fma. */
static void emit_block_store(Emit *e, BqFormat fmt, int vw) {
  emit_line(e, "const float d = kiln_f16_to_f32_fast((uint16_t)(q[0] | q[1] << 8));");
  if (fmt == BQ_Q8_0) {
    emit_line(e, "const int8_t *qi = (const int8_t *)q;");
    for (int h = 0; h < 32 / vw; h++)
      emit_line(e, "*(v%df *)(wb + %d) = __builtin_convertvector(%s, v%df) * d;", vw, h * vw,
                bytes_expr(e, vw, "qi", 2 + h * vw), vw);
    return;
  }
  const char *add = bq_has_min(fmt) ? " + mn" : "", *lo[16], *hi[16];
  if (bq_has_min(fmt))
    emit_line(e, "const float mn = kiln_f16_to_f32_fast((uint16_t)(q[2] | q[3] << 8));");
  emit_nibbles(e, fmt, vw, lo, hi);
  for (int h = 0; h < 16 / vw; h++) {
    emit_line(e, "*(v%df *)(wb + %d) = __builtin_convertvector(%s, v%df) * d%s;", vw, h * vw, lo[h], vw, add);
    emit_line(e, "*(v%df *)(wb + %d) = __builtin_convertvector(%s, v%df) * d%s;", vw, 16 + h * vw, hi[h], vw, add);
  }
}

/* The K-quant super-block at q dequantized into the 256 floats at wb
 * (64-byte aligned), in vectors: prefill's panel. Each sub-block's scale
 * (and minimum) as the reference computes it, d1 = d·sc (m1 = dmin·mn),
 * then d1·q − m1 a vector at a time (a C compiler may contract it into an
 * fma). The quants are unpacked as in decode (emit_k_super_block). */
static void emit_k_block_store(Emit *e, BqFormat f, int vw) {
  if (f == BQ_Q8_K) {
    emit_line(e, "float d;");
    emit_line(e, "memcpy(&d, q, sizeof d);");
    emit_line(e, "const int8_t *qi = (const int8_t *)q + 4;");
    for (int h = 0; h < 256 / vw; h++)
      emit_line(e, "*(v%df *)(wb + %d) = __builtin_convertvector(%s, v%df) * d;", vw, h * vw,
                bytes_expr(e, vw, "qi", h * vw), vw);
    return;
  }
  if (f == BQ_Q6_K) { /* value v = 128 hh + 32 k + l: ql's nibble (byte 64 hh + 32 (k & 1) + l, high for k >= 2),
                         qh's bits 2k, 2k + 1 (byte 128 + 32 hh + l), scale byte 192 + v / 16 */
    emit_line(e, "const float d = kiln_f16_to_f32_fast((uint16_t)(q[208] | q[209] << 8));");
    for (int hh = 0; hh < 2; hh++)
      for (int h = 0; h < 32 / vw; h++) {
        emit_line(e, "{");
        e->indent++;
        emit_line(e, "const v%di c = %s;", vw, bytes_expr(e, vw, "q", 128 + 32 * hh + h * vw));
        for (int kk = 0; kk < 2; kk++)
          emit_line(e, "const v%di l%d = %s;", vw, kk, bytes_expr(e, vw, "q", 64 * hh + 32 * kk + h * vw));
        for (int k = 0; k < 4; k++) {
          int v = 128 * hh + 32 * k + h * vw;
          emit_line(e, "*(v%df *)(wb + %d) = __builtin_convertvector(((l%d %s) | (c >> %d & 3) << 4) - 32, v%df) * "
                       "(d * (float)(int8_t)q[%d]);",
                    vw, v, k & 1, k < 2 ? "& 15" : ">> 4", 2 * k, vw, 192 + v / 16);
        }
        e->indent--;
        emit_line(e, "}");
      }
    return;
  }
  /* Q4_K / Q5_K: sub-blocks 2jp (low nibbles) and 2jp + 1 (high) share qs's 32 bytes at 16 (Q5_K 48) + 32 jp;
   * Q5_K's fifth bit of sub-block j is bit j of qh's byte 16 + l */
  emit_line(e, "const float d = kiln_f16_to_f32_fast((uint16_t)(q[0] | q[1] << 8));");
  emit_line(e, "const float dmin = kiln_f16_to_f32_fast((uint16_t)(q[2] | q[3] << 8));");
  emit_line(e, "const uint8_t *kp = q + 4;");
  emit_line(e, "float d1[8], m1[8];");
  emit_line(e, "for (int sb = 0; sb < 8; sb++) {");
  emit_line(e, "  const int sc = sb < 4 ? kp[sb] & 63 : (kp[sb + 4] & 15) | (kp[sb - 4] >> 6) << 4;");
  emit_line(e, "  const int mn = sb < 4 ? kp[sb + 4] & 63 : (kp[sb + 4] >> 4) | (kp[sb] >> 6) << 4;");
  emit_line(e, "  d1[sb] = d * (float)sc, m1[sb] = dmin * (float)mn;");
  emit_line(e, "}");
  bool q5 = f == BQ_Q5_K;
  for (int jp = 0; jp < 4; jp++)
    for (int h = 0; h < 32 / vw; h++) {
      int j0 = 2 * jp, j1 = j0 + 1;
      emit_line(e, "{");
      e->indent++;
      emit_line(e, "const v%di b = %s;", vw, bytes_expr(e, vw, "q", (q5 ? 48 : 16) + 32 * jp + h * vw));
      if (q5)
        emit_line(e, "const v%di c = %s;", vw, bytes_expr(e, vw, "q", 16 + h * vw));
      emit_line(e, "*(v%df *)(wb + %d) = __builtin_convertvector((b & 15)%s, v%df) * d1[%d] - m1[%d];", vw,
                32 * j0 + h * vw, q5 ? arena_printf(e->g->arena, " | (c >> %d & 1) << 4", j0) : "", vw, j0, j0);
      emit_line(e, "*(v%df *)(wb + %d) = __builtin_convertvector((b >> 4)%s, v%df) * d1[%d] - m1[%d];", vw,
                32 * j1 + h * vw, q5 ? arena_printf(e->g->arena, " | (c >> %d & 1) << 4", j1) : "", vw, j1, j1);
      e->indent--;
      emit_line(e, "}");
    }
}

/* "x" vectors of X's n floats at xc + off: xN0.. (n/vw of them), and their
 * sum into the vector `sum` when it is not NULL. */
static void emit_x_vectors(Emit *e, int vw, const char *nm, int off, int n, const char *sum) {
  Buf b = {0};
  for (int h = 0; h < n / vw; h++) {
    emit_line(e, "v%df %s%d;", vw, nm, h);
    emit_line(e, "memcpy(&%s%d, xc + %d, sizeof %s%d);", nm, h, off + h * vw, nm, h);
    buf_printf(&b, "%s%s%d", h ? " + " : "", nm, h);
  }
  if (sum)
    emit_line(e, "const v%df %s = %s;", vw, sum, b.s);
  buf_free(&b);
}

/* Σ convert(u[h]) · x[h] over n/vw vectors, as an expression. */
static const char *dot_expr(Emit *e, int vw, const char *u, const char *x, int nv) {
  Buf b = {0};
  for (int h = 0; h < nv; h++)
    buf_printf(&b, "%s__builtin_convertvector(%s%d, v%df) * %s%d", h ? " + " : "", u, h, vw, x, h);
  const char *r = arena_strdup(e->g->arena, b.s);
  buf_free(&b);
  return r;
}

/* One super-block (at q0.. for each row, its scales d0.. and m0..) by
 * X's 256 values at xc, into acc0..: the sub-blocks that share their
 * bytes together, all unrolled here so that the scales' byte offsets and
 * the shifts are constants. Q4_K/Q5_K: the 32 bytes of qs hold sub-blocks
 * 2jp (low nibbles) and 2jp + 1 (high), read once for both; Q6_K: the 16
 * bytes of qh at (hh, lh) hold the top bits of sub-blocks 8hh + 2k + lh
 * (k 0..3), ql's at (hh, kk, lh) the low ones of k = kk and kk + 2. */
static void emit_k_super_block(Emit *e, BqFormat f, int vw, int nrows) {
  if (f == BQ_Q4_K || f == BQ_Q5_K) {
    int nv = 32 / vw;
    for (int jp = 0; jp < 4; jp++) {
      int j0 = 2 * jp, j1 = j0 + 1;
      emit_line(e, "{ /* sub-blocks %d and %d */", j0, j1);
      e->indent++;
      emit_x_vectors(e, vw, "xa", 64 * jp, 32, NULL);
      emit_x_vectors(e, vw, "xb", 64 * jp + 32, 32, NULL);
      for (int r = 0; r < nrows; r++) {
        emit_line(e, "{ /* row %d */", r);
        e->indent++;
        emit_line(e, "const uint8_t *qq = q%d + %d;", r, (f == BQ_Q5_K ? 48 : 16) + 32 * jp);
        if (f == BQ_Q5_K)
          emit_line(e, "const uint8_t *qh = q%d + 16;", r);
        for (int h = 0; h < nv; h++) {
          emit_line(e, "const v%di b%d = %s;", vw, h, bytes_expr(e, vw, "qq", h * vw));
          if (f == BQ_Q5_K) {
            emit_line(e, "const v%di c%d = %s;", vw, h, bytes_expr(e, vw, "qh", h * vw));
            emit_line(e, "const v%di ua%d = (b%d & 15) | (c%d >> %d & 1) << 4, ub%d = (b%d >> 4) | (c%d >> %d & 1) << 4;",
                      vw, h, h, h, j0, h, h, h, j1);
          } else {
            emit_line(e, "const v%di ua%d = b%d & 15, ub%d = b%d >> 4;", vw, h, h, h, h);
          }
        }
        emit_line(e, "acc%d += (%s) * sc%d[%d];", r, dot_expr(e, vw, "ua", "xa", nv), r, j0);
        emit_line(e, "acb%d += (%s) * sc%d[%d];", r, dot_expr(e, vw, "ub", "xb", nv), r, j1);
        e->indent--;
        emit_line(e, "}");
      }
      e->indent--;
      emit_line(e, "}");
    }
  } else if (f == BQ_Q6_K) {
    int nv = 16 / vw;
    for (int hh = 0; hh < 2; hh++)
      for (int lh = 0; lh < 2; lh++) {
        emit_line(e, "{ /* sub-blocks %d, %d, %d, %d */", 8 * hh + lh, 8 * hh + 2 + lh, 8 * hh + 4 + lh, 8 * hh + 6 + lh);
        e->indent++;
        for (int k = 0; k < 4; k++) {
          char nm[8];
          snprintf(nm, sizeof nm, "x%d_", k);
          emit_x_vectors(e, vw, nm, 16 * (8 * hh + 2 * k + lh), 16, NULL);
        }
        for (int r = 0; r < nrows; r++) {
          emit_line(e, "{ /* row %d */", r);
          e->indent++;
          emit_line(e, "const uint8_t *qh = q%d + %d;", r, 128 + 32 * hh + 16 * lh);
          for (int kk = 0; kk < 2; kk++)
            emit_line(e, "const uint8_t *ql%d = q%d + %d;", kk, r, 64 * hh + 32 * kk + 16 * lh);
          for (int h = 0; h < nv; h++) {
            emit_line(e, "const v%di c%d = %s;", vw, h, bytes_expr(e, vw, "qh", h * vw));
            for (int kk = 0; kk < 2; kk++) {
              emit_line(e, "const v%di l%d_%d = %s;", vw, kk, h, bytes_expr(e, vw, arena_printf(e->g->arena, "ql%d", kk), h * vw));
              /* ql's nibble and qh's two bits (2k, 2k + 1) as bits 4 and 5; the
               * offset 32 is taken off in the sum (emit_k_scales) */
              emit_line(e, "const v%di u%d_%d = (l%d_%d & 15) | (c%d << %d & 48);", vw, kk, h, kk, h, h, 4 - 2 * kk);
              emit_line(e, "const v%di u%d_%d = (l%d_%d >> 4) | (c%d%s & 48);", vw, kk + 2, h, kk, h, h,
                        kk ? " >> 2" : "");
            }
          }
          for (int k = 0; k < 4; k++) {
            emit_line(e, "%s%d += (%s) * sc%d[%d];", k & 1 ? "acb" : "acc", r,
                      dot_expr(e, vw, arena_printf(e->g->arena, "u%d_", k), arena_printf(e->g->arena, "x%d_", k), nv),
                      r, 8 * hh + 2 * k + lh);
          }
          e->indent--;
          emit_line(e, "}");
        }
        e->indent--;
        emit_line(e, "}");
      }
  } else { /* Q8_K */
    int nv = 32 / vw;
    for (int j = 0; j < 8; j++) {
      emit_line(e, "{ /* sub-block %d */", j);
      e->indent++;
      emit_x_vectors(e, vw, "xa", 32 * j, 32, NULL);
      for (int r = 0; r < nrows; r++) {
        emit_line(e, "{ /* row %d */", r);
        e->indent++;
        emit_line(e, "const int8_t *qi = (const int8_t *)q%d + %d;", r, 4 + 32 * j);
        for (int h = 0; h < nv; h++)
          emit_line(e, "const v%di ua%d = %s;", vw, h, bytes_expr(e, vw, "qi", h * vw));
        emit_line(e, "acc%d += (%s) * d%d;", r, dot_expr(e, vw, "ua", "xa", nv), r);
        e->indent--;
        emit_line(e, "}");
      }
      e->indent--;
      emit_line(e, "}");
    }
  }
}

/* "(kq8i){p<r>[off], .., p<r>[off + 7]}": one vpmovzxbd (vpmovsxbd when
 * p is int8_t), as bytes_expr */
static const char *bytes8(Emit *e, const char *p, int r, int off) {
  Buf b = {0};
  buf_puts(&b, "(kq8i){");
  for (int l = 0; l < 8; l++)
    buf_printf(&b, "%s%s%d[%d]", l ? ", " : "", p, r, off + l);
  buf_puts(&b, "}");
  const char *res = arena_strdup(e->g->arena, b.s);
  buf_free(&b);
  return res;
}

/* Row r's scales of the super-block at q<r> as floats, sc<r>[j] = d·sc_j
 * (the reference's d1), unpacked in vectors once a super-block and row;
 * Q4_K/Q5_K's minima go straight into mn<r> += (dmin·mn_j)·xs_j, the
 * sub-blocks' sums of X from kxs. The 12 bytes of 6-bit scales and minima
 * are unpacked four at a time in 32-bit words: every mask and shift stays
 * within each byte, so the words' byte order does not matter. */
static void emit_k_scales(Emit *e, BqFormat f, int r) {
  if (f == BQ_Q6_K) {
    emit_line(e, "float sc%d[16]; /* d times the 16 int8 scales */", r);
    emit_line(e, "{");
    e->indent++;
    emit_line(e, "const int8_t *ks%d = (const int8_t *)q%d + 192;", r, r);
    emit_line(e, "const kq8f klo = __builtin_convertvector(%s, kq8f) * d%d;", bytes8(e, "ks", r, 0), r);
    emit_line(e, "const kq8f khi = __builtin_convertvector(%s, kq8f) * d%d;", bytes8(e, "ks", r, 8), r);
    emit_line(e, "memcpy(sc%d, &klo, sizeof klo);", r);
    emit_line(e, "memcpy(sc%d + 8, &khi, sizeof khi);", r);
    emit_line(e, "mn%d += klo * kxv + khi * kxw; /* the quants' offset 32 times Σx, by scale */", r);
    e->indent--;
    emit_line(e, "}");
    return;
  }
  emit_line(e, "float sc%d[8]; /* d times the 8 six-bit scales */", r);
  emit_line(e, "{");
  e->indent++;
  /* kbN's lane j is the super-block's byte N + j: the 12 bytes of scales
   * and minima start at 4, so lane j of kb4 is packed byte j, of kb8 byte
   * j + 4 and of kb0 byte j - 4 */
  emit_line(e, "const kq8i kb0 = %s, kb4 = %s, kb8 = %s;", bytes8(e, "q", r, 0), bytes8(e, "q", r, 4), bytes8(e, "q", r, 8));
  emit_line(e, "const kq8i klo = {63, 63, 63, 63, 0, 0, 0, 0}, khi = {0, 0, 0, 0, 15, 15, 15, 15}, "
               "ktop = {0, 0, 0, 0, 48, 48, 48, 48};");
  emit_line(e, "const kq8i ksc = (kb4 & klo) | (kb8 & khi) | (kb0 >> 2 & ktop); /* scale j: j < 4 byte j's low 6 bits, "
               "else byte j + 4's low nibble and byte j - 4's top bits */");
  emit_line(e, "const kq8i kmn = (kb8 & klo) | (kb8 >> 4 & khi) | (kb4 >> 2 & ktop); /* minimum j: bytes j + 4, j + 4 "
               "and j */");
  emit_line(e, "const kq8f ksv = __builtin_convertvector(ksc, kq8f) * d%d;", r);
  emit_line(e, "memcpy(sc%d, &ksv, sizeof ksv);", r);
  emit_line(e, "mn%d += __builtin_convertvector(kmn, kq8f) * (kxv * m%d);", r, r);
  e->indent--;
  emit_line(e, "}");
}

/* The K-quants' decode (rows base .. base + nrows - 1 of W by every row
 * of X): a super-block a step, its sub-blocks in turn (Q4_K/Q5_K/Q8_K 8 of
 * 32 values, Q6_K 16 of 16): X's vectors of the sub-block are loaded once
 * for the nrows rows; for each row the sub-block's quants are unpacked in
 * registers, multiplied by them and summed, then acc += that·(d·sc_j)
 * (acc and acb take alternate sub-blocks: two chains of fmas). The scales
 * are unpacked in vectors once a super-block and row (emit_k_scales) and
 * read back as scalars, which a C compiler folds into the fma (a
 * broadcast memory operand); Q4_K/Q5_K's minima, Σ_j (dmin·mn_j)·xs_j,
 * are summed apart in mn, xs_j being the sub-block's sum of X, computed
 * once for all rows of W (kxs, emit_decode_tiles). */
static void emit_k_reg_tile(Emit *e, const QGemmSpec *s, const QGeo *g, int nrows, const char *base, bool prefetch) {
  BqFormat f = s->fmt;
  bool mins = f != BQ_Q8_K; /* Q4_K/Q5_K's minima, Q6_K's offset 32 */
  int vw = g->vw, step = QG_R * g->bb;
  for (int r = 0; r < nrows; r++)
    emit_line(e, "const uint8_t *w%d = w + (int64_t)(%s + %d) * %s;", r, base, r, ll(e, g->rb));
  if (prefetch)
    emit_line(e, "const uint8_t *pf = w + (int64_t)(t + %d < %s ? t + %d : t) * %s; /* a tile ahead */",
              QG_PREFETCH_TILES, ll(e, g->nt), QG_PREFETCH_TILES, ll(e, QG_R * g->rb));
  emit_line(e, "for (int i = 0; i < %s; i++) {", rows_bound(e, s));
  e->indent++;
  emit_line(e, "const float *x = a + (int64_t)i * %s;", ll(e, s->k));
  for (int r = 0; r < nrows; r++) {
    emit_line(e, "v%df acc%d = {0}, acb%d = {0};", vw, r, r);
    if (mins)
      emit_line(e, "kq8f mn%d = {0};", r);
  }
  emit_line(e, "for (int c = 0; c < %s; c++) { /* super-block c of each row */", ll(e, g->nb));
  e->indent++;
  for (int off = 0; prefetch && off < step; off += 64)
    emit_line(e, "__builtin_prefetch(pf + c * %d + %d);", step, off);
  emit_line(e, "const float *xc = x + c * 256;");
  if (mins) {
    int nsub = f == BQ_Q6_K ? 16 : 8;
    emit_line(e, "kq8f kxv%s; /* the %d sub-blocks' sums of X */", f == BQ_Q6_K ? ", kxw" : "", nsub);
    emit_line(e, "memcpy(&kxv, kxs + (int64_t)i * %s + c * %d, sizeof kxv);", ll(e, g->nb * nsub), nsub);
    if (f == BQ_Q6_K)
      emit_line(e, "memcpy(&kxw, kxs + (int64_t)i * %s + c * 16 + 8, sizeof kxw);", ll(e, g->nb * nsub));
  }
  for (int r = 0; r < nrows; r++) {
    emit_line(e, "const uint8_t *q%d = w%d + c * %d;", r, r, g->bb);
    if (f == BQ_Q8_K)
      emit_line(e, "float d%d;", r), emit_line(e, "memcpy(&d%d, q%d, sizeof d%d);", r, r, r);
    else
      emit_line(e, "const float d%d = kiln_f16_to_f32_fast((uint16_t)(q%d[%d] | q%d[%d] << 8));", r, r,
                f == BQ_Q6_K ? 208 : 0, r, f == BQ_Q6_K ? 209 : 1);
    if (f == BQ_Q4_K || f == BQ_Q5_K)
      emit_line(e, "const float m%d = kiln_f16_to_f32_fast((uint16_t)(q%d[2] | q%d[3] << 8));", r, r, r);
    if (f != BQ_Q8_K)
      emit_k_scales(e, f, r);
  }
  emit_k_super_block(e, f, vw, nrows);
  e->indent--;
  emit_line(e, "}");
  for (int r = 0; r < nrows; r++) {
    emit_line(e, "float s%d = 0;", r);
    emit_line(e, "for (int l = 0; l < %d; l++)", vw);
    emit_line(e, "  s%d += acc%d[l] + acb%d[l];", r, r, r);
    if (mins) {
      emit_line(e, "for (int l = 0; l < 8; l++)");
      emit_line(e, "  s%d -= %smn%d[l];", r, f == BQ_Q6_K ? "32 * " : "", r);
    }
    emit_line(e, "y[(int64_t)i * %s + %s + %d] = s%d%s;", ll(e, s->n), base, r, r,
              s->bias ? arena_printf(e->g->arena, " + bias[%s + %d]", base, r) : "");
  }
  e->indent--;
  emit_line(e, "}");
}

/* Decode: rows base .. base + nrows - 1 of W by every row of X, the blocks
 * unpacked in registers. In the loop over full tiles (t), the tile
 * QG_PREFETCH_TILES ahead is prefetched as the blocks go: its QG_R rows
 * are contiguous, QG_R blocks' bytes a step. */
static void emit_reg_tile(Emit *e, const QGemmSpec *s, const QGeo *g, int nrows, const char *base, bool prefetch) {
  if (bq_is_k(s->fmt)) {
    emit_k_reg_tile(e, s, g, nrows, base, prefetch);
    return;
  }
  int vw = g->vw, nx = 32 / vw, step = QG_R * g->bb;
  for (int r = 0; r < nrows; r++)
    emit_line(e, "const uint8_t *w%d = w + (int64_t)(%s + %d) * %s;", r, base, r, ll(e, g->rb));
  if (prefetch)
    emit_line(e, "const uint8_t *pf = w + (int64_t)(t + %d < %s ? t + %d : t) * %s; /* a tile ahead */",
              QG_PREFETCH_TILES, ll(e, g->nt), QG_PREFETCH_TILES, ll(e, QG_R * g->rb));
  emit_line(e, "for (int i = 0; i < %s; i++) {", rows_bound(e, s));
  e->indent++;
  emit_line(e, "const float *x = a + (int64_t)i * %s;", ll(e, s->k));
  for (int r = 0; r < nrows; r++)
    emit_line(e, "v%df acc%d = {0};", vw, r);
  emit_line(e, "for (int c = 0; c < %s; c++) { /* block c of each row */", ll(e, g->nb));
  e->indent++;
  for (int off = 0; prefetch && off < step; off += 64)
    emit_line(e, "__builtin_prefetch(pf + c * %d + %d);", step, off);
  for (int h = 0; h < nx; h++)
    emit_line(e, "v%df x%d;", vw, h), emit_line(e, "memcpy(&x%d, x + c * 32 + %d, sizeof x%d);", h, h * vw, h);
  if (bq_has_min(s->fmt)) {
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
    emit_line(e, "const float d = kiln_f16_to_f32_fast((uint16_t)(q[0] | q[1] << 8));");
    if (bq_has_min(s->fmt))
      emit_line(e, "const float mn = kiln_f16_to_f32_fast((uint16_t)(q[2] | q[3] << 8));");
    emit_block_dot(e, s->fmt, vw);
    emit_line(e, "acc%d += p * d%s;", r, bq_has_min(s->fmt) ? " + xs * mn" : "");
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

/* Prefill's panel: NR = 2 vectors of W's rows (output columns), K-major
 * in chunks of kc (wt[k * NR + j] = W[base + j][k0 + k]), at most
 * QG_PANEL_FLOATS, read by MR x 2 vector accumulators per row tile. */
#define QG_PANEL_FLOATS 8192 /* 32 KiB */

typedef struct Panel {
  int nr, mr;       /* columns a panel (rows of W); rows of X a register tile */
  int64_t kc;       /* K a chunk: a multiple of 32 dividing K */
} Panel;

static Panel panel_of(const QGemmSpec *s, const View *v) {
  int bv = bq_formats[s->fmt].block_values;
  Panel p = {.nr = 2 * v->vw, .mr = v->acc / 2 > 12 ? 12 : v->acc / 2};
  int64_t cap = QG_PANEL_FLOATS / p.nr / bv * bv;
  if (cap < bv)
    cap = bv;
  p.kc = s->k < cap ? s->k : cap;
  while (s->k % p.kc)
    p.kc -= bv;
  return p;
}

/* mr rows of X from row `i` by the panel: acc += x[k] (broadcast) · the
 * panel's two vectors at k; then Y's columns base .. base + valid - 1
 * get the sums (plus the bias in the first chunk, plus Y in the others),
 * as two vectors where the panel is full. */
static void emit_panel_rows(Emit *e, const QGemmSpec *s, const Panel *p, int vw, int mr, const char *base,
                            int valid) {
  for (int r = 0; r < mr; r++) {
    emit_line(e, "const float *x%d = a + (int64_t)(i + %d) * %s + k0;", r, r, ll(e, s->k));
    emit_line(e, "v%df acc%d_0 = {0}, acc%d_1 = {0};", vw, r, r);
  }
  emit_line(e, "for (int k = 0; k < %s; k++) {", ll(e, p->kc));
  e->indent++;
  emit_line(e, "const v%df b0 = *(const v%df *)(wt + k * %d), b1 = *(const v%df *)(wt + k * %d + %d);", vw, vw, p->nr,
            vw, p->nr, vw);
  for (int r = 0; r < mr; r++)
    emit_line(e, "acc%d_0 += x%d[k] * b0, acc%d_1 += x%d[k] * b1;", r, r, r, r);
  e->indent--;
  emit_line(e, "}");
  for (int r = 0; r < mr; r++) {
    emit_line(e, "{");
    e->indent++;
    emit_line(e, "float *yr = y + (int64_t)(i + %d) * %s + %s;", r, ll(e, s->n), base);
    if (valid == p->nr) { /* a full panel: Y's two vectors (a scalar loop here cost a third of Gemma's Q5_0 products) */
      emit_line(e, "v%df y0, y1;", vw);
      emit_line(e, "if (k0)");
      emit_line(e, "  memcpy(&y0, yr, sizeof y0), memcpy(&y1, yr + %d, sizeof y1);", vw);
      if (s->bias) {
        emit_line(e, "else");
        emit_line(e, "  memcpy(&y0, bias + %s, sizeof y0), memcpy(&y1, bias + %s + %d, sizeof y1);", base, base, vw);
      } else {
        emit_line(e, "else");
        emit_line(e, "  y0 = y1 = (v%df){0};", vw);
      }
      emit_line(e, "y0 += acc%d_0, y1 += acc%d_1;", r, r);
      emit_line(e, "memcpy(yr, &y0, sizeof y0), memcpy(yr + %d, &y1, sizeof y1);", vw);
      e->indent--;
      emit_line(e, "}");
      continue;
    }
    emit_line(e, "float o[%d] __attribute__((aligned(64)));", p->nr);
    emit_line(e, "*(v%df *)o = acc%d_0, *(v%df *)(o + %d) = acc%d_1;", vw, r, vw, vw, r);
    emit_line(e, "for (int j = 0; j < %d; j++)", valid);
    emit_line(e, "  yr[j] = (k0 ? yr[j] : %s) + o[j];",
              s->bias ? arena_printf(e->g->arena, "bias[%s + j]", base) : "0.0f");
    e->indent--;
    emit_line(e, "}");
  }
}

/* Prefill: the `valid` rows of W from base, a K chunk at a time
 * dequantized into the panel (each block in vectors, then its 32 values
 * into their column), then every row of X in register tiles. */
static void emit_panel_tile(Emit *e, const QGemmSpec *s, const Panel *p, int vw, const char *base, int valid) {
  emit_line(e, "float wt[%s] __attribute__((aligned(64))); /* [%s][%d]: W's rows as columns */",
            ll(e, p->kc * p->nr), ll(e, p->kc), p->nr);
  if (valid < p->nr)
    emit_line(e, "memset(wt, 0, sizeof wt); /* the columns past N stay 0 */");
  emit_line(e, "for (int k0 = 0; k0 < %s; k0 += %s) {", ll(e, s->k), ll(e, p->kc));
  e->indent++;
  int bv = bq_formats[s->fmt].block_values, bb = bq_formats[s->fmt].block_bytes;
  emit_line(e, "for (int j = 0; j < %d; j++)", valid);
  emit_line(e, "  for (int c = 0; c < %s; c++) {", ll(e, p->kc / bv));
  e->indent += 2;
  emit_line(e, "const uint8_t *q = w + (int64_t)(%s + j) * %s + (k0 / %d + c) * %d;", base, ll(e, s->k / bv * bb), bv,
            bb);
  emit_line(e, "float wb[%d] __attribute__((aligned(64)));", bv);
  if (bq_is_k(s->fmt))
    emit_k_block_store(e, s->fmt, vw);
  else
    emit_block_store(e, s->fmt, vw);
  emit_line(e, "for (int l = 0; l < %d; l++)", bv);
  emit_line(e, "  wt[(c * %d + l) * %d + j] = wb[l];", bv, p->nr);
  e->indent -= 2;
  emit_line(e, "  }");
  int64_t mhi = s->m - s->m % p->mr;
  if (mhi > 0) {
    emit_line(e, "for (int i = 0; i < %s%s; i += %d) {", ll(e, mhi), s->rows ? " && i < m_run" : "", p->mr);
    e->indent++;
    emit_panel_rows(e, s, p, vw, p->mr, base, valid);
    e->indent--;
    emit_line(e, "}");
  }
  if (s->m % p->mr) {
    emit_line(e, s->rows ? "if (m_run > %s) {" : "{", ll(e, mhi));
    e->indent++;
    emit_line(e, "const int i = %s;", ll(e, mhi));
    emit_panel_rows(e, s, p, vw, (int)(s->m % p->mr), base, valid);
    e->indent--;
    emit_line(e, "}");
  }
  e->indent--;
  emit_line(e, "}");
}

/* Prefill through view v: the full panels (split among threads), then the
 * columns left over in one zero-padded panel. */
static void emit_prefill(Emit *e, const QGemmSpec *s, const QGeo *g, const View *v) {
  Panel p = panel_of(s, v);
  int64_t np = s->n / p.nr;
  int rem = (int)(s->n % p.nr);
  if (np > 0) {
    emit_parallel_for(e, np, g->ns * (double)np / (double)(np + (rem > 0)));
    emit_line(e, "for (int t = 0; t < %s; t++) { /* W's rows %d t .. %d t + %d */", ll(e, np), p.nr, p.nr, p.nr - 1);
    e->indent++;
    emit_panel_tile(e, s, &p, v->vw, arena_printf(e->g->arena, "t * %d", p.nr), p.nr);
    e->indent--;
    emit_line(e, "}");
  }
  if (rem > 0) {
    emit_line(e, "%s{ /* the last %d rows of W */", emit_lead_only(e), rem);
    e->indent++;
    emit_panel_tile(e, s, &p, v->vw, ll(e, np * p.nr), rem);
    e->indent--;
    emit_line(e, "}");
  }
}

static void emit_decode_tiles(Emit *e, const QGemmSpec *s, QGeo *g);

/* One vector width: the full tiles (split among threads), then the rest. */
static void emit_vector_path(Emit *e, const QGemmSpec *s, QGeo *g, const View *v) {
  int vw = g->vw = v->vw;
  emit_line(e, "typedef float v%df __attribute__((vector_size(%d)));", vw, 4 * vw);
  emit_line(e, "typedef int v%di __attribute__((vector_size(%d)));", vw, 4 * vw); /* the quants, widened */
  if (bq_is_q5(s->fmt)) /* the fifth bits */
    emit_line(e, "typedef unsigned v%du __attribute__((vector_size(%d)));", vw, 4 * vw);
  if (bq_is_k(s->fmt) && s->fmt != BQ_Q8_K && (s->m < QG_PREFILL_MIN_ROWS || s->rows)) { /* a super-block's scales */
    emit_line(e, "typedef float kq8f __attribute__((vector_size(32)));");
    emit_line(e, "typedef int kq8i __attribute__((vector_size(32)));");
  }
  if (s->m >= QG_PREFILL_MIN_ROWS && s->rows) {
    /* a prefill chunk holding few real tokens: dequantizing all of W into
     * panels would cost more than reading it once per row */
    emit_line(e, "if (m_run < %d) { /* few rows: W's blocks in registers, as in decode */", QG_PREFILL_MIN_ROWS);
    e->indent++;
    emit_decode_tiles(e, s, g);
    e->indent--;
    emit_line(e, "} else {");
    e->indent++;
    emit_prefill(e, s, g, v);
    e->indent--;
    emit_line(e, "}");
    return;
  }
  if (s->m >= QG_PREFILL_MIN_ROWS) {
    emit_prefill(e, s, g, v);
    return;
  }
  emit_decode_tiles(e, s, g);
}

/* Decode: W's rows QG_R at a time (split among threads), then the rest. */
static void emit_decode_tiles(Emit *e, const QGemmSpec *s, QGeo *g) {
  if (bq_is_k(s->fmt) && s->fmt != BQ_Q8_K) { /* the minima's (Q6_K: the offset's) Σx, once for all rows of W */
    int sub = s->fmt == BQ_Q6_K ? 16 : 32;
    int64_t rows = s->m < QG_PREFILL_MIN_ROWS ? s->m : QG_PREFILL_MIN_ROWS - 1, nsb = s->k / sub;
    emit_line(e, "float kxs[%s]; /* [%s][%s]: each %d-value sub-block's sum of X */", ll(e, rows * nsb), ll(e, rows),
              ll(e, nsb), sub);
    emit_line(e, "for (int i = 0; i < %s; i++)", rows_bound(e, s));
    emit_line(e, "  for (int j = 0; j < %s; j++) {", ll(e, nsb));
    emit_line(e, "    float xsj = 0;");
    emit_line(e, "    for (int l = 0; l < %d; l++)", sub);
    emit_line(e, "      xsj += a[(int64_t)i * %s + j * %d + l];", ll(e, s->k), sub);
    emit_line(e, "    kxs[(int64_t)i * %s + j] = xsj;", ll(e, nsb));
    emit_line(e, "  }");
  }
  if (g->nt > 0) {
    emit_parallel_for(e, g->nt, g->ns);
    emit_line(e, "for (int t = 0; t < %s; t++) { /* rows %d t .. %d t + %d of W */", ll(e, g->nt), QG_R, QG_R,
              QG_R - 1);
    e->indent++;
    emit_reg_tile(e, s, g, QG_R, arena_printf(e->g->arena, "t * %d", QG_R), true);
    e->indent--;
    emit_line(e, "}");
  }
  if (g->rem > 0) {
    emit_line(e, "%s{ /* the last %d rows of W */", emit_lead_only(e), g->rem);
    e->indent++;
    emit_reg_tile(e, s, g, g->rem, ll(e, g->nt * QG_R), false);
    e->indent--;
    emit_line(e, "}");
  }
}

/* Plain C: each block dequantized as the reference does, then a dot. */
static void emit_scalar_path(Emit *e, const QGemmSpec *s, const QGeo *g) {
  int bv = bq_formats[s->fmt].block_values;
  emit_parallel_for(e, s->n, g->ns); /* W's rows: split, or the lead's (the other paths split theirs) */
  emit_line(e, "for (int j = 0; j < %s; j++)", ll(e, s->n));
  emit_line(e, "  for (int i = 0; i < %s; i++) {", rows_bound(e, s));
  e->indent += 2;
  emit_line(e, "float sv = 0;");
  emit_line(e, "for (int c = 0; c < %s; c++) {", ll(e, g->nb));
  e->indent++;
  emit_line(e, "const uint8_t *b = w + (int64_t)j * %s + c * %d;", ll(e, g->rb), g->bb);
  emit_line(e, "float wb[%d];", bv);
  qgemm_emit_block(e, s->fmt, "b", "wb");
  emit_line(e, "for (int l = 0; l < %d; l++)", bv);
  emit_line(e, "  sv += a[(int64_t)i * %s + c * %d + l] * wb[l];", ll(e, s->k), bv);
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "y[(int64_t)i * %s + j] = sv%s;", ll(e, s->n), s->bias ? " + bias[j]" : "");
  e->indent -= 2;
  emit_line(e, "  }");
}

bool emit_qgemm(Emit *e, const QGemmSpec *s) {
  int bv = bq_formats[s->fmt].block_values;
  if (s->m < 0 || s->n < 0 || s->k < 0 || s->k % bv)
    return false;
  if (s->m == 0 || s->n == 0)
    return true;
  QGeo g = {.bb = bq_formats[s->fmt].block_bytes, .nb = s->k / bv, .nt = s->n / QG_R,
            .rem = (int)(s->n % QG_R)};
  g.rb = g.nb * g.bb;
  /* about 10 GB/s of weight or 20 GFLOP/s, whichever is slower */
  double wbytes = (double)s->n * (double)g.rb, flops = 2.0 * (double)s->m * (double)s->n * (double)s->k;
  g.ns = wbytes / 10 > flops / 20 ? wbytes / 10 : flops / 20;
  /* no value names in the text: every layer's product of one shape shares one kernel */
  emit_line(e, "{ /* Y[%lld,%lld] = X[%lld,%lld] x W^T%s, W [%lld,%lld] as %s blocks (%d bytes a %d values) */",
            (long long)s->m, (long long)s->n, (long long)s->m, (long long)s->k, s->bias ? " + bias" : "",
            (long long)s->n, (long long)s->k, bq_formats[s->fmt].name, g.bb, bv);
  e->indent++;
  emit_line(e, "const float *a = %s; /* [%lld,%lld] */", s->a, (long long)s->m, (long long)s->k);
  emit_line(e, "const uint8_t *w = %s; /* [%lld,%lld]: row j of W is %lld blocks */", s->w, (long long)s->n,
            (long long)g.rb, (long long)g.nb);
  if (s->bias)
    emit_line(e, "const float *bias = %s; /* [%lld] */", s->bias, (long long)s->n);
  emit_line(e, "float *y = %s; /* [%lld,%lld] */", s->y, (long long)s->m, (long long)s->n);
  if (s->rows) /* a prefill chunk's real tokens: the rows past them come out 0 */
    emit_line(e, "const int64_t m_run = %s < 0 ? 0 : %s > %lld ? %lld : %s;", s->rows, s->rows, (long long)s->m,
              (long long)s->m, s->rows);
  if (s->act_q8 && s->k > 0) {
    emit_qgemm_q8act(e, s);
  } else if (s->k == 0) {
    emit_line(e, "for (int64_t i = 0; i < %lld; i++)", (long long)(s->m * s->n));
    emit_line(e, "  y[i] = %s;", s->bias ? arena_printf(e->g->arena, "bias[i %% %lld]", (long long)s->n) : "0.0f");
  } else {
    const char *gnu = "defined(__GNUC__) && !defined(KILN_GEMM_SCALAR) && (defined(__clang__) || __GNUC__ >= 9)";
    SimdPaths paths = simd_paths(e); /* the widths --isa writes (vector_views.h) */
    const View *pv[4];
    for (int i = 0; i < KILN_COUNT(views); i++)
      if (isa_writes_view(e->isa, &views[i])) {
        pv[paths.n] = &views[i];
        simd_paths_add(&paths, view_cond(e, &views[i], gnu));
      }
    if (paths.plain_first) {
      simd_paths_plain(e, &paths);
      emit_scalar_path(e, s, &g);
    }
    for (int i = 0; i < paths.n; i++) {
      simd_paths_body(e, &paths, i);
      emit_line(e, "/* %d-wide vectors: %s */", pv[i]->vw,
                s->m >= QG_PREFILL_MIN_ROWS ? "panels of W dequantized once, read by every row of X"
                                            : "blocks unpacked in registers");
      emit_vector_path(e, s, &g, pv[i]);
    }
    if (!paths.plain_first) {
      simd_paths_plain(e, &paths);
      emit_scalar_path(e, s, &g);
    }
    simd_paths_end(e, &paths);
  }
  if (s->rows) {
    emit_line(e, "%sif (m_run < %lld)", emit_lead_only(e), (long long)s->m);
    emit_line(e, "  memset(y + m_run * %lld, 0, (size_t)(%lld - m_run) * %lld * sizeof *y);", (long long)s->n,
              (long long)s->m, (long long)s->n);
  }
  e->indent--;
  emit_line(e, "}");
  return true;
}
