/* c_text.c — user text spelled safely for the generated files (c_text.h). */
#include "c_text.h"

#include <string.h>

/* The length of the valid UTF-8 sequence of a printable character at s
 * (n bytes left): shortest form, no surrogates, at most U+10FFFF, not a C1
 * control (U+0080..U+009F); else 0. */
static int utf8_len(const unsigned char *s, size_t n) {
  int k = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
  if (k == 0 || s[0] > 0xf4 || (size_t)k > n)
    return 0;
  for (int i = 1; i < k; i++)
    if ((s[i] & 0xc0) != 0x80)
      return 0;
  if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) || (s[0] == 0xf0 && s[1] < 0x90) ||
      (s[0] == 0xf4 && s[1] >= 0x90) || (s[0] == 0xc2 && s[1] < 0xa0))
    return 0;
  return k;
}

/* "??" followed by the third character of a trigraph */
static bool trigraph_at(const char *p) { return p[0] == '?' && p[1] == '?' && p[2] && strchr("=(/)'<!>-", p[2]); }

static void put_comment(Buf *b, const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    int k = s[i] >= 0x80 ? utf8_len(s + i, n - i) : 0;
    unsigned char c = s[i], d = i + 1 < n ? s[i + 1] : 0;
    if (k) {
      buf_put(b, (const char *)s + i, (size_t)k);
      i += (size_t)k;
      continue;
    }
    if (c >= 0x80)
      buf_printf(b, "\\x%02X", c);
    else if (c < 0x20 || c == 0x7f)
      buf_put(b, " ", 1);
    else if ((c == '*' && d == '/') || (c == '/' && d == '*') || (c == '?' && d == '?'))
      buf_printf(b, "%c ", c); /* "* /", "/ *", "? ?": no comment end or start, no trigraph */
    else
      buf_put(b, (const char *)&c, 1);
    i++;
  }
}

/* The inside of a string literal: valid UTF-8 of printable characters as
 * it is, printable ASCII as it is but for \ " and ? (no trigraphs), the
 * rest in octal, 3 digits when an octal digit follows (which would extend
 * a shorter escape). */
static void put_literal(Buf *b, const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    int k = s[i] >= 0x80 ? utf8_len(s + i, n - i) : 0;
    if (k) {
      buf_put(b, (const char *)s + i, (size_t)k);
      i += (size_t)k;
      continue;
    }
    unsigned char c = s[i++];
    if (c == '\\' || c == '"' || c == '?')
      buf_printf(b, "\\%c", c);
    else if (c >= 0x20 && c < 0x7f)
      buf_put(b, (const char *)&c, 1);
    else if (i < n && s[i] >= '0' && s[i] <= '7')
      buf_printf(b, "\\%03o", c);
    else
      buf_printf(b, "\\%o", c);
  }
}

static bool ident_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static void put_asm(Buf *b, const unsigned char *s, size_t n) {
  buf_put(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    if (ident_byte(s[i]) || (s[i] && strchr(".+-/", s[i])))
      buf_put(b, (const char *)s + i, 1);
    else
      buf_printf(b, "\\%03o", s[i]);
  }
  buf_put(b, "\"", 1);
}

void c_text_put_n(Buf *b, CText kind, const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  switch (kind) {
  case CT_COMMENT:
    put_comment(b, u, n);
    break;
  case CT_STRING:
    buf_put(b, "\"", 1);
    put_literal(b, u, n);
    buf_put(b, "\"", 1);
    break;
  case CT_STRING_BYTES:
    put_literal(b, u, n);
    break;
  case CT_IDENT:
    for (size_t i = 0; i < n; i++)
      buf_put(b, ident_byte(u[i]) ? (const char *)u + i : "_", 1);
    break;
  case CT_ASM:
    put_asm(b, u, n);
    break;
  case CT_HEADER:
    KILN_ASSERT(memchr(s, 0, n) == NULL && c_text_header_flaw(s) == NULL);
    buf_put(b, s, n);
    break;
  }
}

void c_text_put(Buf *b, CText kind, const char *s) { c_text_put_n(b, kind, s ? s : "", s ? strlen(s) : 0); }

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
