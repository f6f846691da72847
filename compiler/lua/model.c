/* model.c — the model-level globals of the DSL: config{} (script
 * parameters, overridable with --set), input{}, output(), param{} (weights:
 * from a bound .safetensors or .gguf file by name, or from a deterministic
 * initialiser), weights(), gguf_meta() (the bound GGUF's metadata),
 * const() and friends, and the checks that run when the script has
 * finished. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/blockquant.h"
#include "../ir/build.h"
#include "../ir/ops.h"
#include "lua_ctx.h"
#include "lua_decoder.h"
#include "lua_model.h"
#include "lua_state.h"
#include "lua_tensor.h"

/* ---- config{}: script parameters ------------------------------------------- */

/* The --set value for key, or NULL; marks it used. */
static const char *set_value(LuaCtx *c, const char *key) {
  size_t n = strlen(key);
  for (int i = 0; i < c->o->nsets; i++) {
    const char *s = c->o->sets[i];
    if (!strncmp(s, key, n) && s[n] == '=') {
      c->set_used[i] = true;
      return s + n + 1;
    }
  }
  return NULL;
}

/* config{key = default, ...}: the table with --set overrides applied, each
 * parsed as its default's type. */
static int config(lua_State *L) {
  LuaCtx *c = lctx(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  c->config_origin = dsl_origin(L);
  lua_settop(L, 1);
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING)
      continue;
    const char *key = lua_tostring(L, -1);
    const char *v = set_value(c, key);
    if (!v)
      continue;
    lua_pushvalue(L, -1);
    lua_gettable(L, 1);
    int type = lua_type(L, -1);
    bool isint = lua_isinteger(L, -1);
    lua_pop(L, 1);
    lua_pushvalue(L, -1); /* key */
    char *end;
    errno = 0;
    if (type == LUA_TNUMBER && isint) {
      long long x = strtoll(v, &end, 10);
      if (end == v || *end || errno)
        dsl_fail(L, "--set %s=%s: expected an integer (the script's default is one)", key, v);
      lua_pushinteger(L, x);
    } else if (type == LUA_TNUMBER) {
      double x = strtod(v, &end);
      if (end == v || *end || errno)
        dsl_fail(L, "--set %s=%s: expected a number", key, v);
      lua_pushnumber(L, x);
    } else if (type == LUA_TBOOLEAN) {
      if (strcmp(v, "true") && strcmp(v, "false"))
        dsl_fail(L, "--set %s=%s: expected true or false", key, v);
      lua_pushboolean(L, !strcmp(v, "true"));
    } else {
      lua_pushstring(L, v);
    }
    lua_settable(L, 1);
  }
  return 1;
}

/* ---- shapes and dtypes from Lua ------------------------------------------------ */

static void check_shape(lua_State *L, int idx, Type *t, const char *what) {
  if (!lua_istable(L, idx))
    dsl_fail(L, "%s: shape is a %s; expected a list of dims like {2, 16, 64}", what,
             luaL_typename(L, idx));
  int n = (int)lua_rawlen(L, idx);
  if (n > MAX_RANK)
    dsl_fail(L, "%s: rank %d; expected at most %d", what, n, MAX_RANK);
  t->rank = n;
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, idx, i + 1);
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0)
      dsl_fail(L, "%s: dim %d is %s; expected a non-negative integer", what, i + 1,
               luaL_tolstring(L, -1, NULL));
    t->dims[i] = lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  if (!type_size_ok(t))
    dsl_fail(L, "%s: shape is too large", what);
}

static DType check_dtype(lua_State *L, const char *name, const char *what) {
  DType dt = dt_from_name(name);
  if (dt == DT_UNDEF || !dt_supported(dt))
    dsl_fail(L, "%s: dtype '%s'; expected f32, f64, i64, i32, i8, u8, bool, ...", what, name);
  return dt;
}

/* Field key of the table at idx, else positional slot pos. Pushes it. */
static int field(lua_State *L, int idx, const char *key, int pos) {
  lua_getfield(L, idx, key);
  if (lua_isnil(L, -1) && pos > 0) {
    lua_pop(L, 1);
    lua_rawgeti(L, idx, pos);
  }
  return lua_type(L, -1);
}

static const char *name_field(lua_State *L, int idx, const char *what) {
  if (field(L, idx, "name", 1) != LUA_TSTRING || !*lua_tostring(L, -1))
    dsl_fail(L, "%s: expected a name, e.g. %s{\"x\", {1, 16}}", what, what);
  const char *s = arena_strdup(lctx(L)->a, lua_tostring(L, -1));
  lua_pop(L, 1);
  return s;
}

static void check_new_name(lua_State *L, const char *name, const char *what) {
  if (graph_find_value(lctx(L)->g, name) >= 0)
    dsl_fail(L, "%s: the name '%s' is taken; expected each input and param to have its own name",
             what, name);
}

/* input{name, shape [, dtype]} */
static int input(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  Graph *g = lctx(L)->g;
  const char *name = name_field(L, 1, "input");
  check_new_name(L, name, "input");
  Type t = {.dt = DT_F32};
  field(L, 1, "shape", 2);
  check_shape(L, lua_gettop(L), &t, "input");
  lua_pop(L, 1);
  if (field(L, 1, "dtype", 3) == LUA_TSTRING)
    t.dt = check_dtype(L, lua_tostring(L, -1), "input");
  lua_pop(L, 1);
  int vid = graph_add_value(g, name);
  gval(g, vid)->type = t;
  gval(g, vid)->is_input = true;
  graph_add_input(g, vid);
  lt_push(L, vid);
  return 1;
}

/* output(t [, name]) */
static int output(lua_State *L) {
  LuaCtx *c = lctx(L);
  Graph *g = c->g;
  int vid = lt_check(L, 1);
  const char *name = luaL_optstring(L, 2, NULL);
  Value *v = gval(g, vid);
  bool rename = name && strcmp(v->name, name) != 0;
  if (rename && graph_find_value(g, name) >= 0)
    dsl_fail(L, "output: the name '%s' is taken", name);
  /* an input, a constant or an output already: give the output its own value */
  if (v->is_input || v->data || v->is_output || v->producer < 0) {
    lt_op(L, "output", OP_IDENTITY, &vid, 1, 0, 1);
    vid = lt_check(L, -1);
    v = gval(g, vid);
    v->data = NULL; /* an output is computed, never baked in */
  }
  if (name)
    v->name = arena_strdup(c->a, name);
  v->is_output = true;
  graph_add_output(g, vid);
  lt_push(L, vid);
  return 1;
}

/* ---- params and weights ----------------------------------------------------------- */

/* splitmix64: a tiny, well-mixed, platform-independent generator, so a seed
 * gives the same weights everywhere. */
static uint64_t next_u64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double next_unit(uint64_t *s) { return (double)(next_u64(s) >> 11) * 0x1p-53; }

static double next_normal(uint64_t *s) {
  double u1 = next_unit(s), u2 = next_unit(s);
  return sqrt(-2.0 * log(u1 > 0 ? u1 : 0x1p-53)) * cos(6.283185307179586 * u2);
}

static double num_field(lua_State *L, int idx, const char *key, double dflt) {
  lua_getfield(L, idx, key);
  double x = lua_isnil(L, -1) ? dflt : luaL_checknumber(L, -1);
  lua_pop(L, 1);
  return x;
}

/* Fill a param of type t from the table's init (default "normal"). */
static void init_param(lua_State *L, int idx, const char *name, const Type *t, void *data) {
  int64_t n = type_numel(t);
  lua_getfield(L, idx, "seed");
  uint64_t seed = lua_isnil(L, -1) ? 0 : (uint64_t)luaL_checkinteger(L, -1);
  lua_pop(L, 1);
  /* mix the name in, so params sharing a seed still differ */
  for (const char *p = name; *p; p++)
    seed = seed * 131 + (unsigned char)*p;
  int kind = field(L, idx, "init", 0);
  if (kind == LUA_TNUMBER) {
    double x = lua_tonumber(L, -1);
    for (int64_t i = 0; i < n; i++)
      el_set_f(t->dt, data, i, x);
  } else if (kind == LUA_TTABLE) {
    if ((int64_t)lua_rawlen(L, -1) != n)
      dsl_fail(L, "param '%s': init has %lld values; expected %lld (the shape's element count)",
               name, (long long)lua_rawlen(L, -1), (long long)n);
    for (int64_t i = 0; i < n; i++) {
      lua_rawgeti(L, -1, i + 1);
      if (lua_type(L, -1) != LUA_TNUMBER)
        dsl_fail(L, "param '%s': init value %lld is not a number", name, (long long)i + 1);
      el_set_f(t->dt, data, i, lua_tonumber(L, -1));
      lua_pop(L, 1);
    }
  } else {
    const char *how = kind == LUA_TSTRING ? lua_tostring(L, -1) : "normal";
    double mean = num_field(L, idx, "mean", 0), std = num_field(L, idx, "std", 0.02);
    double bound = num_field(L, idx, "bound", t->rank ? 1.0 / sqrt((double)(t->dims[t->rank - 1] ? t->dims[t->rank - 1] : 1)) : 1.0);
    for (int64_t i = 0; i < n; i++) {
      double x;
      if (!strcmp(how, "zeros"))
        x = 0;
      else if (!strcmp(how, "ones"))
        x = 1;
      else if (!strcmp(how, "normal"))
        x = mean + std * next_normal(&seed);
      else if (!strcmp(how, "uniform"))
        x = (2 * next_unit(&seed) - 1) * bound;
      else
        return (void)dsl_fail(L, "param '%s': init '%s'; expected \"normal\", \"uniform\", "
                                 "\"zeros\", \"ones\", a number or a list", name, how);
      el_set_f(t->dt, data, i, x);
    }
  }
  lua_pop(L, 1);
}

bool dsl_bind_weights_file(LuaCtx *c, const char *path, Diag *d) {
  size_t n = strlen(path);
  /* by content (the magic, whatever the name), or by name: a damaged .gguf
   * gets the GGUF reader's message, not the safetensors reader's */
  if (gguf_file_is_gguf(path) || (n >= 5 && !strcmp(path + n - 5, ".gguf"))) {
    c->gguf = arena_alloc(c->a, sizeof(Gguf));
    if (!gguf_load(c->a, path, c->gguf, d))
      return false;
  } else {
    c->weights = arena_alloc(c->a, sizeof(SafeTensors));
    if (!safetensors_load(c->a, path, c->weights, d))
      return false;
  }
  c->weights_path = arena_strdup(c->a, path);
  return true;
}

/* weights(path): bind params by name from a .safetensors or .gguf file; a
 * relative path is taken from the script's folder. --weights replaces it. */
static bool bind_weights(lua_State *L, const char *path) {
  LuaCtx *c = lctx(L);
  if (c->weights || c->gguf)
    dsl_fail(L, "weights: already bound to %s; expected one weights file per model",
             c->weights_path);
  Diag d = {0};
  if (!dsl_bind_weights_file(c, path, &d))
    dsl_fail(L, "weights: %s", d.msg);
  return true;
}

static int weights(lua_State *L) {
  LuaCtx *c = lctx(L);
  const char *path = luaL_checkstring(L, 1);
  if (c->o->weights)
    return 0; /* --weights wins; bound before the script ran */
  if (path[0] != '/') {
    const char *slash = strrchr(c->script, '/');
    if (slash)
      path = arena_printf(c->a, "%.*s/%s", (int)(slash - c->script), c->script, path);
  }
  bind_weights(L, path);
  c->weights_origin = dsl_origin(L);
  return 0;
}

/* A param from the bound GGUF: F32/F16 tensors are f32 constants (the
 * arena's bytes, not copied); a block-quantized one stays quantized, a u8
 * constant [rows, row_bytes] of its blocks read by DequantizeBlocks, whose
 * f32 output is the param. */
static int gguf_param(lua_State *L, const char *name, const Type *t) {
  LuaCtx *c = lctx(L);
  Diag d = {0};
  GgufTensor *gt = gguf_take(c->gguf, name, t, &d);
  if (!gt)
    dsl_fail(L, "param '%s': %s", name, d.msg);
  int64_t numel = type_numel(t);
  if (!gt->quantized || numel == 0)
    return numel ? ir_const_in_place(c->g, name, t->dt, t->rank, t->dims, (void *)gt->data)
                 : ir_const(c->g, name, t->dt, t->rank, t->dims, NULL);
  BqFormat fmt;
  if (!bq_format_from_ggml(gt->ggml_type, &fmt)) /* gguf_take admits only formats kiln reads */
    dsl_fail(L, "param '%s': %s: tensor '%s' is %s; kiln has no DequantizeBlocks format for it",
             name, c->gguf->path, name, gt->type_name);
  int64_t rows = numel / gt->ne[0];
  int64_t raw_dims[2] = {rows, (int64_t)gt->bytes / rows};
  int raw = ir_const_in_place(c->g, arena_printf(c->a, "%s_blocks", name), DT_U8, 2, raw_dims,
                              (void *)gt->data);
  int vid = bq_dequantize_node(c->g, raw, fmt, t, name, &d);
  if (vid < 0)
    dsl_fail(L, "param '%s': %s", name, d.msg);
  return vid;
}

/* param{name, shape [, dtype] [, init=..., seed=..., std=..., mean=...,
 * bound=...]}: a constant; from the bound weights when there are any. */
static int param(lua_State *L) {
  LuaCtx *c = lctx(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  const char *name = name_field(L, 1, "param");
  int prev = c->decoder_replay ? graph_find_value(c->g, name) : -1;
  if (prev < 0)
    check_new_name(L, name, "param");
  Type t = {.dt = DT_F32};
  field(L, 1, "shape", 2);
  check_shape(L, lua_gettop(L), &t, arena_printf(c->a, "param '%s'", name));
  lua_pop(L, 1);
  if (field(L, 1, "dtype", 3) == LUA_TSTRING)
    t.dt = check_dtype(L, lua_tostring(L, -1), "param");
  lua_pop(L, 1);
  if (prev >= 0) { /* decoder{}'s second entry: the tensor the first one declared */
    char a[128], b[128];
    if (!type_equal(&gval(c->g, prev)->type, &t))
      dsl_fail(L, "param '%s' is %s here and %s in the first entry; expected the same", name,
               type_str(&t, a, sizeof a), type_str(&gval(c->g, prev)->type, b, sizeof b));
    lt_push(L, prev);
    return 1;
  }
  int vid;
  if (c->gguf) {
    vid = gguf_param(L, name, &t);
  } else if (c->weights) {
    Diag d = {0};
    StTensor *st = safetensors_take(c->weights, name, &t, &d);
    if (!st)
      dsl_fail(L, "param '%s': %s", name, d.msg);
    vid = st->data ? ir_const_in_place(c->g, name, t.dt, t.rank, t.dims, (void *)st->data) /* same arena */
                   : ir_const(c->g, name, t.dt, t.rank, t.dims, NULL);
  } else {
    if (type_bytes(&t) > (size_t)c->max_mem) /* made here, so the script's memory cap bounds it */
      dsl_fail(L, "param '%s': %zu MiB of initial values; expected at most %lld MiB (the script's "
               "memory cap, --lua-mem), or weights bound", name, type_bytes(&t) >> 20, (long long)(c->max_mem >> 20));
    vid = ir_const(c->g, name, t.dt, t.rank, t.dims, NULL);
    init_param(L, 1, name, &t, gval(c->g, vid)->data);
  }
  lt_push(L, vid);
  return 1;
}

/* has_param(name): whether the bound weights (GGUF or safetensors) have a
 * tensor called name; false when none are bound (the params are random).
 * For optional tensors: a GGUF without output.weight ties it to
 * token_embd.weight. */
static int has_param(lua_State *L) {
  LuaCtx *c = lctx(L);
  const char *name = luaL_checkstring(L, 1);
  bool has = c->gguf ? gguf_tensor(c->gguf, name) != NULL
                     : c->weights ? safetensors_find(c->weights, name) != NULL : false;
  lua_pushboolean(L, has);
  return 1;
}

/* param_shape(name): the shape of the bound weights' tensor `name` as a
 * list (row-major, as param{} takes it: GGUF's token_embd.weight of ne
 * [640, 262144] is {262144, 640}), or nil when there is none or no weights
 * are bound. For sizes the metadata does not give (a GGUF's vocabulary). */
static int param_shape(lua_State *L) {
  LuaCtx *c = lctx(L);
  const char *name = luaL_checkstring(L, 1);
  const GgufTensor *gt = c->gguf ? gguf_tensor(c->gguf, name) : NULL;
  const StTensor *st = !c->gguf && c->weights ? safetensors_find(c->weights, name) : NULL;
  const Type *t = gt ? &gt->type : st ? &st->type : NULL;
  if (!t) {
    lua_pushnil(L);
    return 1;
  }
  lua_createtable(L, t->rank, 0);
  for (int i = 0; i < t->rank; i++) {
    lua_pushinteger(L, t->dims[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* ---- gguf_meta(): the bound GGUF's metadata ------------------------------------- */

/* Arrays longer than this (the tokenizer's 49152 tokens) are refused:
 * gguf_meta is for hyperparameters; the vocabulary is for C code (the
 * frontend hands the bound GGUF to the compiler, LuaOptions.bound_gguf). */
#define GGUF_META_MAX_ITEMS 4096

static void push_gguf_value(lua_State *L, const char *key, const GgufValue *v, int64_t *budget) {
  luaL_checkstack(L, 4, "gguf_meta: arrays nested too deep");
  int64_t i;
  double f;
  switch (v->type) {
  case GGUF_BOOL: lua_pushboolean(L, v->u != 0); return;
  case GGUF_STRING: lua_pushlstring(L, v->s.s, v->s.len); return;
  case GGUF_F32:
  case GGUF_F64: lua_pushnumber(L, v->f); return;
  case GGUF_ARRAY: break;
  default:
    if (gguf_value_int(v, &i))
      lua_pushinteger(L, i);
    else if (gguf_value_float(v, &f)) /* a u64 past 2^63 - 1 */
      lua_pushnumber(L, f);
    return;
  }
  *budget -= (int64_t)v->arr.n;
  if (*budget < 0)
    dsl_fail(L, "gguf_meta: '%s' holds arrays of more than %d items in all (an array of %llu "
                "%s here); expected a hyperparameter (the tokenizer's arrays are for the "
                "tokenizer exporter, not for scripts)",
             key, GGUF_META_MAX_ITEMS, (unsigned long long)v->arr.n, gguf_type_name(v->arr.elem));
  lua_createtable(L, (int)v->arr.n, 0);
  for (uint64_t k = 0; k < v->arr.n; k++) {
    GgufValue item;
    gguf_array_value(v, k, &item);
    if (item.type == GGUF_ARRAY)
      dsl_check_time(L);
    push_gguf_value(L, key, &item, budget);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
}

/* gguf_meta(key [, default]): the bound GGUF's metadata value as a Lua
 * number (integers as integers), string, boolean or list; default when no
 * GGUF is bound or the key is missing, else an error. gguf_meta(): the
 * list of keys, in the file's order. */
static int gguf_meta(lua_State *L) {
  LuaCtx *c = lctx(L);
  bool has_default = lua_gettop(L) >= 2;
  if (lua_isnoneornil(L, 1)) {
    if (!c->gguf)
      dsl_fail(L, "gguf_meta: no GGUF file is bound; expected weights(\"FILE.gguf\") or "
                  "--weights FILE.gguf before gguf_meta()");
    lua_createtable(L, c->gguf->nkv, 0);
    for (int i = 0; i < c->gguf->nkv; i++) {
      lua_pushstring(L, c->gguf->kv[i].key);
      lua_rawseti(L, -2, i + 1);
    }
    return 1;
  }
  const char *key = luaL_checkstring(L, 1);
  const GgufKV *kv = c->gguf ? gguf_kv(c->gguf, key) : NULL;
  if (!kv) {
    if (has_default) {
      lua_settop(L, 2);
      return 1;
    }
    if (!c->gguf)
      dsl_fail(L, "gguf_meta: no GGUF file is bound (key '%s'); expected weights(\"FILE.gguf\") "
                  "or --weights FILE.gguf first, or a default: gguf_meta(\"%s\", value)", key, key);
    dsl_fail(L, "gguf_meta: %s has no key '%s'; expected one of its %d keys (gguf_meta() lists "
                "them) or a default: gguf_meta(\"%s\", value)", c->gguf->path, key, c->gguf->nkv, key);
  }
  int64_t budget = GGUF_META_MAX_ITEMS;
  push_gguf_value(L, key, &kv->v, &budget);
  return 1;
}

/* ---- constants -------------------------------------------------------------------- */

/* A nested table's shape, read down its first elements: a table of n
 * rows is a dim of n, a non-table ends the shape. Deeper than MAX_RANK is
 * an error (a table that contains itself is infinitely deep), so the walk
 * below never recurses further than kiln's largest rank. */
static void nested_shape(lua_State *L, int idx, Type *t) {
  lua_pushvalue(L, idx);
  t->rank = 0;
  while (lua_type(L, -1) == LUA_TTABLE) {
    if (t->rank >= MAX_RANK)
      dsl_fail(L, "const: the table is nested deeper than %d (kiln's largest rank; a table that "
                  "contains itself?); expected at most %d levels", MAX_RANK, MAX_RANK);
    int64_t n = (int64_t)lua_rawlen(L, -1);
    t->dims[t->rank++] = n;
    lua_rawgeti(L, -1, 1);
    lua_remove(L, -2);
    if (n == 0)
      break;
  }
  lua_pop(L, 1);
}

typedef struct Nested {
  Type t;
  void *data;  /* NULL: only check the shape and find the leaves' dtype */
  int64_t k;   /* leaves seen */
  bool has_float;
  int first;   /* LUA_TBOOLEAN or LUA_TNUMBER: the first leaf's kind */
} Nested;

/* Visit the table at idx, a row at depth `depth` of nt->t: every row of a
 * depth has that depth's length and every leaf sits at the last depth
 * (rectangular), leaves are numbers or booleans; stored when nt->data. */
static void nested_walk(lua_State *L, int idx, int depth, Nested *nt) {
  if (lua_type(L, idx) != LUA_TTABLE) {
    if (depth != nt->t.rank)
      dsl_fail(L, "const: ragged nested table (a value at depth %d of %d); expected every row "
                  "to have the same length", depth, nt->t.rank);
    if ((++nt->k & 0xffff) == 0)
      dsl_check_time(L);
    bool isbool = lua_isboolean(L, idx), isint = lua_isinteger(L, idx);
    if (!isbool && lua_type(L, idx) != LUA_TNUMBER)
      dsl_fail(L, "const: a %s in the data; expected numbers or booleans", luaL_typename(L, idx));
    if (!nt->first)
      nt->first = isbool ? LUA_TBOOLEAN : LUA_TNUMBER;
    nt->has_float |= !isbool && !isint;
    if (!nt->data)
      return;
    DType dt = nt->t.dt;
    if (isbool)
      el_set_u(dt, nt->data, nt->k - 1, lua_toboolean(L, idx));
    else if (isint && !dt_is_float(dt))
      el_set_i(dt, nt->data, nt->k - 1, lua_tointeger(L, idx));
    else
      el_set_f(dt, nt->data, nt->k - 1, lua_tonumber(L, idx));
    return;
  }
  int64_t n = (int64_t)lua_rawlen(L, idx);
  if (depth >= nt->t.rank || n != nt->t.dims[depth])
    dsl_fail(L, "const: ragged nested table (a row of %lld at depth %d); expected every row to "
                "have the same length", (long long)n, depth);
  for (int64_t i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, i);
    nested_walk(L, lua_gettop(L), depth + 1, nt);
    lua_pop(L, 1);
  }
}

/* const(value [, dtype]): a number, boolean or nested table of them;
 * dtype by default: f32 when a leaf is a float, else the first leaf's
 * (bool, or i64 for an integer). At most the
 * script's memory cap in bytes (shared sub-tables make huge tensors out of
 * little Lua memory). */
static int const_(lua_State *L) {
  LuaCtx *c = lctx(L);
  luaL_checkany(L, 1);
  Nested nt = {0};
  nested_shape(L, 1, &nt.t);
  nt.t.dt = lua_isnoneornil(L, 2) ? DT_F32 : check_dtype(L, luaL_checkstring(L, 2), "const");
  double numel = 1;
  for (int i = 0; i < nt.t.rank; i++)
    numel *= (double)nt.t.dims[i];
  if (numel * (double)dt_size(nt.t.dt) > (double)c->max_mem || !type_size_ok(&nt.t))
    dsl_fail(L, "const: %.0f elements; expected at most %lld MiB of data (the script's memory "
                "cap, --lua-mem)", numel, (long long)(c->max_mem >> 20));
  nested_walk(L, 1, 0, &nt); /* checks, and finds the leaves' dtype */
  if (lua_isnoneornil(L, 2))
    nt.t.dt = nt.has_float || !nt.first ? DT_F32 : nt.first == LUA_TBOOLEAN ? DT_BOOL : DT_I64;
  int vid = ir_const(c->g, "const", nt.t.dt, nt.t.rank, nt.t.dims, NULL);
  nt.data = gval(c->g, vid)->data;
  nt.k = 0;
  nested_walk(L, 1, 0, &nt);
  lt_push(L, vid);
  return 1;
}

/* full(shape, value [, dtype]), zeros(shape [, dtype]), ones(shape [, dtype]) */
static int fill(lua_State *L, double x, int dtype_arg) {
  LuaCtx *c = lctx(L);
  Type t = {.dt = DT_F32};
  check_shape(L, 1, &t, "full");
  if (!lua_isnoneornil(L, dtype_arg))
    t.dt = check_dtype(L, luaL_checkstring(L, dtype_arg), "full");
  int vid = ir_const(c->g, "const", t.dt, t.rank, t.dims, NULL);
  for (int64_t i = 0; i < type_numel(&t); i++)
    el_set_f(t.dt, gval(c->g, vid)->data, i, x);
  lt_push(L, vid);
  return 1;
}
static int full(lua_State *L) { return fill(L, luaL_checknumber(L, 2), 3); }
static int zeros(lua_State *L) { return fill(L, 0, 2); }
static int ones(lua_State *L) { return fill(L, 1, 2); }

/* arange(n) or arange(start, stop [, step]): an i64 constant (f32 if any
 * argument is a float) */
static int arange(lua_State *L) {
  LuaCtx *c = lctx(L);
  bool one = lua_isnoneornil(L, 2);
  double start = one ? 0 : luaL_checknumber(L, 1), stop = luaL_checknumber(L, one ? 1 : 2);
  double step = lua_isnoneornil(L, 3) ? 1 : luaL_checknumber(L, 3);
  bool ints = true;
  for (int i = 1; i <= lua_gettop(L) && i <= 3; i++)
    ints = ints && lua_isinteger(L, i);
  if (!isfinite(start) || !isfinite(stop) || !isfinite(step))
    dsl_fail(L, "arange: start %g, stop %g, step %g; expected finite numbers", start, stop, step);
  if (step == 0)
    dsl_fail(L, "arange: step is 0");
  double len = ceil((stop - start) / step);
  if (len < 0)
    len = 0;
  if (len > (double)MAX_NUMEL)
    dsl_fail(L, "arange: too long");
  int64_t n = (int64_t)len;
  DType dt = ints ? DT_I64 : DT_F32;
  int vid = ir_const(c->g, "const", dt, 1, &n, NULL);
  for (int64_t i = 0; i < n; i++)
    el_set_f(dt, gval(c->g, vid)->data, i, start + (double)i * step);
  lt_push(L, vid);
  return 1;
}

void dsl_open_model(lua_State *L) {
  static const luaL_Reg globals[] = {
      {"config", config}, {"input", input}, {"output", output}, {"param", param},
      {"weights", weights}, {"gguf_meta", gguf_meta}, {"has_param", has_param}, {"param_shape", param_shape}, {"const", const_}, {"full", full}, {"zeros", zeros},
      {"ones", ones}, {"arange", arange}, {NULL, NULL},
  };
  lua_pushglobaltable(L);
  luaL_setfuncs(L, globals, 0);
  lua_pop(L, 1);
  dsl_open_state(L);
  dsl_open_decoder(L);
}

bool dsl_finish_model(LuaCtx *c, Diag *d) {
  Graph *g = c->g;
  d->file = c->script;
  for (int i = 0; i < c->o->nsets; i++) {
    if (c->set_used[i])
      continue;
    if (!c->config_origin)
      return diag_error(d, "--set %s: the script has no config{}; expected config{key = default, "
                           "...} for the keys --set gives", c->o->sets[i]);
    d->file = c->config_origin;
    return diag_error(d, "--set %s: the script's config{} has no such parameter", c->o->sets[i]);
  }
  if (g->noutputs == 0)
    return diag_error(d, "the script defines no output; expected output(tensor, \"name\")");
  if (g->ninputs == 0)
    return diag_error(d, "the script defines no input; expected input{\"x\", {dims...}}");
  Diag unused = {0};
  bool all_used = c->gguf ? gguf_check_all_used(c->gguf, &unused)
                  : c->weights ? safetensors_check_all_used(c->weights, &unused) : true;
  if (c->o->strict_weights && !all_used) {
    /* the weights() line when the script bound them; --weights has no line */
    d->file = c->weights_origin ? c->weights_origin : c->script;
    return diag_error(d, "%s%s", c->weights_origin ? "weights: " : "", unused.msg);
  }
  /* checkpoints carry buffers and heads a script does not build
   * (position_ids, a pooler): bind what the model needs, say what is left */
  char *left = c->gguf ? gguf_unused_list(c->gguf)
               : c->weights ? safetensors_unused_list(c->weights) : NULL;
  if (left && !c->o->quiet)
    fprintf(stderr, "kiln: note: %s\n", left);
  free(left);
  if (!dsl_finish_states(c, d))
    return false;
  graph_compact(g);
  return true;
}
