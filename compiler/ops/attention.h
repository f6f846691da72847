/* attention.h — kiln's fused Attention op, shared by the op itself
 * (compiler/ops/attention.c: _infer, _eval, _emit), its ONNX lowering
 * and the pass that makes it (compiler/passes/fuse_attention.c). The
 * kernel generator and what it is given (AttnSpec) are in
 * compiler/kernels/attention_kernel.h.
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
 * and the leading dims of Q, Kᵀ and V are equal — or, for grouped-query
 * attention (GQA, MQA), Kᵀ's and V's divide Q's: with H query heads and
 * Hkv key/value heads, query head h reads kv head h / (H / Hkv), in place
 * (a dim of 1 broadcasts). `q_slice`, `k_slice`,
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
 *   causal    a constant whose masked entries (-inf, or a finite value
 *             <= ATTN_MASKED_BELOW such as Hugging Face's finfo.min when
 *             every row keeps a key, offset >= 0) are exactly those with
 *             key j > query i + offset
 *   padding   a runtime mask that does not depend on the query (S axis 1)
 *   static    any other constant: the kernel skips its all-masked blocks
 *   additive  a runtime float mask
 *   bool      a runtime bool mask
 * `topk` > 0 keeps, per query row, the scores >= its topk-th largest (the
 * Explicit Sparse Transformer); the others become `topk_fill`.
 * `score_min` (default -inf: none) clamps the masked scores from below,
 * Max(scores, score_min), as Hugging Face's Llama does with finfo.min: it
 * must be <= -1e30 (ATTN_MASKED_BELOW), where the clamp changes only a row
 * whose every score is masked — its softmax is then uniform (Y is the mean
 * of V's rows) instead of NaN; not with topk.
 * `softcap` (default 0: off) > 0 bounds every score after the mask:
 * softcap · tanh(s / softcap) (Gemma 2; ONNX Attention's softcap), so a
 * masked -inf becomes -softcap, a weight the softmax keeps — as ONNX
 * defines it; the kernel then skips no masked block. With `softcap_first`
 * = 1 the softcap applies to the scaled scores before the mask instead
 * (Hugging Face's Gemma 2, ONNX Runtime's GroupQueryAttention): masked
 * scores stay masked. Not with topk or a finite score_min. */
#ifndef KILN_ATTENTION_H
#define KILN_ATTENTION_H

#include "../kernels/attention_kernel.h"

/* Read n's attributes into sp and its operands' geometry into ge (the node
 * must have passed attention_infer). Attention's _emit passes &sp->ge. */
void attn_read(const Graph *g, const Node *n, AttnSpec *sp, AttnGeom *ge);

/* Is the constant mask (type mt, broadcast to scores [..., S, T]) causal:
 * -inf (bool: true, with fill -inf) exactly where key j > query i + off,
 * 0 (false) elsewhere, the same for every head? Sets *off. */
bool attn_mask_is_causal(const Type *mt, const void *data, double fill, int64_t s, int64_t t, int64_t *off);

#endif
