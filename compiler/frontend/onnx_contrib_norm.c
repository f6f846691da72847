/* onnx_contrib_norm.c — ONNX Runtime's com.microsoft normalisation and
 * activation ops, read as the kiln ops they stand for.
 *
 * ONNX Runtime's transformer optimizer (onnxruntime.transformers) rewrites
 * a BERT- or GPT-like export into its contrib ops. Each is a fusion of
 * standard ops, so the importer writes that chain back, in the form the
 * unoptimised export has, and kiln's own fusion passes then make of it
 * what they make of the export (AddLayerNorm, Linear with a GELU epilogue):
 *
 *   SkipLayerNormalization(input, skip, gamma, beta?, bias?)
 *       -> output, mean?, inv_std_var?, input_skip_bias_sum?
 *     s = input (+ bias) + skip; LayerNormalization(s, gamma, beta), axis -1
 *   SkipSimplifiedLayerNormalization(input, skip, gamma, bias?)
 *       -> output, -, inv_std_var?, input_skip_bias_sum?
 *     the same sum; RMSNormalization(s, gamma), axis -1
 *   EmbedLayerNormalization(input_ids, segment_ids?, word_embedding,
 *       position_embedding, segment_embedding?, gamma, beta, mask?,
 *       position_ids?) -> output, mask_index?, embedding_sum?
 *     word[ids] + position[position_ids or 0..S-1] (+ segment[segment_ids]),
 *     LayerNormalization; mask_index[b] = how many of mask[b, :] are 1
 *     (0s without a mask), as ONNX Runtime's CPU kernel counts
 *   LayerNormalization below opset 17 (default domain, ONNX Runtime's own
 *   from opset 1)                    LayerNormalization, as it is
 *   Gelu(X), BiasGelu(A, B)          Gelu(X), Gelu(A + B)   (erf)
 *   FastGelu(X, bias?)               Gelu(X (+ bias)), approximate tanh
 *   QuickGelu(X) {alpha=1.702}       Swish(X) {alpha}: x·sigmoid(alpha·x)
 *   BiasAdd(X, bias, skip)           X + bias + skip
 *   BiasSplitGelu(X, bias)           left · Gelu(right), the halves of
 *                                    X + bias along the last axis
 *
 * The bias is added before the skip (ONNX Runtime adds it after): the
 * export's order, which lets fuse_linear take the bias into the MatMul
 * before it and fuse_addnorm the skip into the norm; the sums differ by a
 * rounding. The values between the new nodes have no name while the graph
 * is read ("" cannot clash with any name the model uses later); the
 * importer names them after the node that makes them. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "onnx_contrib_norm.h"
#include "../ir/ops.h"

enum { MAX_IO = 9 };

typedef enum {
  C_LAYERNORM_V1, C_SKIP_LN, C_SKIP_SIMPLIFIED, C_EMBED_LN, C_GELU, C_BIAS_GELU, C_FAST_GELU, C_QUICK_GELU, C_BIAS_ADD,
  C_BIAS_SPLIT_GELU, C_COUNT
} ContribOp;

/* Each op's name and arity. */
static const struct {
  const char *name;
  int min_in, max_in, min_out, max_out;
} contrib_ops[C_COUNT] = {
    [C_LAYERNORM_V1] = {"LayerNormalization", 2, 3, 1, 3},
    [C_SKIP_LN] = {"SkipLayerNormalization", 3, 5, 1, 4},
    [C_SKIP_SIMPLIFIED] = {"SkipSimplifiedLayerNormalization", 3, 4, 1, 4},
    [C_EMBED_LN] = {"EmbedLayerNormalization", 7, 9, 1, 3},
    [C_GELU] = {"Gelu", 1, 1, 1, 1},
    [C_BIAS_GELU] = {"BiasGelu", 2, 2, 1, 1},
    [C_FAST_GELU] = {"FastGelu", 1, 2, 1, 1},
    [C_QUICK_GELU] = {"QuickGelu", 1, 1, 1, 1},
    [C_BIAS_ADD] = {"BiasAdd", 3, 3, 1, 1},
    [C_BIAS_SPLIT_GELU] = {"BiasSplitGelu", 2, 2, 1, 1},
};

/* Which inputs each op requires (bit i: input i). */
static const unsigned contrib_required[C_COUNT] = {
    [C_LAYERNORM_V1] = 0x3,
    [C_SKIP_LN] = 0x7, [C_SKIP_SIMPLIFIED] = 0x7, [C_EMBED_LN] = 0x6d, [C_GELU] = 0x1, [C_BIAS_GELU] = 0x3,
    [C_FAST_GELU] = 0x1, [C_QUICK_GELU] = 0x1, [C_BIAS_ADD] = 0x7, [C_BIAS_SPLIT_GELU] = 0x3,
};

/* The node being read: its value ids (-1 absent) and where errors go. */
typedef struct Contrib {
  Graph *g;
  Diag *d;
  const Onnx__NodeProto *np;
  const char *name, *op, *dom; /* dom: "com.microsoft " or "" */
  int nin, nout;
  int in[MAX_IO], out[MAX_IO];
} Contrib;

static int contrib_lookup(const char *dom, const char *op_type, int opset) {
  if ((!*dom || !strcmp(dom, "ai.onnx")) && opset < 17 && !strcmp(op_type, "LayerNormalization"))
    return C_LAYERNORM_V1;
  if (strcmp(dom, "com.microsoft") != 0)
    return -1;
  for (int i = C_LAYERNORM_V1 + 1; i < C_COUNT; i++)
    if (!strcmp(op_type, contrib_ops[i].name))
      return i;
  return -1;
}

bool contrib_norm_known(const char *dom, const char *op_type, int opset) {
  return contrib_lookup(dom, op_type, opset) >= 0;
}

/* "node 'NAME' (com.microsoft OP): what" into the diag; false. */
static bool cx_error(Contrib *c, const char *fmt, ...) KILN_PRINTF(2, 3);
static bool cx_error(Contrib *c, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return diag_error(c->d, "node '%s' (%s%s): %s", c->name, c->dom, c->op, msg);
}

/* ---- attributes, read from the node itself ------------------------------------ */

static const Onnx__AttributeProto *cx_attr(const Contrib *c, const char *name) {
  for (size_t i = 0; i < c->np->n_attribute; i++)
    if (c->np->attribute[i]->name && !strcmp(c->np->attribute[i]->name, name))
      return c->np->attribute[i];
  return NULL;
}

/* A float attribute (an int is taken too), or dflt; false on another type. */
static bool cx_float(Contrib *c, const char *name, double dflt, double *v) {
  const Onnx__AttributeProto *a = cx_attr(c, name);
  *v = dflt;
  if (!a)
    return true;
  if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)
    *v = a->f;
  else if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
    *v = (double)a->i;
  else
    return cx_error(c, "attribute '%s' is not a number; expected a float", name);
  return true;
}

/* An int attribute, or dflt; false on another type. */
static bool cx_int(Contrib *c, const char *name, int64_t dflt, int64_t *v) {
  const Onnx__AttributeProto *a = cx_attr(c, name);
  *v = dflt;
  if (a && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
    return cx_error(c, "attribute '%s' is not an int; expected an int", name);
  if (a)
    *v = a->i;
  return true;
}

/* ---- values and nodes ------------------------------------------------------------ */

static int cx_value_named(Graph *g, const char *name) {
  int v = graph_find_value(g, name);
  return v >= 0 ? v : graph_add_value(g, name);
}

/* The node's inputs and outputs as value ids; each output produced once. */
static bool cx_bind(Contrib *c) {
  Graph *g = c->g;
  for (int i = 0; i < c->nin; i++) {
    const char *nm = c->np->input[i];
    c->in[i] = nm && *nm ? cx_value_named(g, nm) : -1;
  }
  for (int i = 0; i < c->nout; i++) {
    const char *nm = c->np->output[i];
    if (!nm || !*nm) {
      c->out[i] = -1;
      continue;
    }
    int v = cx_value_named(g, nm);
    bool twice = false;
    for (int j = 0; j < i; j++)
      twice |= c->out[j] == v;
    if (twice || g->vals[v].producer >= 0 || g->vals[v].data || g->vals[v].is_input)
      return cx_error(c, "output '%s' is already defined; expected SSA form (each value produced once)", nm);
    c->out[i] = v;
  }
  return true;
}

static int cx_in(const Contrib *c, int i) { return i < c->nin ? c->in[i] : -1; }
static int cx_out(const Contrib *c, int i) { return i < c->nout ? c->out[i] : -1; }

/* Node NAME/part (NAME: part NULL) computing op(in[0..nin)) into out[0..nout), an out of -1
 * a new unnamed value; returns the node's index. */
static int cx_node(Contrib *c, int op, const char *part, const int *in, int nin, const int *out, int nout) {
  Graph *g = c->g;
  int outs[4];
  KILN_ASSERT(nout <= 4);
  for (int i = 0; i < nout; i++)
    outs[i] = out && out[i] >= 0 ? out[i] : graph_add_value(g, "");
  return graph_add_node(g, op, part ? arena_printf(g->arena, "%s/%s", c->name, part) : c->name, in, nin, outs, nout);
}

/* op(a, b) (b -1: op(a)) into value `out` (-1: a new one); its id. */
static int cx_op(Contrib *c, int op, const char *part, int a, int b, int out) {
  int in[2] = {a, b};
  int ni = cx_node(c, op, part, in, b >= 0 ? 2 : 1, &out, 1);
  return c->g->nodes[ni].out[0];
}

static void cx_attr_float(Contrib *c, int node, const char *name, double v) {
  node_add_attr(c->g, &c->g->nodes[node], name, ATTR_FLOAT)->f = v;
}

static void cx_attr_int(Contrib *c, int node, const char *name, int64_t v) {
  node_add_attr(c->g, &c->g->nodes[node], name, ATTR_INT)->i = v;
}

static void cx_attr_str(Contrib *c, int node, const char *name, const char *s) {
  node_add_attr(c->g, &c->g->nodes[node], name, ATTR_STRING)->s = s;
}

/* A constant named NAME/part. */
static int cx_const(Contrib *c, const char *part, DType dt, int rank, const int64_t *dims, const void *data) {
  Graph *g = c->g;
  const char *nm = arena_printf(g->arena, "%s/%s", c->name, part);
  for (int k = 2; graph_find_value(g, nm) >= 0; k++)
    nm = arena_printf(g->arena, "%s/%s_%d", c->name, part, k);
  int v = graph_add_value(g, nm);
  Value *val = &g->vals[v];
  val->type.dt = dt;
  val->type.rank = rank;
  for (int i = 0; i < rank; i++)
    val->type.dims[i] = dims[i];
  size_t bytes = type_bytes(&val->type);
  val->data = arena_alloc(g->arena, bytes ? bytes : 1);
  memcpy(val->data, data, bytes);
  return v;
}

static int cx_i64(Contrib *c, const char *part, int64_t x) {
  int64_t one = 1;
  return cx_const(c, part, DT_I64, 1, &one, &x);
}

/* The dtype of value v when it is a constant (an initializer), else f32:
 * for the scalars a chain adds to it. */
static DType cx_dtype(const Contrib *c, int v) {
  const Value *val = &c->g->vals[v];
  return val->data && dt_is_float(val->type.dt) ? val->type.dt : DT_F32;
}

static int cx_scalar(Contrib *c, const char *part, DType dt, double x) {
  double d = x;
  float f = (float)x;
  return cx_const(c, part, dt, 0, NULL, dt == DT_F64 ? (const void *)&d : (const void *)&f);
}

/* ReduceOP(x) over the last axis, kept as 1, in the form of the model's
 * opset (axes an attribute before opset 18, ReduceSum's before 13). */
static int cx_reduce_last(Contrib *c, int op, const char *part, int x, int out) {
  int since = op == OP_REDUCESUM ? 13 : 18;
  int axes = c->g->opset >= since ? cx_i64(c, "axes", -1) : -1;
  int in[2] = {x, axes};
  int ni = cx_node(c, op, part, in, axes >= 0 ? 2 : 1, &out, 1);
  if (axes < 0) {
    int64_t last = -1;
    Attr *a = node_add_attr(c->g, &c->g->nodes[ni], "axes", ATTR_INTS);
    a->n = 1;
    a->ints = arena_dup(c->g->arena, &last, sizeof last);
  }
  return c->g->nodes[ni].out[0];
}

/* ---- the ops --------------------------------------------------------------------- */

/* ONNX Runtime's LayerNormalization of the default domain, which it
 * registers from opset 1 (and its optimizer writes below opset 17): ONNX's
 * opset-17 op, the same inputs, outputs and attributes. */
static bool layernorm_v1(Contrib *c) {
  double eps;
  int64_t axis, stash;
  if (!cx_float(c, "epsilon", 1e-5, &eps) || !cx_int(c, "axis", -1, &axis) || !cx_int(c, "stash_type", 1, &stash))
    return false;
  int ln = cx_node(c, OP_LAYERNORM, NULL, c->in, c->nin, c->out, c->nout);
  cx_attr_int(c, ln, "axis", axis);
  cx_attr_float(c, ln, "epsilon", eps);
  cx_attr_int(c, ln, "stash_type", stash);
  return true;
}

/* input (+ bias) + skip, into `sum` (-1: a new value). */
static int residual_sum(Contrib *c, int input, int bias, int skip, int sum) {
  int h = bias >= 0 ? cx_op(c, OP_ADD, "bias", input, bias, -1) : input;
  return cx_op(c, OP_ADD, "skip", h, skip, sum);
}

static bool skip_layernorm(Contrib *c) {
  double eps;
  if (!cx_float(c, "epsilon", 1e-12, &eps))
    return false;
  int s = residual_sum(c, c->in[0], cx_in(c, 4), c->in[1], cx_out(c, 3));
  int in[3] = {s, c->in[2], cx_in(c, 3)}, out[3] = {c->out[0], cx_out(c, 1), cx_out(c, 2)};
  int nout = out[2] >= 0 ? 3 : out[1] >= 0 ? 2 : 1;
  int ln = cx_node(c, OP_LAYERNORM, "LayerNorm", in, in[2] >= 0 ? 3 : 2, out, nout);
  cx_attr_int(c, ln, "axis", -1);
  cx_attr_float(c, ln, "epsilon", eps);
  return true;
}

static bool skip_simplified(Contrib *c) {
  double eps;
  if (!cx_float(c, "epsilon", 1e-12, &eps))
    return false;
  if (cx_out(c, 1) >= 0)
    return cx_error(c, "output 1 (mean) is requested; expected it omitted (an RMS norm takes no mean, and "
                    "ONNX Runtime writes none)");
  int s = residual_sum(c, c->in[0], cx_in(c, 3), c->in[1], cx_out(c, 3));
  int in[2] = {s, c->in[2]};
  int rms = cx_node(c, OP_RMSNORM, "RMSNorm", in, 2, &c->out[0], 1);
  cx_attr_int(c, rms, "axis", -1);
  cx_attr_float(c, rms, "epsilon", eps);
  if (cx_out(c, 2) >= 0) { /* 1 / sqrt(mean(s²) + eps), [..., 1] */
    int ms = cx_reduce_last(c, OP_REDUCEMEAN, "mean_square", cx_op(c, OP_MUL, "square", s, s, -1), -1);
    int v = cx_op(c, OP_ADD, "add_eps", ms, cx_scalar(c, "epsilon", cx_dtype(c, c->in[2]), eps), -1);
    cx_op(c, OP_RECIPROCAL, "inv_rms", cx_op(c, OP_SQRT, "rms", v, -1, -1), -1, c->out[2]);
  }
  return true;
}

/* Gelu {approximate} of x into out (-1: a new value); its id. */
static int gelu(Contrib *c, int x, bool tanh_form, int out) {
  int in[1] = {x};
  int ni = cx_node(c, OP_GELU, "Gelu", in, 1, &out, 1);
  cx_attr_str(c, ni, "approximate", tanh_form ? "tanh" : "none");
  return c->g->nodes[ni].out[0];
}

static bool gelus(Contrib *c, ContribOp op) {
  int x = c->in[0], bias = cx_in(c, 1);
  if (op == C_QUICK_GELU) {
    double alpha;
    if (!cx_float(c, "alpha", 1.702, &alpha))
      return false;
    int in[1] = {x};
    cx_attr_float(c, cx_node(c, OP_SWISH, "Swish", in, 1, &c->out[0], 1), "alpha", alpha);
    return true;
  }
  if (op != C_GELU && bias >= 0)
    x = cx_op(c, OP_ADD, "bias", x, bias, -1);
  gelu(c, x, op == C_FAST_GELU, c->out[0]);
  return true;
}

static bool bias_add(Contrib *c) {
  residual_sum(c, c->in[0], c->in[1], c->in[2], c->out[0]);
  return true;
}

/* Split's equal halves along the last axis: left · Gelu(right). */
static bool bias_split_gelu(Contrib *c) {
  int h = cx_op(c, OP_ADD, "bias", c->in[0], c->in[1], -1);
  int halves[2] = {-1, -1};
  int sp = cx_node(c, OP_SPLIT, "Split", &h, 1, halves, 2);
  cx_attr_int(c, sp, "axis", -1);
  int left = c->g->nodes[sp].out[0], right = c->g->nodes[sp].out[1];
  cx_op(c, OP_MUL, "gate", left, gelu(c, right, false, -1), c->out[0]);
  return true;
}

/* Rows of `table` for int32 ids: Gather(table, ids). */
static int gather_rows(Contrib *c, const char *part, int table, int ids) {
  return cx_op(c, OP_GATHER, part, table, ids, -1);
}

/* position_embedding rows 0..S-1, S = input_ids' second dim:
 * Gather(P, Range(0, S, 1)), [S, H]; constant once S is bound. */
static int default_positions(Contrib *c, int ids) {
  int shape = cx_op(c, OP_SHAPE, "shape", ids, -1, -1);
  int64_t zero = 0;
  int s = cx_op(c, OP_GATHER, "seq_len", shape, cx_const(c, "seq_axis", DT_I64, 0, NULL, &(int64_t){1}), -1);
  int in[3] = {cx_const(c, "start", DT_I64, 0, NULL, &zero), s, cx_const(c, "step", DT_I64, 0, NULL, &(int64_t){1})};
  int range = cx_node(c, OP_RANGE, "positions", in, 3, NULL, 1);
  return gather_rows(c, "position", c->in[3], c->g->nodes[range].out[0]);
}

/* mask_index: per batch row, how many mask entries are 1 (int32 [B]); 0s
 * without a mask. */
static void mask_index(Contrib *c, int ids, int mask, int out) {
  if (mask >= 0) {
    int32_t one = 1;
    int eq = cx_op(c, OP_EQUAL, "mask_is_1", mask, cx_const(c, "one", DT_I32, 0, NULL, &one), -1);
    int cast = cx_op(c, OP_CAST, "mask_count", eq, -1, -1);
    cx_attr_int(c, c->g->vals[cast].producer, "to", DT_I32);
    int red = cx_reduce_last(c, OP_REDUCESUM, "mask_index", cast, out);
    cx_attr_int(c, c->g->vals[red].producer, "keepdims", 0);
    return;
  }
  int shape = cx_op(c, OP_SHAPE, "shape_b", ids, -1, -1);
  int b = cx_op(c, OP_GATHER, "batch", shape, cx_i64(c, "batch_axis", 0), -1);
  int zeros = cx_op(c, OP_CONSTANTOFSHAPE, "mask_index", b, -1, out);
  Tensor *t = arena_alloc(c->g->arena, sizeof *t);
  t->type = (Type){.dt = DT_I32, .rank = 1, .dims = {1}};
  t->data = arena_alloc(c->g->arena, sizeof(int32_t));
  node_add_attr(c->g, &c->g->nodes[c->g->vals[zeros].producer], "value", ATTR_TENSOR)->t = t;
}

static bool embed_layernorm(Contrib *c) {
  double eps;
  if (!cx_float(c, "epsilon", 1e-12, &eps))
    return false;
  int ids = c->in[0], seg = cx_in(c, 1), seg_table = cx_in(c, 4), mask = cx_in(c, 7), pos = cx_in(c, 8);
  if ((seg >= 0) != (seg_table >= 0))
    return cx_error(c, "input %s is given without %s; expected both segment_ids and segment_embedding, or neither",
                    seg >= 0 ? "segment_ids" : "segment_embedding", seg >= 0 ? "segment_embedding" : "segment_ids");
  int word = gather_rows(c, "word", c->in[2], ids);
  int p = pos >= 0 ? gather_rows(c, "position", c->in[3], pos) : default_positions(c, ids);
  int sum = cx_op(c, OP_ADD, "add_position", word, p, seg >= 0 ? -1 : cx_out(c, 2));
  if (seg >= 0)
    sum = cx_op(c, OP_ADD, "add_segment", sum, gather_rows(c, "segment", seg_table, seg), cx_out(c, 2));
  int in[3] = {sum, c->in[5], c->in[6]};
  int ln = cx_node(c, OP_LAYERNORM, "LayerNorm", in, 3, &c->out[0], 1);
  cx_attr_int(c, ln, "axis", -1);
  cx_attr_float(c, ln, "epsilon", eps);
  if (cx_out(c, 1) >= 0)
    mask_index(c, ids, mask, c->out[1]);
  return true;
}

bool contrib_norm_import(Graph *g, const Onnx__NodeProto *np, const char *nname, Diag *d) {
  const char *dom = np->domain ? np->domain : "";
  ContribOp op = (ContribOp)contrib_lookup(dom, np->op_type ? np->op_type : "", g->opset);
  KILN_ASSERT((int)op >= 0);
  Contrib c = {.g = g, .d = d, .np = np, .name = nname, .op = contrib_ops[op].name,
               .dom = op == C_LAYERNORM_V1 ? "" : "com.microsoft "};
  c.nin = (int)np->n_input;
  c.nout = (int)np->n_output;
  while (c.nout > 0 && (!np->output[c.nout - 1] || !*np->output[c.nout - 1]))
    c.nout--;
  while (c.nin > 0 && (!np->input[c.nin - 1] || !*np->input[c.nin - 1]))
    c.nin--;
  if ((int)np->n_input < contrib_ops[op].min_in || c.nin > contrib_ops[op].max_in)
    return cx_error(&c, "%d inputs; expected %d to %d", (int)np->n_input, contrib_ops[op].min_in,
                    contrib_ops[op].max_in);
  if (c.nout < contrib_ops[op].min_out || c.nout > contrib_ops[op].max_out)
    return cx_error(&c, "%d outputs; expected %d to %d", c.nout, contrib_ops[op].min_out, contrib_ops[op].max_out);
  for (int i = 0; i < contrib_ops[op].max_in; i++)
    if ((contrib_required[op] >> i & 1) && (i >= c.nin || !np->input[i] || !*np->input[i]))
      return cx_error(&c, "input %d is empty; expected a value (only optional inputs may be omitted)", i);
  if (!cx_bind(&c))
    return false;
  switch (op) {
  case C_LAYERNORM_V1: return layernorm_v1(&c);
  case C_SKIP_LN: return skip_layernorm(&c);
  case C_SKIP_SIMPLIFIED: return skip_simplified(&c);
  case C_EMBED_LN: return embed_layernorm(&c);
  case C_BIAS_ADD: return bias_add(&c);
  case C_BIAS_SPLIT_GELU: return bias_split_gelu(&c);
  default: return gelus(&c, op);
  }
}
