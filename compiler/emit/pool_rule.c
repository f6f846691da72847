/* pool_rule.c — checks the pool rule on a kernel's text before it is
 * written out. Every thread of kiln's pool (kiln_rt.h) runs the whole body
 * of a kernel whose loops are split, except that each split loop's tiles
 * are divided among them; so a store made outside a split loop is made by
 * every thread, at its own time, and a late thread's store lands on data
 * another thread has already moved on from (eight such races were found,
 * three by TSan and five by this check, each in a different kernel). Such
 * work belongs in a KILN_LEAD_ONLY block. Outside split loops and
 * lead-only blocks, a kernel may only declare locals (a `static` one only
 * if const), assign scalar locals, store into local arrays, set up the
 * thread's own AMX tiles, open loops and blocks (checked the same way
 * inside) and name the pool's macros; any other statement, a call or a
 * store through a pointer, breaks the rule. A split loop inside a split
 * loop or a lead-only block breaks it too: only some threads would come
 * to claim its tiles. The check reads the text the emitter made, which
 * keeps one statement per line and braces at line ends; it is
 * deliberately strict, so a new kernel that trips it should make its
 * shared work lead-only rather than loosen the check. */
#include "pool_rule.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

typedef struct Scan {
  const char *p;
  char *why; /* the first offending statement, quoted */
  size_t why_size;
  const char *locals[64]; /* the arrays and scalars in scope: each thread's own */
  size_t local_len[64];
  int nlocals;
  const char *types[16]; /* the kernel's own typedef names */
  size_t type_len[16];
  int ntypes;
} Scan;

static void skip_space(Scan *s) {
  for (;;) {
    while (isspace((unsigned char)*s->p))
      s->p++;
    if (s->p[0] == '/' && s->p[1] == '*') {
      const char *e = strstr(s->p + 2, "*/");
      s->p = e ? e + 2 : s->p + strlen(s->p);
    } else if (s->p[0] == '/' && s->p[1] == '/') {
      s->p += strcspn(s->p, "\n");
    } else if (s->p[0] == '#') { /* a preprocessor line */
      s->p += strcspn(s->p, "\n");
    } else {
      return;
    }
  }
}

/* The end of the statement's head: the first ';' or '{' outside parens,
 * or '}' / NUL. A '{' after a '=' outside parens opens an initializer or
 * a compound literal (`= (v16i){0, 1}`), which is skipped. */
static const char *head_end(const char *p) {
  int paren = 0;
  bool assigns = false;
  const char *from = p;
  for (; *p; p++) {
    if (*p == '"' || *p == '\'') {
      char q = *p;
      for (p++; *p && *p != q; p++)
        if (*p == '\\' && p[1])
          p++;
      if (!*p)
        return p;
      continue;
    }
    if (p[0] == '/' && p[1] == '*') {
      const char *e = strstr(p + 2, "*/");
      if (!e)
        return p + strlen(p);
      p = e + 1;
      continue;
    }
    if (*p == '(' || *p == '[')
      paren++;
    else if (*p == ')' || *p == ']')
      paren--;
    else if (paren == 0 && *p == '=' && p[1] != '=' && !(p > from && strchr("=<>!", p[-1])))
      assigns = true;
    else if (paren == 0 && *p == '{' && assigns) {
      int depth = 0;
      for (; *p; p++) {
        depth += *p == '{' ? 1 : *p == '}' ? -1 : 0;
        if (depth == 0)
          break;
      }
      if (!*p)
        return p;
    } else if (paren == 0 && (*p == ';' || *p == '{' || *p == '}'))
      return p;
  }
  return p;
}

static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

static bool starts_word(const char *s, const char *w) {
  size_t n = strlen(w);
  return !strncmp(s, w, n) && !ident_char(s[n]);
}

/* A declaration: a type first (the generated C's types, or one the
 * kernel's typedefs named). */
static bool is_declaration(const Scan *sc, const char *s) {
  for (int i = 0; i < sc->ntypes; i++)
    if (!strncmp(s, sc->types[i], sc->type_len[i]) && s[sc->type_len[i]] == ' ')
      return true;
  static const char *const types[] = {"float",    "double",   "int",       "unsigned", "long",    "short",
                                      "char",     "bool",     "size_t",    "ptrdiff_t", "int8_t", "uint8_t",
                                      "int16_t",  "uint16_t", "int32_t",   "uint32_t", "int64_t", "uint64_t",
                                      "_Float16", "const",    "uintptr_t", "__m128",   "__m128i", "__m256",
                                      "__m256i",  "__m512",   "__m512i",   "__m512h",  "__m256h", "__mmask8",
                                      "__mmask16", "__tile1024i"};
  if (starts_word(s, "static")) { /* a local shared by every thread: read-only only */
    s += 6;
    while (isspace((unsigned char)*s))
      s++;
    return starts_word(s, "const");
  }
  for (int i = 0; i < (int)(sizeof types / sizeof types[0]); i++)
    if (starts_word(s, types[i]))
      return true;
  return !strncmp(s, "kiln_", 5) && isalpha((unsigned char)s[5]) && strstr(s, "_t ") != NULL;
}

/* the length of the identifier at s (0: none there) */
static size_t ident_len(const char *s) {
  size_t i = 0;
  if (isalpha((unsigned char)s[0]) || s[0] == '_')
    while (ident_char(s[i]))
      i++;
  return i;
}

/* t, within from.., starts a word: the next one of a walk by ident_len */
static bool word_at(const char *from, const char *t) { return ident_len(t) && (t == from || !ident_char(t[-1])); }

static bool is_local(const Scan *s, const char *name) {
  size_t n = ident_len(name);
  for (int i = 0; i < s->nlocals; i++)
    if (s->local_len[i] == n && !strncmp(s->locals[i], name, n))
      return true;
  return false;
}

/* One declarator, from..to ("float s", "m[4]", "*y = out0"): its name
 * noted where it is storage of the thread's own, not a pointer. */
static void note_declarator(Scan *s, const char *from, const char *to) {
  const char *name = NULL;
  bool pointer = false;
  const char *t = from;
  for (; t < to && *t != '[' && *t != '='; t += ident_len(t) ? ident_len(t) : 1) {
    pointer |= *t == '*';
    if (word_at(from, t))
      name = t;
  }
  if (pointer) { /* `int8_t *qb = xq + i * 32`: into a local array, so the thread's own too */
    const char *init = memchr(t, '=', (size_t)(to - t));
    if (!init)
      return;
    init++;
    while (init < to && (*init == ' ' || *init == '('))
      init++;
    if (!is_local(s, init))
      return;
  }
  if (name && s->nlocals < 64) {
    s->locals[s->nlocals] = name;
    s->local_len[s->nlocals++] = ident_len(name);
  }
}

/* `float s = 0, m[4], *y = out0;`: s and m, each thread's own, stored to
 * freely; y is a pointer */
static void note_locals(Scan *s, const char *decl, const char *end) {
  int depth = 0;
  const char *from = decl;
  for (const char *p = decl; p <= end; p++) {
    if (p == end || (*p == ',' && depth == 0)) {
      note_declarator(s, from, p);
      from = p + 1;
      continue;
    }
    depth += (*p == '(' || *p == '{' || *p == '[') ? 1 : (*p == ')' || *p == '}' || *p == ']') ? -1 : 0;
  }
}

/* `l[j] = ...`, or memset / memcpy / a vector store into l or &l: storage
 * of the thread's own */
static bool is_local_store(const Scan *s, const char *st) {
  size_t n = ident_len(st);
  if (n && st[n] == '[')
    return is_local(s, st);
  bool store_call = starts_word(st, "memset") || starts_word(st, "memcpy") || !strncmp(st, "_mm", 3);
  const char *arg = st + n;
  if (!store_call || *arg != '(')
    return false;
  arg++;
  while (*arg == ' ' || *arg == '&')
    arg++;
  return is_local(s, arg);
}

/* `x = ...`, `x += ...`, `x++`: a scalar local, never memory */
static bool is_scalar_assign(const char *s, size_t n) {
  size_t i = 0;
  if (!(isalpha((unsigned char)s[0]) || s[0] == '_'))
    return false;
  while (i < n && ident_char(s[i]))
    i++;
  while (i < n && s[i] == ' ')
    i++;
  if (i + 1 < n && (s[i] == '+' || s[i] == '-') && s[i + 1] == s[i])
    return true;
  if (i < n && s[i] == '=' && s[i + 1] != '=')
    return true;
  return i + 1 < n && strchr("+-*/|&^%", s[i]) && s[i + 1] == '=';
}

static bool statement(Scan *s, bool free);

/* statements up to the matching '}' (consumed) */
static bool block(Scan *s, bool free) {
  int nlocals = s->nlocals; /* the locals declared inside go out of scope */
  for (;;) {
    skip_space(s);
    if (!*s->p || *s->p == '}') {
      s->p += *s->p == '}';
      s->nlocals = nlocals;
      return true;
    }
    if (!statement(s, free))
      return false;
  }
}

static bool offend(Scan *s, const char *from, const char *to, const char *what) {
  size_t n = (size_t)(to - from);
  if (n > 120)
    n = 120;
  snprintf(s->why, s->why_size, "'%.*s' %s", (int)n, from, what);
  return false;
}

static const char outside[] = "runs on every thread outside the split loops: it must be KILN_LEAD_ONLY";

static bool statement(Scan *s, bool free) {
  skip_space(s);
  const char *start = s->p;
  if (*start == '{') {
    s->p++;
    return block(s, free);
  }
  const char *end = head_end(start);
  bool opens = *end == '{';
  s->p = *end && *end != '}' ? end + 1 : end; /* a '}' closes the enclosing block */
  if (starts_word(start, "KILN_PARALLEL_FOR") && free) /* its tiles would be claimed by some threads only */
    return offend(s, start, end, "is split inside a split loop or a KILN_LEAD_ONLY block");
  if (starts_word(start, "KILN_PARALLEL_FOR") || starts_word(start, "KILN_LEAD_ONLY"))
    free = true;
  if (free)
    return opens ? block(s, true) : true;
  static const char *const control[] = {"for", "while", "if", "else", "do", "switch"};
  for (int i = 0; i < (int)(sizeof control / sizeof control[0]); i++) {
    if (!starts_word(start, control[i]))
      continue;
    if (opens)
      return block(s, false);
    /* `for (...) x;`: the head's own parens, then its one statement */
    const char *q = start + strlen(control[i]);
    while (isspace((unsigned char)*q))
      q++;
    if (*q == '(') {
      int depth = 0;
      for (; q < end; q++) {
        depth += *q == '(' ? 1 : *q == ')' ? -1 : 0;
        if (depth == 0) {
          q++;
          break;
        }
      }
    }
    while (q < end && isspace((unsigned char)*q))
      q++;
    if (q >= end)
      return true; /* `for (...);` or an `else` before a statement on its own */
    Scan body = *s; /* the one statement, read on its own */
    body.p = q;
    return statement(&body, false);
  }
  if (opens) /* an initializer was skipped by head_end, so this is a block-opening head we do not know */
    return offend(s, start, end, outside);
  size_t n = (size_t)(end - start);
  if (starts_word(start, "typedef")) { /* its name: the last word before any __attribute__ */
    const char *name = NULL;
    for (const char *t = start + 7; t < end; t += ident_len(t) ? ident_len(t) : 1) {
      if (starts_word(t, "__attribute__"))
        break;
      if (word_at(start + 7, t))
        name = t;
    }
    if (name && s->ntypes < 16) {
      s->types[s->ntypes] = name;
      s->type_len[s->ntypes++] = ident_len(name);
    }
    return true;
  }
  if (is_declaration(s, start)) {
    note_locals(s, start, end);
    return true;
  }
  if (n == 0 || is_scalar_assign(start, n) || is_local_store(s, start) || !strncmp(start, "(void)", 6))
    return true;
  /* jumps, the job's own macros, the thread's own AMX tile registers */
  static const char *const harmless[] = {"return",    "break",          "continue",         "KILN_TEAM",
                                         "KILN_SHARED", "KILN_TILE_REGS", "KILN_TILE_CONFIG", "KILN_TILE_RELEASE"};
  for (int i = 0; i < (int)(sizeof harmless / sizeof harmless[0]); i++)
    if (starts_word(start, harmless[i]))
      return true;
  return offend(s, start, end, outside);
}

bool pool_rule_ok(const char *body, char *why, size_t why_size) {
  Scan s = {.p = body, .why = why, .why_size = why_size};
  if (why_size)
    why[0] = 0;
  return block(&s, false);
}
