/* decompose.c — lower kiln's own ops to standard ONNX ops, for `kiln export`.
 *
 * Fusion (and the Lua frontend) make ops ONNX does not have (Linear, Gelu,
 * ...) and ops newer than the graph's opset (LayerNormalization, opset 17,
 * fused out of an opset-14 export). An ONNX file may hold neither, so before
 * export each such node is replaced by a chain of standard ops valid at
 * g->opset that computes the same thing, in the order the unfused export
 * computed it (Linear: MatMul, then the bias Add, then the activation), so
 * the rounding matches kiln's _eval and the fusion passes recognise the chain
 * again when the file is read back.
 *
 * The replacement keeps the node's output value ids (its last new node
 * writes them), takes the node's place in the node array (so the array
 * stays topologically sorted and reads like the source), names its nodes
 * "NAME/Op" and keeps the node's origin. Lowered chains may themselves hold
 * ops that need lowering (an Attention row may emit LayerNormalization); the
 * sweep repeats until none is left. */
#include <string.h>

#include "../build.h"
#include "../ops.h"
#include "../passes.h"

/* Replace node `node` (still live; the caller marks it dead) by standard
 * ops: append them with build.h's lw_* and end with lw_result for each
 * output.
 *
 * To make another kiln op exportable, write a DecomposeFn here (or in the
 * op's own file, declared in passes.h) and add one row {OP_X, fn} to
 * `decompositions` below. A node of an op without a row fails export with
 * "export: op X has no ONNX form". */
typedef bool (*DecomposeFn)(Graph *g, int node, Diag *d);

/* x reshaped to dims[0..rank) (a no-op when it has them already). */
static int reshape_to(Lowering *l, int x, const int64_t *dims, int rank) {
  if (x < 0 || l->failed)
    return -1;
  const Type *t = &gval(l->g, x)->type;
  if (t->rank == rank && !memcmp(t->dims, dims, sizeof(int64_t) * (size_t)rank))
    return x;
  int shape = ir_const_i64(l->g, lw_name(l, "shape"), dims, rank);
  return lw_binary(l, OP_RESHAPE, x, shape);
}

/* ---- GELU ---------------------------------------------------------------------- */

static const double SQRT_2 = 1.41421356237309504880;
static const double SQRT_2_OVER_PI = 0.79788456080286535588; /* √(2/π) */
static const double GELU_KAPPA = 0.044715;

/* 0.5·x·(1 + erf(x/√2)) as PyTorch exports it: Div, Erf, Add, Mul, Mul. */
static int gelu_erf(Lowering *l, int x) {
  if (!lw_need_opset(l, 9, "Erf"))
    return -1;
  int e = lw_unary(l, OP_ERF, lw_binary(l, OP_DIV, x, lw_scalar(l, "sqrt2", SQRT_2)));
  int p = lw_binary(l, OP_ADD, e, lw_scalar(l, "one", 1));
  return lw_binary(l, OP_MUL, lw_binary(l, OP_MUL, x, p), lw_scalar(l, "half", 0.5));
}

/* 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), x³ as x·(x·x). */
static int gelu_tanh(Lowering *l, int x) {
  if (!lw_need_opset(l, 7, "broadcasting Mul"))
    return -1;
  int x3 = lw_binary(l, OP_MUL, x, lw_binary(l, OP_MUL, x, x));
  int s = lw_binary(l, OP_ADD, x, lw_binary(l, OP_MUL, lw_scalar(l, "kappa", GELU_KAPPA), x3));
  int t = lw_unary(l, OP_TANH, lw_binary(l, OP_MUL, lw_scalar(l, "sqrt_2_over_pi", SQRT_2_OVER_PI), s));
  int p = lw_binary(l, OP_ADD, lw_scalar(l, "one", 1), t);
  return lw_binary(l, OP_MUL, lw_scalar(l, "half", 0.5), lw_binary(l, OP_MUL, x, p));
}

/* Gelu {approximate="none"|"tanh"} */
static bool decompose_gelu(Graph *g, int node, Diag *d) {
  int x = g->nodes[node].in[0];
  Lowering l = lw_start(g, node, gval(g, x)->type.dt, d);
  bool tanh_form = !strcmp(attr_str(&g->nodes[node], "approximate", "none"), "tanh");
  return lw_result(&l, tanh_form ? gelu_tanh(&l, x) : gelu_erf(&l, x), 0);
}

/* ---- DequantizeGather ------------------------------------------------------------ */

/* DequantizeGather(Tq[V,D], idx, scale[V]): Cast(Gather(Tq, idx)) times
 * Gather(scale as [V,1], idx), which broadcasts along the row. */
static bool decompose_dequantize_gather(Graph *g, int node, Diag *d) {
  const Node *n = &g->nodes[node];
  int q = n->in[0], idx = n->in[1];
  Value *sv = gval(g, n->in[2]);
  if (!sv->data)
    return diag_node(d, g, n, "export: the scale is not a constant; expected a constant scale[V]");
  int64_t dims[2] = {sv->type.dims[0], 1};
  int s2 = ir_const(g, arena_printf(g->arena, "%s_col", sv->name), DT_F32, 2, dims, gval(g, n->in[2])->data);
  Lowering l = lw_start(g, node, DT_F32, d);
  if (!lw_need_opset(&l, 7, "broadcasting Mul"))
    return false;
  int rows = lw_cast(&l, lw_binary(&l, OP_GATHER, q, idx), DT_F32);
  int scale = lw_binary(&l, OP_GATHER, s2, idx);
  return lw_result(&l, lw_binary(&l, OP_MUL, rows, scale), 0);
}

/* ---- Linear -------------------------------------------------------------------- */

/* Linear {act} (X[...,K], W[K,N], bias[N]?, R?): MatMul, Add bias,
 * activation, Add the residual R (the product reshaped to R's shape first)
 * — the order in which kiln's _eval rounds. */
static bool decompose_linear(Graph *g, int node, Diag *d) {
  const Node *n = &g->nodes[node];
  int x = n->in[0], w = n->in[1], bias = node_has_in(n, 2) ? n->in[2] : -1;
  int res = node_has_in(n, 3) ? n->in[3] : -1;
  const char *act = attr_str(n, "act", "none");
  Lowering l = lw_start(g, node, gval(g, x)->type.dt, d);
  if ((bias >= 0 || res >= 0 || strcmp(act, "none")) && !lw_need_opset(&l, 7, "broadcasting Add and Mul"))
    return false;
  if (node_has_in(n, 4)) /* int8 W: Cast(W) · W_scale, the f32 weight it stands for */
    w = lw_binary(&l, OP_MUL, lw_cast(&l, w, DT_F32), n->in[4]);
  int y = lw_binary(&l, OP_MATMUL, x, w);
  if (bias >= 0)
    y = lw_binary(&l, OP_ADD, y, bias);
  if (!strcmp(act, "relu"))
    y = lw_unary(&l, OP_RELU, y);
  else if (!strcmp(act, "gelu"))
    y = gelu_erf(&l, y);
  else if (!strcmp(act, "gelu_tanh"))
    y = gelu_tanh(&l, y);
  if (res >= 0) {
    Type rt = gval(g, res)->type;
    y = lw_binary(&l, OP_ADD, reshape_to(&l, y, rt.dims, rt.rank), res);
  }
  return lw_result(&l, y, 0);
}

/* ---- LayerNormalization below opset 17, AddLayerNorm --------------------------- */

/* Mean over axes [a, rank) keeping dims: ReduceMean with the axes attribute
 * (an input only from opset 18, which kiln does not read). */
static int reduce_mean_tail(Lowering *l, int x, int a, int rank) {
  if (x < 0 || l->failed)
    return -1;
  int64_t axes[MAX_RANK];
  for (int i = a; i < rank; i++)
    axes[i - a] = i;
  int idx = lw_node(l, OP_REDUCEMEAN, &x, 1, 1);
  ir_attr_ints(l->g, idx, "axes", axes, rank - a);
  ir_attr_int(l->g, idx, "keepdims", 1);
  return lw_finish(l, idx);
}

/* The statistics of x over axes [a, rank), as PyTorch's opset-14 export
 * computes them: the mean, then the mean of the squared deviations. */
typedef struct Moments {
  int dev;  /* x - mean */
  int mean; /* mean, dims from a kept as 1 */
  int sd;   /* sqrt(var + epsilon) */
} Moments;

static Moments moments(Lowering *l, int x, int a, double epsilon) {
  int rank = gval(l->g, x)->type.rank;
  Moments m = {.mean = reduce_mean_tail(l, x, a, rank)};
  m.dev = lw_binary(l, OP_SUB, x, m.mean);
  int var = reduce_mean_tail(l, lw_binary(l, OP_MUL, m.dev, m.dev), a, rank);
  m.sd = lw_unary(l, OP_SQRT, lw_binary(l, OP_ADD, var, lw_scalar(l, "epsilon", epsilon)));
  return m;
}

/* y · scale (+ bias). A scale or bias with one element per normalised
 * element but another shape (kiln reads them flat) is reshaped to x's dims
 * from axis a, so broadcasting lines it up. */
static int scale_and_shift(Lowering *l, int y, int scale, int bias, int a) {
  if (y < 0)
    return -1;
  const Type *t = &gval(l->g, y)->type;
  int64_t dims[MAX_RANK], len = 1;
  for (int i = a; i < t->rank; i++)
    len *= dims[i - a] = t->dims[i];
  int rank = t->rank - a;
  int params[2] = {scale, bias};
  for (int i = 0; i < 2; i++)
    if (params[i] >= 0 && type_numel(&gval(l->g, params[i])->type) == len)
      params[i] = reshape_to(l, params[i], dims, rank);
  y = lw_binary(l, OP_MUL, y, params[0]);
  return bias >= 0 ? lw_binary(l, OP_ADD, y, params[1]) : y;
}

/* LayerNormalization {axis, epsilon, stash_type} (X, Scale, B?) -> Y,
 * Mean?, InvStdDev?, the statistics in the stash type (Cast in and out). */
static bool decompose_layernorm(Graph *g, int node, Diag *d) {
  const Node *n = &g->nodes[node];
  int x = n->in[0], scale = n->in[1], bias = node_has_in(n, 2) ? n->in[2] : -1, nout = n->nout, a;
  KILN_ASSERT(axis_norm(attr_int(n, "axis", -1), gval(g, x)->type.rank, &a));
  DType dt = gval(g, x)->type.dt, stash = attr_int(n, "stash_type", 1) == DT_F64 ? DT_F64 : DT_F32;
  Lowering l = lw_start(g, node, stash, d);
  if (!lw_need_opset(&l, 7, "broadcasting Sub and Div"))
    return false;
  Moments m = moments(&l, lw_cast(&l, x, stash), a, attr_float(n, "epsilon", 1e-5));
  int y = lw_cast(&l, lw_binary(&l, OP_DIV, m.dev, m.sd), dt);
  bool ok = lw_result(&l, scale_and_shift(&l, y, scale, bias, a), 0);
  if (ok && nout > 1)
    ok = lw_result(&l, m.mean, 1);
  if (ok && nout > 2)
    ok = lw_result(&l, lw_unary(&l, OP_RECIPROCAL, m.sd), 2);
  return ok;
}

/* AddLayerNorm {axis, epsilon} (A, B, Scale, Bias?) -> Y, S?: S = A + B,
 * then LayerNorm of S with statistics in its own type. */
static bool decompose_add_layernorm(Graph *g, int node, Diag *d) {
  const Node *n = &g->nodes[node];
  int scale = n->in[2], bias = node_has_in(n, 3) ? n->in[3] : -1, nout = n->nout, a;
  const Type *t = &gval(g, n->in[0])->type;
  KILN_ASSERT(axis_norm(attr_int(n, "axis", -1), t->rank, &a));
  Lowering l = lw_start(g, node, t->dt, d);
  if (!lw_need_opset(&l, 7, "broadcasting Sub and Div"))
    return false;
  double epsilon = attr_float(n, "epsilon", 1e-5);
  int s = lw_binary(&l, OP_ADD, n->in[0], n->in[1]);
  Moments m = moments(&l, s, a, epsilon);
  int y = scale_and_shift(&l, lw_binary(&l, OP_DIV, m.dev, m.sd), scale, bias, a);
  bool ok = lw_result(&l, y, 0);
  return ok && nout > 1 ? lw_result(&l, s, 1) : ok;
}

/* ---- the table and the sweep ----------------------------------------------------- */

/* One row per op that export must lower: kiln ops (since = 0 in ops.def)
 * always, standard ops when the graph's opset predates them. */
static const struct {
  int op;
  DecomposeFn fn;
} decompositions[] = {
    {OP_LINEAR, decompose_linear},
    {OP_DEQUANTIZEGATHER, decompose_dequantize_gather},
    {OP_GELU, decompose_gelu},
    {OP_LAYERNORM, decompose_layernorm},
    {OP_RMSNORM, rmsnorm_decompose},
    {OP_ADDLAYERNORM, decompose_add_layernorm},
    {OP_SPARSEMAX, sparsemax_decompose},
    {OP_ENTMAX15, entmax15_decompose},
    {OP_ATTENTION, attention_decompose},
    {OP_ELEMENTWISECHAIN, elementwise_chain_decompose},
    {OP_PERMUTEDMATMUL, permuted_matmul_decompose},
};

static bool needs_lowering(const Graph *g, const Node *n) {
  int since = op_table[n->op].since;
  return since == 0 || since > g->opset;
}

static DecomposeFn find_decomposition(int op) {
  for (int i = 0; i < KILN_COUNT(decompositions); i++)
    if (decompositions[i].op == op)
      return decompositions[i].fn;
  return NULL;
}

static bool no_onnx_form(Graph *g, const Node *n, Diag *d) {
  int since = op_table[n->op].since;
  if (since == 0)
    return diag_node(d, g, n, "export: op %s has no ONNX form; expected a kiln op with a "
                     "decomposition (compiler/passes/decompose.c)", node_op_name(n));
  return diag_node(d, g, n, "export: op %s exists from opset %d and the graph imports opset %d; "
                   "expected ops of opset %d", node_op_name(n), since, g->opset, g->opset);
}

/* Put each lowered node's replacement [first[i], end[i]) in its place;
 * nodes appended past n0 are the replacements themselves. */
static void splice_replacements(Graph *g, int n0, const int *first, const int *end) {
  Node *order = arena_alloc(g->arena, sizeof(Node) * (size_t)g->nnodes);
  int k = 0;
  for (int i = 0; i < n0; i++) {
    if (first[i] < 0) {
      order[k++] = g->nodes[i];
      continue;
    }
    for (int j = first[i]; j < end[i]; j++)
      order[k++] = g->nodes[j];
  }
  memcpy(g->nodes, order, sizeof(Node) * (size_t)k);
  g->nnodes = k;
  graph_compact(g); /* recomputes every producer */
}

/* One pass over the nodes; *lowered counts the nodes replaced. */
static bool lower_sweep(Graph *g, int *lowered, Diag *d) {
  int n0 = g->nnodes;
  int *first = arena_alloc(g->arena, sizeof(int) * (size_t)(n0 + 1));
  int *end = arena_alloc(g->arena, sizeof(int) * (size_t)(n0 + 1));
  *lowered = 0;
  for (int i = 0; i < n0; i++) {
    first[i] = end[i] = -1;
    if (!needs_lowering(g, &g->nodes[i]))
      continue;
    DecomposeFn fn = find_decomposition(g->nodes[i].op);
    if (!fn)
      return no_onnx_form(g, &g->nodes[i], d);
    first[i] = g->nnodes;
    if (!fn(g, i, d))
      return false;
    end[i] = g->nnodes;
    g->nodes[i].dead = true;
    ++*lowered;
  }
  if (*lowered)
    splice_replacements(g, n0, first, end);
  return true;
}

bool decompose_kiln_ops(Graph *g, Diag *d) {
  int total = 0;
  for (int round = 0; round < 8; round++) {
    int lowered;
    if (!lower_sweep(g, &lowered, d))
      return false;
    total += lowered;
    if (!lowered)
      return total == 0 || graph_verify(g, true, d);
  }
  for (int i = 0; i < g->nnodes; i++) /* a decomposition that keeps making its own op */
    KILN_ASSERT(!needs_lowering(g, &g->nodes[i]));
  return true;
}
