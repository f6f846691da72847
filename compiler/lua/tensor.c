/* tensor.c — tensors on the Lua side: a userdata per graph value with
 * operator metamethods (+ - * / % ^ unary minus) and methods that map one
 * to one onto kiln ops (x:matmul(w), x:softmax(-1), x:transpose(1, 2), ...),
 * plus the generic op(name, inputs, attrs) that reaches every op kiln has.
 * Each call adds one node and infers it at once, so a shape error stops
 * the script at the line that made it. Axes are 0-based, negative from the
 * end, as in PyTorch and ONNX; shape tables are Lua lists. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../ir/build.h"
#include "../ir/naming.h"
#include "../ir/ops.h"
#include "../ops/rotary.h"
#include "lua_ctx.h"
#include "lua_tensor.h"

#define TENSOR_MT "kiln.Tensor"

/* A tensor on the Lua side: one graph value. */
typedef struct LTensor {
  int vid;
} LTensor;

/* ---- values <-> Lua ----------------------------------------------------------- */

void lt_push(lua_State *L, int vid) {
  LTensor *t = lua_newuserdatauv(L, sizeof(LTensor), 0);
  t->vid = vid;
  luaL_setmetatable(L, TENSOR_MT);
}

bool lt_is(lua_State *L, int i) { return luaL_testudata(L, i, TENSOR_MT) != NULL; }

int lt_check_like(lua_State *L, int i, DType like) {
  LTensor *t = luaL_testudata(L, i, TENSOR_MT);
  if (t)
    return t->vid;
  if (lua_isboolean(L, i))
    return ir_const_scalar(lctx(L)->g, "const", DT_BOOL, lua_toboolean(L, i));
  if (lua_type(L, i) == LUA_TNUMBER) {
    DType dt = like != DT_UNDEF ? like : lua_isinteger(L, i) ? DT_I64 : DT_F32;
    return ir_const_scalar(lctx(L)->g, "const", dt, lua_tonumber(L, i));
  }
  return dsl_fail(L, "argument %d is a %s; expected a tensor or a number", i, luaL_typename(L, i));
}

int lt_check(lua_State *L, int i) { return lt_check_like(L, i, DT_UNDEF); }

static const Type *ltype(lua_State *L, int vid) { return &gval(lctx(L)->g, vid)->type; }

/* ---- attributes from a Lua table -------------------------------------------- */

static bool all_integers(lua_State *L, int idx, int n) {
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, i);
    bool isint = lua_isinteger(L, -1);
    lua_pop(L, 1);
    if (!isint)
      return false;
  }
  return true;
}

static void set_list_attr(lua_State *L, int node, const char *key, int idx, const char *what) {
  Graph *g = lctx(L)->g;
  int n = (int)lua_rawlen(L, idx);
  lua_rawgeti(L, idx, 1);
  int first = lua_type(L, -1);
  lua_pop(L, 1);
  if (first == LUA_TSTRING) {
    Attr *a = node_add_attr(g, &g->nodes[node], key, ATTR_STRINGS);
    a->n = n;
    a->strings = arena_alloc(g->arena, sizeof(char *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
      lua_rawgeti(L, idx, i + 1);
      if (lua_type(L, -1) != LUA_TSTRING)
        dsl_fail(L, "%s: attribute '%s' mixes strings and other values", what, key);
      a->strings[i] = arena_strdup(g->arena, lua_tostring(L, -1));
      lua_pop(L, 1);
    }
    return;
  }
  bool ints = all_integers(L, idx, n);
  Attr *a = node_add_attr(g, &g->nodes[node], key, ints ? ATTR_INTS : ATTR_FLOATS);
  a->n = n;
  if (ints)
    a->ints = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(n + 1));
  else
    a->floats = arena_alloc(g->arena, sizeof(double) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, idx, i + 1);
    if (lua_type(L, -1) != LUA_TNUMBER)
      dsl_fail(L, "%s: attribute '%s' element %d is a %s; expected a number", what, key, i + 1,
               luaL_typename(L, -1));
    if (ints)
      a->ints[i] = lua_tointeger(L, -1);
    else
      a->floats[i] = lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
}

void lt_attrs(lua_State *L, int node, int idx, const char *what) {
  Graph *g = lctx(L)->g;
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      dsl_fail(L, "%s: attribute names must be strings", what);
    const char *key = lua_tostring(L, -2);
    switch (lua_type(L, -1)) {
    case LUA_TNUMBER: {
      bool known;
      int exact = 0;
      lua_Integer iv = lua_tointegerx(L, -1, &exact); /* a float only when it is a whole number */
      if (lua_isinteger(L, -1))
        ir_attr_int(g, node, key, lua_tointeger(L, -1));
      else if (exact && attr_expected_kind(key, &known) == ATTR_INT && known)
        ir_attr_int(g, node, key, iv); /* 2.0 (d / 2 in Lua is a float) where an int is meant */
      else
        ir_attr_float(g, node, key, lua_tonumber(L, -1));
      break;
    }
    case LUA_TBOOLEAN:
      ir_attr_int(g, node, key, lua_toboolean(L, -1));
      break;
    case LUA_TSTRING:
      ir_attr_str(g, node, key, lua_tostring(L, -1));
      break;
    case LUA_TTABLE:
      set_list_attr(L, node, key, lua_gettop(L), what);
      break;
    case LUA_TUSERDATA: {
      LTensor *t = luaL_testudata(L, -1, TENSOR_MT);
      Value *v = t ? gval(g, t->vid) : NULL;
      if (!v || !v->data)
        dsl_fail(L, "%s: attribute '%s' must be a constant tensor", what, key);
      Attr *a = node_add_attr(g, &g->nodes[node], key, ATTR_TENSOR);
      a->t = arena_alloc(g->arena, sizeof(Tensor));
      a->t->type = v->type;
      a->t->data = v->data;
      break;
    }
    default:
      dsl_fail(L, "%s: attribute '%s' is a %s; expected a number, string, list or tensor", what,
               key, luaL_typename(L, -1));
    }
    lua_pop(L, 1);
  }
  /* lua_next's order follows Lua's per-run hash seed: sorted, the node (and
   * kiln export's file) is the same on every run */
  Node *n = &g->nodes[node];
  for (int i = 1; i < n->nattr; i++) /* insertion sort: a handful of attributes */
    for (int j = i; j > 0 && strcmp(n->attrs[j - 1].name, n->attrs[j].name) > 0; j--) {
      Attr t = n->attrs[j];
      n->attrs[j] = n->attrs[j - 1];
      n->attrs[j - 1] = t;
    }
}

/* ---- adding a node ------------------------------------------------------------- */

int lt_op(lua_State *L, const char *what, int op, const int *in, int nin, int attrs, int nout) {
  LuaCtx *c = lctx(L);
  Graph *g = c->g;
  if (attrs)
    attrs = lua_absindex(L, attrs);
  const char *origin = dsl_node_origin(L);
  int node = ir_op(g, op, origin, in, nin, nout);
  g->nodes[node].name = arena_printf(c->a, "%s_%d", op_table[op].name, node);
  /* dead until inferred: a script may catch (pcall) an error raised half
   * way (a bad attribute, a shape error) and go on building; the half-built
   * node must not reach the final graph (graph_compact drops it) */
  g->nodes[node].dead = true;
  if (attrs) {
    lt_attrs(L, node, attrs, what);
    AttrKind want;
    const Attr *bad = attr_mistyped(&g->nodes[node], &want);
    if (bad)
      return dsl_fail(L, "%s: attribute '%s' is %s; expected %s", what, bad->name, attr_kind_name(bad->kind),
                      attr_kind_name(want));
  }
  g->nodes[node].dead = false;
  Diag d = {0};
  if (!ir_finish(g, node, &d)) {
    g->nodes[node].dead = true;
    /* drop diag_node's "node 'X' (Op): " prefix: the script line names it */
    const char *msg = d.msg;
    const char *p = strstr(msg, "): ");
    if (!strncmp(msg, "node '", 6) && p)
      msg = p + 3;
    return dsl_fail(L, "%s: %s", what, msg);
  }
  name_node_outputs(g, node, c->name_prefix); /* "blk.0.ffn_gate_silu", not "Silu_57" */
  for (int i = 0; i < nout; i++)
    lt_push(L, ir_out(g, node, i));
  return nout;
}

static int op_id(lua_State *L, const char *name) {
  int op = op_lookup(name);
  if (op < 0)
    dsl_fail(L, "op '%s' is not one kiln has (see `kiln ops`)", name);
  return op;
}

/* One op on the tensors at stack 1..nin (numbers become constants of the
 * first tensor's dtype), attributes from the table at attrs (0: none). */
static int simple_op(lua_State *L, const char *what, const char *opname, int nin, int attrs) {
  int in[8];
  DType like = DT_UNDEF;
  for (int i = 1; i <= nin; i++)
    if (lt_is(L, i) && like == DT_UNDEF)
      like = ltype(L, lt_check(L, i))->dt;
  for (int i = 0; i < nin; i++)
    in[i] = lt_check_like(L, i + 1, like);
  return lt_op(L, what, op_id(L, opname), in, nin, attrs, 1);
}

/* ---- metamethods and the elementwise families -------------------------------- */

#define BINARY(fn, onnx)                                                                   \
  static int fn(lua_State *L) { return simple_op(L, #fn, onnx, 2, 0); }
BINARY(add, "Add")
BINARY(sub, "Sub")
BINARY(mul, "Mul")
BINARY(div, "Div")
BINARY(pow_, "Pow")
BINARY(matmul, "MatMul")
BINARY(eq, "Equal")
BINARY(lt, "Less")
BINARY(gt, "Greater")
BINARY(le, "LessOrEqual")
BINARY(ge, "GreaterOrEqual")
BINARY(land, "And")
BINARY(lor, "Or")
BINARY(lxor, "Xor")
BINARY(maximum, "Max")
BINARY(minimum, "Min")
BINARY(prelu, "PRelu")
#undef BINARY

static int mod(lua_State *L) {
  int a = lt_check(L, 1);
  DType dt = ltype(L, a)->dt;
  int in[2] = {a, lt_check_like(L, 2, dt)};
  lua_newtable(L);
  lua_pushinteger(L, dt_is_float(dt));
  lua_setfield(L, -2, "fmod");
  return lt_op(L, "mod", OP_MOD, in, 2, -1, 1);
}

static int ne(lua_State *L) {
  eq(L);
  lua_replace(L, 1);
  lua_settop(L, 1);
  return simple_op(L, "ne", "Not", 1, 0);
}

#define UNARY(fn, onnx)                                                                    \
  static int fn(lua_State *L) {                                                            \
    lua_settop(L, 1);                                                                      \
    return simple_op(L, #fn, onnx, 1, 0);                                                  \
  }
UNARY(neg, "Neg")
UNARY(abs_, "Abs")
UNARY(exp_, "Exp")
UNARY(log_, "Log")
UNARY(sqrt_, "Sqrt")
UNARY(reciprocal, "Reciprocal")
UNARY(tanh_, "Tanh")
UNARY(sigmoid, "Sigmoid")
UNARY(relu, "Relu")
UNARY(erf_, "Erf")
UNARY(sin_, "Sin")
UNARY(cos_, "Cos")
UNARY(floor_, "Floor")
UNARY(ceil_, "Ceil")
UNARY(round_, "Round")
UNARY(sign, "Sign")
UNARY(lnot, "Not")
UNARY(isnan_, "IsNaN")
UNARY(softplus, "Softplus")
UNARY(identity, "Identity")
UNARY(shape_of, "Shape")
#undef UNARY

/* ---- ops with axes and shapes ------------------------------------------------ */

static int64_t opt_int(lua_State *L, int i, int64_t dflt) {
  return lua_isnoneornil(L, i) ? dflt : luaL_checkinteger(L, i);
}

/* One int attribute `key` = v. */
static int with_int_attr(lua_State *L, const char *what, const char *opname, int nin,
                         const char *key, int64_t v) {
  lua_newtable(L);
  lua_pushinteger(L, v);
  lua_setfield(L, -2, key);
  return simple_op(L, what, opname, nin, lua_gettop(L));
}

#define AXIS_OP(fn, onnx)                                                                  \
  static int fn(lua_State *L) {                                                            \
    int64_t axis = opt_int(L, 2, -1);                                                      \
    lua_settop(L, 1);                                                                      \
    return with_int_attr(L, #fn, onnx, 1, "axis", axis);                                   \
  }
AXIS_OP(softmax, "Softmax")
AXIS_OP(log_softmax, "LogSoftmax")
AXIS_OP(sparsemax, "Sparsemax")
AXIS_OP(entmax15, "Entmax15")
#undef AXIS_OP

/* Integer list from the table at idx, or from the integer arguments
 * idx..top when idx is not a table. */
static int int_list(lua_State *L, int idx, int64_t *v, int max, const char *what) {
  int n = 0;
  if (lua_istable(L, idx)) {
    n = (int)lua_rawlen(L, idx);
    if (n > max)
      dsl_fail(L, "%s: %d values; expected at most %d", what, n, max);
    for (int i = 0; i < n; i++) {
      lua_rawgeti(L, idx, i + 1);
      if (!lua_isinteger(L, -1))
        dsl_fail(L, "%s: element %d is not an integer", what, i + 1);
      v[i] = lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
    return n;
  }
  for (int i = idx; i <= lua_gettop(L); i++) {
    if (n >= max)
      dsl_fail(L, "%s: more than %d values", what, max);
    if (!lua_isinteger(L, i))
      dsl_fail(L, "%s: argument %d is not an integer", what, i);
    v[n++] = lua_tointeger(L, i);
  }
  return n;
}

static int const_ints(lua_State *L, const int64_t *v, int n) {
  return ir_const_i64(lctx(L)->g, "const", v, n);
}

static int axis_of(lua_State *L, int vid, int64_t axis, const char *what) {
  int a;
  if (!axis_norm(axis, ltype(L, vid)->rank, &a))
    dsl_fail(L, "%s: axis %lld is out of range for a rank-%d tensor", what, (long long)axis,
             ltype(L, vid)->rank);
  return a;
}

/* Push the attribute table {perm = {perm[0], ...}} for Transpose. */
static void push_perm_attrs(lua_State *L, const int64_t *perm, int n) {
  lua_newtable(L);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, perm[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "perm");
}

static int transpose(lua_State *L) {
  int x = lt_check(L, 1);
  int rank = ltype(L, x)->rank;
  int a = axis_of(L, x, opt_int(L, 2, -2), "transpose");
  int b = axis_of(L, x, opt_int(L, 3, -1), "transpose");
  int64_t perm[MAX_RANK];
  for (int i = 0; i < rank; i++)
    perm[i] = i;
  perm[a] = b;
  perm[b] = a;
  lua_settop(L, 1);
  push_perm_attrs(L, perm, rank);
  return simple_op(L, "transpose", "Transpose", 1, 2);
}

static int permute(lua_State *L) {
  int64_t perm[MAX_RANK];
  int n = int_list(L, 2, perm, MAX_RANK, "permute");
  lua_settop(L, 1);
  push_perm_attrs(L, perm, n);
  return simple_op(L, "permute", "Transpose", 1, 2);
}

/* op(x, const ints) — Reshape, Expand, Tile, Squeeze, Unsqueeze. */
static int with_const_ints(lua_State *L, const char *what, int op, int from) {
  int64_t v[MAX_RANK];
  int n = int_list(L, from, v, MAX_RANK, what);
  int in[2] = {lt_check(L, 1), const_ints(L, v, n)};
  return lt_op(L, what, op, in, 2, 0, 1);
}

static int reshape(lua_State *L) { return with_const_ints(L, "reshape", OP_RESHAPE, 2); }
static int expand(lua_State *L) { return with_const_ints(L, "expand", OP_EXPAND, 2); }
static int tile(lua_State *L) { return with_const_ints(L, "tile", OP_TILE, 2); }
static int unsqueeze(lua_State *L) { return with_const_ints(L, "unsqueeze", OP_UNSQUEEZE, 2); }

static int squeeze(lua_State *L) {
  if (lua_gettop(L) < 2) {
    lua_settop(L, 1);
    return simple_op(L, "squeeze", "Squeeze", 1, 0);
  }
  return with_const_ints(L, "squeeze", OP_SQUEEZE, 2);
}

static int flatten(lua_State *L) {
  int64_t axis = opt_int(L, 2, 1);
  lua_settop(L, 1);
  return with_int_attr(L, "flatten", "Flatten", 1, "axis", axis);
}

/* x:narrow(axis, start, length): elements start .. start+length-1 (0-based). */
static int narrow(lua_State *L) {
  int x = lt_check(L, 1);
  int64_t axis = luaL_checkinteger(L, 2), start = luaL_checkinteger(L, 3);
  int64_t len = luaL_checkinteger(L, 4), stop = start + len;
  int in[4] = {x, const_ints(L, &start, 1), const_ints(L, &stop, 1), const_ints(L, &axis, 1)};
  return lt_op(L, "narrow", OP_SLICE, in, 4, 0, 1);
}

/* x:slice(axis, start, stop [, step]): Python-style, half open, negatives
 * from the end. */
static int slice(lua_State *L) {
  int x = lt_check(L, 1);
  int64_t axis = luaL_checkinteger(L, 2), start = luaL_checkinteger(L, 3);
  int64_t stop = luaL_checkinteger(L, 4), step = opt_int(L, 5, 1);
  int in[5] = {x, const_ints(L, &start, 1), const_ints(L, &stop, 1), const_ints(L, &axis, 1),
               const_ints(L, &step, 1)};
  return lt_op(L, "slice", OP_SLICE, in, 5, 0, 1);
}

/* Reductions: x:sum(axes [, keepdims]) (axes: an integer or a list; none:
 * all), opset 17 forms (ReduceSum takes axes as an input, the others as an
 * attribute). */
static int reduce(lua_State *L, const char *what, int op) {
  int x = lt_check(L, 1);
  int64_t axes[MAX_RANK];
  int n = 0;
  if (lua_istable(L, 2))
    n = int_list(L, 2, axes, MAX_RANK, what);
  else if (!lua_isnoneornil(L, 2))
    axes[n++] = luaL_checkinteger(L, 2);
  int64_t keep = lua_isnoneornil(L, 3) ? 0 : lua_toboolean(L, 3);
  lua_settop(L, 1);
  lua_newtable(L);
  lua_pushinteger(L, keep);
  lua_setfield(L, -2, "keepdims");
  if (op == OP_REDUCESUM) {
    int in[2] = {x, n ? const_ints(L, axes, n) : -1};
    return lt_op(L, what, op, in, n ? 2 : 1, 2, 1);
  }
  if (n) {
    lua_newtable(L);
    for (int i = 0; i < n; i++) {
      lua_pushinteger(L, axes[i]);
      lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "axes");
  }
  return lt_op(L, what, op, &x, 1, 2, 1);
}

static int sum(lua_State *L) { return reduce(L, "sum", OP_REDUCESUM); }
static int mean(lua_State *L) { return reduce(L, "mean", OP_REDUCEMEAN); }
static int max_(lua_State *L) { return reduce(L, "max", OP_REDUCEMAX); }
static int min_(lua_State *L) { return reduce(L, "min", OP_REDUCEMIN); }
static int prod(lua_State *L) { return reduce(L, "prod", OP_REDUCEPROD); }

static int argmax(lua_State *L) {
  int x = lt_check(L, 1);
  int64_t axis = opt_int(L, 2, -1), keep = lua_isnoneornil(L, 3) ? 0 : lua_toboolean(L, 3);
  lua_settop(L, 0);
  lua_newtable(L);
  lua_pushinteger(L, axis);
  lua_setfield(L, -2, "axis");
  lua_pushinteger(L, keep);
  lua_setfield(L, -2, "keepdims");
  return lt_op(L, "argmax", OP_ARGMAX, &x, 1, 1, 1);
}

/* values, indices = x:topk(k [, axis [, largest]]) */
static int topk(lua_State *L) {
  int x = lt_check(L, 1);
  int64_t k = luaL_checkinteger(L, 2), axis = opt_int(L, 3, -1);
  int64_t largest = lua_isnoneornil(L, 4) ? 1 : lua_toboolean(L, 4);
  int in[2] = {x, const_ints(L, &k, 1)};
  lua_settop(L, 0);
  lua_newtable(L);
  lua_pushinteger(L, axis);
  lua_setfield(L, -2, "axis");
  lua_pushinteger(L, largest);
  lua_setfield(L, -2, "largest");
  return lt_op(L, "topk", OP_TOPK, in, 2, 1, 2);
}

static int gather(lua_State *L) {
  int x = lt_check(L, 1), idx = lt_check_like(L, 2, DT_I64);
  int64_t axis = opt_int(L, 3, 0);
  lua_settop(L, 0);
  lt_push(L, x);
  lt_push(L, idx);
  return with_int_attr(L, "gather", "Gather", 2, "axis", axis);
}

static int cast(lua_State *L) {
  const char *name = luaL_checkstring(L, 2);
  DType dt = dt_from_name(name);
  if (dt == DT_UNDEF || !dt_supported(dt))
    dsl_fail(L, "cast: unknown dtype '%s'; expected f32, f64, i64, i32, bool, ...", name);
  lua_settop(L, 1);
  return with_int_attr(L, "cast", "Cast", 1, "to", dt);
}

/* The stack becomes the attribute table {epsilon = eps, axis = axis} of
 * the norms. */
static void norm_attrs(lua_State *L, double eps, int64_t axis) {
  lua_settop(L, 0);
  lua_newtable(L);
  lua_pushnumber(L, eps);
  lua_setfield(L, -2, "epsilon");
  lua_pushinteger(L, axis);
  lua_setfield(L, -2, "axis");
}

/* x:layer_norm(gamma, beta [, eps [, axis]]) */
static int layer_norm(lua_State *L) {
  int x = lt_check(L, 1);
  DType dt = ltype(L, x)->dt;
  int in[3] = {x, lt_check_like(L, 2, dt), lua_isnoneornil(L, 3) ? -1 : lt_check_like(L, 3, dt)};
  double eps = lua_isnoneornil(L, 4) ? 1e-5 : luaL_checknumber(L, 4);
  int64_t axis = opt_int(L, 5, -1);
  norm_attrs(L, eps, axis);
  return lt_op(L, "layer_norm", OP_LAYERNORM, in, in[2] < 0 ? 2 : 3, 1, 1);
}

/* x:rms_norm(scale [, eps [, axis]]) */
static int rms_norm(lua_State *L) {
  int x = lt_check(L, 1);
  int in[2] = {x, lt_check_like(L, 2, ltype(L, x)->dt)};
  double eps = lua_isnoneornil(L, 3) ? 1e-5 : luaL_checknumber(L, 3);
  int64_t axis = opt_int(L, 4, -1);
  norm_attrs(L, eps, axis);
  return lt_op(L, "rms_norm", OP_RMSNORM, in, 2, 1, 1);
}

/* x:silu(): x · sigmoid(x) (Sigmoid and Mul: fuse_chain makes them one loop) */
static int silu(lua_State *L) {
  lua_settop(L, 1);
  int x = lt_check(L, 1);
  simple_op(L, "silu", "Sigmoid", 1, 0);
  int in[2] = {x, lt_check(L, 2)};
  return lt_op(L, "silu", OP_MUL, in, 2, 0, 1);
}

/* ---- x:rope{...} ---------------------------------------------------------------- */

/* Option `key` of the table at 2 as an integer (dflt when absent). */
static int64_t rope_int(lua_State *L, const char *key, int64_t dflt) {
  lua_getfield(L, 2, key);
  int64_t v = dflt;
  if (!lua_isnil(L, -1) && !lua_isinteger(L, -1))
    dsl_fail(L, "rope: %s is a %s; expected an integer", key, luaL_typename(L, -1));
  if (!lua_isnil(L, -1))
    v = lua_tointeger(L, -1);
  lua_pop(L, 1);
  return v;
}

/* The cos and sin tables [max_pos, rot/2] of theta, made once per
 * (theta, rot, max_pos, dtype) in a compilation (kept in the registry), so
 * the Q and K of every layer share one pair. */
static void rope_cache(lua_State *L, double theta, int64_t rot, int64_t max_pos, DType dt, int *cs, int *sn) {
  char key[128];
  snprintf(key, sizeof key, "kiln.rope %a %lld %lld %d", theta, (long long)rot, (long long)max_pos, (int)dt);
  lua_getfield(L, LUA_REGISTRYINDEX, key);
  if (lua_isinteger(L, -1)) {
    *cs = (int)lua_tointeger(L, -1);
    *sn = *cs + 1;
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  Graph *g = lctx(L)->g;
  int64_t dims[2] = {max_pos, rot / 2};
  *cs = ir_const(g, "rope_cos", dt, 2, dims, NULL);
  *sn = ir_const(g, "rope_sin", dt, 2, dims, NULL);
  KILN_ASSERT(*sn == *cs + 1);
  rope_tables(theta, rot, max_pos, dt, gval(g, *cs)->data, gval(g, *sn)->data);
  lua_pushinteger(L, *cs);
  lua_setfield(L, LUA_REGISTRYINDEX, key);
}

/* The position_ids input from option `positions`: a tensor (i64 [B or 1,
 * S], or [1]: a start offset), an integer start offset, or nil for 0 ..
 * S-1; *max_pos defaults to the largest constant position + 1. */
static int rope_positions(lua_State *L, int64_t s, int64_t *max_pos) {
  lua_getfield(L, 2, "positions");
  int top = lua_gettop(L), pos;
  Graph *g = lctx(L)->g;
  int64_t hi = s;
  if (lua_isnil(L, top) || lua_isinteger(L, top)) {
    int64_t start = lua_isnil(L, top) ? 0 : lua_tointeger(L, top);
    pos = ir_const_i64(g, "rope_start", &start, 1);
    hi = start + s;
  } else if (lt_is(L, top)) {
    pos = lt_check(L, top);
    const Value *v = gval(g, pos);
    if (!v->data && *max_pos <= 0)
      dsl_fail(L, "rope: positions are computed at run time and max_pos is not given; expected max_pos, the "
               "tables' rows");
    for (int64_t i = 0, n = v->data && v->type.dt == DT_I64 ? type_numel(&v->type) : 0; i < n; i++)
      hi = i == 0 || el_get_i(DT_I64, v->data, i) + 1 > hi ? el_get_i(DT_I64, v->data, i) + 1 : hi;
    if (v->data && v->type.rank == 1)
      hi += s - 1;
  } else {
    return dsl_fail(L, "rope: positions is a %s; expected an i64 tensor, an integer start or nil",
                    luaL_typename(L, top));
  }
  lua_pop(L, 1);
  if (*max_pos <= 0)
    *max_pos = hi;
  return pos;
}

/* x:rope{positions, theta = 10000, interleaved = false, dim, max_pos, heads}:
 * RotaryEmbedding of x [B, H, S, D] (or [B, S, H*D] with heads = H) with
 * the tables rope_tables builds from theta (compiler/ops/rotary.h). */
static int rope(lua_State *L) {
  int x = lt_check(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  const Type tx = *ltype(L, x), *t = &tx; /* the values move as constants are added */
  if (t->rank != 3 && t->rank != 4)
    dsl_fail(L, "rope: x has rank %d; expected [B, H, S, D] or [B, S, H*D] with heads", t->rank);
  DType dt = t->dt;
  int64_t heads = rope_int(L, "heads", 0), s = t->dims[t->rank == 3 ? 1 : 2];
  if (t->rank == 3 && (heads <= 0 || t->dims[2] % heads))
    dsl_fail(L, "rope: x is [B, S, %lld] and heads is %lld; expected heads dividing the hidden size",
             (long long)t->dims[2], (long long)heads);
  int64_t d = t->rank == 3 ? t->dims[2] / heads : t->dims[3];
  int64_t rot = rope_int(L, "dim", d), max_pos = rope_int(L, "max_pos", 0);
  if (rot <= 0 || rot > d || rot % 2)
    dsl_fail(L, "rope: dim is %lld with heads of %lld; expected an even number from 2 to %lld", (long long)rot,
             (long long)d, (long long)d);
  lua_getfield(L, 2, "theta");
  double theta = lua_isnil(L, -1) ? 10000 : lua_tonumber(L, -1);
  if (!lua_isnil(L, -1) && (lua_type(L, -1) != LUA_TNUMBER || !(theta > 0)))
    dsl_fail(L, "rope: theta is not a positive number");
  lua_getfield(L, 2, "interleaved");
  int64_t interleaved = lua_toboolean(L, -1);
  lua_pop(L, 2);
  int pos = rope_positions(L, s, &max_pos);
  int cs, sn;
  rope_cache(L, theta, rot, max_pos, dt, &cs, &sn);
  int in[4] = {x, cs, sn, pos};
  lua_settop(L, 0);
  lua_newtable(L);
  lua_pushinteger(L, interleaved);
  lua_setfield(L, -2, "interleaved");
  if (rot != d) {
    lua_pushinteger(L, rot);
    lua_setfield(L, -2, "rotary_embedding_dim");
  }
  if (t->rank == 3) {
    lua_pushinteger(L, heads);
    lua_setfield(L, -2, "num_heads");
  }
  return lt_op(L, "rope", OP_ROTARYEMBEDDING, in, 4, 1, 1);
}

/* x:gelu([approximate]): "none" (erf, the default) or "tanh" */
static int gelu(lua_State *L) {
  const char *approx = luaL_optstring(L, 2, "none");
  if (strcmp(approx, "none") && strcmp(approx, "tanh"))
    dsl_fail(L, "gelu: approximate '%s'; expected \"none\" or \"tanh\"", approx);
  lua_settop(L, 1);
  lua_newtable(L);
  lua_pushstring(L, approx);
  lua_setfield(L, -2, "approximate");
  return simple_op(L, "gelu", "Gelu", 1, 2);
}

static int clip(lua_State *L) {
  int x = lt_check(L, 1);
  DType dt = ltype(L, x)->dt;
  int in[3] = {x, lua_isnoneornil(L, 2) ? -1 : lt_check_like(L, 2, dt),
               lua_isnoneornil(L, 3) ? -1 : lt_check_like(L, 3, dt)};
  return lt_op(L, "clip", OP_CLIP, in, 3, 0, 1);
}

static int cumsum(lua_State *L) {
  int x = lt_check(L, 1);
  int64_t axis = opt_int(L, 2, -1);
  int in[2] = {x, const_ints(L, &axis, 1)};
  return lt_op(L, "cumsum", OP_CUMSUM, in, 2, 0, 1);
}

static int trilu(lua_State *L, const char *what, int upper) {
  int x = lt_check(L, 1);
  int64_t k = opt_int(L, 2, 0);
  int in[2] = {x, const_ints(L, &k, 1)};
  lua_settop(L, 0);
  lua_newtable(L);
  lua_pushinteger(L, upper);
  lua_setfield(L, -2, "upper");
  return lt_op(L, what, OP_TRILU, in, 2, 1, 1);
}
static int triu(lua_State *L) { return trilu(L, "triu", 1); }
static int tril(lua_State *L) { return trilu(L, "tril", 0); }

/* x:split(sizes, axis) -> one tensor per size; x:split(n, axis): n equal parts */
static int split(lua_State *L) {
  int x = lt_check(L, 1);
  int64_t axis = opt_int(L, 3, 0), sizes[64];
  int n;
  if (lua_istable(L, 2)) {
    n = int_list(L, 2, sizes, 64, "split");
  } else {
    int64_t parts = luaL_checkinteger(L, 2);
    int a = axis_of(L, x, axis, "split");
    int64_t dim = ltype(L, x)->dims[a];
    if (parts < 1 || parts > 64 || dim % parts)
      dsl_fail(L, "split: %lld parts of a dim of %lld; expected a divisor (at most 64 parts)",
               (long long)parts, (long long)dim);
    n = (int)parts;
    for (int i = 0; i < n; i++)
      sizes[i] = dim / parts;
  }
  if (n < 1)
    dsl_fail(L, "split: no sizes given");
  int in[2] = {x, const_ints(L, sizes, n)};
  lua_settop(L, 0);
  lua_newtable(L);
  lua_pushinteger(L, axis);
  lua_setfield(L, -2, "axis");
  return lt_op(L, "split", OP_SPLIT, in, 2, 1, n);
}

/* ---- properties --------------------------------------------------------------- */

static int tensor_index(lua_State *L) {
  int vid = lt_check(L, 1);
  const char *key = lua_tostring(L, 2);
  const Type *t = ltype(L, vid);
  if (key && !strcmp(key, "shape")) {
    lua_createtable(L, t->rank, 0);
    for (int i = 0; i < t->rank; i++) {
      lua_pushinteger(L, t->dims[i]);
      lua_rawseti(L, -2, i + 1);
    }
    return 1;
  }
  if (key && !strcmp(key, "rank"))
    return lua_pushinteger(L, t->rank), 1;
  if (key && !strcmp(key, "dtype"))
    return lua_pushstring(L, dt_name(t->dt)), 1;
  if (key && !strcmp(key, "name"))
    return lua_pushstring(L, gval(lctx(L)->g, vid)->name), 1;
  if (key && !strcmp(key, "numel"))
    return lua_pushinteger(L, type_numel(t)), 1;
  if (key && !strcmp(key, "is_const"))
    return lua_pushboolean(L, gval(lctx(L)->g, vid)->data != NULL), 1;
  luaL_getmetafield(L, 1, "methods");
  lua_getfield(L, -1, key ? key : "");
  if (lua_isnil(L, -1))
    return dsl_fail(L, "tensors have no field or method '%s' (see docs/lua.md)",
                    key ? key : luaL_typename(L, 2));
  return 1;
}

/* x:named(name): the value is called name in the IR and in the generated
 * C (its buffer, its comments) when it is a computed value and the name is
 * free; inside decoder{}, the entry's name goes in front ("step.blk.0.q").
 * Otherwise it keeps kiln's own name. Returns x. */
static int named(lua_State *L) {
  LuaCtx *c = lctx(L);
  int vid = lt_check(L, 1);
  const char *nm = luaL_checkstring(L, 2);
  if (c->name_prefix)
    nm = arena_printf(c->a, "%s%s", c->name_prefix, nm);
  Value *v = gval(c->g, vid);
  if (*nm && !v->is_input && !v->is_output && !v->data && v->producer >= 0 && graph_find_value(c->g, nm) < 0)
    v->name = arena_strdup(c->a, nm);
  lua_settop(L, 1);
  return 1;
}

static int tensor_tostring(lua_State *L) {
  int vid = lt_check(L, 1);
  char buf[128];
  lua_pushfstring(L, "tensor %s %s", gval(lctx(L)->g, vid)->name,
                  type_str(ltype(L, vid), buf, sizeof buf));
  return 1;
}

static int tensor_newindex(lua_State *L) {
  return dsl_fail(L, "tensors are immutable values; expected y = f(x) instead of assigning a field");
}

static const luaL_Reg methods[] = {
    {"add", add}, {"sub", sub}, {"mul", mul}, {"div", div}, {"pow", pow_}, {"mod", mod},
    {"matmul", matmul}, {"eq", eq}, {"ne", ne}, {"lt", lt}, {"gt", gt}, {"le", le}, {"ge", ge},
    {"land", land}, {"lor", lor}, {"lxor", lxor}, {"lnot", lnot}, {"maximum", maximum},
    {"minimum", minimum}, {"prelu", prelu}, {"neg", neg}, {"abs", abs_}, {"exp", exp_},
    {"log", log_}, {"sqrt", sqrt_}, {"reciprocal", reciprocal}, {"tanh", tanh_},
    {"sigmoid", sigmoid}, {"relu", relu}, {"erf", erf_}, {"sin", sin_}, {"cos", cos_},
    {"floor", floor_}, {"ceil", ceil_}, {"round", round_}, {"sign", sign}, {"isnan", isnan_},
    {"softplus", softplus}, {"identity", identity}, {"shape_of", shape_of},
    {"softmax", softmax}, {"log_softmax", log_softmax}, {"sparsemax", sparsemax},
    {"entmax15", entmax15}, {"transpose", transpose}, {"permute", permute},
    {"reshape", reshape}, {"expand", expand}, {"tile", tile}, {"squeeze", squeeze},
    {"unsqueeze", unsqueeze}, {"flatten", flatten}, {"narrow", narrow}, {"slice", slice},
    {"sum", sum}, {"mean", mean}, {"max", max_}, {"min", min_}, {"prod", prod},
    {"argmax", argmax}, {"topk", topk}, {"gather", gather}, {"cast", cast},
    {"layer_norm", layer_norm}, {"rms_norm", rms_norm}, {"gelu", gelu}, {"clip", clip},
    {"silu", silu}, {"rope", rope}, {"named", named},
    {"cumsum", cumsum}, {"triu", triu}, {"tril", tril}, {"split", split}, {NULL, NULL},
};

/* ---- globals: op, where, cat ---------------------------------------------------- */

/* op(name, {inputs...} [, {attrs}] [, nout]): any kiln op by its ONNX name,
 * attributes exactly as ONNX defines them; `false` marks an absent
 * optional input. Returns the outputs. */
static int generic_op(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  int op = op_id(L, name);
  int nin = (int)lua_rawlen(L, 2);
  if (nin > 64)
    dsl_fail(L, "op %s: %d inputs; expected at most 64", name, nin);
  int in[64];
  for (int i = 0; i < nin; i++) {
    lua_rawgeti(L, 2, i + 1);
    in[i] = lua_toboolean(L, -1) ? lt_check(L, lua_gettop(L)) : -1;
    lua_pop(L, 1);
  }
  int attrs = lua_istable(L, 3) ? 3 : 0;
  int nout = (int)opt_int(L, attrs ? 4 : 3, op_table[op].min_out);
  if (nout < op_table[op].min_out || nout > 16 ||
      (op_table[op].max_out >= 0 && nout > op_table[op].max_out))
    dsl_fail(L, "op %s: %d outputs requested; expected %d to %d", name, nout,
             op_table[op].min_out, op_table[op].max_out);
  return lt_op(L, name, op, in, nin, attrs, nout);
}

static int where(lua_State *L) {
  int c = lt_check_like(L, 1, DT_BOOL);
  DType like = lt_is(L, 2) ? ltype(L, lt_check(L, 2))->dt : lt_is(L, 3) ? ltype(L, lt_check(L, 3))->dt : DT_F32;
  int in[3] = {c, lt_check_like(L, 2, like), lt_check_like(L, 3, like)};
  return lt_op(L, "where", OP_WHERE, in, 3, 0, 1);
}

/* cat({a, b, ...}, axis) */
static int cat(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int64_t axis = opt_int(L, 2, 0);
  int n = (int)lua_rawlen(L, 1);
  if (n < 1 || n > 64)
    dsl_fail(L, "cat: %d tensors; expected 1 to 64", n);
  int in[64];
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 1, i + 1);
    in[i] = lt_check(L, lua_gettop(L));
    lua_pop(L, 1);
  }
  lua_settop(L, 0);
  lua_newtable(L);
  lua_pushinteger(L, axis);
  lua_setfield(L, -2, "axis");
  return lt_op(L, "cat", OP_CONCAT, in, n, 1, 1);
}

void dsl_open_tensor(lua_State *L) {
  luaL_newmetatable(L, TENSOR_MT);
  static const luaL_Reg meta[] = {
      {"__add", add}, {"__sub", sub}, {"__mul", mul}, {"__div", div}, {"__mod", mod},
      {"__pow", pow_}, {"__unm", neg}, {"__index", tensor_index},
      {"__newindex", tensor_newindex}, {"__tostring", tensor_tostring}, {NULL, NULL},
  };
  luaL_setfuncs(L, meta, 0);
  luaL_newlib(L, methods);
  lua_setfield(L, -2, "methods");
  lua_pushliteral(L, "tensor");
  lua_setfield(L, -2, "__name");
  lua_pushliteral(L, "tensor"); /* getmetatable(x): no way to add a __gc to every tensor */
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 1);
  lua_register(L, "op", generic_op);
  lua_register(L, "where", where);
  lua_register(L, "cat", cat);
}
