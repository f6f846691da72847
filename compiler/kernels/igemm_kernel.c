/* igemm_kernel.c — the int8 x int8 GEMM of --quantize=w8a8 (a Linear
 * with act_quant="u8"): X's rows quantized to u8 at run time, the int8
 * weight packed for vpdpbusd at compile time, the sums exact in int32.
 *
 * Rows. A pre-pass turns a block of X's rows into u8, each row with its
 * own scale s[i] and zero point z[i] (the rule of w8a8_quantize_row,
 * compiler/ops/fused.c, step for step in f32: min/max with 0 included,
 * 1/s, round half to even, clamp) -- or, per tensor (act_quant=
 * "u8_tensor"), with the one scale and zero point that ONNX's
 * DynamicQuantizeLinear finds over all of X, dividing by the scale as it
 * does, found by one pass over X before the first block -- into a local array au of MB rows of
 * ceil(K/4) int32 words (four u8 a word, the tail zero). MB is every row
 * when M·K fits IG_BLOCK_BYTES (MiniLM's largest, 128 x 1536, is 192 KiB),
 * else the rows go in blocks of MB and the rest. With spec.rot, each row
 * is first multiplied by the block Hadamard matrix (Linear's act_rot): the
 * butterflies of w8a8_rotate_row in its order, 16 or 8 floats a vector,
 * the steps within a vector by a lane permutation, a sign flip (xor) and
 * an add, so every lane does the scalar code's p + q or p - q exactly.
 *
 * Layout. Bq s8 [K,N] is packed into panels of IG_NR = 32 columns; in a
 * panel, group g (k = 4g .. 4g+3) is one row of 32 columns x 4 bytes: byte
 * 4j + t is Bq[4g + t][p·32 + j] (k past K are zero), so a 64-byte vector
 * is 16 columns' 4 k, what vpdpbusd multiplies by a broadcast word of 4 u8.
 * The last N % 32 columns form an edge panel, 16 or 32 wide, zero-padded.
 *
 * Tiles. Rows in register tiles (as even as the budget allows, as in
 * gemm_kernel.c) by chunks of columns, int32 accumulators; per group of 4
 * k, one load of B per vector, one broadcast of A per row, one dot per
 * accumulator. The path is picked when the generated C is compiled:
 *
 *   __AVX512VNNI__ && __AVX512F__        _mm512_dpbusd_epi32:  8 rows x 32 columns
 *   __AVX512VNNI__ && __AVX512VL__       _mm256_dpbusd_epi32:  6 rows x 16 columns
 *   __AVXVNNI__                          _mm256_dpbusd_avx_epi32, the same tiles
 *   __AVX2__                             u8 and s8 widened to int16, vpmaddwd
 *                                        (exact, unlike vpmaddubsw, which
 *                                        saturates at int16): 4 rows x 8 columns
 *   else                                 plain C over the same panels
 *
 * and, before them all, AMX (TDPBUSD on 16 x 64-byte tiles, runtime/kiln_rt.h's
 * KILN_TILE_* macros) where the build targets it and kiln_amx_ready() says
 * the CPU grants it, under --isa=avx512 and portable: a group of a panel is
 * a tile row (32 columns x 4 bytes, two column tiles 128 bytes apart), so
 * the panels pad K to 16 groups (the tile's 64 k) and au its rows to 16
 * and its words to the same; blocks of 32 rows x 32 columns (four C tiles),
 * the sums through a local array to the VNNI tiles' epilogue, row by row:
 * the same bytes as the other paths. -DKILN_AMX_EMULATE runs it on a C
 * model of the instruction anywhere (tests).
 *
 * (the vector paths need GNU C; -DKILN_GEMM_SCALAR forces plain C,
 * -DKILN_IGEMM_NO512 the 256-bit paths, for tests). --isa=portable writes
 * them all; avx512 the 512-bit VNNI path and the AVX2 one (an AVX-512 CPU
 * without VNNI, Skylake-X), avx2 AVX-VNNI's and the AVX2 one, each after
 * the plain C (vector_views.h); the row pre-pass's vector loops likewise. Every path computes
 * the same int32 sums, so only the epilogue rounds: (float)(acc - z[i]·
 * colsum[n]) · (s[i]·scale[n]) + bias, the activation (GELU by
 * KILN_ERFF_VEC on the vectors), the residual.
 *
 * Threads: the chunks of full panels are split among the threads (each
 * writes its own columns), and the pre-pass's rows. */
#include "igemm_kernel.h"
#include "vector_views.h"

#include <string.h>

#define IG_NR 32                /* columns of a panel */
#define IG_BLOCK_BYTES 262144   /* the most bytes of quantized rows on the stack */

/* The problem's shape and the packed panels. */
typedef struct IGeo {
  int64_t m, n, k, k4; /* k4 = ceil(K/4): groups of 4 k */
  int64_t kp;          /* words of a row of au, groups of a panel: k4, or with the AMX path
                          k4 rounded up to 16 (whole tiles of 64 bytes; the rest zero) */
  bool amx;            /* the AMX path is written (ig_amx_written) */
  int64_t npf;         /* full panels */
  int pwe, nrem;       /* the edge panel: width (16 or 32) and valid columns (0: none) */
  int64_t mb;          /* rows quantized at a time */
  double ns;           /* estimated serial time of the product */
} IGeo;

/* One way of computing the tiles. */
typedef enum { IP_512, IP_256VL, IP_256AVX, IP_AVX2, IP_C } IPathId;

typedef struct IPath {
  IPathId id;
  const char *cond; /* the #if that picks it */
  const char *what; /* for the comment */
  int vw, cw, mr;   /* int32 lanes a vector, columns a tile, rows a tile at most */
} IPath;

#define IG_GNU "defined(__GNUC__) && (defined(__clang__) || __GNUC__ >= 9) && !defined(KILN_GEMM_SCALAR)"

static const IPath paths[] = {
    {IP_512, IG_GNU " && defined(__AVX512VNNI__) && defined(__AVX512F__) && !defined(KILN_IGEMM_NO512)",
     "AVX512-VNNI: _mm512_dpbusd_epi32", 16, 32, 8},
    {IP_256VL, IG_GNU " && defined(__AVX512VNNI__) && defined(__AVX512VL__)",
     "AVX512-VNNI on 256 bits: _mm256_dpbusd_epi32", 8, 16, 6},
    {IP_256AVX, IG_GNU " && defined(__AVXVNNI__)", "AVX-VNNI: _mm256_dpbusd_avx_epi32", 8, 16, 6},
    {IP_AVX2, IG_GNU " && defined(__AVX2__)", "AVX2: u8 and s8 widened to int16, _mm256_madd_epi16", 8, 8, 4},
};

/* The paths --isa writes: portable all of them; avx512 the 512-bit VNNI
 * one and, for an AVX-512 CPU without VNNI (Skylake-X), the AVX2 one;
 * avx2 AVX-VNNI's and the AVX2 one (vector_views.h has the layout). */
static bool ipath_written(EmitIsa isa, IPathId id) {
  switch (isa) {
  case ISA_AVX512: return id == IP_512 || id == IP_AVX2;
  case ISA_AVX2: return id == IP_256AVX || id == IP_AVX2;
  default: return true;
  }
}

/* Does --isa write the AMX path (KILN_AMX, runtime/kiln_rt.h)? avx512 and
 * portable: the CPUs with AMX have AVX-512, and its epilogue is the 16-wide
 * one. */
static bool ig_amx_written(EmitIsa isa) { return isa == ISA_AVX512 || isa == ISA_GENERIC; }

/* Does --isa write the helpers' vw-float vector loops (16: AVX-512, 8: AVX)? */
static bool vw_written(EmitIsa isa, int vw) {
  return isa == ISA_GENERIC || vw == (isa == ISA_AVX512 ? 16 : 8);
}

static const char *str(Emit *e, Buf *b) {
  const char *r = arena_strdup(e->g->arena, b->s ? b->s : "");
  buf_free(b);
  return r;
}

/* Bq packed into the panels (arena memory, *len bytes). */
static int8_t *ig_pack(Emit *e, const IGemmSpec *s, const IGeo *g, int64_t *len) {
  *len = g->kp * 4 * (g->npf * IG_NR + (g->nrem ? g->pwe : 0));
  int8_t *pk = arena_alloc(e->g->arena, (size_t)(*len ? *len : 1));
  memset(pk, 0, (size_t)(*len ? *len : 1));
  for (int64_t j = 0; j < s->n; j++) {
    int64_t p = j / IG_NR, jj = j % IG_NR, pw = p < g->npf ? IG_NR : g->pwe;
    for (int64_t t = 0; t < s->k; t++)
      pk[p * g->kp * 4 * IG_NR + (t / 4) * pw * 4 + jj * 4 + t % 4] = s->bq[t * s->n + j];
  }
  return pk;
}

/* ---- the pre-pass: X's rows as u8 ------------------------------------------ */

/* The sign mask of butterfly distance h < vw: the lanes whose bit h is set
 * (they take p - q) get the float sign bit. */
static const char *sign_lanes(Emit *e, int vw, int h) {
  Buf b = {0};
  for (int i = 0; i < vw; i++)
    buf_printf(&b, "%s%s", i ? ", " : "", i & h ? "(-2147483647 - 1)" : "0");
  return str(e, &b);
}

/* xr[0..K) = ar's row times the block Hadamard matrix (blocks of B), with
 * vw-float vectors (16: AVX-512, 8: AVX) or plain C (vw 0). */
static void emit_rotate_path(Emit *e, const IGeo *g, int b, int vw) {
  if (!vw) {
    emit_line(e, "memcpy(xr, ar, sizeof xr);");
    emit_line(e, "for (int b0 = 0; b0 < %lld; b0 += %d)", (long long)g->k, b);
    emit_line(e, "  for (int h = 1; h < %d; h *= 2)", b);
    emit_line(e, "    for (int i2 = b0; i2 < b0 + %d; i2 += 2 * h)", b);
    emit_line(e, "      for (int c = i2; c < i2 + h; c++) {");
    emit_line(e, "        const float p = xr[c], q = xr[c + h];");
    emit_line(e, "        xr[c] = p + q;");
    emit_line(e, "        xr[c + h] = p - q;");
    emit_line(e, "      }");
    return;
  }
  bool z = vw == 16;
  const char *vt = z ? "__m512" : "__m256";
  int nv = b / vw;
  for (int h = 1; h < vw; h *= 2)
    emit_line(e, "const %si sg%d = %s(%s);", vt, h, z ? "_mm512_setr_epi32" : "_mm256_setr_epi32", sign_lanes(e, vw, h));
  emit_line(e, "for (int b0 = 0; b0 < %lld; b0 += %d) {", (long long)g->k, b);
  e->indent++;
  for (int v = 0; v < nv; v++)
    emit_line(e, "%s v%d = %s(ar + b0 + %d);", vt, v, z ? "_mm512_loadu_ps" : "_mm256_loadu_ps", v * vw);
  for (int h = 1; h < vw; h *= 2) {
    const char *perm = z ? (h == 1 ? "_mm512_permute_ps(v%d, 0xB1)" : h == 2 ? "_mm512_permute_ps(v%d, 0x4E)"
                            : h == 4 ? "_mm512_shuffle_f32x4(v%d, v%d, 0xB1)" : "_mm512_shuffle_f32x4(v%d, v%d, 0x4E)")
                         : (h == 1 ? "_mm256_permute_ps(v%d, 0xB1)" : h == 2 ? "_mm256_permute_ps(v%d, 0x4E)"
                            : "_mm256_permute2f128_ps(v%d, v%d, 0x01)");
    for (int v = 0; v < nv; v++) {
      const char *pv = arena_printf(e->g->arena, perm, v, v);
      if (z)
        emit_line(e, "v%d = _mm512_add_ps(_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v%d), sg%d)), %s);",
                  v, v, h, pv);
      else
        emit_line(e, "v%d = _mm256_add_ps(_mm256_xor_ps(v%d, _mm256_castsi256_ps(sg%d)), %s);", v, v, h, pv);
    }
  }
  for (int h = vw; h < b; h *= 2) {
    int d = h / vw;
    for (int v = 0; v < nv; v++)
      if (!(v & d))
        emit_line(e, "{ const %s p = v%d; v%d = %s(p, v%d); v%d = %s(p, v%d); }", vt, v, v,
                  z ? "_mm512_add_ps" : "_mm256_add_ps", v + d, v + d, z ? "_mm512_sub_ps" : "_mm256_sub_ps", v + d);
  }
  for (int v = 0; v < nv; v++)
    emit_line(e, "%s(xr + b0 + %d, v%d);", z ? "_mm512_storeu_ps" : "_mm256_storeu_ps", v * vw, v);
  e->indent--;
  emit_line(e, "}");
}

/* The rotation of the row (spec.rot): ar then points to the rotated copy. */
static void emit_rotate_row(Emit *e, const IGeo *g, int b) {
  emit_line(e, "float xr[%lld] __attribute__((aligned(64))); /* the row times the block Hadamard matrix (blocks of %d) */",
            (long long)g->k, b);
  SimdPaths sp = simd_paths(e);
  int vws[2];
  for (int vw = 16; vw >= 8; vw /= 2)
    if (vw_written(e->isa, vw)) {
      vws[sp.n] = vw;
      simd_paths_add(&sp, vw == 16 ? "defined(__GNUC__) && defined(__AVX512F__) && !defined(KILN_GEMM_SCALAR)"
                                   : "defined(__GNUC__) && defined(__AVX__) && !defined(KILN_GEMM_SCALAR)");
    }
  if (sp.plain_first) {
    simd_paths_plain(e, &sp);
    emit_rotate_path(e, g, b, 0);
  }
  for (int i = 0; i < sp.n; i++) {
    simd_paths_body(e, &sp, i);
    emit_rotate_path(e, g, b, vws[i]);
  }
  if (!sp.plain_first) {
    simd_paths_plain(e, &sp);
    emit_rotate_path(e, g, b, 0);
  }
  simd_paths_end(e, &sp);
  emit_line(e, "ar = xr;");
}

/* The vector part of emit_row_range for vw floats a vector (16: __m512,
 * 8: __m256), over the row's first kv elements. */
static void emit_row_range_vec(Emit *e, int vw, long long kv) {
  const char *ty = vw == 16 ? "__m512" : "__m256", *fn = vw == 16 ? "_mm512" : "_mm256";
  emit_line(e, "{");
  emit_line(e, "  %s vmn = %s_setzero_ps(), vmx = vmn;", ty, fn);
  emit_line(e, "  for (; t < %lld; t += %d) {", kv, vw);
  emit_line(e, "    const %s x = %s_loadu_ps(ar + t);", ty, fn);
  emit_line(e, "    vmn = %s_min_ps(x, vmn);", fn);
  emit_line(e, "    vmx = %s_max_ps(x, vmx);", fn);
  emit_line(e, "  }");
  emit_line(e, "  float l[%d];", 2 * vw);
  emit_line(e, "  %s_storeu_ps(l, vmn);", fn);
  emit_line(e, "  %s_storeu_ps(l + %d, vmx);", fn, vw);
  emit_line(e, "  for (int j = 0; j < %d; j++) {", vw);
  emit_line(e, "    mn = l[j] < mn ? l[j] : mn;");
  emit_line(e, "    mx = l[%d + j] > mx ? l[%d + j] : mx;", vw, vw);
  emit_line(e, "  }");
  emit_line(e, "}");
}

/* mn, mx = the min and max of ar[0 .. len) with 0 included (t counts the
 * elements done: the vector loops, then the rest): a row of X, or all of
 * X for a per-tensor scale. */
static void emit_row_range(Emit *e, int64_t len) {
  long long k = len, k16 = len / 16 * 16, k8 = len / 8 * 8;
  emit_line(e, "float mn = 0, mx = 0;");
  emit_line(e, "int t = 0;");
  /* the vector loop of the widths --isa writes (the widest the C compiler targets) */
  bool v16 = vw_written(e->isa, 16), v8 = vw_written(e->isa, 8);
  if (v16) {
    emit_line(e, "#if defined(__GNUC__) && defined(__AVX512F__) && !defined(KILN_GEMM_SCALAR)");
    if (k16)
      emit_row_range_vec(e, 16, k16);
  }
  if (v8) {
    emit_line(e, "#%s defined(__GNUC__) && defined(__AVX__) && !defined(KILN_GEMM_SCALAR)", v16 ? "elif" : "if");
    if (k8)
      emit_row_range_vec(e, 8, k8);
  }
  emit_line(e, "#endif");
  emit_line(e, "for (; t < %lld; t++) {", k);
  emit_line(e, "  mn = ar[t] < mn ? ar[t] : mn;");
  emit_line(e, "  mx = ar[t] > mx ? ar[t] : mx;");
  emit_line(e, "}");
}

/* ur = the row ar as u8 by inv and zf, or (per tensor) by dividing by sd
 * as DynamicQuantizeLinear does (the vector loop, then the rest). */
static void emit_row_u8(Emit *e, const IGeo *g, bool per_tensor) {
  long long k = g->k, kp = g->kp, k16 = g->k / 16 * 16;
  const char *op = per_tensor ? "div" : "mul", *by = per_tensor ? "sd" : "inv";
  emit_line(e, "t = 0;");
  bool v16 = vw_written(e->isa, 16); /* the only vector loop: AVX-512's */
  if (v16)
    emit_line(e, "#if defined(__GNUC__) && defined(__AVX512F__) && !defined(KILN_GEMM_SCALAR)");
  if (v16 && k16) {
    emit_line(e, "{");
    emit_line(e, "  const __m512 vby = _mm512_set1_ps(%s), vz = _mm512_set1_ps(zf), v0 = _mm512_setzero_ps(), "
                 "v255 = _mm512_set1_ps(255.0f);", by);
    emit_line(e, "  for (; t < %lld; t += 16) {", k16);
    emit_line(e, "    __m512 q = _mm512_roundscale_ps(_mm512_%s_ps(_mm512_loadu_ps(ar + t), vby), "
                 "_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);", op);
    emit_line(e, "    q = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(q, vz), v0), v255);");
    emit_line(e, "    _mm_storeu_si128((__m128i *)(void *)(ur + t), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(q)));");
    emit_line(e, "  }");
    emit_line(e, "}");
  }
  if (v16)
    emit_line(e, "#endif");
  emit_line(e, "for (; t < %lld; t++) {", k);
  emit_line(e, "  float q = nearbyintf(ar[t] %s %s) + zf;", per_tensor ? "/" : "*", by);
  emit_line(e, "  q = q > 0 ? q : 0;");
  emit_line(e, "  q = q < 255 ? q : 255;");
  emit_line(e, "  ur[t] = (uint8_t)q;");
  emit_line(e, "}");
  if (4 * kp > k)
    emit_line(e, "memset(ur + %lld, 0, %lld);", k, 4 * kp - k);
}

/* Rows [off, off + rows) of X into au, as, az: the f32 steps of
 * w8a8_quantize_row (compiler/ops/fused.c), or per tensor those of
 * w8a8_tensor_params and w8a8_quantize_div there. The vector forms keep its
 * results: min_ps(x, m) is x < m ? x : m, max_ps(q, 0) is q > 0 ? q : 0,
 * and the u8 are integers below 256 in f32. */
static void emit_quantize_rows(Emit *e, const IGemmSpec *s, const IGeo *g, int64_t rows, const char *off) {
  long long k = g->k, kp = g->kp;
  emit_parallel_for(e, rows, (s->rot ? 1.0 : 0.5) * (double)rows * (double)k);
  emit_line(e, "for (int i = 0; i < %lld; i++) { /* row i: u8, scale and zero point */", (long long)rows);
  e->indent++;
  emit_line(e, "const float *ar = a + (%s + i) * %lld; /* [%lld] */", off, k, k);
  if (s->rot)
    emit_rotate_row(e, g, s->rot);
  if (4 * kp > k)
    emit_line(e, "uint8_t *ur = (uint8_t *)(au + i * %lld); /* [%lld], the last %lld zero */", kp, 4 * kp, 4 * kp - k);
  else
    emit_line(e, "uint8_t *ur = (uint8_t *)(au + i * %lld); /* [%lld] */", kp, 4 * kp);
  if (s->per_tensor) { /* X's scale ts and zero point tz, found before the blocks */
    emit_line(e, "const float zf = tz;");
    emit_line(e, "int t;");
    emit_row_u8(e, g, true);
    emit_line(e, "as[i] = ts;");
    emit_line(e, "az[i] = (int32_t)tz;");
  } else {
    emit_row_range(e, g->k);
    emit_line(e, "float sc = (mx - mn) / 255.0f;");
    emit_line(e, "sc = sc >= 0x1p-126f ? sc : 1.0f; /* a zero row (or one below FLT_MIN): any scale */");
    emit_line(e, "const float inv = 1.0f / sc;");
    emit_line(e, "float zf = nearbyintf(-mn * inv);");
    emit_line(e, "zf = zf > 0 ? zf : 0;");
    emit_line(e, "zf = zf < 255 ? zf : 255;");
    emit_row_u8(e, g, false);
    emit_line(e, "as[i] = sc;");
    emit_line(e, "az[i] = (int32_t)zf;");
  }
  e->indent--;
  emit_line(e, "}");
}

/* Per tensor: ts, tz = the scale and zero point of all of X[M,K] by
 * DynamicQuantizeLinear's rule, (max - min) / 255 and round(0 - min / s)
 * clamped (w8a8_tensor_params in compiler/ops/fused.c); sd, what the rows
 * divide by (1 when s is 0: X is then all zeros, every u is tz = 0). */
static void emit_tensor_params(Emit *e, const IGemmSpec *s) {
  if (s->fixed) { /* a static QuantizeLinear's constants */
    emit_line(e, "const float ts = %s, tz = %d.0f; /* X's scale and zero point, fixed */",
              emit_double_literal(e, DT_F32, s->fixed_scale), s->fixed_zp);
    emit_line(e, "const float sd = ts;");
    return;
  }
  emit_line(e, "float ts, tz; /* X as one tensor: scale and zero point (DynamicQuantizeLinear's rule) */");
  emit_line(e, "{");
  e->indent++;
  emit_line(e, "const float *ar = a; /* all of X, [%lld] */", (long long)(s->m * s->k));
  emit_row_range(e, s->m * s->k);
  emit_line(e, "ts = (mx - mn) / 255.0f;");
  emit_line(e, "tz = ts > 0.0f ? nearbyintf(0.0f - mn / ts) : 0.0f;");
  emit_line(e, "tz = tz < 0.0f ? 0.0f : tz > 255.0f ? 255.0f : tz;");
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "const float sd = ts > 0.0f ? ts : 1.0f;");
}

/* ---- one register tile -------------------------------------------------------- */

/* The tile's epilogue on GNU vectors of vw int32 (c<r>_<v>): scale, zero
 * point, bias, activation, residual, the store of `valid` columns. */
static void emit_tile_epilogue(Emit *e, const IGemmSpec *s, const IPath *pt, int mr, int nv, int valid) {
  int vw = pt->vw;
  const char *vf = arena_printf(e->g->arena, "v%df", vw), *vi = arena_printf(e->g->arena, "v%di", vw);
  long long n = s->n;
  for (int v = 0; v < nv; v++) {
    int cols = valid - v * vw < vw ? valid - v * vw : vw;
    emit_line(e, "%s cs%d = {0}; memcpy(&cs%d, colsum_p + %d, %d);", vi, v, v, v * vw, 4 * cols);
    emit_line(e, "%s sc%d = {0}; memcpy(&sc%d, scale_p + %d, %d);", vf, v, v, v * vw, 4 * cols);
    if (s->bias)
      emit_line(e, "%s bv%d = {0}; memcpy(&bv%d, bias_p + %d, %d);", vf, v, v, v * vw, 4 * cols);
  }
  for (int r = 0; r < mr; r++) {
    emit_line(e, "{ /* row i0 + %d */", r);
    e->indent++;
    emit_line(e, "const %s zr = (%s){0} + az[i0 + %d];", vi, vi, r);
    emit_line(e, "const %s sr = (%s){0} + as[i0 + %d];", vf, vf, r);
    for (int v = 0; v < nv; v++) {
      int cols = valid - v * vw < vw ? valid - v * vw : vw;
      const char *yp = arena_printf(e->g->arena, "yt + %lld", (long long)r * n + v * vw);
      emit_line(e, "{");
      e->indent++;
      emit_line(e, "%s f = __builtin_convertvector(c%d_%d - zr * cs%d, %s) * (sr * sc%d);", vf, r, v, v, vf, v);
      if (s->bias)
        emit_line(e, "f += bv%d;", v);
      if (s->act == GEMM_ACT_RELU)
        emit_line(e, "f = (%s)((%s)f & (%s)(f > (%s){0}));", vf, vi, vi, vf);
      else if (s->act == GEMM_ACT_GELU)
        emit_line(e, "f = f * (0.5f + 0.5f * KILN_ERFF_VEC(%s, %s, f * 0x1.6a09e6p-1f));", vf, vi);
      if (s->residual && s->act != GEMM_ACT_GELU_TANH)
        emit_line(e, "{ %s rv = {0}; memcpy(&rv, rt + %lld, %d); f += rv; }", vf, (long long)r * n + v * vw, 4 * cols);
      emit_line(e, "memcpy(%s, &f, %d);", yp, 4 * cols);
      e->indent--;
      emit_line(e, "}");
    }
    e->indent--;
    emit_line(e, "}");
  }
  if (s->act == GEMM_ACT_GELU_TANH) { /* on the stored tile: kiln_tanhf vectorises there */
    emit_line(e, "for (int r = 0; r < %d; r++)", mr);
    emit_line(e, "  for (int j = 0; j < %d; j++) {", valid);
    emit_line(e, "    const float v = yt[r * %lld + j];", n);
    emit_line(e, "    yt[r * %lld + j] = (%s)%s;", n, gemm_act_expr(e, s->act, "v"),
              s->residual ? arena_printf(e->g->arena, " + rt[r * %lld + j]", n) : "");
    emit_line(e, "  }");
  }
}

/* Row r's word of group g: "a0[g]", "a0[96 + g]". */
static const char *aword(Emit *e, const IGeo *g, int r) {
  return r ? arena_printf(e->g->arena, "a0[%lld + g]", (long long)(r * g->kp)) : "a0[g]";
}

/* Rows i0 .. i0 + mr - 1 of the chunk at b (groups `stride` bytes apart),
 * nv vectors of it, `valid` real columns. */
static void emit_tile(Emit *e, const IGemmSpec *s, const IGeo *g, const IPath *pt, int mr, int nv, int64_t stride,
                      int valid) {
  Buf acc = {0}, ld = {0}, dot = {0};
  bool x512 = pt->id == IP_512, avx2 = pt->id == IP_AVX2;
  const char *vt = x512 ? "__m512i" : "__m256i";
  /* the VNNI accumulators are GNU int vectors, cast at each call: gcc 12
   * copies __m512i accumulators between registers and the stack at every
   * step of the loop (the intrinsic works on int lanes), and not these */
  const char *acct = avx2 ? vt : arena_printf(e->g->arena, "v%di", pt->vw);
  const char *zero = avx2 ? "_mm256_setzero_si256()" : arena_printf(e->g->arena, "(v%di){0}", pt->vw);
  int na = avx2 ? 2 : nv; /* AVX2: two accumulators per row (columns 0-3, 4-7) */
  /* the rows' words at a0[r * K4 + g]: one base register for the tile */
  emit_line(e, "const int32_t *a0 = au + i0 * %lld;", (long long)g->kp);
  for (int r = 0; r < mr; r++) {
    buf_printf(&acc, "%s%s ", r ? "\n" : "", acct);
    for (int v = 0; v < na; v++)
      buf_printf(&acc, "%sacc%d_%d = %s", v ? ", " : "", r, v, zero);
    buf_puts(&acc, ";");
  }
  int vbytes = x512 ? 64 : 32;
  if (avx2) {
    buf_printf(&ld, "const __m256i braw = _mm256_loadu_si256((const __m256i *)(const void *)(b + g * %lld));\n",
               (long long)stride);
    buf_puts(&ld, "const __m256i b0 = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(braw)), "
                  "b1 = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(braw, 1));");
  } else {
    for (int v = 0; v < nv; v++)
      buf_printf(&ld, "%sconst %s b%d = %s((const void *)(b + g * %lld + %d));", v ? "\n" : "", vt, v,
                 x512 ? "_mm512_loadu_si512" : "_mm256_loadu_si256", (long long)stride, v * vbytes);
  }
  const char *dp = pt->id == IP_512 ? "_mm512_dpbusd_epi32" : pt->id == IP_256VL ? "_mm256_dpbusd_epi32"
                                                                                 : "_mm256_dpbusd_avx_epi32";
  for (int r = 0; r < mr; r++) {
    if (avx2) {
      buf_printf(&dot, "%s{ const __m256i ar = _mm256_cvtepu8_epi16(_mm_set1_epi32(%s)); "
                       "acc%d_0 = _mm256_add_epi32(acc%d_0, _mm256_madd_epi16(ar, b0)); "
                       "acc%d_1 = _mm256_add_epi32(acc%d_1, _mm256_madd_epi16(ar, b1)); }",
                 r ? "\n" : "", aword(e, g, r), r, r, r, r);
      continue;
    }
    buf_printf(&dot, "%s{ const %s ar = %s(%s);", r ? "\n" : "", vt, x512 ? "_mm512_set1_epi32" : "_mm256_set1_epi32",
               aword(e, g, r));
    for (int v = 0; v < nv; v++)
      buf_printf(&dot, " acc%d_%d = (%s)%s((%s)acc%d_%d, ar, b%d);", r, v, acct, dp, vt, r, v, v);
    buf_puts(&dot, " }");
  }
  emit_tmpl(e, "igemm_tile", "ACC", str(e, &acc), "K4", emit_int(e, g->k4), "LOADB", str(e, &ld), "DOT", str(e, &dot),
            NULL);
  for (int r = 0; r < mr; r++)
    for (int v = 0; v < nv; v++) {
      if (avx2)
        emit_line(e, "const v8i c%d_0 = (v8i)_mm256_permute4x64_epi64(_mm256_hadd_epi32(acc%d_0, acc%d_1), 0xD8); "
                     "/* columns 0-3 and 4-7 back in order */", r, r, r);
      else
        emit_line(e, "const v%di c%d_%d = acc%d_%d;", pt->vw, r, v, r, v);
    }
  emit_line(e, "float *yt = ya + i0 * %lld + col; /* the tile's first element of Y */", (long long)s->n);
  if (s->residual)
    emit_line(e, "const float *rt = ra + i0 * %lld + col;", (long long)s->n);
  emit_tile_epilogue(e, s, pt, mr, nv, valid);
}

/* The row tiles of one chunk (b, col and the column pointers set). */
static void emit_chunk_rows(Emit *e, const IGemmSpec *s, const IGeo *g, const IPath *pt, int64_t rows, int nv,
                            int64_t stride, int valid) {
  int64_t tiles = (rows + pt->mr - 1) / pt->mr;
  int mr_hi = (int)((rows + tiles - 1) / tiles), mr_lo = mr_hi - 1;
  int64_t m_hi = (rows - tiles * mr_lo) * mr_hi;
  for (int part = 0; part < 2; part++) {
    int64_t i0 = part ? m_hi : 0, i1 = part ? rows : m_hi;
    int mr = part ? mr_lo : mr_hi;
    if (i1 <= i0)
      continue;
    emit_line(e, "for (int i0 = %lld; i0 < %lld; i0 += %d) { /* tiles of %d x %d */", (long long)i0, (long long)i1,
              mr, mr, valid);
    e->indent++;
    emit_tile(e, s, g, pt, mr, nv, stride, valid);
    e->indent--;
    emit_line(e, "}");
  }
}

/* The pointers of the chunk at bp + boff, column col. */
static void emit_chunk_ptrs(Emit *e, const IGemmSpec *s, const char *boff, const char *col) {
  emit_line(e, "const int8_t *b = bp + %s;", boff);
  emit_line(e, "const int col = %s;", col);
  emit_line(e, "const int32_t *colsum_p = colsum + col;");
  emit_line(e, "const float *scale_p = scale + col;");
  if (s->bias)
    emit_line(e, "const float *bias_p = bias + col;");
}

/* Path pt over every column: the chunks of the full panels (split among
 * the threads), then the edge panel's, on the lead alone (KILN_LEAD_ONLY:
 * outside a split loop every thread of the job runs the code, and a late
 * one would read the next block's rows or the lead's finished stack). */
static void emit_path(Emit *e, const IGemmSpec *s, const IGeo *g, const IPath *pt, int64_t rows) {
  int vw = pt->vw, cw = pt->cw, cpp = IG_NR / cw;
  long long panel = g->kp * 4 * IG_NR;
  emit_line(e, "typedef int v%di __attribute__((vector_size(%d)));", vw, 4 * vw);
  emit_line(e, "typedef float v%df __attribute__((vector_size(%d)));", vw, 4 * vw);
  int64_t nfc = g->npf * cpp;
  if (nfc > 0) {
    emit_parallel_for(e, nfc, g->ns * (double)rows / (double)g->m);
    emit_line(e, "for (int c = 0; c < %lld; c++) { /* columns %d * c .. %d * c + %d */", (long long)nfc, cw, cw,
              cw - 1);
    e->indent++;
    emit_chunk_ptrs(e, s,
                    cpp == 1 ? arena_printf(e->g->arena, "c * %lld", panel)
                             : arena_printf(e->g->arena, "c / %d * %lld + c %% %d * %d", cpp, panel, cpp, 4 * cw),
                    arena_printf(e->g->arena, "c * %d", cw));
    emit_chunk_rows(e, s, g, pt, rows, cw / vw, 4 * IG_NR, cw);
    e->indent--;
    emit_line(e, "}");
  }
  for (int q = 0; q * cw < g->nrem; q++) {
    int valid = g->nrem - q * cw < cw ? g->nrem - q * cw : cw;
    emit_line(e, "%s{ /* the edge panel: columns %lld .. %lld */", emit_lead_only(e),
              (long long)(g->npf * IG_NR + q * cw), (long long)(g->npf * IG_NR + q * cw + valid - 1));
    e->indent++;
    emit_chunk_ptrs(e, s, emit_int(e, g->npf * panel + q * cw * 4), emit_int(e, g->npf * IG_NR + q * cw));
    emit_chunk_rows(e, s, g, pt, rows, (valid + vw - 1) / vw, 4 * g->pwe, valid);
    e->indent--;
    emit_line(e, "}");
  }
}

/* The plain C path over the same panels. */
static void emit_path_c(Emit *e, const IGemmSpec *s, const IGeo *g, int64_t rows) {
  long long panel = g->kp * 4 * IG_NR, n = s->n;
  const char *epi = gemm_act_expr(e, s->act, "v");
  for (int edge = 0; edge < 2; edge++) {
    int64_t np = edge ? (g->nrem > 0) : g->npf;
    int pw = edge ? g->pwe : IG_NR, valid = edge ? g->nrem : IG_NR;
    if (np == 0)
      continue;
    if (!edge)
      emit_parallel_for(e, np, g->ns * (double)rows / (double)g->m);
    emit_line(e, "%sfor (int p = %lld; p < %lld; p++) { /* %s */", edge ? emit_lead_only(e) : "",
              (long long)(edge ? g->npf : 0), (long long)(edge ? g->npf + 1 : g->npf),
              edge ? "the edge panel" : "the full panels");
    e->indent++;
    emit_line(e, "const int8_t *b = bp + p * %lld; /* [%lld][%d][4] */", panel, (long long)g->kp, pw);
    emit_line(e, "for (int i = 0; i < %lld; i++) {", (long long)rows);
    e->indent++;
    emit_line(e, "const uint8_t *ar = (const uint8_t *)(au + i * %lld);", (long long)g->kp);
    emit_line(e, "int32_t acc[%d] = {0};", pw);
    emit_line(e, "for (int g = 0; g < %lld; g++)", (long long)g->k4);
    emit_line(e, "  for (int j = 0; j < %d; j++)", pw);
    emit_line(e, "    for (int t = 0; t < 4; t++)");
    emit_line(e, "      acc[j] += ar[4 * g + t] * b[(g * %d + j) * 4 + t];", pw);
    emit_line(e, "for (int j = 0; j < %d; j++) {", valid);
    e->indent++;
    emit_line(e, "const int c = p * %d + j;", IG_NR);
    emit_line(e, "const float v = (float)(acc[j] - az[i] * colsum[c]) * (as[i] * scale[c])%s;",
              s->bias ? " + bias[c]" : "");
    emit_line(e, "ya[i * %lld + c] = %s%s%s%s;", n, s->residual ? "(" : "", epi, s->residual ? ")" : "",
              s->residual ? arena_printf(e->g->arena, " + ra[i * %lld + c]", n) : "");
    e->indent--;
    emit_line(e, "}");
    e->indent--;
    emit_line(e, "}");
    e->indent--;
    emit_line(e, "}");
  }
}

/* ---- AMX: TDPBUSD on tiles ------------------------------------------------------ */

/* Rows it .. it + 16 * nrt - 1 (of which `rr` are real, a C expression) by
 * the nct tiles of 16 columns of the chunk at b (pw columns a group, `valid`
 * real): C tiles 0-3 (row tile r, column tile c: 2r + c), A's row tiles in
 * 4 and 5, B's column tiles in 6 and 7; 64 k (16 groups) a step. The sums
 * go through ct to the epilogue of the VNNI tiles, one row at a time. */
static void emit_amx_rows(Emit *e, const IGemmSpec *s, const IGeo *g, int nrt, int nct, int pw, int valid,
                          const char *rr) {
  long long kp = g->kp, n = s->n;
  for (int r = 0; r < nrt; r++)
    for (int c = 0; c < nct; c++)
      emit_line(e, "KILN_TILE_ZERO(%d);", 2 * r + c);
  emit_line(e, "for (int g = 0; g < %lld; g += 16) { /* 16 groups of 4 k */", kp);
  for (int r = 0; r < nrt; r++)
    emit_line(e, "  KILN_TILE_LOAD(%d, au + (it + %d) * %lld + g, %lld);", 4 + r, 16 * r, kp, 4 * kp);
  for (int c = 0; c < nct; c++)
    emit_line(e, "  KILN_TILE_LOAD(%d, b + g * %d%s, %d);", 6 + c, 4 * pw, c ? " + 64" : "", 4 * pw);
  for (int r = 0; r < nrt; r++)
    for (int c = 0; c < nct; c++)
      emit_line(e, "  KILN_TILE_DP_INT8(%d, %d, %d);", 2 * r + c, 4 + r, 6 + c);
  emit_line(e, "}");
  emit_line(e, "int32_t ct[32][32] __attribute__((aligned(64))); /* the tiles' sums */");
  for (int r = 0; r < nrt; r++)
    for (int c = 0; c < nct; c++)
      emit_line(e, "KILN_TILE_STORE(%d, ct[%d]%s, 128);", 2 * r + c, 16 * r, c ? " + 16" : "");
  emit_line(e, "for (int r = 0; r < %s; r++) {", rr);
  e->indent++;
  emit_line(e, "const int i0 = it + r; /* row i0 of the block */");
  int nv = (valid + 15) / 16;
  for (int v = 0; v < nv; v++)
    emit_line(e, "v16i c0_%d; memcpy(&c0_%d, ct[r] + %d, 64);", v, v, 16 * v);
  emit_line(e, "float *yt = ya + i0 * %lld + col;", n);
  if (s->residual)
    emit_line(e, "const float *rt = ra + i0 * %lld + col;", n);
  IPath pt = {IP_512, NULL, "AMX", 16, 32, 1};
  emit_tile_epilogue(e, s, &pt, 1, nv, valid);
  e->indent--;
  emit_line(e, "}");
}

/* The row blocks of one chunk: 32 rows at a time, then 16 (au's rows past
 * `rows` are zero). */
static void emit_amx_chunk(Emit *e, const IGemmSpec *s, const IGeo *g, int64_t rows, int pw, int valid) {
  int64_t r16 = (rows + 15) / 16 * 16, r32 = r16 / 32 * 32;
  int nct = pw / 16;
  emit_line(e, "KILN_TILE_REGS;");
  emit_line(e, "KILN_TILE_CONFIG();");
  if (r32 > 0) {
    emit_line(e, "for (int it = 0; it < %lld; it += 32) { /* rows it .. it + 31 */", (long long)r32);
    e->indent++;
    emit_amx_rows(e, s, g, 2, nct, pw, valid,
                  rows % 32 ? arena_printf(e->g->arena, "(%lld - it < 32 ? %lld - it : 32)", (long long)rows,
                                           (long long)rows)
                            : "32");
    e->indent--;
    emit_line(e, "}");
  }
  if (r16 > r32) {
    emit_line(e, "{ /* rows %lld .. %lld */", (long long)r32, (long long)rows - 1);
    e->indent++;
    emit_line(e, "const int it = %lld;", (long long)r32);
    emit_amx_rows(e, s, g, 1, nct, pw, valid, emit_int(e, rows - r32));
    e->indent--;
    emit_line(e, "}");
  }
  emit_line(e, "KILN_TILE_RELEASE();");
}

/* The AMX path over every column: the full panels (split among the
 * threads), then the edge panel; the edge panel and the zeroing of A's
 * padding rows on the lead alone, as in emit_path. */
static void emit_path_amx(Emit *e, const IGemmSpec *s, const IGeo *g, int64_t rows) {
  long long panel = g->kp * 4 * IG_NR, kp = g->kp;
  int64_t r16 = (rows + 15) / 16 * 16;
  emit_line(e, "/* AMX (TDPBUSD): tiles of 16 x 16 int32 sums, 32 x 32 a step */");
  emit_line(e, "typedef int v16i __attribute__((vector_size(64)));");
  emit_line(e, "typedef float v16f __attribute__((vector_size(64)));");
  if (r16 > rows)
    emit_line(e, "%smemset(au + %lld, 0, %lld); /* rows %lld .. %lld: whole tiles */", emit_lead_only(e),
              (long long)rows * kp, (long long)(r16 - rows) * kp * 4, (long long)rows, (long long)r16 - 1);
  if (g->npf > 0) {
    emit_parallel_for(e, g->npf, g->ns * (double)rows / (double)g->m);
    emit_line(e, "for (int c = 0; c < %lld; c++) { /* columns 32 * c .. 32 * c + 31 */", (long long)g->npf);
    e->indent++;
    emit_chunk_ptrs(e, s, arena_printf(e->g->arena, "c * %lld", panel), "c * 32");
    emit_amx_chunk(e, s, g, rows, IG_NR, IG_NR);
    e->indent--;
    emit_line(e, "}");
  }
  if (g->nrem) {
    emit_line(e, "%s{ /* the edge panel: columns %lld .. %lld */", emit_lead_only(e), (long long)(g->npf * IG_NR),
              (long long)(s->n - 1));
    e->indent++;
    emit_chunk_ptrs(e, s, emit_int(e, g->npf * panel), emit_int(e, g->npf * IG_NR));
    emit_amx_chunk(e, s, g, rows, g->pwe, g->nrem);
    e->indent--;
    emit_line(e, "}");
  }
}

/* One block of `rows` rows of X starting at row `off` (a C expression):
 * quantized, then the product by every path. */
static void emit_block(Emit *e, const IGemmSpec *s, const IGeo *g, int64_t rows, const char *off) {
  emit_quantize_rows(e, s, g, rows, off);
  emit_line(e, "float *ya = y + %s * %lld;", off, (long long)s->n);
  if (s->residual)
    emit_line(e, "const float *ra = res + %s * %lld;", off, (long long)s->n);
  if (g->amx) { /* AMX where the build targets it and the CPU grants it, else the paths below */
    emit_line(e, "#if defined(KILN_AMX)");
    emit_line(e, "if (kiln_amx_ready()) {");
    e->indent++;
    emit_path_amx(e, s, g, rows);
    e->indent--;
    emit_line(e, "} else");
    emit_line(e, "#endif");
    emit_line(e, "{");
    e->indent++;
  }
  SimdPaths sp = simd_paths(e);
  const IPath *pts[KILN_COUNT(paths)];
  for (int i = 0; i < KILN_COUNT(paths); i++)
    if (ipath_written(e->isa, paths[i].id)) {
      pts[sp.n] = &paths[i];
      simd_paths_add(&sp, paths[i].cond);
    }
  if (sp.plain_first) {
    simd_paths_plain(e, &sp);
    emit_path_c(e, s, g, rows);
  }
  for (int i = 0; i < sp.n; i++) {
    simd_paths_body(e, &sp, i);
    emit_line(e, "/* %s: register tiles of up to %d x %d */", pts[i]->what, pts[i]->mr, pts[i]->cw);
    emit_path(e, s, g, pts[i], rows);
  }
  if (!sp.plain_first) {
    simd_paths_plain(e, &sp);
    emit_path_c(e, s, g, rows);
  }
  simd_paths_end(e, &sp);
  if (g->amx) {
    e->indent--;
    emit_line(e, "}");
  }
}

bool emit_igemm(Emit *e, const IGemmSpec *s) {
  if (s->m < 0 || s->n < 0 || s->k < 0 || s->k > INT32_MAX / (255 * 127) ||
      (s->rot && ((s->rot != 16 && s->rot != 32 && s->rot != 64) || s->k % s->rot || s->per_tensor)) ||
      (s->fixed && (!s->per_tensor || !(s->fixed_scale > 0) || s->fixed_zp < 0 || s->fixed_zp > 255)))
    return false;
  if (s->m == 0 || s->n == 0)
    return true;
  Arena *a = e->g->arena;
  IGeo g = {.m = s->m, .n = s->n, .k = s->k, .k4 = (s->k + 3) / 4, .npf = s->n / IG_NR};
  g.nrem = (int)(s->n % IG_NR);
  g.pwe = g.nrem > 16 ? 32 : 16;
  g.amx = ig_amx_written(e->isa);
  g.kp = g.amx ? (g.k4 + 15) / 16 * 16 : g.k4;
  int64_t row_bytes = 4 * (g.kp ? g.kp : 1);
  g.mb = IG_BLOCK_BYTES / row_bytes < 1 ? 1 : IG_BLOCK_BYTES / row_bytes;
  g.mb = g.mb > s->m ? s->m : g.mb;
  int64_t mbp = g.amx ? (g.mb + 15) / 16 * 16 : g.mb; /* au's rows: whole tiles of 16 for AMX */
  g.ns = 2.0 * (double)s->m * (double)s->n * (double)s->k / 400; /* about 400 GOP/s */
  e->uses_vnni = true;
  int64_t len;
  int8_t *pk = ig_pack(e, s, &g, &len);
  const char *bname = s->b_name ? arena_printf(a, " '%s'", s->b_name) : "";
  const char *bp = emit_const_array(
      e, DT_I8, pk, len, arena_printf(a, "%s_vnni", s->b_name ? s->b_name : "b"),
      arena_printf(a, "B%s [%lld,%lld] int8 packed for vpdpbusd (--quantize=w8a8): %lld panels [%lld][%d][4], "
                      "byte [g][j][t] = B[4g + t][32p + j]%s%s", bname, (long long)s->k, (long long)s->n,
                   (long long)g.npf, (long long)g.kp, IG_NR,
                   g.nrem ? arena_printf(a, ", then [%lld][%d][4] for the last %d columns, zero-padded",
                                         (long long)g.kp, g.pwe, g.nrem) : "",
                   g.kp > g.k4 ? arena_printf(a, "; groups from %lld on are zero (AMX tiles of 16 groups)",
                                              (long long)g.k4) : ""));
  emit_line(e, "{ /* Y[%lld,%lld] = u8(A[%lld,%lld]) x B[%lld,%lld] int8, exact int32 sums, scaled%s%s%s%s */",
            (long long)s->m, (long long)s->n, (long long)s->m, (long long)s->k, (long long)s->k, (long long)s->n,
            s->bias ? " + bias" : "", s->act ? ", then " : "",
            s->act == GEMM_ACT_RELU ? "relu" : s->act == GEMM_ACT_GELU ? "gelu" : s->act ? "gelu_tanh" : "",
            s->residual ? ", + residual" : "");
  e->indent++;
  emit_line(e, "const float *a = %s; /* [%lld,%lld] */", s->a, (long long)s->m, (long long)s->k);
  emit_line(e, "const int8_t *bp = %s; /* B packed: panels of %d columns, 4 k a group */", bp, IG_NR);
  emit_line(e, "const float *scale = %s; /* [%lld]: B[k][n] = Bq[k][n] * scale[n] */", s->scale, (long long)s->n);
  emit_line(e, "const int32_t *colsum = %s; /* [%lld]: the sum of Bq's column n */", s->colsum, (long long)s->n);
  if (s->bias)
    emit_line(e, "const float *bias = %s; /* [%lld] */", s->bias, (long long)s->n);
  if (s->residual)
    emit_line(e, "const float *res = %s; /* the residual [%lld,%lld] */", s->residual, (long long)s->m,
              (long long)s->n);
  emit_line(e, "float *y = %s; /* [%lld,%lld] */", s->y, (long long)s->m, (long long)s->n);
  emit_shared_array(e, "int32_t", "au", mbp * g.kp > 0 ? mbp * g.kp : 1,
                    arena_printf(e->g->arena, "[%lld][%lld]: rows of A as u8, four a word", (long long)mbp,
                                 (long long)g.kp));
  emit_shared_array(e, "float", "as", g.mb, arena_printf(e->g->arena, "[%lld]: each row's scale", (long long)g.mb));
  emit_shared_array(e, "int32_t", "az", g.mb,
                    arena_printf(e->g->arena, "[%lld]: each row's zero point", (long long)g.mb));
  if (s->per_tensor)
    emit_tensor_params(e, s);
  int64_t mfull = s->m / g.mb * g.mb;
  if (mfull == s->m && g.mb == s->m) {
    emit_block(e, s, &g, s->m, "0");
  } else {
    emit_line(e, "for (int ib = 0; ib < %lld; ib += %lld) { /* blocks of %lld rows */", (long long)mfull,
              (long long)g.mb, (long long)g.mb);
    e->indent++;
    emit_block(e, s, &g, g.mb, "ib");
    e->indent--;
    emit_line(e, "}");
    if (mfull < s->m) {
      emit_line(e, "{ /* the last %lld rows */", (long long)(s->m - mfull));
      e->indent++;
      emit_block(e, s, &g, s->m - mfull, emit_int(e, mfull));
      e->indent--;
      emit_line(e, "}");
    }
  }
  e->indent--;
  emit_line(e, "}");
  return true;
}
