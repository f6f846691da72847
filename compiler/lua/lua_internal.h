/* lua_internal.h — what the Lua frontend's files share: the per-run
 * context (the graph being built, limits, weights, config) and the helpers
 * that turn Lua values into IR. Nothing outside compiler/lua/ includes it. */
#ifndef KILN_LUA_INTERNAL_H
#define KILN_LUA_INTERNAL_H

#include <lauxlib.h>
#include <lua.h>

#include "../safetensors.h"
#include "lua_frontend.h"

#define TENSOR_MT "kiln.Tensor"

typedef struct LuaCtx {
  Graph *g;
  Arena *a;
  const char *script;        /* path of the main script, as given */
  const char *chunkname;     /* "@path": how Lua names the script's frames */
  const LuaOptions *o;
  int64_t steps, max_steps;  /* instruction count hook */
  int64_t mem, max_mem;      /* allocator */
  bool mem_exceeded;
  int last_line;             /* script line at the last hook call (for memory errors) */
  SafeTensors *weights;      /* bound weights, or NULL */
  const char *weights_path;
  bool *set_used;            /* per --set, whether config{} consumed it */
  const char *config_origin; /* "model.lua:3" of the config{} call, for unknown --set keys */
  const char *weights_origin;/* ... of the weights() call, for unused tensors */
} LuaCtx;

/* A tensor on the Lua side: one graph value. */
typedef struct LTensor {
  int vid;
} LTensor;

LuaCtx *lctx(lua_State *L);

/* "model.lua:14" for the innermost frame of the user's script (the
 * bundled modules' frames are skipped), or the innermost Lua frame. */
const char *dsl_origin(lua_State *L);
/* A node's origin: dsl_origin, plus the bundled module's line when a
 * module made the node: "model.lua:14 (nn.lua:201)". */
const char *dsl_node_origin(lua_State *L);
/* Raise a Lua error "ORIGIN: fmt..." (never returns). */
int dsl_fail(lua_State *L, const char *fmt, ...) KILN_PRINTF(2, 3);

void lt_push(lua_State *L, int vid);
/* Argument i as a tensor value id; numbers become constants of dtype like
 * (DT_F32 when like is DT_UNDEF). */
int lt_check(lua_State *L, int i);
int lt_check_like(lua_State *L, int i, DType like);
bool lt_is(lua_State *L, int i);

/* Add op (by OpId) on inputs, attributes from the table at stack index
 * attrs (0: none), infer it, raise a located error naming `what` on bad
 * input, push its nout outputs; returns nout. */
int lt_op(lua_State *L, const char *what, int op, const int *in, int nin, int attrs, int nout);
/* Set the attributes from the Lua table at index idx on node `node`. */
void lt_attrs(lua_State *L, int node, int idx, const char *what);

/* After the script ran: outputs present, weights all used, --set keys all
 * known; compacts the graph. */
bool dsl_finish_model(LuaCtx *c, Diag *d);

/* Registration of the globals each file defines. */
void dsl_open_tensor(lua_State *L);
void dsl_open_model(lua_State *L);
/* state{} and state_update() (state.c), registered by dsl_open_model;
 * dsl_finish_states: every state was given its next value. */
void dsl_open_state(lua_State *L);
bool dsl_finish_states(LuaCtx *c, Diag *d);

#endif
