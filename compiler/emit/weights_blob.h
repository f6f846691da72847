/* weights_blob.h — the weights of a large model in a file of their own.
 *
 * `kiln compile --weights-mode=blob` (the default once a model's constants pass
 * 1 MiB) writes the weight arrays the generated code reads into
 * NAME.weights.bin instead of C literals, so the .c holds code only and
 * the C compiler never parses a 100 MB initializer. The layout:
 *
 *   offset 0   header, 64 bytes (all integers little-endian):
 *                0  magic "KILNWTS\0"
 *                8  u32 format version (WEIGHTS_BLOB_VERSION)
 *               12  u32 header size (64)
 *               16  u64 size of the whole file in bytes
 *               24  u64 model hash: of the body's bytes (offset 64 to the
 *                   end, padding included) as 64-bit words, each through
 *                   a finalizer, seeded by the hash of the layout (each
 *                   array's offset and size; weights_blob.c): another
 *                   model, or the same model with other weights, has
 *                   another hash
 *               32  u32 number of arrays
 *               36  u32 0x01020304 as the writer's CPU stores it (a blob
 *                   read on a CPU of the other byte order is refused)
 *               40  zeros
 *   offset 64  the arrays in the order the code first reads them, each at
 *              a 64-byte-aligned offset, zero-padded; the file's size is a
 *              multiple of 64.
 *
 * The generated code describes the same layout as a struct and refuses,
 * in NAME_bind_weights(), a blob whose size, magic, version, byte order
 * or hash differs (README: "The generated API"). */
#ifndef KILN_WEIGHTS_BLOB_H
#define KILN_WEIGHTS_BLOB_H

#include "../base/base.h"

#define WEIGHTS_BLOB_VERSION 1
#define WEIGHTS_BLOB_HEADER 64
#define WEIGHTS_BLOB_ALIGN 64

typedef struct BlobArray {
  const void *data; /* not owned; must outlive blob_write */
  size_t bytes;
  size_t offset;    /* in the file */
} BlobArray;

typedef struct WeightsBlob {
  BlobArray *arrays;
  int n, cap;
  size_t size;      /* the file's size so far (a multiple of 64) */
  uint64_t hash;    /* set by blob_finish */
  uint64_t seed;    /* the layout's hash, where the body's starts (blob_finish) */
} WeightsBlob;

/* Place an array of `bytes` bytes; returns its offset in the file. */
size_t blob_add(WeightsBlob *b, const void *data, size_t bytes);
/* Compute the model hash (after the last blob_add). */
void blob_finish(WeightsBlob *b);
/* Stream the blob to path (through a temporary file renamed into place:
 * nothing is left behind on failure). Holds no copy of the weights. */
bool blob_write(const WeightsBlob *b, const char *path, Diag *d);
/* The assembler file that links the blob into an app: defines the global
 * symbol SYMBOL (64-byte aligned, read-only) holding BIN_NAME's bytes by
 * .incbin (gcc and clang; ELF and Mach-O). */
char *blob_asm_source(const char *symbol, const char *bin_name, const char *c_name);
void blob_free(WeightsBlob *b);

#endif
