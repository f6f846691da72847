/* c_text.h — the one door from user text into generated files.
 *
 * Model names, doc strings, script and weight paths and -o names are the
 * user's; the generated .c, .h and .S are code. Every such string that
 * reaches them goes through c_text_put, spelled for where it lands, so no
 * byte of it can end a comment, a literal or a line, form a trigraph, or
 * be read as code (tests/hostile/run_injection.py feeds it every route). */
#ifndef KILN_C_TEXT_H
#define KILN_C_TEXT_H

#include "base.h"

typedef enum CText {
  CT_COMMENT, /* inside a block comment: no comment end or start, no line
                 break or control byte, no "??"; valid UTF-8 is kept and
                 each other byte shown as \xNN */
  CT_STRING,  /* a C string literal, quotes included: printable ASCII and
                 valid UTF-8 as they are, '"', '\\' and '?' escaped, every
                 other byte in octal */
  CT_STRING_BYTES, /* the same without the quotes, for a literal built of
                 several strings (the tokenizer's table, NULs included) */
  CT_IDENT,   /* identifier characters: each byte but [A-Za-z0-9_] becomes '_' */
  CT_ASM,     /* an assembler string (.incbin "..."), quotes included: the
                 bytes of [A-Za-z0-9._+-/] as they are, every other as \ooo,
                 which gas and the C preprocessor both leave alone */
  CT_HEADER   /* a #include "..." file name, as it is: C has no escapes
                 there; c_text_header_flaw says what would break it */
} CText;

/* Append the n bytes at s to b as kind spells them. */
void c_text_put_n(Buf *b, CText kind, const char *s, size_t n);
/* The same for the string s (NULL: ""). */
void c_text_put(Buf *b, CText kind, const char *s);
/* The same into an arena string. */
const char *c_text(Arena *a, CText kind, const char *s);
/* What keeps file name s out of a #include "..." line ("a '\"'", "a line
 * break", ...), or NULL when it may stand there as it is. */
const char *c_text_header_flaw(const char *s);

#endif
