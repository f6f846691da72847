/* emit_weights.h — writing the weights: inline arrays, the blob's layout
 * and bind functions, the header's weights API (emit_weights.c). */
#ifndef KILN_EMIT_WEIGHTS_H
#define KILN_EMIT_WEIGHTS_H

#include "emit.h"

struct WeightsBlob;

/* The return codes of the bind functions (and KILN_OK), include-guarded. */
extern const char emit_weights_codes[];
/* KILN_E_CACHE_FULL and KILN_E_ARG, guarded as those are: a decoder's entry
 * points and an encoder's NAME_run_rows (a count outside 1..ROWS) return them. */
extern const char emit_arg_codes[];
/* The header's part for a model whose weights are in a blob. */
void emit_weights_api(Buf *h, const char *p, const char *P, const struct WeightsBlob *blob);
/* The weights that stay in the .c: static const arrays of exact literals,
 * and (inline weights) each layer group's table of pointers. */
void emit_weight_arrays(Buf *c, Emit *e);
/* Blob mode: the blob's layout as a struct (explicit padding, checked
 * against the size the blob has), the pointer the code reads it through;
 * places the arrays in e->blob. */
void emit_blob_layout(Buf *c, Emit *e);
/* Blob mode: NAME_bind_weights(), NAME_verify_weights(), NAME_weights_error(). */
void emit_bind_weights(Buf *c, Emit *e);

#endif
