/* quantize.c — the quantize pass (--quantize=int8): weight-only int8.
 *
 * Every constant f32 weight of a matrix product becomes an int8 constant
 * with one f32 scale per output channel, symmetric (zero point 0):
 *
 *   Linear(X, W[K,N], ...)       -> Linear(X, Wq i8[K,N], ..., W_scale f32[N])
 *   MatMul(X, W[K,N]) (unfused)  -> Linear(X, Wq, _, _, W_scale) {act="none"}
 *   Gather(T[V,D], idx) (axis 0) -> DequantizeGather(Tq i8[V,D], idx, T_scale f32[V])
 *
 * scale[n] = max_k |W[k,n]| / 127 (rounded to f32), Wq = round-half-even
 * (W / scale) clamped to [-127, 127]; a column of zeros gets scale 1 (its
 * zeros are exact with any scale). Embedding tables of 32 rows and more get
 * a scale per row: each gathered row is one token's vector (scales per
 * group of 32 entries were tried on MiniLM: no better, 1.3 MB more). Activations, LayerNorm, softmax
 * and attention stay f32; so do weights with a non-finite value.
 *
 * A weight read by several nodes is quantized once. It runs after fuse
 * (so the Linear it rewrites already carries its bias and activation) and
 * before plan; without --quantize it does nothing. Each weight's
 * error (max and RMS of W - Wq·scale, against the weight's RMS) goes into
 * o->quant_report for compile -v, info and check.
 *
 * --quantize=w8a8 does all of the above and also marks each Linear with an
 * int8 W as quantizing its input X at run time, per row, to u8 with a zero
 * point: {act_quant="u8"} and a sixth input W_colsum i32[N] = Σ_k Wq[k,n],
 * which the kernel needs for the zero point's term (compiler/ops/fused.c
 * has the arithmetic, DESIGN.md "w8a8" the why). A Linear whose K is too
 * large for an exact int32 sum (255·127·K >= 2^31) keeps f32 activations.
 *
 * When K is a multiple of 16, w8a8 also rotates: X·W = (X·H)·(H·W)/B for
 * H the block-diagonal Hadamard matrix of ±1 with blocks of B = 64, 32 or
 * 16 (the largest dividing K; H·H = B·I). The Linear gets {act_rot=B}
 * (its X's rows are multiplied by H before they are quantized) and its W
 * is H·W/B, made here in double from the f32 W and then quantized like any
 * weight. The rotation spreads a row's few large channels (BERT's LayerNorm
 * outputs have them) over the block, so the row's u8 step shrinks: on the
 * real MiniLM the sentence embedding's cosine with f32 went from 0.9981 to
 * 0.9993 on the sentence-pair data (0.9993 for int8, weight-only). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../ir/build.h"
#include "../ir/ops.h"
#include "passes.h"

/* One weight's quantized form: the int8 constant and its scales. */
typedef struct QWeight {
  int q, scale;
  int colsum; /* w8a8: Σ_k Wq[k,n], i32[N], made on first use (-1 until then) */
  int rot;    /* w8a8, on the f32 W: its rotated form H·W/B (-1 until made) */
} QWeight;

typedef struct Quantizer {
  Graph *g;
  const PassOptions *o;
  QWeight *done; /* per value id: q = -1 until quantized */
  int nvals;
  int cap;       /* done's length: the ids the pass may create included */
} Quantizer;

/* Scale and int8 values of `len` weights at w[i * stride], i < len: the
 * column n of W[K,N] (stride N) or row v of T[V,D] (stride 1). */
static float quantize_line(const float *w, int64_t len, int64_t stride, int8_t *q, int64_t qstride) {
  double amax = 0;
  for (int64_t i = 0; i < len; i++)
    amax = fmax(amax, fabs(w[i * stride]));
  float s = (float)(amax / 127);
  if (s == 0) /* zeros (or weights so tiny that the scale underflows) */
    s = 1;
  for (int64_t i = 0; i < len; i++) {
    double r = nearbyint((double)w[i * stride] / s); /* ties to even: the default rounding mode */
    q[i * qstride] = (int8_t)(r > 127 ? 127 : r < -127 ? -127 : r);
  }
  return s;
}

static bool all_finite(const float *w, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(w[i]))
      return false;
  return true;
}

/* |W - Wq·scale| into l: max and RMS, and W's RMS. */
static void measure(QuantLayer *l, const float *w, const int8_t *q, const float *scale, int64_t rows,
                    int64_t cols, bool per_row) {
  double se = 0, sw = 0, emax = 0;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      int64_t i = r * cols + c;
      double err = fabs((double)w[i] - (double)q[i] * scale[per_row ? r : c]);
      emax = fmax(emax, err);
      se += err * err;
      sw += (double)w[i] * w[i];
    }
  double n = (double)(rows * cols > 0 ? rows * cols : 1);
  l->rms = sqrt(sw / n);
  l->err_max = emax;
  l->err_rms = sqrt(se / n);
}

static void report(Quantizer *qz, const Node *n, int w, const QWeight *qw, bool per_row) {
  QuantReport *r = qz->o->quant_report;
  Graph *g = qz->g;
  const Value *wv = gval(g, w);
  int64_t rows = wv->type.dims[0], cols = wv->type.dims[1];
  if (r) {
    QuantLayer l = {.node = n->origin ? n->origin : n->name, .op = node_op_name(n), .weight = wv->name,
                    .out = gval(g, n->out[0])->name, .type = wv->type, .per_row = per_row};
    measure(&l, wv->data, gval(g, qw->q)->data, gval(g, qw->scale)->data, rows, cols, per_row);
    r->layers = arena_grow(g->arena, r->layers, &r->cap, r->n + 1, sizeof *r->layers);
    r->layers[r->n++] = l;
    r->f32_bytes += (int64_t)type_bytes(&wv->type);
    r->q_bytes += (int64_t)(type_bytes(&gval(g, qw->q)->type) + type_bytes(&gval(g, qw->scale)->type));
  }
}

/* The int8 form of constant w (f32 [rows, cols]), made on first use. */
static const QWeight *quantize_weight(Quantizer *qz, const Node *n, int w, bool per_row) {
  Graph *g = qz->g;
  KILN_ASSERT(w < qz->cap);
  QWeight *qw = &qz->done[w];
  if (qw->q >= 0)
    return qw;
  Type t = gval(g, w)->type;
  const float *data = gval(g, w)->data;
  if (!all_finite(data, type_numel(&t))) {
    if (qz->o->quant_report)
      qz->o->quant_report->kept++;
    if (qz->o->verbose)
      fprintf(stderr, "quantize: %s '%s' stays f32: it holds inf or NaN\n", node_op_name(n), gval(g, w)->name);
    return NULL;
  }
  int64_t rows = t.dims[0], cols = t.dims[1], lines = per_row ? rows : cols;
  const char *name = gval(g, w)->name;
  int q = ir_const(g, arena_printf(g->arena, "%s.int8", name), DT_I8, 2, t.dims, NULL);
  int s = ir_const(g, arena_printf(g->arena, "%s.scale", name), DT_F32, 1, &lines, NULL);
  int8_t *qd = gval(g, q)->data;
  float *sd = gval(g, s)->data;
  data = gval(g, w)->data; /* ir_const may move the value array, never the data */
  for (int64_t i = 0; i < lines; i++)
    sd[i] = per_row ? quantize_line(data + i * cols, cols, 1, qd + i * cols, 1)
                    : quantize_line(data + i, rows, cols, qd + i, cols);
  qw = &qz->done[w];
  *qw = (QWeight){q, s, -1, -1};
  report(qz, n, w, qw, per_row);
  return qw;
}

/* A constant f32 matrix: what can be quantized. */
static bool f32_matrix(const Graph *g, int v) {
  const Value *x = v >= 0 ? gval(g, v) : NULL;
  return x && x->data && !x->is_input && x->type.dt == DT_F32 && x->type.rank == 2;
}

static void set_inputs(Graph *g, Node *n, const int *in, int nin) {
  n->in = arena_dup(g->arena, in, sizeof(int) * (size_t)nin);
  n->nin = nin;
}

/* The largest K whose u8 x s8 sums are exact in int32: 255·127·K < 2^31. */
#define W8A8_MAX_K (INT32_MAX / (255 * 127))

/* w8a8: W_colsum[n] = Σ_k Wq[k,n] of the int8 weight qw (once per weight). */
static int weight_colsum(Quantizer *qz, QWeight *qw, const char *name) {
  Graph *g = qz->g;
  if (qw->colsum >= 0)
    return qw->colsum;
  Type t = gval(g, qw->q)->type;
  int64_t k = t.dims[0], n = t.dims[1];
  int c = ir_const(g, arena_printf(g->arena, "%s.colsum", name), DT_I32, 1, &n, NULL);
  const int8_t *q = gval(g, qw->q)->data;
  int32_t *cs = gval(g, c)->data;
  for (int64_t j = 0; j < n; j++) {
    int32_t sum = 0;
    for (int64_t i = 0; i < k; i++)
      sum += q[i * n + j];
    cs[j] = sum;
  }
  qw->colsum = c;
  if (qz->o->quant_report) /* the bytes the quantized weight takes */
    qz->o->quant_report->q_bytes += 4 * n;
  return c;
}

/* w8a8: the block of the rotation for K rows of W: 64, 32 or 16, the
 * largest dividing K; 0 (no rotation) when none does. */
static int rot_block(int64_t k) {
  return k % 64 == 0 ? 64 : k % 32 == 0 ? 32 : k % 16 == 0 ? 16 : 0;
}

/* w8a8: the constant H·W/B for f32 W[K,N] (H block-diagonal Hadamard, B =
 * rot_block(K)), in double: the butterflies of a fast Walsh-Hadamard
 * transform down each column, in the order Linear's _eval uses on X. */
static int rotated_weight(Quantizer *qz, int w) {
  Graph *g = qz->g;
  if (qz->done[w].rot >= 0)
    return qz->done[w].rot;
  Type t = gval(g, w)->type;
  int64_t k = t.dims[0], n = t.dims[1];
  int b = rot_block(k);
  int r = ir_const(g, arena_printf(g->arena, "%s.rot", gval(g, w)->name), DT_F32, 2, t.dims, NULL);
  const float *wd = gval(g, w)->data;
  float *rd = gval(g, r)->data;
  double *col = arena_alloc(g->arena, sizeof(double) * (size_t)k);
  for (int64_t j = 0; j < n; j++) {
    for (int64_t i = 0; i < k; i++)
      col[i] = wd[i * n + j];
    for (int64_t b0 = 0; b0 < k; b0 += b)
      for (int h = 1; h < b; h *= 2)
        for (int64_t i = b0; i < b0 + b; i += 2 * h)
          for (int64_t c = i; c < i + h; c++) {
            double p = col[c], q = col[c + h];
            col[c] = p + q;
            col[c + h] = p - q;
          }
    for (int64_t i = 0; i < k; i++)
      rd[i * n + j] = (float)(col[i] / b);
  }
  qz->done[w].rot = r;
  return r;
}

/* w8a8: Linear n (int8 W, five inputs) quantizes its X to u8 per row at
 * run time, when its sums fit int32. */
static void mark_act_quant(Quantizer *qz, Node *n, QWeight *qw, const char *name) {
  Graph *g = qz->g;
  QuantReport *r = qz->o->quant_report;
  if (gval(g, qw->q)->type.dims[0] > W8A8_MAX_K) {
    if (r)
      r->act_f32++;
    if (qz->o->verbose)
      fprintf(stderr, "quantize: Linear '%s' keeps f32 activations: K %lld > %d, int32 sums could overflow\n",
              n->name, (long long)gval(g, qw->q)->type.dims[0], W8A8_MAX_K);
    return;
  }
  int in[6];
  memcpy(in, n->in, sizeof(int) * 5);
  in[5] = weight_colsum(qz, qw, name);
  set_inputs(g, n, in, 6);
  Attr *a = node_add_attr(g, n, "act_quant", ATTR_STRING);
  a->s = "u8";
  int b = rot_block(gval(g, qw->q)->type.dims[0]);
  if (b) {
    a = node_add_attr(g, n, "act_rot", ATTR_INT);
    a->i = b;
  }
  if (r)
    r->act_u8++;
}

/* Linear with an f32 W, or MatMul by a constant f32 W (made a Linear). */
static void quantize_product(Quantizer *qz, Node *n) {
  Graph *g = qz->g;
  int x = n->in[0], w = n->in[1];
  if (x < 0 || gval(g, x)->type.dt != DT_F32 || !f32_matrix(g, w) || (n->op == OP_LINEAR && node_has_in(n, 4)))
    return;
  int64_t k = gval(g, w)->type.dims[0];
  const char *wname = gval(g, w)->name;
  bool w8a8 = qz->o->quantize == QUANT_W8A8 && k <= W8A8_MAX_K;
  /* X·W = (X·H)·(H·W/B): mark_act_quant below gives the Linear its act_rot
   * for the same K (w8a8 and K <= W8A8_MAX_K: it always marks) */
  if (w8a8 && rot_block(k) && all_finite(gval(g, w)->data, type_numel(&gval(g, w)->type)))
    w = rotated_weight(qz, w);
  const QWeight *qw = quantize_weight(qz, n, w, false);
  if (!qw)
    return;
  int in[5] = {x, qw->q, -1, -1, qw->scale};
  for (int i = 2; i < 4 && n->op == OP_LINEAR; i++)
    in[i] = node_has_in(n, i) ? n->in[i] : -1;
  if (n->op == OP_MATMUL) {
    n->op = OP_LINEAR;
    Attr *a = node_add_attr(g, n, "act", ATTR_STRING);
    a->s = "none";
  }
  set_inputs(g, n, in, 5);
  if (qz->o->quantize == QUANT_W8A8)
    mark_act_quant(qz, n, &qz->done[w], wname);
  Diag d = {0};
  KILN_ASSERT(op_table[OP_LINEAR].infer(g, n, &d));
}

/* Tables of fewer rows stay f32: they save nothing worth having and each
 * row is read often, so int8's error on them costs more than it saves
 * (MiniLM: the 2-row token-type table alone gave 3.4% RMS error on its
 * output, and the embedding's cosine with PyTorch went 0.99892 -> 0.9990). */
#define QUANT_MIN_TABLE_ROWS 32

/* Gather(T, idx) on axis 0 of a constant f32 table T[V,D]. */
static void quantize_table(Quantizer *qz, Node *n) {
  Graph *g = qz->g;
  int t = n->in[0];
  int axis;
  if (!f32_matrix(g, t) || !axis_norm(attr_int(n, "axis", 0), 2, &axis) || axis != 0 ||
      gval(g, t)->type.dims[0] < QUANT_MIN_TABLE_ROWS)
    return;
  const QWeight *qw = quantize_weight(qz, n, t, true);
  if (!qw)
    return;
  int in[3] = {qw->q, n->in[1], qw->scale};
  n->op = OP_DEQUANTIZEGATHER;
  n->nattr = 0;
  n->attrs = NULL;
  set_inputs(g, n, in, 3);
  Diag d = {0};
  KILN_ASSERT(op_table[OP_DEQUANTIZEGATHER].infer(g, n, &d));
}

bool pass_quantize(Graph *g, const PassOptions *o, Diag *d) {
  (void)d;
  if (o->quantize == QUANT_NONE)
    return true;
  if (o->quant_report)
    o->quant_report->mode = o->quantize;
  Quantizer qz = {.g = g, .o = o, .nvals = g->nvals};
  /* w8a8 makes a rotated f32 weight before quantizing it: room for those */
  qz.cap = o->quantize == QUANT_W8A8 ? 5 * g->nvals + 8 : g->nvals + 1;
  qz.done = arena_alloc(g->arena, sizeof(QWeight) * (size_t)qz.cap);
  for (int v = 0; v < qz.cap; v++)
    qz.done[v].q = qz.done[v].rot = -1;
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = &g->nodes[i];
    if (n->dead || n->nin < 2 || n->in[1] >= qz.nvals || n->in[0] >= qz.nvals)
      continue;
    if (n->op == OP_LINEAR || n->op == OP_MATMUL)
      quantize_product(&qz, n);
    else if (n->op == OP_GATHER)
      quantize_table(&qz, n);
  }
  return true;
}

void quant_report_print(Buf *b, const QuantReport *r) {
  buf_printf(b, "int8      %-14s %-8s %-10s %10s %10s  %s\n", "weight", "op", "scale per", "max err",
             "RMS err", "(over the weight's RMS) node 'weight'");
  char ts[160];
  for (int i = 0; i < r->n; i++) {
    const QuantLayer *l = &r->layers[i];
    double rms = l->rms ? l->rms : 1;
    buf_printf(b, "          %-14s %-8s %-10s %10.3g %10.3g  %s '%s'\n", type_str(&l->type, ts, sizeof ts),
               l->op, l->per_row ? "row" : "column", l->err_max / rms, l->err_rms / rms, l->node, l->weight);
  }
  buf_printf(b, "          %d weights: %lld bytes f32 -> %lld bytes int8 + scales%s (%.2fx smaller)\n", r->n,
             (long long)r->f32_bytes, (long long)r->q_bytes, r->mode == QUANT_W8A8 ? " + column sums" : "",
             r->q_bytes ? (double)r->f32_bytes / (double)r->q_bytes : 0.0);
  if (r->kept)
    buf_printf(b, "          %d weights stay f32: they hold inf or NaN\n", r->kept);
  if (r->mode == QUANT_W8A8)
    buf_printf(b, "w8a8      %d Linears quantize their input to u8 per row; %d keep it f32 (K > %d)\n",
               r->act_u8, r->act_f32, W8A8_MAX_K);
}
