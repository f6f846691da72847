/* signal.c — ONNX's signal-processing ops (opset 17): the window makers
 * HannWindow, HammingWindow and BlackmanWindow, MelWeightMatrix, DFT (its
 * opset-17 form with `axis` an attribute, and opset 20's with axis an
 * input) and STFT.
 *
 * Sizes fix output shapes, so the window size, the Mel inputs, DFT's
 * dft_length and axis and STFT's frame_step and frame_length are
 * compile-time constants (the const_in bits of their rows). A window or a
 * Mel matrix is then a constant, which infer folds through _eval; _emit
 * runs only for one over the fold cap (a window: a loop of its formula; a
 * Mel matrix: its table).
 *
 * DFT and STFT compute X[k] = sum_n x[n] e^(-2 pi i k n / L) (e^(+...) / L
 * inverse) over a table of the L angles' cosines and sines computed once
 * at compile time, in double: in the C, a radix-2 FFT for a power-of-two L
 * up to FFT_MAX_LEN, else the direct sum (O(L^2) a transform: fine for the
 * frame lengths audio front ends use); _eval always sums directly. One
 * geometry (DftGeom) serves both ops: DFT is a transform along one axis of
 * a batch of signals, STFT a transform of each (windowed) frame. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

/* The largest window or Mel matrix kiln builds, and the longest DFT (a
 * direct sum: folding a constant one costs length^2 per transform). */
#define SIGNAL_MAX_LEN ((int64_t)1 << 24)
#define DFT_MAX_LEN ((int64_t)1 << 16)

/* A constant scalar integer input (size, dft_length, ...) into *v; false +
 * diag when it is not a constant scalar. */
static bool const_scalar(Graph *g, const Node *n, int i, const char *what, int64_t *v, Diag *d) {
  int64_t *vals;
  int len;
  Value *x = node_in(g, n, i);
  if (!dt_is_int(x->type.dt) || x->type.dt == DT_BOOL)
    return diag_node(d, g, n, "input '%s' (%s) is %s; expected an integer scalar", x->name, what,
                     dt_name(x->type.dt));
  if (!const_input_ints(g, n, i, what, &vals, &len, d))
    return false;
  if (len != 1 || x->type.rank > 1)
    return diag_node(d, g, n, "input '%s' (%s) has %d elements; expected a scalar", x->name, what,
                     len);
  *v = vals[0];
  return true;
}

/* The output_datatype attribute of the window and Mel ops (default f32). */
static bool out_dtype(Graph *g, const Node *n, DType *dt, Diag *d) {
  int64_t code = attr_int(n, "output_datatype", DT_F32);
  DType t = code > 0 && code < DT_MAX_ ? (DType)code : DT_UNDEF;
  if (!dt_supported(t) || t == DT_BOOL || t == DT_F16 || t == DT_BF16)
    return diag_node(d, g, n, "output_datatype is %lld; expected the code of f32, f64 or an "
                     "integer type", (long long)code);
  *dt = t;
  return true;
}

static bool flag_attr(Graph *g, const Node *n, const char *name, int64_t dflt, Diag *d) {
  int64_t v = attr_int(n, name, dflt);
  if (v != 0 && v != 1)
    return diag_node(d, g, n, "%s is %lld; expected 0 or 1", name, (long long)v);
  return true;
}

/* ---- HannWindow, HammingWindow, BlackmanWindow -------------------------------- */

/* w[i] = a0 - a1 cos(2 pi i / N') + a2 cos(4 pi i / N'), N' = size when
 * periodic, size - 1 when symmetric. Hann is a0 = a1 = 1/2; Hamming
 * a0 = 25/46; Blackman 0.42, 0.5, 0.08. A symmetric window of one point
 * (N' = 0) is [1], as numpy's and PyTorch's are. */
static void window_coefs(int op, double c[3]) {
  c[2] = 0;
  if (op == OP_HANNWINDOW)
    c[0] = c[1] = 0.5;
  else if (op == OP_HAMMINGWINDOW)
    c[0] = 25.0 / 46.0, c[1] = 21.0 / 46.0;
  else
    c[0] = 0.42, c[1] = 0.5, c[2] = 0.08;
}

static double window_period(const Node *n, int64_t size) {
  return (double)(attr_int(n, "periodic", 1) ? size : size - 1);
}

bool signal_window_infer(Graph *g, Node *n, Diag *d) {
  int64_t size;
  DType dt;
  if (!const_scalar(g, n, 0, "size", &size, d) || !out_dtype(g, n, &dt, d) ||
      !flag_attr(g, n, "periodic", 1, d))
    return false;
  if (size < 0 || size > SIGNAL_MAX_LEN)
    return diag_node(d, g, n, "size is %lld; expected 0 to %lld", (long long)size,
                     (long long)SIGNAL_MAX_LEN);
  Type t = {.dt = dt, .rank = 1, .dims = {size}};
  node_out(g, n, 0)->type = t;
  return true;
}

bool signal_window_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d, (void)in;
  int64_t size = out[0].type.dims[0];
  double c[3], per = window_period(n, size);
  window_coefs(n->op, c);
  for (int64_t i = 0; i < size; i++) {
    double t = 2 * M_PI * (double)i / per;
    el_set_f(out[0].type.dt, out[0].data, i,
             per == 0 ? 1.0 : c[0] - c[1] * cos(t) + c[2] * cos(2 * t));
  }
  return true;
}

/* True when every output of n is already a constant array, which the
 * emitter writes as such. */
static bool output_is_constant(Emit *e, const Node *n) {
  if (!gval(e->g, n->out[0])->data)
    return false;
  emit_line(e, "/* '%s' is a constant array, written at compile time */",
            gval(e->g, n->out[0])->name);
  return true;
}

bool signal_window_emit(Emit *e, const Node *n) {
  if (output_is_constant(e, n))
    return true;
  const Type *yt = &gval(e->g, n->out[0])->type;
  int64_t size = yt->dims[0];
  double c[3], per = window_period(n, size);
  window_coefs(n->op, c);
  const char *y = emit_ref(e, n->out[0]);
  if (size == 0)
    return true;
  if (per == 0) {
    emit_line(e, "%s[0] = 1; /* a one-point symmetric window */", y);
    return true;
  }
  emit_line(e, "/* %s: w[i] = a0 - a1 cos(2 pi i / %lld) + a2 cos(4 pi i / %lld) */",
            node_op_name(n), (long long)per, (long long)per);
  emit_line(e, "for (int64_t i = 0; i < %lld; i++) {", (long long)size);
  emit_line(e, "  double t = %s * (double)i / %s;", emit_double_literal(e, DT_F64, 2 * M_PI),
            emit_double_literal(e, DT_F64, per));
  const char *third = c[2] != 0 ? arena_printf(e->g->arena, " + %s * cos(2 * t)",
                                                emit_double_literal(e, DT_F64, c[2]))
                                  : "";
  emit_line(e, "  %s[i] = (%s)(%s - %s * cos(t)%s);", y, dt_ctype(yt->dt),
            emit_double_literal(e, DT_F64, c[0]), emit_double_literal(e, DT_F64, c[1]), third);
  emit_line(e, "}");
  return true;
}

/* ---- MelWeightMatrix ------------------------------------------------------------ */

/* The matrix [dft_length / 2 + 1, num_mel_bins] of triangular filters
 * whose edges are num_mel_bins + 2 points evenly spaced on the Mel scale
 * (mel = 2595 log10(1 + hz / 700)) from lower_edge_hertz to
 * upper_edge_hertz, each turned into a DFT bin floor((L + 1) hz / rate),
 * as ONNX's reference does. The two edges' Mel values and the step are
 * computed in the edges' own float type, like the reference; the rest in
 * double. Returns false (why in err) when a bin falls outside the matrix. */
static bool mel_bins(const Tensor *in, int64_t nmel, int64_t *bins, char *err, size_t errn) {
  int64_t len = el_get_i(in[1].type.dt, in[1].data, 0), rate = el_get_i(in[2].type.dt, in[2].data, 0);
  DType ft = in[3].type.dt;
  double lo = el_get_f(ft, in[3].data, 0), hi = el_get_f(in[4].type.dt, in[4].data, 0);
  double lo_mel, step;
  if (ft == DT_F32) {
    float l = 2595.0f * log10f(1.0f + (float)lo / 700.0f);
    float h = 2595.0f * log10f(1.0f + (float)hi / 700.0f);
    lo_mel = l, step = (h - l) / (float)(nmel + 2);
  } else {
    lo_mel = 2595.0 * log10(1.0 + lo / 700.0);
    step = (2595.0 * log10(1.0 + hi / 700.0) - lo_mel) / (double)(nmel + 2);
  }
  int64_t nspec = len / 2 + 1;
  for (int64_t i = 0; i < nmel + 2; i++) {
    double hz = 700.0 * (pow(10.0, ((double)i * step + lo_mel) / 2595.0) - 1.0);
    double b = floor((double)(len + 1) * hz / (double)rate);
    /* the last filter's right edge may sit just past the last bin */
    if (!(b >= 0 && (b < (double)nspec || (i == nmel + 1 && b <= (double)nspec)))) {
      snprintf(err, errn, "edge %lld of the Mel filters (%.9g Hz) falls in DFT bin %.17g; expected "
               "edges from 0 Hz to sample_rate / 2, bins 0 to %lld", (long long)i, hz, b,
               (long long)nspec - 1);
      return false;
    }
    bins[i] = (int64_t)b;
  }
  return true;
}

bool mel_infer(Graph *g, Node *n, Diag *d) {
  static const char *names[] = {"num_mel_bins", "dft_length", "sample_rate"};
  int64_t v[3];
  DType dt;
  for (int i = 0; i < 3; i++)
    if (!const_scalar(g, n, i, names[i], &v[i], d))
      return false;
  for (int i = 3; i < 5; i++) {
    Value *x = node_in(g, n, i);
    if (!dt_is_float(x->type.dt) || x->type.dt == DT_F16 || x->type.dt == DT_BF16 ||
        type_numel(&x->type) != 1 || !x->data)
      return diag_node(d, g, n, "input '%s' (%s) is %s; expected a constant f32 or f64 scalar",
                       x->name, i == 3 ? "lower_edge_hertz" : "upper_edge_hertz",
                       dt_name(x->type.dt));
  }
  if (!out_dtype(g, n, &dt, d))
    return false;
  for (int i = 0; i < 3; i++)
    if (v[i] <= 0 || v[i] > SIGNAL_MAX_LEN)
      return diag_node(d, g, n, "%s is %lld; expected 1 to %lld", names[i], (long long)v[i],
                       (long long)SIGNAL_MAX_LEN);
  Tensor in[5];
  for (int i = 0; i < 5; i++)
    in[i] = (Tensor){node_in(g, n, i)->type, node_in(g, n, i)->data};
  if (type_numel(&(Type){.rank = 2, .dims = {v[1] / 2 + 1, v[0]}}) > SIGNAL_MAX_LEN)
    return diag_node(d, g, n, "the matrix is %lld x %lld; expected at most %lld elements",
                     (long long)(v[1] / 2 + 1), (long long)v[0], (long long)SIGNAL_MAX_LEN);
  int64_t *bins = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(v[0] + 2));
  char err[256];
  if (!mel_bins(in, v[0], bins, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  node_out(g, n, 0)->type = (Type){.dt = dt, .rank = 2, .dims = {v[1] / 2 + 1, v[0]}};
  return true;
}

bool mel_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Type *t = &out[0].type;
  int64_t nspec = t->dims[0], nmel = t->dims[1];
  char err[256];
  double *w = calloc((size_t)(nspec * nmel), sizeof *w);
  int64_t *b = malloc(sizeof(int64_t) * (size_t)(nmel + 2));
  if (!w || !b) {
    free(w), free(b);
    return diag_error(d, "node '%s' (MelWeightMatrix): out of memory", n->name);
  }
  bool ok = mel_bins(in, nmel, b, err, sizeof err);
  for (int64_t i = 0; ok && i < nmel; i++) {
    int64_t left = b[i], mid = b[i + 1], right = b[i + 2];
    if (mid == left)
      w[mid * nmel + i] = 1;
    else
      for (int64_t j = left; j <= mid; j++)
        w[j * nmel + i] = (double)(j - left) / (double)(mid - left);
    for (int64_t j = mid; j < right && j < nspec; j++)
      w[j * nmel + i] = (double)(right - j) / (double)(right - mid);
  }
  for (int64_t k = 0; ok && k < nspec * nmel; k++)
    el_set_f(t->dt, out[0].data, k, w[k]);
  free(w), free(b);
  if (!ok)
    return diag_error(d, "node '%s' (MelWeightMatrix): %s", n->name, err);
  return true;
}

/* Only a matrix over the fold cap gets here: its table, computed now. */
bool mel_emit(Emit *e, const Node *n) {
  if (output_is_constant(e, n))
    return true;
  Graph *g = e->g;
  const Type *t = &gval(g, n->out[0])->type;
  Tensor in[5], out = {*t, arena_alloc(g->arena, type_bytes(t))};
  for (int i = 0; i < 5; i++)
    in[i] = (Tensor){node_in(g, n, i)->type, node_in(g, n, i)->data};
  Diag d = {0};
  if (!mel_eval(n, in, &out, &d))
    return false;
  const char *tab = emit_const_array(e, t->dt, out.data, type_numel(t), "mel_weights",
                                     "MelWeightMatrix's filters, computed at compile time");
  emit_line(e, "memcpy(%s, %s, %zu);", emit_ref(e, n->out[0]), tab, type_bytes(t));
  return true;
}

/* ---- DFT and STFT ---------------------------------------------------------------- */

/* Transforms of length len over two batch loops (a, b), in elements of x
 * and y: sample n of transform (a, b) is x[a*xa + b*xb + n*xn] (and the
 * imaginary part next to it when cin is 2), bin k goes to y[a*ya + b*yb +
 * k*yk] and the one after it. Samples past nsum are zeros (dft_length
 * longer than the signal); bins past `bins` are not written (onesided). */
typedef struct DftGeom {
  int64_t na, nb;
  int64_t xa, xb, xn;
  int64_t ya, yb, yk;
  int64_t nsum, len, bins;
  int cin;
  bool inverse;
  int window;  /* STFT's window input slot, or -1 */
} DftGeom;

/* DFT: axis and length from the node (attribute axis before opset 20, an
 * input from 20; dft_length an input), the signal's type; false + err. */
static bool dft_geom(const Node *n, const Type *x, const Tensor *len_in, const Tensor *axis_in,
                     DftGeom *q, Type *out, char *err, size_t errn) {
  int r = x->rank;
  if (r < 2 || (x->dims[r - 1] != 1 && x->dims[r - 1] != 2)) {
    snprintf(err, errn, "input is %s of rank %d with last dim %lld; expected [..., N, 1] (real) or "
             "[..., N, 2] (complex)", dt_name(x->dt), r, (long long)(r ? x->dims[r - 1] : 0));
    return false;
  }
  int64_t axis = n->opset >= 20 ? -2 : attr_int(n, "axis", 1);
  if (n->opset >= 20 && axis_in && axis_in->data)
    axis = el_get_i(axis_in->type.dt, axis_in->data, 0);
  if (axis < -r || axis > r - 2 || axis == -1) {
    snprintf(err, errn, "axis is %lld; expected a signal axis, in [%d, %d] or [0, %d]",
             (long long)axis, -r, -2, r - 2);
    return false;
  }
  if (axis < 0)
    axis += r;
  int64_t nin = x->dims[axis], len = nin;
  if (len_in && len_in->data)
    len = el_get_i(len_in->type.dt, len_in->data, 0);
  if (len < 1 || len > DFT_MAX_LEN) {
    snprintf(err, errn, "dft_length is %lld; expected 1 to %lld", (long long)len,
             (long long)DFT_MAX_LEN);
    return false;
  }
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; d++)
    outer *= x->dims[d];
  for (int d = (int)axis + 1; d < r - 1; d++)
    inner *= x->dims[d];
  int cin = (int)x->dims[r - 1];
  bool onesided = attr_int(n, "onesided", 0) != 0;
  int64_t bins = onesided ? len / 2 + 1 : len;
  *q = (DftGeom){.na = outer, .nb = inner, .xa = nin * inner * cin, .xb = cin,
                 .xn = inner * cin, .ya = bins * inner * 2, .yb = 2, .yk = inner * 2,
                 .nsum = nin < len ? nin : len, .len = len, .bins = bins, .cin = cin,
                 .inverse = attr_int(n, "inverse", 0) != 0, .window = -1};
  *out = *x;
  out->dims[axis] = bins;
  out->dims[r - 1] = 2;
  return true;
}

/* STFT: signal [batch, length, 1 or 2], frames of frame_length samples
 * every frame_step, each times the window (when given) and transformed. */
static bool stft_geom(const Node *n, const Type *x, const Tensor *step_in, const Type *win,
                      const Tensor *flen_in, DftGeom *q, Type *out, char *err, size_t errn) {
  if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2)) {
    snprintf(err, errn, "signal has rank %d; expected [batch, length, 1] (real) or [batch, "
             "length, 2] (complex)", x->rank);
    return false;
  }
  int64_t length = x->dims[1], step = el_get_i(step_in->type.dt, step_in->data, 0);
  int64_t fl = win ? win->dims[0] : length;
  if (flen_in && flen_in->data) {
    int64_t v = el_get_i(flen_in->type.dt, flen_in->data, 0);
    if (win && v != fl) {
      snprintf(err, errn, "frame_length is %lld and the window has %lld samples; expected them "
               "equal", (long long)v, (long long)fl);
      return false;
    }
    fl = v;
  }
  if (step < 1) {
    snprintf(err, errn, "frame_step is %lld; expected at least 1", (long long)step);
    return false;
  }
  if (fl < 1 || fl > length || fl > DFT_MAX_LEN) {
    snprintf(err, errn, "frame_length is %lld; expected 1 to the signal's length %lld (and at "
             "most %lld)", (long long)fl, (long long)length, (long long)DFT_MAX_LEN);
    return false;
  }
  int cin = (int)x->dims[2];
  int64_t frames = 1 + (length - fl) / step;
  int64_t bins = attr_int(n, "onesided", 1) ? fl / 2 + 1 : fl;
  *q = (DftGeom){.na = x->dims[0], .nb = frames, .xa = length * cin, .xb = step * cin,
                 .xn = cin, .ya = frames * bins * 2, .yb = bins * 2, .yk = 2, .nsum = fl,
                 .len = fl, .bins = bins, .cin = cin, .inverse = false,
                 .window = win ? 2 : -1};
  *out = (Type){.dt = x->dt, .rank = 4, .dims = {x->dims[0], frames, bins, 2}};
  return true;
}

/* The plan of node n from its values (types, and the data of its constant
 * inputs) in t[4]. */
static bool dft_plan(const Node *n, const Tensor *t, DftGeom *q, Type *out, char *err, size_t errn) {
  if (n->op == OP_DFT)
    return dft_geom(n, &t[0].type, &t[1], &t[2], q, out, err, errn);
  return stft_geom(n, &t[0].type, &t[1], t[2].type.rank ? &t[2].type : NULL, &t[3], q, out, err,
                   errn);
}

static void node_tensors(const Graph *g, const Node *n, Tensor *t) {
  for (int i = 0; i < 4; i++) {
    const Value *v = node_in(g, n, i);
    t[i] = v ? (Tensor){v->type, v->data} : (Tensor){{0}, NULL};
  }
}

bool dft_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  if (x->type.dt != DT_F32 && x->type.dt != DT_F64)
    return diag_node(d, g, n, "input '%s' is %s; expected f32 or f64", x->name, dt_name(x->type.dt));
  int64_t v;
  if (n->op == OP_DFT) {
    if (!flag_attr(g, n, "inverse", 0, d) || !flag_attr(g, n, "onesided", 0, d))
      return false;
    if (n->opset >= 20 && attr_get(n, "axis"))
      return diag_node(d, g, n, "has an 'axis' attribute at opset %d; expected axis as the third "
                       "input (from opset 20)", n->opset);
    if (n->opset < 20 && n->nin > 2)
      return diag_node(d, g, n, "has %d inputs at opset %d; expected at most 2 (axis becomes an "
                       "input at opset 20)", n->nin, n->opset);
    if (node_has_in(n, 1) && !const_scalar(g, n, 1, "dft_length", &v, d))
      return false;
    if (node_has_in(n, 2) && !const_scalar(g, n, 2, "axis", &v, d))
      return false;
  } else {
    Value *w = node_in(g, n, 2);
    if (!flag_attr(g, n, "onesided", 1, d) || !const_scalar(g, n, 1, "frame_step", &v, d))
      return false;
    if (node_has_in(n, 3) && !const_scalar(g, n, 3, "frame_length", &v, d))
      return false;
    if (w && (w->type.rank != 1 || w->type.dt != x->type.dt))
      return diag_node(d, g, n, "window '%s' is %s of rank %d; expected a 1-D %s tensor", w->name,
                       dt_name(w->type.dt), w->type.rank, dt_name(x->type.dt));
  }
  Tensor t[4];
  node_tensors(g, n, t);
  DftGeom q;
  Type out;
  char err[256];
  if (!dft_plan(n, t, &q, &out, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  node_out(g, n, 0)->type = out;
  return true;
}

/* cos and sin of 2 pi m / len for m in [0, len): the twiddles of every
 * transform of that length (arena memory when a is given, else malloc). */
static double *twiddles(Arena *a, int64_t len) {
  size_t bytes = sizeof(double) * 2 * (size_t)len;
  double *tw = a ? arena_alloc(a, bytes) : malloc(bytes);
  for (int64_t m = 0; tw && m < len; m++) {
    tw[m] = cos(2 * M_PI * (double)m / (double)len);
    tw[len + m] = sin(2 * M_PI * (double)m / (double)len);
  }
  return tw;
}

bool dft_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  Tensor t[4] = {{{0}, NULL}};
  for (int i = 0; i < n->nin && i < 4; i++)
    t[i] = in[i];
  DftGeom q;
  Type ot;
  char err[256];
  if (!dft_plan(n, t, &q, &ot, err, sizeof err))
    return diag_error(d, "node '%s' (%s): %s", n->name, node_op_name(n), err);
  double *tw = twiddles(NULL, q.len);
  if (!tw)
    return diag_error(d, "node '%s' (%s): out of memory", n->name, node_op_name(n));
  DType dt = in[0].type.dt;
  double sgn = q.inverse ? 1 : -1, scale = q.inverse ? 1.0 / (double)q.len : 1;
  for (int64_t a = 0; a < q.na; a++)
    for (int64_t b = 0; b < q.nb; b++)
      for (int64_t k = 0; k < q.bins; k++) {
        int64_t x0 = a * q.xa + b * q.xb, m = 0;
        double re = 0, im = 0;
        for (int64_t s = 0; s < q.nsum; s++) {
          double w = q.window >= 0 ? el_get_f(dt, in[q.window].data, s) : 1;
          double xr = el_get_f(dt, in[0].data, x0 + s * q.xn) * w;
          double xi = q.cin == 2 ? el_get_f(dt, in[0].data, x0 + s * q.xn + 1) * w : 0;
          double c = tw[m], sn = sgn * tw[q.len + m];
          re += xr * c - xi * sn;
          im += xi * c + xr * sn;
          m += k;
          if (m >= q.len)
            m -= q.len;
        }
        int64_t y0 = a * q.ya + b * q.yb + k * q.yk;
        el_set_f(dt, out[0].data, y0, re * scale);
        el_set_f(dt, out[0].data, y0 + 1, im * scale);
      }
  free(tw);
  return true;
}

/* A power-of-two length up to FFT_MAX_LEN gets a radix-2 FFT in the C
 * (two stack arrays of that many doubles): O(L log L) against the direct
 * sum's O(L^2). _eval keeps the direct sum, the plainer reference; both
 * sum in double, so they differ only by rounding. */
#define FFT_MAX_LEN 4096

/* The FFT: the (windowed) samples in bit-reversed order into re/im, zeros
 * past nsum, then log2(L) passes of butterflies over the twiddle table. */
static void emit_fft(Emit *e, const DftGeom *q, const char *T, const char *X, const char *W,
                     const char *Y, const char *tw) {
  Graph *g = e->g;
  long long L = (long long)q->len;
  int bits = 0;
  while ((1LL << bits) < L)
    bits++;
  int64_t *rev = arena_alloc(g->arena, sizeof(int64_t) * (size_t)L);
  for (int64_t j = 0; j < L; j++) {
    int64_t r = 0;
    for (int b = 0; b < bits; b++)
      r |= (j >> b & 1) << (bits - 1 - b);
    rev[j] = r;
  }
  const char *R = emit_const_array(e, DT_I64, rev, L, "bitrev",
                                   arena_printf(g->arena, "the bit-reversed order of %lld", L));
  const char *w = W ? arena_printf(g->arena, " * (double)%s[s]", W) : "";
  emit_line(e, "/* %s: %lld bins of a length-%lld %sDFT of %s samples, a radix-2 FFT */",
            q->window >= 0 ? "STFT" : "DFT", (long long)q->bins, L, q->inverse ? "inverse " : "",
            q->cin == 2 ? "complex" : "real");
  emit_line(e, "for (int64_t a = 0; a < %lld; a++)", (long long)q->na);
  emit_line(e, "  for (int64_t b = 0; b < %lld; b++) {", (long long)q->nb);
  emit_line(e, "    const %s *x = %s + a * %lld + b * %lld;", T, X, (long long)q->xa, (long long)q->xb);
  emit_line(e, "    %s *y = %s + a * %lld + b * %lld;", T, Y, (long long)q->ya, (long long)q->yb);
  emit_line(e, "    double re[%lld], im[%lld];", L, L);
  emit_line(e, "    for (int64_t j = 0; j < %lld; j++) {", L);
  emit_line(e, "      int64_t s = %s[j];", R);
  if (q->nsum < q->len) {
    emit_line(e, "      if (s >= %lld) {", (long long)q->nsum);
    emit_line(e, "        re[j] = im[j] = 0;");
    emit_line(e, "        continue;");
    emit_line(e, "      }");
  }
  emit_line(e, "      re[j] = (double)x[s * %lld]%s;", (long long)q->xn, w);
  emit_line(e, "      im[j] = %s;",
            q->cin == 2 ? arena_printf(g->arena, "(double)x[s * %lld + 1]%s", (long long)q->xn, w)
                        : "0");
  emit_line(e, "    }");
  emit_line(e, "    for (int64_t h = 1; h < %lld; h *= 2) {", L);
  emit_line(e, "      int64_t step = %lld / (2 * h); /* twiddle j of a span is e^(%s2 pi i j / 2h) */",
            L, q->inverse ? "+" : "-");
  emit_line(e, "      for (int64_t i = 0; i < %lld; i += 2 * h)", L);
  emit_line(e, "        for (int64_t j = 0; j < h; j++) {");
  emit_line(e, "          double c = %s[j * step], sn = %s%s[%lld + j * step];", tw,
            q->inverse ? "" : "-", tw, L);
  emit_line(e, "          double vr = re[i + j + h] * c - im[i + j + h] * sn;");
  emit_line(e, "          double vi = re[i + j + h] * sn + im[i + j + h] * c;");
  emit_line(e, "          re[i + j + h] = re[i + j] - vr;");
  emit_line(e, "          im[i + j + h] = im[i + j] - vi;");
  emit_line(e, "          re[i + j] += vr;");
  emit_line(e, "          im[i + j] += vi;");
  emit_line(e, "        }");
  emit_line(e, "    }");
  emit_line(e, "    for (int64_t k = 0; k < %lld; k++) {", (long long)q->bins);
  if (q->inverse) {
    const char *sc = emit_double_literal(e, DT_F64, 1.0 / (double)q->len);
    emit_line(e, "      y[k * %lld] = (%s)(re[k] * %s);", (long long)q->yk, T, sc);
    emit_line(e, "      y[k * %lld + 1] = (%s)(im[k] * %s);", (long long)q->yk, T, sc);
  } else {
    emit_line(e, "      y[k * %lld] = (%s)re[k];", (long long)q->yk, T);
    emit_line(e, "      y[k * %lld + 1] = (%s)im[k];", (long long)q->yk, T);
  }
  emit_line(e, "    }");
  emit_line(e, "  }");
}

bool dft_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  Tensor t[4];
  node_tensors(g, n, t);
  DftGeom q;
  Type ot;
  char err[256];
  if (!dft_plan(n, t, &q, &ot, err, sizeof err))
    return false;
  if (type_numel(&ot) == 0)
    return true;
  const char *T = dt_ctype(t[0].type.dt);
  const char *X = emit_ref(e, n->in[0]);
  const char *W = q.window >= 0 ? emit_ref(e, n->in[q.window]) : NULL;
  const char *Y = emit_ref(e, n->out[0]);
  const char *tw = emit_const_array(e, DT_F64, twiddles(g->arena, q.len), 2 * q.len, "twiddles",
                                    arena_printf(g->arena, "cos, then sin, of 2 pi m / %lld",
                                                 (long long)q.len));
  if (q.len >= 2 && q.len <= FFT_MAX_LEN && (q.len & (q.len - 1)) == 0) {
    emit_fft(e, &q, T, X, W, Y, tw);
    return true;
  }
  emit_line(e, "/* %s: %lld bins of a length-%lld %sDFT of %s samples, each a direct sum "
            "over the twiddle table */", node_op_name(n), (long long)q.bins, (long long)q.len,
            q.inverse ? "inverse " : "", q.cin == 2 ? "complex" : "real");
  emit_line(e, "for (int64_t a = 0; a < %lld; a++)", (long long)q.na);
  emit_line(e, "  for (int64_t b = 0; b < %lld; b++) {", (long long)q.nb);
  emit_line(e, "    const %s *x = %s + a * %lld + b * %lld;", T, X, (long long)q.xa, (long long)q.xb);
  emit_line(e, "    %s *y = %s + a * %lld + b * %lld;", T, Y, (long long)q.ya, (long long)q.yb);
  emit_line(e, "    for (int64_t k = 0; k < %lld; k++) {", (long long)q.bins);
  emit_line(e, "      double re = 0, im = 0;");
  emit_line(e, "      int64_t m = 0; /* k * s mod %lld */", (long long)q.len);
  emit_line(e, "      for (int64_t s = 0; s < %lld; s++) {", (long long)q.nsum);
  const char *w = W ? arena_printf(g->arena, " * (double)%s[s]", W) : "";
  emit_line(e, "        double xr = (double)x[s * %lld]%s;", (long long)q.xn, w);
  emit_line(e, "        double xi = %s;",
            q.cin == 2 ? arena_printf(g->arena, "(double)x[s * %lld + 1]%s", (long long)q.xn, w)
                       : "0");
  emit_line(e, "        double c = %s[m], sn = %s%s[%lld + m];", tw, q.inverse ? "" : "-", tw,
            (long long)q.len);
  emit_line(e, "        re += xr * c - xi * sn;");
  emit_line(e, "        im += xi * c + xr * sn;");
  emit_line(e, "        m += k;");
  emit_line(e, "        if (m >= %lld)", (long long)q.len);
  emit_line(e, "          m -= %lld;", (long long)q.len);
  emit_line(e, "      }");
  if (q.inverse) {
    emit_line(e, "      y[k * %lld] = (%s)(re * %s);", (long long)q.yk, T,
              emit_double_literal(e, DT_F64, 1.0 / (double)q.len));
    emit_line(e, "      y[k * %lld + 1] = (%s)(im * %s);", (long long)q.yk, T,
              emit_double_literal(e, DT_F64, 1.0 / (double)q.len));
  } else {
    emit_line(e, "      y[k * %lld] = (%s)re;", (long long)q.yk, T);
    emit_line(e, "      y[k * %lld + 1] = (%s)im;", (long long)q.yk, T);
  }
  emit_line(e, "    }");
  emit_line(e, "  }");
  return true;
}

/* A complex multiply-add (8) per sample and bin. */
int64_t dft_flops(const Graph *g, const Node *n) {
  Tensor t[4];
  node_tensors(g, n, t);
  DftGeom q;
  Type ot;
  char err[256];
  if (!dft_plan(n, t, &q, &ot, err, sizeof err))
    return 0;
  return 8 * q.na * q.nb * q.bins * q.nsum;
}
