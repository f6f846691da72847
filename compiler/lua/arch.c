/* arch.c — a GGUF file as a model: `kiln compile model.gguf` reads the
 * file's general.architecture and runs kiln's bundled Lua description of
 * that architecture (arch/ARCH.lua, embedded from compiler/arch/ and
 * examples/llama.lua by CMake) with the file bound as its weights. The
 * descriptions read their numbers from the file's ARCH.* keys, so the file
 * alone fixes the model; --set still sets the description's config{}
 * (ctx, prefill, kv). */
#include <stdlib.h>
#include <string.h>

#include "../emit/templates.h"
#include "lua_frontend.h"

bool dsl_arch_name_ok(const char *arch, size_t len) {
  if (len < 1 || len > 64 || strlen(arch) != len)
    return false;
  for (size_t i = 0; i < len; i++)
    if (!((arch[i] >= 'a' && arch[i] <= 'z') || (arch[i] >= 'A' && arch[i] <= 'Z') ||
          (arch[i] >= '0' && arch[i] <= '9') || arch[i] == '_' || arch[i] == '-' || arch[i] == '.'))
      return false;
  return true;
}

const char *dsl_arch_text(const char *arch) {
  char name[96];
  if (!dsl_arch_name_ok(arch, strlen(arch)))
    return NULL;
  snprintf(name, sizeof name, "arch/%s.lua", arch);
  return template_text(name);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

const char *dsl_arch_names(Arena *a) {
  const char *names[256], *name;
  int n = 0;
  for (size_t i = 0; (name = template_name(i)) && n < KILN_COUNT(names); i++) {
    size_t len = strlen(name);
    if (!strncmp(name, "arch/", 5) && len > 9 && !strcmp(name + len - 4, ".lua"))
      names[n++] = arena_printf(a, "%.*s", (int)(len - 9), name + 5);
  }
  qsort(names, (size_t)n, sizeof names[0], by_name);
  Buf b = {0};
  for (int i = 0; i < n; i++)
    buf_printf(&b, "%s%s", i ? ", " : "", names[i]);
  const char *s = arena_strdup(a, n ? b.s : "(none)");
  buf_free(&b);
  return s;
}

bool dsl_is_gguf(const char *path) {
  size_t n = strlen(path);
  return (n > 5 && !strcmp(path + n - 5, ".gguf")) || gguf_file_is_gguf(path);
}

Graph *dsl_load_gguf(Arena *a, const char *path, const LuaOptions *o, Diag *d) {
  static const LuaOptions none = {0};
  d->file = path;
  Gguf *g = arena_alloc(a, sizeof *g);
  if (!gguf_load(a, path, g, d))
    return NULL;
  size_t len;
  const char *arch = gguf_kv_string(gguf_kv(g, "general.architecture"), &len);
  if (!arch) {
    diag_error(d, "no general.architecture (a string); expected a GGUF model file, which names its "
                  "architecture (kiln has descriptions for %s), or a .lua description with --weights %s",
               dsl_arch_names(a), path);
    return NULL;
  }
  if (!dsl_arch_name_ok(arch, len)) { /* not echoed: it may hold anything */
    diag_error(d, "general.architecture (%zu bytes) is not an architecture's name; expected 1 to 64 letters, "
                  "digits, '_', '-' or '.', one of: %s", len, dsl_arch_names(a));
    return NULL;
  }
  const char *text = dsl_arch_text(arch);
  if (!text) {
    diag_error(d, "general.architecture is '%s', which kiln has no description for; expected one of: "
                  "%s (or a .lua description of your own with --weights %s: docs/gguf.md)",
               arch, dsl_arch_names(a), path);
    return NULL;
  }
  LuaOptions lo = o ? *o : none;
  lo.weights = path; /* weights() in the description gives way, as to --weights */
  lo.gguf = g;
  return dsl_load_text(a, arena_printf(a, "arch/%s.lua", arch), text, &lo, d);
}
