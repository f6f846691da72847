/* context.c — the per-run context of the Lua frontend and where errors
 * point: the LuaCtx every DSL function reaches through lctx, and the
 * script line (file:line, or a bundled module's line beside it) that node
 * origins and error messages carry. The bottom of compiler/lua/'s include
 * DAG (see lua_ctx.h). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lua_ctx.h"

static const char CTX_KEY = 'k'; /* registry key: its address */

LuaCtx *lctx(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &CTX_KEY);
  LuaCtx *c = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return c;
}

void lctx_bind(lua_State *L, LuaCtx *c) {
  lua_pushlightuserdata(L, c);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &CTX_KEY);
}

/* The innermost frame of the user's script, else the innermost Lua frame
 * (src receives its short_src); the line, or 0 when there is none. */
int dsl_user_frame(lua_State *L, const LuaCtx *c, char src[LUA_IDSIZE]) {
  lua_Debug ar;
  int line = 0;
  for (int level = 0; lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0)
      continue;
    bool mine = strcmp(ar.source, c->chunkname) == 0;
    if (mine || !line) {
      memcpy(src, ar.short_src, LUA_IDSIZE);
      line = ar.currentline;
    }
    if (mine)
      break;
  }
  return line;
}

const char *dsl_origin(lua_State *L) {
  LuaCtx *c = lctx(L);
  char src[LUA_IDSIZE];
  int line = dsl_user_frame(L, c, src);
  return line ? arena_printf(c->a, "%s:%d", src, line) : c->script;
}

/* The innermost Lua frame decides: the script's own (its line says it
 * all) or a bundled module's (its line tells apart the many nodes one nn
 * call makes, in dumps and in the generated C). */
const char *dsl_node_origin(lua_State *L) {
  LuaCtx *c = lctx(L);
  const char *where = dsl_origin(L);
  lua_Debug ar;
  for (int level = 0; lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0)
      continue;
    if (strcmp(ar.source, c->chunkname) == 0)
      return where;
    return arena_printf(c->a, "%s (%s:%d)", where, ar.short_src, ar.currentline);
  }
  return where;
}

double dsl_cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void dsl_check_time(lua_State *L) {
  LuaCtx *c = lctx(L);
  if (dsl_cpu_seconds() - c->t0 > c->max_seconds)
    dsl_fail(L, "the script ran past its time budget of %g s of CPU time (a runaway loop or "
                "pattern?); the budget is 10 s per 10^9 --lua-steps, at least 1 s",
             c->max_seconds);
}

int dsl_fail(lua_State *L, const char *fmt, ...) {
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  lua_pushfstring(L, "%s: %s", dsl_origin(L), msg);
  return lua_error(L);
}
