/* emit_api.h — the emitter's entry point, for the driver (main.c). */
#ifndef KILN_EMIT_API_H
#define KILN_EMIT_API_H

#include "ir.h"

typedef struct EmitOptions {
  const char *prefix;   /* --name; also the file stem */
  const char *source;   /* the input file, named in the header comment */
  const char *header;   /* file name of the header the .c includes */
} EmitOptions;

/* Write model.c into c and model.h into h. The graph must be planned. */
bool emit_c(Graph *g, const EmitOptions *o, Buf *c, Buf *h, Diag *d);

#endif
