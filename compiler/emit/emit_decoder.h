/* emit_decoder.h — a generative model's entry points in the generated C
 * (emit_decoder.c), for the file writer (emit_file.c). */
#ifndef KILN_EMIT_DECODER_H
#define KILN_EMIT_DECODER_H

#include "emit.h"

struct WeightsBlob;

/* Entry k's forward function (its calls in body, freed). */
void emit_entry_forward(Buf *c, Emit *e, const char **pn, int k, Buf *body);
/* The public entry points: NAME_prefill(_ws), NAME_step(_ws), NAME_length. */
void emit_decoder_entries(Buf *c, Emit *e, const char **pn);
/* A generative model's header. */
void emit_decoder_header(Buf *h, const Emit *e, const EmitOptions *o, const char **pn, const struct WeightsBlob *blob,
                         const Buf *tok);

#endif
