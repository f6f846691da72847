/* onnx_decoder_match.h — what onnx_decoder_match.c finds in an ONNX
 * decoder with a past (its inputs, each layer's attention over its past,
 * what the logits need) and onnx_decoder.c copies into the decoder graph.
 * Private to the two. */
#ifndef KILN_ONNX_DECODER_MATCH_H
#define KILN_ONNX_DECODER_MATCH_H

#include "../ir/ir.h"

/* One layer's attention over its past. */
typedef struct PastAttn {
  int kpast, vpast;          /* the past inputs (source value ids) */
  int knew, vnew;            /* the rows Concat appends: [B, H, S, D] */
  int vall;                  /* the values with their past (the value Concat's output) */
  int q;                     /* the queries [B, H, S, D] */
  bool seq_first[3];         /* q, knew, vnew are [B, S, H, D] (torch's transpose to heads-first peeled off) */
  int out_node;              /* the MatMul(probs, V) it ends in */
  int out_t;                 /* the Transpose(0,2,1,3) back to [B, S, H, Dv] that alone reads it, or -1 */
  double scale;              /* product of the constant factors on the scores */
  int scale_vid, scale_op;   /* a factor that is not a constant (OP_DIV/OP_MUL), or -1 */
  int kstate, vstate;        /* the caches (values of the new graph) */
} PastAttn;

typedef struct Src {
  Graph *g;
  int64_t ctx;               /* the caches' capacity (--kv-cache) */
  int ids, mask, pos;        /* inputs, -1 when absent */
  int logits;                /* the output kept */
  PastAttn *at;
  int nat;
  int *attn_at;              /* node -> its PastAttn (the node is its out_node), or -1 */
  bool *skip;                /* node: an out_t, whose output its attention gives */
  const char **poison;       /* value -> why no node the logits need may read it, or NULL */
  bool *live;                /* node: the logits need it */
  bool *shared;              /* value: the same in both entries (constants) */
  bool *shared_node;         /* node: reads only shared values */
  int *cat_of;               /* value -> 1 + 2·attention + (0 keys, 1 values) for a past Concat's output, or 0 */
  signed char *shape_kind;   /* node: Shape of a past Concat's output: 1 the seq dim is read (computed), 2 not (constant) */
  bool *tail;                /* node: between the cut and the logits, row by row */
  int cut;                   /* the value the last token's row is taken of (the logits when no tail) */
} Src;

/* Fill s (s->g set) from the imported graph: inputs and outputs, the
 * attentions, what the logits need and what is shared, the row-wise
 * tail; false + d (one line naming the node or input) when the model
 * does not have the pattern. */
bool past_match(Src *s, Diag *d);

#endif
