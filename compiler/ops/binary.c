/* binary.c — elementwise ops of two inputs with numpy broadcasting:
 * arithmetic (Add Sub Mul Div Pow Mod), comparisons (-> bool), logic on
 * bools (And Or Xor), bitwise logic on integers (BitwiseAnd BitwiseOr
 * BitwiseXor), BitShift and PRelu.
 *
 * _eval computes floats in double, signed integers in int64 with wrapping
 * (as C's narrowing conversion gives), unsigned in uint64. Integer division
 * truncates toward zero like C; division by zero yields 0 in _eval (ONNX
 * leaves it undefined). */
#include <math.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

static bool is_compare(int op) {
  return op == OP_EQUAL || op == OP_LESS || op == OP_GREATER || op == OP_LESSOREQUAL ||
         op == OP_GREATEROREQUAL;
}

static bool is_logic(int op) { return op == OP_AND || op == OP_OR || op == OP_XOR; }

static bool is_bitwise(int op) {
  return op == OP_BITWISEAND || op == OP_BITWISEOR || op == OP_BITWISEXOR;
}

bool binary_infer(Graph *g, Node *n, Diag *d) {
  Value *a = node_in(g, n, 0), *b = node_in(g, n, 1), *y = node_out(g, n, 0);
  DType dt = a->type.dt;
  if (n->op != OP_POW && a->type.dt != b->type.dt)
    return diag_node(d, g, n, "inputs '%s' (%s) and '%s' (%s) differ in type; expected the same type",
                     a->name, dt_name(a->type.dt), b->name, dt_name(b->type.dt));
  if (is_logic(n->op) && dt != DT_BOOL)
    return diag_node(d, g, n, "input '%s' is %s; expected bool", a->name, dt_name(dt));
  if (!is_logic(n->op) && n->op != OP_EQUAL && dt == DT_BOOL)
    return diag_node(d, g, n, "input '%s' is bool; expected a numeric type", a->name);
  if (is_bitwise(n->op) && (dt == DT_BOOL || !dt_is_int(dt)))
    return diag_node(d, g, n, "input '%s' is %s; expected an integer type", a->name, dt_name(dt));
  if (n->op == OP_BITSHIFT && !dt_is_unsigned_int(dt))
    return diag_node(d, g, n, "input '%s' is %s; expected an unsigned integer type", a->name,
                     dt_name(dt));
  if (n->op == OP_POW && (b->type.dt == DT_BOOL || dt == DT_BOOL))
    return diag_node(d, g, n, "Pow of bool; expected numeric inputs");
  if (n->op == OP_MOD && dt_is_float(dt) && attr_int(n, "fmod", 0) != 1)
    return diag_node(d, g, n, "float Mod needs fmod=1; expected the attribute fmod=1");
  if (n->op == OP_BITSHIFT) {
    const char *dir = attr_str(n, "direction", "");
    if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))
      return diag_node(d, g, n, "direction is '%s'; expected \"LEFT\" or \"RIGHT\"", dir);
  }
  Type t;
  if (!shape_broadcast(&a->type, &b->type, &t)) {
    char sa[128], sb[128];
    return diag_node(d, g, n, "shapes %s and %s do not broadcast; expected equal dims or 1",
                     type_str(&a->type, sa, sizeof sa), type_str(&b->type, sb, sizeof sb));
  }
  t.dt = (is_compare(n->op) || is_logic(n->op)) ? DT_BOOL : dt;
  y->type = t;
  return true;
}

static double eval_f(int op, double a, double b) {
  switch (op) {
  case OP_ADD: return a + b;
  case OP_SUB: return a - b;
  case OP_MUL: return a * b;
  case OP_DIV: return a / b;
  case OP_POW: return pow(a, b);
  case OP_MOD: return fmod(a, b);
  case OP_PRELU: return a < 0 ? b * a : a;
  case OP_EQUAL: return a == b;
  case OP_LESS: return a < b;
  case OP_GREATER: return a > b;
  case OP_LESSOREQUAL: return a <= b;
  case OP_GREATEROREQUAL: return a >= b;
  default: KILN_ASSERT(!"binary float op"); return 0;
  }
}

static int64_t eval_i(const Node *n, int64_t a, int64_t b) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (n->op) {
  case OP_ADD: return (int64_t)(ua + ub);
  case OP_SUB: return (int64_t)(ua - ub);
  case OP_MUL: return (int64_t)(ua * ub);
  case OP_DIV: return b == 0 || (a == INT64_MIN && b == -1) ? 0 : a / b;
  case OP_MOD: {
    if (b == 0 || (a == INT64_MIN && b == -1))
      return 0;
    int64_t r = a % b;
    if (attr_int(n, "fmod", 0) == 0 && r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return r;
  }
  case OP_PRELU: return a < 0 ? (int64_t)(ua * ub) : a;
  case OP_EQUAL: return a == b;
  case OP_LESS: return a < b;
  case OP_GREATER: return a > b;
  case OP_LESSOREQUAL: return a <= b;
  case OP_GREATEROREQUAL: return a >= b;
  case OP_AND: return a && b;
  case OP_OR: return a || b;
  case OP_XOR: return !a != !b;
  case OP_BITWISEAND: return a & b;
  case OP_BITWISEOR: return a | b;
  case OP_BITWISEXOR: return a ^ b;
  default: KILN_ASSERT(!"binary int op"); return 0;
  }
}

static uint64_t eval_u(const Node *n, uint64_t a, uint64_t b) {
  switch (n->op) {
  case OP_ADD: return a + b;
  case OP_SUB: return a - b;
  case OP_MUL: return a * b;
  case OP_DIV: return b ? a / b : 0;
  case OP_MOD: return b ? a % b : 0;
  case OP_PRELU: return a;
  case OP_BITSHIFT:
    if (b >= 64)
      return 0;
    return strcmp(attr_str(n, "direction", "LEFT"), "LEFT") == 0 ? a << b : a >> b;
  case OP_EQUAL: return a == b;
  case OP_LESS: return a < b;
  case OP_GREATER: return a > b;
  case OP_LESSOREQUAL: return a <= b;
  case OP_GREATEROREQUAL: return a >= b;
  case OP_AND: return a && b;
  case OP_OR: return a || b;
  case OP_XOR: return !a != !b;
  case OP_BITWISEAND: return a & b;
  case OP_BITWISEOR: return a | b;
  case OP_BITWISEXOR: return a ^ b;
  default: KILN_ASSERT(!"binary unsigned op"); return 0;
  }
}

bool binary_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Type *ot = &out[0].type;
  DType dt = in[0].type.dt, bdt = in[1].type.dt, odt = ot->dt;
  int64_t cnt = type_numel(ot);
  for (int64_t i = 0; i < cnt; i++) {
    int64_t ia = bcast_src(ot, &in[0].type, i), ib = bcast_src(ot, &in[1].type, i);
    if (n->op == OP_POW) {
      double r = pow(el_get_f(dt, in[0].data, ia), el_get_f(bdt, in[1].data, ib));
      el_set_f(odt, out[0].data, i, r);
    } else if (dt_is_float(dt)) {
      el_set_f(odt, out[0].data, i, eval_f(n->op, el_get_f(dt, in[0].data, ia), el_get_f(dt, in[1].data, ib)));
    } else if (dt_is_signed_int(dt)) {
      el_set_i(odt, out[0].data, i, eval_i(n, el_get_i(dt, in[0].data, ia), el_get_i(dt, in[1].data, ib)));
    } else {
      el_set_u(odt, out[0].data, i, eval_u(n, el_get_u(dt, in[0].data, ia), el_get_u(dt, in[1].data, ib)));
    }
  }
  return true;
}

bool binary_emit(Emit *e, const Node *n) {
  DType dt = gval(e->g, n->in[0])->type.dt;
  DType bdt = gval(e->g, n->in[1])->type.dt;
  bool fl = dt_is_float(dt), sg = dt_is_signed_int(dt);
  const char *x;
  switch (n->op) {
  case OP_ADD: x = "$0 + $1"; break;
  case OP_SUB: x = "$0 - $1"; break;
  case OP_MUL: x = "$0 * $1"; break;
  case OP_DIV: x = "$0 / $1"; break;
  case OP_EQUAL: x = "$0 == $1"; break;
  case OP_LESS: x = "$0 < $1"; break;
  case OP_GREATER: x = "$0 > $1"; break;
  case OP_LESSOREQUAL: x = "$0 <= $1"; break;
  case OP_GREATEROREQUAL: x = "$0 >= $1"; break;
  case OP_AND: x = "$0 && $1"; break;
  case OP_OR: x = "$0 || $1"; break;
  case OP_XOR: x = "$0 != $1"; break;
  case OP_BITWISEAND: x = "$0 & $1"; break;
  case OP_BITWISEOR: x = "$0 | $1"; break;
  case OP_BITWISEXOR: x = "$0 ^ $1"; break;
  case OP_PRELU: x = "$0 < 0 ? $1 * $0 : $0"; break;
  case OP_BITSHIFT:
    x = strcmp(attr_str(n, "direction", "LEFT"), "LEFT") == 0 ? "$0 << $1" : "$0 >> $1";
    break;
  case OP_POW:
    x = fl ? arena_printf(e->g->arena, "%s($0, (%s)$1)", emit_mathfn(e, dt, "pow"), dt_ctype(dt))
           : "pow((double)$0, (double)$1)";
    (void)bdt;
    break;
  case OP_MOD:
    if (fl)
      x = arena_printf(e->g->arena, "%s($0, $1)", emit_mathfn(e, dt, "fmod"));
    else if (sg && attr_int(n, "fmod", 0) == 0)
      x = "($0 % $1 != 0 && (($0 % $1 < 0) != ($1 < 0))) ? $0 % $1 + $1 : $0 % $1";
    else
      x = "$0 % $1";
    break;
  default: return false;
  }
  emit_elementwise(e, n, x);
  return true;
}
