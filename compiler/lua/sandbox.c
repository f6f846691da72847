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

#include "../emit/templates.h"
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
  dsl_check_time(L);
}

/* ---- library functions whose loops the count hook never sees ---------------- *
 * Pattern matching, string.rep and the table functions loop in C, where no
 * Lua instruction runs: each is wrapped by a check that bounds its work
 * (by the memory cap, or an estimate of the matcher's worst case) and the
 * time budget. The originals are upvalues, out of the script's reach. */

/* The tail of a wrapper: call the function in upvalue 1 (the library's
 * original, or the script's comparator) on this call's arguments; its
 * results are the wrapper's. */
static int call_upvalue1(lua_State *L, int nresults) {
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, nresults);
  return lua_gettop(L);
}

#define PATTERN_MAX_STEPS 1e9

/* The index of the ']' closing the set that opens at p[i] ('['), as
 * lstrlib reads it (a ']' first in the set is literal); lp - 1 when the
 * set never closes (the original then raises the error). */
static size_t set_end(const char *p, size_t lp, size_t i) {
  size_t j = i + 1;
  if (j < lp && p[j] == '^')
    j++;
  do {
    if (j < lp && p[j] == '%')
      j++;
    j++;
  } while (j < lp && p[j] != ']');
  return j < lp ? j : lp - 1;
}

/* Worst-case steps of Lua's backtracking matcher for pattern p on a
 * subject of n bytes: each quantified item ('*', '+', '-') and each %b or
 * back-reference may retry over the whole subject, '?' twice, and an
 * unanchored search starts at every position: about
 * n^(1 + quantifiers) * 2^optionals * items. */
static double pattern_cost(const char *p, size_t lp, double n, int *nquant) {
  double cost = lp && *p == '^' ? 1 : n + 1, items = 0;
  *nquant = 0;
  for (size_t i = lp && *p == '^'; i < lp; i++) {
    char ch = p[i];
    if (ch == '(' || ch == ')' || (ch == '$' && i + 1 == lp))
      continue;
    items++;
    if (ch == '%' && i + 1 < lp) {
      char k = p[++i];
      if (k == 'b' || (k >= '0' && k <= '9')) { /* %bxy scans, %1 compares: up to n each */
        i += k == 'b' ? 2 : 0;
        cost *= n + 1, ++*nquant;
        continue;
      }
      if (k == 'f') { /* %f[set]: one test, no quantifier */
        i = i + 1 < lp ? set_end(p, lp, i + 1) : lp;
        continue;
      }
    } else if (ch == '[') {
      i = set_end(p, lp, i);
    }
    if (i + 1 < lp && (p[i + 1] == '*' || p[i + 1] == '+' || p[i + 1] == '-'))
      i++, cost *= n + 1, ++*nquant;
    else if (i + 1 < lp && p[i + 1] == '?')
      i++, cost *= 2;
  }
  return cost * (items > 0 ? items : 1);
}

/* string.find/match/gmatch/gsub(s, pattern, ...): refuse a pattern whose
 * worst case on s is past PATTERN_MAX_STEPS, then call the original. */
static int guarded_pattern(lua_State *L) {
  size_t ls, lp;
  luaL_checklstring(L, 1, &ls);
  const char *p = luaL_checklstring(L, 2, &lp);
  const char *name = lua_tostring(L, lua_upvalueindex(2));
  bool plain = !strcmp(name, "find") && lua_toboolean(L, 4);
  int nquant = 0;
  double cost = plain ? ((double)ls + 1) * (double)(lp + 1) : pattern_cost(p, lp, (double)ls, &nquant);
  if (cost > PATTERN_MAX_STEPS)
    return dsl_fail(L, "string.%s: pattern too costly for a subject of %zu bytes (up to %.3g "
                       "matcher steps with its %d backtracking items); expected at most %.0e: a "
                       "shorter subject or a pattern with fewer '*', '+', '-', %%b", name, ls, cost,
                    nquant, PATTERN_MAX_STEPS);
  dsl_check_time(L);
  return call_upvalue1(L, LUA_MULTRET);
}

/* string.rep(s, n [, sep]): a result within the memory cap (an empty s
 * still loops n times). */
static int guarded_rep(lua_State *L) {
  size_t ls, lsep = 0;
  luaL_checklstring(L, 1, &ls);
  lua_Integer n = luaL_checkinteger(L, 2);
  luaL_optlstring(L, 3, "", &lsep);
  int64_t cap = lctx(L)->max_mem;
  double bytes = (double)n * ((double)ls + (double)lsep);
  if (n > 0 && (bytes > (double)cap || n > cap))
    return dsl_fail(L, "string.rep: %lld copies (%.0f bytes); expected a result within the "
                       "script's memory cap of %lld MiB", (long long)n, bytes,
                    (long long)(cap >> 20));
  return call_upvalue1(L, 1);
}

/* The most elements a table function may visit: a real list longer than
 * this cannot fit the memory cap (16 bytes a slot); only __len or __index
 * could claim more, and the loops over them run in C. */
static void check_span(lua_State *L, const char *what, double n) {
  double most = (double)(lctx(L)->max_mem / 16);
  if (n > most)
    dsl_fail(L, "table.%s: %.0f elements; expected at most %.0f (a list within the script's "
                "memory cap)", what, n, most);
}

/* table.concat/insert/remove/unpack/sort(t, ...) and table.move(a, f, e,
 * ...): the span they loop over is checked, then the original runs. */
static int guarded_table(lua_State *L) {
  const char *name = lua_tostring(L, lua_upvalueindex(2));
  if (!strcmp(name, "move")) {
    lua_Integer f = luaL_checkinteger(L, 2), e = luaL_checkinteger(L, 3);
    if (e >= f)
      check_span(L, name, (double)e - (double)f + 1);
  } else {
    luaL_checkany(L, 1);
    double n = (double)luaL_len(L, 1), i = 1, j = n;
    if (!strcmp(name, "concat") || !strcmp(name, "unpack")) {
      int at = !strcmp(name, "concat") ? 3 : 2;
      i = (double)luaL_optinteger(L, at, 1);
      j = lua_isnoneornil(L, at + 1) ? n : (double)luaL_checkinteger(L, at + 1);
    }
    if (j >= i)
      check_span(L, name, j - i + 1);
  }
  dsl_check_time(L);
  return call_upvalue1(L, LUA_MULTRET);
}

/* The comparator guarded_sort gives table.sort: the script's (upvalue 1)
 * or '<', with a time check every 1024 calls (a C comparator runs no Lua
 * instruction). */
static int timed_less(lua_State *L) {
  lua_Integer calls = lua_tointeger(L, lua_upvalueindex(2)) + 1;
  lua_pushinteger(L, calls);
  lua_replace(L, lua_upvalueindex(2));
  if ((calls & 1023) == 0)
    dsl_check_time(L);
  if (lua_isnil(L, lua_upvalueindex(1))) {
    lua_pushboolean(L, lua_compare(L, 1, 2, LUA_OPLT));
    return 1;
  }
  return call_upvalue1(L, 1);
}

static int guarded_sort(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  check_span(L, "sort", (double)luaL_len(L, 1));
  lua_settop(L, 2);
  lua_pushinteger(L, 0);
  lua_pushcclosure(L, timed_less, 2);
  return call_upvalue1(L, 0);
}

/* setmetatable(t, mt) without __gc: a finalizer runs when the collector
 * decides, and at lua_close, where no budget can stop it. */
static int no_gc_setmetatable(lua_State *L) {
  if (lua_istable(L, 2) && lua_getfield(L, 2, "__gc") != LUA_TNIL)
    return dsl_fail(L, "setmetatable: the metatable has a __gc field; expected none (scripts "
                       "cannot have finalizers: they would run outside the sandbox's limits)");
  lua_settop(L, 2);
  return call_upvalue1(L, 1);
}

/* Replace lib.name (lib on the stack top) by fn, with the original and
 * the name as its upvalues. */
static void wrap_field(lua_State *L, const char *name, lua_CFunction fn) {
  lua_getfield(L, -1, name);
  lua_pushstring(L, name);
  lua_pushcclosure(L, fn, 2);
  lua_setfield(L, -2, name);
}

static void guard_libraries(lua_State *L) {
  lua_getglobal(L, "string");
  static const char *const patterns[] = {"find", "match", "gmatch", "gsub"};
  for (int i = 0; i < KILN_COUNT(patterns); i++)
    wrap_field(L, patterns[i], guarded_pattern);
  wrap_field(L, "rep", guarded_rep);
  lua_pop(L, 1);
  lua_getglobal(L, "table");
  static const char *const spans[] = {"concat", "insert", "remove", "unpack", "move"};
  for (int i = 0; i < KILN_COUNT(spans); i++)
    wrap_field(L, spans[i], guarded_table);
  wrap_field(L, "sort", guarded_sort);
  lua_pop(L, 1);
  lua_pushglobaltable(L);
  wrap_field(L, "setmetatable", no_gc_setmetatable);
  lua_pop(L, 1);
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
  /* no '/': the GGUF architectures' descriptions (arch/NAME.lua) are models, not modules */
  const char *text = strlen(name) < 100 && !strchr(name, '/') ? template_text(file) : NULL;
  if (!text)
    return false;
  char chunk[140];
  snprintf(chunk, sizeof chunk, "@%s", file);
  if (luaL_loadbufferx(L, text, strlen(text), chunk, "t") != LUA_OK)
    lua_error(L); /* a bundled module that does not compile is a kiln bug, but say it */
  return true;
}

/* ---- what a script can change ------------------------------------------------------ */

/* Bundled modules (nn) must build the same model whatever a script does to
 * its globals first. So they run in a snapshot of the globals taken before
 * the script starts (their _ENV, in the registry), and the script's string,
 * math, table and utf8 are read-only views of the libraries the modules
 * use (a field assigned is an error that says so); string's metatable is
 * hidden (getmetatable("") is false). A script may still rebind a global
 * name (pairs = f): that changes its own code only. */
static const char MODULE_ENV[] = "kiln.module_env";

static int read_only_library(lua_State *L) {
  const char *lib = lua_tostring(L, lua_upvalueindex(1));
  const char *key = lua_tostring(L, 2);
  return dsl_fail(L, "%s.%s: the standard libraries are read-only in kiln's sandbox (nn uses them too); "
                     "expected a local of your own, e.g. local f = function ... end", lib, key ? key : "?");
}

/* pairs(view): the library's own fields. */
static int library_pairs(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, MODULE_ENV); /* its next: the script may rebind the global */
  lua_getfield(L, -1, "next");
  lua_remove(L, -2);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushnil(L);
  return 3;
}

static void protect_globals(lua_State *L) {
  lua_newtable(L); /* the snapshot */
  lua_pushglobaltable(L);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -5);
  }
  lua_pop(L, 1);
  lua_pushvalue(L, -1);
  lua_setfield(L, -2, "_G");
  lua_setfield(L, LUA_REGISTRYINDEX, MODULE_ENV);
  static const char *const libs[] = {"string", "math", "table", "utf8"};
  for (int i = 0; i < KILN_COUNT(libs); i++) {
    lua_newtable(L);               /* the view */
    lua_newtable(L);               /* its metatable */
    lua_getglobal(L, libs[i]);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "__index");
    lua_pushcclosure(L, library_pairs, 1);
    lua_setfield(L, -2, "__pairs");
    lua_pushstring(L, libs[i]);
    lua_pushcclosure(L, read_only_library, 1);
    lua_setfield(L, -2, "__newindex");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_setglobal(L, libs[i]);
  }
  lua_pushliteral(L, "");
  if (lua_getmetatable(L, -1)) {
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
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
  lua_getfield(L, LUA_REGISTRYINDEX, MODULE_ENV); /* its _ENV: the globals before the script */
  if (!lua_setupvalue(L, -2, 1))
    lua_pop(L, 1);
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
  guard_libraries(L);
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
/* The script for lua_load one line at a time, so that the lines handed
 * out say where the parser is (Lua's own messages name the line, but not
 * its "C stack overflow" from nesting too deep). */
typedef struct LineReader {
  const char *text;
  size_t len, at;
  int line; /* lines handed out so far */
} LineReader;

static const char *read_line(lua_State *L, void *data, size_t *size) {
  (void)L;
  LineReader *r = data;
  if (r->at >= r->len)
    return NULL;
  const char *s = r->text + r->at, *nl = memchr(s, '\n', r->len - r->at);
  *size = nl ? (size_t)(nl - s) + 1 : r->len - r->at;
  r->at += *size;
  r->line++;
  return s;
}

/* A load error without Lua's "chunk:line:" gets the script and the line
 * the parser had reached. */
static void parse_error_position(const LuaCtx *c, lua_State *L, int line) {
  const char *msg = lua_tostring(L, -1);
  size_t n = strlen(c->script);
  if (!msg || (!strncmp(msg, c->script, n) && msg[n] == ':'))
    return;
  if (!strcmp(msg, "C stack overflow"))
    lua_pushfstring(L, "%s:%d: the script nests deeper than Lua's parser allows (about 200 levels of "
                       "brackets, blocks and functions); expected shallower nesting", c->script, line);
  else
    lua_pushfstring(L, "%s:%d: %s", c->script, line, msg);
  lua_remove(L, -2);
}

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


/* Run the script text (len bytes, which it frees) named path: the graph, or NULL + d. */
static Graph *load_script(Arena *a, const char *path, char *text, size_t len, const LuaOptions *o, Diag *d) {
  static const LuaOptions none = {0};
  if (!o)
    o = &none;
  LuaCtx c = {
      .a = a, .script = path, .chunkname = arena_printf(a, "@%s", path), .o = o,
      .max_steps = o->max_steps > 0 ? o->max_steps : DEFAULT_STEPS,
      .max_mem = o->max_mem > 0 ? o->max_mem : DEFAULT_MEM,
  };
  c.max_seconds = (double)c.max_steps / 1e8 > 1 ? (double)c.max_steps / 1e8 : 1;
  c.t0 = dsl_cpu_seconds();
  c.g = graph_new(a, path);
  c.g->opset = 17;
  c.set_used = arena_alloc(a, sizeof(bool) * (size_t)(o->nsets + 1));
  if (o->bound_gguf)
    *o->bound_gguf = NULL;
  if (o->gguf) { /* a GGUF model: read already, bound as --weights is */
    c.gguf = (Gguf *)o->gguf;
    c.weights_path = o->gguf->path;
  } else if (o->weights) { /* --weights: bound before the script runs */
    if (!dsl_bind_weights_file(&c, o->weights, d)) {
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
  protect_globals(L);
  lua_sethook(L, count_hook, LUA_MASKCOUNT, HOOK_EVERY);

  lua_pushcfunction(L, traceback_handler);
  LineReader lr = {text, len, 0, 0};
  int status = lua_load(L, read_line, &lr, c.chunkname, "t");
  free(text);
  if (status != LUA_OK && lr.line)
    parse_error_position(&c, L, lr.line);
  if (status == LUA_OK)
    status = lua_pcall(L, 0, 0, 1);
  bool ok = status == LUA_OK;
  if (!ok)
    record_error(&c, L, status, d);
  else if (!dsl_finish_model(&c, d))
    ok = false;
  lua_close(L);
  if (ok && o->bound_gguf)
    *o->bound_gguf = c.gguf;
  return ok ? c.g : NULL;
}

Graph *dsl_load_model(Arena *a, const char *path, const LuaOptions *o, Diag *d) {
  d->file = path;
  size_t len;
  char *text = (char *)read_file(path, &len, d);
  return text ? load_script(a, path, text, len, o, d) : NULL;
}

Graph *dsl_load_text(Arena *a, const char *name, const char *text, const LuaOptions *o, Diag *d) {
  d->file = name;
  size_t len = strlen(text);
  char *copy = malloc(len + 1);
  KILN_ASSERT(copy);
  memcpy(copy, text, len + 1);
  return load_script(a, name, copy, len, o, d);
}
