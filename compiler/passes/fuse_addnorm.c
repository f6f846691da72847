/* fuse_addnorm.c — the fuse_addnorm pass: a residual sum and the
 * LayerNorm that reads it, into one AddLayerNorm (compiler/ops/add_layernorm.c):
 *
 *   LayerNormalization(a + b)         -> AddLayerNorm(a, b, ..) -> Y
 *   the same with a + b read later    -> AddLayerNorm(a, b, ..) -> Y, S
 *     (pre-norm: the residual stream is the second output).
 *
 * Which wins where this and fuse_residual both apply (post-norm:
 * LN(r + Linear(..))): this pass runs first. Both leave one write and one
 * read of the sum; AddLayerNorm's row pass computes the statistics with
 * lane-wise partial sums, and measured faster than the GEMM epilogue
 * feeding the separate LayerNormalization kernel (see the report in
 * bench/README.md). fuse_residual takes the adds no LayerNorm reads. */
#include "../ir/ops.h"
#include "passes.h"
#include "fuse_match.h"

/* v is ready before node index `at`: a constant, a graph input, or made
 * by an earlier node. */
static bool ready_before(const Graph *g, int v, int at) {
  return v < 0 || g->vals[v].producer < at;
}

/* The LayerNormalization's outputs past Y (Mean, InvStdDev) are unused. */
static bool only_y_used(const Fuser *f, const Node *ln) {
  for (int j = 1; j < ln->nout; j++)
    if (fm_nreaders(f, ln->out[j]) || f->g->vals[ln->out[j]].is_output)
      return false;
  return true;
}

/* Scale or bias: one element per normalised element, read flat. */
static bool flat_param(const Graph *g, int v, DType dt, int64_t len) {
  return v < 0 || (g->vals[v].type.dt == dt && type_numel(&g->vals[v].type) == len);
}

static bool fuse_add_layernorm(Fuser *f, Node *ln) {
  Graph *g = f->g;
  int s = ln->in[0];
  Node *add = fm_def(f, s, OP_ADD);
  if (!add || !only_y_used(f, ln))
    return false;
  const Type *t = &g->vals[s].type;
  int a, at = (int)(add - g->nodes), scale = ln->in[1], bias = node_has_in(ln, 2) ? ln->in[2] : -1;
  DType stash = attr_int(ln, "stash_type", 1) == DT_F64 ? DT_F64 : DT_F32;
  if (!fm_float_value(g, s) || stash != t->dt || !axis_norm(attr_int(ln, "axis", -1), t->rank, &a))
    return false;
  int64_t len = 1;
  for (int i = a; i < t->rank; i++)
    len *= t->dims[i];
  if (!type_equal(&g->vals[add->in[0]].type, t) || !type_equal(&g->vals[add->in[1]].type, t) ||
      !flat_param(g, scale, t->dt, len) || !flat_param(g, bias, t->dt, len) ||
      !ready_before(g, scale, at) || !ready_before(g, bias, at))
    return false;
  /* the fused node takes the Add's slot: the sum's other readers, if any,
   * come after it, and so does every reader of Y */
  bool keep_sum = !fm_sole(f, s);
  int y = ln->out[0], in[4] = {add->in[0], add->in[1], scale, bias}, out[2] = {y, s};
  double eps = attr_float(ln, "epsilon", 1e-5);
  int64_t axis = attr_int(ln, "axis", -1);
  add->origin = arena_printf(g->arena, "%s + %s", add->origin ? add->origin : add->name,
                             ln->origin ? ln->origin : ln->name);
  ln->dead = true;
  add->op = OP_ADDLAYERNORM;
  add->nin = bias >= 0 ? 4 : 3;
  add->in = arena_dup(g->arena, in, sizeof in);
  add->nout = keep_sum ? 2 : 1;
  add->out = arena_dup(g->arena, out, sizeof out);
  add->nattr = 0;
  add->attrs = NULL;
  node_add_attr(g, add, "axis", ATTR_INT)->i = axis;
  node_add_attr(g, add, "epsilon", ATTR_FLOAT)->f = eps;
  g->vals[y].producer = at;
  if (!keep_sum)
    g->vals[s].producer = -1;
  fm_fuse_done(f, add, keep_sum ? "add_layernorm (sum kept)" : "add_layernorm");
  return true;
}

bool pass_fuse_addnorm(Graph *g, const PassOptions *o, Diag *d) {
  (void)d;
  return fm_sweep(g, o, OP_LAYERNORM, fuse_add_layernorm);
}
