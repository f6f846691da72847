/* print.h — the IR's text form (.kir): what --dump-after prints and what
 * `kiln opt` / `kiln compile x.kir` read back (kir_parse.c). The grammar is
 * in docs/kir.md. print(parse(print(g))) == print(g) for every graph. */
#ifndef KILN_PRINT_H
#define KILN_PRINT_H

#include "ir.h"

/* Constants with more than this many elements go to the sidecar (or are
 * elided when there is none). */
#define KIR_INLINE_MAX 64

/* Print g. If bin is non-NULL, large constants are appended to it (raw
 * little-endian bytes, 64-byte aligned) and printed as `bin(OFFSET)`, so the
 * text plus the .bin is a complete model; if NULL they print as an elided
 * summary that the parser rejects. */
void ir_print(Buf *b, const Graph *g, Buf *bin);

/* Parse .kir text. bin/binlen: the sidecar contents (may be NULL). file
 * names the text in "file:line:col: message" errors. */
Graph *kir_parse(Arena *a, const char *file, const char *text, const unsigned char *bin,
                 size_t binlen, Diag *d);

#endif
