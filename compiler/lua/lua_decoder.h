/* lua_decoder.h — decoder{} (decoder.c): a generative model's forward
 * pass, built once per entry point (prefill, step) over shared weights
 * and KV caches. */
#ifndef KILN_LUA_DECODER_H
#define KILN_LUA_DECODER_H

#include <lua.h>

void dsl_open_decoder(lua_State *L);

#endif
