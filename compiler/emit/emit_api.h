/* emit_api.h — the emitter's entry point, for the driver (main.c). */
#ifndef KILN_EMIT_API_H
#define KILN_EMIT_API_H

#include "../ir/ir.h"

/* --isa: the machine the kernels are written for. It sets the width of the
 * panels constant weights are packed into (compiler/kernels/gemm_kernel.c)
 * and which SIMD bodies the generated file carries
 * (compiler/kernels/vector_views.h): portable every GNU C vector width,
 * the widest the C compiler targets picked when the file is compiled;
 * avx2 and avx512 only their own width, with the plain C body (written
 * first) for a compiler that does not target it. Every choice builds and
 * runs anywhere; a matching one is fastest. native (the default) is
 * resolved by kiln from the CPU it runs on (main.c). */
typedef enum EmitIsa {
  ISA_GENERIC,  /* --isa=portable (alias generic): 8-column panels, 12x8 tiles with AVX, 6x8 with SSE/NEON,
                   every vector width's body */
  ISA_AVX2,     /* 16-column panels: 6x16 tiles of 8-wide vectors (AVX2 + FMA), the 8-wide bodies only */
  ISA_AVX512    /* 32-column panels: 12x32 tiles of 16-wide vectors (AVX-512F), the 16-wide bodies only */
} EmitIsa;

/* --gemm: what runs the f32 products by constant weights (MatMul, Gemm,
 * Linear) and the other f32 matrix products. */
typedef enum EmitGemm {
  GEMM_PACKED,   /* kiln's own kernels: the packed GEMM for weights (default) */
  GEMM_OPENBLAS  /* cblas_sgemm calls, epilogues after them: link -lopenblas */
} EmitGemm;

/* --precision: the arithmetic of the products by constant weights. */
typedef enum EmitPrecision {
  PRECISION_F32,  /* f32 weights, f32 products (default) */
  PRECISION_BF16  /* weights stored as bf16, activations rounded to bf16 at the
                     product, f32 sums: AVX512-BF16's vdpbf16ps where the C
                     compiler targets it, else the same arithmetic in f32 FMAs */
} EmitPrecision;

/* --weights-mode=inline|blob: where the weights go (weights_blob.h). */
typedef enum EmitWeights {
  WEIGHTS_AUTO,   /* blob when the model's constants exceed EMIT_BLOB_AUTO bytes */
  WEIGHTS_INLINE, /* static const arrays of exact literals in the .c */
  WEIGHTS_BLOB    /* NAME.weights.bin (+ NAME_weights.S); the .c holds code only */
} EmitWeights;
#define EMIT_BLOB_AUTO (1 << 20)
/* In blob mode, arrays up to this size stay in the .c: the C compiler can
 * see (and fold) a small table, and a pointer into the blob buys nothing. */
#define EMIT_BLOB_INLINE_MAX 256

typedef struct EmitOptions {
  const char *prefix;   /* --name; also the file stem */
  const char *source;   /* the input file, named in the header comment */
  const char *header;   /* file name of the header the .c includes */
  EmitIsa isa;          /* --isa */
  int threads;          /* --threads: 1 (or 0) emits no threading at all; N > 1
                           marks the large loops for N threads of the pool (emit.h, kiln_rt.h) */
  EmitGemm gemm;        /* --gemm */
  EmitPrecision precision; /* --precision */
  EmitWeights weights;  /* --weights-mode=inline|blob */
  const struct Gguf *tokenizer; /* a GGUF whose tokenizer goes into the files as
                           tables (compiler/emit/tokenizer.h), or NULL */
  bool quiet;           /* driver_write_c: no notes on stderr (kiln compile -q) */
  bool unroll_layers;   /* --unroll-layers: every layer written out, no layer loops
                           (emit_forward.h): the same calls, for diffing and timing */
  int64_t *weight_bytes; /* when set, receives the bytes of the weights the files hold
                            (each array once, in its stored dtype: bf16, int8, packed) */
  bool profile;         /* kiln bench --profile: after each kernel call the body calls
                           PREFIX_profile_mark(NODE), NODE the call's IR node index,
                           a function the program around the model defines */
} EmitOptions;

struct WeightsBlob;
/* Write model.c into c and model.h into h. The graph must be planned.
 * blob receives the weights blob's layout when the weights go into one
 * (blob->size > 0 afterwards; the driver writes the file); NULL forces
 * inline weights. */
bool emit_c(Graph *g, const EmitOptions *o, Buf *c, Buf *h, struct WeightsBlob *blob, Diag *d);


/* For the programs kiln writes around generated code (kiln check, kiln
 * bench): one line of C that calls PREFIX_run on buffers in0, in1, ... and
 * out0, ... (graph input and output positions). A stateful model's states
 * are set from their input buffers before the call and read back into
 * their next values' output buffers after it (the program includes
 * <string.h>), so the call computes what the exported ONNX model, with
 * states as inputs and outputs, does. */
const char *emit_run_call(Graph *g, const char *prefix);

#endif
