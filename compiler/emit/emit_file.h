/* emit_file.h — what the file writer (emit_file.c) shares with the writer
 * of a generative model's entry points (emit_decoder.c): text helpers and
 * the header's common parts. Ops' _emit functions use emit.h, not this. */
#ifndef KILN_EMIT_FILE_H
#define KILN_EMIT_FILE_H

#include "emit.h"

struct WeightsBlob;

/* Text from the model made safe inside a C comment. */
const char *emit_cm(Arena *a, const char *s);
const char *emit_upper(Arena *a, const char *s);
/* "[2][16][64]" (or "[1]" for a scalar, "[]" when a dim is zero) */
const char *emit_array_dims(Arena *a, const Type *t);
/* The return codes of the bind functions (and KILN_OK), include-guarded. */
extern const char emit_weights_codes[];
/* The header's part for a model whose weights are in a blob. */
void emit_weights_api(Buf *h, const char *p, const char *P, const struct WeightsBlob *blob);
/* The header's end: the tokenizer's declarations (tok, may be empty), the
 * extern "C" block and the include guard closed. */
void emit_header_end(Buf *h, const Buf *tok);
/* --threads N: the kiln_adapt of entry point k (a decoder's k-th entry, or
 * NAME_run's), which times its calls (kiln_rt.h). */
const char *emit_adapt_name(const Graph *g, int k);

/* emit_decoder.c: entry k's forward function (its calls in body, freed). */
void emit_entry_forward(Buf *c, Emit *e, const char **pn, int k, Buf *body);
/* The public entry points: NAME_prefill(_ws), NAME_step(_ws), NAME_length. */
void emit_decoder_entries(Buf *c, Emit *e, const char **pn);
/* A generative model's header. */
void emit_decoder_header(Buf *h, Graph *g, const EmitOptions *o, const char **pn, const struct WeightsBlob *blob,
                         const Buf *tok);

#endif
