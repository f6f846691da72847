/* attention.h — kiln's fused Attention op, shared by the op itself
 * (compiler/ops/attention.c: _infer, _eval, _emit), its kernel generator
 * (attention_kernel.c) and the pass that makes it
 * (compiler/passes/fuse_attention.c).
 *
 *   Attention(Q, Kᵀ, V [, mask]) -> Y
 *     Q  [..., S, Dh]   Kᵀ [..., Dh, T]   V [..., T, Dv]   Y [..., S, Dv]
 *     Y = softmax(topk(scale · Q·Kᵀ (+ mask))) · V   along the key axis T
 *
 * Kᵀ, not K, is the canonical key operand: it is what MatMul(Q, Kᵀ) reads
 * in every PyTorch export, and keys contiguous in memory are what the
 * kernel's vectors run along. The head split and merge around attention
 * are folded in as layouts: `q_perm`, `k_perm`, `v_perm` say that the
 * logical operand is Transpose(input, perm), and `y_perm` that the output
 * is Transpose(logical Y, y_perm); all but k_perm keep the last axis last
 * (rows stay contiguous; keys that are not contiguous the kernel packs),
 * and the leading dims of Q, Kᵀ and V are equal. `q_slice`, `k_slice`,
 * `v_slice` = [axis, start, end] say that the operand is a range of one
 * axis of its input, taken before the perm: how Q, K and V are read in
 * place from the fused QKV projection's output (one buffer, three views),
 * with no copy of the slices.
 *
 * The mask (optional) broadcasts to the scores [..., S, T]. A float mask is
 * added to the scaled scores; a bool mask marks with true the scores that
 * become `mask_fill` (PyTorch's masked_fill / Where(mask, fill, scores)).
 * `mask` records what is known about it at compile time:
 *   none      no mask input
 *   causal    a constant whose masked entries (-inf) are exactly those
 *             with key j > query i + offset
 *   padding   a runtime mask that does not depend on the query (S axis 1)
 *   static    any other constant: the kernel skips its all-masked blocks
 *   additive  a runtime float mask
 *   bool      a runtime bool mask
 * `topk` > 0 keeps, per query row, the scores >= its topk-th largest (the
 * Explicit Sparse Transformer); the others become `topk_fill`. */
#ifndef KILN_ATTENTION_H
#define KILN_ATTENTION_H

#include "../emit.h"

typedef enum AttnMask {
  ATTN_MASK_NONE,
  ATTN_MASK_CAUSAL,
  ATTN_MASK_PADDING,
  ATTN_MASK_STATIC,
  ATTN_MASK_ADDITIVE,
  ATTN_MASK_BOOL,
  ATTN_MASK_BAD
} AttnMask;

const char *attn_mask_name(AttnMask k);

/* A masked score at or below this (or -inf) contributes exp(s - max) = 0
 * to any row that also holds an unmasked score, so a block of them can be
 * skipped (for finite ones, only in rows that are not masked entirely). */
#define ATTN_MASKED_BELOW (-1e30)

/* The largest Kᵀ of one head (bytes, keys padded to 16) the kernel packs on
 * the stack when its keys are not contiguous; beyond, it copies each key
 * tile, and the fuse_attention pass leaves the Transpose in front of Kᵀ instead. */
#define ATTN_KPACK_BYTES 262144

/* The op's attributes, read once. */
typedef struct AttnSpec {
  double scale;         /* default 1/√Dh */
  AttnMask mask;
  double mask_fill;     /* bool masks: the value of a masked score (default -inf) */
  int64_t topk;         /* 0: off */
  double topk_fill;     /* what topk drops becomes (default -inf) */
} AttnSpec;

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
  bool has_mask;
  DType mdt;
  int64_t mst[MAX_RANK];       /* the mask, per axis of the scores [..., S, T] */
} AttnGeom;

/* Read n's attributes and its operands' geometry (the node must have
 * passed attention_infer). */
void attn_read(const Graph *g, const Node *n, AttnSpec *sp, AttnGeom *ge);
/* Element offset of head b (a flat index over the leading dims) in a
 * tensor whose leading axes have strides st. */
int64_t attn_lead_offset(const AttnGeom *ge, const int64_t *st, int64_t b);

/* Is the constant mask (type mt, broadcast to scores [..., S, T]) causal:
 * -inf (bool: true, with fill -inf) exactly where key j > query i + off,
 * 0 (false) elsewhere, the same for every head? Sets *off. */
bool attn_mask_is_causal(const Type *mt, const void *data, double fill, int64_t s, int64_t t, int64_t *off);

/* The kernel (attention_kernel.c): the whole of Attention's _emit. */
bool attn_emit_kernel(Emit *e, const Node *n);

#endif
