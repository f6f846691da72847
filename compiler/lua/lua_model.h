/* lua_model.h — the model-level globals of the DSL (model.c) and the
 * checks that run when the script has finished. */
#ifndef KILN_LUA_MODEL_H
#define KILN_LUA_MODEL_H

#include "lua_ctx.h"

/* config{}, input{}, output(), param{}, weights(), ... and state{}. */
void dsl_open_model(lua_State *L);
/* After the script ran: outputs present, weights all used, --set keys all
 * known; compacts the graph. */
bool dsl_finish_model(LuaCtx *c, Diag *d);

#endif
