/* decoder.c — decoder{}: a model that generates token by token with a KV
 * cache (issue 10). The script gives the forward pass once, as a function
 * of a chunk of tokens; kiln calls it twice — for a prompt chunk of
 * `prefill` tokens and for one token — into one graph whose two halves
 * share the weights (param{} of a name already declared returns the same
 * tensor while the second half is built) and the caches:
 *
 *   decoder{ctx = 512, prefill = 64, forward = function(x)
 *     -- x.tokens i64[T]      the chunk's token ids (T = 64, then 1)
 *     -- x.positions i64[T]   their positions: x.start + 0 .. T-1
 *     -- x.start i64[1]       how many positions the caches hold
 *     -- x.count i64[1]       how many of the T tokens are real (prefill: 1..T)
 *     -- x.last i64[1]        x.count - 1: the row of the last real token
 *     -- x.T, x.ctx           numbers
 *     local kc = x:cache("blk.0.k", k)       -- k [T, Hkv, D] -> the cache [ctx, Hkv, D]
 *     local vc = x:cache("blk.0.v", v, {dtype = "f16"})  -- stored as f16 (or bf16): half the bytes
 *     local y = x:attention(q, kc, vc)       -- q [T, H, D] -> [T, H, Dv], causal over the cache
 *     return logits                          -- the last real token's, any shape of VOCAB elements
 *   end}
 *
 * An encoder–decoder adds `encode = function(e) ... end`, its own entry
 * point, run once per source before the prompt: its inputs are the
 * input{}s it declares, and it stores what forward reads back —
 * per-layer cross-attention keys and values, the source's mask — with
 * e:set(name, t); forward reads them with x:get(name):
 *
 *   decoder{ctx = 64, prefill = 8,
 *     encode = function(e)
 *       local src = input{"src", {1, 16}, "i64"}
 *       e:set("memory_k", ...)                 -- a state of that shape, written in place
 *     end,
 *     forward = function(x) ... x:get("memory_k") ... end}
 *
 * Each cache and each stored value is a state the CacheWrite op updates
 * in place; the entry points the generated C gets (NAME_encode,
 * NAME_prefill, NAME_step) keep the length in the state struct
 * (emit_decoder.c); encode empties the caches (length 0). */
#include <string.h>

#include "../ir/build.h"
#include "../ir/ops.h"
#include "lua_ctx.h"
#include "lua_decoder.h"
#include "lua_tensor.h"

/* An integer field of the table at idx, at least lo. */
static int64_t int_field(lua_State *L, int idx, const char *key, int64_t lo) {
  lua_getfield(L, idx, key);
  if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < lo)
    dsl_fail(L, "decoder: %s is %s; expected an integer >= %lld", key,
             lua_isnoneornil(L, -1) ? "missing" : lua_tostring(L, -1) ? lua_tostring(L, -1) : luaL_typename(L, -1),
             (long long)lo);
  int64_t v = lua_tointeger(L, -1);
  lua_pop(L, 1);
  return v;
}

/* A tensor field of the entry table x (argument 1 of x:cache and x:attention). */
static int entry_value(lua_State *L, const char *key, const char *what) {
  if (lua_type(L, 1) != LUA_TTABLE)
    dsl_fail(L, "%s: called on a %s; expected x:%s(...) on the table forward() was given", what,
             luaL_typename(L, 1), what);
  lua_getfield(L, 1, key);
  if (!lt_is(L, -1))
    dsl_fail(L, "%s: x.%s is not a tensor; expected x:%s(...) on the table forward() was given", what, key, what);
  int v = lt_check(L, -1);
  lua_pop(L, 1);
  return v;
}

/* x:cache(name, rows [, {dtype}]): rows [T, ...] written at x.start; the
 * cache [ctx, ...], of the rows' dtype or, for f32 rows, f16 or bf16. */
static int cache(lua_State *L) {
  LuaCtx *c = lctx(L);
  Graph *g = c->g;
  if (!g->decoder)
    dsl_fail(L, "cache: outside decoder{}; expected x:cache(name, rows) inside forward");
  int start = entry_value(L, "start", "cache"), count = entry_value(L, "count", "cache");
  const char *name = luaL_checkstring(L, 2);
  int rows = lt_check(L, 3);
  Type rt = gval(g, rows)->type;
  char ts[128];
  if (rt.rank < 1 || rt.rank > MAX_RANK)
    dsl_fail(L, "cache '%s': rows are %s; expected [T, ...] with one row per token", name,
             type_str(&rt, ts, sizeof ts));
  Type ct = rt;
  ct.dims[0] = g->decoder->ctx;
  if (lua_type(L, 4) == LUA_TTABLE) {
    lua_getfield(L, 4, "dtype");
    const char *dt = lua_tostring(L, -1);
    if (!dt || (strcmp(dt, "f32") && strcmp(dt, "f16") && strcmp(dt, "bf16")))
      dsl_fail(L, "cache '%s': dtype is %s; expected \"f32\", \"f16\" or \"bf16\"", name,
               dt ? dt : luaL_typename(L, -1));
    if (strcmp(dt, "f32") && rt.dt != DT_F32)
      dsl_fail(L, "cache '%s': an %s cache of %s rows; expected f32 rows for an f16 or bf16 cache", name, dt,
               dt_name(rt.dt));
    ct.dt = dt_from_name(dt);
    lua_pop(L, 1);
  } else if (!lua_isnoneornil(L, 4)) {
    dsl_fail(L, "cache '%s': the options are a %s; expected a table such as {dtype = \"f16\"}", name,
             luaL_typename(L, 4));
  }
  int s = graph_find_value(g, name);
  if (s >= 0 && !gval(g, s)->is_state)
    dsl_fail(L, "cache '%s': the name is taken by a value that is not a cache", name);
  if (s >= 0 && !type_equal(&gval(g, s)->type, &ct)) {
    char cs[128];
    dsl_fail(L, "cache '%s' is %s and these rows make it %s; expected the same cache in every entry", name,
             type_str(&gval(g, s)->type, cs, sizeof cs), type_str(&ct, ts, sizeof ts));
  }
  if (s < 0) { /* first entry: a zero-filled state, updated in place */
    if (!type_size_ok(&ct))
      dsl_fail(L, "cache '%s': %s is too large", name, type_str(&ct, ts, sizeof ts));
    s = graph_add_state_in_place(g, name, ct);
  }
  int in[4] = {s, rows, start, count};
  return lt_op(L, "cache", OP_CACHEWRITE, in, 4, 0, 1);
}

/* x:attention(q, k, v [, {scale = s}]): causal attention over the caches. */
static int attention(lua_State *L) {
  int start = entry_value(L, "start", "attention"), count = entry_value(L, "count", "attention");
  int in[5] = {lt_check(L, 2), lt_check(L, 3), lt_check(L, 4), start, count};
  int attrs = lua_type(L, 5) == LUA_TTABLE ? 5 : 0;
  return lt_op(L, "attention", OP_CACHEDATTENTION, in, 5, attrs, 1);
}

/* The states e:set made, by name (a registry table): x:get reads only these. */
static const char STORED[] = "kiln.decoder_stored";

static int stored_states(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, STORED) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, STORED);
  }
  return lua_gettop(L);
}

/* e:set(name, t): encode stores t [n, ...] in the state `name` (zeros
 * until the first encode), written in place; forward reads it with x:get. */
static int set(lua_State *L) {
  LuaCtx *c = lctx(L);
  Graph *g = c->g;
  const char *name = luaL_checkstring(L, 2);
  int t = lt_check(L, 3);
  Value *tv = gval(g, t);
  char ts[128];
  if (tv->type.rank < 1)
    dsl_fail(L, "set '%s': the value is %s; expected rank >= 1 (reshape a scalar to {1})", name,
             type_str(&tv->type, ts, sizeof ts));
  if (tv->data)
    dsl_fail(L, "set '%s': the value is a constant; expected one computed from encode's inputs (a constant "
                "belongs in a param or const())", name);
  if (graph_find_value(g, name) >= 0)
    dsl_fail(L, "set '%s': the name is taken; expected one e:set per name, a name of its own", name);
  if (!type_size_ok(&tv->type))
    dsl_fail(L, "set '%s': %s is too large", name, type_str(&tv->type, ts, sizeof ts));
  int s = graph_add_state_in_place(g, name, tv->type);
  int64_t zero = 0, all = gval(g, s)->type.dims[0];
  int in[4] = {s, t, ir_const_i64(g, "zero", &zero, 1), ir_const_i64(g, "rows", &all, 1)};
  lt_op(L, "set", OP_CACHEWRITE, in, 4, 0, 1);
  int tab = stored_states(L);
  lua_pushinteger(L, s);
  lua_setfield(L, tab, name);
  return 0;
}

/* x:get(name): the state encode stored with e:set(name, t). */
static int get(lua_State *L) {
  const char *name = luaL_checkstring(L, 2);
  int tab = stored_states(L);
  if (lua_getfield(L, tab, name) != LUA_TNUMBER) {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    lua_pushnil(L);
    while (lua_next(L, tab)) {
      lua_pop(L, 1);
      if (luaL_bufflen(&b))
        luaL_addstring(&b, ", ");
      luaL_addstring(&b, lua_tostring(L, -1));
    }
    luaL_pushresult(&b);
    dsl_fail(L, "get '%s': encode stored no value of that name; expected one of e:set's names (%s)", name,
             lua_rawlen(L, -1) ? lua_tostring(L, -1) : "none: the decoder has no encode, or it stored nothing");
  }
  lt_push(L, (int)lua_tointeger(L, -1));
  return 1;
}

/* The table encode() gets (pushed). */
static void push_encode_table(lua_State *L, int64_t ctx) {
  lua_newtable(L);
  lua_pushinteger(L, ctx);
  lua_setfield(L, -2, "ctx");
  lua_pushcfunction(L, set);
  lua_setfield(L, -2, "set");
}

/* The table forward() gets for entry e (pushed). */
static void push_entry_table(lua_State *L, DecoderEntry *e, int64_t ctx) {
  Graph *g = lctx(L)->g;
  lua_newtable(L);
  int x = lua_gettop(L);
  decoder_entry_inputs(g, e);
  lt_push(L, e->tokens_vid);
  lua_setfield(L, x, "tokens");
  lt_push(L, e->start_vid);
  lua_setfield(L, x, "start");
  lt_push(L, e->count_vid);
  lua_setfield(L, x, "count");
  int64_t *steps = arena_alloc(g->arena, sizeof(int64_t) * (size_t)e->tokens);
  for (int64_t i = 0; i < e->tokens; i++)
    steps[i] = i;
  int in[2] = {e->start_vid, ir_const_i64(g, "steps", steps, (int)e->tokens)};
  lt_op(L, "decoder positions", OP_ADD, in, 2, 0, 1);
  gval(g, lt_check(L, -1))->name = arena_printf(g->arena, "%s.positions", e->name);
  lua_setfield(L, x, "positions");
  int in2[2] = {e->count_vid, ir_const_i64(g, "one", (int64_t[]){1}, 1)};
  lt_op(L, "decoder last", OP_SUB, in2, 2, 0, 1);
  gval(g, lt_check(L, -1))->name = arena_printf(g->arena, "%s.last", e->name);
  lua_setfield(L, x, "last");
  lua_pushinteger(L, e->tokens);
  lua_setfield(L, x, "T");
  lua_pushinteger(L, ctx);
  lua_setfield(L, x, "ctx");
  lua_pushcfunction(L, cache);
  lua_setfield(L, x, "cache");
  lua_pushcfunction(L, attention);
  lua_setfield(L, x, "attention");
  lua_pushcfunction(L, get);
  lua_setfield(L, x, "get");
}

/* forward's result (at the top of the stack) as the entry's output
 * "<entry>.logits", flattened to one dim. */
static void entry_output(lua_State *L, DecoderEntry *e) {
  Graph *g = lctx(L)->g;
  if (!lt_is(L, -1))
    dsl_fail(L, "decoder: forward returned a %s; expected the logits tensor of the last real token",
             luaL_typename(L, -1));
  int y = lt_check(L, -1);
  int64_t n = type_numel(&gval(g, y)->type);
  int in[2] = {y, ir_const_i64(g, "logits_shape", &n, 1)};
  lt_op(L, "decoder logits", OP_RESHAPE, in, 2, 0, 1);
  int vid = lt_check(L, -1);
  Value *v = gval(g, vid);
  v->name = arena_printf(g->arena, "%s.logits", e->name);
  v->is_output = true;
  graph_add_output(g, vid);
  e->logits_out = g->noutputs - 1;
  lua_pop(L, 2); /* the output and forward's result */
}

static int decoder(lua_State *L) {
  LuaCtx *c = lctx(L);
  Graph *g = c->g;
  luaL_checktype(L, 1, LUA_TTABLE);
  if (g->decoder)
    dsl_fail(L, "decoder: a second decoder{}; expected one per model");
  if (g->ninputs || g->noutputs)
    dsl_fail(L, "decoder: the model already has inputs or outputs; expected decoder{} to make them all "
                "(its entries' tokens, and their logits)");
  int64_t ctx = int_field(L, 1, "ctx", 1), prefill = int_field(L, 1, "prefill", 1);
  if (prefill > ctx)
    dsl_fail(L, "decoder: prefill is %lld and ctx %lld; expected prefill <= ctx", (long long)prefill,
             (long long)ctx);
  lua_getfield(L, 1, "forward");
  if (lua_type(L, -1) != LUA_TFUNCTION)
    dsl_fail(L, "decoder: forward is a %s; expected function(x) returning the logits", luaL_typename(L, -1));
  int fwd = lua_gettop(L);
  int enc = 0;
  if (lua_getfield(L, 1, "encode") == LUA_TFUNCTION)
    enc = lua_gettop(L);
  else if (!lua_isnil(L, -1))
    dsl_fail(L, "decoder: encode is a %s; expected function(e) storing the source's keys and values with "
                "e:set", luaL_typename(L, -1));
  Decoder *dec = arena_alloc(c->a, sizeof *dec);
  *dec = (Decoder){.ctx = ctx, .nentries = 2,
                   .entries = {{.name = "prefill", .tokens = prefill}, {.name = "step", .tokens = 1}}};
  g->decoder = dec;
  lua_pushnil(L);
  lua_setfield(L, LUA_REGISTRYINDEX, STORED);
  if (enc) { /* first: the states it stores must exist when forward reads them */
    DecoderEntry *en = &dec->entries[dec->nentries++];
    *en = (DecoderEntry){.name = "encode", .tokens_vid = -1, .start_vid = -1, .count_vid = -1, .logits_out = -1};
    int first = g->ninputs, outs = g->noutputs;
    c->name_prefix = "encode.";
    lua_pushvalue(L, enc);
    push_encode_table(L, ctx);
    lua_call(L, 1, 0);
    if (g->noutputs != outs)
      dsl_fail(L, "decoder: encode made an output; expected it to store values with e:set (the logits are "
                  "forward's)");
    for (int i = first; i < g->ninputs; i++)
      if (!gval(g, g->inputs[i])->is_state)
        en->ninputs++;
    if (!en->ninputs)
      dsl_fail(L, "decoder: encode declared no input; expected the source as input{...} inside encode");
    en->inputs = arena_alloc(c->a, sizeof(int) * (size_t)en->ninputs);
    en->ninputs = 0;
    for (int i = first; i < g->ninputs; i++)
      if (!gval(g, g->inputs[i])->is_state)
        en->inputs[en->ninputs++] = g->inputs[i];
  }
  for (int k = 0; k < 2; k++) {
    c->decoder_replay = enc || k > 0; /* params declared again: the same tensors */
    c->name_prefix = arena_printf(c->a, "%s.", dec->entries[k].name);
    lua_pushvalue(L, fwd);
    push_entry_table(L, &dec->entries[k], ctx);
    int inputs = g->ninputs;
    lua_call(L, 1, 1);
    for (int i = inputs; i < g->ninputs; i++)
      if (!gval(g, g->inputs[i])->is_state)
        dsl_fail(L, "decoder: forward declared input '%s'; expected inputs only in encode (forward's are "
                    "x.tokens, x.start and x.count)", gval(g, g->inputs[i])->name);
    entry_output(L, &dec->entries[k]);
  }
  c->decoder_replay = false;
  c->name_prefix = NULL;
  return 0;
}

void dsl_open_decoder(lua_State *L) { lua_register(L, "decoder", decoder); }
