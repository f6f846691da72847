/* attention_kernel.h — the generator of the fused Attention kernel
 * (attention_kernel.c) and what it is given: an AttnSpec that Attention's
 * _emit (compiler/ops/attention.c) fills from the node, so the generator
 * never sees a Node or a Graph (the op and its attributes: compiler/ops/
 * attention.h).
 *
 *   Y = softmax(topk(scale · Q·Kᵀ (+ mask))) · V   along the key axis T
 *     Q  [..., S, Dh]   Kᵀ [..., Dh, T]   V [..., T, Dv]   Y [..., S, Dv]
 *
 * each operand read through its own strides (the head split and merge,
 * the slices of a fused QKV projection), the mask broadcast to the scores
 * [..., S, T]. */
#ifndef KILN_ATTENTION_KERNEL_H
#define KILN_ATTENTION_KERNEL_H

#include "../emit/emit.h"

/* What is known about the mask at compile time (the op's `mask`
 * attribute; compiler/ops/attention.h says what each kind means). */
typedef enum AttnMask {
  ATTN_MASK_NONE,
  ATTN_MASK_CAUSAL,
  ATTN_MASK_PADDING,
  ATTN_MASK_STATIC,
  ATTN_MASK_ADDITIVE,
  ATTN_MASK_BOOL,
  ATTN_MASK_BAD
} AttnMask;

/* "none", "causal", ...: the attribute's spelling; "?" for ATTN_MASK_BAD. */
const char *attn_mask_name(AttnMask k);

/* A masked score at or below this (or -inf) contributes exp(s - max) = 0
 * to any row that also holds an unmasked score, so a block of them can be
 * skipped (for finite ones, only in rows that are not masked entirely). */
#define ATTN_MASKED_BELOW (-1e30)

/* The largest Kᵀ of one head (bytes, keys padded to 16) the kernel packs on
 * the stack when its keys are not contiguous; beyond, it copies each key
 * tile, and the fuse_attention pass leaves the Transpose in front of Kᵀ instead. */
#define ATTN_KPACK_BYTES 262144

/* The operands as logical [..., S, Dh], [..., Dh, T], [..., T, Dv] and
 * [..., S, Dv] tensors, each axis with its element stride in the physical
 * tensor (0 where the mask broadcasts). */
typedef struct AttnGeom {
  DType dt;
  int rank, nlead;             /* nlead = rank - 2 leading (batch, head) dims */
  int64_t lead[MAX_RANK], nb;  /* the leading dims and their product */
  int64_t s, t, dh, dv;
  int64_t qst[MAX_RANK], kst[MAX_RANK], vst[MAX_RANK], yst[MAX_RANK];
  int64_t qoff, koff, voff;    /* where each operand starts in its input (its slice) */
  /* Grouped heads (GQA): per leading axis, how many of Q's indices share
   * one of K's (V's): Q's index i reads K's i / kdiv[a] (a dim of K that
   * divides Q's; kdiv = Q's dim where K's is 1, a broadcast). 0 or 1: one
   * to one. The kernel reads the shared head in place, never a copy. */
  int64_t kdiv[MAX_RANK], vdiv[MAX_RANK];
  bool has_mask;
  DType mdt;
  int64_t mst[MAX_RANK];       /* the mask, per axis of the scores [..., S, T] */
} AttnGeom;

/* Element offset of head b (a flat index over the leading dims) in a
 * tensor whose leading axes have strides st. */
int64_t attn_lead_offset(const AttnGeom *ge, const int64_t *st, int64_t b);
/* The same for K or V, whose leading indices are Q's divided by div
 * (ge->kdiv, ge->vdiv). */
int64_t attn_group_offset(const AttnGeom *ge, const int64_t *st, const int64_t *div, int64_t b);

/* Everything the kernel is generated from. The first eight fields are the
 * op's attributes (attn_read, compiler/ops/attention.h, fills them and ge). */
typedef struct AttnSpec {
  double scale;          /* default 1/√Dh */
  AttnMask mask;
  double mask_fill;      /* bool masks: the value of a masked score (default -inf) */
  int64_t topk;          /* 0: off */
  double topk_fill;      /* what topk drops becomes (default -inf) */
  double score_min;      /* the (masked) scores below it become it (default -inf: no clamp); finite only
                          * <= ATTN_MASKED_BELOW, where it changes just the rows masked entirely */
  double softcap;        /* > 0: each score s (masked ones too) becomes softcap · tanh(s / softcap); 0 off */
  bool softcap_first;    /* the softcap before the mask (masked scores stay masked), not after */
  AttnGeom ge;           /* dims, strides, dtypes */
  const char *name;      /* the node's name: comments and the block table's array names */
  const char *mask_name; /* the mask value's name, for comments (NULL: no mask) */
  const void *mask_data; /* a constant mask's elements, [..., S, T] strided by ge.mst (else NULL) */
  int64_t causal_off;    /* mask causal: masked exactly where key j > query i + causal_off */
  const char *q, *k, *v; /* C pointer expressions of Q, Kᵀ and V's inputs (emit_ref) */
  /* The mask's and Y's value ids: the kernel takes their emit_ref itself,
   * after its block table and only if it reads the mask, because the
   * order of first use names the weights and a kernel function's
   * parameters. */
  int m_vid, y_vid;
  const char *rows;      /* C expression of the live tokens (an encoder's run-time count: queries and keys
                          * from it on are not visited, Y's rows from it on are left as they are), or NULL.
                          * With it, no row of Q, K, V, Y or the mask from it on is read or written, so
                          * NAME_run_batch's packs call the kernel on one sentence's rows in place
                          * (pointers at its first row, its count): OPF_ROWS_EXACT */
} AttnSpec;

/* Emit the kernel; Y must not be empty (zeros when there are no keys). */
void attn_emit_kernel(Emit *e, const AttnSpec *sp);

#endif
