/* onnx_ort_lstm.c — ONNX Runtime's com.microsoft DynamicQuantizeLSTM as
 * kiln's LSTM (compiler/ops/recurrent.c).
 *
 * quantize_dynamic replaces an LSTM's W and R by int8 (or uint8) copies,
 * transposed to [D, I, 4H] and [D, H, 4H], with a scale and a zero point
 * per direction (or per column with per_channel), and ONNX Runtime then
 * quantizes X and h to uint8 at every step. kiln dequantizes the weights
 * once, at compile time, and runs the f32 LSTM: the weights' rounding is
 * kept (the model's numbers are those ints), the activations' is not, so
 * kiln is closer to the f32 model than ONNX Runtime is.
 *
 * The node is imported here, apart from the generic path of
 * onnx_import.c, because it has four inputs LSTM does not and two that
 * become new constants; what it shares with every node (values by name,
 * SSA outputs, attributes of ONNX's kinds) is redone in a few lines. */
#include "onnx_ort_lstm.h"

#include <string.h>

#include "../ir/ops.h"

/* Inputs: LSTM's eight, then the quantization's four. */
enum { QL_X, QL_W, QL_R, QL_B, QL_SEQ, QL_H0, QL_C0, QL_P, QL_WS, QL_WZ, QL_RS, QL_RZ, QL_COUNT };

#define QL_WHAT "(com.microsoft DynamicQuantizeLSTM)"

bool ort_lstm_is(const char *domain, const char *op_type) {
  return !strcmp(op_type, "DynamicQuantizeLSTM") && !strcmp(domain, "com.microsoft");
}

static int value_named(Graph *g, const char *name) {
  int v = graph_find_value(g, name);
  return v >= 0 ? v : graph_add_value(g, name);
}

/* One attribute of ONNX's scalar and list kinds onto n. */
static bool copy_attr(Graph *g, Node *n, const Onnx__AttributeProto *ap, Diag *d) {
  const char *name = ap->name ? ap->name : "";
  Arena *a = g->arena;
  switch (ap->type) {
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
    node_add_attr(g, n, name, ATTR_INT)->i = ap->i;
    return true;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
    node_add_attr(g, n, name, ATTR_FLOAT)->f = ap->f;
    return true;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
    char *s = arena_alloc(a, ap->s.len + 1);
    if (ap->s.len)
      memcpy(s, ap->s.data, ap->s.len);
    node_add_attr(g, n, name, ATTR_STRING)->s = s;
    return true;
  }
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
    Attr *at = node_add_attr(g, n, name, ATTR_FLOATS);
    at->n = (int)ap->n_floats;
    at->floats = arena_alloc(a, sizeof(double) * (ap->n_floats + 1));
    for (size_t i = 0; i < ap->n_floats; i++)
      at->floats[i] = ap->floats[i];
    return true;
  }
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {
    Attr *at = node_add_attr(g, n, name, ATTR_STRINGS);
    at->n = (int)ap->n_strings;
    at->strings = arena_alloc(a, sizeof(char *) * (ap->n_strings + 1));
    for (size_t i = 0; i < ap->n_strings; i++) {
      char *s = arena_alloc(a, ap->strings[i].len + 1);
      if (ap->strings[i].len)
        memcpy(s, ap->strings[i].data, ap->strings[i].len);
      at->strings[i] = s;
    }
    return true;
  }
  default:
    return diag_error(d, "node '%s' " QL_WHAT ": attribute '%s' is of a kind LSTM has none of; expected an int, "
                      "a float, a string or a list of floats or strings", n->name, name);
  }
}

/* The f32 weight [D, N, K] of a quantized one q [D, K, N]: (q - zp) * scale,
 * scale and zp per direction ([D]) or per column ([D, N]). A new constant
 * named after q; its id in *vid. */
static bool dequantize(Graph *g, const char *nname, const char *what, const int ids[3], int *vid, Diag *d) {
  const Value *q = gval(g, ids[0]), *sc = gval(g, ids[1]), *zp = gval(g, ids[2]);
  char a[128], b[128], c[128];
  if (!q->data || !sc->data || !zp->data)
    return diag_error(d, "node '%s' " QL_WHAT ": %s_quantized, its scale or its zero point is computed; expected "
                      "initializers (the weights are dequantized at compile time)", nname, what);
  const Type *qt = &q->type, *st = &sc->type, *zt = &zp->type;
  bool per_col = st->rank == 2;
  if (qt->rank != 3 || (qt->dt != DT_I8 && qt->dt != DT_U8) || st->dt != DT_F32 ||
      !(st->rank == 1 || st->rank == 2) || st->dims[0] != qt->dims[0] || (per_col && st->dims[1] != qt->dims[2]) ||
      !type_equal(&(Type){qt->dt, st->rank, {st->dims[0], st->dims[1]}}, zt))
    return diag_error(d, "node '%s' " QL_WHAT ": %s_quantized %s, scale %s, zero point %s; expected int8 or uint8 "
                      "[D, K, 4*H], an f32 scale and a zero point of its type, [D] or [D, 4*H]", nname, what,
                      type_str(qt, a, sizeof a), type_str(st, b, sizeof b), type_str(zt, c, sizeof c));
  int64_t D = qt->dims[0], K = qt->dims[1], N = qt->dims[2];
  float *w = arena_alloc(g->arena, sizeof(float) * (size_t)(D * N * K + 1));
  for (int64_t dd = 0; dd < D; dd++)
    for (int64_t k = 0; k < K; k++)
      for (int64_t j = 0; j < N; j++) {
        int64_t s = per_col ? dd * N + j : dd;
        int64_t v = el_get_i(qt->dt, q->data, (dd * K + k) * N + j) - el_get_i(zt->dt, zp->data, s);
        w[(dd * N + j) * K + k] = (float)v * ((const float *)sc->data)[s];
      }
  const char *base = q->name;
  *vid = graph_add_value(g, arena_printf(g->arena, "%s.dequantized", base));
  Value *v = gval(g, *vid);
  v->type = (Type){DT_F32, 3, {D, N, K}};
  v->data = w;
  return true;
}

bool ort_lstm_import(Graph *g, const Onnx__NodeProto *np, const char *nname, Diag *d) {
  int nin = (int)np->n_input, nout = (int)np->n_output;
  while (nout > 0 && (!np->output[nout - 1] || !*np->output[nout - 1]))
    nout--;
  if (nin != QL_COUNT || nout < 1 || nout > 3)
    return diag_error(d, "node '%s' " QL_WHAT ": %d inputs and %d outputs; expected 12 (LSTM's 8, then W_scale, "
                      "W_zero_point, R_scale, R_zero_point) and 1 to 3", nname, nin, nout);
  int in[QL_COUNT];
  for (int i = 0; i < QL_COUNT; i++) {
    bool need = i <= QL_R || i >= QL_WS;
    if (need && (!np->input[i] || !*np->input[i]))
      return diag_error(d, "node '%s' " QL_WHAT ": input %d is empty; expected X, W, R and the scales and zero "
                        "points", nname, i);
    in[i] = np->input[i] && *np->input[i] ? value_named(g, np->input[i]) : -1;
  }
  int lin[8];
  memcpy(lin, in, sizeof lin);
  if (!dequantize(g, nname, "W", (int[3]){in[QL_W], in[QL_WS], in[QL_WZ]}, &lin[QL_W], d) ||
      !dequantize(g, nname, "R", (int[3]){in[QL_R], in[QL_RS], in[QL_RZ]}, &lin[QL_R], d))
    return false;
  int nl = 8;
  while (lin[nl - 1] < 0)
    nl--;
  int out[3];
  for (int i = 0; i < nout; i++) {
    if (!np->output[i] || !*np->output[i]) {
      out[i] = graph_add_value(g, ""); /* named with the other unnamed outputs */
      continue;
    }
    out[i] = value_named(g, np->output[i]);
    const Value *v = gval(g, out[i]);
    if (v->producer >= 0 || v->data || v->is_input)
      return diag_error(d, "node '%s' " QL_WHAT ": output '%s' is already defined; expected SSA form (each value "
                        "produced once)", nname, np->output[i]);
  }
  int ni = graph_add_node(g, OP_LSTM, nname, lin, nl, out, nout);
  g->nodes[ni].origin = arena_printf(g->arena, "%s (DynamicQuantizeLSTM)", nname);
  for (size_t i = 0; i < np->n_attribute; i++)
    if (!copy_attr(g, &g->nodes[ni], np->attribute[i], d))
      return false;
  return true;
}
