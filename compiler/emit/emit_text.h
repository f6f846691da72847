/* emit_text.h — text helpers for the generated files: model text made safe
 * in comments, upper-case names, array dimensions, the header's end. The
 * lowest floor of the emitter: it includes nothing of it. */
#ifndef KILN_EMIT_TEXT_H
#define KILN_EMIT_TEXT_H

#include "../ir/ir.h"

/* Text from the model made safe inside a C comment. */
const char *emit_cm(Arena *a, const char *s);
const char *emit_upper(Arena *a, const char *s);
/* "[2][16][64]" (or "[1]" for a scalar, "[]" when a dim is zero) */
const char *emit_array_dims(Arena *a, const Type *t);
/* The header's end: the tokenizer's declarations (tok, may be empty), the
 * extern "C" block and the include guard closed. */
void emit_header_end(Buf *h, const Buf *tok);
/* --threads N > 1: the header's paragraph on threads (the thread-count
 * policy, README "The generated API") and NAME_set_threads' declaration, which returns
 * KILN_OK or KILN_E_ARG (the header defines both, emit_weights.h). */
void emit_threads_doc(Buf *h, const char *prefix, int threads);
void emit_threads_decl(Buf *h, const char *prefix);
/* --threads N: the kiln_adapt of entry point k (a decoder's k-th entry, or
 * NAME_run's), which times its calls (kiln_rt.h). */
const char *emit_adapt_name(const Graph *g, int k);

/* s0 and s1 (layer 0's and layer 1's text) compared run by run: the same
 * but for runs of digits (the layer numbers)? Then *out gets s0 with each
 * differing run replaced by `hole` ("" drops it, with the '_' or '.' before
 * it) and *first the value of the first such run in s0. */
bool emit_layer_pattern(Arena *a, const char *s0, const char *s1, const char *hole, const char **out, long *first);
/* Text of every layer from layer 0's and layer 1's (a comment, a name):
 * the layer number written l ("/encoder/layer.l/attention/self/query/MatMul");
 * c0 itself when they differ otherwise. */
const char *emit_layer_text(Arena *a, const char *c0, const char *c1);

#endif
