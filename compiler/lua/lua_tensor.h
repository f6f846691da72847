/* lua_tensor.h — tensors on the Lua side (tensor.c): Lua values to and
 * from graph values, and the one call that adds an op node from Lua. */
#ifndef KILN_LUA_TENSOR_H
#define KILN_LUA_TENSOR_H

#include <lua.h>

#include "../ir/ir.h"

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

/* The Tensor metatable and the op globals (op(), cat(), ...). */
void dsl_open_tensor(lua_State *L);

#endif
