/* state.c — values a model carries from one call to the next, for models
 * that read a sequence in segments (Transformer-XL's memory):
 *
 *   local mem = state{"mem", {1, 8, 64}}          -- its value as this call starts
 *   ...
 *   state_update(mem, cat({mem, h}, 1):narrow(1, 8, 8))   -- its value for the next call
 *
 * In the IR a state is a graph input flagged is_state, with its initial
 * value, linked to the graph output that becomes its next value (ir.h).
 * The generated C keeps it in a caller-owned struct; `kiln run` starts from
 * the initial value; `kiln export` writes it as one more input and output. */
#include <string.h>

#include "../ir/build.h"
#include "../ir/ops.h"
#include "lua_ctx.h"
#include "lua_state.h"
#include "lua_tensor.h"

/* Field key of the table at idx, else positional slot pos. Pushes it. */
static int state_field(lua_State *L, const char *key, int pos) {
  lua_getfield(L, 1, key);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_rawgeti(L, 1, pos);
  }
  return lua_type(L, -1);
}

static const char *state_name(lua_State *L) {
  if (state_field(L, "name", 1) != LUA_TSTRING || !*lua_tostring(L, -1))
    dsl_fail(L, "state: expected a name, e.g. state{\"mem\", {1, 8, 64}}");
  const char *name = arena_strdup(lctx(L)->a, lua_tostring(L, -1));
  lua_pop(L, 1);
  if (graph_find_value(lctx(L)->g, name) >= 0)
    dsl_fail(L, "state: the name '%s' is taken; expected each input, param and state to have "
                "its own name", name);
  return name;
}

/* shape (a list of positive dims) and dtype (default f32) of the state */
static Type state_type(lua_State *L, const char *name) {
  Type t = {.dt = DT_F32};
  if (state_field(L, "shape", 2) != LUA_TTABLE)
    dsl_fail(L, "state '%s': shape is a %s; expected a list of dims like {1, 8, 64}", name,
             luaL_typename(L, -1));
  t.rank = (int)lua_rawlen(L, -1);
  if (t.rank > MAX_RANK)
    dsl_fail(L, "state '%s': rank %d; expected at most %d", name, t.rank, MAX_RANK);
  for (int i = 0; i < t.rank; i++) {
    lua_rawgeti(L, -1, i + 1);
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1)
      dsl_fail(L, "state '%s': dim %d is %s; expected a positive integer", name, i + 1,
               luaL_tolstring(L, -1, NULL));
    t.dims[i] = lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (!type_size_ok(&t))
    dsl_fail(L, "state '%s': shape is too large", name);
  if (state_field(L, "dtype", 3) == LUA_TSTRING) {
    t.dt = dt_from_name(lua_tostring(L, -1));
    if (t.dt == DT_UNDEF || !dt_supported(t.dt))
      dsl_fail(L, "state '%s': dtype '%s'; expected f32, f64, i64, i32, bool, ...", name,
               lua_tostring(L, -1));
  }
  lua_pop(L, 1);
  return t;
}

/* The initial value from `init`: absent (zeros), a number (every element),
 * a flat list of numel numbers, or a constant tensor of the state's type. */
static void state_init(lua_State *L, const char *name, const Type *t, void *data) {
  int64_t n = type_numel(t);
  int kind = state_field(L, "init", 4);
  char a[128], b[128];
  if (kind == LUA_TNUMBER) {
    for (int64_t i = 0; i < n; i++)
      el_set_f(t->dt, data, i, lua_tonumber(L, -1));
  } else if (kind == LUA_TTABLE) {
    if ((int64_t)lua_rawlen(L, -1) != n)
      dsl_fail(L, "state '%s': init has %lld values; expected %lld (the shape's element count)",
               name, (long long)lua_rawlen(L, -1), (long long)n);
    for (int64_t i = 0; i < n; i++) {
      lua_rawgeti(L, -1, i + 1);
      if (lua_type(L, -1) != LUA_TNUMBER)
        dsl_fail(L, "state '%s': init value %lld is a %s; expected a number", name,
                 (long long)i + 1, luaL_typename(L, -1));
      el_set_f(t->dt, data, i, lua_tonumber(L, -1));
      lua_pop(L, 1);
    }
  } else if (lt_is(L, -1)) {
    const Value *v = gval(lctx(L)->g, lt_check(L, lua_gettop(L)));
    if (!v->data || !type_equal(&v->type, t))
      dsl_fail(L, "state '%s': init is %s%s; expected a constant of the state's type %s", name,
               v->data ? "" : "a computed ", type_str(&v->type, a, sizeof a),
               type_str(t, b, sizeof b));
    memcpy(data, v->data, type_bytes(t));
  } else if (kind != LUA_TNIL) {
    dsl_fail(L, "state '%s': init is a %s; expected a number, a list or a constant tensor", name,
             luaL_typename(L, -1));
  }
  lua_pop(L, 1);
}

/* state{name, shape [, dtype] [, init]}: the state's value as the call
 * starts (a tensor like an input's). */
static int state(lua_State *L) {
  LuaCtx *c = lctx(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  const char *name = state_name(L);
  Type t = state_type(L, name);
  void *init = arena_alloc(c->a, type_bytes(&t) + 1);
  state_init(L, name, &t, init);
  int vid = graph_add_value(c->g, name);
  Value *v = gval(c->g, vid);
  v->type = t;
  v->is_input = v->is_state = true;
  v->state_next = -1; /* until state_update */
  v->state_init = init;
  graph_add_input(c->g, vid);
  lt_push(L, vid);
  return 1;
}

/* state_update(s, value): value (of s's type) is s at the next call.
 * Returns the next value's tensor. */
static int state_update(lua_State *L) {
  LuaCtx *c = lctx(L);
  Graph *g = c->g;
  int s = lt_check(L, 1);
  if (!gval(g, s)->is_state)
    dsl_fail(L, "state_update: '%s' is not a state; expected the tensor state{} returned",
             gval(g, s)->name);
  if (gval(g, s)->state_next >= 0)
    dsl_fail(L, "state_update: state '%s' already has its next value; expected one "
                "state_update per state", gval(g, s)->name);
  if (!lt_is(L, 2))
    dsl_fail(L, "state_update: the new value is a %s; expected a tensor", luaL_typename(L, 2));
  int vid = lt_check(L, 2);
  char a[128], b[128];
  if (!type_equal(&gval(g, vid)->type, &gval(g, s)->type))
    dsl_fail(L, "state_update: state '%s' is %s and the new value is %s; expected the same type",
             gval(g, s)->name, type_str(&gval(g, s)->type, a, sizeof a),
             type_str(&gval(g, vid)->type, b, sizeof b));
  Value *v = gval(g, vid);
  /* like output(): the next value is a computed value of its own */
  if (v->is_input || v->data || v->is_output || v->producer < 0) {
    lt_op(L, "state_update", OP_IDENTITY, &vid, 1, 0, 1);
    vid = lt_check(L, -1);
    gval(g, vid)->data = NULL;
  }
  const char *want = arena_printf(c->a, "%s.next", gval(g, s)->name);
  if (graph_find_value(g, want) < 0)
    gval(g, vid)->name = want;
  gval(g, vid)->is_output = true;
  graph_add_output(g, vid);
  gval(g, s)->state_next = g->noutputs - 1;
  lt_push(L, vid);
  return 1;
}

void dsl_open_state(lua_State *L) {
  lua_register(L, "state", state);
  lua_register(L, "state_update", state_update);
}

bool dsl_finish_states(LuaCtx *c, Diag *d) {
  Graph *g = c->g;
  for (int i = 0; i < g->ninputs; i++) {
    const Value *v = gval(g, g->inputs[i]);
    if (v->is_state && v->state_next < 0 && !op_state_in_place(g, g->inputs[i])) /* a KV cache: in place */
      return diag_error(d, "state '%s' is never given its next value; expected "
                           "state_update(state, new_value) once for it", v->name);
  }
  return true;
}
