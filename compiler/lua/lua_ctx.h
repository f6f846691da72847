/* lua_ctx.h — the Lua frontend's per-run context (context.c): the graph
 * being built, limits, weights, config, and where an error or a node comes
 * from in the script. Nothing outside compiler/lua/ includes it.
 *
 * compiler/lua/'s files, one job each, and the headers they include (an
 * arrow: "includes the header of"); no file includes a header above it:
 *
 *   arch.c     a GGUF file as a model: the bundled description of its
 *      |       architecture (dsl_load_gguf, lua_frontend.h), run by
 *      v
 *   sandbox.c  runs a script: Lua state, safe libs, require, limits;
 *      |       dsl_load_model, dsl_load_text (lua_frontend.h)
 *      v
 *   model.c    config{}, input{}, output(), param{}, weights(), the final
 *      |       checks (lua_model.h)
 *      v
 *   state.c    state{} and state_update() (lua_state.h)
 *      |       decoder.c  decoder{}: prefill and step entries, KV caches (lua_decoder.h)
 *      |
 *      v
 *   tensor.c   tensors as userdata, their methods and op() (lua_tensor.h)
 *      |
 *      v
 *   context.c  LuaCtx, lctx, script origins, dsl_fail (lua_ctx.h)
 *
 * (sandbox.c also includes lua_tensor.h and lua_ctx.h directly, model.c
 * lua_tensor.h and lua_ctx.h, state.c lua_ctx.h: every arrow points down.) */
#ifndef KILN_LUA_CTX_H
#define KILN_LUA_CTX_H

#include <lauxlib.h>
#include <lua.h>

#include "../formats/gguf.h"
#include "../formats/safetensors.h"
#include "lua_frontend.h"

typedef struct LuaCtx {
  Graph *g;
  Arena *a;
  const char *script;        /* path of the main script, as given */
  const char *chunkname;     /* "@path": how Lua names the script's frames */
  const LuaOptions *o;
  int64_t steps, max_steps;  /* instruction count hook */
  double t0, max_seconds;    /* CPU time at the start, the time budget (dsl_check_time) */
  int64_t mem, max_mem;      /* allocator */
  bool mem_exceeded;
  int last_line;             /* script line at the last hook call (for memory errors) */
  SafeTensors *weights;      /* bound .safetensors weights, or NULL */
  Gguf *gguf;                /* bound .gguf weights, or NULL (at most one of the two) */
  const char *weights_path;
  bool *set_used;            /* per --set, whether config{} consumed it */
  const char *config_origin; /* "model.lua:3" of the config{} call, for unknown --set keys */
  const char *weights_origin;/* ... of the weights() call, for unused tensors */
  bool decoder_replay;       /* decoder{} builds its second entry: param{} of a
                                declared name gives the same tensor */
  const char *name_prefix;   /* x:named()'s prefix: the decoder entry's "step.", or NULL */
} LuaCtx;

/* The run's context, as lctx_bind left it in L's registry. */
LuaCtx *lctx(lua_State *L);
void lctx_bind(lua_State *L, LuaCtx *c);

/* The innermost frame of the user's script, else the innermost Lua frame
 * (src receives its short_src); the line, or 0 when there is none. */
int dsl_user_frame(lua_State *L, const LuaCtx *c, char src[LUA_IDSIZE]);
/* "model.lua:14" for the innermost frame of the user's script (the
 * bundled modules' frames are skipped), or the innermost Lua frame. */
const char *dsl_origin(lua_State *L);
/* A node's origin: dsl_origin, plus the bundled module's line when a
 * module made the node: "model.lua:14 (nn.lua:201)". */
const char *dsl_node_origin(lua_State *L);
/* CPU seconds this process has used. */
double dsl_cpu_seconds(void);
/* Raise the time-budget error when the script has run past it: the count
 * hook calls it, and so does every C function that may loop long without
 * running Lua code (pattern matching, const() walks). */
void dsl_check_time(lua_State *L);
/* Raise a Lua error "ORIGIN: fmt..." (never returns). */
int dsl_fail(lua_State *L, const char *fmt, ...) KILN_PRINTF(2, 3);

#endif
