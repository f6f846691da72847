/* elementwise_chain.c — kiln's ElementwiseChain: a chain of elementwise ops
 * as one loop (made by compiler/passes/fuse_chain.c).
 *
 *   ElementwiseChain(x0, x1, ...) {steps=strings["Mul x0 x1", "Add t0 x2", "Relu t1"]} -> Y
 *
 * Each step is an op name and its operands: xK is input K (broadcast,
 * numpy-style, to Y's shape), tK the result of step K (an earlier one); the
 * last step's result is Y. Ops: Abs Ceil Cos Erf Exp Floor Log Neg
 * Reciprocal Relu Sigmoid Sin Sqrt Tanh (one operand), Add Sub Mul Div Pow
 * Max Min (two), Clip (x, lo, hi: both bounds, as Clip's inputs from opset
 * 11), Where (a bool condition input, then two operands). Every step
 * computes in Y's type, f32 or f64; Where's condition is a bool input.
 * Max, Min and Clip keep their nodes' formulas, NaN included (Max and Min
 * return a NaN first operand; Clip passes a NaN x, and with lo > hi gives
 * hi), so a chain's bits are the separate nodes'.
 *
 * Why an op: each elementwise node costs a pass over memory and a buffer;
 * a chain of them is one pass here, its intermediates in registers. _eval
 * rounds every step to Y's type, as the separate nodes did, and uses the
 * formulas of unary.c and binary.c; _emit writes one loop nest whose body
 * is one line per step ("const float s0 = ...;"), every bound a constant. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "elementwise_chain.h"

#define CHAIN_MAX_INPUTS 32

/* The ops a chain may hold and their operand counts. */
static const struct {
  int op, narg;
} chain_ops[] = {
    {OP_ABS, 1},  {OP_CEIL, 1}, {OP_COS, 1},  {OP_ERF, 1},  {OP_EXP, 1},  {OP_FLOOR, 1},
    {OP_LOG, 1},  {OP_NEG, 1},  {OP_RECIPROCAL, 1},         {OP_RELU, 1}, {OP_SIGMOID, 1},
    {OP_SIN, 1},  {OP_SQRT, 1}, {OP_TANH, 1}, {OP_ADD, 2},  {OP_SUB, 2},  {OP_MUL, 2},
    {OP_DIV, 2},  {OP_POW, 2},  {OP_MAX, 2},  {OP_MIN, 2},  {OP_CLIP, 3}, {OP_WHERE, 3},
};

/* Operands of op in a chain, or 0 when a chain cannot hold it. */
int chain_op_arity(int op) {
  for (int i = 0; i < KILN_COUNT(chain_ops); i++)
    if (chain_ops[i].op == op)
      return chain_ops[i].narg;
  return 0;
}

/* ---- the steps attribute ---------------------------------------------------- */

/* One operand token ("x3", "t0") of step s into *arg; false if malformed. */
static bool parse_operand(const char *tok, size_t len, int s, int nin, int *arg) {
  if (len < 2 || (tok[0] != 'x' && tok[0] != 't'))
    return false;
  long v = 0;
  for (size_t i = 1; i < len; i++) {
    if (!isdigit((unsigned char)tok[i]) || v > 100000)
      return false;
    v = v * 10 + (tok[i] - '0');
  }
  if (tok[0] == 'x' ? v >= nin : v >= s)
    return false;
  *arg = tok[0] == 'x' ? (int)v : -1 - (int)v;
  return true;
}

/* Step s from its text "Op a b"; a message in err when malformed. */
static bool parse_step(const char *text, int s, int nin, Step *st, char *err, size_t en) {
  const char *p = text, *sp = strchr(p, ' ');
  char name[32];
  size_t nl = sp ? (size_t)(sp - p) : strlen(p);
  if (nl == 0 || nl >= sizeof name)
    goto bad;
  memcpy(name, p, nl);
  name[nl] = 0;
  st->op = op_lookup(name);
  st->narg = st->op >= 0 ? chain_op_arity(st->op) : 0;
  if (st->narg == 0) {
    snprintf(err, en, "step %d '%s': op '%s' cannot be in a chain; expected one of Abs Ceil Cos Erf "
             "Exp Floor Log Neg Reciprocal Relu Sigmoid Sin Sqrt Tanh Add Sub Mul Div Pow Max Min Clip Where", s, text,
             name);
    return false;
  }
  p += nl;
  for (int a = 0; a < st->narg; a++) {
    if (*p != ' ')
      goto bad;
    p++;
    const char *end = strchr(p, ' ');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (!parse_operand(p, len, s, nin, &st->arg[a]))
      goto bad;
    p += len;
  }
  if (*p == 0)
    return true;
bad:
  snprintf(err, en, "step %d '%s' is malformed; expected an op and its operands, each xK (input K < %d) "
           "or tK (the result of an earlier step K)", s, text, nin);
  return false;
}

/* The node's steps into st (at most CHAIN_MAX_STEPS); false + err. */
bool chain_steps(const Node *n, Step *st, int *ns, char *err, size_t en) {
  const Attr *a = attr_get(n, "steps");
  if (!a || a->kind != ATTR_STRINGS || a->n < 1 || a->n > CHAIN_MAX_STEPS) {
    snprintf(err, en, "steps is %s; expected strings[...] of 1 to %d steps", a ? "malformed" : "absent",
             CHAIN_MAX_STEPS);
    return false;
  }
  for (int s = 0; s < a->n; s++)
    if (!parse_step(a->strings[s], s, n->nin, &st[s], err, en))
      return false;
  *ns = a->n;
  return true;
}

/* ---- infer ------------------------------------------------------------------ */

/* Each step's operands have the right kinds: Where's condition a bool
 * input, every other operand of dtype dt. */
static bool operand_types_ok(const Graph *g, const Node *n, const Step *st, int ns, DType dt, char *err,
                             size_t en) {
  for (int s = 0; s < ns; s++)
    for (int a = 0; a < st[s].narg; a++) {
      bool cond = st[s].op == OP_WHERE && a == 0;
      int k = st[s].arg[a];
      DType got = k >= 0 ? g->vals[n->in[k]].type.dt : dt;
      if (got != (cond ? DT_BOOL : dt)) {
        snprintf(err, en, "step %d reads %s%d of type %s; expected %s", s, k >= 0 ? "x" : "t",
                 k >= 0 ? k : -1 - k, dt_name(got), cond ? "bool (Where's condition)" : dt_name(dt));
        return false;
      }
    }
  return true;
}

bool elementwise_chain_infer(Graph *g, Node *n, Diag *d) {
  Step st[CHAIN_MAX_STEPS];
  int ns;
  char err[256];
  if (n->nin < 1 || n->nin > CHAIN_MAX_INPUTS)
    return diag_node(d, g, n, "%d inputs; expected 1 to %d", n->nin, CHAIN_MAX_INPUTS);
  for (int i = 0; i < n->nin; i++)
    if (n->in[i] < 0)
      return diag_node(d, g, n, "input %d is absent; expected a tensor", i);
  if (!chain_steps(n, st, &ns, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  DType dt = DT_UNDEF;
  Type t = g->vals[n->in[0]].type;
  for (int i = 0; i < n->nin; i++) {
    const Type *ti = &g->vals[n->in[i]].type;
    if (ti->dt != DT_BOOL)
      dt = dt == DT_UNDEF ? ti->dt : dt;
    if (!shape_broadcast(&t, ti, &t)) {
      char sa[128];
      return diag_node(d, g, n, "input %d (%s) does not broadcast with the others; expected equal dims or 1",
                       i, type_str(ti, sa, sizeof sa));
    }
  }
  if (dt != DT_F32 && dt != DT_F64)
    return diag_node(d, g, n, "the inputs are %s; expected f32 or f64 (and bool conditions)",
                     dt == DT_UNDEF ? "all bool" : dt_name(dt));
  if (!operand_types_ok(g, n, st, ns, dt, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  t.dt = dt;
  node_out(g, n, 0)->type = t;
  return true;
}

/* ---- eval ------------------------------------------------------------------- */

static double step_eval(int op, const double *v) {
  switch (op) {
  case OP_ABS: return fabs(v[0]);
  case OP_CEIL: return ceil(v[0]);
  case OP_COS: return cos(v[0]);
  case OP_ERF: return erf(v[0]);
  case OP_EXP: return exp(v[0]);
  case OP_FLOOR: return floor(v[0]);
  case OP_LOG: return log(v[0]);
  case OP_NEG: return -v[0];
  case OP_RECIPROCAL: return 1 / v[0];
  case OP_RELU: return v[0] > 0 ? v[0] : 0;
  case OP_SIGMOID: return 1 / (1 + exp(-v[0]));
  case OP_SIN: return sin(v[0]);
  case OP_SQRT: return sqrt(v[0]);
  case OP_TANH: return tanh(v[0]);
  case OP_ADD: return v[0] + v[1];
  case OP_SUB: return v[0] - v[1];
  case OP_MUL: return v[0] * v[1];
  case OP_DIV: return v[0] / v[1];
  case OP_POW: return pow(v[0], v[1]);
  case OP_MAX: return isnan(v[0]) || v[0] > v[1] ? v[0] : v[1];
  case OP_MIN: return isnan(v[0]) || v[0] < v[1] ? v[0] : v[1];
  case OP_CLIP: return v[0] < v[1] ? (v[1] > v[2] ? v[2] : v[1]) : v[0] > v[2] ? v[2] : v[0];
  case OP_WHERE: return v[0] != 0 ? v[1] : v[2];
  default: KILN_ASSERT(!"chain op without a formula"); return 0;
  }
}

/* x rounded to dt, as storing it in a tensor of dt would. */
static double round_to(DType dt, double x) { return dt == DT_F32 ? (double)(float)x : x; }

bool elementwise_chain_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  Step st[CHAIN_MAX_STEPS];
  int ns;
  char err[256];
  KILN_ASSERT(chain_steps(n, st, &ns, err, sizeof err));
  const Type *ot = &out[0].type;
  double t[CHAIN_MAX_STEPS];
  for (int64_t i = 0, cnt = type_numel(ot); i < cnt; i++) {
    for (int s = 0; s < ns; s++) {
      double v[3];
      for (int a = 0; a < st[s].narg; a++) {
        int k = st[s].arg[a];
        if (k < 0) {
          v[a] = t[-1 - k];
          continue;
        }
        int64_t j = bcast_src(ot, &in[k].type, i);
        DType dk = in[k].type.dt;
        v[a] = dk == DT_BOOL ? (double)el_get_u(dk, in[k].data, j) : el_get_f(dk, in[k].data, j);
      }
      t[s] = round_to(ot->dt, step_eval(st[s].op, v));
    }
    el_set_f(ot->dt, out[0].data, i, t[ns - 1]);
  }
  return true;
}

/* ---- emit ------------------------------------------------------------------- */

/* Step s as C in dt, its operands already C expressions. */
static const char *step_expr(Emit *e, DType dt, int op, const char *const *v) {
  Arena *a = e->g->arena;
#define F(name) emit_mathfn(e, dt, name)
#define L(x) emit_double_literal(e, dt, x)
  switch (op) {
  case OP_ABS: return arena_printf(a, "%s(%s)", F("fabs"), v[0]);
  case OP_CEIL: return arena_printf(a, "%s(%s)", F("ceil"), v[0]);
  case OP_COS: return arena_printf(a, "%s(%s)", F("cos"), v[0]);
  case OP_ERF: return arena_printf(a, "%s(%s)", F("erf"), v[0]);
  case OP_EXP: return arena_printf(a, "%s(%s)", F("exp"), v[0]);
  case OP_FLOOR: return arena_printf(a, "%s(%s)", F("floor"), v[0]);
  case OP_LOG: return arena_printf(a, "%s(%s)", F("log"), v[0]);
  case OP_NEG: return arena_printf(a, "-%s", v[0]);
  case OP_RECIPROCAL: return arena_printf(a, "%s / %s", L(1), v[0]);
  case OP_RELU: return arena_printf(a, "%s > %s ? %s : %s", v[0], L(0), v[0], L(0));
  case OP_SIGMOID: return arena_printf(a, "%s / (%s + %s(-%s))", L(1), L(1), F("exp"), v[0]);
  case OP_SIN: return arena_printf(a, "%s(%s)", F("sin"), v[0]);
  case OP_SQRT: return arena_printf(a, "%s(%s)", F("sqrt"), v[0]);
  case OP_TANH: return arena_printf(a, "%s(%s)", F("tanh"), v[0]);
  case OP_ADD: return arena_printf(a, "%s + %s", v[0], v[1]);
  case OP_SUB: return arena_printf(a, "%s - %s", v[0], v[1]);
  case OP_MUL: return arena_printf(a, "%s * %s", v[0], v[1]);
  case OP_DIV: return arena_printf(a, "%s / %s", v[0], v[1]);
  case OP_POW: return arena_printf(a, "%s(%s, %s)", F("pow"), v[0], v[1]);
  case OP_MAX: return arena_printf(a, "isnan(%s) || %s > %s ? %s : %s", v[0], v[0], v[1], v[0], v[1]);
  case OP_MIN: return arena_printf(a, "isnan(%s) || %s < %s ? %s : %s", v[0], v[0], v[1], v[0], v[1]);
  case OP_CLIP:
    return arena_printf(a, "%s < %s ? (%s > %s ? %s : %s) : %s > %s ? %s : %s", v[0], v[1], v[1], v[2], v[2], v[1],
                        v[0], v[2], v[2], v[0]);
  case OP_WHERE: return arena_printf(a, "%s ? %s : %s", v[0], v[1], v[2]);
  default: KILN_ASSERT(!"chain op without a formula"); return "";
  }
#undef F
#undef L
}

/* The loop nest over Y's shape: dims of 1 dropped, and a dim merged into
 * the one before it where every operand is contiguous across both (same-
 * shape operands give one flat loop). st[k][d]: input k's element stride
 * along loop d (0: broadcast), k = nin for Y. */
typedef struct Nest {
  int r;
  int64_t dim[MAX_RANK];
  int64_t st[CHAIN_MAX_INPUTS + 1][MAX_RANK];
} Nest;

static void chain_nest(const Graph *g, const Node *n, Nest *ns) {
  const Type *ot = &g->vals[n->out[0]].type;
  int rank = ot->rank, nk = n->nin + 1;
  int64_t st[CHAIN_MAX_INPUTS + 1][MAX_RANK];
  for (int k = 0; k < nk; k++) {
    const Type *t = k < n->nin ? &g->vals[n->in[k]].type : ot;
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
      int td = d - (rank - t->rank);
      int64_t dim = td >= 0 ? t->dims[td] : 1;
      st[k][d] = dim == 1 ? 0 : s;
      s *= dim;
    }
  }
  ns->r = 0;
  for (int d = 0; d < rank; d++) {
    if (ot->dims[d] == 1)
      continue;
    bool merge = ns->r > 0;
    for (int k = 0; k < nk && merge; k++)
      merge = ns->st[k][ns->r - 1] == st[k][d] * ot->dims[d];
    int at = merge ? ns->r - 1 : ns->r++;
    ns->dim[at] = merge ? ns->dim[at] * ot->dims[d] : ot->dims[d];
    for (int k = 0; k < nk; k++)
      ns->st[k][at] = st[k][d];
  }
}

/* "i0 * 64 + i1" for operand k of the nest. */
static const char *nest_index(Emit *e, const Nest *ns, int k) {
  Buf b = {0};
  for (int d = 0; d < ns->r; d++) {
    if (ns->st[k][d] == 0)
      continue;
    buf_printf(&b, "%si%d", b.len ? " + " : "", d);
    if (ns->st[k][d] != 1)
      buf_printf(&b, " * %lld", (long long)ns->st[k][d]);
  }
  const char *r = arena_strdup(e->g->arena, b.len ? b.s : "0");
  buf_free(&b);
  return r;
}

/* Estimated serial nanoseconds per element (emit_parallel_for's rules of
 * thumb): a libm call about 4, vectorised arithmetic 0.25. */
static double chain_ns(const Step *st, int ns) {
  double t = 0;
  for (int s = 0; s < ns; s++) {
    int op = st[s].op;
    bool call = op != OP_NEG && op != OP_RELU && op != OP_RECIPROCAL && op != OP_ADD && op != OP_SUB &&
                op != OP_MUL && op != OP_DIV && op != OP_WHERE && op != OP_MAX && op != OP_MIN && op != OP_CLIP;
    t += call ? 4 : 0.25;
  }
  return t;
}

bool elementwise_chain_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  Step st[CHAIN_MAX_STEPS];
  int ns;
  char err[256];
  KILN_ASSERT(chain_steps(n, st, &ns, err, sizeof err));
  const Type *ot = &g->vals[n->out[0]].type;
  if (type_numel(ot) == 0)
    return true;
  DType dt = ot->dt;
  Nest nest;
  chain_nest(g, n, &nest);
  nest.r = emit_split_blocks(e, nest.r, nest.dim, n->nin + 1, nest.st, (double)type_numel(ot) * chain_ns(st, ns));
  const char *elem[CHAIN_MAX_INPUTS];
  for (int k = 0; k < n->nin; k++)
    elem[k] = arena_printf(g->arena, "%s[%s]", emit_ref(e, n->in[k]), nest_index(e, &nest, k));
  const char *y = arena_printf(g->arena, "%s[%s]", emit_ref(e, n->out[0]), nest_index(e, &nest, n->nin));
  if (nest.r > 0) /* every iteration writes its own elements of Y */
    emit_parallel_for(e, nest.dim[0], (double)type_numel(ot) * chain_ns(st, ns));
  for (int d = 0; d < nest.r; d++) {
    emit_line(e, "for (int i%d = 0; i%d < %lld; i%d++) {", d, d, (long long)nest.dim[d], d);
    e->indent++;
  }
  for (int s = 0; s < ns; s++) {
    const char *v[3];
    for (int a = 0; a < st[s].narg; a++) {
      int k = st[s].arg[a];
      v[a] = k >= 0 ? elem[k] : arena_printf(g->arena, "s%d", -1 - k);
    }
    const char *x = step_expr(e, dt, st[s].op, v);
    if (s + 1 < ns)
      emit_line(e, "const %s s%d = %s; /* %s */", dt_ctype(dt), s, x, op_table[st[s].op].name);
    else
      emit_line(e, "%s = %s; /* %s */", y, x, op_table[st[s].op].name);
  }
  for (int d = 0; d < nest.r; d++) {
    e->indent--;
    emit_line(e, "}");
  }
  return true;
}

/* ---- FLOP count (ops.def's flops column) -------------------------------------- */

/* One op per step per output element. */
int64_t elementwise_chain_flops(const Graph *g, const Node *n) {
  const Attr *a = attr_get(n, "steps");
  return type_numel(&gval(g, n->out[0])->type) * (a && a->n > 0 ? a->n : 1);
}
