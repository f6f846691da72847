/* ops.c — the op table, expanded from ops.def, and the facts every family
 * shares: the default FLOP counts, the f16/bf16 check and fold_node (a
 * node evaluated at compile time through its _eval). */
#include "ops.h"

#include <string.h>

const OpInfo op_table[OP_COUNT_] = {
/* An op whose lower column says `none` has no lowering. */
#define none_lower NULL
#define OP(id, name, fn, a, b, c, d, k, since, upto, flags, fl, lo) \
  [OP_##id] = {name, fn##_infer, fn##_eval, fn##_emit, a, b, c, d, k, since, upto, flags, fl##_flops, lo##_lower},
#include "ops.def"
#undef OP
#undef none_lower
};

int op_lookup(const char *onnx_name) {
  for (int i = 0; i < OP_COUNT_; i++)
    if (strcmp(op_table[i].name, onnx_name) == 0)
      return i;
  return -1;
}

/* ---- ONNX op versions (compiler/ir/onnx_versions.def, which also defines
 * ONNX_OPSET_NEWEST) ---------------------------------------------------------- */

static const struct {
  const char *name;
  short v[16]; /* opsets at which the op changed, oldest first, 0-terminated */
} onnx_ops[] = {
#define ONNX_OP(name, ...) {name, {__VA_ARGS__, 0}},
#include "onnx_versions.def"
#undef ONNX_OP
};

int onnx_op_version(const char *onnx_name, int opset) {
  for (int i = 0; i < KILN_COUNT(onnx_ops); i++) {
    if (strcmp(onnx_ops[i].name, onnx_name) != 0)
      continue;
    int ver = 0;
    for (int k = 0; onnx_ops[i].v[k] && onnx_ops[i].v[k] <= opset; k++)
      ver = onnx_ops[i].v[k];
    return ver;
  }
  return -1;
}

int onnx_opset_newest(void) { return ONNX_OPSET_NEWEST; }

int op_version_beyond(int op, int opset) {
  if (op_table[op].since == 0)
    return 0;
  int ver = onnx_op_version(op_table[op].name, opset);
  return ver > op_table[op].upto ? ver : 0;
}

/* ---- default FLOP counts ------------------------------------------------------ */

static int64_t numel_at(const Graph *g, const Node *n, bool out, int slot) {
  int nv = out ? n->nout : n->nin, v = slot < nv ? (out ? n->out : n->in)[slot] : -1;
  return v >= 0 ? type_numel(&g->vals[v].type) : 0;
}

/* Elementwise: one op per output element. */
int64_t elem_flops(const Graph *g, const Node *n) { return numel_at(g, n, true, 0); }

/* Data movement, generators and conversions: no arithmetic. */
int64_t move_flops(const Graph *g, const Node *n) {
  (void)g, (void)n;
  return 0;
}

/* Reductions, scans and selections: one op per input element. */
int64_t scan_flops(const Graph *g, const Node *n) { return numel_at(g, n, false, 0); }

/* ---- f16 and bf16 ----------------------------------------------------------------- */

bool op_state_in_place(const Graph *g, int vid) {
  for (int i = 0; i < g->nnodes; i++)
    if (!g->nodes[i].dead && (op_table[g->nodes[i].op].flags & OPF_UPDATE) && g->nodes[i].nin > 0 &&
        g->nodes[i].in[0] == vid)
      return true;
  return false;
}

bool op_check_half(const Graph *g, const Node *n, Diag *d) {
  for (int k = 0; k < n->nin + n->nout; k++) {
    int v = k < n->nin ? n->in[k] : n->out[k - n->nin];
    if (v >= 0 && dt_is_narrow(g->vals[v].type.dt) && !(op_table[n->op].flags & OPF_NARROW))
      return diag_node(d, g, n, "'%s' is %s, which %s does not compute; expected a wider type (insert "
                       "a Cast or a DequantizeLinear: kiln computes the float8, float4 and 2- and 4-bit "
                       "types in Cast, the linear quantization ops and the ops that move them whole only)",
                       g->vals[v].name, dt_name(g->vals[v].type.dt), op_table[n->op].name);
    if (v < 0 || !dt_is_half(g->vals[v].type.dt) || (op_table[n->op].flags & OPF_HALF))
      continue;
    return diag_node(d, g, n, "'%s' is %s, which %s does not compute; expected f32 (insert a Cast: "
                     "kiln computes f16 and bf16 in the elementwise ops, Cast and the data-movement "
                     "ops only)", g->vals[v].name, dt_name(g->vals[v].type.dt), op_table[n->op].name);
  }
  return true;
}

/* ---- constant folding (fold_node: passes/fold.c, infer.c and build.c's nodes) ---- */

/* An int8 weight's DequantizeLinear (an i8 constant [K,N] of 4 KiB or
 * more, read by one MatMul as its B) stays a node: fuse turns
 * DequantizeLinear -> MatMul into the int8 Linear,
 * which reads the int8 weight itself (a quarter of the f32 copy folding
 * would make). When fuse does not run (--passes), it runs in the C. */
static bool int8_weight_kept(const Graph *g, const Node *n) {
  const Value *x = n->op == OP_DEQUANTIZELINEAR ? &g->vals[n->in[0]] : NULL;
  if (!x || !x->data || x->type.dt != DT_I8 || x->type.rank != 2 || type_bytes(&x->type) < 4096)
    return false;
  int readers = 0; /* only a MatMul's B: a table DequantizeLinear -> Gather folds */
  for (int i = 0; i < g->nnodes; i++)
    for (int j = 0; j < g->nodes[i].nin; j++)
      if (!g->nodes[i].dead && g->nodes[i].in[j] == n->out[0]) {
        if (g->nodes[i].op != OP_MATMUL || j != 1)
          return false;
        readers++;
      }
  for (int k = 0; k < g->noutputs; k++)
    if (g->outputs[k] == n->out[0])
      return false;
  return readers == 1;
}

bool fold_node(Graph *g, Node *n, size_t limit, bool *folded, Diag *d) {
  *folded = false;
  if (int8_weight_kept(g, n) || (op_table[n->op].flags & OPF_NOFOLD))
    return true; /* OPF_NOFOLD: the op says its result is no constant worth storing */
  size_t bytes = 0;
  bool all_const = true;
  for (int j = 0; j < n->nout; j++) {
    Value *v = node_out(g, n, j);
    if (v && !v->data)
      all_const = false;
    if (v)
      bytes += type_bytes(&v->type);
  }
  if (all_const)
    return *folded = true; /* _infer already produced them (Shape, Constant) */
  for (int i = 0; i < n->nin; i++) {
    Value *v = node_in(g, n, i);
    if (v && !v->data)
      return true;
  }
  if (bytes > limit)
    return true;
  Tensor in[n->nin > 0 ? n->nin : 1], out[n->nout];
  for (int i = 0; i < n->nin; i++) {
    Value *v = node_in(g, n, i);
    in[i] = v ? (Tensor){v->type, v->data} : (Tensor){{0}, NULL};
  }
  for (int j = 0; j < n->nout; j++) {
    Value *v = node_out(g, n, j);
    out[j].type = v->type;
    out[j].data = arena_alloc(g->arena, type_bytes(&v->type) + 1);
  }
  if (!op_table[n->op].eval(n, in, out, d))
    return false;
  for (int j = 0; j < n->nout; j++)
    node_out(g, n, j)->data = out[j].data;
  *folded = true;
  return true;
}
