/* rotary.h — the geometry of RotaryEmbedding (compiler/ops/rotary.c), shared
 * by the op and its export lowering (compiler/export/lower_rotary.c).
 *
 *   RotaryEmbedding {interleaved=0, num_heads=0, rotary_embedding_dim=0}
 *       (X, cos_cache, sin_cache [, position_ids]) -> Y     (ONNX opset 23)
 *     X  [B, S, H*D] (num_heads = H) or [B, H, S, D]; Y like X
 *     with position_ids [B, S] (or [1, S]) i64: the caches are tables
 *       [max_pos, R/2], row position_ids[b, s] for token (b, s);
 *     without: the caches are [B, S, R/2] (or [1, S, R/2]), row (b, s).
 *   R = rotary_embedding_dim, or D when 0; dims R .. D-1 pass through.
 *   For i < R/2, with c = cos[row][i], s = sin[row][i] and x1, x2 the pair
 *   (i, i + R/2) of a head's row (interleaved = 0: HF's rotate_half) or
 *   (2i, 2i + 1) (interleaved = 1: GPT-J, llama.cpp):
 *     y1 = x1·c - x2·s     y2 = x1·s + x2·c
 *
 * Two extensions, both ONNX Runtime's com.microsoft RotaryEmbedding (which
 * the importer maps onto this op): position_ids of shape [1] is a start
 * offset, token (b, s) at position position_ids[0] + s; and X of rank 3
 * with num_heads 0 has heads of D = 2 · (the caches' last dim). A position
 * outside [-max_pos, max_pos) is an error in _eval; the generated C wraps
 * negative ones and clamps the rest into the table, never reading out of
 * it (as Gather). */
#ifndef KILN_OPS_ROTARY_H
#define KILN_OPS_ROTARY_H

#include "../ir/ir.h"

/* Where a token's row of the caches comes from. */
typedef enum RopePos {
  ROPE_POS_IDS,   /* position_ids [B or 1, S]: row = ids[b, s] */
  ROPE_POS_START, /* position_ids [1]: row = ids[0] + s */
  ROPE_POS_NONE   /* caches [B or 1, S, R/2]: row (b, s) */
} RopePos;

typedef struct RopeGeom {
  DType dt;
  int rank;               /* 3: X [B, S, H*D]; 4: X [B, H, S, D] */
  int64_t b, s, h, d;     /* batch, sequence, heads, head size */
  int64_t rot, half;      /* rotated dims R and R/2 */
  bool interleaved;
  RopePos pos;
  bool bcast;             /* the ids (or per-token caches) have batch 1 */
  int64_t max_pos;        /* rows of the tables (ROPE_POS_IDS, _START) */
} RopeGeom;

/* The geometry of node n on these input types (pos NULL: no
 * position_ids); false with the reason in err. */
bool rope_geom(const Node *n, const Type *x, const Type *cos, const Type *sin, const Type *pos, RopeGeom *r,
               char *err, size_t errn);

/* The tables x:rope builds from theta (and a GGUF Llama would): for
 * position p < max_pos and i < rot/2, angle = p · theta^(-2i/rot), computed
 * in double; cos[p][i] and sin[p][i] rounded once to dt (f32 or f64) into
 * cos_out and sin_out (max_pos · rot/2 elements each). */
void rope_tables(double theta, int64_t rot, int64_t max_pos, DType dt, void *cos_out, void *sin_out);

#endif
