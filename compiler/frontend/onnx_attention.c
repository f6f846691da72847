/* onnx_attention.c — the attention ops ONNX files carry, read as the
 * chains of standard ops their specifications define: ONNX's Attention
 * (opsets 23 and 24) and ONNX Runtime's com.microsoft Attention (packed
 * QKV weights), MultiHeadAttention and GroupQueryAttention, as its
 * transformer optimizer and onnxruntime-genai write them.
 *
 * Each node becomes: the head split (Reshape + Transpose), the past
 * concatenated to the new keys and values (the present outputs), the
 * grouped heads repeated (Unsqueeze, Expand, Reshape: Hugging Face's
 * repeat_kv), Q·Kᵀ scaled, the mask and the causal band added, the
 * softcap, Softmax and ·V, and the head merge. What depends on shapes (the
 * default scale 1/√Dh, the causal band, a mask shorter than the keys) is
 * computed by Shape, Trilu, Pad ... nodes that the infer pass folds to
 * constants once the shapes are bound. The fuse_attention pass then makes
 * one kiln Attention of the chain, reading the head split, the repeat and
 * the merge as layouts (no copies) and telling the mask's kind (causal,
 * padding: the kernel's fast paths); a chain it cannot fuse (the scores
 * asked for as an output) runs as it is, correctly.
 *
 * Why a chain and not kiln's Attention node directly: kiln's node needs
 * its operands' layouts and its mask's kind, which depend on shapes and
 * constness the importer does not know yet; the fusion pass knows them,
 * and already reads every form of this chain that PyTorch exports. */
#include "onnx_attention.h"

#include <math.h>
#include <string.h>

#include "../ir/build.h"
#include "onnx.pb-c.h"
#include "../ir/ops.h"

typedef struct Chain {
  Graph *g;
  Diag *d;
  const Onnx__NodeProto *np;
  const char *name; /* the ONNX node's: prefix of every new node and value */
  const char *what; /* "Attention", "com.microsoft MultiHeadAttention": in messages */
  DType cdt;        /* what the chain computes in (f32 for f16/bf16 inputs; UNDEF: not known) */
  int like;         /* a value of dtype cdt, for CastLike when cdt is not known */
} Chain;

/* ---- reading the node ----------------------------------------------------------- */

static const Onnx__AttributeProto *attr(const Chain *c, const char *name) {
  for (size_t i = 0; i < c->np->n_attribute; i++)
    if (c->np->attribute[i]->name && !strcmp(c->np->attribute[i]->name, name))
      return c->np->attribute[i];
  return NULL;
}

static int64_t attr_i(const Chain *c, const char *name, int64_t dflt) {
  const Onnx__AttributeProto *a = attr(c, name);
  return a && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT ? a->i : dflt;
}

static double attr_f(const Chain *c, const char *name, double dflt) {
  const Onnx__AttributeProto *a = attr(c, name);
  return a && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT ? a->f : dflt;
}

/* Every attribute is one the op knows (names[]), of its type (kinds[]:
 * 'i' int, 'f' float, 'l' ints). */
static bool check_attrs(Chain *c, const char *const *names, const char *kinds) {
  for (size_t i = 0; i < c->np->n_attribute; i++) {
    const Onnx__AttributeProto *a = c->np->attribute[i];
    const char *nm = a->name ? a->name : "";
    int k = 0;
    while (names[k] && strcmp(names[k], nm))
      k++;
    if (!names[k])
      return diag_error(c->d, "node '%s' (%s): attribute '%s' is not one kiln reads; expected %s", c->name,
                        c->what, nm, "only the op's documented attributes");
    int want = kinds[k] == 'i'   ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT
               : kinds[k] == 'f' ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT
                                 : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    if ((int)a->type != want)
      return diag_error(c->d, "node '%s' (%s): attribute '%s' has type %d; expected %s", c->name, c->what, nm,
                        (int)a->type, kinds[k] == 'i' ? "an int" : kinds[k] == 'f' ? "a float" : "a list of ints");
  }
  return true;
}

/* Input i's value, -1 when absent or empty. */
static int input(Chain *c, size_t i) {
  if (i >= c->np->n_input || !c->np->input[i] || !*c->np->input[i])
    return -1;
  int v = graph_find_value(c->g, c->np->input[i]);
  return v >= 0 ? v : graph_add_value(c->g, c->np->input[i]);
}

/* Is output i asked for (named)? */
static bool wants(const Chain *c, size_t i) {
  return i < c->np->n_output && c->np->output[i] && *c->np->output[i];
}

/* Output i becomes x (an Identity, which simplify removes), when named. */
static bool output(Chain *c, size_t i, int x) {
  if (!wants(c, i))
    return true;
  const char *nm = c->np->output[i];
  int v = graph_find_value(c->g, nm);
  if (v < 0)
    v = graph_add_value(c->g, nm);
  const Value *val = gval(c->g, v);
  if (val->producer >= 0 || val->data || val->is_input)
    return diag_error(c->d, "node '%s' (%s): output '%s' is already defined; expected SSA form (each value "
                      "produced once)", c->name, c->what, nm);
  int nd = graph_add_node(c->g, OP_IDENTITY, arena_printf(c->g->arena, "%s/out%zu", c->name, i), &x, 1, &v, 1);
  c->g->nodes[nd].origin = c->name;
  return true;
}

/* The dtype of v when the importer can tell it already: a graph input's,
 * an initializer's, a Cast's `to`, a comparison's bool; else DT_UNDEF. */
static DType known_dt(const Graph *g, int v) {
  const Value *x = gval(g, v);
  if (x->type.rank >= 0)
    return x->type.dt;
  if (x->producer < 0)
    return DT_UNDEF;
  const Node *p = &g->nodes[x->producer];
  switch (p->op) {
  case OP_CAST:
    return (DType)attr_int(p, "to", 0);
  case OP_EQUAL: case OP_LESS: case OP_GREATER: case OP_LESSOREQUAL: case OP_GREATEROREQUAL: case OP_NOT:
  case OP_AND: case OP_OR: case OP_XOR:
    return DT_BOOL;
  default:
    return DT_UNDEF;
  }
}

/* ---- building the chain --------------------------------------------------------- */

/* A node op(in) with one new output "NAME/hint"; its index. */
static int node(Chain *c, int op, const char *hint, const int *in, int nin) {
  int out = ir_value(c->g, arena_printf(c->g->arena, "%s/%s", c->name, hint));
  int nd = graph_add_node(c->g, op, arena_printf(c->g->arena, "%s/%s", c->name, hint), in, nin, &out, 1);
  c->g->nodes[nd].origin = c->name;
  return nd;
}

static int out0(const Chain *c, int nd) { return c->g->nodes[nd].out[0]; }

static int op1(Chain *c, int op, const char *hint, int x) { return out0(c, node(c, op, hint, &x, 1)); }

static int op2(Chain *c, int op, const char *hint, int x, int y) {
  int in[2] = {x, y};
  return out0(c, node(c, op, hint, in, 2));
}

static int op3(Chain *c, int op, const char *hint, int x, int y, int z) {
  int in[3] = {x, y, z};
  return out0(c, node(c, op, hint, in, 3));
}

static int i64s(Chain *c, const char *hint, const int64_t *v, int n) {
  return ir_const_i64(c->g, arena_printf(c->g->arena, "%s/%s", c->name, hint), v, n);
}

static int i64(Chain *c, const char *hint, int64_t v) { return i64s(c, hint, &v, 1); }

/* A rank-0 constant of the chain's dtype. */
static int scalar(Chain *c, const char *hint, double x) {
  const char *nm = arena_printf(c->g->arena, "%s/%s", c->name, hint);
  if (c->cdt != DT_UNDEF)
    return ir_const_scalar(c->g, nm, c->cdt, x);
  return op2(c, OP_CASTLIKE, arena_printf(c->g->arena, "%s_like", hint), ir_const_scalar(c->g, nm, DT_F32, x),
             c->like);
}

/* Shape(x)[start:end] (end 0: to the last axis). */
static int shape(Chain *c, const char *hint, int x, int64_t start, int64_t end) {
  int nd = node(c, OP_SHAPE, hint, &x, 1);
  ir_attr_int(c->g, nd, "start", start);
  if (end)
    ir_attr_int(c->g, nd, "end", end);
  return out0(c, nd);
}

static int transpose(Chain *c, const char *hint, int x, const int64_t *perm, int r) {
  int nd = node(c, OP_TRANSPOSE, hint, &x, 1);
  ir_attr_ints(c->g, nd, "perm", perm, r);
  return out0(c, nd);
}

static int unsqueeze(Chain *c, const char *hint, int x, const int64_t *axes, int n) {
  if (c->g->opset < 13) {
    int nd = node(c, OP_UNSQUEEZE, hint, &x, 1);
    ir_attr_ints(c->g, nd, "axes", axes, n);
    return out0(c, nd);
  }
  return op2(c, OP_UNSQUEEZE, hint, x, i64s(c, arena_printf(c->g->arena, "%s_axes", hint), axes, n));
}

static int squeeze0(Chain *c, const char *hint, int x) {
  int64_t zero = 0;
  if (c->g->opset < 13) {
    int nd = node(c, OP_SQUEEZE, hint, &x, 1);
    ir_attr_ints(c->g, nd, "axes", &zero, 1);
    return out0(c, nd);
  }
  return op2(c, OP_SQUEEZE, hint, x, i64s(c, arena_printf(c->g->arena, "%s_axes", hint), &zero, 1));
}

static int concat(Chain *c, const char *hint, const int *in, int n, int64_t axis) {
  int nd = node(c, OP_CONCAT, hint, in, n);
  ir_attr_int(c->g, nd, "axis", axis);
  return out0(c, nd);
}

static int cast(Chain *c, const char *hint, int x, DType to) {
  int nd = node(c, OP_CAST, hint, &x, 1);
  ir_attr_int(c->g, nd, "to", to);
  return out0(c, nd);
}

/* [B, S, H·D] -> [B, H, S, D]: a view and a layout the fusion reads. */
static int split_heads(Chain *c, const char *hint, int x, int64_t heads) {
  int64_t shp[4] = {0, 0, heads, -1}, perm[4] = {0, 2, 1, 3};
  int r = op2(c, OP_RESHAPE, arena_printf(c->g->arena, "%s_heads", hint), x,
              i64s(c, arena_printf(c->g->arena, "%s_heads_shape", hint), shp, 4));
  return transpose(c, arena_printf(c->g->arena, "%s_bnsh", hint), r, perm, 4);
}

/* [B, H, S, Dv] -> [B, S, H·Dv]. */
static int merge_heads(Chain *c, int y) {
  int64_t shp[3] = {0, 0, -1}, perm[4] = {0, 2, 1, 3};
  int t = transpose(c, "Y_bshd", y, perm, 4);
  return op2(c, OP_RESHAPE, "Y_merged", t, i64s(c, "Y_merged_shape", shp, 3));
}

/* K or V [B, Hkv, T, D] with each head repeated for the Hq / Hkv query
 * heads that read it (head h of the result is x's h / (Hq / Hkv)): what
 * MatMul needs, and what the fusion reads back as grouped heads. */
static int repeat_kv(Chain *c, const char *hint, int x, int q) {
  int64_t two = 2, lead[2] = {0, -1};
  int groups = op2(c, OP_DIV, arena_printf(c->g->arena, "%s_groups", hint),
                   shape(c, arena_printf(c->g->arena, "%s_hq", hint), q, 1, 2),
                   shape(c, arena_printf(c->g->arena, "%s_hkv", hint), x, 1, 2));
  int parts[3] = {shape(c, arena_printf(c->g->arena, "%s_bh", hint), x, 0, 2), groups,
                  shape(c, arena_printf(c->g->arena, "%s_td", hint), x, 2, 0)};
  int u = unsqueeze(c, arena_printf(c->g->arena, "%s_unsq", hint), x, &two, 1);
  int e = op2(c, OP_EXPAND, arena_printf(c->g->arena, "%s_rep", hint), u,
              concat(c, arena_printf(c->g->arena, "%s_rep_shape", hint), parts, 3, 0));
  int flat[2] = {i64s(c, arena_printf(c->g->arena, "%s_lead", hint), lead, 2), parts[2]};
  return op2(c, OP_RESHAPE, arena_printf(c->g->arena, "%s_grouped", hint), e,
             concat(c, arena_printf(c->g->arena, "%s_grouped_shape", hint), flat, 2, 0));
}

/* √scale, from the attribute or 1/√Dh of q [.., Dh]: applied to Q and to
 * Kᵀ each, as ONNX's Attention does. */
static int sqrt_scale(Chain *c, int q, bool has, double scale) {
  if (has)
    return scalar(c, "sqrt_scale", sqrt(scale));
  int dh = shape(c, "head_size", q, -1, 0);
  dh = c->cdt != DT_UNDEF ? cast(c, "head_size_f", dh, c->cdt) : op2(c, OP_CASTLIKE, "head_size_f", dh, c->like);
  return op1(c, OP_SQRT, "sqrt_scale", op1(c, OP_RECIPROCAL, "scale", op1(c, OP_SQRT, "sqrt_head_size", dh)));
}

/* -inf above the diagonal that starts at key `past` + 1 of query 0, 0
 * elsewhere: [S, T] for q [.., S, D], k [.., T, D]; past a [1] i64 value. */
static int causal_band(Chain *c, int q, int k, int past) {
  int dims[2] = {shape(c, "causal_rows", q, -2, -1), shape(c, "causal_cols", k, -2, -1)};
  int nd = node(c, OP_CONSTANTOFSHAPE, "causal_fill", (int[]){concat(c, "causal_shape", dims, 2, 0)}, 1);
  Tensor *t = arena_alloc(c->g->arena, sizeof *t);
  t->type = (Type){.dt = c->cdt == DT_UNDEF ? DT_F32 : c->cdt, .rank = 1, .dims = {1}};
  t->data = arena_alloc(c->g->arena, 8);
  el_set_f(t->type.dt, t->data, 0, -INFINITY);
  node_add_attr(c->g, &c->g->nodes[nd], "value", ATTR_TENSOR)->t = t;
  int fill = out0(c, nd);
  if (c->cdt == DT_UNDEF)
    fill = op2(c, OP_CASTLIKE, "causal_fill_like", fill, c->like);
  int kk = squeeze0(c, "causal_k", op2(c, OP_ADD, "causal_k1", past, i64(c, "one", 1)));
  return op2(c, OP_TRILU, "causal", fill, kk);
}

/* Mask m [.., Tm] padded with `fill` to the T keys of k [.., T, D] (a Pad
 * of nothing when Tm = T, which simplify removes). */
static int pad_keys(Chain *c, int m, int k, int fill) {
  int rank = shape(c, "mask_rank", shape(c, "mask_shape", m, 0, 0), 0, 0);
  int lead = op2(c, OP_SUB, "mask_pads_lead", op2(c, OP_MUL, "mask_rank2", rank, i64(c, "two", 2)),
                 i64(c, "one_", 1));
  int zeros = op2(c, OP_EXPAND, "mask_pads_zeros", i64(c, "zero", 0), lead);
  int more = op2(c, OP_SUB, "mask_pad", shape(c, "keys", k, -2, -1), shape(c, "mask_keys", m, -1, 0));
  int pads[2] = {zeros, more};
  return op3(c, OP_PAD, "mask_padded", m, concat(c, "mask_pads", pads, 2, 0), fill);
}

/* keep (bool) to an additive mask: 0 where kept, fill elsewhere (-inf, or
 * ORT's mask_filter_value), in the chain's dtype. */
static int keep_to_bias(Chain *c, const char *hint, int keep, double fill) {
  return op3(c, OP_WHERE, hint, keep, scalar(c, arena_printf(c->g->arena, "%s_keep", hint), 0),
             scalar(c, arena_printf(c->g->arena, "%s_fill", hint), fill));
}

/* [B] lengths -> keep [B, 1, 1, T]: key j of batch b kept while j < len[b]
 * (lo: or from lo[b] on, when lo >= 0). */
static int lengths_keep(Chain *c, int len, int lo, int k) {
  int64_t one = 1, mid[2] = {1, 2};
  int keys = op3(c, OP_RANGE, "key_index", squeeze0(c, "range_start", i64(c, "range_0", 0)),
                 squeeze0(c, "key_count", shape(c, "kv_len", k, -2, -1)),
                 squeeze0(c, "range_step", i64(c, "range_1", 1)));
  int keep = op2(c, OP_LESS, "key_live", keys,
                 unsqueeze(c, "len_col", cast(c, "len_i64", len, DT_I64), &one, 1));
  if (lo >= 0)
    keep = op2(c, OP_AND, "key_live_lo", keep,
               op1(c, OP_NOT, "key_before", op2(c, OP_LESS, "key_lo", keys,
                                               unsqueeze(c, "lo_col", cast(c, "lo_i64", lo, DT_I64), &one, 1))));
  return unsqueeze(c, "keep_bnst", keep, mid, 2);
}

/* cap · tanh(s / cap). */
static int softcapped(Chain *c, int s, double softcap) {
  int cap = scalar(c, "softcap", softcap);
  return op2(c, OP_MUL, "softcapped", op1(c, OP_TANH, "softcap_tanh", op2(c, OP_DIV, "softcap_div", s, cap)), cap);
}

/* Where the scores go after Q·Kᵀ: (+ bias) (softcap) Softmax ·V, the
 * softcap before the bias when cap_first (ONNX Runtime's order; ONNX's
 * Attention caps the masked scores). The stages by ONNX's
 * qk_matmul_output_mode (0 .. 3) in st[]. */
static int scores_to_y(Chain *c, int qk, int bias, double softcap, bool cap_first, int v, int *st) {
  st[0] = qk;
  if (softcap > 0 && cap_first)
    qk = softcapped(c, qk, softcap);
  int s = bias >= 0 ? op2(c, OP_ADD, "scores_masked", qk, bias) : qk;
  st[1] = s;
  if (softcap > 0 && !cap_first)
    s = softcapped(c, s, softcap);
  st[2] = s;
  int nd = node(c, OP_SOFTMAX, "probs", &s, 1);
  ir_attr_int(c->g, nd, "axis", -1);
  st[3] = out0(c, nd);
  return op2(c, OP_MATMUL, "Y_heads", st[3], v);
}

/* ---- ONNX Attention (opset 23; 24 added nonpad_kv_seqlen) ----------------------- */

static bool onnx_attn(Chain *c) {
  static const char *const names[] = {"is_causal", "kv_num_heads", "q_num_heads", "qk_matmul_output_mode",
                                      "scale", "softcap", "softmax_precision", NULL};
  if (!check_attrs(c, names, "iiiiffi"))
    return false;
  Graph *g = c->g;
  size_t nin = c->np->n_input, nout = c->np->n_output;
  if (g->opset < 23)
    return diag_error(c->d, "node '%s' (Attention): Attention exists from opset 23; the model imports opset %d",
                      c->name, g->opset);
  if (nin < 3 || nin > (g->opset >= 24 ? 7u : 6u) || nout < 1 || nout > 4)
    return diag_error(c->d, "node '%s' (Attention): %zu inputs and %zu outputs; expected 3 to %d inputs (Q, K, V, "
                      "attn_mask, past_key, past_value%s) and 1 to 4 outputs", c->name, nin, nout,
                      g->opset >= 24 ? 7 : 6, g->opset >= 24 ? ", nonpad_kv_seqlen" : "");
  int q = input(c, 0), k = input(c, 1), v = input(c, 2), m = input(c, 3), pk = input(c, 4), pv = input(c, 5),
      nonpad = input(c, 6);
  int64_t hq = attr_i(c, "q_num_heads", 0), hkv = attr_i(c, "kv_num_heads", 0);
  int64_t causal = attr_i(c, "is_causal", 0), mode = attr_i(c, "qk_matmul_output_mode", 0);
  int64_t prec = attr_i(c, "softmax_precision", 1);
  double softcap = attr_f(c, "softcap", 0);
  if (q < 0 || k < 0 || v < 0)
    return diag_error(c->d, "node '%s' (Attention): Q, K or V is empty; expected all three", c->name);
  if ((pk < 0) != (pv < 0) || (pk >= 0) != (wants(c, 1) || wants(c, 2)) || wants(c, 1) != wants(c, 2))
    return diag_error(c->d, "node '%s' (Attention): past_key, past_value, present_key and present_value are not "
                      "all given or all absent; expected the four together", c->name);
  if (nonpad >= 0 && pk >= 0)
    return diag_error(c->d, "node '%s' (Attention): nonpad_kv_seqlen with past_key; expected one of them (the "
                      "cache is updated outside the op when nonpad_kv_seqlen is given)", c->name);
  if ((hq > 0) != (hkv > 0) || hq < 0 || hkv < 0 || (hq && hq % hkv))
    return diag_error(c->d, "node '%s' (Attention): q_num_heads %lld and kv_num_heads %lld; expected both "
                      "(positive, q_num_heads a multiple of kv_num_heads, for 3-D inputs) or neither (4-D)",
                      c->name, (long long)hq, (long long)hkv);
  if (causal != 0 && causal != 1)
    return diag_error(c->d, "node '%s' (Attention): is_causal is %lld; expected 0 or 1", c->name,
                      (long long)causal);
  if (mode < 0 || mode > 3 || !(softcap >= 0) || isinf(softcap))
    return diag_error(c->d, "node '%s' (Attention): qk_matmul_output_mode %lld, softcap %g; expected a mode from "
                      "0 to 3 and a softcap >= 0", c->name, (long long)mode, softcap);
  if (prec != 1 && prec != 10 && prec != 11 && prec != 16)
    return diag_error(c->d, "node '%s' (Attention): softmax_precision is %lld; expected a float type (1 float, "
                      "10 float16, 11 double, 16 bfloat16)", c->name, (long long)prec);
  DType qdt = known_dt(g, q);
  bool half = qdt == DT_F16 || qdt == DT_BF16; /* computed in f32, as softmax_precision asks at least */
  c->cdt = half ? DT_F32 : qdt;
  if (hq) {
    q = split_heads(c, "Q", q, hq);
    k = split_heads(c, "K", k, hkv);
    v = split_heads(c, "V", v, hkv);
  }
  if (pk >= 0) {
    k = concat(c, "present_key", (int[]){pk, k}, 2, 2);
    v = concat(c, "present_value", (int[]){pv, v}, 2, 2);
  }
  if (!output(c, 1, k) || !output(c, 2, v))
    return false;
  if (half) {
    q = cast(c, "Q_f32", q, DT_F32);
    k = cast(c, "K_f32", k, DT_F32);
    v = cast(c, "V_f32", v, DT_F32);
  }
  c->like = q;
  int s = sqrt_scale(c, q, attr(c, "scale") != NULL, attr_f(c, "scale", 1));
  if (!hq || hq != hkv) {
    k = repeat_kv(c, "K", k, q);
    v = repeat_kv(c, "V", v, q);
  }
  int64_t kperm[4] = {0, 1, 3, 2};
  int kt = op2(c, OP_MUL, "Kt_scaled", transpose(c, "Kt", k, kperm, 4), s);
  int qk = op2(c, OP_MATMUL, "scores", op2(c, OP_MUL, "Q_scaled", q, s), kt);
  int bias = -1, ninf = scalar(c, "neg_inf", -INFINITY), zero = scalar(c, "zero_f", 0);
  if (m >= 0) {
    DType mdt = known_dt(g, m);
    bias = mdt == DT_BOOL ? op3(c, OP_WHERE, "mask_additive", m, zero, ninf)
           : half && mdt != DT_UNDEF ? cast(c, "mask_f32", m, DT_F32) : m;
    bias = pad_keys(c, bias, k, ninf);
  }
  if (causal) {
    int band = causal_band(c, q, k, pk >= 0 ? shape(c, "past", pk, 2, 3) : i64(c, "no_past", 0));
    bias = bias >= 0 ? op2(c, OP_ADD, "mask_causal", bias, band) : band;
  }
  if (nonpad >= 0) { /* [B] lengths: keys from the length on masked */
    int pm = keep_to_bias(c, "nonpad", lengths_keep(c, nonpad, -1, k), -INFINITY);
    bias = bias >= 0 ? op2(c, OP_ADD, "mask_nonpad", bias, pm) : pm;
  }
  int st[4];
  int y = scores_to_y(c, qk, bias, softcap, false, v, st);
  if (hq)
    y = merge_heads(c, y);
  int qko = st[mode];
  if (half) {
    y = cast(c, "Y_half", y, qdt);
    qko = wants(c, 3) ? cast(c, "qk_half", qko, qdt) : qko;
  }
  return output(c, 0, y) && output(c, 3, qko);
}

/* ---- ONNX Runtime's contrib ops (com.microsoft) --------------------------------- */

/* The com.microsoft ops kiln reads only with these inputs absent (buffer
 * sharing, beam search, quantized caches) and these attributes at their
 * defaults; one that is not is refused, naming it. */
static bool refuse_input(Chain *c, size_t i, const char *what) {
  if (input(c, i) < 0)
    return true;
  return diag_error(c->d, "node '%s' (%s): input %zu (%s) is given; kiln reads this op without it (static "
                    "shapes, past and present as separate tensors)", c->name, c->what, i, what);
}

static bool refuse_attr(Chain *c, const char *name, int64_t dflt) {
  if (attr_i(c, name, dflt) == dflt)
    return true;
  return diag_error(c->d, "node '%s' (%s): attribute %s is %lld; kiln reads this op only with its default %lld",
                    c->name, c->what, name, (long long)attr_i(c, name, dflt), (long long)dflt);
}

/* Slice(x, [start, end)) of the last axis, the bounds [1] i64 values. */
static int slice_last(Chain *c, const char *hint, int x, int start, int end) {
  int in[4] = {x, start, end, i64(c, arena_printf(c->g->arena, "%s_axis", hint), -1)};
  return out0(c, node(c, OP_SLICE, hint, in, 4));
}

/* A raw 0/1 mask [B, T] or [B, S, T] (any numeric type) -> keep
 * [B, 1, 1|S, T]: ORT's key_padding_mask and mask_index. */
static bool raw_keep(Chain *c, int m, int *keep) {
  int r = gval(c->g, m)->type.rank;
  if (r != 2 && r != 3)
    return diag_error(c->d, "node '%s' (%s): the mask '%s' has %s; kiln reads a mask of rank 1 (lengths), 2 "
                      "[B, T] or 3 [B, S, T] whose rank the model declares (a graph input or initializer)",
                      c->name, c->what, gval(c->g, m)->name, r < 0 ? "no rank known at import" : "another rank");
  int64_t ax[2] = {1, 2};
  DType mdt = known_dt(c->g, m);
  int zero = ir_const_scalar(c->g, arena_printf(c->g->arena, "%s/mask_0", c->name), mdt, 0);
  int nz = op1(c, OP_NOT, "mask_zero", op2(c, OP_EQUAL, "mask_eq0", m, zero));
  *keep = unsqueeze(c, "keep_bnst", nz, ax, r == 2 ? 2 : 1);
  return true;
}

/* Scale on the scores (ORT multiplies Q·Kᵀ by it): the attribute, or
 * 1/√H for heads q [.., H]. */
static int scores_scale(Chain *c, int q) {
  if (attr(c, "scale") && attr_f(c, "scale", 0) != 0)
    return scalar(c, "scale", attr_f(c, "scale", 0));
  int dh = shape(c, "head_size", q, -1, 0);
  dh = c->cdt != DT_UNDEF ? cast(c, "head_size_f", dh, c->cdt) : op2(c, OP_CASTLIKE, "head_size_f", dh, c->like);
  return op1(c, OP_RECIPROCAL, "scale", op1(c, OP_SQRT, "sqrt_head_size", dh));
}

/* The common tail: scores of q [B, N, S, H] and k [B, Nkv, T, H], the bias,
 * softcap, ·v, heads merged; output 0. */
static bool contrib_tail(Chain *c, int q, int k, int v, int bias, double softcap, bool grouped) {
  int64_t kperm[4] = {0, 1, 3, 2};
  if (grouped) {
    k = repeat_kv(c, "K", k, q);
    v = repeat_kv(c, "V", v, q);
  }
  int qk = op2(c, OP_MUL, "scores_scaled", op2(c, OP_MATMUL, "scores", q, transpose(c, "Kt", k, kperm, 4)),
               scores_scale(c, q));
  int st[4];
  return output(c, 0, merge_heads(c, scores_to_y(c, qk, bias, softcap, true, v, st)));
}

static int add_bias(Chain *c, const char *hint, int bias, int x) {
  return x < 0 ? bias : bias < 0 ? x : op2(c, OP_ADD, hint, bias, x);
}

/* The causal band with past keys before the new ones (-inf: the kernel's
 * causal kind; ORT adds mask_filter_value there, the same weights for
 * every row that keeps a key, and each keeps key 0). */
static int contrib_causal(Chain *c, int q, int k, int past) {
  return causal_band(c, q, k, past >= 0 ? shape(c, "past", past, 2, 3) : i64(c, "no_past", 0));
}

static void set_dtype(Chain *c, int x) {
  c->cdt = known_dt(c->g, x);
  c->like = x;
}

/* com.microsoft MultiHeadAttention: separate Q, K, V [B, S, D] (or K, V
 * already [B, N, T, H]), the input projection's bias, a key padding mask
 * (lengths or 0/1), an attention bias, past and present key and value. */
static bool ort_mha(Chain *c) {
  static const char *const names[] = {"num_heads", "mask_filter_value", "scale", "unidirectional", NULL};
  if (!check_attrs(c, names, "iffi"))
    return false;
  int64_t nh = attr_i(c, "num_heads", 0), uni = attr_i(c, "unidirectional", 0);
  double fill = attr_f(c, "mask_filter_value", -10000);
  int q = input(c, 0), k = input(c, 1), v = input(c, 2), b = input(c, 3), m = input(c, 4), ab = input(c, 5),
      pk = input(c, 6), pv = input(c, 7);
  if (nh <= 0 || (uni != 0 && uni != 1) || c->np->n_input < 3 || c->np->n_output > 3)
    return diag_error(c->d, "node '%s' (%s): num_heads %lld, unidirectional %lld, %zu inputs, %zu outputs; "
                      "expected num_heads > 0, unidirectional 0 or 1, query, key and value given (packed QKV is "
                      "not read) and at most 3 outputs (qk is not written)", c->name, c->what, (long long)nh,
                      (long long)uni, c->np->n_input, c->np->n_output);
  if (!refuse_input(c, 8, "past_sequence_length") || !refuse_input(c, 9, "cache_indirection"))
    return false;
  if (k < 0 || v < 0 || (pk < 0) != (pv < 0) || (pk >= 0) != wants(c, 1) || wants(c, 1) != wants(c, 2))
    return diag_error(c->d, "node '%s' (%s): key or value absent, or past_key, past_value, present_key and "
                      "present_value not all given or all absent; expected key and value, and the four together",
                      c->name, c->what);
  set_dtype(c, q);
  bool bnsh = gval(c->g, k)->type.rank == 4; /* K, V given as [B, N, T, H] */
  if (b >= 0) { /* Q, K, V += bias[0:D], [D:2D], [2D:] */
    int d = shape(c, "hidden", q, 2, 3), d2 = op2(c, OP_MUL, "hidden2", d, i64(c, "two", 2));
    int big = i64(c, "end", INT64_MAX);
    q = op2(c, OP_ADD, "Q_bias", q, slice_last(c, "bias_q", b, i64(c, "zero", 0), d));
    if (!bnsh) {
      k = op2(c, OP_ADD, "K_bias", k, slice_last(c, "bias_k", b, d, d2));
      v = op2(c, OP_ADD, "V_bias", v, slice_last(c, "bias_v", b, d2, big));
    }
  }
  q = split_heads(c, "Q", q, nh);
  if (!bnsh) {
    k = split_heads(c, "K", k, nh);
    v = split_heads(c, "V", v, nh);
  }
  if (pk >= 0) {
    k = concat(c, "present_key", (int[]){pk, k}, 2, 2);
    v = concat(c, "present_value", (int[]){pv, v}, 2, 2);
  }
  if (!output(c, 1, k) || !output(c, 2, v))
    return false;
  int bias = ab;
  if (m >= 0) {
    int keep;
    if (gval(c->g, m)->type.rank == 1)
      keep = lengths_keep(c, m, -1, k);
    else if (!raw_keep(c, m, &keep))
      return false;
    bias = add_bias(c, "mask_all", bias, keep_to_bias(c, "key_padding", keep, fill));
  }
  if (uni)
    bias = add_bias(c, "mask_causal", bias, contrib_causal(c, q, k, pk));
  return contrib_tail(c, q, k, v, bias, 0, false);
}

/* com.microsoft Attention: one projection input·weights + bias into Q, K,
 * V (equal thirds, or qkv_hidden_sizes), mask_index (lengths, left
 * padding [2B], or 0/1), past and present stacked as [2, B, N, T, H]. */
static bool ort_attention(Chain *c) {
  static const char *const names[] = {"num_heads", "mask_filter_value", "scale", "unidirectional",
                                      "qkv_hidden_sizes", "do_rotary", "past_present_share_buffer",
                                      "rotary_embedding_dim", NULL};
  if (!check_attrs(c, names, "iffiliii"))
    return false;
  const Onnx__AttributeProto *sizes = attr(c, "qkv_hidden_sizes");
  if (!refuse_attr(c, "do_rotary", 0) || !refuse_attr(c, "past_present_share_buffer", 0) ||
      !refuse_input(c, 6, "past_sequence_length"))
    return false;
  int64_t nh = attr_i(c, "num_heads", 0), uni = attr_i(c, "unidirectional", 0);
  double fill = attr_f(c, "mask_filter_value", -10000);
  int x = input(c, 0), w = input(c, 1), b = input(c, 2), m = input(c, 3), past = input(c, 4), ab = input(c, 5);
  if (nh <= 0 || (uni != 0 && uni != 1) || x < 0 || w < 0 || c->np->n_output > 2 ||
      (past >= 0) != wants(c, 1))
    return diag_error(c->d, "node '%s' (%s): num_heads %lld, unidirectional %lld; expected num_heads > 0, "
                      "unidirectional 0 or 1, input and weights given, past and present together", c->name,
                      c->what, (long long)nh, (long long)uni);
  set_dtype(c, x);
  int qkv = op2(c, OP_MATMUL, "qkv", x, w);
  if (b >= 0)
    qkv = op2(c, OP_ADD, "qkv_bias", qkv, b);
  int lo, mid, hi = i64(c, "end", INT64_MAX);
  if (sizes) {
    if (sizes->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS || sizes->n_ints != 3 || sizes->ints[0] <= 0 ||
        sizes->ints[0] != sizes->ints[1] || sizes->ints[2] <= 0 || sizes->ints[0] % nh || sizes->ints[2] % nh)
      return diag_error(c->d, "node '%s' (%s): qkv_hidden_sizes is not 3 positive multiples of num_heads with "
                        "Q's equal to K's; expected [D, D, Dv]", c->name, c->what);
    lo = i64(c, "d", sizes->ints[0]);
    mid = i64(c, "d2", 2 * sizes->ints[0]);
  } else {
    lo = op2(c, OP_DIV, "d", shape(c, "qkv_width", w, -1, 0), i64(c, "three", 3));
    mid = op2(c, OP_MUL, "d2", lo, i64(c, "two", 2));
  }
  int q = split_heads(c, "Q", slice_last(c, "q", qkv, i64(c, "zero", 0), lo), nh);
  int k = split_heads(c, "K", slice_last(c, "k", qkv, lo, mid), nh);
  int v = split_heads(c, "V", slice_last(c, "v", qkv, mid, hi), nh);
  int pk = -1;
  if (past >= 0) { /* past [2, B, N, P, H] */
    int64_t zero = 0;
    int i0 = squeeze0(c, "past_k_index", i64(c, "past_k_i", 0)), i1 = squeeze0(c, "past_v_index", i64(c, "past_v_i", 1));
    pk = op2(c, OP_GATHER, "past_key", past, i0);
    k = concat(c, "present_key", (int[]){pk, k}, 2, 2);
    v = concat(c, "present_value", (int[]){op2(c, OP_GATHER, "past_value", past, i1), v}, 2, 2);
    int both[2] = {unsqueeze(c, "present_k5", k, &zero, 1), unsqueeze(c, "present_v5", v, &zero, 1)};
    if (!output(c, 1, concat(c, "present", both, 2, 0)))
      return false;
  }
  int bias = ab;
  if (m >= 0) {
    const Value *mv = gval(c->g, m), *xv = gval(c->g, x);
    int keep;
    if (mv->type.rank == 1) {
      int64_t n = mv->type.dims[0], bsz = xv->type.rank == 3 ? xv->type.dims[0] : -1;
      if (n < 0 || bsz < 0 || (n != bsz && n != 2 * bsz))
        return diag_error(c->d, "node '%s' (%s): 1-D mask_index '%s' of %lld with batch %lld; expected [B] end "
                          "positions or [2B] ends then starts, with the dims the model declares", c->name, c->what,
                          mv->name, (long long)n, (long long)bsz);
      if (n == bsz) {
        keep = lengths_keep(c, m, -1, k);
      } else {
        int ends = slice_last(c, "mask_ends", m, i64(c, "zero_", 0), i64(c, "b", bsz));
        int starts = slice_last(c, "mask_starts", m, i64(c, "b_", bsz), i64(c, "b2", 2 * bsz));
        keep = lengths_keep(c, ends, starts, k);
      }
    } else if (!raw_keep(c, m, &keep)) {
      return false;
    }
    bias = add_bias(c, "mask_all", bias, keep_to_bias(c, "mask", keep, fill));
  }
  if (uni)
    bias = add_bias(c, "mask_causal", bias, contrib_causal(c, q, k, pk));
  return contrib_tail(c, q, k, v, bias, 0, false);
}

/* com.microsoft GroupQueryAttention: Q [B, S, N·H] and K, V [B, S, Nkv·H]
 * (or one packed [B, S, (N + 2 Nkv)·H]), rotary embedding on Q and K, the
 * past concatenated (separate past and present buffers), causal with the
 * past before the new keys, and the keys past seqlens_k[b] masked. The
 * positions for rotary are seqlens_k[b] + 1 - S + s (ORT's, for one
 * stream and for right-padded keys). */
static bool ort_gqa(Chain *c) {
  static const char *const names[] = {"num_heads", "kv_num_heads", "scale", "softcap", "local_window_size",
                                      "do_rotary", "rotary_interleaved", "smooth_softmax", "qk_output", "causal",
                                      NULL};
  if (!check_attrs(c, names, "iiffiiiiii"))
    return false;
  static const char *const later[] = {"head_sink", "k_scale", "v_scale", "q_norm_weight", "k_norm_weight",
                                      "query_seqlens"};
  for (size_t i = 11; i < c->np->n_input; i++)
    if (!refuse_input(c, i, i - 11 < KILN_COUNT(later) ? later[i - 11] : "an input kiln does not know"))
      return false;
  if (!refuse_attr(c, "local_window_size", -1) || !refuse_attr(c, "smooth_softmax", 0) ||
      !refuse_attr(c, "qk_output", 0))
    return false;
  int64_t nh = attr_i(c, "num_heads", 0), nkv = attr_i(c, "kv_num_heads", 0), causal = attr_i(c, "causal", 1);
  int64_t rot = attr_i(c, "do_rotary", 0), il = attr_i(c, "rotary_interleaved", 0);
  double softcap = attr_f(c, "softcap", 0);
  int q = input(c, 0), k = input(c, 1), v = input(c, 2), pk = input(c, 3), pv = input(c, 4), lens = input(c, 5),
      cosc = input(c, 7), sinc = input(c, 8), pos = input(c, 9), ab = input(c, 10);
  if (nh <= 0 || nkv <= 0 || nh % nkv || (causal != 0 && causal != 1) || (rot != 0 && rot != 1) ||
      (il != 0 && il != 1) || !(softcap >= 0) || isinf(softcap) || c->np->n_output > 3)
    return diag_error(c->d, "node '%s' (%s): num_heads %lld, kv_num_heads %lld, causal %lld, do_rotary %lld, "
                      "softcap %g; expected num_heads a positive multiple of kv_num_heads > 0, causal, do_rotary "
                      "and rotary_interleaved 0 or 1, softcap >= 0, at most 3 outputs", c->name, c->what,
                      (long long)nh, (long long)nkv, (long long)causal, (long long)rot, softcap);
  if (lens < 0 || (k < 0) != (v < 0) || (pk < 0) != (pv < 0) || (pk >= 0) != wants(c, 1) ||
      wants(c, 1) != wants(c, 2) || (rot && (cosc < 0 || sinc < 0)))
    return diag_error(c->d, "node '%s' (%s): seqlens_k absent, key without value, past or present given "
                      "alone, or do_rotary without cos_cache and sin_cache; expected them together", c->name,
                      c->what);
  set_dtype(c, q);
  if (k < 0) { /* packed [B, S, (N + 2 Nkv) H] */
    int hsz = op2(c, OP_DIV, "head_size", shape(c, "packed", q, -1, 0), i64(c, "heads_all", nh + 2 * nkv));
    int e1 = op2(c, OP_MUL, "q_end", hsz, i64(c, "n", nh)), e2 = op2(c, OP_MUL, "k_end", hsz, i64(c, "nk", nh + nkv));
    k = slice_last(c, "k", q, e1, e2);
    v = slice_last(c, "v", q, e2, i64(c, "end", INT64_MAX));
    q = slice_last(c, "q", q, i64(c, "zero", 0), e1);
  }
  int s = shape(c, "seq", q, 1, 2);
  if (rot) { /* RotaryEmbedding (ONNX's) on Q and K, [B, S, heads·H] */
    if (pos < 0) {
      int64_t one = 1;
      int first = op2(c, OP_SUB, "first_pos", op2(c, OP_ADD, "total", cast(c, "lens_i64", lens, DT_I64),
                                                   i64(c, "one", 1)), s);
      int steps = op3(c, OP_RANGE, "steps", squeeze0(c, "steps_0", i64(c, "steps_start", 0)),
                      squeeze0(c, "steps_n", s), squeeze0(c, "steps_1", i64(c, "steps_delta", 1)));
      pos = op2(c, OP_ADD, "position_ids", unsqueeze(c, "first_col", first, &one, 1), steps);
    }
    for (int i = 0; i < 2; i++) {
      int in[4] = {i ? k : q, cosc, sinc, pos};
      int nd = node(c, OP_ROTARYEMBEDDING, i ? "K_rotary" : "Q_rotary", in, 4);
      ir_attr_int(c->g, nd, "num_heads", i ? nkv : nh);
      ir_attr_int(c->g, nd, "interleaved", il);
      *(i ? &k : &q) = out0(c, nd);
    }
  }
  q = split_heads(c, "Q", q, nh);
  k = split_heads(c, "K", k, nkv);
  v = split_heads(c, "V", v, nkv);
  if (pk >= 0) {
    k = concat(c, "present_key", (int[]){pk, k}, 2, 2);
    v = concat(c, "present_value", (int[]){pv, v}, 2, 2);
  }
  if (!output(c, 1, k) || !output(c, 2, v))
    return false;
  int total = op2(c, OP_ADD, "kv_count", cast(c, "seqlens_i64", lens, DT_I64), i64(c, "one_", 1));
  int bias = add_bias(c, "mask_all", ab, keep_to_bias(c, "kv_padding", lengths_keep(c, total, -1, k), -INFINITY));
  if (causal)
    bias = add_bias(c, "mask_causal", bias, contrib_causal(c, q, k, pk));
  return contrib_tail(c, q, k, v, bias, softcap, nh != nkv);
}

/* ---- the entry points ------------------------------------------------------------ */

bool onnx_attention_handles(const char *domain, const char *op_type) {
  bool onnx = !*domain || !strcmp(domain, "ai.onnx");
  if (onnx)
    return !strcmp(op_type, "Attention");
  return !strcmp(domain, "com.microsoft") &&
         (!strcmp(op_type, "Attention") || !strcmp(op_type, "MultiHeadAttention") ||
          !strcmp(op_type, "GroupQueryAttention"));
}

bool onnx_attention_import(Graph *g, const struct Onnx__NodeProto *np, const char *name, Diag *d) {
  const char *op = np->op_type, *dom = np->domain ? np->domain : "";
  bool ort = !strcmp(dom, "com.microsoft");
  Chain c = {.g = g, .d = d, .np = np, .name = name, .cdt = DT_UNDEF, .like = -1,
             .what = ort ? arena_printf(g->arena, "com.microsoft %s", op) : "Attention"};
  if (!ort)
    return onnx_attn(&c);
  if (np->n_output < 1 || !wants(&c, 0))
    return diag_error(d, "node '%s' (%s): no output; expected the attention output first", name, c.what);
  return !strcmp(op, "MultiHeadAttention") ? ort_mha(&c) : !strcmp(op, "GroupQueryAttention") ? ort_gqa(&c)
                                                                                          : ort_attention(&c);
}
