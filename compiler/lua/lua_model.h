/* lua_model.h — the model-level globals of the DSL (model.c) and the
 * checks that run when the script has finished. */
#ifndef KILN_LUA_MODEL_H
#define KILN_LUA_MODEL_H

#include "lua_ctx.h"

/* config{}, input{}, output(), param{}, weights(), ... and state{}. */
void dsl_open_model(lua_State *L);
/* Bind c's weights file at path (weights() and --weights): a GGUF file
 * when it starts with the GGUF magic, else a .safetensors file. False + d
 * when it cannot be read. */
bool dsl_bind_weights_file(LuaCtx *c, const char *path, Diag *d);
/* After the script ran: outputs present, weights all used, --set keys all
 * known; compacts the graph. */
bool dsl_finish_model(LuaCtx *c, Diag *d);

#endif
