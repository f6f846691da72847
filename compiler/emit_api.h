/* emit_api.h — the emitter's entry point, for the driver (main.c). */
#ifndef KILN_EMIT_API_H
#define KILN_EMIT_API_H

#include "ir.h"

/* --isa: the machine the GEMM kernels (compiler/ops/gemm_kernel.c) are
 * laid out for — the width of the panels constant weights are packed into.
 * The generated file reads them with the widest GNU C vectors the C
 * compiler targets that fit (16-, 8- or 4-wide, else plain C), so every
 * choice builds and runs anywhere; a matching one is fastest. */
typedef enum EmitIsa {
  ISA_GENERIC,  /* 8-column panels: 12x8 tiles with AVX, 6x8 with SSE/NEON (default) */
  ISA_AVX2,     /* 16-column panels: 6x16 tiles of 8-wide vectors (AVX2 + FMA) */
  ISA_AVX512    /* 32-column panels: 12x32 tiles of 16-wide vectors (AVX-512F) */
} EmitIsa;

typedef struct EmitOptions {
  const char *prefix;   /* --name; also the file stem */
  const char *source;   /* the input file, named in the header comment */
  const char *header;   /* file name of the header the .c includes */
  EmitIsa isa;          /* --isa */
} EmitOptions;

/* Write model.c into c and model.h into h. The graph must be planned. */
bool emit_c(Graph *g, const EmitOptions *o, Buf *c, Buf *h, Diag *d);

#endif
