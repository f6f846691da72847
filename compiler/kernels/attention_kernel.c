/* attention_kernel.c — the C kernel of kiln's Attention op, generated from
 * an AttnSpec (attention_kernel.h) that Attention's _emit fills,
 * flash-attention style: the [S, T] score matrix is never stored, only one
 * tile of it per work item.
 *
 * Work. The queries of each head are cut into tiles of MR rows (the
 * register tile's height: --isa generic 4, avx2 6, avx512 12, evened out
 * over S) and the keys into tiles of KT (a multiple of 16: up to 128, or
 * 32 under a static mask so that its empty blocks can be skipped). One
 * work item — a (head, query tile) pair, the unit --threads splits —
 * walks the key tiles with a running max m, sum l and output o per row
 * (templates/attention.c.in): scores for the tile, the mask, the online
 * softmax step that rescales what came before (attention_online.c.in),
 * then p · V into o; Y = o / l at the end.
 *
 * Register tiles. Q·Kᵀ reads Kᵀ, whose keys are contiguous: MR rows by 16
 * keys in MR x 16/VW vector accumulators, one broadcast of q[r][x] and
 * 16/VW loads of Kᵀ's row x per step (the GEMM kernel's scheme,
 * gemm_kernel.c). p·V reads V's rows: MR rows by up to 2 vectors of
 * columns, one broadcast of p[r][j] and the vectors of V's row j per key.
 * When T is not a multiple of 16 the last key tile's K^T block is copied
 * into a zero-padded local block and its padding keys score -inf.
 *
 * Masks. A static mask (causal or any constant) is classified at compile
 * time per (query tile, key tile): all masked — skipped, never visited;
 * all clear — no mask work; else mixed — read the mask (a causal mask
 * tests j > i + offset instead). The visited tiles are a constant table,
 * entries first[qt] .. first[qt + 1] - 1 of list, each 2·kt + mixed. Only
 * -inf, or finite scores <= ATTN_MASKED_BELOW in rows that keep some key,
 * count as masked: the skipped terms are exactly the zeros the full
 * softmax would add. A runtime padding mask (query-independent) skips, at
 * run time, the key tiles it masks entirely with -inf. With topk nothing
 * is skipped: a first pass over the tiles fills each row's k-buffer (its
 * topk largest scores, descending) and the second drops what is below.
 *
 * Vectors. As for the GEMM (vector_views.h), --isa=avx512 writes the
 * 16-wide body (__AVX512F__ or -DKILN_GEMM_V16), avx2 the 8-wide one
 * (__AVX__, -DKILN_GEMM_V8), each after the plain C loops with the same
 * tiles and tables that a compiler not targeting it takes (and f64, and
 * -DKILN_GEMM_SCALAR); --isa=portable writes all of 16-, 8- and 4-wide
 * (any other GNU C compiler) and the plain C, picked when the generated
 * file is compiled. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention_kernel.h"
#include "vector_views.h"

static const char *const mask_names[] = {
    [ATTN_MASK_NONE] = "none",         [ATTN_MASK_CAUSAL] = "causal",     [ATTN_MASK_PADDING] = "padding",
    [ATTN_MASK_STATIC] = "static",     [ATTN_MASK_ADDITIVE] = "additive", [ATTN_MASK_BOOL] = "bool",
};

const char *attn_mask_name(AttnMask k) { return k >= 0 && k < ATTN_MASK_BAD ? mask_names[k] : "?"; }

int64_t attn_lead_offset(const AttnGeom *ge, const int64_t *st, int64_t b) {
  int64_t off = 0;
  for (int a = ge->nlead - 1; a >= 0; a--) {
    off += b % ge->lead[a] * st[a];
    b /= ge->lead[a];
  }
  return off;
}

int64_t attn_group_offset(const AttnGeom *ge, const int64_t *st, const int64_t *div, int64_t b) {
  int64_t off = 0;
  for (int a = ge->nlead - 1; a >= 0; a--) {
    off += b % ge->lead[a] / (div[a] > 1 ? div[a] : 1) * st[a];
    b /= ge->lead[a];
  }
  return off;
}

static const int isa_rows[] = {[ISA_GENERIC] = 4, [ISA_AVX2] = 6, [ISA_AVX512] = 12};

/* the vector widths: vector_views.h */

/* Everything the emitted code is laid out by. */
typedef struct Plan {
  AttnGeom ge;
  AttnSpec sp;
  const char *ty;          /* C type of the elements */
  int mr;                  /* rows of a query tile */
  int64_t nqt;             /* query tiles per head */
  int64_t kt, nkt, twl;    /* key tile width, tiles, keys in the last one */
  int64_t dvp;             /* Dv rounded up to 16: a row of o */
  int64_t nqb, qtb;        /* blocks of query tiles per head (work items), tiles per block */
  int kmode;               /* how the vector paths read Kᵀ (K_INPLACE, ...) */
  int mask_el;             /* what a mixed tile does: 0 none, 'c' causal, 'a' additive, 'b' bool */
  bool table;              /* a static mask: visit the tiles of the table */
  bool pad_skip;           /* a runtime padding mask: skip its all -inf key tiles */
  bool single;             /* one key tile, always visited: no running rescale (alpha) */
  bool mask_regs;          /* vector paths: an additive mask that is one row of contiguous keys
                              for every query (a padding mask) is added to the scores in
                              registers, a vector load shared by the tile's rows */
  bool fused_max;          /* vector paths: the scores are final as the products leave the
                              registers (no mask, top-k or padding keys), so each row's max is
                              taken there (vm) instead of by reading the scores again */
  int64_t causal_off;
  const char *first, *list; /* the table's C names */
  const char *q, *k, *v, *y, *m; /* C pointers of the operands */
} Plan;

/* Kᵀ in the vector paths: its keys contiguous, read in place (a last tile
 * of fewer than a multiple of 16 keys copied into kpad); or packed for the
 * work item's head into kpack; or, too large for that, each tile copied. */
enum { K_INPLACE, K_PACK, K_TILE };

static Arena *ar(Emit *e) { return e->g->arena; }

/* "expr" of text built in b, in the arena; b is freed. */
static const char *take(Emit *e, Buf *b) {
  if (b->len && b->s[b->len - 1] == '\n')
    b->s[--b->len] = 0;
  const char *r = arena_strdup(ar(e), b->s ? b->s : "");
  buf_free(b);
  return r;
}

static const char *I(Emit *e, int64_t v) { return emit_int(e, v); }

/* Emitting into a buffer of its own, at indentation 0, until
 * capture_end, which returns the text and goes back to the run function's
 * body: how a template's text becomes a piece of a bigger one. */
typedef struct Capture {
  Buf text, *out;
  int indent;
} Capture;

static void capture_begin(Emit *e, Capture *c) {
  *c = (Capture){.out = e->out, .indent = e->indent};
  e->out = &c->text;
  e->indent = 0;
}

static const char *capture_end(Emit *e, Capture *c) {
  e->out = c->out;
  e->indent = c->indent;
  return take(e, &c->text);
}

static int64_t round16(int64_t x) { return (x + 15) / 16 * 16; }

/* ---- the plan ----------------------------------------------------------------- */

/* Rows per query tile: the --isa tile, evened out so the last tile wastes
 * the fewest rows (S = 16 with 12-row tiles: two of 8). */
static void plan_rows(Emit *e, Plan *p) {
  int64_t s = p->ge.s, mr = isa_rows[e->isa];
  int64_t tiles = (s + mr - 1) / mr;
  p->mr = (int)((s + tiles - 1) / tiles);
  p->nqt = (s + p->mr - 1) / p->mr;
}

/* Key tiles: equal widths (multiples of 16) of at most 128 keys, or 32
 * under a static mask, whose blocks are then small enough to skip. */
static void plan_keys(Plan *p) {
  int64_t t = p->ge.t, ktmax = p->table ? 32 : 128;
  p->nkt = (t + ktmax - 1) / ktmax;
  p->kt = round16((t + p->nkt - 1) / p->nkt);
  p->twl = t - (p->nkt - 1) * p->kt;
  p->dvp = round16(p->ge.dv);
  bool contiguous = p->ge.kst[p->ge.rank - 1] == 1;
  p->kmode = contiguous ? K_INPLACE : p->ge.dh * round16(t) * 4 <= ATTN_KPACK_BYTES ? K_PACK : K_TILE;
}

/* Work items: one per head, its query tiles split into blocks only when
 * there are fewer heads than threads. */
static void plan_work(Emit *e, Plan *p) {
  int64_t th = e->threads > 1 ? e->threads : 1;
  p->nqb = p->ge.nb >= th ? 1 : (th + p->ge.nb - 1) / p->ge.nb;
  p->nqb = p->nqb > p->nqt ? p->nqt : p->nqb;
  p->qtb = (p->nqt + p->nqb - 1) / p->nqb;
  p->nqb = (p->nqt + p->qtb - 1) / p->qtb;
}

/* ---- the static mask's block table --------------------------------------------- */

enum { CL_SKIP, CL_CLEAR, CL_MIXED };

/* Element at offset i of mask m: 0 clear, 1 masked by -inf, 2 masked by
 * a finite value <= ATTN_MASKED_BELOW, 3 anything else. */
static int mask_el_class(const Plan *p, int64_t i) {
  const void *m = p->sp.mask_data;
  if (p->ge.mdt == DT_BOOL) {
    double f = p->sp.mask_fill;
    return !el_get_u(DT_BOOL, m, i) ? 0 : isinf(f) && f < 0 ? 1 : f <= ATTN_MASKED_BELOW ? 2 : 3;
  }
  double x = el_get_f(p->ge.mdt, m, i);
  return x == 0 ? 0 : isinf(x) && x < 0 ? 1 : x <= ATTN_MASKED_BELOW ? 2 : 3;
}

/* Heads whose masks differ: all of them, or one when the mask is the same
 * for every head. */
static int64_t mask_heads(const Plan *p) {
  for (int a = 0; a < p->ge.nlead; a++)
    if (p->ge.mst[a])
      return p->ge.nb;
  return 1;
}

/* Classes of every (query tile, key tile) block, over every head: bit 1
 * clear, 2 masked, 4 other; rows masked entirely by finite values (whose
 * softmax is uniform, not 0) keep their tile's blocks. */
static uint8_t *block_classes(Emit *e, const Plan *p) {
  const AttnGeom *ge = &p->ge;
  int r = ge->rank;
  uint8_t *bits = arena_alloc(ar(e), (size_t)(p->nqt * p->nkt));
  bool *keep = arena_alloc(ar(e), (size_t)p->nqt);
  for (int64_t b = 0, nh = mask_heads(p); b < nh; b++)
    for (int64_t i = 0; i < ge->s; i++) {
      int64_t row = attn_lead_offset(ge, ge->mst, b) + i * ge->mst[r - 2], qt = i / p->mr;
      bool live = false, finite = false;
      for (int64_t j = 0; j < ge->t; j++) {
        int c = mask_el_class(p, row + j * ge->mst[r - 1]);
        bits[qt * p->nkt + j / p->kt] |= (uint8_t)(c == 0 ? 1 : c <= 2 ? 2 : 4);
        live |= c == 0 || c == 3;
        finite |= c == 2;
      }
      if (!live && finite)
        keep[qt] = true;
    }
  for (int64_t qt = 0; qt < p->nqt; qt++)
    for (int64_t kt = 0; kt < p->nkt; kt++) {
      uint8_t *c = &bits[qt * p->nkt + kt];
      bool skip_ok = !keep[qt] && p->sp.topk == 0 && (p->sp.softcap == 0 || p->sp.softcap_first); /* -inf is
                                                                                              -softcap after */
      *c = *c == 1 ? CL_CLEAR : *c == 2 && skip_ok ? CL_SKIP : CL_MIXED;
    }
  return bits;
}

/* Emit the table of visited tiles as two int32 arrays; the number of
 * blocks with mask work. */
static int64_t emit_block_table(Emit *e, Plan *p) {
  uint8_t *cls = block_classes(e, p);
  int32_t *first = arena_alloc(ar(e), sizeof(int32_t) * (size_t)(p->nqt + 1));
  int32_t *list = arena_alloc(ar(e), sizeof(int32_t) * (size_t)(p->nqt * p->nkt + 1));
  int64_t n = 0, mixed = 0;
  for (int64_t qt = 0; qt < p->nqt; qt++) {
    first[qt] = (int32_t)n;
    for (int64_t kt = 0; kt < p->nkt; kt++)
      if (cls[qt * p->nkt + kt] != CL_SKIP) {
        mixed += cls[qt * p->nkt + kt] == CL_MIXED;
        list[n++] = (int32_t)(2 * kt + (cls[qt * p->nkt + kt] == CL_MIXED));
      }
  }
  first[p->nqt] = (int32_t)n;
  const char *who = arena_printf(ar(e), "Attention '%s'", p->sp.name);
  const char *y = e->g->vals[p->sp.y_vid].name; /* the model's name, not the node's ("Transpose_9") */
  p->first = emit_const_array(
      e, DT_I32, first, p->nqt + 1, arena_printf(ar(e), "%s_tiles_first", y),
      arena_printf(ar(e), "%s: %s mask '%s', query tiles of %d rows: tile qt visits entries first[qt] .. "
                   "first[qt + 1] - 1 of the list below", who, attn_mask_name(p->sp.mask),
                   p->sp.mask_name, p->mr));
  p->list = emit_const_array(
      e, DT_I32, list, n, arena_printf(ar(e), "%s_tiles", y),
      arena_printf(ar(e), "%s: key tiles (of %lld keys) to visit, each 2 * tile + (1 if its mask must be "
                   "applied): %lld of %lld blocks, %lld with mask work", who, (long long)p->kt, (long long)n,
                   (long long)(p->nqt * p->nkt), (long long)mixed));
  return mixed;
}

/* ---- pieces shared by every path ------------------------------------------------- */

/* " + bh / P % L * stride" for each leading axis, the offset of head bh
 * (K and V: " + bh / P % L / G * stride", G = div[a] indices of Q per
 * one of theirs; NULL div: one to one). */
static const char *head_offset(Emit *e, const AttnGeom *ge, const int64_t *st, const int64_t *div) {
  Buf b = {0};
  int64_t inner = 1;
  for (int a = ge->nlead - 1; a >= 0; a--) {
    int64_t g = div && div[a] > 1 ? div[a] : 1;
    if (st[a] && ge->lead[a] > 1 && g < ge->lead[a]) {
      const char *idx = a == 0 ? arena_printf(ar(e), "bh / %lld", (long long)inner)
                        : inner == 1 ? arena_printf(ar(e), "bh %% %lld", (long long)ge->lead[a])
                                     : arena_printf(ar(e), "bh / %lld %% %lld", (long long)inner,
                                                    (long long)ge->lead[a]);
      if (a == 0 && inner == 1)
        idx = "bh";
      if (g > 1)
        idx = arena_printf(ar(e), "%s / %lld", idx, (long long)g);
      buf_printf(&b, " + %s * %lld", idx, (long long)st[a]);
    }
    inner *= ge->lead[a];
  }
  return take(e, &b);
}

/* "p + off", or p when off is 0: an operand read at its slice's start. */
static const char *at(Emit *e, const char *p, int64_t off) {
  return off ? arena_printf(ar(e), "%s + %lld", p, (long long)off) : p;
}

/* Pointers to head bh of each operand (and Kᵀ packed, when it is). */
static const char *heads(Emit *e, const Plan *p, bool vec) {
  const AttnGeom *ge = &p->ge;
  int r = ge->rank;
  const char *T = p->ty;
  Buf b = {0};
  buf_printf(&b, "const %s *qh = %s%s; /* Q: row i at qh + i * %lld */\n", T, at(e, p->q, ge->qoff),
             head_offset(e, ge, ge->qst, NULL), (long long)ge->qst[r - 2]);
  buf_printf(&b, "const %s *kh = %s%s; /* K^T: (x, j) at kh + x * %lld + j * %lld */\n", T, at(e, p->k, ge->koff),
             head_offset(e, ge, ge->kst, ge->kdiv), (long long)ge->kst[r - 2], (long long)ge->kst[r - 1]);
  buf_printf(&b, "const %s *vh = %s%s; /* V: key j's row at vh + j * %lld */\n", T, at(e, p->v, ge->voff),
             head_offset(e, ge, ge->vst, ge->vdiv), (long long)ge->vst[r - 2]);
  if (p->m)
    buf_printf(&b, "const %s *mh = %s%s; /* the mask: (i, j) at mh + i * %lld + j * %lld */\n",
               dt_ctype(ge->mdt), p->m, head_offset(e, ge, ge->mst, NULL), (long long)ge->mst[r - 2],
               (long long)ge->mst[r - 1]);
  buf_printf(&b, "%s *yh = %s%s; /* Y: row i at yh + i * %lld */\n", T, p->y, head_offset(e, ge, ge->yst, NULL),
             (long long)ge->yst[r - 2]);
  if (vec && p->kmode == K_PACK && p->sp.rows) { /* the live keys only, in whole 16-key chunks */
    long long tp = (long long)round16(ge->t);
    buf_printf(&b, "float kpack[%lld][%lld]; /* K^T of the head, keys contiguous: the live ones, then zero to a "
               "multiple of 16 */\n", (long long)ge->dh, tp);
    buf_printf(&b, "for (int j = 0; j < (rows_run + 15) / 16 * 16; j++)\n  for (int x = 0; x < %lld; x++)\n",
               (long long)ge->dh);
    buf_printf(&b, "    kpack[x][j] = j < rows_run ? kh[j * %lld + x * %lld] : 0.0f;\n", (long long)ge->kst[r - 1],
               (long long)ge->kst[r - 2]);
  } else if (vec && p->kmode == K_PACK) {
    long long tp = (long long)round16(ge->t);
    buf_printf(&b, "float kpack[%lld][%lld]; /* K^T of the head, keys contiguous, zero past %lld */\n",
               (long long)ge->dh, tp, (long long)ge->t);
    buf_printf(&b, "for (int j = 0; j < %lld; j++)\n  for (int x = 0; x < %lld; x++)\n", tp, (long long)ge->dh);
    buf_printf(&b, "    kpack[x][j] = j < %lld ? kh[j * %lld + x * %lld] : 0.0f;\n", (long long)ge->t,
               (long long)ge->kst[r - 1], (long long)ge->kst[r - 2]);
  }
  return take(e, &b);
}

/* The tile's state (o, s, m, l, alpha, its query rows; the padded Kᵀ
 * block and k-buffers when needed) and its initial values. */
static const char *state(Emit *e, const Plan *p, bool vec) {
  const char *T = p->ty, *NEG = emit_double_literal(e, p->ge.dt, -INFINITY);
  int r = p->ge.rank, mr = p->mr;
  Buf b = {0};
  buf_printf(&b, "%s o[%d][%lld]; /* sum_j exp(s_rj - m[r]) * V[j], Dv = %lld padded to %lld */\n", T, mr,
             (long long)p->dvp, (long long)p->ge.dv, (long long)p->dvp);
  buf_printf(&b, "%s s[%d][%lld]; /* the key tile's scores, then their exp */\n", T, mr, (long long)p->kt);
  if (vec && p->single)
    buf_printf(&b, "%s m[%d], l[%d]; /* max, sum */\n", T, mr, mr);
  else
    buf_printf(&b, "%s m[%d], l[%d], alpha[%d]; /* running max, running sum, o's rescale */\n", T, mr, mr, mr);
  buf_printf(&b, "const %s *qr[%d]; /* query row ir[r] of Q */\nint ir[%d];\n", T, mr, mr);
  if (vec && (p->kmode == K_TILE || (p->kmode == K_INPLACE && p->ge.t % 16)))
    buf_printf(&b, "float kpad[%lld][%lld]; /* a key tile's K^T block, zero-padded */\n", (long long)p->ge.dh,
               (long long)p->kt);
  if (p->sp.topk)
    buf_printf(&b, "%s kbuf[%d][%lld]; /* per row its top %lld scores, descending */\n", T, mr,
               (long long)p->sp.topk, (long long)p->sp.topk);
  buf_printf(&b, "memset(o, 0, sizeof o);\nfor (int r = 0; r < %d; r++) {\n", mr);
  if (p->sp.rows) /* rows past the live tokens repeat the last live one (and are not stored) */
    buf_puts(&b, "  ir[r] = i0 + r < rows_run ? i0 + r : rows_run - 1;\n");
  else if (p->ge.s % mr)
    buf_printf(&b, "  ir[r] = i0 + r < %lld ? i0 + r : %lld;\n", (long long)p->ge.s, (long long)p->ge.s - 1);
  else
    buf_puts(&b, "  ir[r] = i0 + r;\n");
  buf_printf(&b, "  qr[r] = qh + ir[r] * %lld;\n  m[r] = %s;\n  l[r] = 0;\n", (long long)p->ge.qst[r - 2],
             NEG);
  if (p->sp.topk)
    buf_printf(&b, "  for (int k = 0; k < %lld; k++)\n    kbuf[r][k] = %s;\n", (long long)p->sp.topk, NEG);
  buf_puts(&b, "}");
  return take(e, &b);
}

/* The key-tile loop's header. */
static const char *keyloop(Emit *e, const Plan *p) {
  const char *pass = p->sp.topk ? "for (int pass = 0; pass < 2; pass++) /* 0: the k-buffers; 1: softmax */\n"
                                : "";
  if (p->table)
    return arena_printf(ar(e), "%sfor (int e = %s[qt]; e < %s[qt + 1]; e++)", pass, p->first, p->first);
  return arena_printf(ar(e), "%sfor (int kt = 0; kt < %lld%s; kt++)", pass, (long long)p->nkt,
                      p->sp.rows ? arena_printf(ar(e), " && kt * %lld < rows_run", (long long)p->kt) : "");
}

/* The tile's first lines: kt (and mixed), j0, its width tw. */
static void tile_head(Emit *e, const Plan *p, Buf *b) {
  if (p->table && p->mask_el)
    buf_printf(b, "const int kt = %s[e] >> 1, mixed = %s[e] & 1;\n", p->list, p->list);
  else if (p->table)
    buf_printf(b, "const int kt = %s[e] >> 1;\n", p->list);
  buf_printf(b, "const int j0 = kt * %lld; /* its first key */\n", (long long)p->kt);
  const char *c = p->sp.rows ? "" : "const ";
  if (p->twl != p->kt && p->nkt > 1)
    buf_printf(b, "%sint tw = kt == %lld ? %lld : %lld; /* its keys */\n", c, (long long)(p->nkt - 1),
               (long long)p->twl, (long long)p->kt);
  else
    buf_printf(b, "%sint tw = %lld; /* its keys */\n", c, (long long)p->twl);
  if (p->sp.rows)
    buf_puts(b, "if (j0 + tw > rows_run) /* keys past the live tokens: not visited */\n  tw = rows_run - j0;\n"
                "if (tw <= 0)\n  continue;\n");
}

/* A runtime padding mask: skip a tile whose keys are all masked (-inf). */
static void padding_skip(Emit *e, const Plan *p, Buf *b) {
  int r = p->ge.rank;
  long long msj = (long long)p->ge.mst[r - 1];
  buf_printf(b, "int live = 0; /* padding mask: does any key of the tile take part? */\n");
  buf_printf(b, "for (int j = 0; j < tw; j++)\n");
  if (p->mask_el == 'b')
    buf_printf(b, "  live |= !mh[(j0 + j) * %lld];\n", msj);
  else
    buf_printf(b, "  live |= !(mh[(j0 + j) * %lld] < -%s);\n", msj,
               p->ge.dt == DT_F32 ? "3.40282347e+38f" : "1.7976931348623157e+308");
  buf_puts(b, "if (!live)\n  continue;\n");
}

/* The mask, on the tile's scores of each row. */
static void apply_mask(Emit *e, const Plan *p, Buf *b) {
  int r = p->ge.rank;
  long long msi = (long long)p->ge.mst[r - 2], msj = (long long)p->ge.mst[r - 1];
  const char *ind = p->table ? "  " : "";
  if (p->table)
    buf_puts(b, "if (mixed) {\n");
  buf_printf(b, "%sfor (int r = 0; r < %d; r++) {\n", ind, p->mr);
  switch (p->mask_el) {
  case 'c':
    buf_printf(b, "%s  const int vis = ir[r] + %lld - j0; /* causal: keys past i + %lld are -inf */\n", ind,
               (long long)p->causal_off + 1, (long long)p->causal_off);
    buf_printf(b, "%s  for (int j = vis > 0 ? vis : 0; j < tw; j++)\n%s    s[r][j] = %s;\n", ind, ind,
               emit_double_literal(e, p->ge.dt, -INFINITY));
    break;
  case 'a':
    buf_printf(b, "%s  const %s *mr = mh + ir[r] * %lld + j0 * %lld;\n", ind, p->ty, msi, msj);
    buf_printf(b, "%s  for (int j = 0; j < tw; j++)\n%s    s[r][j] += mr[j * %lld];\n", ind, ind, msj);
    break;
  default:
    buf_printf(b, "%s  const bool *mr = mh + ir[r] * %lld + j0 * %lld;\n", ind, msi, msj);
    buf_printf(b, "%s  for (int j = 0; j < tw; j++)\n%s    if (mr[j * %lld])\n%s      s[r][j] = %s;\n", ind,
               ind, msj, ind, emit_double_literal(e, p->ge.dt, p->sp.mask_fill));
  }
  buf_printf(b, "%s}\n", ind);
  if (p->table)
    buf_puts(b, "}\n");
}

/* Top-k: pass 0 keeps each row's k largest scores in its k-buffer (a
 * sorted insert); pass 1 drops the scores below the k-th. */
static void apply_topk(Emit *e, const Plan *p, Buf *b) {
  long long k = (long long)p->sp.topk;
  buf_printf(b, "if (pass == 0) { /* into the k-buffers */\n  for (int r = 0; r < %d; r++)\n", p->mr);
  buf_puts(b, "    for (int j = 0; j < tw; j++) {\n");
  buf_printf(b, "      const %s x = s[r][j];\n      int at = %lld;\n", p->ty, k);
  buf_puts(b, "      while (at > 0 && kbuf[r][at - 1] < x) {\n");
  buf_printf(b, "        if (at < %lld)\n          kbuf[r][at] = kbuf[r][at - 1];\n        at--;\n      }\n", k);
  buf_printf(b, "      if (at < %lld)\n        kbuf[r][at] = x;\n    }\n  continue;\n}\n", k);
  buf_printf(b, "for (int r = 0; r < %d; r++) /* keep the scores >= the k-th largest */\n", p->mr);
  buf_printf(b, "  for (int j = 0; j < tw; j++)\n    if (s[r][j] < kbuf[r][%lld])\n      s[r][j] = %s;\n", k - 1,
             emit_double_literal(e, p->ge.dt, p->sp.topk_fill));
}

/* The softcap on every score of the tile, masked ones included (-inf
 * becomes -softcap), in the order the unfused Div, Tanh, Mul round. */
static void apply_softcap(Emit *e, const Plan *p, Buf *b) {
  const char *cap = emit_double_literal(e, p->ge.dt, p->sp.softcap);
  buf_printf(b, "for (int r = 0; r < %d; r++) /* softcap: cap * tanh(s / cap) */\n  for (int j = 0; j < tw; j++)\n",
             p->mr);
  buf_printf(b, "    s[r][j] = %s(s[r][j] / %s) * %s;\n", emit_mathfn(e, p->ge.dt, "tanh"), cap, cap);
}

/* The mask, top-k and softcap steps after the scores (vec: the vector
 * paths, which may have added the mask already). */
static void after_scores(Emit *e, const Plan *p, Buf *b, bool vec) {
  bool cap = p->sp.softcap > 0;
  if (cap && p->sp.softcap_first)
    apply_softcap(e, p, b);
  if (p->mask_el && !(vec && p->mask_regs))
    apply_mask(e, p, b);
  if (p->sp.topk)
    apply_topk(e, p, b);
  if (cap && !p->sp.softcap_first)
    apply_softcap(e, p, b);
}

/* ---- the plain C path ------------------------------------------------------------ */

static const char *scalar_tile(Emit *e, const Plan *p) {
  int r = p->ge.rank;
  const char *T = p->ty;
  Buf b = {0};
  tile_head(e, p, &b);
  if (p->pad_skip)
    padding_skip(e, p, &b);
  buf_printf(&b, "for (int r = 0; r < %d; r++) /* scores: scale * q.k */\n  for (int j = 0; j < tw; j++) {\n",
             p->mr);
  buf_printf(&b, "    %s acc = 0;\n    for (int x = 0; x < %lld; x++)\n", T, (long long)p->ge.dh);
  buf_printf(&b, "      acc += qr[r][x] * kh[x * %lld + (j0 + j) * %lld];\n", (long long)p->ge.kst[r - 2],
             (long long)p->ge.kst[r - 1]);
  buf_printf(&b, "    s[r][j] = acc * %s;\n  }\n", emit_double_literal(e, p->ge.dt, p->sp.scale));
  after_scores(e, p, &b, false);
  Capture cap;
  capture_begin(e, &cap);
  emit_tmpl(e, "attention_online_scalar", "T", T, "MR", I(e, p->mr), "TW", "tw", "EXP",
            emit_mathfn(e, p->ge.dt, "exp"), "NEG_MAX",
            p->ge.dt == DT_F32 ? "-3.40282347e+38f" : "-1.7976931348623157e+308", NULL);
  buf_puts(&b, capture_end(e, &cap));
  buf_printf(&b, "\nfor (int r = 0; r < %d; r++) { /* o = o * alpha + p . V */\n", p->mr);
  buf_printf(&b, "  for (int c = 0; c < %lld; c++)\n    o[r][c] *= alpha[r];\n", (long long)p->ge.dv);
  buf_printf(&b, "  for (int j = 0; j < tw; j++) {\n    const %s pj = s[r][j], *vr = vh + (j0 + j) * %lld;\n", T,
             (long long)p->ge.vst[r - 2]);
  buf_printf(&b, "    for (int c = 0; c < %lld; c++)\n      o[r][c] += pj * vr[c];\n  }\n}", (long long)p->ge.dv);
  return take(e, &b);
}

/* ---- the vector paths ------------------------------------------------------------- */

/* The tile's Kᵀ block kp (row x at kp + x * krs, 16-key chunks up to tn):
 * in place; in kpack; or copied into kpad with zeros after its keys (a
 * last tile narrower than a multiple of 16, or every tile of K_TILE). */
static void vec_kblock(Emit *e, const Plan *p, Buf *b) {
  int r = p->ge.rank;
  long long krs = (long long)p->ge.kst[r - 2], kts = (long long)p->ge.kst[r - 1], kt = (long long)p->kt;
  buf_printf(b, "const int tn = (tw + 15) / 16 * 16; /* in whole 16-key chunks */\n");
  if (p->kmode == K_PACK) {
    buf_printf(b, "const float *kp = &kpack[0][j0]; /* the K^T block: row x at kp + x * %lld */\n",
               (long long)round16(p->ge.t));
    return;
  }
  if (p->kmode == K_INPLACE && p->ge.t % 16 == 0) {
    buf_printf(b, "const float *kp = kh + j0; /* the K^T block: row x at kp + x * %lld */\n", krs);
    return;
  }
  bool all = p->kmode == K_TILE;
  buf_printf(b, "const float *kp = kh + j0%s; /* the K^T block: row x at kp + x * krs */\nint krs = %lld;\n",
             all ? arena_printf(ar(e), " * %lld", kts) : "", krs);
  buf_printf(b, "if (%s) { /* copy, zero-padded */\n", all ? "1" : "tw < tn");
  buf_printf(b, "  for (int x = 0; x < %lld; x++)\n    for (int j = 0; j < tn; j++)\n", (long long)p->ge.dh);
  buf_printf(b, "      kpad[x][j] = j < tw ? kp[x * %lld + j * %lld] : 0.0f;\n", krs, kts);
  buf_printf(b, "  kp = &kpad[0][0];\n  krs = %lld;\n}\n", kt);
}

/* Scores of the tile, 16 keys at a time: MR x 16/VW accumulators. */
static void vec_scores(Emit *e, const Plan *p, const View *v, Buf *b) {
  int nv = 16 / v->vw, vw = v->vw;
  const char *krs = p->kmode == K_PACK        ? I(e, round16(p->ge.t))
                    : p->kmode == K_TILE || p->ge.t % 16 ? "krs"
                                                       : I(e, p->ge.kst[p->ge.rank - 2]);
  if (p->fused_max)
    buf_printf(b, "v%df vm[%d]; /* each row's max score so far, per lane */\nfor (int r = 0; r < %d; r++)\n"
               "  vm[r] = (v%df){0} - INFINITY;\n", vw, p->mr, p->mr, vw);
  buf_printf(b, "for (int c = 0; c < tn; c += 16) { /* keys j0 + c .. j0 + c + 15: scale * q.k */\n");
  for (int r = 0; r < p->mr; r++) {
    buf_printf(b, "  v%df", vw);
    for (int j = 0; j < nv; j++)
      buf_printf(b, "%s a%d_%d = {0}", j ? "," : "", r, j);
    buf_puts(b, ";\n");
  }
  buf_printf(b, "  for (int x = 0; x < %lld; x++) {\n    const float *kx = kp + x * %s + c;\n    v%df",
             (long long)p->ge.dh, krs, vw);
  for (int j = 0; j < nv; j++)
    buf_printf(b, "%s k%d", j ? "," : "", j);
  buf_puts(b, ";\n");
  for (int j = 0; j < nv; j++)
    buf_printf(b, "    memcpy(&k%d, kx%s, sizeof k%d);\n", j, j ? arena_printf(ar(e), " + %d", j * vw) : "", j);
  for (int r = 0; r < p->mr; r++) {
    buf_puts(b, "   ");
    for (int j = 0; j < nv; j++)
      buf_printf(b, " a%d_%d += qr[%d][x] * k%d;", r, j, r, j);
    buf_puts(b, "\n");
  }
  buf_puts(b, "  }\n");
  const char *sc = emit_double_literal(e, DT_F32, p->sp.scale);
  for (int j = 0; p->mask_regs && j < nv; j++) {
    const char *cj = j ? arena_printf(ar(e), "c + %d", j * vw) : "c";
    buf_printf(b, "  v%df mk%d;\n", vw, j);
    if (p->sp.rows) /* keys past the live tokens: not read (they score -inf below) */
      buf_printf(b, "  if (%s + %d <= tw)\n  ", cj, vw);
    buf_printf(b, "  memcpy(&mk%d, mh + j0 + %s, sizeof mk%d); /* the padding mask's keys */\n", j, cj, j);
    if (p->sp.rows)
      buf_printf(b, "  else\n    for (int lane = 0; lane < %d; lane++)\n      mk%d[lane] = %s + lane < tw ? mh[j0 + %s + lane] : 0.0f;\n",
                 vw, j, cj, cj);
  }
  for (int r = 0; r < p->mr; r++)
    for (int j = 0; j < nv; j++) {
      buf_printf(b, "  a%d_%d *= %s;\n", r, j, sc);
      if (p->mask_regs)
        buf_printf(b, "  a%d_%d += mk%d;\n", r, j, j);
      buf_printf(b, "  memcpy(&s[%d][c%s], &a%d_%d, sizeof a%d_%d);\n", r, j ? arena_printf(ar(e), " + %d", j * vw) : "",
                 r, j, r, j);
      if (p->fused_max)
        buf_printf(b, "  { const v%di gt = a%d_%d > vm[%d]; vm[%d] = (v%df)((gt & (v%di)a%d_%d) | (~gt & (v%di)vm[%d])); }\n",
                   vw, r, j, r, r, vw, vw, r, j, vw, r);
    }
  buf_puts(b, "}\n");
}

/* "col + off" when col is a variable, the sum when it is a number. */
static const char *col_at(Emit *e, const char *col, int64_t full, int off) {
  if (full < 0)
    return off ? arena_printf(ar(e), "%s + %d", col, off) : col;
  return I(e, full + off);
}

/* o[r][c0 ..] = o[r][c0 ..] * alpha[r] + Σ_j p[r][j] V[j][c0 ..] for nv
 * vectors of columns from c0 (the variable col when full < 0, else the
 * number full), the last vector with `last` valid columns (a partial
 * load of V's row). */
static void vec_pv_block(Emit *e, const Plan *p, const View *v, Buf *b, int64_t full, int nv, int last) {
  int vw = v->vw;
  const char *c0 = col_at(e, "col", full, 0);
  long long vrs = (long long)p->ge.vst[p->ge.rank - 2];
  for (int r = 0; r < p->mr; r++)
    for (int j = 0; j < nv; j++)
      if (p->single) /* the one key tile: o starts here */
        buf_printf(b, "v%df o%d_%d = {0};\n", vw, r, j);
      else
        buf_printf(b, "v%df o%d_%d;\nmemcpy(&o%d_%d, &o[%d][%s], sizeof o%d_%d);\no%d_%d *= alpha[%d];\n", vw, r,
                   j, r, j, r, col_at(e, "col", full, j * vw), r, j, r, j, r);
  buf_printf(b, "for (int j = 0; j < tw; j++) {\n  const float *vr = vh + (j0 + j) * %lld%s;\n", vrs,
             strcmp(c0, "0") ? arena_printf(ar(e), " + %s", c0) : "");
  for (int j = 0; j < nv; j++) {
    bool part = j == nv - 1 && last < vw;
    buf_printf(b, "  v%df v%d%s;\n  memcpy(&v%d, vr%s, %s);\n", vw, j, part ? " = {0}" : "", j,
               j ? arena_printf(ar(e), " + %d", j * vw) : "",
               part ? arena_printf(ar(e), "%d", 4 * last) : arena_printf(ar(e), "sizeof v%d", j));
  }
  for (int r = 0; r < p->mr; r++) {
    buf_puts(b, " ");
    for (int j = 0; j < nv; j++)
      buf_printf(b, " o%d_%d += s[%d][j] * v%d;", r, j, r, j);
    buf_puts(b, "\n");
  }
  buf_puts(b, "}\n");
  for (int r = 0; r < p->mr; r++)
    for (int j = 0; j < nv; j++)
      buf_printf(b, "memcpy(&o[%d][%s], &o%d_%d, sizeof o%d_%d);\n", r, col_at(e, "col", full, j * vw), r, j, r, j);
}

/* head, then the text of in indented by two, then "}". */
static void put_block(Emit *e, Buf *b, const char *head, Buf *in) {
  buf_printf(b, "%s\n", head);
  for (const char *s = take(e, in); *s;) {
    const char *nl = strchr(s, '\n');
    int len = nl ? (int)(nl - s) : (int)strlen(s);
    buf_printf(b, "  %.*s\n", len, s);
    s += len + (nl != NULL);
  }
  buf_puts(b, "}\n");
}

/* The block of o += p . V at columns c0 .. c0 + width - 1. */
static void vec_pv_at(Emit *e, const Plan *p, const View *v, Buf *b, int64_t c0, int64_t width) {
  int nv = (int)((width + v->vw - 1) / v->vw), last = (int)(width - (int64_t)(nv - 1) * v->vw);
  Buf in = {0};
  vec_pv_block(e, p, v, &in, c0, nv, last);
  put_block(e, b, arena_printf(ar(e), "{ /* o += p . V, columns %lld .. %lld */", (long long)c0,
                               (long long)(c0 + width - 1)), &in);
}

/* p · V into o, in column blocks as wide as the accumulators allow: a
 * loop over the full ones (one block when there is one), then the rest. */
static void vec_pv(Emit *e, const Plan *p, const View *v, Buf *b) {
  int vw = v->vw, nvmax = v->acc / p->mr;
  nvmax = nvmax < 1 ? 1 : nvmax > 2 ? 2 : nvmax;
  int64_t dv = p->ge.dv, bw = (int64_t)nvmax * vw, nfull = dv / bw;
  if (nfull >= 2) {
    Buf in = {0};
    vec_pv_block(e, p, v, &in, -1, nvmax, vw);
    put_block(e, b, arena_printf(ar(e), "for (int col = 0; col < %lld; col += %lld) { /* o += p . V, columns col "
                                 ".. col + %lld */", (long long)(nfull * bw), (long long)bw, (long long)bw - 1), &in);
  } else if (nfull == 1) {
    vec_pv_at(e, p, v, b, 0, bw);
  }
  if (dv % bw)
    vec_pv_at(e, p, v, b, nfull * bw, dv % bw);
}

static const char *vec_tile(Emit *e, const Plan *p, const View *v) {
  Buf b = {0};
  tile_head(e, p, &b);
  if (p->pad_skip)
    padding_skip(e, p, &b);
  vec_kblock(e, p, &b);
  vec_scores(e, p, v, &b);
  after_scores(e, p, &b, true);
  if (p->ge.t % 16 || p->sp.rows) /* a last partial tile, or keys past the live tokens */
    buf_printf(&b, "for (int r = 0; r < %d; r++) /* padding keys: -inf */\n  for (int j = tw; j < tn; j++)\n"
               "    s[r][j] = -INFINITY;\n", p->mr);
  const char *vt = arena_printf(ar(e), "v%df", v->vw), *vi = arena_printf(ar(e), "v%di", v->vw);
  Capture cap;
  capture_begin(e, &cap);
  const char *vmax = p->fused_max ? "vmax = vm[r];"
                     : arena_printf(ar(e), "memcpy(&vmax, sr, sizeof vmax);\nfor (int v = 1; v < tn / %d; v++) {\n"
                                    "  memcpy(&x, sr + v * %d, sizeof x);\n  const %s gt = x > vmax;\n"
                                    "  vmax = (%s)((gt & (%s)x) | (~gt & (%s)vmax));\n}", v->vw, v->vw, vi, vt, vi, vi);
  emit_tmpl(e, "attention_online", "VT", vt, "VI", vi, "VW", I(e, v->vw), "MR", I(e, p->mr), "NV",
            arena_printf(ar(e), "tn / %d", v->vw), "VMAX", vmax, "ALPHA",
            p->single ? "/* one key tile: nothing earlier to rescale */"
                      : "alpha[r] = expf(m[r] - mu); /* one per row: libm's scalar expf is the quicker here */",
            "L", p->single ? "sum" : "l[r] * alpha[r] + sum", NULL);
  buf_printf(&b, "%s\n", capture_end(e, &cap));
  vec_pv(e, p, v, &b);
  return take(e, &b);
}

/* ---- the whole kernel ------------------------------------------------------------ */

/* Estimated serial nanoseconds (emit_parallel_for): both products at
 * about 50 GFLOP/s, and an exp per score. */
static double kernel_ns(const Plan *p) {
  double scores = (double)p->ge.nb * (double)p->ge.s * (double)p->ge.t;
  return scores * (double)(p->ge.dh + p->ge.dv) * 2 / 50 + scores * 0.5;
}

/* Row r of Y from o and l; with a finite score_min, a row whose every
 * score is at or below it (m[r] <= score_min: the clamp made them all
 * equal) is the mean of V's T rows instead. */
static const char *row_out(Emit *e, const Plan *p, const char *T) {
  const AttnGeom *ge = &p->ge;
  const char *div = arena_printf(ar(e), "for (int e = 0; e < %lld; e++)\n  yr[e] = o[r][e] / l[r];", (long long)ge->dv);
  if (isinf(p->sp.score_min))
    return div;
  DType ut = strcmp(T, "float") ? ge->dt : DT_F32;
  /* with a token count, the keys are the live ones */
  const char *nk = p->sp.rows ? "rows_run" : I(e, ge->t);
  const char *mean = p->sp.rows ? arena_printf(ar(e), "(%s)rows_run", T) : emit_double_literal(e, ut, (double)ge->t);
  return arena_printf(ar(e),
                      "if (m[r] > %s) {\n%s\n} else { /* every score <= score_min: a uniform softmax */\n"
                      "  for (int e = 0; e < %lld; e++) {\n    %s acc = 0;\n"
                      "    for (int j = 0; j < %s; j++)\n      acc += vh[j * %lld + e];\n"
                      "    yr[e] = acc / %s;\n  }\n}",
                      emit_double_literal(e, ut, p->sp.score_min), div, (long long)ge->dv, T, nk,
                      (long long)ge->vst[ge->rank - 2], mean);
}

/* One path: the skeleton with its tile. */
static void emit_path(Emit *e, const Plan *p, const View *v) {
  const char *T = v ? "float" : p->ty;
  if (v) {
    emit_line(e, "typedef float v%df __attribute__((vector_size(%d)));", v->vw, 4 * v->vw);
    emit_line(e, "typedef int v%di __attribute__((vector_size(%d)));", v->vw, 4 * v->vw);
  }
  int r = p->ge.rank;
  const char *work, *qtloop = arena_printf(ar(e), "for (int qt = 0; qt < %lld; qt++)", (long long)p->nqt);
  long long nqb = (long long)p->nqb, qtb = (long long)p->qtb;
  if (p->ge.nb > 1 && nqb > 1)
    work = arena_printf(ar(e), "const int bh = w / %lld, qt0 = w %% %lld * %lld; /* head, first query tile */", nqb,
                        nqb, qtb);
  else if (p->ge.nb > 1)
    work = "const int bh = w; /* the head */";
  else if (nqb > 1)
    work = arena_printf(ar(e), "const int qt0 = w * %lld; /* first query tile */", qtb);
  else
    work = "/* the one head, all its query tiles */";
  if (nqb > 1)
    qtloop = arena_printf(ar(e), "for (int qt = qt0; qt < qt0 + %lld && qt < %lld; qt++)", qtb, (long long)p->nqt);
  if (p->sp.rows) /* queries past the live tokens: not visited */
    qtloop = arena_printf(ar(e), "%.*s && qt * %d < rows_run; qt++)", (int)(strlen(qtloop) - 7), qtloop, p->mr);
  emit_parallel_for(e, p->ge.nb * p->nqb, kernel_ns(p));
  emit_tmpl(e, "attention", "NWORK", I(e, p->ge.nb * p->nqb), "WORK", work, "QTLOOP", qtloop, "MR", I(e, p->mr),
            "HEADS", heads(e, p, v != NULL), "STATE", state(e, p, v != NULL), "KEYLOOP", keyloop(e, p), "TILE",
            v ? vec_tile(e, p, v) : scalar_tile(e, p), "T", T, "S", p->sp.rows ? "rows_run" : I(e, p->ge.s), "YRS",
            I(e, p->ge.yst[r - 2]),
            "ROW_OUT", row_out(e, p, T), NULL);
}

/* What a mixed tile does, and how tiles are visited. */
static void plan_mask(Plan *p) {
  AttnMask k = p->sp.mask;
  p->table = k == ATTN_MASK_CAUSAL || k == ATTN_MASK_STATIC;
  p->causal_off = k == ATTN_MASK_CAUSAL ? p->sp.causal_off : 0;
  p->mask_el = k == ATTN_MASK_NONE ? 0 : k == ATTN_MASK_CAUSAL ? 'c' : p->ge.mdt == DT_BOOL ? 'b' : 'a';
  double f = p->sp.mask_fill;
  p->pad_skip = k == ATTN_MASK_PADDING && !p->sp.topk && (p->sp.softcap == 0 || p->sp.softcap_first) &&
                (p->mask_el == 'a' || (isinf(f) && f < 0));
}

/* ", each K and V head shared by G query heads" when they are grouped. */
static const char *groups_note(Emit *e, const AttnGeom *ge) {
  int64_t g = 1;
  for (int a = 0; a < ge->nlead; a++)
    g *= (ge->kdiv[a] > 1 ? ge->kdiv[a] : 1);
  return g > 1 ? arena_printf(ar(e), ", each K and V head read by %lld query heads", (long long)g) : "";
}

static void describe(Emit *e, const Plan *p) {
  const AttnGeom *ge = &p->ge;
  emit_line(e, "{ /* Attention over %lld heads%s: Y[%lld,%lld] = softmax(%s * Q[%lld,%lld] x K^T[%lld,%lld]%s%s) x "
            "V[%lld,%lld]; query tiles of %d rows, key tiles of %lld */", (long long)ge->nb, groups_note(e, ge),
            (long long)ge->s,
            (long long)ge->dv, emit_double_literal(e, DT_F64, p->sp.scale), (long long)ge->s, (long long)ge->dh,
            (long long)ge->dh, (long long)ge->t,
            p->sp.mask ? arena_printf(ar(e), " + %s mask", attn_mask_name(p->sp.mask)) : "",
            p->sp.topk     ? arena_printf(ar(e), ", top %lld", (long long)p->sp.topk)
            : p->sp.softcap ? arena_printf(ar(e), ", softcap %s%s", emit_double_literal(e, DT_F64, p->sp.softcap),
                                           p->sp.softcap_first ? " before the mask" : "")
                            : "",
            (long long)ge->t,
            (long long)ge->dv, p->mr, (long long)p->kt);
}

void attn_emit_kernel(Emit *e, const AttnSpec *sp) {
  Plan p = {.sp = *sp, .ge = sp->ge, .q = sp->q, .k = sp->k, .v = sp->v};
  KILN_ASSERT(p.ge.nb * p.ge.s * p.ge.dv > 0);
  p.ty = dt_ctype(p.ge.dt);
  if (p.ge.t == 0) { /* softmax over no keys times an empty V: zeros */
    emit_line(e, "memset(%s, 0, %lld); /* Attention over no keys */", emit_ref(e, sp->y_vid),
              (long long)(p.ge.nb * p.ge.s * p.ge.dv * (int64_t)dt_size(p.ge.dt)));
    return;
  }
  plan_rows(e, &p);
  plan_mask(&p);
  plan_keys(&p);
  p.single = p.nkt == 1 && !p.table && !p.sp.topk;
  p.mask_regs = p.mask_el == 'a' && !p.table && p.sp.softcap == 0 && p.ge.mst[p.ge.rank - 2] == 0 && p.ge.mst[p.ge.rank - 1] == 1 &&
                p.ge.t % 16 == 0;
  p.fused_max = (!p.mask_el || p.mask_regs) && !p.sp.topk && p.sp.softcap == 0 && p.ge.t % 16 == 0 && !p.sp.rows;
  plan_work(e, &p);
  if (p.table && emit_block_table(e, &p) == 0)
    p.mask_el = 0; /* no block needs the mask */
  if (p.mask_el == 'a' || p.mask_el == 'b')
    p.m = emit_ref(e, sp->m_vid);
  p.y = emit_ref(e, sp->y_vid);
  describe(e, &p);
  e->indent++;
  if (p.sp.rows)
    emit_line(e, "const int rows_run = %s < 0 ? 0 : %s > %lld ? %lld : (int)%s; /* the live tokens */", p.sp.rows,
              p.sp.rows, (long long)p.ge.s, (long long)p.ge.s, p.sp.rows);
  SimdPaths paths = simd_paths(e); /* f32: the widths --isa writes (vector_views.h); else plain C alone */
  const View *pv[4];
  for (int i = 0; p.ge.dt == DT_F32 && i < KILN_COUNT(views); i++)
    if (isa_writes_view(e->isa, &views[i])) {
      pv[paths.n] = &views[i];
      simd_paths_add(&paths, view_cond(e, &views[i], "defined(__GNUC__) && !defined(KILN_GEMM_SCALAR)"));
    }
  if (paths.plain_first) {
    simd_paths_plain(e, &paths);
    emit_path(e, &p, NULL);
  }
  for (int i = 0; i < paths.n; i++) {
    simd_paths_body(e, &paths, i);
    emit_line(e, "/* %d-wide vectors */", pv[i]->vw);
    emit_path(e, &p, pv[i]);
  }
  if (!paths.plain_first) {
    simd_paths_plain(e, &paths);
    emit_path(e, &p, NULL);
  }
  simd_paths_end(e, &paths);
  e->indent--;
  emit_line(e, "}");
}
