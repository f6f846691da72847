/* lower_rotary.c — RotaryEmbedding back into standard ONNX ops, for `kiln
 * export` (ops.def's lower column; the op: compiler/ops/rotary.h).
 *
 * RotaryEmbedding is an opset-23 op and kiln's graphs are of opset 17 or
 * older (the importer reads no newer), so export always writes it as the
 * chain it stands for, with every shape static:
 *
 *   X [-> Reshape [B, S, H, D]]                      (rank 3)
 *   c, s = Gather(cos_cache, position_ids), Gather(sin_cache, ...)
 *          (a start offset: Gather by Add(position_ids, [0 .. S-1]);
 *           no position_ids: the caches themselves), reshaped to
 *          broadcast over the heads
 *   [Slice the first R dims]
 *   x1, x2 = Slice halves (interleaved: Reshape [..., R/2, 2], Slice 0 and 1)
 *   Concat(x1·c - x2·s, x1·s + x2·c) [-> Reshape [..., R]] [Concat the dims past R]
 *   [-> Reshape X's shape]
 *
 * Valid from opset 10 (Slice with its bounds as inputs). Each step rounds
 * to X's type, where _eval rounds y1 and y2 once: the two agree to a few
 * ulps. A graph of opset 23 or later (none that kiln reads today) would
 * keep the op as it is: decompose lowers only ops newer than the graph. */
#include "../ir/build.h"
#include "../ir/ops.h"
#include "../ops/rotary.h"

/* Slice(x, [lo, hi) of axis ax). */
static int ch_slice(Lowering *c, int x, int ax, int64_t lo, int64_t hi) {
  if (x < 0 || c->failed)
    return -1;
  int in[4] = {x, lw_i64(c, "start", lo), lw_i64(c, "end", hi), lw_i64(c, "axis", ax)};
  return lw_op(c, OP_SLICE, in, 4);
}

static int ch_concat(Lowering *c, int a, int b, int ax) {
  if (a < 0 || b < 0 || c->failed)
    return -1;
  int idx = lw_node(c, OP_CONCAT, (int[]){a, b}, 2, 1);
  ir_attr_int(c->g, idx, "axis", ax);
  return lw_finish(c, idx);
}

/* The rows of cache t for every token, shaped to broadcast over the
 * heads of X as [B, S, H, D] (bshd) or [B, H, S, D], with a last dim of 1
 * more when `pair` (the interleaved pairs' axis). */
static int ch_rows(Lowering *c, const RopeGeom *r, int t, int pos, bool bshd, bool pair) {
  if (r->pos == ROPE_POS_START) {
    int64_t *ar = arena_alloc(c->g->arena, sizeof(int64_t) * (size_t)r->s);
    for (int64_t i = 0; i < r->s; i++)
      ar[i] = i;
    pos = lw_binary(c, OP_ADD, pos, ir_const_i64(c->g, lw_name(c, "steps"), ar, (int)r->s));
  }
  int rows = r->pos == ROPE_POS_NONE ? t : lw_binary(c, OP_GATHER, t, pos);
  int64_t bp = r->pos == ROPE_POS_START || (r->bcast || r->b == 1) ? 1 : r->b;
  int64_t dims[5] = {bp, bshd ? r->s : 1, bshd ? 1 : r->s, r->half, 1};
  return lw_reshape(c, rows, dims, pair ? 5 : 4);
}

bool rotary_lower(Graph *g, int node, Diag *d) {
  const Node *n = &g->nodes[node];
  RopeGeom r;
  char err[256];
  const Value *pv = node_in(g, n, 3);
  KILN_ASSERT(rope_geom(n, &node_in(g, n, 0)->type, &node_in(g, n, 1)->type, &node_in(g, n, 2)->type,
                        pv ? &pv->type : NULL, &r, err, sizeof err));
  int x = n->in[0], cs = n->in[1], sn = n->in[2], pos = pv ? n->in[3] : -1;
  Type xt = gval(g, x)->type;
  Lowering c = lw_start(g, node, r.dt, d);
  if (!lw_need_opset(&c, 10, "Slice with its bounds as inputs"))
    return false;
  n = NULL; /* g->nodes moves as nodes are added */
  bool bshd = r.rank == 3;
  int64_t d4[4] = {r.b, bshd ? r.s : r.h, bshd ? r.h : r.s, r.d};
  int x4 = lw_reshape(&c, x, d4, 4);
  int xr = r.rot < r.d ? ch_slice(&c, x4, 3, 0, r.rot) : x4;
  int x1, x2, ax = r.interleaved ? 4 : 3;
  if (r.interleaved) {
    int64_t d5[5] = {d4[0], d4[1], d4[2], r.half, 2};
    int xp = lw_reshape(&c, xr, d5, 5);
    x1 = ch_slice(&c, xp, 4, 0, 1);
    x2 = ch_slice(&c, xp, 4, 1, 2);
  } else {
    x1 = ch_slice(&c, xr, 3, 0, r.half);
    x2 = ch_slice(&c, xr, 3, r.half, r.rot);
  }
  int co = ch_rows(&c, &r, cs, pos, bshd, r.interleaved), si = ch_rows(&c, &r, sn, pos, bshd, r.interleaved);
  int y1 = lw_binary(&c, OP_SUB, lw_binary(&c, OP_MUL, x1, co), lw_binary(&c, OP_MUL, x2, si));
  int y2 = lw_binary(&c, OP_ADD, lw_binary(&c, OP_MUL, x1, si), lw_binary(&c, OP_MUL, x2, co));
  int64_t dr[4] = {d4[0], d4[1], d4[2], r.rot};
  int y = lw_reshape(&c, ch_concat(&c, y1, y2, ax), dr, 4);
  if (r.rot < r.d)
    y = ch_concat(&c, y, ch_slice(&c, x4, 3, r.rot, r.d), 3);
  return lw_result(&c, lw_reshape(&c, y, xt.dims, xt.rank), 0);
}
