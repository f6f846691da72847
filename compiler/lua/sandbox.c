/* sandbox.c — running a model script safely: a Lua 5.4 state with only
 * base (minus dofile/loadfile, text-only load), string (minus dump), table,
 * math and utf8; a `require` that finds only kiln's bundled modules
 * (compiler/lua/NAME.lua, embedded at build time); an instruction budget (a
 * count hook) and a memory cap (the allocator), so a runaway or greedy
 * script ends in an error, never a hang or an OOM. Errors carry the
 * script's file:line; -v adds the Lua traceback. */
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../templates.h"
#include "lua_ctx.h"
#include "lua_model.h"
#include "lua_tensor.h"

#define DEFAULT_STEPS ((int64_t)1000000000)
#define DEFAULT_MEM ((int64_t)512 << 20)
#define HOOK_EVERY 1000

static void *limited_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  LuaCtx *c = ud;
  size_t old = ptr ? osize : 0;
  if (nsize == 0) {
    free(ptr);
    c->mem -= (int64_t)old;
    return NULL;
  }
  if (nsize > old && c->mem + (int64_t)(nsize - old) > c->max_mem) {
    c->mem_exceeded = true;
    return NULL; /* Lua raises a memory error */
  }
  void *p = realloc(ptr, nsize);
  if (p)
    c->mem += (int64_t)nsize - (int64_t)old;
  return p;
}

static void count_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  LuaCtx *c = lctx(L);
  char src[LUA_IDSIZE];
  c->steps += HOOK_EVERY;
  c->last_line = dsl_user_frame(L, c, src); /* for errors raised where no stack is left */
  if (c->steps > c->max_steps)
    dsl_fail(L, "the script ran for more than %lld Lua steps (a runaway loop?); --lua-steps=N "
                "raises the budget", (long long)c->max_steps);
}

/* ---- the restricted library set --------------------------------------------- */

/* load(chunk [, name [, mode [, env]]]) with mode forced to text. The
 * base library's load is its upvalue, out of the script's reach. */
static int text_only_load(lua_State *L) {
  int top = lua_gettop(L);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushvalue(L, 1);
  if (top >= 2) lua_pushvalue(L, 2); else lua_pushnil(L);
  lua_pushliteral(L, "t");
  int nargs = 3;
  if (top >= 4) {
    lua_pushvalue(L, 4);
    nargs = 4;
  }
  lua_call(L, nargs, LUA_MULTRET);
  return lua_gettop(L) - top;
}

/* fail(msg): raise msg located at the user's script line, as the tensor
 * methods do: how a bundled module (nn) reports a bad argument at the line
 * that called it rather than at its own. */
static int fail_at_script_line(lua_State *L) {
  return dsl_fail(L, "%s", luaL_checkstring(L, 1));
}

/* __index of the stand-ins for os, io, package and debug: any use of them
 * is an error that says why, rather than "attempt to index a nil value". */
static int missing_library(lua_State *L) {
  const char *lib = lua_tostring(L, lua_upvalueindex(1));
  const char *key = lua_tostring(L, 2);
  return dsl_fail(L, "%s.%s: scripts run in kiln's sandbox, which has no '%s' library (no files, "
                     "programs or native code; see docs/lua.md)", lib, key ? key : "?", lib);
}

static void stand_in_library(lua_State *L, const char *lib) {
  lua_newtable(L);
  lua_newtable(L); /* its metatable */
  lua_pushstring(L, lib);
  lua_pushcclosure(L, missing_library, 1);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");
  lua_setfield(L, -2, "__newindex");
  lua_setmetatable(L, -2);
  lua_setglobal(L, lib);
}

/* print writes to stderr: stdout may carry IR dumps. */
static int print_stderr(lua_State *L) {
  int n = lua_gettop(L);
  for (int i = 1; i <= n; i++) {
    size_t len;
    const char *s = luaL_tolstring(L, i, &len);
    if (i > 1)
      fputc('\t', stderr);
    fwrite(s, 1, len, stderr);
    lua_pop(L, 1);
  }
  fputc('\n', stderr);
  return 0;
}

static bool load_module_text(lua_State *L, const char *name) {
  char file[128];
  snprintf(file, sizeof file, "%s.lua", name);
  const char *text = strlen(name) < 100 ? template_text(file) : NULL;
  if (!text)
    return false;
  char chunk[140];
  snprintf(chunk, sizeof chunk, "@%s", file);
  if (luaL_loadbufferx(L, text, strlen(text), chunk, "t") != LUA_OK)
    lua_error(L); /* a bundled module that does not compile is a kiln bug, but say it */
  return true;
}

/* require(name): kiln's bundled modules only, each loaded once. While a
 * module loads, its slot holds false, so a cycle is an error, not an
 * endless recursion. */
static int bundled_require(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, "kiln.loaded");
  lua_getfield(L, -1, name);
  if (lua_toboolean(L, -1))
    return 1;
  if (lua_isboolean(L, -1))
    return dsl_fail(L, "require '%s': circular require; '%s' is still loading (a module it "
                       "requires requires it back at load time)", name, name);
  lua_pop(L, 1);
  if (!load_module_text(L, name))
    return dsl_fail(L, "require '%s': no such module; the sandbox offers only kiln's bundled "
                       "modules ('nn')", name);
  lua_pushboolean(L, 0);
  lua_setfield(L, -3, name);
  lua_pushstring(L, name);
  lua_call(L, 1, 1);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushboolean(L, 1);
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, name);
  return 1;
}

static void open_sandbox_libs(lua_State *L) {
  static const luaL_Reg libs[] = {
      {LUA_GNAME, luaopen_base},       {LUA_STRLIBNAME, luaopen_string},
      {LUA_TABLIBNAME, luaopen_table}, {LUA_MATHLIBNAME, luaopen_math},
      {LUA_UTF8LIBNAME, luaopen_utf8},
  };
  for (int i = 0; i < KILN_COUNT(libs); i++) {
    luaL_requiref(L, libs[i].name, libs[i].func, 1);
    lua_pop(L, 1);
  }
  /* base: no file access, no binary chunks */
  static const char *const drop[] = {"dofile", "loadfile"};
  for (int i = 0; i < KILN_COUNT(drop); i++) {
    lua_pushnil(L);
    lua_setglobal(L, drop[i]);
  }
  lua_getglobal(L, "load");
  lua_pushcclosure(L, text_only_load, 1);
  lua_setglobal(L, "load");
  static const char *const absent[] = {"os", "io", "package", "debug"};
  for (int i = 0; i < KILN_COUNT(absent); i++)
    stand_in_library(L, absent[i]);
  lua_pushcfunction(L, print_stderr);
  lua_setglobal(L, "print");
  lua_pushcfunction(L, fail_at_script_line);
  lua_setglobal(L, "fail");
  lua_getglobal(L, "string");
  lua_pushnil(L);
  lua_setfield(L, -2, "dump");
  lua_pop(L, 1);
  /* deterministic: 5.4 seeds math.random from the clock otherwise */
  lua_getglobal(L, "math");
  lua_getfield(L, -1, "randomseed");
  lua_pushinteger(L, 0);
  lua_call(L, 1, 0);
  lua_pop(L, 1);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, "kiln.loaded");
  lua_pushcfunction(L, bundled_require);
  lua_setglobal(L, "require");
}

/* ---- running the script -------------------------------------------------------- */

static int traceback_handler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) /* error(non-string): say where */
    msg = lua_pushfstring(L, "%s: error(%s) raised; expected a message string", dsl_origin(L),
                          luaL_typename(L, 1));
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* The error text for status, one line unless -v asked for the traceback. */
static void record_error(LuaCtx *c, lua_State *L, int status, Diag *d) {
  d->file = NULL; /* Lua messages carry their own "file:line:" */
  if (status == LUA_ERRMEM || c->mem_exceeded) {
    if (c->last_line)
      diag_error(d, "%s:%d: the script allocated more than %lld MiB (a memory bomb?); "
                    "--lua-mem=MB raises the cap", c->script, c->last_line,
                 (long long)(c->max_mem >> 20));
    else
      diag_error(d, "%s: the script allocated more than %lld MiB (a memory bomb?); --lua-mem=MB "
                    "raises the cap", c->script, (long long)(c->max_mem >> 20));
    return;
  }
  const char *msg = lua_tostring(L, -1);
  if (!msg)
    msg = "error object is not a string";
  if (c->o->traceback) {
    diag_error(d, "%s", msg);
    return;
  }
  const char *nl = strchr(msg, '\n');
  diag_error(d, "%.*s", nl ? (int)(nl - msg) : (int)strlen(msg), msg);
}


Graph *dsl_load_model(Arena *a, const char *path, const LuaOptions *o, Diag *d) {
  static const LuaOptions none = {0};
  if (!o)
    o = &none;
  d->file = path;
  size_t len;
  char *text = (char *)read_file(path, &len, d);
  if (!text)
    return NULL;
  LuaCtx c = {
      .a = a, .script = path, .chunkname = arena_printf(a, "@%s", path), .o = o,
      .max_steps = o->max_steps > 0 ? o->max_steps : DEFAULT_STEPS,
      .max_mem = o->max_mem > 0 ? o->max_mem : DEFAULT_MEM,
  };
  c.g = graph_new(a, path);
  c.g->opset = 17;
  c.set_used = arena_alloc(a, sizeof(bool) * (size_t)(o->nsets + 1));
  if (o->weights) { /* --weights: bound before the script runs */
    c.weights = arena_alloc(a, sizeof(SafeTensors));
    c.weights_path = o->weights;
    if (!safetensors_load(a, o->weights, c.weights, d)) {
      free(text);
      return NULL;
    }
    d->file = path;
  }
  lua_State *L = lua_newstate(limited_alloc, &c);
  if (!L) {
    free(text);
    diag_error(d, "cannot create a Lua state");
    return NULL;
  }
  lctx_bind(L, &c);
  open_sandbox_libs(L);
  dsl_open_tensor(L);
  dsl_open_model(L);
  lua_sethook(L, count_hook, LUA_MASKCOUNT, HOOK_EVERY);

  lua_pushcfunction(L, traceback_handler);
  int status = luaL_loadbufferx(L, text, len, c.chunkname, "t");
  free(text);
  if (status == LUA_OK)
    status = lua_pcall(L, 0, 0, 1);
  bool ok = status == LUA_OK;
  if (!ok)
    record_error(&c, L, status, d);
  else if (!dsl_finish_model(&c, d))
    ok = false;
  lua_close(L);
  return ok ? c.g : NULL;
}
