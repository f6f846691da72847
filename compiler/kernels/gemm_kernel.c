/* gemm_kernel.c — the f32 GEMM generator for a constant B (the weight case,
 * x[.., K] · W[K, N], where a transformer spends its time).
 *
 * Layout. B is packed at compile time into panels of NR columns, each
 * K-major: panel p holds B[k][p*NR + j] at p*K*NR + k*NR + j. The last
 * N % NR columns form a narrower edge panel, zero-padded to a multiple of
 * the widest vector that reads it. The packed copy is its own
 * 64-byte-aligned weight array (emit_const_array).
 *
 * Kernel. For each panel (its K x NR block stays in cache while every row
 * of A streams past it), Y is computed in register tiles of MR rows x NR
 * columns: with VW-wide vectors, NV = NR / VW of them across, MR x NV
 * vector accumulators, NV panel loads and MR broadcasts of A per step of k
 * (templates/gemm_f32_tile.c.in). Rows are split into
 * tiles as evenly as the register budget allows (M = 128 with MR <= 6 is
 * 18 tiles of 6 rows and 4 of 5, not 21 of 6 and one of 2); each tile size
 * and the edge panel are separate constant instantiations. When a panel
 * is larger than GEMM_PANEL_BLOCK, K is split into equal blocks whose
 * partial sums are added into Y. The epilogue (bias, relu, gelu, residual)
 * runs in registers, gelu by kiln_erff's steps on whole vectors
 * (KILN_ERFF_VEC, runtime/kiln_rt.h); the tanh form of gelu runs on the tile
 * just stored, in a loop over it that kiln_tanhf lets vectorise.
 *
 * Speed (issue 5; --isa=avx2 on a 2-core AVX2 EPYC, peak 101.6 GFLOP/s a
 * core, thread CPU time, best call, interleaved A/B). The 6x16 tile's k
 * loop is what it should be — 2 panel loads, 6 vbroadcastss, 12
 * vfmadd231ps, 3 loop ops, no spill — and with the weight in cache the
 * transformer shapes run at 93-99% of peak (MiniLM M 128: K,N 384,1152
 * 94 GFLOP/s; 384,384 100; 1536,384 96; enc4 M 64: 99-101): neither
 * packing A, blocking K further nor unrolling k has room to win. The loss
 * is the weight coming from memory: a model's weights exceed the
 * last-level cache (MiniLM: 42 MB), and a panel's first row tile consumes
 * a cache line of it every 6 cycles, more than a core's share of memory
 * bandwidth, while the other tiles consume none. A software prefetch of
 * the next panel spread over the row tiles was tried there: K,N 384,1152
 * +6% alone, but MiniLM end to end within noise at 1 thread. On Zen 5
 * (AVX-512, 16-wide tiles eating a line of the panel every 3 cycles) the
 * next panel prefetched by the last row tiles took MiniLM's shape from
 * 14.3 to 13.2 ms and enc4 from 2.34 to 1.85: see GEMM_PREFETCH_MIN_TILES.
 * The gelu epilogue now runs on the accumulators (KILN_ERFF_VEC).
 *
 * ISA. --isa sets the panel width NR: portable (alias generic) 8, avx2
 * 16, avx512 32 columns, and which bodies the file carries
 * (vector_views.h). The tiles are GNU C vector extensions, each width
 * with the tile its registers allow (16-wide: 24 accumulators of 32
 * registers; 8- and 4-wide: 12 of 16; at most 12 rows). avx2 and avx512
 * write one width, after the plain C over the same panels
 * (templates/gemm_f32_scalar.c.in) that a compiler not targeting it takes:
 *
 *   #if !(GNU C && (__AVX512F__ || KILN_GEMM_V16))  plain C
 *   #else                                          16-wide (avx512; avx2: __AVX__, 8-wide)
 *   #endif
 *
 * so --isa=avx2 gives 6x16 tiles of 8-wide vectors under -mavx2, avx512
 * 12x32 tiles under -mavx512f, and plain C without them. portable writes
 * every width that divides NR, the widest the C compiler targets picked
 * when the file is compiled:
 *
 *   #if GNU C && (__AVX512F__ || KILN_GEMM_V16)   16-wide (NR 16, 32: not portable's)
 *   #elif GNU C && (__AVX__ || KILN_GEMM_V8)       8-wide
 *   #elif GNU C                                    4-wide (SSE, NEON, any)
 *   #else                                          plain C over the same panels
 *   #endif
 *
 * giving 12x8 tiles under -mavx2 and 6x8 of 4-wide vectors without it.
 * Any file runs anywhere (wide GNU vectors on a compiler without the ISA
 * are lowered to scalar code, so they are never used there).
 * -DKILN_GEMM_V16 / -DKILN_GEMM_V8 force a width, -DKILN_GEMM_SCALAR the
 * plain C path: the tests check each on any x86-64. --precision=bf16 adds,
 * under avx512 and portable, a vdpbf16ps body for __AVX512BF16__ (not where
 * the build targets AMX: on Intel it is slower than f32 FMAs), and under
 * avx512 an AMX body (TDPBF16PS, runtime/kiln_rt.h's KILN_TILE_* macros)
 * taken at run time when kiln_amx_ready() says the CPU grants it: a panel
 * row of 32 words is two tile rows, so the panels and A's rows (ab) pad the
 * pairs of k to 16 and ab its rows to 16; blocks of 32 rows x 32 columns
 * (four C tiles) over all of K, then the 16-wide epilogue row by row.
 *
 * Threads (--threads N > 1, emit_parallel_for in emit.h). The panels are
 * independent — each writes its own columns of Y from its own columns of
 * B — so one loop over all of them, the edge panel last, is split among
 * the threads: each streams its share of the weight, and A (small in a
 * transformer) is read by all. With fewer panels than threads, the row
 * tiles of each panel are split instead. With K split in blocks, the split
 * is inside each block. Products too small to repay a thread start stay
 * serial.
 *
 * int8 (--quantize=int8: Linear with an int8 W and a scale per column).
 * The panels are the same, packed as int8; the scale multiplies the
 * accumulators in the epilogue before the bias. With at least
 * GEMM_WIDEN_MIN_TILES row tiles, each panel's K block is widened once into
 * a local f32 array that the f32 tiles then read; with fewer, the tile
 * widens its int8 vectors at every step of k (widen_expr: vpmovsxbd +
 * vcvtdq2ps). Measured on Zen 4 (DESIGN.md, "int8 weights"): at M = 128
 * both are bound by the f32 FMAs (0.95-1.06x f32; in registers 5-8% slower
 * than widened once), at M = 1 with cold weights int8 is 2.5x faster.
 *
 * A run-time row count (GemmSpec.rows: a decoder's prefill holding fewer
 * tokens than its P rows, compiler/passes/bound_rows.c). Everything stays
 * as generated for M: each row-tile loop stops at m_run (a tile that
 * starts below it computes all its rows), the plain C path and cblas_sgemm
 * take m_run rows, and Y's rows from m_run on are set to 0 at the end. The
 * rows below m_run are computed by the same code as without the count.
 *
 * --gemm=openblas: no packing and no kernel, one cblas_sgemm call on the
 * weight as it is (its own 64-byte-aligned array), then the bias and the
 * activation in one loop over Y. */
#include "gemm_kernel.h"
#include "vector_views.h"

#include <string.h>

/* --isa: the panel width NR. */
typedef struct IsaTile {
  const char *name;
  int nr;
} IsaTile;

static const IsaTile isa_tiles[] = {
    [ISA_GENERIC] = {"generic", 8},
    [ISA_AVX2] = {"avx2", 16},
    [ISA_AVX512] = {"avx512", 32},
};

/* the vector widths: vector_views.h */

/* The widest view (it sets the edge panel's padding). */
static int widest_view(int nr) {
  for (int i = 0; i < KILN_COUNT(views); i++)
    if (nr % views[i].vw == 0)
      return views[i].vw;
  return 1;
}

/* Bytes of a panel's K block meant to stay in L2 while the rows of A
 * stream past it. Measured on Zen 3 (AVX2, 32 KiB L1, 512 KiB L2): a
 * 96 KiB panel (K = 1536) runs as fast as 24 KiB blocks of it, with the
 * hardware prefetchers feeding both streams, so K is split only beyond. */
#define GEMM_PANEL_BLOCK 131072

/* int8 panels: with at least this many row tiles a panel, its K block is
 * widened to f32 once into a local array that every row tile then reads
 * (the conversion amortised over the tiles, the f32 tile unchanged); with
 * fewer (decoding, M = 1..4 rows), the int8 vectors are widened in
 * registers at every step of k. The local array is at most
 * GEMM_WIDEN_MAX_BYTES (on the stack, also of the pool's threads). */
#ifndef GEMM_WIDEN_MIN_TILES /* -D for experiments */
#define GEMM_WIDEN_MIN_TILES 4
#endif
#define GEMM_WIDEN_MAX_BYTES 262144

/* Prefetching the next panel. A panel's K block stays in L2 while its row
 * tiles pass over it, so only its first row tile waits for memory: the
 * hardware prefetchers follow each tile's stream, but every tile starts
 * over at the panel's first row and the next panel is a jump they do not
 * predict. So, when a panel has at least this many row tiles, the last
 * group of them (the tiles of mr_lo rows, else all) also prefetches, at
 * each step k, row k of the next full panel (one __builtin_prefetch per 64
 * bytes of it): when the next panel starts, its first tile finds it in
 * cache. Measured on MiniLM's shape (Zen 5, one thread): 14.3 -> 13.2 ms.
 * A panel with one row tile (decoding) streams its weight in order, which
 * the hardware already follows; so does the widening of an int8 panel
 * (measured: real MiniLM --quantize=int8 went 14.6 -> 15.2 ms with it). */
#ifndef GEMM_PREFETCH_MIN_TILES /* -D for experiments; a large value turns it off */
#define GEMM_PREFETCH_MIN_TILES 2
#endif

/* Spreading that prefetch over every row tile (Geo.pf_spread). The last
 * group alone fetches the next panel's block in the time of its own
 * tiles; when that group is one tile of few (a 7x7 conv's M = 49 rows:
 * tiles of 10, 10, 10, 10 and 9) it asks for the block several times
 * faster than a core's share of memory bandwidth, and the next panel's
 * first tile waits. So, for f32 panels, every row tile prefetches its
 * share: the tile at row i0 of mr rows, at step k of a block of kc, the
 * line at (i0 * kc + (k - k0) * mr) / M of the next block's rows, one
 * __builtin_prefetch a step; the tiles together cover the block once
 * (each line touched at least once while mr * NR / M <= 16 floats, that
 * is, with 2 or more tiles). With K in blocks, the last panel's next
 * block is the first panel's next K block; in a batch of products
 * (GemmSpec.batch: Winograd's) the last one's is the next product's first. Measured on a Xeon (SPR
 * class, one thread, thread CPU time, median of 40; the weight evicted
 * from cache before each call): Y[49,512] = A[49,4608] x B[4608,512]
 * 1.93-2.01 -> 1.39-1.41 ms, where with the weight in cache it takes
 * 1.26-1.42 ms and a plain read of the 9.4 MB weight 0.60-0.67 ms. */
#ifndef GEMM_PREFETCH_SPREAD /* -DGEMM_PREFETCH_SPREAD=0: the last group alone, for experiments */
#define GEMM_PREFETCH_SPREAD 1
#endif

/* Rows outside panels (emit_rows_outer) when A has more bytes than
 * GEMM_A_LARGE (more than a core's share of L2) and B at most GEMM_B_SMALL
 * (all its panels stay in L2). */
#define GEMM_A_LARGE (1 << 20)
#define GEMM_B_SMALL (1 << 19)

/* --threads: a product of few panels, a number the threads do not divide
 * or whose last panel is narrower (PP-OCR's 1x1 convs: 32 + 16 columns, 3
 * or 5 panels on 2 threads), has each panel's
 * row tiles in parts, as many as the threads, the parts of all panels the
 * items of the split loop: 5 panels on 2 threads are 10 items, 5 each,
 * not 3 and 2 (the run waits for the thread with 3). Geo.parts. */
#define GEMM_PARTS_MAX 8

/* --precision=bf16: A is rounded to bf16 once per product, into a local
 * array of M x ceil(K/2) words on the calling thread's stack; a product
 * whose A would need more stays f32. */
#define GEMM_BF16_A_MAX_BYTES 524288

/* The packed panels, and one view of them. */
typedef struct Geo {
  int nr;            /* columns of a full panel */
  int64_t npf;       /* full panels */
  int pwe, nrem;     /* the edge panel: its width (floats) and valid columns (0: none) */
  int64_t kc, nkb;   /* K as nkb blocks of kc (nkb = 1: not split) */
  int vw, nv;        /* the view: floats a vector, vectors across a full panel */
  const char *vt;    /* its vector type: v8f */
  int mr_hi, mr_lo;  /* row tiles: rows [0, m_hi) by mr_hi, the rest by mr_lo */
  int64_t m_hi;
  int64_t tiles;     /* row tiles a panel */
  bool q8;           /* int8 panels (--quantize=int8) */
  bool bf16;         /* bf16 panels (--precision=bf16): row k2 holds the pairs
                        B[2k2][j] (low half) and B[2k2+1][j] (high half) */
  int64_t krows;     /* rows of a panel that hold B: K, or ceil(K/2) pairs of bf16 */
  int64_t kp;        /* rows of a panel and words of a row of ab: krows, or with the AMX
                        path krows rounded up to 16 (whole tiles; the rest zero) */
  bool amx;          /* bf16: the AMX path (TDPBF16PS) is written, --isa=avx512 */
  bool widen;        /* q8: each panel's K block widened to f32 once, in a local array,
                        then the f32 tiles; else widened in registers at every step */
  bool dp;           /* bf16: the tiles multiply by vdpbf16ps (AVX512-BF16), two k a step;
                        else they split each pair into two f32 and use FMAs */
  double ns;         /* estimated serial time (emit_parallel_for) */
  bool par_panels;   /* --threads: the panels split among the threads */
  int parts;         /* with par_panels: each panel's row tiles in this many parts (1: whole) */
  int64_t part_at[GEMM_PARTS_MAX + 1]; /* the first row of each part, and M */
  bool par_rows;     /* --threads: else the row tiles of each panel */
  bool prefetch;     /* the last row tiles of a full panel prefetch the next panel (bn) */
  bool pf_spread;    /* with prefetch: every row tile prefetches its share of the next block */
  bool a_large;      /* rows outside panels (emit_rows_outer): A is large, B small */
  int rows_outer;    /* while emit_rows_outer writes a row tile: its rows, else 0 */
} Geo;

/* Is s a bf16 product (--precision=bf16, an f32 weight, A small enough)? */
static bool gemm_bf16(const Emit *e, const GemmSpec *s) {
  return e->precision == PRECISION_BF16 && s->b && !s->bq && s->k > 0 &&
         4.0 * (double)s->m * (double)((s->k + 1) / 2) <= GEMM_BF16_A_MAX_BYTES;
}

/* Estimated serial nanoseconds of the product: about 100 GFLOP/s. */
static double gemm_ns(const GemmSpec *s) { return 2.0 * (double)s->m * (double)s->n * (double)s->k / 100; }

/* The panels of --isa, read through view v. */
static void gemm_geo(Emit *e, const GemmSpec *s, const IsaTile *t, const View *v, Geo *g) {
  int w = widest_view(t->nr);
  g->nr = t->nr;
  g->npf = s->n / g->nr;
  g->nrem = (int)(s->n % g->nr);
  g->pwe = (g->nrem + w - 1) / w * w;
  /* K blocks: the fewest equal ones that fit GEMM_PANEL_BLOCK; none when no
   * divisor of K comes close */
  g->bf16 = gemm_bf16(e, s);
  g->dp = false;
  g->krows = g->bf16 ? (s->k + 1) / 2 : s->k;
  g->amx = g->bf16 && e->isa == ISA_AVX512 && t->nr % 16 == 0;
  g->kp = g->amx ? (g->krows + 15) / 16 * 16 : g->krows;
  int64_t kcmax = GEMM_PANEL_BLOCK / (4 * g->nr), nb0 = (g->krows + kcmax - 1) / kcmax;
  g->kc = g->krows;
  g->nkb = 1;
  for (int64_t nb = nb0; nb > 1 && nb <= 2 * nb0; nb++)
    if (g->krows % nb == 0) {
      g->nkb = nb;
      g->kc = g->krows / nb;
      break;
    }
  g->vw = v->vw;
  g->nv = g->nr / v->vw;
  g->vt = arena_printf(e->g->arena, "v%df", v->vw);
  /* rows split as evenly as the budget allows */
  int mr_max = v->acc / g->nv;
  mr_max = mr_max > 12 ? 12 : mr_max < 1 ? 1 : mr_max;
  int64_t tiles = (s->m + mr_max - 1) / mr_max;
  g->mr_hi = (int)((s->m + tiles - 1) / tiles);
  g->mr_lo = g->mr_hi - 1;
  g->m_hi = (s->m - tiles * g->mr_lo) * g->mr_hi;
  g->tiles = tiles;
  g->q8 = s->bq != NULL;
  g->widen = g->q8 && tiles >= GEMM_WIDEN_MIN_TILES && 4 * g->kc * g->nr <= GEMM_WIDEN_MAX_BYTES;
  g->ns = gemm_ns(s);
  g->par_panels = emit_parallel_worth(e, g->npf + (g->nrem > 0), g->ns);
  g->par_rows = !g->par_panels && emit_parallel_worth(e, tiles, g->ns);
  int64_t np = g->npf + (g->nrem > 0);
  g->parts = 1;
  if (g->par_panels && (np % e->threads || g->nrem) && np < 4 * e->threads && e->threads <= GEMM_PARTS_MAX &&
      tiles >= e->threads && !s->rows && !g->bf16 && !g->q8 && g->nkb == 1) {
    g->parts = e->threads;
    int64_t t_hi = g->m_hi / g->mr_hi;
    for (int j = 0; j <= g->parts; j++) { /* part j: the row tiles from tiles * j / parts */
      int64_t tt = tiles * j / g->parts;
      g->part_at[j] = tt < t_hi ? tt * g->mr_hi : g->m_hi + (tt - t_hi) * g->mr_lo;
    }
  }
  g->prefetch = tiles >= GEMM_PREFETCH_MIN_TILES && !g->widen; /* widening streams the int8 block in order */
  g->pf_spread = GEMM_PREFETCH_SPREAD && g->prefetch && !g->q8 && !g->bf16 && !s->rows;
  g->rows_outer = 0;
  g->a_large = !g->q8 && !g->bf16 && !s->rows && g->nkb == 1 && 4 * s->m * s->k > GEMM_A_LARGE &&
               4 * s->k * s->n <= GEMM_B_SMALL;
  if (g->a_large) { /* with threads, the row tiles are split; nothing to prefetch */
    g->par_rows = g->par_panels || g->par_rows;
    g->par_panels = false;
    g->parts = 1;
    g->prefetch = false;
    g->pf_spread = false;
  }
  if (g->parts > 1) /* a part's row tiles prefetch as before */
    g->pf_spread = false;
}

/* B packed into the panels of g: floats, int8 for bq, or words of two
 * bf16 for g->bf16 (zero padding). */
static void *gemm_pack(Emit *e, const GemmSpec *s, const Geo *g, int64_t *len) {
  int64_t k = s->k, n = s->n;
  if (g->bf16) {
    *len = g->kp * (g->npf * g->nr + g->pwe);
    uint32_t *pk = arena_alloc(e->g->arena, sizeof(uint32_t) * (size_t)(*len ? *len : 1));
    memset(pk, 0, sizeof(uint32_t) * (size_t)(*len ? *len : 1));
    for (int64_t j = 0; j < n; j++) {
      int64_t p = j / g->nr, jj = j % g->nr, pw = p < g->npf ? g->nr : g->pwe;
      for (int64_t t = 0; t < k; t++) {
        double v = s->b[s->b_trans ? j * k + t : t * n + j];
        pk[p * g->kp * g->nr + (t / 2) * pw + jj] |= (uint32_t)half_from_double(DT_BF16, v) << (16 * (t % 2));
      }
    }
    return pk;
  }
  size_t sz = s->bq ? 1 : sizeof(float);
  const char *src = s->bq ? (const char *)s->bq : (const char *)s->b;
  *len = k * (g->npf * g->nr + g->pwe);
  char *pk = arena_alloc(e->g->arena, sz * (size_t)(*len ? *len : 1));
  memset(pk, 0, sz * (size_t)(*len ? *len : 1));
  for (int64_t j = 0; j < n; j++) {
    int64_t p = j / g->nr, jj = j % g->nr, pw = p < g->npf ? g->nr : g->pwe;
    for (int64_t t = 0; t < k; t++)
      memcpy(pk + sz * (size_t)(p * k * g->nr + t * pw + jj),
             src + sz * (size_t)(s->b_trans ? j * k + t : t * n + j), sz);
  }
  return pk;
}

static const char *lit(Emit *e, double v) { return emit_double_literal(e, DT_F32, v); }

/* act(v) as a C expression in f32, the formulas of compiler/ops/fused.c. */
const char *gemm_act_expr(Emit *e, GemmAct act, const char *v) {
  Arena *a = e->g->arena;
  switch (act) {
  case GEMM_ACT_RELU: return arena_printf(a, "%s > %s ? %s : %s", v, lit(e, 0), v, lit(e, 0));
  case GEMM_ACT_GELU:
    return arena_printf(a, "%s * %s * (%s + kiln_erff(%s * %s))", lit(e, 0.5), v, lit(e, 1), v,
                        lit(e, 0.70710678118654752440));
  case GEMM_ACT_GELU_TANH:
    return arena_printf(a, "%s * %s * (%s + kiln_tanhf(%s * (%s + %s * %s * %s * %s)))", lit(e, 0.5), v,
                        lit(e, 1), lit(e, 0.79788456080286535588), v, lit(e, 0.044715), v, v, v);
  default: return v;
  }
}

static const char *act_name(GemmAct act) {
  return act == GEMM_ACT_RELU ? "relu" : act == GEMM_ACT_GELU ? "gelu" : "gelu_tanh";
}

/* "p + off", or "p" when off is 0. */
static const char *plus(Emit *e, const char *p, int64_t off) {
  return off ? arena_printf(e->g->arena, "%s + %lld", p, (long long)off) : p;
}

static const char *bufstr(Emit *e, Buf *b) {
  const char *r = arena_strdup(e->g->arena, b->s ? b->s : "");
  buf_free(b);
  return r;
}

/* ---- one register tile ------------------------------------------------------ */

/* Bytes of vector v of a tile row nv vectors wide with `valid` real
 * columns: the whole vector, or the valid part of the last one. */
static const char *vbytes(Emit *e, const Geo *g, int v, int nv, int valid) {
  int vw = g->vw;
  if (v == nv - 1 && valid < nv * vw)
    return emit_int(e, 4 * (valid - (nv - 1) * vw));
  return arena_printf(e->g->arena, "sizeof(%s)", g->vt);
}

/* "y<r> + <off>": the C address of vector v of tile row r. */
static const char *yvec(Emit *e, const Geo *g, int r, int v) {
  return plus(e, arena_printf(e->g->arena, "y%d", r), (int64_t)v * g->vw);
}

/* The tile's epilogue: the row pointers of Y; with K split, the earlier
 * blocks' sums added from Y and bias/activation/residual held for the last
 * block; bias, relu and the residual in registers; the store of `valid` columns (a partial last
 * vector stores only its valid bytes); gelu on the stored tile. */
static const char *tile_epilogue(Emit *e, const GemmSpec *s, const Geo *g, int mr, int nv, int valid) {
  const char *vt = g->vt;
  bool gelu_regs = s->act == GEMM_ACT_GELU;     /* erf's steps on the accumulators (KILN_ERFF_VEC) */
  bool gelu = s->act == GEMM_ACT_GELU_TANH;     /* tanh's on the stored tile */
  bool res_regs = s->residual && !gelu; /* after gelu on the tile, the residual joins its loop */
  bool split = g->nkb > 1, regs = s->scale || s->bias || s->act == GEMM_ACT_RELU || gelu_regs || res_regs;
  long long ny = (long long)s->n, last = (long long)(g->krows - g->kc);
  Buf b = {0};
  buf_printf(&b, "float *y0 = yp + i0 * %lld;\n", ny);
  for (int r = 1; r < mr; r++)
    buf_printf(&b, "float *y%d = y0 + %lld;\n", r, r * ny);
  if (s->residual)
    buf_printf(&b, "const float *r0 = rp + i0 * %lld; /* the residual's rows */\n", ny);
  if (split) {
    buf_printf(&b, "if (k0 > 0) { /* add the sums of the earlier K blocks */\n  %s t = {0};\n", vt);
    for (int r = 0; r < mr; r++)
      for (int v = 0; v < nv; v++)
        buf_printf(&b, "  memcpy(&t, %s, %s); acc%d_%d += t;\n", yvec(e, g, r, v),
                   vbytes(e, g, v, nv, valid), r, v);
    buf_puts(&b, "}\n");
  }
  if (regs) {
    bool act = s->act == GEMM_ACT_RELU || gelu_regs;
    const char *what = arena_printf(e->g->arena, "%s%s%s%s%s%s%s", s->scale ? "int8 scale" : "",
                                    s->scale && s->bias ? ", " : "", s->bias ? "bias" : "",
                                    (s->scale || s->bias) && act ? ", " : "",
                                    s->act == GEMM_ACT_RELU ? "relu" : gelu_regs ? "gelu" : "",
                                    res_regs && (s->scale || s->bias || act) ? ", " : "",
                                    res_regs ? "residual" : "");
    if (split)
      buf_printf(&b, "if (k0 == %lld) { /* after the last block: %s */\n", last, what);
    else
      buf_printf(&b, "{ /* %s */\n", what);
  }
  if (s->scale) {
    for (int v = 0; v < nv; v++)
      buf_printf(&b, "  %s sv%d = {0}; memcpy(&sv%d, %s, %s);\n", vt, v, v, plus(e, "scale_p", v * g->vw),
                 vbytes(e, g, v, nv, valid));
    for (int r = 0; r < mr; r++) {
      buf_puts(&b, " ");
      for (int v = 0; v < nv; v++)
        buf_printf(&b, " acc%d_%d *= sv%d;", r, v, v);
      buf_puts(&b, "\n");
    }
  }
  if (s->bias) {
    for (int v = 0; v < nv; v++)
      buf_printf(&b, "  %s bv%d = {0}; memcpy(&bv%d, %s, %s);\n", vt, v, v, plus(e, "bias_p", v * g->vw),
                 vbytes(e, g, v, nv, valid));
    for (int r = 0; r < mr; r++) {
      buf_puts(&b, " ");
      for (int v = 0; v < nv; v++)
        buf_printf(&b, " acc%d_%d += bv%d;", r, v, v);
      buf_puts(&b, "\n");
    }
  }
  if (s->act == GEMM_ACT_RELU) {
    buf_printf(&b, "  const %s zero = {0}; /* relu: keep the lanes > 0 (NaN gives 0) */\n", vt);
    for (int r = 0; r < mr; r++)
      for (int v = 0; v < nv; v++)
        buf_printf(&b, "  acc%d_%d = (%s)((v%di)acc%d_%d & (v%di)(acc%d_%d > zero));\n", r, v, vt,
                   g->vw, r, v, g->vw, r, v);
  }
  if (gelu_regs) { /* v·(0.5 + 0.5·erf(v/√2)): 0.5·v·(1 + erf(v/√2)) to the bit (a halving is
                    * exact), one FMA where that was an add and a multiply */
    for (int r = 0; r < mr; r++)
      for (int v = 0; v < nv; v++)
        buf_printf(&b, "  acc%d_%d = acc%d_%d * (%s + %s * KILN_ERFF_VEC(%s, v%di, acc%d_%d * %s));\n", r, v,
                   r, v, lit(e, 0.5), lit(e, 0.5), vt, g->vw, r, v, lit(e, 0.70710678118654752440));
  }
  if (res_regs) {
    buf_printf(&b, "  %s rv = {0};\n", vt);
    for (int r = 0; r < mr; r++)
      for (int v = 0; v < nv; v++)
        buf_printf(&b, "  memcpy(&rv, %s, %s); acc%d_%d += rv;\n",
                   plus(e, "r0", r * ny + (int64_t)v * g->vw),
                   vbytes(e, g, v, nv, valid), r, v);
  }
  if (regs)
    buf_puts(&b, "}\n");
  for (int r = 0; r < mr; r++) {
    for (int v = 0; v < nv; v++)
      buf_printf(&b, "%smemcpy(%s, &acc%d_%d, %s);", v ? " " : "", yvec(e, g, r, v), r, v,
                 vbytes(e, g, v, nv, valid));
    buf_puts(&b, "\n");
  }
  if (gelu) {
    const char *ind = split ? "  " : "";
    if (split)
      buf_printf(&b, "if (k0 == %lld) /* after the last block: %s */\n", last, act_name(s->act));
    buf_printf(&b, "%sfor (int r = 0; r < %d; r++)\n%s  for (int j = 0; j < %d; j++) {\n", ind, mr, ind,
               valid);
    buf_printf(&b, "%s    const float v = y0[r * %lld + j];\n", ind, ny);
    const char *res = s->residual ? arena_printf(e->g->arena, " + r0[r * %lld + j]", ny) : "";
    buf_printf(&b, "%s    y0[r * %lld + j] = (%s)%s;\n%s  }\n", ind, ny, gemm_act_expr(e, s->act, "v"), res,
               ind);
  }
  if (b.len && b.s[b.len - 1] == '\n')
    b.s[--b.len] = 0;
  return bufstr(e, &b);
}

/* The vw int8 at q as a float vector: "__builtin_convertvector((v8i){q[0],
 * .., q[7]}, v8f)", which gcc and clang compile to vpmovsxbd + vcvtdq2ps
 * (gcc 12 scalarises a direct int8-vector conversion). */
static const char *widen_expr(Emit *e, const Geo *g, const char *q) {
  Buf b = {0};
  buf_printf(&b, "__builtin_convertvector((v%di){", g->vw);
  for (int i = 0; i < g->vw; i++)
    buf_printf(&b, "%s%s[%d]", i ? ", " : "", q, i);
  buf_printf(&b, "}, %s)", g->vt);
  return bufstr(e, &b);
}

/* The prefetches of the next panel's row at step k (Geo.prefetch): one per
 * 64 bytes of a row of pw elements, at bn (emit_panel); "" without. */
static const char *prefetch_next(Emit *e, const Geo *g, int pw, bool pf) {
  if (!pf)
    return "";
  int es = g->q8 ? 1 : 4; /* int8, or a float / a word of two bf16 */
  Buf b = {0};
  for (int off = 0; off < pw * es; off += 64)
    buf_printf(&b, "__builtin_prefetch(bn + k * %d%s);\n", pw, off ? arena_printf(e->g->arena, " + %d", off / es) : "");
  return bufstr(e, &b);
}

/* Geo.pf_spread: the prefetch of the tile of mr rows at i0 at step k,
 * its share of the next block (at bn, emit_panel) of kc rows of pw floats. */
static const char *prefetch_share(Emit *e, const GemmSpec *s, const Geo *g, int mr, int pw) {
  Arena *a = e->g->arena;
  bool split = g->nkb > 1;
  /* (i0 * kc + (k - k0) * mr) * pw < M * kc * pw: int while that fits */
  const char *cast = (double)s->m * (double)g->kc * pw < 2e9 ? "" : "(long long)";
  return arena_printf(a, "__builtin_prefetch(bn + ((%si0 * %lld + %s * %d) * %d) / %lld);\n", cast, (long long)g->kc,
                      split ? "(k - k0)" : "k", mr, pw, (long long)s->m);
}

/* A tile's row pointers a0 .. a<mr-1> (elements of type t, row i0 of
 * base, rows stride apart; note follows the first) into rows, its
 * accumulators acc<r>_<v> (zero) into acc. */
static void tile_rows_acc(const Geo *g, int mr, int nv, const char *t, const char *base, int64_t stride,
                          const char *note, Buf *rows, Buf *acc) {
  for (int r = 0; r < mr; r++) {
    if (r == 0)
      buf_printf(rows, "const %s *a0 = %s + i0 * %lld;%s", t, base, (long long)stride, note);
    else
      buf_printf(rows, "\nconst %s *a%d = a0 + %lld;", t, r, (long long)r * stride);
    buf_printf(acc, "%s%s ", r ? "\n" : "", g->vt);
    for (int v = 0; v < nv; v++)
      buf_printf(acc, "%sacc%d_%d = {0}", v ? ", " : "", r, v);
    buf_puts(acc, ";");
  }
}

/* The bf16 tile (--precision=bf16): rows i0 .. of A by the panel's words,
 * the same template with k running over pairs. With vdpbf16ps (g->dp) A's
 * rows are those of ab (rounded to bf16, a word per pair of k) and each
 * step is one instruction per accumulator: acc += a[2k+1]·b[2k+1] +
 * a[2k]·b[2k] (the odd product first, as the instruction does). Without
 * it, the f32 kernel on the bf16 weights: the panel's halves are widened
 * to f32 (a shift or a mask, once per vector for all the rows) and
 * multiplied by A's own f32 elements in the same order — as many FMAs and
 * broadcasts as the f32 tile, half the weight's bytes (with K odd, whose
 * last pair would read past a row of A, the rows of ab). */
static void emit_tile_bf16(Emit *e, const GemmSpec *s, const Geo *g, int mr, int pw, int valid, bool pf) {
  Arena *a = e->g->arena;
  int vw = g->vw, nv = (valid + vw - 1) / vw;
  Buf rows = {0}, acc = {0}, bv = {0}, ld = {0}, fma = {0};
  buf_puts(&ld, prefetch_next(e, g, pw, pf));
  bool af32 = !g->dp && s->k % 2 == 0; /* A in f32 */
  if (af32)
    tile_rows_acc(g, mr, nv, "float", "a", s->a_rs, " /* A's rows in f32 */", &rows, &acc);
  else
    tile_rows_acc(g, mr, nv, "uint32_t", "ab", g->kp, " /* A's rows in bf16 pairs */", &rows, &acc);
  for (int v = 0; v < nv; v++) {
    buf_printf(&bv, "%sb%d", v ? ", " : "", v);
    buf_printf(&ld, "%smemcpy(&b%d, b + k * %d%s, sizeof b%d);", v ? "\n" : "", v, pw,
               v ? arena_printf(a, " + %d", v * vw) : "", v);
    if (!g->dp)
      buf_printf(&ld, "\nconst %s b%do = (%s)(b%d & 0xffff0000u), b%de = (%s)(b%d << 16);", g->vt, v, g->vt, v, v,
                 g->vt, v);
  }
  for (int r = 0; r < mr; r++) {
    if (g->dp) {
      buf_printf(&fma, "%sconst v%du a%db = (v%du){0} + a%d[k];", r ? "\n" : "", vw, r, vw, r);
      for (int v = 0; v < nv; v++)
        buf_printf(&fma, "\nacc%d_%d = (%s)_mm512_dpbf16_ps((__m512)acc%d_%d, (__m512bh)a%db, (__m512bh)b%d);", r, v,
                   g->vt, r, v, r, v);
    } else if (af32) {
      buf_printf(&fma, "%sconst float a%do = a%d[2 * k + 1], a%de = a%d[2 * k];", r ? "\n" : "", r, r, r, r);
      buf_puts(&fma, "\n");
      for (int v = 0; v < nv; v++)
        buf_printf(&fma, "%sacc%d_%d += a%do * b%do; acc%d_%d += a%de * b%de;", v ? " " : "", r, v, r, v, r, v,
                   r, v);
    } else {
      buf_printf(&fma, "%sconst float a%do = kiln_float_of_bits(a%d[k] & 0xffff0000u), a%de = kiln_float_of_bits(a%d[k] << 16);",
                 r ? "\n" : "", r, r, r, r);
      buf_puts(&fma, "\n");
      for (int v = 0; v < nv; v++)
        buf_printf(&fma, "%sacc%d_%d += a%do * b%do; acc%d_%d += a%de * b%de;", v ? " " : "", r, v, r, v, r, v,
                   r, v);
    }
  }
  bool split = g->nkb > 1;
  emit_tmpl(e, "gemm_f32_tile", "AROWS", bufstr(e, &rows), "ACC", bufstr(e, &acc), "K0", split ? "k0" : "0", "K1",
            split ? arena_printf(a, "k0 + %lld", (long long)g->kc) : emit_int(e, g->krows), "VT",
            arena_printf(a, "v%du", vw), "BVARS", bufstr(e, &bv), "LOADB", bufstr(e, &ld), "FMA", bufstr(e, &fma),
            "EPILOGUE", tile_epilogue(e, s, g, mr, nv, valid), NULL);
}

/* Rows i0 .. i0 + mr - 1 by the `valid` real columns of the panel at b,
 * pw floats a row (templates/gemm_f32_tile.c.in): the vectors that cover
 * them, which for an edge panel read by a view narrower than the packing
 * may be fewer than the row holds. */
static void emit_tile(Emit *e, const GemmSpec *s, const Geo *g, int mr, int pw, int valid, bool pf) {
  if (g->bf16) {
    emit_tile_bf16(e, s, g, mr, pw, valid, pf);
    return;
  }
  int vw = g->vw, nv = (valid + vw - 1) / vw;
  Buf rows = {0}, acc = {0}, bv = {0}, ld = {0}, fma = {0};
  buf_puts(&ld, pf && g->pf_spread ? prefetch_share(e, s, g, mr, pw) : prefetch_next(e, g, pw, pf));
  tile_rows_acc(g, mr, nv, "float", "a", s->a_rs, "", &rows, &acc);
  for (int r = 0; r < mr; r++) {
    buf_printf(&fma, "%s", r ? "\n" : "");
    for (int v = 0; v < nv; v++)
      buf_printf(&fma, "%sacc%d_%d += a%d[k] * b%d;", v ? " " : "", r, v, r, v);
  }
  bool split = g->nkb > 1;
  /* the widened local panel holds one K block: row k - k0 */
  const char *row = arena_printf(e->g->arena, g->widen && split ? "b + (k - k0) * %d" : "b + k * %d", pw);
  for (int v = 0; v < nv; v++) {
    buf_printf(&bv, "%sb%d", v ? ", " : "", v);
    if (g->q8 && !g->widen) /* int8 widened in registers */
      buf_printf(&ld, "%sconst int8_t *q%d = %s;\nb%d = %s;", v ? "\n" : "", v, plus(e, row, v * vw), v,
                 widen_expr(e, g, arena_printf(e->g->arena, "q%d", v)));
    else
      buf_printf(&ld, "%smemcpy(&b%d, %s, sizeof b%d);", v ? "\n" : "", v, plus(e, row, v * vw), v);
  }
  emit_tmpl(e, "gemm_f32_tile", "AROWS", bufstr(e, &rows), "ACC", bufstr(e, &acc), "K0",
            split ? "k0" : "0", "K1",
            split ? arena_printf(e->g->arena, "k0 + %lld", (long long)g->kc) : emit_int(e, g->krows), "VT",
            g->vt, "BVARS", bufstr(e, &bv), "LOADB", bufstr(e, &ld), "FMA", bufstr(e, &fma), "EPILOGUE",
            tile_epilogue(e, s, g, mr, nv, valid), NULL);
}

/* The bound of the row tiles that start below `hi` (<= M): hi, or with a
 * run-time row count (GemmSpec.rows) the smaller of hi and m_run. */
static const char *tiles_bound(Emit *e, const GemmSpec *s, int64_t hi) {
  if (!s->rows)
    return emit_int(e, hi);
  if (hi == s->m)
    return "m_run";
  return arena_printf(e->g->arena, "(m_run < %lld ? m_run : %lld)", (long long)hi, (long long)hi);
}

/* The row tiles of one panel: rows [0, m_hi) by mr_hi, then by mr_lo
 * (those that start below m_run with GemmSpec.rows); with pf, the last
 * group prefetches the next panel. */
/* With a run-time row count (GemmSpec.rows) and no threads over the row
 * tiles: whole tiles of mr_hi, then of mr_lo, while they end within m_run;
 * the rest (fewer than mr_lo or mr_hi rows) in tiles of 4 rows that end
 * within M, then of 1 — so 16 live rows of an M = 128 product cost a tile
 * of 12 and one of 4, not two of 12 (24 rows). The rows past m_run that
 * the last tile of 4 computes are as the other paths leave them.
 * Which tile is a panel's last depends on m_run, so with pf every tile
 * prefetches the next panel (GEMM_PREFETCH_MIN_TILES): a panel of one or
 * two tiles (a short sentence) is otherwise all wait for memory, the
 * next panel's lines arriving only when its first tile asks. Measured on
 * the real MiniLM (one Xeon core, --rows-axis, CPU time, best of 8
 * interleaved runs): 16 tokens 6.33 -> 5.09 ms, 64 tokens 15.7 -> 14.8,
 * 96 and 128 unchanged (21.6, 27.4). */
static void emit_panel_rows_run(Emit *e, const GemmSpec *s, const Geo *g, int pw, int valid, bool pf) {
  emit_line(e, "int i0 = 0; /* the first row no tile has computed */");
  if (g->m_hi > 0) {
    emit_line(e, "for (; i0 + %d <= (m_run < %lld ? m_run : %lld); i0 += %d) { /* tiles of %d x %d */", g->mr_hi,
              (long long)g->m_hi, (long long)g->m_hi, g->mr_hi, g->mr_hi, valid);
    e->indent++;
    emit_tile(e, s, g, g->mr_hi, pw, valid, pf);
    e->indent--;
    emit_line(e, "}");
  }
  if (g->m_hi < s->m) {
    emit_line(e, "for (; i0 >= %lld && i0 + %d <= m_run; i0 += %d) { /* tiles of %d x %d */", (long long)g->m_hi,
              g->mr_lo, g->mr_lo, g->mr_lo, valid);
    e->indent++;
    emit_tile(e, s, g, g->mr_lo, pw, valid, pf);
    e->indent--;
    emit_line(e, "}");
  }
  int small[2] = {4, 1};
  for (int t = 0; t < 2; t++) {
    if (small[t] >= (g->m_hi < s->m ? g->mr_lo : g->mr_hi) || small[t] > s->m)
      continue;
    emit_line(e, "for (; i0 < m_run && i0 + %d <= %lld; i0 += %d) { /* the last live rows: tiles of %d x %d */",
              small[t], (long long)s->m, small[t], small[t], valid);
    e->indent++;
    emit_tile(e, s, g, small[t], pw, valid, pf);
    e->indent--;
    emit_line(e, "}");
  }
}

static void emit_panel_rows(Emit *e, const GemmSpec *s, const Geo *g, int pw, int valid, bool pf) {
  if (s->rows && !g->par_rows) {
    emit_panel_rows_run(e, s, g, pw, valid, pf);
    return;
  }
  double row_ns = g->ns / (double)s->m / (double)(g->npf + (g->nrem > 0));
  if (g->parts > 1) { /* this item's part of the row tiles (Geo.parts) */
    Buf at = {0};
    for (int j = 0; j <= g->parts; j++)
      buf_printf(&at, "%s%lld", j ? ", " : "", (long long)g->part_at[j]);
    emit_line(e, "static const int part_at[%d] = {%s}; /* the first row of each part, and M */", g->parts + 1, at.s);
    buf_free(&at);
    emit_line(e, "const int part_lo = part_at[part], part_hi = part_at[part + 1];");
    if (g->m_hi > 0) {
      emit_line(e, "for (int i0 = part_lo; i0 < (part_hi < %lld ? part_hi : %lld); i0 += %d) { /* tiles of %d x %d */",
                (long long)g->m_hi, (long long)g->m_hi, g->mr_hi, g->mr_hi, valid);
      e->indent++;
      emit_tile(e, s, g, g->mr_hi, pw, valid, pf && g->m_hi == s->m);
      e->indent--;
      emit_line(e, "}");
    }
    if (g->m_hi < s->m) {
      emit_line(e, "for (int i0 = part_lo > %lld ? part_lo : %lld; i0 < part_hi; i0 += %d) { /* tiles of %d x %d */",
                (long long)g->m_hi, (long long)g->m_hi, g->mr_lo, g->mr_lo, valid);
      e->indent++;
      emit_tile(e, s, g, g->mr_lo, pw, valid, pf);
      e->indent--;
      emit_line(e, "}");
    }
    return;
  }
  if (g->m_hi > 0) {
    if (g->par_rows)
      emit_parallel_for(e, g->m_hi / g->mr_hi, row_ns * (double)g->m_hi);
    emit_line(e, "for (int i0 = 0; i0 < %s; i0 += %d) { /* tiles of %d x %d */", tiles_bound(e, s, g->m_hi),
              g->mr_hi, g->mr_hi, valid);
    e->indent++;
    emit_tile(e, s, g, g->mr_hi, pw, valid, pf && (g->m_hi == s->m || g->pf_spread));
    e->indent--;
    emit_line(e, "}");
  }
  if (g->m_hi < s->m) {
    if (g->par_rows)
      emit_parallel_for(e, (s->m - g->m_hi) / g->mr_lo, row_ns * (double)(s->m - g->m_hi));
    emit_line(e, "for (int i0 = %lld; i0 < %s; i0 += %d) { /* tiles of %d x %d */", (long long)g->m_hi,
              tiles_bound(e, s, s->m), g->mr_lo, g->mr_lo, valid);
    e->indent++;
    emit_tile(e, s, g, g->mr_lo, pw, valid, pf);
    e->indent--;
    emit_line(e, "}");
  }
}

/* The panel pointers b (at bp + boff), yp and bias_p (at column col),
 * then its row tiles; a full panel's also bn, the next full panel's start
 * (its own when it is the last: nothing is prefetched past the panels). */
static void emit_panel(Emit *e, const GemmSpec *s, const Geo *g, const char *boff, const char *col,
                       int pw, int valid, bool full) {
  if (g->bf16) {
    emit_line(e, "const uint32_t *b = bp + %s; /* [%lld][%d] bf16 pairs */", boff, (long long)g->kp, pw);
  } else if (!g->q8) {
    emit_line(e, "const float *b = bp + %s; /* [%lld][%d] */", boff, (long long)s->k, pw);
  } else if (!g->widen) {
    emit_line(e, "const int8_t *b = bp + %s; /* [%lld][%d] int8 */", boff, (long long)s->k, pw);
  } else {
    long long n = (long long)g->kc * pw;
    const char *blk = g->nkb > 1 ? arena_printf(e->g->arena, " + k0 * %d", pw) : "";
    emit_line(e, "const int8_t *bq = bp + %s%s; /* %s[%lld][%d] int8 */", boff, blk,
              g->nkb > 1 ? "this K block of " : "", (long long)s->k, pw);
    emit_line(e, "float b[%lld] __attribute__((aligned(64))); /* [%lld][%d]: the int8 block widened once, "
                 "read by every row tile */", n, (long long)g->kc, pw);
    emit_line(e, "for (int t = 0; t < %lld; t += %d) {", n, g->vw);
    emit_line(e, "  const int8_t *q = bq + t;");
    emit_line(e, "  %s f = %s;", g->vt, widen_expr(e, g, "q"));
    emit_line(e, "  memcpy(b + t, &f, sizeof f);");
    emit_line(e, "}");
  }
  bool pf = full && g->prefetch && g->npf > 1;
  if (pf && g->pf_spread) {
    /* after the last full panel's last block: the next product's first
     * (GemmSpec.batch), else its own (nothing past the weight) */
    long long plen = (long long)(g->kp * (g->npf * g->nr + g->pwe));
    const char *own = g->nkb > 1 ? arena_printf(e->g->arena, "b + k0 * %d", g->nr) : "b";
    const char *end = s->batch > 1 ? arena_printf(e->g->arena, "q + 1 < %lld ? bp + %lld : %s", (long long)s->batch,
                                                  plen, own)
                                   : own;
    if (g->nkb > 1)
      emit_line(e, "const float *bn = p + 1 < %lld ? b + %lld + k0 * %d : k0 + %lld < %lld ? bp + (k0 + %lld) * %d : %s; "
                   "/* the next block (the next panel's, else the first panel's next K block%s), its share "
                   "prefetched by every row tile */",
                (long long)g->npf, (long long)(g->kp * g->nr), g->nr, (long long)g->kc, (long long)g->krows,
                (long long)g->kc, g->nr, end, s->batch > 1 ? ", else the next product's" : "");
    else
      emit_line(e, "const float *bn = p + 1 < %lld ? b + %lld : %s; /* the next panel%s, its share prefetched by every "
                   "row tile */",
                (long long)g->npf, (long long)(g->kp * g->nr), end, s->batch > 1 ? " (or the next product's first)" : "");
  } else if (pf) {
    emit_line(e, "const %s *bn = %s + (p + 1 < %lld ? %lld : 0); /* the next panel, prefetched by %s row tiles */",
              g->bf16 ? "uint32_t" : g->q8 ? "int8_t" : "float", "b", (long long)g->npf,
              (long long)(g->kp * g->nr), s->rows && !g->par_rows ? "all its" : "the last");
  }
  emit_line(e, "float *yp = y + %s;", col);
  if (s->scale)
    emit_line(e, "const float *scale_p = scale + %s;", col);
  if (s->bias)
    emit_line(e, "const float *bias_p = bias + %s;", col);
  if (s->residual)
    emit_line(e, "const float *rp = res + %s;", col);
  if (g->rows_outer) /* one row tile, at i0 */
    emit_tile(e, s, g, g->rows_outer, pw, valid, false);
  else
    emit_panel_rows(e, s, g, pw, valid, pf);
}

/* Full panel p's pointers and row tiles (in a loop over p). */
static void emit_full_panel(Emit *e, const GemmSpec *s, const Geo *g) {
  emit_panel(e, s, g, arena_printf(e->g->arena, "p * %lld", (long long)(g->kp * g->nr)),
             arena_printf(e->g->arena, "p * %d", g->nr), g->nr, g->nr, true);
}

/* The edge panel's, in a block opened by `open` ("{" or "} else {"). */
static void emit_edge_panel(Emit *e, const GemmSpec *s, const Geo *g, const char *open) {
  emit_line(e, "%s /* the edge panel: columns %lld .. %lld, zero-padded to %d */", open,
            (long long)(g->npf * g->nr), (long long)(s->n - 1), g->pwe);
  e->indent++;
  emit_panel(e, s, g, emit_int(e, g->npf * g->kp * g->nr), emit_int(e, g->npf * g->nr), g->pwe, g->nrem, false);
  e->indent--;
  emit_line(e, "}");
}

/* --threads: one loop over every panel, the edge panel last, split among
 * the threads. */
static void emit_panels_parallel(Emit *e, const GemmSpec *s, const Geo *g) {
  int64_t np = g->npf + (g->nrem > 0);
  const char *narrow = g->nrem ? ", the last one narrower" : "";
  if (g->parts > 1) { /* the items: each panel's row tiles in parts (Geo.parts) */
    emit_parallel_for(e, np * g->parts, g->ns);
    emit_line(e, "for (int t = 0; t < %lld; t++) { /* panel p = t / %d: columns %d * p .. %d * p + %d%s; "
                 "part t %% %d of its row tiles */", (long long)(np * g->parts), g->parts, g->nr, g->nr,
              g->nr - 1, narrow, g->parts);
    emit_line(e, "  const int p = t / %d, part = t %% %d;", g->parts, g->parts);
  } else {
    emit_parallel_for(e, np, g->ns);
    emit_line(e, "for (int p = 0; p < %lld; p++) { /* panel p: columns %d * p .. %d * p + %d%s */",
              (long long)np, g->nr, g->nr, g->nr - 1, narrow);
  }
  e->indent++;
  if (g->nrem == 0) {
    emit_full_panel(e, s, g);
  } else {
    emit_line(e, "if (p < %lld) {", (long long)g->npf);
    e->indent++;
    emit_full_panel(e, s, g);
    e->indent--;
    emit_edge_panel(e, s, g, "} else {");
  }
  e->indent--;
  emit_line(e, "}");
}

/* A large A by a small B (a convolution's rows, thousands of them, by its
 * weight): each row tile passes over every panel before the next starts,
 * so the tile's rows stay in L1 while the panels (all of B, in L2) stream
 * past, where a panel at a time re-reads all of A from L3 or memory for
 * each panel. With --threads the row tiles are split among the threads. */
static void emit_rows_outer(Emit *e, const GemmSpec *s, const Geo *g0) {
  Geo g = *g0;
  int64_t lo[2] = {0, g0->m_hi}, hi[2] = {g0->m_hi, s->m};
  int mr[2] = {g0->mr_hi, g0->mr_lo};
  for (int t = 0; t < 2; t++) {
    if (hi[t] <= lo[t])
      continue;
    g.rows_outer = mr[t];
    if (g.par_rows)
      emit_parallel_for(e, (hi[t] - lo[t]) / mr[t], g.ns * (double)(hi[t] - lo[t]) / (double)s->m);
    emit_line(e, "for (int i0 = %lld; i0 < %lld; i0 += %d) { /* row tiles of %d, each over every panel */",
              (long long)lo[t], (long long)hi[t], mr[t], mr[t]);
    e->indent++;
    if (g.npf > 0) {
      emit_line(e, "for (int p = 0; p < %lld; p++) { /* panel p: columns %d * p .. %d * p + %d */",
                (long long)g.npf, g.nr, g.nr, g.nr - 1);
      e->indent++;
      emit_full_panel(e, s, &g);
      e->indent--;
      emit_line(e, "}");
    }
    if (g.nrem > 0)
      emit_edge_panel(e, s, &g, "{");
    e->indent--;
    emit_line(e, "}");
  }
}

/* The vector path: [the K blocks,] the full panels, the edge panel. */
static void emit_vector_panels(Emit *e, const GemmSpec *s, const Geo *g) {
  int vw = g->vw;
  emit_line(e, "typedef float %s __attribute__((vector_size(%d)));", g->vt, 4 * vw);
  if (s->act == GEMM_ACT_RELU || s->act == GEMM_ACT_GELU || g->q8)
    emit_line(e, "typedef int v%di __attribute__((vector_size(%d)));", vw, 4 * vw);
  if (g->bf16)
    emit_line(e, "typedef unsigned v%du __attribute__((vector_size(%d)));", vw, 4 * vw);
  if (g->a_large) {
    emit_rows_outer(e, s, g);
    return;
  }
  if (g->nkb > 1) {
    emit_line(e, "for (int k0 = 0; k0 < %lld; k0 += %lld) { /* K in %lld blocks%s */", (long long)g->krows,
              (long long)g->kc, (long long)g->nkb, g->bf16 ? " of bf16 pairs" : "");
    e->indent++;
  }
  if (g->par_panels) {
    emit_panels_parallel(e, s, g);
  } else {
    if (g->npf > 0) {
      emit_line(e, "for (int p = 0; p < %lld; p++) { /* panel p: columns %d * p .. %d * p + %d */",
                (long long)g->npf, g->nr, g->nr, g->nr - 1);
      e->indent++;
      emit_full_panel(e, s, g);
      e->indent--;
      emit_line(e, "}");
    }
    if (g->nrem > 0)
      emit_edge_panel(e, s, g, "{");
  }
  if (g->nkb > 1) {
    e->indent--;
    emit_line(e, "}");
  }
}

/* The vector path. With threads, where neither its panels nor its row
 * tiles are split (too little work), it is the lead's alone: another loop
 * of the kernel may be split (A's rounding to bf16), and every thread runs
 * what lies outside the split loops (pool_rule.c); over K blocks a late
 * thread's first block reset sums another had finished. */
static void emit_vector_path(Emit *e, const GemmSpec *s, const Geo *g) {
  if (e->threads == 1 || g->par_panels || g->par_rows) {
    emit_vector_panels(e, s, g);
    return;
  }
  int threads = e->threads;
  emit_line(e, "KILN_LEAD_ONLY {");
  e->indent++;
  e->threads = 1;
  emit_vector_panels(e, s, g);
  e->threads = threads;
  e->indent--;
  emit_line(e, "}");
}

/* The plain C path over the same panels. */
static void emit_scalar_path(Emit *e, const GemmSpec *s, const Geo *g) {
  const char *bias = arena_printf(e->g->arena, "%s%s",
                                  s->scale ? arena_printf(e->g->arena, " * scale[p * %d + j]", g->nr) : "",
                                  s->bias ? arena_printf(e->g->arena, " + bias[p * %d + j]", g->nr) : "");
  const char *epi = gemm_act_expr(e, s->act, "v");
  if (s->residual)
    epi = arena_printf(e->g->arena, "(%s) + res[i * %lld + p * %d + j]", epi, (long long)s->n, g->nr);
  for (int edge = 0; edge < 2; edge++) {
    int64_t p0 = edge ? g->npf : 0, p1 = edge ? g->npf + 1 : g->npf;
    int pw = edge ? g->pwe : g->nr, valid = edge ? g->nrem : g->nr;
    if (valid == 0 || p1 == p0)
      continue;
    /* the template starts with its loop over panels: split, or the lead's */
    emit_parallel_for(e, p1 - p0, g->ns * (double)(p1 - p0) / (double)(g->npf + (g->nrem > 0)));
    if (g->bf16) {
      emit_tmpl(e, "gemm_bf16_scalar", "P0", emit_int(e, p0), "P1", emit_int(e, p1), "PANEL",
                emit_int(e, g->kp * g->nr), "K2", emit_int(e, g->krows), "KA", emit_int(e, g->kp), "PW", emit_int(e, pw), "M",
                tiles_bound(e, s, s->m), "N", emit_int(e, s->n), "NR", emit_int(e, g->nr), "VALID", emit_int(e, valid),
                "BIAS", bias, "EPI", epi, NULL);
      continue;
    }
    emit_tmpl(e, "gemm_f32_scalar", "BT", g->q8 ? "int8_t" : "float", "P0", emit_int(e, p0), "P1", emit_int(e, p1), "PANEL",
              emit_int(e, s->k * g->nr), "K", emit_int(e, s->k), "PW", emit_int(e, pw), "M",
              tiles_bound(e, s, s->m), "A_RS", emit_int(e, s->a_rs), "N", emit_int(e, s->n), "NR",
              emit_int(e, g->nr), "VALID", emit_int(e, valid), "BIAS", bias, "EPI", epi, NULL);
  }
}

/* --precision=bf16: A rounded to bf16 (nearest, ties to even) once per
 * product, into ab [M][ceil(K/2)], two k a word as the panels hold B; for
 * the AMX path [M rounded up to 16][Geo.kp], the rest zero. With threads
 * the rows are split and ab is the team's one array (KILN_SHARED): every
 * thread reads every row. */
static void emit_bf16_rows(Emit *e, const GemmSpec *s, const Geo *g) {
  long long m = (long long)s->m, k = (long long)s->k, k2 = (long long)g->krows, ka = (long long)g->kp;
  long long mp = g->amx ? (m + 15) / 16 * 16 : m;
  emit_shared_array(e, "uint32_t", "ab", mp * ka,
                    arena_printf(e->g->arena, "[%lld][%lld]: A in bf16, A[i][2k] in the low half of word k%s", mp,
                                 ka, mp * ka > m * k2 ? "; the padding zero" : ""));
  if (mp * ka > m * k2)
    emit_line(e, "%smemset(ab, 0, %lld * sizeof *ab);", emit_lead_only(e), mp * ka);
  emit_parallel_for(e, m, 0.5 * (double)(m * k));
  emit_line(e, "for (int i = 0; i < %lld; i++) {", m);
  emit_line(e, "  const float *ai = a + i * %lld;", (long long)s->a_rs);
  emit_line(e, "  uint32_t *abi = ab + i * %lld;", ka);
  if (k / 2 > 0) {
    emit_line(e, "  for (int k = 0; k < %lld; k++)", k / 2);
    emit_line(e, "    abi[k] = (uint32_t)kiln_f32_to_bf16(ai[2 * k]) | (uint32_t)kiln_f32_to_bf16(ai[2 * k + 1]) << 16;");
  }
  if (k % 2)
    emit_line(e, "  abi[%lld] = kiln_f32_to_bf16(ai[%lld]); /* K is odd: the last word's high half is 0 */", k2 - 1,
              k - 1);
  emit_line(e, "}");
}

/* ---- AMX: TDPBF16PS on tiles (--precision=bf16, --isa=avx512) ------------------- */

/* Rows it .. it + 16 * nrt - 1 of ab (`rr` of them real, a C expression)
 * by the nct tiles of 16 columns of the panel at b (pw words a row, `valid`
 * real columns): C tiles 0-3 (row tile r, column tile c: 2r + c), A's row
 * tiles in 4 and 5, B's column tiles in 6 and 7; 32 k (16 pairs) a step.
 * The sums go through ct to the 16-wide epilogue, one row at a time. */
static void emit_amx_rows(Emit *e, const GemmSpec *s, const Geo *g, int nrt, int nct, int pw, int valid,
                          const char *rr) {
  long long kp = g->kp;
  for (int r = 0; r < nrt; r++)
    for (int c = 0; c < nct; c++)
      emit_line(e, "KILN_TILE_ZERO(%d);", 2 * r + c);
  emit_line(e, "for (int k = 0; k < %lld; k += 16) { /* 16 pairs of k */", kp);
  for (int r = 0; r < nrt; r++)
    emit_line(e, "  KILN_TILE_LOAD(%d, ab + (it + %d) * %lld + k, %lld);", 4 + r, 16 * r, kp, 4 * kp);
  for (int c = 0; c < nct; c++)
    emit_line(e, "  KILN_TILE_LOAD(%d, b + k * %d%s, %d);", 6 + c, pw, c ? " + 16" : "", 4 * pw);
  for (int r = 0; r < nrt; r++)
    for (int c = 0; c < nct; c++)
      emit_line(e, "  KILN_TILE_DP_BF16(%d, %d, %d);", 2 * r + c, 4 + r, 6 + c);
  emit_line(e, "}");
  emit_line(e, "float ct[32][32] __attribute__((aligned(64))); /* the tiles' sums */");
  for (int r = 0; r < nrt; r++)
    for (int c = 0; c < nct; c++)
      emit_line(e, "KILN_TILE_STORE(%d, ct[%d]%s, 128);", 2 * r + c, 16 * r, c ? " + 16" : "");
  emit_line(e, "for (int r = 0; r < %s; r++) {", rr);
  e->indent++;
  emit_line(e, "const int i0 = it + r; /* row i0 of Y */");
  int nv = (valid + 15) / 16;
  for (int v = 0; v < nv; v++)
    emit_line(e, "v16f acc0_%d; memcpy(&acc0_%d, ct[r] + %d, 64);", v, v, 16 * v);
  emit_line(e, "%s", tile_epilogue(e, s, g, 1, nv, valid));
  e->indent--;
  emit_line(e, "}");
}

/* One panel's row blocks: 32 rows at a time, then 16 (ab's rows past M are
 * zero); with GemmSpec.rows, those that start below m_run. */
static void emit_amx_panel(Emit *e, const GemmSpec *s, const Geo *g, const char *boff, const char *col, int pw,
                           int valid) {
  int64_t m = s->m, r16 = (m + 15) / 16 * 16, r32 = r16 / 32 * 32;
  int nct = pw / 16;
  emit_line(e, "const uint32_t *b = bp + %s; /* [%lld][%d] bf16 pairs */", boff, (long long)g->kp, pw);
  emit_line(e, "float *yp = y + %s;", col);
  if (s->bias)
    emit_line(e, "const float *bias_p = bias + %s;", col);
  if (s->residual)
    emit_line(e, "const float *rp = res + %s;", col);
  emit_line(e, "KILN_TILE_REGS;");
  emit_line(e, "KILN_TILE_CONFIG();");
  if (r32 > 0) {
    emit_line(e, "for (int it = 0; it < %s; it += 32) { /* rows it .. it + 31 */", tiles_bound(e, s, r32));
    e->indent++;
    emit_amx_rows(e, s, g, 2, nct, pw, valid,
                  m % 32 ? arena_printf(e->g->arena, "(%lld - it < 32 ? %lld - it : 32)", (long long)m, (long long)m)
                         : "32");
    e->indent--;
    emit_line(e, "}");
  }
  if (r16 > r32) {
    emit_line(e, "%s{ /* rows %lld .. %lld */", s->rows ? arena_printf(e->g->arena, "if (%lld < m_run) ", (long long)r32) : "",
              (long long)r32, (long long)m - 1);
    e->indent++;
    emit_line(e, "const int it = %lld;", (long long)r32);
    emit_amx_rows(e, s, g, 1, nct, pw, valid, emit_int(e, m - r32));
    e->indent--;
    emit_line(e, "}");
  }
  emit_line(e, "KILN_TILE_RELEASE();");
}

/* The AMX path: the full panels (split among the threads), then the edge
 * panel; g is the 16-wide view with K in one block (the tiles' sums stay
 * in the tiles over all of K). */
static void emit_amx_path(Emit *e, const GemmSpec *s, const Geo *g) {
  emit_line(e, "/* AMX (TDPBF16PS): tiles of 16 x 16 f32 sums, 32 x 32 a step */");
  emit_line(e, "typedef float v16f __attribute__((vector_size(64)));");
  if (s->act == GEMM_ACT_RELU || s->act == GEMM_ACT_GELU)
    emit_line(e, "typedef int v16i __attribute__((vector_size(64)));");
  long long panel = g->kp * g->nr;
  if (g->npf > 0) {
    emit_parallel_for(e, g->npf, g->ns);
    emit_line(e, "for (int p = 0; p < %lld; p++) { /* panel p: columns %d * p .. %d * p + %d */", (long long)g->npf,
              g->nr, g->nr, g->nr - 1);
    e->indent++;
    emit_amx_panel(e, s, g, arena_printf(e->g->arena, "p * %lld", panel), arena_printf(e->g->arena, "p * %d", g->nr),
                   g->nr, g->nr);
    e->indent--;
    emit_line(e, "}");
  }
  if (g->nrem > 0) {
    emit_line(e, "%s{ /* the edge panel: columns %lld .. %lld, zero-padded to %d */", emit_lead_only(e),
              (long long)(g->npf * g->nr), (long long)(s->n - 1), g->pwe);
    e->indent++;
    emit_amx_panel(e, s, g, emit_int(e, g->npf * panel), emit_int(e, g->npf * g->nr), g->pwe, g->nrem);
    e->indent--;
    emit_line(e, "}");
  }
}

/* GemmSpec.rows: m_run, the rows of A to compute, clipped to [0, M]. */
static void emit_rows_run(Emit *e, const GemmSpec *s) {
  if (s->rows)
    emit_line(e, "const int64_t m_run = %s < 0 ? 0 : %s > %lld ? %lld : %s; /* rows to compute: a prefill "
                 "chunk's real tokens */", s->rows, s->rows, (long long)s->m, (long long)s->m, s->rows);
}

/* ... and Y's rows from m_run on set to 0 (the tiles across m_run wrote some). */
static void emit_rows_zero(Emit *e, const GemmSpec *s) {
  if (!s->rows || s->rows_keep)
    return;
  emit_line(e, "%sif (m_run < %lld)", emit_lead_only(e), (long long)s->m);
  emit_line(e, "  memset(y + m_run * %lld, 0, (size_t)(%lld - m_run) * %lld * sizeof *y);", (long long)s->n,
            (long long)s->m, (long long)s->n);
}

/* The tile sizes of view g, for comments: "6 or 5 x 16". */
static const char *tile_sizes(Emit *e, const Geo *g) {
  if (g->mr_lo == 0 || g->m_hi == 0 || g->mr_lo == g->mr_hi)
    return arena_printf(e->g->arena, "%d x %d", g->mr_hi, g->nr);
  return arena_printf(e->g->arena, "%d or %d x %d", g->mr_hi, g->mr_lo, g->nr);
}

/* --gemm=openblas: Y = A·B by cblas_sgemm (B as it is, its own array),
 * then bias and activation in one pass over Y. */
static void emit_gemm_cblas(Emit *e, const GemmSpec *s) {
  Arena *a = e->g->arena;
  long long m = s->m, n = s->n, k = s->k;
  const char *bname = s->b_name ? arena_printf(a, " '%s'", s->b_name) : "";
  emit_line(e, "{ /* Y[%lld,%lld] = A[%lld,%lld] x B[%lld,%lld]%s%s%s%s by cblas_sgemm */", m, n, m, k, k,
            n, s->bias ? " + bias" : "", s->act ? ", then " : "", s->act ? act_name(s->act) : "",
            s->residual ? ", + residual" : "");
  e->indent++;
  emit_line(e, "float *y = %s; /* [%lld,%lld] */", s->y, m, n);
  emit_rows_run(e, s);
  const char *mr = s->rows ? "(int)m_run" : emit_int(e, m); /* the rows multiplied */
  /* the call (and K = 0's memset) on the lead alone: code outside a split
   * loop runs on every thread of the job, and two cblas_sgemm calls at
   * once on one Y race (OpenBLAS's own buffers too: heap corruption) */
  if (k == 0) { /* BLAS rejects a leading dimension of 0 */
    emit_line(e, "%smemset(y, 0, %lld); /* K = 0: the empty sums */", emit_lead_only(e), 4 * m * n);
  } else {
    const char *b = emit_const_array(e, DT_F32, s->b, k * n, s->b_name ? s->b_name : "b",
                                     arena_printf(a, "B%s [%lld,%lld]%s for cblas_sgemm (--gemm=openblas)",
                                                  bname, s->b_trans ? n : k, s->b_trans ? k : n,
                                                  s->b_trans ? " (transposed)" : ""));
    emit_line(e, "%scblas_sgemm(CblasRowMajor, CblasNoTrans, %s, %s, %lld, %lld, 1.0f, %s, %lld, %s, %lld, "
                 "0.0f, y, %lld);",
              emit_lead_only(e), s->b_trans ? "CblasTrans" : "CblasNoTrans", mr, n, k, s->a, (long long)s->a_rs, b,
              s->b_trans ? k : n, n);
  }
  if (s->bias || s->act || s->residual) {
    if (s->bias)
      emit_line(e, "const float *bias = %s; /* [%lld] */", s->bias, n);
    if (s->residual)
      emit_line(e, "const float *res = %s; /* [%lld,%lld] */", s->residual, m, n);
    emit_parallel_for(e, m, (double)(m * n) * (s->act >= GEMM_ACT_GELU ? 4 : 0.25));
    emit_line(e, "for (int i = 0; i < %s; i++) {", mr);
    e->indent++;
    emit_line(e, "float *yr = y + i * %lld; /* row i */", n);
    emit_line(e, "for (int j = 0; j < %lld; j++) {", n);
    emit_line(e, "  const float v = yr[j]%s;", s->bias ? " + bias[j]" : "");
    if (s->residual)
      emit_line(e, "  yr[j] = (%s) + res[i * %lld + j];", gemm_act_expr(e, s->act, "v"), n);
    else
      emit_line(e, "  yr[j] = %s;", gemm_act_expr(e, s->act, "v"));
    emit_line(e, "}");
    e->indent--;
    emit_line(e, "}");
  }
  emit_rows_zero(e, s);
  e->indent--;
  emit_line(e, "}");
}

/* B's packed copy for s (every product's, one after the other, with
 * GemmSpec.batch) registered with emit_const_array; its name, and in
 * *plen the elements of one product's. */
static const char *gemm_packed_array(Emit *e, const GemmSpec *s, const IsaTile *t, const Geo *g, int64_t *plen) {
  Arena *a = e->g->arena;
  int64_t nb = s->batch > 1 ? s->batch : 1, len;
  void *pk = gemm_pack(e, s, g, &len);
  size_t esz = g->bf16 ? sizeof(uint32_t) : s->bq ? 1 : sizeof(float);
  if (nb > 1) {
    char *all = arena_alloc(a, esz * (size_t)(nb * len > 0 ? nb * len : 1));
    memcpy(all, pk, esz * (size_t)len);
    for (int64_t q = 1; q < nb; q++) {
      GemmSpec sq = *s;
      sq.b = s->b + q * s->k * s->n;
      int64_t lq;
      memcpy(all + esz * (size_t)(q * len), gemm_pack(e, &sq, g, &lq), esz * (size_t)len);
    }
    pk = all;
  }
  *plen = len;
  const char *bname = s->b_name ? arena_printf(a, " '%s'", s->b_name) : "";
  const char *what = arena_printf(
      a, "B%s [%lld,%lld]%s%s packed for the GEMM kernel (--isa=%s): %lld panels [%lld][%d]%s", bname,
      (long long)s->k, (long long)s->n, s->b_trans ? " (from its transpose)" : "",
      s->bq ? " int8 (times a scale per column)" : "", t->name,
      (long long)g->npf, (long long)s->k, g->nr,
      g->nrem ? arena_printf(a, ", then [%lld][%d] for the last %d columns, zero-padded", (long long)s->k,
                            g->pwe, g->nrem)
             : "");
  if (g->bf16)
    what = arena_printf(a, "B%s [%lld,%lld]%s as bf16 packed for the bf16 GEMM kernel (--isa=%s, --precision=bf16): "
                        "%lld panels [%lld][%d] of words, B[2k][j] in the low half, B[2k+1][j] in the high%s%s", bname,
                        (long long)s->k, (long long)s->n, s->b_trans ? " (from its transpose)" : "", t->name,
                        (long long)g->npf, (long long)g->kp, g->nr,
                        g->nrem ? arena_printf(a, ", then [%lld][%d] for the last %d columns, zero-padded",
                                              (long long)g->kp, g->pwe, g->nrem) : "",
                        g->kp > g->krows ? arena_printf(a, "; rows from %lld on are zero (AMX tiles of 16 rows)",
                                                      (long long)g->krows) : "");
  if (nb > 1)
    what = arena_printf(a, "%lld products' B, one after the other, each %s", (long long)nb, what);
  return emit_const_array(e, g->bf16 ? DT_U32 : s->bq ? DT_I8 : DT_F32, pk, nb * len,
                          arena_printf(a, "%s_packed", s->b_name ? s->b_name : "b"), what);
}

/* One product's kernel, B packed at bp (a C expression). */
static void emit_gemm_product(Emit *e, const GemmSpec *s, const IsaTile *t, const Geo *g0, const char *bp) {
  Arena *a = e->g->arena;
  Geo g = *g0;
  emit_line(e, "{ /* Y[%lld,%lld] = A[%lld,%lld] x B[%lld,%lld]%s%s%s%s, B in panels of %d columns */",
            (long long)s->m, (long long)s->n, (long long)s->m, (long long)s->k, (long long)s->k,
            (long long)s->n, s->bias ? " + bias" : "", s->act ? ", then " : "",
            s->act ? act_name(s->act) : "", s->residual ? ", + residual" : "", g.nr);
  e->indent++;
  emit_line(e, "const float *a = %s; /* [%lld,%lld], rows %lld apart */", s->a, (long long)s->m,
            (long long)s->k, (long long)s->a_rs);
  emit_line(e, "const %s *bp = %s; /* B packed: %lld panels of %d columns, K-major */",
            g.bf16 ? "uint32_t" : s->bq ? "int8_t" : "float", bp, (long long)(g.npf + (g.nrem > 0)), g.nr);
  if (s->scale)
    emit_line(e, "const float *scale = %s; /* [%lld]: B[k][n] = Bq[k][n] * scale[n] */", s->scale,
              (long long)s->n);
  if (s->bias)
    emit_line(e, "const float *bias = %s; /* [%lld] */", s->bias, (long long)s->n);
  if (s->residual)
    emit_line(e, "const float *res = %s; /* the residual [%lld,%lld] */", s->residual, (long long)s->m,
              (long long)s->n);
  emit_line(e, "float *y = %s; /* [%lld,%lld] */", s->y, (long long)s->m, (long long)s->n);
  emit_rows_run(e, s);
  if (g.bf16)
    emit_bf16_rows(e, s, &g);
  if (g.amx) { /* AMX where the build targets it and the CPU grants it, else the paths below */
    Geo ga;
    gemm_geo(e, s, t, &views[0], &ga);
    ga.nkb = 1;
    ga.kc = ga.krows;
    emit_line(e, "#if defined(KILN_AMX)");
    emit_line(e, "if (kiln_amx_ready()) {");
    e->indent++;
    emit_amx_path(e, s, &ga);
    e->indent--;
    emit_line(e, "} else");
    emit_line(e, "#endif");
    emit_line(e, "{");
    e->indent++;
  }
  /* __builtin_convertvector (int8 panels): gcc 9, any clang */
  const char *gnu = s->bq ? "defined(__GNUC__) && !defined(KILN_GEMM_SCALAR) && (defined(__clang__) || "
                            "__GNUC__ >= 9)"
                          : "defined(__GNUC__) && !defined(KILN_GEMM_SCALAR)";
  /* the SIMD bodies --isa writes (vector_views.h), each with its geometry */
  SimdPaths paths = simd_paths(e);
  Geo gvs[4];
  const char *notes[4];
  bool dp = g.bf16 && g.nr % 16 == 0 && isa_writes_view(e->isa, &views[0]);
  if (dp) { /* vdpbf16ps where the C compiler targets AVX512-BF16 */
    gemm_geo(e, s, t, &views[0], &gvs[paths.n]);
    gvs[paths.n].dp = true;
    e->uses_bf16_dp = true;
    notes[paths.n] = arena_printf(a, "/* 16-wide vectors and vdpbf16ps: register tiles of %s */",
                                  tile_sizes(e, &gvs[paths.n]));
    /* not where the build targets AMX (an Intel CPU: vdpbf16ps has one port
       where f32 FMAs have two; there the AMX path, or else the f32 FMAs) */
    simd_paths_add(&paths, arena_printf(a, "%s && defined(__AVX512BF16__) && !defined(KILN_GEMM_NO_BF16DP) && "
                                           "!(defined(KILN_AMX) && KILN_AMX == 2)", gnu));
  }
  for (int i = 0; i < KILN_COUNT(views); i++) {
    const View *v = &views[i];
    if (g.nr % v->vw || !isa_writes_view(e->isa, v))
      continue;
    Geo *gv = &gvs[paths.n];
    gemm_geo(e, s, t, v, gv);
    notes[paths.n] = arena_printf(a, "/* %d-wide vectors: register tiles of %s%s */", v->vw, tile_sizes(e, gv),
                                  gv->bf16 ? (s->k % 2 ? ", bf16 pairs widened to f32 in registers"
                                                       : ", bf16 pairs widened to f32 in registers, A in f32")
                                  : !gv->q8 ? "" : gv->widen ? ", each int8 panel widened to f32 once"
                                                             : ", int8 widened in registers");
    simd_paths_add(&paths, view_cond(e, v, gnu));
  }
  if (paths.plain_first) {
    simd_paths_plain(e, &paths);
    emit_scalar_path(e, s, &g);
  }
  for (int i = 0; i < paths.n; i++) {
    simd_paths_body(e, &paths, i);
    emit_line(e, "%s", notes[i]);
    emit_vector_path(e, s, &gvs[i]);
  }
  if (!paths.plain_first) {
    simd_paths_plain(e, &paths);
    emit_scalar_path(e, s, &g);
  }
  simd_paths_end(e, &paths);
  if (g.amx) {
    e->indent--;
    emit_line(e, "}");
  }
  emit_rows_zero(e, s);
  e->indent--;
  emit_line(e, "}");
}

/* GemmSpec.batch: a loop over the products, each the kernel above on its
 * own A, B and Y; with threads the products are split among them (each
 * product's kernel then runs whole on the thread that took it). */
static void emit_gemm_batch(Emit *e, const GemmSpec *s, const IsaTile *t, const char *bp, int64_t plen) {
  Arena *a = e->g->arena;
  emit_line(e, "{ /* %lld products Y[q][%lld,%lld] = A[q][%lld,%lld] x B[q][%lld,%lld]%s, B[q] packed at %lld q */",
            (long long)s->batch, (long long)s->m, (long long)s->n, (long long)s->m, (long long)s->k,
            (long long)s->k, (long long)s->n, s->bias ? " + bias" : "", (long long)plen);
  e->indent++;
  emit_parallel_for(e, s->batch, gemm_ns(s) * (double)s->batch);
  emit_line(e, "for (int q = 0; q < %lld; q++)", (long long)s->batch);
  int threads = e->threads;
  e->threads = 1; /* the product's own loops stay whole */
  GemmSpec sq = *s;
  sq.a = arena_printf(a, "(%s) + q * %lld", s->a, (long long)s->a_bs);
  sq.y = arena_printf(a, "(%s) + q * %lld", s->y, (long long)s->y_bs);
  Geo gq;
  gemm_geo(e, &sq, t, &views[KILN_COUNT(views) - 1], &gq);
  emit_gemm_product(e, &sq, t, &gq, arena_printf(a, "%s + q * %lld", bp, (long long)plen));
  e->threads = threads;
  e->indent--;
  emit_line(e, "}");
}

bool emit_gemm(Emit *e, const GemmSpec *s) {
  if (s->m < 0 || s->n < 0 || s->k < 0 || s->a_rs < s->k || !(s->b || (s->bq && s->scale)))
    return false;
  if (s->batch > 1 && (s->residual || s->rows || s->bq || !s->b || s->a_bs < s->m * s->a_rs || s->y_bs < s->m * s->n))
    return false;
  if (s->m == 0 || s->n == 0 || s->batch < 0)
    return true;
  if (e->gemm == GEMM_OPENBLAS && !s->bq) { /* BLAS has no int8 x f32 product: int8 stays packed */
    for (int64_t q = 0; q < (s->batch > 1 ? s->batch : 1); q++) {
      GemmSpec sq = *s;
      if (s->batch > 1) {
        sq.a = arena_printf(e->g->arena, "(%s) + %lld", s->a, (long long)(q * s->a_bs));
        sq.y = arena_printf(e->g->arena, "(%s) + %lld", s->y, (long long)(q * s->y_bs));
        sq.b = s->b + q * s->k * s->n;
      }
      emit_gemm_cblas(e, &sq);
    }
    return true;
  }
  const IsaTile *t = &isa_tiles[e->isa];
  Geo g;
  gemm_geo(e, s, t, &views[KILN_COUNT(views) - 1], &g);
  int64_t plen;
  const char *bp = gemm_packed_array(e, s, t, &g, &plen);
  if (s->batch > 1)
    emit_gemm_batch(e, s, t, bp, plen);
  else
    emit_gemm_product(e, s, t, &g, bp);
  return true;
}
