/* c_text.c — user text spelled safely for the generated files (c_text.h). */
#include "c_text.h"

#include <string.h>

/* The length of the valid UTF-8 sequence at s (shortest form, no
 * surrogates, at most U+10FFFF), or 0. */
static int utf8_len(const unsigned char *s) {
  int n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
  if (n == 0 || s[0] > 0xf4)
    return 0;
  for (int i = 1; i < n; i++)
    if ((s[i] & 0xc0) != 0x80)
      return 0;
  if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) || (s[0] == 0xf0 && s[1] < 0x90) ||
      (s[0] == 0xf4 && s[1] >= 0x90))
    return 0;
  return n;
}

/* "??" followed by the third character of a trigraph */
static bool trigraph_at(const char *p) { return p[0] == '?' && p[1] == '?' && p[2] && strchr("=(/)'<!>-", p[2]); }

static void put_comment(Buf *b, const unsigned char *s) {
  while (*s) {
    int n = *s >= 0x80 ? utf8_len(s) : 0;
    if (n) {
      buf_put(b, (const char *)s, (size_t)n);
      s += n;
    } else if (*s >= 0x80) {
      buf_printf(b, "\\x%02X", *s++);
    } else if (*s < 0x20 || *s == 0x7f) {
      buf_put(b, " ", 1);
      s++;
    } else if ((s[0] == '*' && s[1] == '/') || (s[0] == '/' && s[1] == '*')) {
      buf_put(b, (const char *)s, 1); /* "* /", "/ *" */
      buf_put(b, " ", 1);
      s++;
    } else if (s[0] == '?' && s[1] == '?') { /* no trigraph, here or with what follows */
      buf_put(b, "? ", 2);
      s++;
    } else {
      buf_put(b, (const char *)s++, 1);
    }
  }
}

static void put_string(Buf *b, const unsigned char *s) {
  buf_put(b, "\"", 1);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\' || *s == '?')
      buf_printf(b, "\\%c", *s);
    else if (*s >= 0x20 && *s < 0x7f)
      buf_put(b, (const char *)s, 1);
    else
      buf_printf(b, "\\%03o", *s);
  }
  buf_put(b, "\"", 1);
}

static bool ident_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static void put_asm(Buf *b, const unsigned char *s) {
  buf_put(b, "\"", 1);
  for (; *s; s++) {
    if (ident_byte(*s) || (*s && strchr(".+-/", *s)))
      buf_put(b, (const char *)s, 1);
    else
      buf_printf(b, "\\%03o", *s);
  }
  buf_put(b, "\"", 1);
}

void c_text_put(Buf *b, CText kind, const char *s) {
  const unsigned char *u = (const unsigned char *)(s ? s : "");
  switch (kind) {
  case CT_COMMENT:
    put_comment(b, u);
    break;
  case CT_STRING:
    put_string(b, u);
    break;
  case CT_IDENT:
    for (; *u; u++)
      buf_put(b, ident_byte(*u) ? (const char *)u : "_", 1);
    break;
  case CT_ASM:
    put_asm(b, u);
    break;
  case CT_HEADER:
    KILN_ASSERT(c_text_header_flaw((const char *)u) == NULL);
    buf_puts(b, (const char *)u);
    break;
  }
}

const char *c_text(Arena *a, CText kind, const char *s) {
  Buf b = {0};
  c_text_put(&b, kind, s);
  char *r = arena_strdup(a, b.s ? b.s : "");
  buf_free(&b);
  return r;
}

const char *c_text_header_flaw(const char *s) {
  for (const char *p = s; *p; p++) {
    if (*p == '"')
      return "a '\"'";
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      return "a control character (a line break, a tab, ...)";
    if (trigraph_at(p))
      return "a trigraph ('?\?' and one of =(/)'<!>-)";
  }
  return NULL;
}
