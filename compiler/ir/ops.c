/* ops.c — the op table, expanded from ops.def, and the facts every family
 * shares: the default FLOP counts and the f16/bf16 check. */
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
