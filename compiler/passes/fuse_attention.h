/* fuse_attention.h — the attention fusion (fuse_attention.c), one sweep of
 * the fuse pass (fuse.c), run before the other fusions so that none of
 * them takes the scale or mask apart first. */
#ifndef KILN_FUSE_ATTENTION_H
#define KILN_FUSE_ATTENTION_H

#include "fuse_match.h"

/* Fuse every Q·Kᵀ·scale (+ mask) (+ top-k) -> Softmax -> ·V of the graph
 * into one Attention node; with f->verbose, print each fusion and, for
 * every Softmax fed by a MatMul that stays unfused, the reason. */
void fuse_attention_sweep(Fuser *f);

#endif
