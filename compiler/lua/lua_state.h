/* lua_state.h — state{} and state_update() (state.c): values a model
 * carries from one call to the next. */
#ifndef KILN_LUA_STATE_H
#define KILN_LUA_STATE_H

#include "lua_ctx.h"

/* Registered by dsl_open_model. */
void dsl_open_state(lua_State *L);
/* Every state was given its next value. */
bool dsl_finish_states(LuaCtx *c, Diag *d);

#endif
