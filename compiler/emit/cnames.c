/* cnames.c — readable unique C identifiers from model names (cnames.h). */
#include "cnames.h"

#include "../base/c_text.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#define CNAME_MAX 60

static uint32_t name_hash(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

NameSet *nameset_new(Arena *a) {
  NameSet *s = arena_alloc(a, sizeof *s);
  s->arena = a;
  s->cap = 256;
  s->slot = arena_alloc(a, sizeof(char *) * (size_t)s->cap);
  return s;
}

/* The slot of the n bytes at name: where it is, or the empty slot it would take. */
static int find(const NameSet *s, const char *name, size_t n) {
  int i = (int)(name_hash(name, n) & (uint32_t)(s->cap - 1));
  while (s->slot[i] && (strlen(s->slot[i]) != n || strncmp(s->slot[i], name, n)))
    i = (i + 1) & (s->cap - 1);
  return i;
}

bool nameset_has(const NameSet *s, const char *name) { return s->slot[find(s, name, strlen(name))] != NULL; }

static void add_n(NameSet *s, const char *name, size_t n) {
  if (2 * (s->n + 1) > s->cap) { /* rehash at half full */
    const char **old = s->slot;
    int oldcap = s->cap;
    s->cap *= 2;
    s->slot = arena_alloc(s->arena, sizeof(char *) * (size_t)s->cap);
    for (int i = 0; i < oldcap; i++)
      if (old[i])
        s->slot[find(s, old[i], strlen(old[i]))] = old[i];
  }
  int i = find(s, name, n);
  if (s->slot[i])
    return;
  char *copy = arena_alloc(s->arena, n + 1);
  memcpy(copy, name, n);
  s->slot[i] = copy;
  s->n++;
}

void nameset_add(NameSet *s, const char *name) { add_n(s, name, strlen(name)); }

void nameset_add_tokens(NameSet *s, const char *text) {
  for (const char *p = text; *p;) {
    if (isalpha((unsigned char)*p) || *p == '_') {
      const char *q = p;
      while (isalnum((unsigned char)*q) || *q == '_')
        q++;
      add_n(s, p, (size_t)(q - p));
      p = q;
    } else if (isdigit((unsigned char)*p)) { /* 0x1p-3f, 1e-5f: not identifiers */
      while (isalnum((unsigned char)*p) || *p == '.' || *p == '_')
        p++;
    } else {
      p++;
    }
  }
}

/* int8_t ... uint64_t, intptr_t, intmax_t, INT64_C, UINT8_MAX, INTPTR_MIN:
 * stdint's names */
static bool stdint_name(const char *s) {
  static const char *const widths[] = {"8", "16", "32", "64", "ptr", "max", "_least8", "_fast8"};
  bool upper = s[0] == 'I' || s[0] == 'U';
  const char *p = s + (s[0] == 'u' || s[0] == 'U');
  if (strncmp(p, upper ? "INT" : "int", 3))
    return false;
  p += 3;
  for (int i = 0; i < KILN_COUNT(widths); i++) {
    size_t k = strlen(widths[i]);
    if (strncasecmp(p, widths[i], k))
      continue;
    const char *t = p + k;
    if (upper ? !strcmp(t, "_C") || !strcmp(t, "_MAX") || !strcmp(t, "_MIN") : !strcmp(t, "_t"))
      return true;
  }
  return false;
}

bool cname_reserved(const char *s) {
  static const char *const words[] = {
      "weights", "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
      "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
      "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
      "union", "unsigned", "void", "volatile", "while", "bool", "true", "false", "ws",
      "workspace", "state", "memcpy", "memset", "memcmp", "NAN", "INFINITY", "isnan", "isinf", "abs", "exp",
      "log", "sqrt", "pow", "tanh", "erf", "fabs", "fmax", "fmin", "sin", "cos", "tan", "asin", "acos",
      "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "floor", "ceil", "nearbyint", "round",
      "fmod", "exp2", "log2", "log1p", "expm1", "cbrt", "hypot", "rint", "trunc", "lrint",
      "copysign", "fma", "size_t", "main", "bound_weights", "offsetof", "uintptr_t", "NULL"};
  size_t n = strlen(s);
  for (int i = 0; i < KILN_COUNT(words); i++) {
    size_t k = strlen(words[i]);
    /* expf, sqrtf, ...: the float variants too */
    if (!strcmp(s, words[i]) || (n == k + 1 && s[k] == 'f' && !strncmp(s, words[i], k)))
      return true;
  }
  return stdint_name(s) || !strncmp(s, "KILN_", 5) || !strncmp(s, "kiln_", 5) || !strncmp(s, "__", 2);
}

const char *cname_sanitize(Arena *a, const char *s, const char *prefix) {
  s = c_text(a, CT_IDENT, s); /* then runs of '_' become one */
  size_t n = strlen(s);
  char *r = arena_alloc(a, n + strlen(prefix) + 2);
  size_t len = 0;
  for (const char *p = s; *p; p++) {
    if (*p != '_')
      r[len++] = *p;
    else if (len && r[len - 1] != '_')
      r[len++] = '_';
  }
  while (len && r[len - 1] == '_')
    len--;
  r[len] = 0;
  char *t = r;
  if (len > CNAME_MAX) { /* the tail, from a word start */
    t = r + len - CNAME_MAX;
    char *w = strchr(t, '_');
    if (w && w[1])
      t = w + 1;
  }
  if (!*t || isdigit((unsigned char)*t))
    return arena_printf(a, "%s%s%s", prefix, *t ? "_" : "", t);
  return t;
}

const char *cname_unique(NameSet *s, const char *stem, const char *prefix) {
  const char *base = cname_sanitize(s->arena, stem, prefix);
  if (cname_reserved(base)) /* "w_int64_t", "t_KILN_x": no longer reserved */
    base = arena_printf(s->arena, "%s_%s", prefix, base);
  const char *nm = base;
  for (int k = 2; nameset_has(s, nm); k++)
    nm = arena_printf(s->arena, "%s_%d", base, k);
  nameset_add(s, nm);
  return nm;
}
