/* fuse_residual.c — the fuse_residual pass: the residual add after a
 * Linear, into the Linear's GEMM epilogue (in registers), and after
 * conv_gemm's WinogradOut (compiler/ops/winograd.c) or ConvBlocks
 * (im2row.c), into its output transform's or GEMM's epilogue:
 *
 *   Linear(x, W, b) [-> Reshape ...] + r  -> Linear(x, W, b, r)
 *   WinogradOut(p, b) [-> Reshape ...] + r  -> WinogradOut(p, b, r)
 *   ConvBlocks(x, W, b) [-> Reshape ...] + r -> ConvBlocks(x, W, b, r)
 *
 * It runs after fuse_addnorm, which takes the adds a LayerNorm reads (see
 * there why), and after fuse_linear, which made the Linears. */
#include <string.h>

#include "../ir/ops.h"
#include "passes.h"
#include "fuse_match.h"

static bool is_view(int op) {
  return op == OP_RESHAPE || op == OP_SQUEEZE || op == OP_UNSQUEEZE || op == OP_FLATTEN;
}

/* The Linear (or WinogradOut, ConvBlocks) whose output reaches v through views alone
 * (Reshape and friends, each read once), taken into m with the views;
 * NULL if none. */
static Node *linear_through_views(Fuser *f, Match *m, int v) {
  Graph *g = f->g;
  for (int depth = 0; depth < 4 && fm_sole(f, v); depth++) {
    Node *p = fm_def(f, v, -1);
    if (p->nout != 1)
      return NULL;
    fm_take(m, g, p);
    if (p->op == OP_LINEAR)
      return node_has_in(p, 3) ? NULL : p;
    if (p->op == OP_WINOGRADOUT)
      return node_has_in(p, 2) ? NULL : p;
    if (p->op == OP_CONVBLOCKS)
      return node_has_in(p, 3) ? NULL : p;
    if (!is_view(p->op))
      return NULL;
    v = p->in[0];
  }
  return NULL;
}

static bool fuse_linear_residual(Fuser *f, Node *add) {
  Graph *g = f->g;
  const Type *yt = &g->vals[add->out[0]].type;
  for (int side = 0; side < 2; side++) {
    int v = add->in[side], r = add->in[1 - side];
    Match m = {0};
    Node *lin = linear_through_views(f, &m, v);
    if (!lin || !fm_float_value(g, r) || !type_equal(&g->vals[v].type, yt) ||
        !type_equal(&g->vals[r].type, yt))
      continue;
    fm_take(&m, g, add);
    const char *act = attr_str(lin, "act", "none");
    if (lin->op == OP_WINOGRADOUT || lin->op == OP_CONVBLOCKS) { /* the same epilogue: act(y + b) + r */
      bool wino = lin->op == OP_WINOGRADOUT;
      int win[4] = {lin->in[0], wino ? (node_has_in(lin, 1) ? lin->in[1] : -1) : lin->in[1],
                    wino ? r : (node_has_in(lin, 2) ? lin->in[2] : -1), r};
      Node *n = fm_fuse_into(f, &m, add, lin->op, win, wino ? 3 : 4);
      for (int i = 0; i < lin->nattr; i++)
        *node_add_attr(g, n, lin->attrs[i].name, lin->attrs[i].kind) = lin->attrs[i];
      fm_fuse_done(f, n, wino ? "winograd+residual" : "convblocks+residual");
      return true;
    }
    bool aq = node_has_in(lin, 5);
    /* an int8 W keeps its W_scale (slot 4), a w8a8 one (fuse_dynquant's) its W_colsum (5) */
    int in[6] = {lin->in[0], lin->in[1], node_has_in(lin, 2) ? lin->in[2] : -1, r,
                 node_has_in(lin, 4) ? lin->in[4] : -1, aq ? lin->in[5] : -1};
    Node *n = fm_fuse_into(f, &m, add, OP_LINEAR, in, aq ? 6 : node_has_in(lin, 4) ? 5 : 4);
    fm_set_str(g, n, "act", act);
    for (int i = 0; aq && i < lin->nattr; i++) /* act_quant and its act_scale, act_zp */
      if (strcmp(lin->attrs[i].name, "act"))
        *node_add_attr(g, n, lin->attrs[i].name, lin->attrs[i].kind) = lin->attrs[i];
    fm_fuse_done(f, n, "linear+residual");
    return true;
  }
  return false;
}

bool pass_fuse_residual(Graph *g, const PassOptions *o, Diag *d) {
  (void)d;
  return fm_sweep(g, o, OP_ADD, fuse_linear_residual);
}
