/* qgemm_q8act.c — the K-quant (and Q5_0/Q5_1) GEMVs of --kquant-act=q8
 * (BlockLinear's act="q8", fewer than QG_ACT_Q8_MAX_ROWS rows of X): X's
 * rows quantized to int8 once a call, the weight's quants multiplied by them in integers,
 * as llama.cpp does (its Q8_K activations), so that a 4-6 bit weight costs
 * a few integer instructions per 64 values instead of a widening, a
 * conversion and an f32 FMA per 16 (the f32 kernels of qgemm_kernel.c were
 * compute-bound at 42-55% of the memory bandwidth on Gemma 3's 262,144 x
 * 768 output projection).
 *
 * Activations. Each block of BQ_ACT_BLOCK = 32 values of a row of X gets
 * d = max|x| / 127 and q = rint(x / d) (bq_quantize_act_q8, the same f32
 * steps: the interpreter's reference sees the same q and d). A pre-pass
 * writes xq (int8), and per group of G values (G = 16 for Q6_K's
 * sub-blocks, else 32) the block's scale xgd and the group's Σx as d·Σq,
 * xgm (for Q4_K/Q5_K's minima and the offsets that make the quants
 * unsigned).
 *
 * Sums. For each sub-block (Q4_K/Q5_K/Q8_K 32 values, Q6_K 16) the dot of
 * its quants (unsigned: Q4_K 0..15, Q5_K 0..31, Q6_K 0..63 before its
 * -32, Q8_K int8) by xq is exact in int32; then in f32
 *   y += d·sc_j·dx_j · dot_j − dmin·mn_j · dx_j·Σq_j     (Q4_K, Q5_K)
 *   y += d·sc_j · (dx_j·dot_j − 32 · dx_j·Σq_j)          (Q6_K)
 *   y += d·dx_j · dot_j                                   (Q8_K)
 *   y += d·dx · dot − 16·d · dx·Σq,  d·dx · dot + m · dx·Σq (Q5_0, Q5_1: a
 *        32-value block a step, two blocks an iteration on two chains)
 * so the paths differ from the exact reference (and from each other) only
 * in the f32 rounding of these few terms a super-block.
 *
 * Paths, picked when the generated C is compiled (--isa=avx512 writes the
 * first two, avx2 the second, portable both; plain C always):
 *   AVX512-VNNI/BW/VL  64 quants a vpdpbusd (u8 quants x s8 activations,
 *                      two sub-blocks: the int32 lanes scaled by a
 *                      vpermps of the sub-blocks' factors, one FMA);
 *                      Q4_K/Q5_K's nibble halves pair sub-blocks 2jp and
 *                      2jp + 2, so their X is copied once a call in that
 *                      order (xp); Q8_K's signed quants go in as q + 128,
 *                      the 128·Σq taken off in f32; Q5_0/Q5_1 32 a
 *                      256-bit vpdpbusd, a block, the fifth bits spread
 *                      to bytes by a masked set (vpmovm2b-like)
 *   AVX2               32 quants a vpmaddubsw + vpmaddwd (by ones, or by
 *                      Q6_K's two int16 scales: both sub-blocks share one
 *                      activation block), Q8_K by |q| and X's sign flipped
 *                      (vpsignb); no product saturates int16: 2·63·127,
 *                      2·128·127 at most; Q5's fifth bits by a byte
 *                      shuffle of qh and a compare
 *   plain C            the reference's loops over the same integers
 *
 * The vector paths prefetch the row of W QA_PREFETCH_ROWS ahead as they go
 * (without it they ran at 60-70% of the bandwidth bound).
 *
 * Threads: the rows of W are split among the threads (emit_parallel_for);
 * the pre-pass runs before them. */
#include "qgemm_kernel.h"

#include <string.h>

static const char *ll_of(Emit *e, int64_t v) { return emit_int(e, v); }

/* Emit each line of text (lines separated by '\n') at the current indent. */
static void text(Emit *e, const char *t) {
  while (*t) {
    const char *nl = strchr(t, '\n');
    int n = nl ? (int)(nl - t) : (int)strlen(t);
    emit_line(e, "%.*s", n, t);
    t += n + (nl != NULL);
  }
}

/* Q4_K/Q5_K's 8 scales and minima of the super-block at q as kq8i ksc, kmn
 * (qgemm_kernel.c's emit_k_scales unpacks them the same way), then
 * fs = d·sc_j·dx_j and mnv += dmin·mn_j·(dx_j·Σq_j). */
static void k4_scales(Emit *e) {
  text(e, "const float d = kiln_f16_to_f32_fast((uint16_t)(q[0] | q[1] << 8));\n"
          "const float dmin = kiln_f16_to_f32_fast((uint16_t)(q[2] | q[3] << 8));\n"
          "const kq8i kb0 = {q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]};\n"
          "const kq8i kb4 = {q[4], q[5], q[6], q[7], q[8], q[9], q[10], q[11]};\n"
          "const kq8i kb8 = {q[8], q[9], q[10], q[11], q[12], q[13], q[14], q[15]};\n"
          "const kq8i klo = {63, 63, 63, 63, 0, 0, 0, 0}, khi = {0, 0, 0, 0, 15, 15, 15, 15};\n"
          "const kq8i ktop = {0, 0, 0, 0, 48, 48, 48, 48};\n"
          "const kq8i ksc = (kb4 & klo) | (kb8 & khi) | (kb0 >> 2 & ktop); /* scale j */\n"
          "const kq8i kmn = (kb8 & klo) | (kb8 >> 4 & khi) | (kb4 >> 2 & ktop); /* minimum j */\n"
          "kq8f gdv, gmv;\n"
          "memcpy(&gdv, gdc, sizeof gdv);\n"
          "memcpy(&gmv, gmc, sizeof gmv);\n"
          "const kq8f fs = __builtin_convertvector(ksc, kq8f) * gdv * d;\n"
          "mnv += __builtin_convertvector(kmn, kq8f) * gmv * dmin;");
}

/* The AVX512-VNNI super-block of format f at q by X at xc (Q4_K/Q5_K: xpc). */
static void zmm_super_block(Emit *e, BqFormat f) {
  if (f == BQ_Q4_K || f == BQ_Q5_K) {
    k4_scales(e);
    text(e, "const __m512 f16 = _mm512_castps256_ps512((__m256)fs);");
    int qo = f == BQ_Q5_K ? 48 : 16;
    emit_line(e, "const __m512i q0 = _mm512_loadu_si512((const void *)(q + %d));", qo);
    emit_line(e, "const __m512i q1 = _mm512_loadu_si512((const void *)(q + %d));", qo + 64);
    if (f == BQ_Q4_K) {
      text(e, "const __m512i u0 = _mm512_and_si512(q0, m4), u1 = _mm512_and_si512(_mm512_srli_epi16(q0, 4), m4);\n"
              "const __m512i u2 = _mm512_and_si512(q1, m4), u3 = _mm512_and_si512(_mm512_srli_epi16(q1, 4), m4);");
    } else { /* the fifth bits: byte l of qh holds bit j of sub-block j's value l */
      text(e, "const __m256i h = _mm256_loadu_si256((const void *)(q + 16));\n"
              "const __m512i h0 = _mm512_inserti64x4(_mm512_castsi256_si512(h), _mm256_srli_epi16(h, 2), 1);\n"
              "const __m512i h1 = _mm512_srli_epi16(h0, 4); /* bits 4, 5 | 6, 7 */\n"
              "const __m512i u0 = _mm512_or_si512(_mm512_and_si512(q0, m4), _mm512_slli_epi16(_mm512_and_si512(h0, "
              "b1), 4));\n"
              "const __m512i u1 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(q0, 4), m4), "
              "_mm512_slli_epi16(_mm512_and_si512(h0, b2), 3));\n"
              "const __m512i u2 = _mm512_or_si512(_mm512_and_si512(q1, m4), _mm512_slli_epi16(_mm512_and_si512(h1, "
              "b1), 4));\n"
              "const __m512i u3 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(q1, 4), m4), "
              "_mm512_slli_epi16(_mm512_and_si512(h1, b2), 3));");
    }
    /* u0: sub-blocks 0 | 2, u1: 1 | 3, u2: 4 | 6, u3: 5 | 7 (xp's order) */
    static const int sub[4][2] = {{0, 2}, {1, 3}, {4, 6}, {5, 7}};
    for (int t = 0; t < 4; t++)
      emit_line(e, "%s = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(z, u%d, _mm512_loadu_si512((const "
                   "void *)(xpc + %d)))), _mm512_permutexvar_ps(i%d%d, f16), %s);",
                t & 1 ? "acb" : "acc", t, 64 * t, sub[t][0], sub[t][1], t & 1 ? "acb" : "acc");
  } else if (f == BQ_Q6_K) {
    text(e, "const float d = kiln_f16_to_f32_fast((uint16_t)(q[208] | q[209] << 8));\n"
            "const __m512 fsc = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const void *)"
            "(q + 192)))), _mm512_set1_ps(d)); /* d·sc_j */\n"
            "const __m512 fs = _mm512_mul_ps(fsc, _mm512_loadu_ps(gdc)); /* d·sc_j·dx_j */\n"
            "offv = _mm512_fmadd_ps(fsc, _mm512_loadu_ps(gmc), offv);");
    for (int hh = 0; hh < 2; hh++) {
      emit_line(e, "{ /* values %d .. %d: ql's 64 bytes, qh's 32 */", 128 * hh, 128 * hh + 127);
      e->indent++;
      emit_line(e, "const __m512i l = _mm512_loadu_si512((const void *)(q + %d));", 64 * hh);
      emit_line(e, "const __m256i h = _mm256_loadu_si256((const void *)(q + %d));", 128 + 32 * hh);
      text(e, "const __m512i ha = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(h, m3)), "
              "_mm256_and_si256(_mm256_srli_epi16(h, 2), m3), 1);\n"
              "const __m512i hb = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(_mm256_srli_epi16(h, 4), "
              "m3)), _mm256_and_si256(_mm256_srli_epi16(h, 6), m3), 1);\n"
              "const __m512i ua = _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_slli_epi16(ha, 4));\n"
              "const __m512i ub = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4), "
              "_mm512_slli_epi16(hb, 4));");
      emit_line(e, "acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(z, ua, _mm512_loadu_si512((const void "
                   "*)(xc + %d)))), _mm512_permutexvar_ps(i6%da, fs), acc);", 128 * hh, hh);
      emit_line(e, "acb = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(z, ub, _mm512_loadu_si512((const void "
                   "*)(xc + %d)))), _mm512_permutexvar_ps(i6%db, fs), acb);", 128 * hh + 64, hh);
      e->indent--;
      emit_line(e, "}");
    }
  } else { /* Q8_K */
    text(e, "float d;\n"
            "memcpy(&d, q, sizeof d);\n"
            "kq8f gdv, gmv;\n"
            "memcpy(&gdv, gdc, sizeof gdv);\n"
            "memcpy(&gmv, gmc, sizeof gmv);\n"
            "const kq8f fs = gdv * d;\n"
            "mnv += gmv * d; /* the quants + 128: 128·Σq·d·dx taken off */\n"
            "const __m512 f16 = _mm512_castps256_ps512((__m256)fs);");
    for (int t = 0; t < 4; t++)
      emit_line(e, "%s = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(z, _mm512_xor_si512(_mm512_loadu_si512("
                   "(const void *)(q + %d)), b128), _mm512_loadu_si512((const void *)(xc + %d)))), "
                   "_mm512_permutexvar_ps(i%d%d, f16), %s);",
                t & 1 ? "acb" : "acc", 4 + 64 * t, 64 * t, 2 * t, 2 * t + 1, t & 1 ? "acb" : "acc");
  }
}

/* The AVX2 super-block of format f at q by X at xc. */
static void ymm_super_block(Emit *e, BqFormat f) {
  const char *dot = "_mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(";
  if (f == BQ_Q4_K || f == BQ_Q5_K) {
    k4_scales(e);
    text(e, "float fa[8];\n"
            "memcpy(fa, &fs, sizeof fa);");
    if (f == BQ_Q5_K)
      text(e, "const __m256i h = _mm256_loadu_si256((const void *)(q + 16));");
    for (int jp = 0; jp < 4; jp++) {
      emit_line(e, "{ /* sub-blocks %d and %d */", 2 * jp, 2 * jp + 1);
      e->indent++;
      emit_line(e, "const __m256i b = _mm256_loadu_si256((const void *)(q + %d));", (f == BQ_Q5_K ? 48 : 16) + 32 * jp);
      if (f == BQ_Q4_K) {
        text(e, "const __m256i ua = _mm256_and_si256(b, m4), ub = _mm256_and_si256(_mm256_srli_epi16(b, 4), m4);");
      } else {
        emit_line(e, "const __m256i ua = _mm256_or_si256(_mm256_and_si256(b, m4), _mm256_slli_epi16(_mm256_and_si256("
                     "_mm256_srli_epi16(h, %d), b1), 4));", 2 * jp);
        emit_line(e, "const __m256i ub = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), m4), "
                     "_mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, %d), b1), 4));", 2 * jp + 1);
      }
      emit_line(e, "acc += (kq8f)%sua, _mm256_loadu_si256((const void *)(xc + %d))), ones)) * fa[%d];", dot, 64 * jp,
                2 * jp);
      emit_line(e, "acb += (kq8f)%sub, _mm256_loadu_si256((const void *)(xc + %d))), ones)) * fa[%d];", dot,
                64 * jp + 32, 2 * jp + 1);
      e->indent--;
      emit_line(e, "}");
    }
  } else if (f == BQ_Q6_K) {
    text(e, "const float d = kiln_f16_to_f32_fast((uint16_t)(q[208] | q[209] << 8));\n"
            "const int8_t *sc = (const int8_t *)q + 192;\n"
            "const kq8i kslo = {sc[0], sc[1], sc[2], sc[3], sc[4], sc[5], sc[6], sc[7]};\n"
            "const kq8i kshi = {sc[8], sc[9], sc[10], sc[11], sc[12], sc[13], sc[14], sc[15]};\n"
            "kq8f gmlo, gmhi;\n"
            "memcpy(&gmlo, gmc, sizeof gmlo);\n"
            "memcpy(&gmhi, gmc + 8, sizeof gmhi);\n"
            "mnv += (__builtin_convertvector(kslo, kq8f) * gmlo + __builtin_convertvector(kshi, kq8f) * gmhi) * d;");
    for (int hh = 0; hh < 2; hh++) {
      emit_line(e, "{ /* values %d .. %d */", 128 * hh, 128 * hh + 127);
      e->indent++;
      emit_line(e, "const __m256i l0 = _mm256_loadu_si256((const void *)(q + %d));", 64 * hh);
      emit_line(e, "const __m256i l1 = _mm256_loadu_si256((const void *)(q + %d));", 64 * hh + 32);
      emit_line(e, "const __m256i h = _mm256_loadu_si256((const void *)(q + %d));", 128 + 32 * hh);
      for (int k = 0; k < 4; k++) {
        int s = 8 * hh + 2 * k; /* sub-blocks s and s + 1: activation block s / 2 */
        emit_line(e, "{ /* sub-blocks %d and %d */", s, s + 1);
        e->indent++;
        emit_line(e, "const __m256i u = _mm256_or_si256(_mm256_and_si256(%s, m4), _mm256_slli_epi16(_mm256_and_si256("
                     "%s, m3), 4));",
                  k < 2 ? (k ? "l1" : "l0") : (k == 3 ? "_mm256_srli_epi16(l1, 4)" : "_mm256_srli_epi16(l0, 4)"),
                  k ? arena_printf(e->g->arena, "_mm256_srli_epi16(h, %d)", 2 * k) : "h");
        emit_line(e, "const __m256i scl = _mm256_set_m128i(_mm_set1_epi16(sc[%d]), _mm_set1_epi16(sc[%d]));", s + 1, s);
        emit_line(e, "%s += (kq8f)_mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(u, _mm256_loadu_si256("
                     "(const void *)(xc + %d))), scl)) * (d * gdc[%d]);",
                  k & 1 ? "acb" : "acc", 128 * hh + 32 * k, s);
        e->indent--;
        emit_line(e, "}");
      }
      e->indent--;
      emit_line(e, "}");
    }
  } else { /* Q8_K */
    text(e, "float d;\n"
            "memcpy(&d, q, sizeof d);");
    for (int b = 0; b < 8; b++) {
      emit_line(e, "{ /* sub-block %d */", b);
      e->indent++;
      emit_line(e, "const __m256i b = _mm256_loadu_si256((const void *)(q + %d));", 4 + 32 * b);
      emit_line(e, "const __m256i x = _mm256_loadu_si256((const void *)(xc + %d));", 32 * b);
      emit_line(e, "%s += (kq8f)%s_mm256_abs_epi8(b), _mm256_sign_epi8(x, b)), ones)) * (d * gdc[%d]);",
                b & 1 ? "acb" : "acc", dot, b);
      e->indent--;
      emit_line(e, "}");
    }
  }
}

/* Plain C: the super-block of format f at q by X at xc, into sv. */
static void plain_super_block(Emit *e, BqFormat f) {
  if (f == BQ_Q4_K || f == BQ_Q5_K) {
    text(e, "const float d = kiln_f16_to_f32((uint16_t)(q[0] | q[1] << 8));\n"
            "const float dmin = kiln_f16_to_f32((uint16_t)(q[2] | q[3] << 8));\n"
            "for (int sb = 0; sb < 8; sb++) {");
    e->indent++;
    emit_line(e, "const uint8_t *kp = q + 4, *qp = q + %d + 32 * (sb / 2);", f == BQ_Q5_K ? 48 : 16);
    text(e, "const int sc = sb < 4 ? kp[sb] & 63 : (kp[sb + 4] & 15) | (kp[sb - 4] >> 6) << 4;\n"
            "const int mn = sb < 4 ? kp[sb + 4] & 63 : (kp[sb + 4] >> 4) | (kp[sb] >> 6) << 4;\n"
            "int dot = 0;\n"
            "for (int l = 0; l < 32; l++)");
    emit_line(e, "  dot += ((sb & 1 ? qp[l] >> 4 : qp[l] & 15)%s) * xc[32 * sb + l];",
              f == BQ_Q5_K ? " | (q[16 + l] >> sb & 1) << 4" : "");
    text(e, "sv += (float)sc * gdc[sb] * d * (float)dot - (float)mn * gmc[sb] * dmin;");
    e->indent--;
    emit_line(e, "}");
  } else if (f == BQ_Q6_K) {
    text(e, "const float d = kiln_f16_to_f32((uint16_t)(q[208] | q[209] << 8));\n"
            "for (int sb = 0; sb < 16; sb++) {\n"
            "  int dot = 0;\n"
            "  for (int l = 0; l < 16; l++) {\n"
            "    const int v = 16 * sb + l, hv = v >> 7, kv = v >> 5 & 3, lv = v & 31;\n"
            "    const int lov = q[64 * hv + 32 * (kv & 1) + lv];\n"
            "    dot += ((kv < 2 ? lov & 15 : lov >> 4) | (q[128 + 32 * hv + lv] >> 2 * kv & 3) << 4) * xc[v];\n"
            "  }\n"
            "  sv += d * (float)(int8_t)q[192 + sb] * (gdc[sb] * (float)dot - 32 * gmc[sb]);\n"
            "}");
  } else {
    text(e, "float d;\n"
            "memcpy(&d, q, sizeof d);\n"
            "for (int sb = 0; sb < 8; sb++) {\n"
            "  int dot = 0;\n"
            "  for (int l = 0; l < 32; l++)\n"
            "    dot += (int8_t)q[4 + 32 * sb + l] * xc[32 * sb + l];\n"
            "  sv += d * gdc[sb] * (float)dot;\n"
            "}");
  }
}

typedef enum { KP_512, KP_256, KP_C } KPath;

#define QA_PREFETCH_ROWS 8 /* how many rows of W ahead the vector paths prefetch */

/* One path: the loop over W's rows (split among the threads) and X's rows. */
static void emit_rows(Emit *e, const QGemmSpec *s, KPath p, const char *mrows, double ns) {
  BqFormat f = s->fmt;
  int bb = bq_formats[f].block_bytes, gs = f == BQ_Q6_K ? 16 : 32;
  int64_t nb = s->k / 256, ng = s->k / gs;
  bool mins = f != BQ_Q8_K || p == KP_512; /* a term in gmc: minima, offsets */
  bool vec8 = p == KP_256 || (p == KP_512 && f != BQ_Q6_K); /* uses mnv / kq8 vectors */
  if (p != KP_C && f != BQ_Q6_K)
    text(e, "typedef float kq8f __attribute__((vector_size(32)));");
  if ((p != KP_C && (f == BQ_Q4_K || f == BQ_Q5_K)) || (p == KP_256 && f == BQ_Q6_K))
    text(e, "typedef int kq8i __attribute__((vector_size(32)));");
  if (p == KP_256 && f == BQ_Q6_K)
    text(e, "typedef float kq8f __attribute__((vector_size(32)));");
  if (p == KP_512) {
    text(e, "typedef int kz16i __attribute__((vector_size(64)));\n"
            "const __m512i z = _mm512_setzero_si512();");
    if (f != BQ_Q8_K)
      text(e, "const __m512i m4 = _mm512_set1_epi8(15);");
    if (f == BQ_Q5_K)
      text(e, "const __m512i b1 = _mm512_set1_epi8(1), b2 = _mm512_set1_epi8(2);");
    if (f == BQ_Q6_K) {
      text(e, "const __m256i m3 = _mm256_set1_epi8(3);");
      for (int hh = 0; hh < 2; hh++)
        for (int ab = 0; ab < 2; ab++) {
          int s0 = 8 * hh + 4 * ab;
          emit_line(e, "const __m512i i6%d%c = (__m512i)(kz16i){%d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, "
                       "%d, %d, %d}; /* lanes 4g .. 4g + 3: sub-block %d + g */",
                    hh, "ab"[ab], s0, s0, s0, s0, s0 + 1, s0 + 1, s0 + 1, s0 + 1, s0 + 2, s0 + 2, s0 + 2, s0 + 2,
                    s0 + 3, s0 + 3, s0 + 3, s0 + 3, s0);
        }
    } else {
      if (f == BQ_Q8_K)
        text(e, "const __m512i b128 = _mm512_set1_epi8((char)0x80);");
      static const int pairs[4][2][2] = {{{0, 2}, {1, 3}}, {{4, 6}, {5, 7}}, {{0, 1}, {2, 3}}, {{4, 5}, {6, 7}}};
      for (int t = f == BQ_Q8_K ? 2 : 0; t < (f == BQ_Q8_K ? 4 : 2); t++)
        for (int u = 0; u < 2; u++) {
          int a = pairs[t][u][0], b = pairs[t][u][1];
          emit_line(e, "const __m512i i%d%d = (__m512i)(kz16i){%d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, "
                       "%d, %d}; /* sub-block %d | %d */",
                    a, b, a, a, a, a, a, a, a, a, b, b, b, b, b, b, b, b, a, b);
        }
    }
  } else if (p == KP_256) {
    if (f != BQ_Q6_K)
      text(e, "const __m256i ones = _mm256_set1_epi16(1);");
    if (f != BQ_Q8_K)
      text(e, "const __m256i m4 = _mm256_set1_epi8(15);");
    if (f == BQ_Q5_K)
      text(e, "const __m256i b1 = _mm256_set1_epi8(1);");
    if (f == BQ_Q6_K)
      text(e, "const __m256i m3 = _mm256_set1_epi8(3);");
  }
  if (p == KP_512 && (f == BQ_Q4_K || f == BQ_Q5_K)) {
    emit_line(e, "int8_t xp[%s]; /* xq with each super-block's sub-blocks in the order 0 2 1 3 4 6 5 7: "
                 "the nibble halves of 64 bytes of qs */", ll_of(e, s->m * s->k));
    emit_line(e, "for (int64_t o = 0; o < %s / 256 * %s; o++)", ll_of(e, s->k), mrows);
    text(e, "  for (int t = 0; t < 8; t++)\n"
            "    memcpy(xp + o * 256 + 32 * t, xq + o * 256 + 32 * (t / 4 * 4 + (t & 1) * 2 + (t >> 1 & 1)), 32);");
  }
  emit_parallel_for(e, s->n, ns);
  emit_line(e, "for (int j = 0; j < %s; j++) { /* row j of W */", ll_of(e, s->n));
  e->indent++;
  emit_line(e, "const uint8_t *wj = w + (int64_t)j * %s;", ll_of(e, nb * bb));
  if (p != KP_C) /* the rows QA_PREFETCH_ROWS ahead, as the blocks go */
    emit_line(e, "const uint8_t *pf = w + (int64_t)(j + %d < %s ? j + %d : j) * %s;", QA_PREFETCH_ROWS, ll_of(e, s->n),
              QA_PREFETCH_ROWS, ll_of(e, nb * bb));
  emit_line(e, "for (int i = 0; i < %s; i++) {", mrows);
  e->indent++;
  if (!(p == KP_512 && (f == BQ_Q4_K || f == BQ_Q5_K)))
    emit_line(e, "const int8_t *xi = xq + (int64_t)i * %s;", ll_of(e, s->k));
  emit_line(e, "const float *gd = xgd + (int64_t)i * %s%s;", ll_of(e, ng),
            mins ? arena_printf(e->g->arena, ", *gm = xgm + (int64_t)i * %s", ll_of(e, ng)) : "");
  if (p == KP_512 && (f == BQ_Q4_K || f == BQ_Q5_K))
    emit_line(e, "const int8_t *xpi = xp + (int64_t)i * %s;", ll_of(e, s->k));
  if (p == KP_512) {
    text(e, "__m512 acc = _mm512_setzero_ps(), acb = _mm512_setzero_ps();");
    if (f == BQ_Q6_K)
      text(e, "__m512 offv = _mm512_setzero_ps();");
  } else if (p == KP_256) {
    text(e, "kq8f acc = {0}, acb = {0};");
  } else {
    text(e, "float sv = 0;");
  }
  if (vec8 && mins)
    text(e, "kq8f mnv = {0};");
  emit_line(e, "for (int c = 0; c < %s; c++) { /* super-block c */", ll_of(e, nb));
  e->indent++;
  emit_line(e, "const uint8_t *q = wj + c * %d;", bb);
  for (int off = 0; p != KP_C && off < bb; off += 64)
    emit_line(e, "__builtin_prefetch(pf + c * %d + %d);", bb, off);
  if (!(p == KP_512 && (f == BQ_Q4_K || f == BQ_Q5_K)))
    text(e, "const int8_t *xc = xi + c * 256;");
  emit_line(e, "const float *gdc = gd + c * %d%s;", 256 / gs,
            mins ? arena_printf(e->g->arena, ", *gmc = gm + c * %d", 256 / gs) : "");
  if (p == KP_512 && (f == BQ_Q4_K || f == BQ_Q5_K))
    text(e, "const int8_t *xpc = xpi + c * 256;");
  if (p == KP_512)
    zmm_super_block(e, f);
  else if (p == KP_256)
    ymm_super_block(e, f);
  else
    plain_super_block(e, f);
  e->indent--;
  emit_line(e, "}");
  if (p == KP_512) { /* the minima or offsets (8 lanes) taken off in the vector: one sum */
    if (f == BQ_Q6_K)
      text(e, "const float sv = _mm512_reduce_add_ps(_mm512_sub_ps(_mm512_add_ps(acc, acb), _mm512_mul_ps(offv, "
              "_mm512_set1_ps(32))));");
    else
      emit_line(e, "const float sv = _mm512_reduce_add_ps(_mm512_sub_ps(_mm512_add_ps(acc, acb), "
                   "_mm512_maskz_mov_ps(0xff, _mm512_castps256_ps512((__m256)(mnv * %d)))));",
                f == BQ_Q8_K ? 128 : 1);
  } else if (p == KP_256) {
    text(e, "float sv = 0;\n"
            "for (int l = 0; l < 8; l++)\n"
            "  sv += acc[l] + acb[l];");
  }
  if (p == KP_256 && mins) {
    const char *k = f == BQ_Q8_K ? "128 * " : f == BQ_Q6_K ? "32 * " : "";
    emit_line(e, "for (int l = 0; l < 8; l++)");
    emit_line(e, "  sv -= %smnv[l];", k);
  }
  emit_line(e, "y[(int64_t)i * %s + j] = sv%s;", ll_of(e, s->n), s->bias ? " + bias[j]" : "");
  e->indent--;
  emit_line(e, "}");
  e->indent--;
  emit_line(e, "}");
}

/* Q5_0/Q5_1: one 32-value block at q (qh's 32 fifth bits at qo - 4, the
 * 16 bytes of nibbles at qo: values 0..15 the low nibbles, 16..31 the
 * high) by X's block at xc into the vector accumulator `acc` (vector
 * paths) or sv (plain C); the offset 16 (Q5_0) or the minimum (Q5_1)
 * times the block's Σx goes into the scalar `ofs` (two chains: ofs, ofb). */
static void q5_block(Emit *e, BqFormat f, KPath p, const char *acc, const char *ofs) {
  int qo = f == BQ_Q5_1 ? 8 : 6;
  emit_line(e, "const float d = kiln_f16_to_f32%s((uint16_t)(q[0] | q[1] << 8));", p == KP_C ? "" : "_fast");
  if (f == BQ_Q5_1)
    emit_line(e, "%s += kiln_f16_to_f32%s((uint16_t)(q[2] | q[3] << 8)) * gmc[0];", ofs, p == KP_C ? "" : "_fast");
  else
    emit_line(e, "%s += d * gmc[0];", ofs);
  emit_line(e, "uint32_t qh;");
  emit_line(e, "memcpy(&qh, q + %d, sizeof qh);", qo - 4);
  if (p == KP_C) {
    emit_line(e, "int dot = 0;");
    emit_line(e, "for (int l = 0; l < 16; l++)");
    emit_line(e, "  dot += ((q[%d + l] & 15) | (int)(qh >> l & 1) << 4) * xc[l] + ((q[%d + l] >> 4) | "
                 "(int)(qh >> (l + 16) & 1) << 4) * xc[l + 16];", qo, qo);
    emit_line(e, "sv += d * gdc[0] * (float)dot;");
    return;
  }
  emit_line(e, "const __m128i b = _mm_loadu_si128((const void *)(q + %d));", qo);
  emit_line(e, "const __m256i u = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m4h), _mm_and_si128(b, m4h));");
  if (p == KP_512) {
    emit_line(e, "const __m256i h = _mm256_maskz_set1_epi8((__mmask32)qh, 16); /* bit l of qh: 16 in byte l */");
    emit_line(e, "const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_or_si256(u, h), "
                 "_mm256_loadu_si256((const void *)xc));");
  } else {
    emit_line(e, "/* bit l of qh as 16 in byte l: byte l of the word copy holds qh's byte l / 8, tested by a mask "
                 "with every bit but l %% 8 set */");
    emit_line(e, "const __m256i hb = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), hsel);");
    emit_line(e, "const __m256i h = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_or_si256(hb, hbit), "
                 "_mm256_set1_epi8(-1)), _mm256_set1_epi8(16));");
    emit_line(e, "const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_or_si256(u, h), "
                 "_mm256_loadu_si256((const void *)xc)), ones);");
  }
  emit_line(e, "%s += (kq8f)_mm256_cvtepi32_ps(s) * (d * gdc[0]);", acc);
}

/* Q5_0/Q5_1's rows: blocks two at a time into acc and acb. */
static void emit_rows_q5(Emit *e, const QGemmSpec *s, KPath p, const char *mrows, double ns) {
  BqFormat f = s->fmt;
  int bb = bq_formats[f].block_bytes;
  int64_t nb = s->k / 32;
  if (p != KP_C)
    text(e, "typedef float kq8f __attribute__((vector_size(32)));\n"
            "const __m128i m4h = _mm_set1_epi8(15);");
  if (p == KP_256)
    text(e, "const __m256i ones = _mm256_set1_epi16(1);\n"
            "const __m256i hsel = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);\n"
            "const __m256i hbit = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe);");
  emit_parallel_for(e, s->n, ns);
  emit_line(e, "for (int j = 0; j < %s; j++) { /* row j of W */", ll_of(e, s->n));
  e->indent++;
  emit_line(e, "const uint8_t *wj = w + (int64_t)j * %s;", ll_of(e, nb * bb));
  if (p != KP_C)
    emit_line(e, "const uint8_t *pf = w + (int64_t)(j + %d < %s ? j + %d : j) * %s;", QA_PREFETCH_ROWS, ll_of(e, s->n),
              QA_PREFETCH_ROWS, ll_of(e, nb * bb));
  emit_line(e, "for (int i = 0; i < %s; i++) {", mrows);
  e->indent++;
  emit_line(e, "const int8_t *xi = xq + (int64_t)i * %s;", ll_of(e, s->k));
  emit_line(e, "const float *gd = xgd + (int64_t)i * %s, *gm = xgm + (int64_t)i * %s;", ll_of(e, nb), ll_of(e, nb));
  text(e, p == KP_C ? "float sv = 0, ofs = 0, ofb = 0;" : "kq8f acc = {0}, acb = {0};\nfloat ofs = 0, ofb = 0;");
  /* pairs of blocks, then the odd one */
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 0 && nb < 2)
      continue;
    if (pass == 1 && nb % 2 == 0)
      break;
    if (pass == 0)
      emit_line(e, "for (int c = 0; c + 1 < %s; c += 2) { /* blocks c and c + 1 */", ll_of(e, nb));
    else
      emit_line(e, "{ /* the last block */");
    e->indent++;
    if (pass == 1)
      emit_line(e, "const int c = %s;", ll_of(e, nb - 1));
    for (int h = 0; h < (pass == 0 ? 2 : 1); h++) {
      emit_line(e, "{");
      e->indent++;
      emit_line(e, "const uint8_t *q = wj + (c + %d) * %d;", h, bb);
      if (p != KP_C && h == 0)
        emit_line(e, "__builtin_prefetch(pf + c * %d);", bb);
      emit_line(e, "const int8_t *xc = xi + (c + %d) * 32;", h);
      emit_line(e, "const float *gdc = gd + c + %d, *gmc = gm + c + %d;", h, h);
      q5_block(e, f, p, h ? "acb" : "acc", h ? "ofb" : "ofs");
      e->indent--;
      emit_line(e, "}");
    }
    e->indent--;
    emit_line(e, "}");
  }
  if (p != KP_C)
    text(e, "float sv = 0;\n"
            "for (int l = 0; l < 8; l++)\n"
            "  sv += acc[l] + acb[l];");
  emit_line(e, "sv %s (ofs + ofb);", f == BQ_Q5_1 ? "+=" : "-= 16 *");
  emit_line(e, "y[(int64_t)i * %s + j] = sv%s;", ll_of(e, s->n), s->bias ? " + bias[j]" : "");
  e->indent--;
  emit_line(e, "}");
  e->indent--;
  emit_line(e, "}");
}

void emit_qgemm_q8act(Emit *e, const QGemmSpec *s) {
  BqFormat f = s->fmt;
  int gs = f == BQ_Q6_K ? 16 : 32;
  void (*rows_of)(Emit *, const QGemmSpec *, KPath, const char *, double) = bq_is_q5(f) ? emit_rows_q5 : emit_rows;
  int64_t ng = s->k / gs, rows = s->m;
  const char *mrows = s->rows ? "m_run" : ll_of(e, s->m);
  /* about 10 GB/s of weight or 40 GOP/s, whichever is slower */
  double wbytes = (double)s->n * (double)bq_row_bytes(f, s->k);
  double ops = 2.0 * (double)s->m * (double)s->n * (double)s->k, ns = wbytes / 10 > ops / 40 ? wbytes / 10 : ops / 40;
  e->uses_vnni = true; /* <immintrin.h> where the C compiler targets AVX2 or AVX-512 */
  emit_line(e, "/* --kquant-act=q8: X's rows as int8, %d values a scale (bq_quantize_act_q8), and per %d "
               "values the scale (xgd) and the scale times Σq (xgm) */", BQ_ACT_BLOCK, gs);
  emit_line(e, "int8_t xq[%s];", ll_of(e, rows * s->k));
  emit_line(e, "float xgd[%s], xgm[%s];", ll_of(e, rows * ng), ll_of(e, rows * ng));
  emit_line(e, "for (int i = 0; i < %s; i++)", mrows);
  emit_line(e, "  for (int b = 0; b < %s; b++) {", ll_of(e, s->k / BQ_ACT_BLOCK));
  e->indent += 2;
  emit_line(e, "const float *xb = a + (int64_t)i * %s + b * %d;", ll_of(e, s->k), BQ_ACT_BLOCK);
  emit_line(e, "int8_t *qb = xq + (int64_t)i * %s + b * %d;", ll_of(e, s->k), BQ_ACT_BLOCK);
  emit_line(e, "float amax = 0;");
  emit_line(e, "for (int l = 0; l < %d; l++)", BQ_ACT_BLOCK);
  emit_line(e, "  amax = fabsf(xb[l]) > amax ? fabsf(xb[l]) : amax;");
  emit_line(e, "const float db = amax / 127.0f, id = db != 0.0f ? 1.0f / db : 0.0f;");
  emit_line(e, "for (int l = 0; l < %d; l++)", BQ_ACT_BLOCK);
  emit_line(e, "  qb[l] = (int8_t)nearbyintf(xb[l] * id);");
  emit_line(e, "for (int h = 0; h < %d; h++) {", BQ_ACT_BLOCK / gs);
  emit_line(e, "  int sq = 0;");
  emit_line(e, "  for (int l = 0; l < %d; l++)", gs);
  emit_line(e, "    sq += qb[%d * h + l];", gs);
  emit_line(e, "  xgd[(int64_t)i * %s + b * %d + h] = db;", ll_of(e, ng), BQ_ACT_BLOCK / gs);
  emit_line(e, "  xgm[(int64_t)i * %s + b * %d + h] = db * (float)sq;", ll_of(e, ng), BQ_ACT_BLOCK / gs);
  emit_line(e, "}");
  e->indent -= 2;
  emit_line(e, "  }");
  if (f == BQ_Q8_K)
    emit_line(e, "(void)xgm; /* read by the AVX512-VNNI path only */");
  const char *gnu = "defined(__GNUC__) && !defined(KILN_GEMM_SCALAR) && (defined(__clang__) || __GNUC__ >= 9)";
  bool w512 = e->isa != ISA_AVX2, w256 = true;
  bool first = true;
  if (w512) {
    emit_line(e, "#if %s && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && "
                 "defined(__AVX512VNNI__)", gnu);
    emit_line(e, "/* AVX512-VNNI: 64 quants a vpdpbusd */");
    emit_line(e, "{");
    e->indent++;
    rows_of(e, s, KP_512, mrows, ns);
    e->indent--;
    emit_line(e, "}");
    first = false;
  }
  if (w256) {
    emit_line(e, "#%s %s && defined(__AVX2__)", first ? "if" : "elif", gnu);
    emit_line(e, "/* AVX2: 32 quants a vpmaddubsw + vpmaddwd */");
    emit_line(e, "{");
    e->indent++;
    rows_of(e, s, KP_256, mrows, ns);
    e->indent--;
    emit_line(e, "}");
  }
  emit_line(e, "#else");
  emit_line(e, "/* plain C: the integer dot of each sub-block */");
  emit_line(e, "{");
  e->indent++;
  rows_of(e, s, KP_C, mrows, ns);
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "#endif");
}
