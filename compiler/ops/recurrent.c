/* recurrent.c — the recurrent layers RNN, GRU and LSTM (ONNX opsets 1, 3
 * (GRU), 7, 14 (layout), 22; family `recurrent`): a sequence X run through
 * one or two directions of a cell whose state h (and LSTM's c) carries
 * from step to step.
 *
 *   RNN   h = f(x·Wᵢᵀ + h·Rᵢᵀ + Wbᵢ + Rbᵢ)                      gates i
 *   GRU   z = f(..z), r = f(..r),                               gates z r h
 *         h' = g(x·Wₕᵀ + (r⊙h)·Rₕᵀ + Rbₕ + Wbₕ)       or, linear_before_reset,
 *         h' = g(x·Wₕᵀ + Wbₕ + r⊙(h·Rₕᵀ + Rbₕ));  h = (1-z)⊙h' + z⊙h
 *   LSTM  i = f(..i + Pᵢ⊙c), f = f(..f + P_f⊙c) (1-i with input_forget),
 *         c = f⊙c + i⊙g(..c), o = f(..o + Pₒ⊙c), h = o⊙h(c)      gates i o f c
 *
 * clip bounds every gate's pre-activation (after its peephole) to
 * [-clip, clip], as ONNX Runtime does. sequence_lens gives each batch row
 * its own length: steps past it leave Y zero and the state alone, so Y_h
 * (Y_c) is the state after the row's last valid step (a reverse direction
 * starts at that step); a row of length 0 has zero Y_h and Y_c, as in
 * ONNX Runtime (not its initial state). layout 1 puts the batch first in
 * X, the initial states, Y, Y_h and Y_c.
 *
 * _eval is the plain reference, in double. _emit writes the input side
 * x·Wᵀ + biases for every step and both directions as one product (the
 * packed GEMM when W is an f32 constant: W is [D·G·H, I], Wᵀ's columns)
 * into a stack buffer — or, when that buffer would pass RNN_GX_MAX_BYTES
 * (long sequences), per direction and batch row in equal chunks of steps,
 * one product each, computed when the steps reach them (the stack stays
 * small and the chunk is still in cache when read). Then per direction
 * and batch row the steps in order, each a product of h by Rᵀ (for an f32
 * constant R, R packed into K-major panels of 64 columns read by four
 * independent vector sums, templates/recurrent_gemv.c.in: the packed
 * GEMM's one-row tiles were a single FMA chain, latency-bound) followed
 * by one loop over the hidden units that adds the input side, applies the
 * gate functions and writes h, c and Y's row. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../emit/emit.h"
#include "../kernels/gemm_kernel.h"
#include "../ir/ops.h"

/* Input slots. */
enum { RI_X, RI_W, RI_R, RI_B, RI_SEQ, RI_H0, RI_C0, RI_P };

/* ---- activations ------------------------------------------------------------- */

typedef enum RnnActKind {
  RA_RELU, RA_TANH, RA_SIGMOID, RA_AFFINE, RA_LEAKYRELU, RA_THRESHOLDEDRELU, RA_SCALEDTANH,
  RA_HARDSIGMOID, RA_ELU, RA_SOFTSIGN, RA_SOFTPLUS, RA_COUNT_
} RnnActKind;

/* Each function's name, how many of activation_alpha and activation_beta
 * it takes, and their defaults (those of the ONNX ops of the same name). */
static const struct {
  const char *name;
  int nalpha, nbeta;
  double alpha, beta;
} rnn_acts[RA_COUNT_] = {
    [RA_RELU] = {"Relu", 0, 0, 0, 0},
    [RA_TANH] = {"Tanh", 0, 0, 0, 0},
    [RA_SIGMOID] = {"Sigmoid", 0, 0, 0, 0},
    [RA_AFFINE] = {"Affine", 1, 1, 1.0, 0.0},
    [RA_LEAKYRELU] = {"LeakyRelu", 1, 0, 0.01, 0},
    [RA_THRESHOLDEDRELU] = {"ThresholdedRelu", 1, 0, 1.0, 0},
    [RA_SCALEDTANH] = {"ScaledTanh", 1, 1, 1.0, 1.0},
    [RA_HARDSIGMOID] = {"HardSigmoid", 1, 1, 0.2, 0.5},
    [RA_ELU] = {"Elu", 1, 0, 1.0, 0},
    [RA_SOFTSIGN] = {"Softsign", 0, 0, 0, 0},
    [RA_SOFTPLUS] = {"Softplus", 0, 0, 0, 0},
};

typedef struct RnnFn {
  RnnActKind k;
  double alpha, beta;
} RnnFn;

/* ---- geometry ---------------------------------------------------------------- */

typedef struct RnnGeom {
  DType dt;
  int64_t s, b, i, h, d, g; /* steps, batch, input size, hidden size, directions, gates */
  bool reverse;             /* direction "reverse" (d == 1) */
  bool batch_first;         /* layout 1 */
  int nf;                   /* gate functions per direction: 1 (RNN), 2 (GRU), 3 (LSTM) */
  RnnFn fn[2][3];           /* [direction][f, g, h] */
  double clip;              /* 0: none */
  bool lbr, input_forget;   /* GRU's linear_before_reset, LSTM's input_forget */
  bool has_b, has_seq, has_h0, has_c0, has_p;
} RnnGeom;

static bool ieq(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
      return false;
  return *a == *b;
}

/* activations, activation_alpha and activation_beta into r->fn: names
 * matched without regard to case; alphas and betas consumed in order by
 * the functions that take them, defaults past their ends. */
static bool rnn_fns(const Node *n, RnnGeom *r, char *err, size_t errn) {
  static const RnnActKind dflt[3][3] = {{RA_TANH}, {RA_SIGMOID, RA_TANH}, {RA_SIGMOID, RA_TANH, RA_TANH}};
  const Attr *a = attr_get(n, "activations"), *al = attr_get(n, "activation_alpha"),
             *be = attr_get(n, "activation_beta");
  if ((a && a->kind != ATTR_STRINGS) || (al && al->kind != ATTR_FLOATS) || (be && be->kind != ATTR_FLOATS)) {
    snprintf(err, errn, "activations, activation_alpha or activation_beta has the wrong kind; expected a list "
             "of strings, of floats, of floats");
    return false;
  }
  int want = r->nf * (int)r->d;
  if (a && a->n != want && a->n != r->nf) {
    snprintf(err, errn, "%d activations; expected %d (%d per direction)", a->n, want, r->nf);
    return false;
  }
  int ia = 0, ib = 0;
  for (int d = 0; d < r->d; d++)
    for (int f = 0; f < r->nf; f++) {
      RnnFn *fn = &r->fn[d][f];
      fn->k = dflt[r->nf - 1][f];
      if (a) {
        const char *nm = a->strings[(d * r->nf + f) % a->n];
        int k = 0;
        while (k < RA_COUNT_ && !ieq(nm, rnn_acts[k].name))
          k++;
        if (k == RA_COUNT_) {
          snprintf(err, errn, "activation '%s' is unknown; expected Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
                   "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign or Softplus", nm);
          return false;
        }
        fn->k = (RnnActKind)k;
      }
      fn->alpha = rnn_acts[fn->k].alpha;
      fn->beta = rnn_acts[fn->k].beta;
      if (rnn_acts[fn->k].nalpha && al && ia < al->n)
        fn->alpha = al->floats[ia++];
      if (rnn_acts[fn->k].nbeta && be && ib < be->n)
        fn->beta = be->floats[ib++];
    }
  return true;
}

/* The attributes of n into r (r->nf set). */
static bool rnn_attrs(const Node *n, RnnGeom *r, char *err, size_t errn) {
  const char *dir = attr_str(n, "direction", "forward");
  if (strcmp(dir, "forward") && strcmp(dir, "reverse") && strcmp(dir, "bidirectional")) {
    snprintf(err, errn, "direction is '%s'; expected forward, reverse or bidirectional", dir);
    return false;
  }
  r->d = strcmp(dir, "bidirectional") ? 1 : 2;
  r->reverse = !strcmp(dir, "reverse");
  int64_t layout = attr_int(n, "layout", 0), lbr = attr_int(n, "linear_before_reset", 0),
          inf = attr_int(n, "input_forget", 0);
  if (layout != 0 && layout != 1) {
    snprintf(err, errn, "layout is %lld; expected 0 ([S, B, ...]) or 1 ([B, S, ...])", (long long)layout);
    return false;
  }
  if (lbr != 0 && lbr != 1) {
    snprintf(err, errn, "linear_before_reset is %lld; expected 0 or 1", (long long)lbr);
    return false;
  }
  if (inf != 0 && inf != 1) {
    snprintf(err, errn, "input_forget is %lld; expected 0 or 1", (long long)inf);
    return false;
  }
  r->batch_first = layout == 1;
  r->lbr = n->op == OP_GRU && lbr == 1;
  r->input_forget = n->op == OP_LSTM && inf == 1;
  const Attr *c = attr_get(n, "clip");
  r->clip = c ? attr_float(n, "clip", 0) : 0;
  if (c && (!(c->kind == ATTR_FLOAT || c->kind == ATTR_INT) || !(r->clip > 0))) {
    snprintf(err, errn, "clip is not a positive float; expected the bound of the gates' pre-activations (> 0)");
    return false;
  }
  return rnn_fns(n, r, err, errn);
}

/* Is t (NULL: absent) of dtype dt and the given dims? */
static bool has_shape(const Type *t, DType dt, int rank, const int64_t *dims) {
  if (t->dt != dt || t->rank != rank)
    return false;
  for (int i = 0; i < rank; i++)
    if (t->dims[i] != dims[i])
      return false;
  return true;
}

/* "W is f32[1,12,3]; expected f32[1, 20, 3] ([D, 4*H, I])" */
static bool shape_err(const char *what, const Type *t, DType dt, int rank, const int64_t *dims, const char *form,
                      char *err, size_t errn) {
  char a[128], b[128];
  Type want = {.dt = dt, .rank = rank};
  memcpy(want.dims, dims, sizeof(int64_t) * (size_t)rank);
  snprintf(err, errn, "%s is %s; expected %s (%s)", what, type_str(t, a, sizeof a), type_str(&want, b, sizeof b),
           form);
  return false;
}

/* The geometry from the inputs' types (ty[i] NULL: absent) and the
 * attributes; false with err on any mismatch. */
static bool rnn_geom(const Node *n, const Type *const ty[8], RnnGeom *r, char *err, size_t errn) {
  *r = (RnnGeom){0};
  r->g = n->op == OP_LSTM ? 4 : n->op == OP_GRU ? 3 : 1;
  r->nf = n->op == OP_LSTM ? 3 : n->op == OP_GRU ? 2 : 1;
  const char *gates = n->op == OP_LSTM ? "4*H" : n->op == OP_GRU ? "3*H" : "H";
  if (!ty[RI_X] || !ty[RI_W] || !ty[RI_R]) {
    snprintf(err, errn, "X, W or R is absent; expected all three");
    return false;
  }
  const Type *x = ty[RI_X];
  r->dt = x->dt;
  if (x->dt != DT_F32 && x->dt != DT_F64) {
    snprintf(err, errn, "X is %s; expected f32 or f64", dt_name(x->dt));
    return false;
  }
  if (x->rank != 3) {
    snprintf(err, errn, "X has rank %d; expected 3 ([S, B, I], or [B, S, I] with layout 1)", x->rank);
    return false;
  }
  if (!rnn_attrs(n, r, err, errn))
    return false;
  r->s = x->dims[r->batch_first ? 1 : 0];
  r->b = x->dims[r->batch_first ? 0 : 1];
  r->i = x->dims[2];
  const Type *rt = ty[RI_R];
  int64_t hs = attr_int(n, "hidden_size", 0);
  if (rt->rank != 3 || rt->dims[1] % r->g || (hs == 0 && rt->dims[1] / r->g < 1)) {
    char a[128];
    snprintf(err, errn, "R is %s; expected [D, %s, H]", type_str(rt, a, sizeof a), gates);
    return false;
  }
  r->h = rt->dims[1] / r->g;
  if (attr_get(n, "hidden_size") && (hs < 1 || hs != r->h || rt->dims[2] != hs)) {
    snprintf(err, errn, "hidden_size is %lld but R has %lld rows of %lld; expected hidden_size > 0 with R [D, "
             "%s, hidden_size]", (long long)hs, (long long)rt->dims[1], (long long)rt->dims[2], gates);
    return false;
  }
  int64_t gh = r->g * r->h, w[3] = {r->d, gh, r->i}, rr[3] = {r->d, gh, r->h}, bb[2] = {r->d, 2 * gh};
  if (!has_shape(ty[RI_W], r->dt, 3, w))
    return shape_err("W", ty[RI_W], r->dt, 3, w, n->op == OP_LSTM ? "[D, 4*H, I]" : n->op == OP_GRU ?
                     "[D, 3*H, I]" : "[D, H, I]", err, errn);
  if (!has_shape(rt, r->dt, 3, rr))
    return shape_err("R", rt, r->dt, 3, rr, n->op == OP_LSTM ? "[D, 4*H, H]" : n->op == OP_GRU ?
                     "[D, 3*H, H]" : "[D, H, H]", err, errn);
  if ((r->has_b = ty[RI_B] != NULL) && !has_shape(ty[RI_B], r->dt, 2, bb))
    return shape_err("B", ty[RI_B], r->dt, 2, bb, "[D, 2*G*H]: Wb then Rb", err, errn);
  if ((r->has_seq = ty[RI_SEQ] != NULL) && !((ty[RI_SEQ]->dt == DT_I32 || ty[RI_SEQ]->dt == DT_I64) &&
                                             ty[RI_SEQ]->rank == 1 && ty[RI_SEQ]->dims[0] == r->b))
    return shape_err("sequence_lens", ty[RI_SEQ], DT_I32, 1, &r->b, "a length per batch row", err, errn);
  int64_t st[3] = {r->batch_first ? r->b : r->d, r->batch_first ? r->d : r->b, r->h};
  const char *stf = r->batch_first ? "[B, D, H]" : "[D, B, H]";
  if ((r->has_h0 = ty[RI_H0] != NULL) && !has_shape(ty[RI_H0], r->dt, 3, st))
    return shape_err("initial_h", ty[RI_H0], r->dt, 3, st, stf, err, errn);
  if ((r->has_c0 = ty[RI_C0] != NULL) && !has_shape(ty[RI_C0], r->dt, 3, st))
    return shape_err("initial_c", ty[RI_C0], r->dt, 3, st, stf, err, errn);
  int64_t p[2] = {r->d, 3 * r->h};
  if ((r->has_p = ty[RI_P] != NULL) && !has_shape(ty[RI_P], r->dt, 2, p))
    return shape_err("P", ty[RI_P], r->dt, 2, p, "[D, 3*H]: the peepholes of i, o, f", err, errn);
  if (r->s < 1 || r->b < 1 || r->i < 1) {
    snprintf(err, errn, "X has an empty dim; expected at least one step, batch row and input feature");
    return false;
  }
  return true;
}

/* Output k's type: Y, then Y_h and Y_c. */
static Type rnn_out_type(const RnnGeom *r, int k) {
  Type t = {.dt = r->dt};
  if (k == 0) {
    t.rank = 4;
    int64_t y0[4] = {r->s, r->d, r->b, r->h}, y1[4] = {r->b, r->s, r->d, r->h};
    memcpy(t.dims, r->batch_first ? y1 : y0, sizeof y0);
  } else {
    t.rank = 3;
    int64_t s0[3] = {r->d, r->b, r->h}, s1[3] = {r->b, r->d, r->h};
    memcpy(t.dims, r->batch_first ? s1 : s0, sizeof s0);
  }
  return t;
}

/* Element offsets of Y[t, d, b, 0] and of a state's [d, b, 0]. */
static int64_t y_at(const RnnGeom *r, int64_t t, int64_t d, int64_t b) {
  return r->batch_first ? ((b * r->s + t) * r->d + d) * r->h : ((t * r->d + d) * r->b + b) * r->h;
}
static int64_t st_at(const RnnGeom *r, int64_t d, int64_t b) {
  return r->batch_first ? (b * r->d + d) * r->h : (d * r->b + b) * r->h;
}
/* Row of X (and of the input-side buffer) for step t of batch row b. */
static int64_t x_row(const RnnGeom *r, int64_t t, int64_t b) { return r->batch_first ? b * r->s + t : t * r->b + b; }

/* ---- _infer ------------------------------------------------------------------- */

bool recurrent_infer(Graph *g, Node *n, Diag *d) {
  const Type *ty[8] = {0};
  for (int i = 0; i < 8; i++) {
    const Value *v = node_in(g, n, i);
    ty[i] = v ? &v->type : NULL;
  }
  RnnGeom r;
  char err[320];
  if (!rnn_geom(n, ty, &r, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  const Value *seq = node_in(g, n, RI_SEQ);
  for (int64_t b = 0; seq && seq->data && b < r.b; b++) {
    int64_t len = el_get_i(seq->type.dt, seq->data, b);
    if (len < 0 || len > r.s)
      return diag_node(d, g, n, "sequence_lens[%lld] is %lld; expected 0 to %lld (X's steps)", (long long)b,
                       (long long)len, (long long)r.s);
  }
  for (int k = 0; k < n->nout; k++)
    node_out(g, n, k)->type = rnn_out_type(&r, k);
  return true;
}

int64_t recurrent_flops(const Graph *g, const Node *n) {
  const Type *x = &node_in(g, n, RI_X)->type, *w = &node_in(g, n, RI_W)->type, *rt = &node_in(g, n, RI_R)->type;
  if (x->rank != 3 || w->rank != 3 || rt->rank != 3)
    return 0;
  return 2 * x->dims[0] * x->dims[1] * w->dims[0] * w->dims[1] * (w->dims[2] + rt->dims[2]);
}

/* ---- _eval -------------------------------------------------------------------- */

static double act_eval(const RnnFn *f, double v) {
  switch (f->k) {
  case RA_RELU: return v > 0 ? v : 0;
  case RA_TANH: return tanh(v);
  case RA_SIGMOID: return 1 / (1 + exp(-v));
  case RA_AFFINE: return f->alpha * v + f->beta;
  case RA_LEAKYRELU: return v < 0 ? f->alpha * v : v;
  case RA_THRESHOLDEDRELU: return v > f->alpha ? v : 0;
  case RA_SCALEDTANH: return f->alpha * tanh(f->beta * v);
  case RA_HARDSIGMOID: { double y = f->alpha * v + f->beta; return y < 0 ? 0 : y > 1 ? 1 : y; }
  case RA_ELU: return v < 0 ? f->alpha * (exp(v) - 1) : v;
  case RA_SOFTSIGN: return v / (1 + fabs(v));
  case RA_SOFTPLUS: return log1p(exp(v));
  case RA_COUNT_: break;
  }
  KILN_ASSERT(0);
  return 0;
}

static double clipped(const RnnGeom *r, double v) {
  return r->clip > 0 ? (v < -r->clip ? -r->clip : v > r->clip ? r->clip : v) : v;
}

/* The tensors of one node's evaluation, and its per-step scratch (double). */
typedef struct RnnRun {
  const RnnGeom *r;
  const Tensor *in;
  Tensor *out;
  int nout;
  double *h, *c, *pre; /* [H], [H], [G*H]: x·Wᵀ + Wb + Rb (GRU lbr: Rbₕ left out) */
  double *hr;          /* [G*H]: h·Rᵀ (GRU without lbr: (r⊙h)·Rₕᵀ in the h part) */
} RnnRun;

static double w_at(const RnnRun *u, int slot, int64_t i) { return el_get_f(u->r->dt, u->in[slot].data, i); }

/* out[j] = Σ_k v[k]·M[row0 + j, k] for j < n, M rows of len k. */
static void row_product(const RnnRun *u, int slot, int64_t row0, int64_t n, int64_t k, const double *v, double *out) {
  for (int64_t j = 0; j < n; j++) {
    double s = 0;
    for (int64_t t = 0; t < k; t++)
      s += v[t] * w_at(u, slot, (row0 + j) * k + t);
    out[j] = s;
  }
}

/* u->pre for step t of batch row b in direction d. */
static void input_side(const RnnRun *u, int64_t d, int64_t t, int64_t b) {
  const RnnGeom *r = u->r;
  int64_t gh = r->g * r->h, x0 = x_row(r, t, b) * r->i;
  for (int64_t j = 0; j < gh; j++) {
    double s = 0;
    for (int64_t k = 0; k < r->i; k++)
      s += el_get_f(r->dt, u->in[RI_X].data, x0 + k) * w_at(u, RI_W, (d * gh + j) * r->i + k);
    if (r->has_b)
      s += w_at(u, RI_B, d * 2 * gh + j) + (r->lbr && j >= 2 * r->h ? 0 : w_at(u, RI_B, d * 2 * gh + gh + j));
    u->pre[j] = s;
  }
}

static void step_rnn(const RnnRun *u, int64_t d) {
  const RnnGeom *r = u->r;
  row_product(u, RI_R, d * r->h, r->h, r->h, u->h, u->hr);
  for (int64_t j = 0; j < r->h; j++)
    u->h[j] = act_eval(&r->fn[d][0], clipped(r, u->pre[j] + u->hr[j]));
}

static void step_gru(const RnnRun *u, int64_t d) {
  const RnnGeom *r = u->r;
  int64_t H = r->h, gh = 3 * H;
  double *z = u->pre, *rg = u->pre + H, *hh = u->pre + 2 * H;
  row_product(u, RI_R, d * gh, r->lbr ? gh : 2 * H, H, u->h, u->hr);
  for (int64_t j = 0; j < 2 * H; j++)
    u->pre[j] = act_eval(&r->fn[d][0], clipped(r, u->pre[j] + u->hr[j]));
  if (r->lbr) {
    for (int64_t j = 0; j < H; j++) {
      double rb = r->has_b ? w_at(u, RI_B, d * 2 * gh + gh + 2 * H + j) : 0;
      hh[j] += rg[j] * (u->hr[2 * H + j] + rb);
    }
  } else {
    double *rh = u->hr; /* its z, r part is spent */
    for (int64_t j = 0; j < H; j++)
      rh[j] = rg[j] * u->h[j];
    row_product(u, RI_R, d * gh + 2 * H, H, H, rh, u->hr + 2 * H);
    for (int64_t j = 0; j < H; j++)
      hh[j] += u->hr[2 * H + j];
  }
  for (int64_t j = 0; j < H; j++) {
    double v = act_eval(&r->fn[d][1], clipped(r, hh[j]));
    u->h[j] = (1 - z[j]) * v + z[j] * u->h[j];
  }
}

static void step_lstm(const RnnRun *u, int64_t d) {
  const RnnGeom *r = u->r;
  int64_t H = r->h;
  row_product(u, RI_R, d * 4 * H, 4 * H, H, u->h, u->hr);
  for (int64_t j = 0; j < H; j++) {
    double pi = 0, po = 0, pf = 0;
    if (r->has_p) {
      pi = w_at(u, RI_P, d * 3 * H + j);
      po = w_at(u, RI_P, d * 3 * H + H + j);
      pf = w_at(u, RI_P, d * 3 * H + 2 * H + j);
    }
    double c = u->c[j];
    double i = act_eval(&r->fn[d][0], clipped(r, u->pre[j] + u->hr[j] + pi * c));
    double f = r->input_forget ? 1 - i
                               : act_eval(&r->fn[d][0], clipped(r, u->pre[2 * H + j] + u->hr[2 * H + j] + pf * c));
    double g = act_eval(&r->fn[d][1], clipped(r, u->pre[3 * H + j] + u->hr[3 * H + j]));
    c = f * c + i * g;
    double o = act_eval(&r->fn[d][0], clipped(r, u->pre[H + j] + u->hr[H + j] + po * c));
    u->c[j] = c;
    u->h[j] = o * act_eval(&r->fn[d][2], c);
  }
}

/* Direction d of batch row b of length len. */
static void run_row(const RnnRun *u, const Node *n, int64_t d, int64_t b, int64_t len) {
  const RnnGeom *r = u->r;
  bool rev = r->reverse || d == 1;
  for (int64_t j = 0; j < r->h; j++) {
    u->h[j] = r->has_h0 ? w_at(u, RI_H0, st_at(r, d, b) + j) : 0;
    u->c[j] = r->has_c0 ? w_at(u, RI_C0, st_at(r, d, b) + j) : 0;
  }
  for (int64_t step = 0; step < len; step++) {
    int64_t t = rev ? len - 1 - step : step;
    input_side(u, d, t, b);
    if (n->op == OP_RNN)
      step_rnn(u, d);
    else if (n->op == OP_GRU)
      step_gru(u, d);
    else
      step_lstm(u, d);
    for (int64_t j = 0; j < r->h && u->out[0].data; j++)
      el_set_f(r->dt, u->out[0].data, y_at(r, t, d, b) + j, u->h[j]);
  }
  for (int64_t j = 0; j < r->h && len > 0; j++) { /* a row of length 0 has zero states (ONNX Runtime) */
    if (u->nout > 1)
      el_set_f(r->dt, u->out[1].data, st_at(r, d, b) + j, u->h[j]);
    if (u->nout > 2)
      el_set_f(r->dt, u->out[2].data, st_at(r, d, b) + j, u->c[j]);
  }
}

bool recurrent_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Type *ty[8] = {0};
  for (int i = 0; i < 8 && i < n->nin; i++)
    ty[i] = in[i].data ? &in[i].type : NULL;
  RnnGeom r;
  char err[320];
  KILN_ASSERT(rnn_geom(n, ty, &r, err, sizeof err));
  double *buf = malloc(sizeof(double) * (size_t)(2 * r.h + 2 * r.g * r.h));
  if (!buf)
    return diag_error(d, "out of memory for a recurrent state of %lld", (long long)r.h);
  RnnRun u = {&r, in, out, n->nout, buf, buf + r.h, buf + 2 * r.h, buf + 2 * r.h + r.g * r.h};
  bool ok = true;
  for (int64_t b = 0; b < r.b && ok; b++) {
    int64_t len = r.has_seq ? el_get_i(in[RI_SEQ].type.dt, in[RI_SEQ].data, b) : r.s;
    if (len < 0 || len > r.s) {
      ok = diag_error(d, "node '%s' (%s): sequence_lens[%lld] is %lld; expected 0 to %lld (X's steps)",
                      n->name, node_op_name(n), (long long)b, (long long)len, (long long)r.s);
      break;
    }
    for (int64_t dd = 0; dd < r.d; dd++)
      run_row(&u, n, dd, b, len);
  }
  free(buf);
  return ok;
}

/* ---- _emit -------------------------------------------------------------------- */

/* f(v) as a C expression of dt (v a variable name). */
static const char *act_c(Emit *e, DType dt, const RnnFn *f, const char *v) {
  Arena *a = e->g->arena;
  const char *ex = emit_mathfn(e, dt, "exp"), *th = emit_mathfn(e, dt, "tanh");
  const char *al = emit_double_literal(e, dt, f->alpha), *be = emit_double_literal(e, dt, f->beta);
  const char *one = emit_double_literal(e, dt, 1), *zero = emit_double_literal(e, dt, 0);
  switch (f->k) {
  case RA_RELU: return arena_printf(a, "(%s > %s ? %s : %s)", v, zero, v, zero);
  case RA_TANH: return arena_printf(a, "%s(%s)", th, v);
  case RA_SIGMOID: return arena_printf(a, "(%s / (%s + %s(-%s)))", one, one, ex, v);
  case RA_AFFINE: return arena_printf(a, "(%s * %s + %s)", al, v, be);
  case RA_LEAKYRELU: return arena_printf(a, "(%s < %s ? %s * %s : %s)", v, zero, al, v, v);
  case RA_THRESHOLDEDRELU: return arena_printf(a, "(%s > %s ? %s : %s)", v, al, v, zero);
  case RA_SCALEDTANH: return arena_printf(a, "(%s * %s(%s * %s))", al, th, be, v);
  case RA_HARDSIGMOID:
    return arena_printf(a, "%s(%s(%s * %s + %s, %s), %s)", emit_mathfn(e, dt, "fmin"), emit_mathfn(e, dt, "fmax"),
                        al, v, be, zero, one);
  case RA_ELU: return arena_printf(a, "(%s < %s ? %s * (%s(%s) - %s) : %s)", v, zero, al, ex, v, one, v);
  case RA_SOFTSIGN: return arena_printf(a, "(%s / (%s + %s(%s)))", v, one, emit_mathfn(e, dt, "fabs"), v);
  case RA_SOFTPLUS: return arena_printf(a, "%s(%s(%s))", emit_mathfn(e, dt, "log1p"), ex, v);
  case RA_COUNT_: break;
  }
  KILN_ASSERT(0);
  return v;
}

/* `T name = expr;` then the clip of name. */
static void emit_pre(Emit *e, const RnnGeom *r, const char *name, const char *expr) {
  emit_line(e, "%s %s = %s;", dt_ctype(r->dt), name, expr);
  if (r->clip > 0) {
    const char *c = emit_double_literal(e, r->dt, r->clip);
    emit_line(e, "%s = %s < -%s ? -%s : %s > %s ? %s : %s;", name, name, c, c, name, c, c, name);
  }
}

/* What one node's kernel works with: the operands' C expressions. */
typedef struct RnnEmit {
  const Node *n;
  RnnGeom r;
  const Value *w, *rw, *bv;       /* W, R, B (NULL: absent) */
  const char *x, *W, *R, *B, *seq, *h0, *c0, *p, *y[3];
  int64_t chunk;                  /* 0: the input side of every step at once; else of this many steps */
} RnnEmit;

/* The input side's buffer of every step, at most; past it, each direction
 * and batch row computes it in chunks of steps (RnnEmit.chunk) as it goes:
 * the stack holds the buffer. */
#define RNN_GX_MAX_BYTES (1 << 18)

static bool packed_f32(const RnnEmit *q, const Value *v) { return q->r.dt == DT_F32 && v && v->data; }

/* The biases of the input side for directions d0 .. d0+nd-1, [nd*G*H]:
 * Wb + Rb, but for GRU's Rbₕ under linear_before_reset (added inside the
 * reset product). */
static float *input_bias(Emit *e, const RnnEmit *q, int64_t d0, int64_t nd) {
  const RnnGeom *r = &q->r;
  int64_t gh = r->g * r->h;
  float *bias = arena_alloc(e->g->arena, sizeof(float) * (size_t)(nd * gh));
  const float *bd = q->bv->data;
  for (int64_t d = d0; d < d0 + nd; d++)
    for (int64_t j = 0; j < gh; j++)
      bias[(d - d0) * gh + j] = bd[d * 2 * gh + j] + (r->lbr && j >= 2 * r->h ? 0.0f : bd[d * 2 * gh + gh + j]);
  return bias;
}

/* gx[m][nd*G*H] = A·Wᵀ + biases for directions d0 .. d0+nd-1, A's rows
 * at a, a_rs apart: one packed GEMM for f32 constant W (the biases in it
 * when B is constant too), else a plain loop reading W (and B) as they
 * are. */
static void emit_input_side(Emit *e, RnnEmit *q, int64_t m, const char *a, int64_t a_rs, int64_t d0, int64_t nd) {
  const RnnGeom *r = &q->r;
  Arena *ar = e->g->arena;
  int64_t gh = r->g * r->h, ngh = nd * gh;
  const char *T = dt_ctype(r->dt);
  bool bias_done = false, gemm = false;
  if (packed_f32(q, q->w)) {
    const char *bias = NULL;
    if (packed_f32(q, q->bv))
      bias = emit_const_array(e, DT_F32, input_bias(e, q, d0, nd), ngh, arena_printf(ar, "%s_bias", q->bv->name),
                              "the recurrent layer's input-side biases, Wb + Rb per direction");
    GemmSpec s = {.m = m, .n = ngh, .k = r->i, .a = a, .a_rs = a_rs, .b = (const float *)q->w->data + d0 * gh * r->i,
                  .b_trans = true, .b_name = q->w->name, .bias = bias, .y = "gx"};
    gemm = emit_gemm(e, &s);
    bias_done = gemm && bias;
  }
  if (!gemm) {
    if (!q->W)
      q->W = emit_ref(e, q->n->in[RI_W]);
    emit_line(e, "for (int i = 0; i < %lld; i++) /* the input side, W [D*G*H, I] read as it is */", (long long)m);
    emit_line(e, "  for (int j = 0; j < %lld; j++) {", (long long)ngh);
    emit_line(e, "    %s s = 0;", T);
    emit_line(e, "    for (int k = 0; k < %lld; k++)", (long long)r->i);
    emit_line(e, "      s += (%s)[i * %lld + k] * %s[%lld + j * %lld + k];", a, (long long)a_rs, q->W,
              (long long)(d0 * gh * r->i), (long long)r->i);
    emit_line(e, "    gx[i * %lld + j] = s;", (long long)ngh);
    emit_line(e, "  }");
  }
  if (r->has_b && !bias_done) {
    if (!q->B)
      q->B = emit_ref(e, q->n->in[RI_B]);
    emit_line(e, "for (int i = 0; i < %lld; i++) /* + Wb + Rb%s */", (long long)m,
              r->lbr ? " (GRU's Rb of h joins the reset product)" : "");
    emit_line(e, "  for (int d = 0; d < %lld; d++)", (long long)nd);
    emit_line(e, "    for (int j = 0; j < %lld; j++)", (long long)gh);
    emit_line(e, "      gx[i * %lld + d * %lld + j] += %s[(d + %lld) * %lld + j]%s;", (long long)ngh, (long long)gh,
              q->B, (long long)d0, (long long)(2 * gh),
              r->lbr ? arena_printf(ar, " + (j < %lld ? %s[(d + %lld) * %lld + %lld + j] : 0)", (long long)(2 * r->h),
                                    q->B, (long long)d0, (long long)(2 * gh), (long long)gh)
                     : arena_printf(ar, " + %s[(d + %lld) * %lld + %lld + j]", q->B, (long long)d0,
                                    (long long)(2 * gh), (long long)gh));
  }
}

/* Columns per panel of R packed for the step's product (templates/
 * recurrent_gemv.c.in). */
#define RNN_PANEL 64

static int64_t round_panel(int64_t n) { return (n + RNN_PANEL - 1) / RNN_PANEL * RNN_PANEL; }

/* out[0..n) = a[0..H) · R[d] rows row0 .. row0+n as columns: for f32
 * constant R, R's rows packed into K-major panels and the template's four
 * vector sums (out holds round_panel(n) floats); else a dot product per
 * column, R read as it is. */
static void emit_rec_product(Emit *e, const RnnEmit *q, int64_t d, int64_t row0, int64_t n, const char *a,
                             const char *out) {
  const RnnGeom *r = &q->r;
  Arena *ar = e->g->arena;
  int64_t H = r->h, gh = r->g * H;
  if (packed_f32(q, q->rw)) {
    int64_t np = round_panel(n) / RNN_PANEL;
    const float *rd = (const float *)q->rw->data + (d * gh + row0) * H;
    float *pk = arena_alloc(ar, sizeof(float) * (size_t)(np * RNN_PANEL * H));
    for (int64_t j = 0; j < n; j++)
      for (int64_t k = 0; k < H; k++)
        pk[((j / RNN_PANEL) * H + k) * RNN_PANEL + j % RNN_PANEL] = rd[j * H + k];
    const char *rp = emit_const_array(
        e, DT_F32, pk, np * RNN_PANEL * H, arena_printf(ar, "%s_packed", q->rw->name),
        arena_printf(ar, "R '%s' direction %lld, rows %lld .. %lld as columns, packed for the recurrent step: %lld "
                     "panels [%lld][%d], zero-padded", q->rw->name, (long long)d, (long long)row0,
                     (long long)(row0 + n - 1), (long long)np, (long long)H, RNN_PANEL));
    emit_tmpl(e, "recurrent_gemv", "N", emit_int(e, n), "NP", emit_int(e, np), "K", emit_int(e, H), "RP", rp,
              "PANEL", emit_int(e, H * RNN_PANEL), "A", a, "OUT", out, NULL);
    return;
  }
  emit_line(e, "for (int j = 0; j < %lld; j++) { /* %s · R[%lld] rows %lld.. as columns */", (long long)n, a,
            (long long)d, (long long)row0);
  emit_line(e, "  %s s = 0;", dt_ctype(r->dt));
  emit_line(e, "  for (int k = 0; k < %lld; k++)", (long long)H);
  emit_line(e, "    s += %s[k] * %s[%lld + j * %lld + k];", a, q->R, (long long)((d * gh + row0) * H), (long long)H);
  emit_line(e, "  (%s)[j] = s;", out);
  emit_line(e, "}");
}

/* h (and Y's row) from the step's pre-activations: the hidden-unit loop
 * of each cell, its gate functions inline. */
static void emit_cell(Emit *e, const RnnEmit *q, int64_t d, const char *yrow) {
  const RnnGeom *r = &q->r;
  Arena *a = e->g->arena;
  long long H = (long long)r->h;
  const RnnFn *fn = r->fn[d];
  const char *one = emit_double_literal(e, r->dt, 1);
  const char *yw = yrow ? arena_printf(a, " %s = hv;", yrow) : "";
  if (q->n->op == OP_RNN) {
    emit_rec_product(e, q, d, 0, H, "hcur", "hr");
    emit_line(e, "for (int j = 0; j < %lld; j++) {", H);
    e->indent++;
    emit_pre(e, r, "v", "gt[j] + hr[j]");
    emit_line(e, "const %s hv = %s;", dt_ctype(r->dt), act_c(e, r->dt, &fn[0], "v"));
    emit_line(e, "hcur[j] = hv;%s", yw);
  } else if (q->n->op == OP_GRU) {
    emit_rec_product(e, q, d, 0, r->lbr ? 3 * H : 2 * H, "hcur", "hr");
    if (!r->lbr) {
      emit_line(e, "for (int j = 0; j < %lld; j++) { /* r ⊙ h */", H);
      e->indent++;
      emit_pre(e, r, "v", arena_printf(a, "gt[%lld + j] + hr[%lld + j]", H, H));
      emit_line(e, "rh[j] = %s * hcur[j];", act_c(e, r->dt, &fn[0], "v"));
      e->indent--;
      emit_line(e, "}");
      emit_rec_product(e, q, d, 2 * H, H, "rh", arena_printf(a, "hr + %lld", 2 * H));
    }
    emit_line(e, "for (int j = 0; j < %lld; j++) {", H);
    e->indent++;
    emit_pre(e, r, "vz", "gt[j] + hr[j]");
    emit_line(e, "const %s z = %s;", dt_ctype(r->dt), act_c(e, r->dt, &fn[0], "vz"));
    if (r->lbr) {
      emit_pre(e, r, "vr", arena_printf(a, "gt[%lld + j] + hr[%lld + j]", H, H));
      const char *rb = r->has_b ? arena_printf(a, " + %s[%lld + j]", q->B, (long long)(d * 6 * H + 5 * H)) : "";
      emit_pre(e, r, "vh", arena_printf(a, "gt[%lld + j] + %s * (hr[%lld + j]%s)", 2 * H,
                                        act_c(e, r->dt, &fn[0], "vr"), 2 * H, rb));
    } else {
      emit_pre(e, r, "vh", arena_printf(a, "gt[%lld + j] + hr[%lld + j]", 2 * H, 2 * H));
    }
    emit_line(e, "const %s hv = (%s - z) * %s + z * hcur[j];", dt_ctype(r->dt), one, act_c(e, r->dt, &fn[1], "vh"));
    emit_line(e, "hcur[j] = hv;%s", yw);
  } else {
    emit_rec_product(e, q, d, 0, 4 * H, "hcur", "hr");
    const char *T = dt_ctype(r->dt);
    const char *pi = q->p ? arena_printf(a, " + %s[%lld + j] * cp", q->p, (long long)(d * 3 * H)) : "";
    const char *pf = q->p ? arena_printf(a, " + %s[%lld + j] * cp", q->p, (long long)(d * 3 * H + 2 * H)) : "";
    const char *po = q->p ? arena_printf(a, " + %s[%lld + j] * cn", q->p, (long long)(d * 3 * H + H)) : "";
    emit_line(e, "for (int j = 0; j < %lld; j++) {", H);
    e->indent++;
    emit_line(e, "const %s cp = ccur[j];", T);
    emit_pre(e, r, "vi", arena_printf(a, "gt[j] + hr[j]%s", pi));
    emit_line(e, "const %s ig = %s;", T, act_c(e, r->dt, &fn[0], "vi"));
    if (r->input_forget) {
      emit_line(e, "const %s fg = %s - ig; /* input_forget */", T, one);
    } else {
      emit_pre(e, r, "vf", arena_printf(a, "gt[%lld + j] + hr[%lld + j]%s", 2 * H, 2 * H, pf));
      emit_line(e, "const %s fg = %s;", T, act_c(e, r->dt, &fn[0], "vf"));
    }
    emit_pre(e, r, "vc", arena_printf(a, "gt[%lld + j] + hr[%lld + j]", 3 * H, 3 * H));
    emit_line(e, "const %s cn = fg * cp + ig * %s;", T, act_c(e, r->dt, &fn[1], "vc"));
    emit_pre(e, r, "vo", arena_printf(a, "gt[%lld + j] + hr[%lld + j]%s", H, H, po));
    emit_line(e, "const %s hv = %s * %s;", T, act_c(e, r->dt, &fn[0], "vo"), act_c(e, r->dt, &fn[2], "cn"));
    emit_line(e, "ccur[j] = cn;");
    emit_line(e, "hcur[j] = hv;%s", yw);
  }
  e->indent--;
  emit_line(e, "}");
}

/* C expression of the element offset of Y[t, d, b, 0] / a state's [d, b, 0]. */
static const char *y_at_c(Emit *e, const RnnGeom *r, int64_t d) {
  return r->batch_first ? arena_printf(e->g->arena, "((bi * %lld + t) * %lld + %lld) * %lld", (long long)r->s,
                                       (long long)r->d, (long long)d, (long long)r->h)
                        : arena_printf(e->g->arena, "((t * %lld + %lld) * %lld + bi) * %lld", (long long)r->d,
                                       (long long)d, (long long)r->b, (long long)r->h);
}
static const char *st_at_c(Emit *e, const RnnGeom *r, int64_t d) {
  return r->batch_first ? arena_printf(e->g->arena, "(bi * %lld + %lld) * %lld", (long long)r->d, (long long)d,
                                       (long long)r->h)
                        : arena_printf(e->g->arena, "(%lld * %lld + bi) * %lld", (long long)d, (long long)r->b,
                                       (long long)r->h);
}

/* Direction d: per batch row, its steps, the rows past its length zero,
 * the final state. */
/* In chunk mode, at a step t outside the steps gx holds: the next chunk
 * (forward: from t on; reverse: up to t), its first step clamped so that
 * all of it lies in X. */
static void emit_chunk_refill(Emit *e, RnnEmit *q, int64_t d, bool rev) {
  const RnnGeom *r = &q->r;
  long long C = (long long)q->chunk, S = (long long)r->s, B = (long long)r->b, I = (long long)r->i;
  emit_line(e, "if (t < c_lo || t > c_hi) { /* the input side of the next %lld steps */", C);
  e->indent++;
  emit_line(e, "int t0 = t%s;", rev ? arena_printf(e->g->arena, " - %lld", C - 1) : "");
  emit_line(e, "t0 = t0 < 0 ? 0 : t0 > %lld ? %lld : t0;", S - C, S - C);
  const char *a = r->batch_first ? arena_printf(e->g->arena, "%s + (bi * %lld + t0) * %lld", q->x, S, I)
                                 : arena_printf(e->g->arena, "%s + (t0 * %lld + bi) * %lld", q->x, B, I);
  emit_input_side(e, q, q->chunk, a, r->batch_first ? I : B * I, d, 1);
  emit_line(e, "c_lo = t0;");
  emit_line(e, "c_hi = t0 + %lld;", C - 1);
  e->indent--;
  emit_line(e, "}");
}

static void emit_direction(Emit *e, RnnEmit *q, int64_t d) {
  const RnnGeom *r = &q->r;
  Arena *a = e->g->arena;
  const char *T = dt_ctype(r->dt), *zero = emit_double_literal(e, r->dt, 0);
  bool rev = r->reverse || d == 1, lstm = q->n->op == OP_LSTM;
  long long H = (long long)r->h, S = (long long)r->s, B = (long long)r->b, GH = (long long)(r->g * r->h);
  const char *st = st_at_c(e, r, d), *yat = y_at_c(e, r, d);
  emit_line(e, "for (int bi = 0; bi < %lld; bi++) { /* direction %lld: %s; bi: the batch row */", B, (long long)d,
            rev ? "reverse, from each row's last step" : "forward");
  e->indent++;
  if (r->has_seq)
    emit_line(e, "const int len = %s[bi] < 0 ? 0 : %s[bi] > %lld ? %lld : (int)%s[bi]; /* sequence_lens[bi] */",
              q->seq, q->seq, S, S, q->seq);
  else
    emit_line(e, "const int len = %lld;", S);
  bool gru2 = q->n->op == OP_GRU && !r->lbr; /* two products: z, r from h, then h's from r ⊙ h */
  emit_line(e, "%s hcur[%lld]%s, hr[%lld]%s; /* h%s, h·Rᵀ (padded to whole panels)%s */", T, H,
            lstm ? arena_printf(a, ", ccur[%lld]", H) : "",
            (long long)(gru2 ? 2 * H + round_panel(H) : round_panel(GH)), gru2 ? arena_printf(a, ", rh[%lld]", H) : "",
            lstm ? ", c" : "", gru2 ? ", r ⊙ h" : "");
  emit_line(e, "for (int j = 0; j < %lld; j++) {", H);
  emit_line(e, "  hcur[j] = %s;", q->h0 ? arena_printf(a, "%s[%s + j]", q->h0, st) : zero);
  if (lstm)
    emit_line(e, "  ccur[j] = %s;", q->c0 ? arena_printf(a, "%s[%s + j]", q->c0, st) : zero);
  emit_line(e, "}");
  if (q->chunk) {
    emit_line(e, "%s gx[%lld] __attribute__((aligned(64))); /* [%lld][%lld]: X·Wᵀ + Wb + Rb of steps c_lo .. "
              "c_hi */", T, (long long)q->chunk * GH, (long long)q->chunk, GH);
    emit_line(e, "int c_lo = 1, c_hi = 0; /* none yet */");
  }
  emit_line(e, "for (int step = 0; step < len; step++) {");
  e->indent++;
  emit_line(e, "const int t = %s;", rev ? "len - 1 - step" : "step");
  if (q->chunk) {
    emit_chunk_refill(e, q, d, rev);
    emit_line(e, "const %s *gt = gx + (t - c_lo) * %lld; /* this step's input side */", T, GH);
  } else {
    emit_line(e, "const %s *gt = gx + %s * %lld + %lld; /* this step's input side */", T,
              r->batch_first ? arena_printf(a, "(bi * %lld + t)", S) : arena_printf(a, "(t * %lld + bi)", B),
              (long long)(r->d * r->g * r->h), (long long)d * GH);
  }
  emit_cell(e, q, d, q->y[0] ? arena_printf(a, "%s[%s + j]", q->y[0], yat) : NULL);
  e->indent--;
  emit_line(e, "}");
  if (q->y[0] && r->has_seq) {
    emit_line(e, "for (int t = len; t < %lld; t++) /* past the row's length: zero */", S);
    emit_line(e, "  for (int j = 0; j < %lld; j++)", H);
    emit_line(e, "    %s[%s + j] = %s;", q->y[0], yat, zero);
  }
  for (int k = 1; k < 3; k++)
    if (q->y[k]) {
      emit_line(e, "for (int j = 0; j < %lld; j++)%s", H,
                r->has_seq ? " /* a row of length 0: zero (ONNX Runtime) */" : "");
      emit_line(e, "  %s[%s + j] = %s;", q->y[k], st,
                r->has_seq ? arena_printf(a, "len > 0 ? %s[j] : %s", k == 1 ? "hcur" : "ccur", zero)
                           : (k == 1 ? "hcur[j]" : "ccur[j]"));
    }
  e->indent--;
  emit_line(e, "}");
}

bool recurrent_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  RnnEmit q = {.n = n};
  const Type *ty[8] = {0};
  for (int i = 0; i < 8; i++) {
    const Value *v = node_in(g, n, i);
    ty[i] = v ? &v->type : NULL;
  }
  char err[320];
  KILN_ASSERT(rnn_geom(n, ty, &q.r, err, sizeof err));
  const RnnGeom *r = &q.r;
  q.w = node_in(g, n, RI_W);
  q.rw = node_in(g, n, RI_R);
  q.bv = node_in(g, n, RI_B);
  long long rows = (long long)(r->s * r->b), dgh = (long long)(r->d * r->g * r->h), gh = (long long)(r->g * r->h);
  q.x = emit_ref(e, n->in[RI_X]);
  if ((int64_t)dt_size(r->dt) * rows * dgh > RNN_GX_MAX_BYTES) { /* chunks of equal size, as few as fit */
    int64_t most = RNN_GX_MAX_BYTES / ((int64_t)dt_size(r->dt) * gh), n_chunks;
    most = most < 1 ? 1 : most > r->s ? r->s : most;
    n_chunks = (r->s + most - 1) / most;
    q.chunk = (r->s + n_chunks - 1) / n_chunks;
    emit_line(e, "/* %s: X %s, %lld direction%s, hidden size %lld; the input side in chunks of %lld steps */",
              node_op_name(n), r->batch_first ? "[B, S, I] (layout 1)" : "[S, B, I]", (long long)r->d,
              r->d > 1 ? "s" : "", (long long)r->h, (long long)q.chunk);
  } else {
    emit_line(e, "/* %s: X %s, %lld direction%s, hidden size %lld; the input side of every step first */",
              node_op_name(n), r->batch_first ? "[B, S, I] (layout 1)" : "[S, B, I]", (long long)r->d,
              r->d > 1 ? "s" : "", (long long)r->h);
    /* with --threads the input side's product may be split: gx is then
     * the lead's, shared with the workers (KILN_SHARED) */
    emit_shared_array(e, dt_ctype(r->dt), "gx", rows * dgh,
                      arena_printf(g->arena, "[%lld][%lld]: X·Wᵀ + Wb + Rb, row %s", rows, dgh,
                                   r->batch_first ? "b*S + t" : "t*B + b"));
    emit_input_side(e, &q, rows, q.x, r->i, 0, r->d);
  }
  if (!packed_f32(&q, q.rw))
    q.R = emit_ref(e, n->in[RI_R]);
  if (r->has_b && !q.B && r->lbr)
    q.B = emit_ref(e, n->in[RI_B]);
  q.seq = r->has_seq ? emit_ref(e, n->in[RI_SEQ]) : NULL;
  q.h0 = r->has_h0 ? emit_ref(e, n->in[RI_H0]) : NULL;
  q.c0 = r->has_c0 ? emit_ref(e, n->in[RI_C0]) : NULL;
  q.p = r->has_p ? emit_ref(e, n->in[RI_P]) : NULL;
  for (int k = 0; k < n->nout && k < 3; k++)
    q.y[k] = emit_ref(e, n->out[k]);
  /* the two directions are independent: with --threads, one thread each.
   * A direction's time: per step the product at half the GEMM's rate
   * (2·G·H·H / 50 ns) and a gate function (~4 ns) per gate and unit.
   * A direction runs whole on one thread (e->threads = 1 inside): its
   * recurrence writes the outputs, and a chunked input side's gx is its
   * own; so directions not split among the threads are the lead's alone
   * (pool_rule.c: a split product inside them raced, and lost a direction) */
  double ns = (double)(r->s * r->b) * (2.0 * (double)(r->g * r->h * r->h) / 50.0 + 4.0 * (double)(r->g * r->h));
  int threads = e->threads;
  bool split = r->d == 2 && emit_parallel_for(e, 2, 2 * ns); /* else KILN_LEAD_ONLY (threads > 1) */
  e->threads = 1;
  if (split) {
    emit_line(e, "for (int d = 0; d < 2; d++) {");
    emit_line(e, "  if (d == 0) {");
    e->indent += 2;
    emit_direction(e, &q, 0);
    e->indent -= 2;
    emit_line(e, "  } else {");
    e->indent += 2;
    emit_direction(e, &q, 1);
    e->indent -= 2;
    emit_line(e, "  }");
    emit_line(e, "}");
  } else {
    if (threads > 1) {
      if (r->d != 2)
        emit_line(e, "KILN_LEAD_ONLY");
      emit_line(e, "{ /* the directions, on the lead */");
      e->indent++;
    }
    for (int64_t d = 0; d < r->d; d++)
      emit_direction(e, &q, d);
    if (threads > 1) {
      e->indent--;
      emit_line(e, "}");
    }
  }
  e->threads = threads;
  return true;
}
