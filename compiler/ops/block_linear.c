/* block_linear.c — the kiln ops that read ggml block-quantized weights
 * (compiler/ir/blockquant.h) in place of the f32 tensor DequantizeBlocks
 * would make; fuse_blocks makes them:
 *
 *   BlockLinear {format} (X[..., K], Wb u8[N, K/block_values·block_bytes], bias[N]?, rows i64[1]?)
 *       Y[..., N] = X · Wᵀ (+ bias), W[N,K] = Wb dequantized; with `rows`,
 *       only X's first `rows` rows (of M) are multiplied and Y's others are
 *       0 (a decoder's prefill: the chunk's real tokens). torch's
 *       Linear (x·Wᵀ) with its weight as GGUF stores it, a row of blocks
 *       per output column. _emit: the block GEMM/GEMV (compiler/kernels/
 *       qgemm_kernel.c), which dequantizes each block in registers.
 *   BlockGather {format} (Wb u8[V, D/block_values·block_bytes], ids)
 *       Y[ids..., D] = rows ids of W (an embedding table): only the rows
 *       read are dequantized. Indices as Gather's on axis 0.
 *
 * One blocks constant read by both (tied embeddings: the table is also the
 * output projection) is stored once: neither kernel repacks it. _eval
 * dequantizes exactly as DequantizeBlocks does, then multiplies in double
 * (as Linear's _eval) and rounds once.
 *
 * act="q8" (fuse_blocks under --kquant-act=q8: the K-quants, Q5_0, Q5_1): a
 * product of fewer than QG_ACT_Q8_MAX_ROWS rows of X (static M: decode's
 * GEMVs) takes each row of X quantized to int8 by bq_quantize_act_q8, as
 * the kernel does, then multiplies exactly as above: the kernel's integer
 * sums are exact, so it differs from _eval only by its f32 scaling. With
 * more rows (prefill, compute-bound on dequantized panels) X stays f32. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/blockquant.h"
#include "../emit/emit.h"
#include "../kernels/qgemm_kernel.h"
#include "../ir/ops.h"

/* The node's format and the logical [rows, cols] of the blocks wb. */
static bool block_weight(const Node *n, const Type *wb, BqFormat *fmt, int64_t *rows, int64_t *cols, char *err,
                         size_t errn) {
  const char *f = attr_str(n, "format", NULL);
  char ws[128];
  if (!bq_format_from_name(f, fmt)) {
    snprintf(err, errn, "format '%s' is unknown; expected " BQ_FORMAT_NAMES, f ? f : "");
    return false;
  }
  int bb = bq_formats[*fmt].block_bytes;
  if (wb->dt != DT_U8 || wb->rank != 2 || wb->dims[1] % bb) {
    snprintf(err, errn, "weight blocks are %s; expected u8[rows, a multiple of %d bytes] (%s blocks)",
             type_str(wb, ws, sizeof ws), bb, f);
    return false;
  }
  *rows = wb->dims[0];
  *cols = wb->dims[1] / bb * bq_formats[*fmt].block_values;
  return true;
}

/* Row r of the blocks, dequantized into w[cols]. */
static void weight_row(BqFormat fmt, const Tensor *wb, int64_t r, float *w, int64_t cols) {
  bq_dequantize_row(fmt, (const uint8_t *)wb->data + r * wb->type.dims[1], w, cols);
}

/* ---- BlockLinear ------------------------------------------------------------ */

/* Does the product quantize X to int8 (act="q8", a K-quant, M rows of X
 * fewer than QG_ACT_Q8_MAX_ROWS)? */
static bool block_act_q8(const Node *n, BqFormat fmt, int64_t m) {
  return !strcmp(attr_str(n, "act", "f32"), "q8") && bq_act_q8_format(fmt) && m < QG_ACT_Q8_MAX_ROWS;
}

bool block_linear_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *wb = node_in(g, n, 1), *b = node_in(g, n, 2);
  BqFormat fmt;
  int64_t nn, k;
  char err[256], xs[128], bs[128];
  if (!block_weight(n, &wb->type, &fmt, &nn, &k, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  if (x->type.dt != DT_F32 || x->type.rank < 1 || x->type.dims[x->type.rank - 1] != k)
    return diag_node(d, g, n, "X is %s; expected f32[..., %lld] (the weight's %lld columns)",
                     type_str(&x->type, xs, sizeof xs), (long long)k, (long long)k);
  if (b && (b->type.dt != DT_F32 || b->type.rank != 1 || b->type.dims[0] != nn))
    return diag_node(d, g, n, "bias is %s; expected f32[%lld]", type_str(&b->type, bs, sizeof bs), (long long)nn);
  const char *act = attr_str(n, "act", "f32");
  if (strcmp(act, "f32") && strcmp(act, "q8"))
    return diag_node(d, g, n, "act '%s' is unknown; expected f32 or q8 (the activations of its GEMVs)", act);
  const Value *r = node_in(g, n, 3);
  if (r && (r->type.dt != DT_I64 || type_numel(&r->type) != 1))
    return diag_node(d, g, n, "rows is %s; expected i64[1]", type_str(&r->type, bs, sizeof bs));
  Type y = x->type;
  y.dims[y.rank - 1] = nn;
  if (!type_size_ok(&y))
    return diag_node(d, g, n, "Y would be %s; expected at most %lld values", type_str(&y, xs, sizeof xs),
                     (long long)MAX_NUMEL);
  node_out(g, n, 0)->type = y;
  return true;
}

bool block_linear_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  BqFormat fmt;
  int64_t nn, k;
  char err[256];
  KILN_ASSERT(block_weight(n, &in[1].type, &fmt, &nn, &k, err, sizeof err));
  int64_t m = nn ? type_numel(&out[0].type) / nn : 0; /* rows of X, also when K is 0 */
  if (n->nin > 3 && in[3].data) { /* rows: the rest stay 0 */
    int64_t r = *(const int64_t *)in[3].data;
    m = r < 0 ? 0 : r < m ? r : m;
  }
  const float *x = in[0].data, *bias = n->nin > 2 ? in[2].data : NULL;
  float *y = out[0].data, *w = malloc(sizeof(float) * (size_t)(k ? k : 1));
  double *xq = NULL; /* act="q8": X dequantized from int8, exactly */
  KILN_ASSERT(w);
  if (block_act_q8(n, fmt, nn ? type_numel(&out[0].type) / nn : 0) && m > 0) { /* X as the int8 kernel sees it */
    int8_t *q = malloc((size_t)k);
    float *dq = malloc(sizeof(float) * (size_t)(k / BQ_ACT_BLOCK + 1));
    xq = malloc(sizeof(double) * (size_t)(m * k));
    KILN_ASSERT(q && dq && xq);
    for (int64_t i = 0; i < m; i++) {
      bq_quantize_act_q8(x + i * k, k, q, dq);
      for (int64_t t = 0; t < k; t++)
        xq[i * k + t] = (double)dq[t / BQ_ACT_BLOCK] * q[t];
    }
    free(q), free(dq);
  }
  for (int64_t j = 0; j < nn; j++) {
    weight_row(fmt, &in[1], j, w, k);
    for (int64_t i = 0; i < m; i++) {
      double s = 0;
      for (int64_t t = 0; t < k; t++)
        s += (xq ? xq[i * k + t] : (double)x[i * k + t]) * (double)w[t];
      y[i * nn + j] = (float)s;
      if (bias)
        y[i * nn + j] = y[i * nn + j] + bias[j];
    }
  }
  free(w), free(xq);
  return true;
}

bool block_linear_emit(Emit *e, const Node *n) {
  BqFormat fmt;
  int64_t nn, k;
  char err[256];
  if (!block_weight(n, &gval(e->g, n->in[1])->type, &fmt, &nn, &k, err, sizeof err))
    return false;
  int64_t m = nn ? type_numel(&gval(e->g, n->out[0])->type) / nn : 0;
  QGemmSpec s = {.m = m, .n = nn, .k = k, .fmt = fmt,
                 .a = emit_ref(e, n->in[0]), .w = emit_ref(e, n->in[1]),
                 .bias = node_has_in(n, 2) ? emit_ref(e, n->in[2]) : NULL, .y = emit_ref(e, n->out[0]),
                 .act_q8 = block_act_q8(n, fmt, m)};
  if (node_has_in(n, 3)) /* after Y: weights and parameters are named in order of first use */
    s.rows = arena_printf(e->g->arena, "%s[0]", emit_ref(e, n->in[3]));
  return emit_qgemm(e, &s);
}

/* 2·M·N·K, and one per output for the bias. */
int64_t block_linear_flops(const Graph *g, const Node *n) {
  const Value *x = node_in(g, n, 0);
  int64_t out = type_numel(&gval(g, n->out[0])->type), k = x && x->type.rank > 0 ? x->type.dims[x->type.rank - 1] : 1;
  return 2 * out * k + (node_has_in(n, 2) ? out : 0);
}

/* ---- BlockGather ------------------------------------------------------------- */

bool block_gather_infer(Graph *g, Node *n, Diag *d) {
  Value *wb = node_in(g, n, 0), *ix = node_in(g, n, 1);
  BqFormat fmt;
  int64_t rows, cols;
  char err[256];
  if (!block_weight(n, &wb->type, &fmt, &rows, &cols, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  if (ix->type.dt != DT_I32 && ix->type.dt != DT_I64)
    return diag_node(d, g, n, "indices are %s; expected i32 or i64", dt_name(ix->type.dt));
  if (ix->type.rank + 1 > MAX_RANK)
    return diag_node(d, g, n, "indices have rank %d; expected at most %d", ix->type.rank, MAX_RANK - 1);
  for (int64_t i = 0; ix->data && i < type_numel(&ix->type); i++) {
    int64_t v = el_get_i(ix->type.dt, ix->data, i);
    if (v < -rows || v >= rows)
      return diag_node(d, g, n, "index %lld out of range [%lld, %lld)", (long long)v, (long long)-rows,
                       (long long)rows);
  }
  Type y = ix->type;
  y.dt = DT_F32;
  y.dims[y.rank++] = cols;
  if (!type_size_ok(&y))
    return diag_node(d, g, n, "Y would be %s; expected at most %lld values", type_str(&y, err, sizeof err),
                     (long long)MAX_NUMEL);
  node_out(g, n, 0)->type = y;
  return true;
}

bool block_gather_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  BqFormat fmt;
  int64_t rows, cols;
  char err[256];
  KILN_ASSERT(block_weight(n, &in[0].type, &fmt, &rows, &cols, err, sizeof err));
  int64_t nk = type_numel(&in[1].type);
  for (int64_t i = 0; i < nk; i++) {
    int64_t j = el_get_i(in[1].type.dt, in[1].data, i);
    if (j < -rows || j >= rows)
      return diag_error(d, "node '%s' (%s): index %lld out of range [%lld, %lld)", n->name, node_op_name(n),
                        (long long)j, (long long)-rows, (long long)rows);
    weight_row(fmt, &in[0], j < 0 ? j + rows : j, (float *)out[0].data + i * cols, cols);
  }
  return true;
}

bool block_gather_emit(Emit *e, const Node *n) {
  BqFormat fmt;
  int64_t rows, cols;
  char err[256];
  if (!block_weight(n, &gval(e->g, n->in[0])->type, &fmt, &rows, &cols, err, sizeof err))
    return false;
  int64_t nk = type_numel(&gval(e->g, n->in[1])->type), rb = gval(e->g, n->in[0])->type.dims[1];
  if (nk == 0 || cols == 0) {
    emit_line(e, "/* empty output: nothing to gather */");
    return true;
  }
  emit_line(e, "/* y[k][:] = row idx[k] of the %s blocks [%lld rows of %lld values], dequantized */",
            bq_formats[fmt].name, (long long)rows, (long long)cols);
  emit_line(e, "for (int k = 0; k < %lld; k++) {", (long long)nk);
  e->indent++;
  emit_line(e, "int64_t j = %s[k];", emit_ref(e, n->in[1]));
  emit_line(e, "if (j < 0)");
  emit_line(e, "  j += %lld;", (long long)rows);
  emit_line(e, "j = j < 0 ? 0 : j > %lld ? %lld : j; /* out of range is undefined: never read outside W */",
            (long long)(rows - 1), (long long)(rows - 1));
  int bv = bq_formats[fmt].block_values;
  emit_line(e, "for (int c = 0; c < %lld; c++) { /* block c of row j */", (long long)(cols / bv));
  e->indent++;
  emit_line(e, "const uint8_t *b = %s + j * %lld + c * %d;", emit_ref(e, n->in[0]), (long long)rb,
            bq_formats[fmt].block_bytes);
  emit_line(e, "float *yb = %s + k * %lld + c * %d;", emit_ref(e, n->out[0]), (long long)cols, bv);
  qgemm_emit_block(e, fmt, "b", "yb");
  e->indent--;
  emit_line(e, "}");
  e->indent--;
  emit_line(e, "}");
  return true;
}
