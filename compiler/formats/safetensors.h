/* safetensors.h — read and write .safetensors weight files, so a model
 * described in Lua can take its parameters from a real checkpoint
 * (`weights(path)` / `--weights`), bound by name.
 *
 * The format (huggingface/safetensors): an 8-byte little-endian u64 N, then
 * N bytes of UTF-8 JSON — an object mapping each tensor name to
 * {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, offsets
 * relative to the first byte after the header, plus an optional
 * "__metadata__" object of string -> string — then the data area, which the
 * tensors must cover exactly (no holes, no overlaps, nothing after the last).
 *
 * The header is parsed with jansson, and everything in it is checked before
 * use; bad input gives one Diag message that names the file and the tensor.
 * Each tensor's data is copied into the arena, 16-byte aligned (offsets in
 * the file need not be). F16 and BF16 tensors are converted to F32 on load,
 * exactly — real checkpoints ship in them and kiln computes in f32 — and
 * StTensor.file_dtype keeps the dtype the file had. BOOL bytes must be 0 or
 * 1. The host is assumed little-endian (checked at compile time), like the
 * format. */
#ifndef KILN_SAFETENSORS_H
#define KILN_SAFETENSORS_H

#include "../ir/ir.h"

typedef struct StTensor {
  const char *name;
  Type type;               /* kiln dtype (f32 for F16/BF16) and shape */
  const char *file_dtype;  /* the dtype as the file spells it: "F16", "I64", ... */
  const void *data;        /* type_bytes(&type) bytes, 16-byte aligned */
  size_t bytes;
  bool used;               /* set by safetensors_take */
} StTensor;

typedef struct StMeta {
  const char *key, *value;
} StMeta;

typedef struct SafeTensors {
  const char *path;
  StTensor *t;             /* [n], in the order of the file's header */
  int n;
  StMeta *meta;            /* [nmeta], the "__metadata__" entries */
  int nmeta;
} SafeTensors;

/* Read a whole .safetensors file into arena a. False + d on failure. */
bool safetensors_load(Arena *a, const char *path, SafeTensors *st, Diag *d);
/* The same from bytes in memory; path names the file in messages. */
bool safetensors_parse(Arena *a, const void *bytes, size_t len, const char *path,
                       SafeTensors *st, Diag *d);

/* The tensor called name, or NULL. */
StTensor *safetensors_find(SafeTensors *st, const char *name);
/* A metadata value, or NULL. */
const char *safetensors_meta(const SafeTensors *st, const char *key);

/* Binding by name: the tensor called name, checked to have exactly the
 * type want, marked used. NULL + d when it is missing (the message lists
 * a few of the names the file has) or its dtype or shape differ. */
StTensor *safetensors_take(SafeTensors *st, const char *name, const Type *want, Diag *d);
/* False + d naming the first tensor no safetensors_take used (extra
 * tensors in a checkpoint are an error, not silently ignored). */
/* The unused tensors as one line for a notice ("FILE: 2 of 104 tensors
 * not used by the model: a (f32[3]), b (i64[1,512])", at most eight
 * named), heap-allocated; NULL when every tensor was bound. */
char *safetensors_unused_list(const SafeTensors *st);
bool safetensors_check_all_used(const SafeTensors *st, Diag *d);

/* Serialize tensors t[n] (dtypes f32, f64, signed and unsigned ints, bool,
 * and raw f16/bf16) and optional metadata into out: the header is padded
 * with spaces to a multiple of 8 bytes, data in the order given. */
bool safetensors_serialize(const StTensor *t, int n, const StMeta *meta, int nmeta, Buf *out,
                           Diag *d);
/* The same written to path atomically (nothing is left behind on failure). */
bool safetensors_write(const char *path, const StTensor *t, int n, const StMeta *meta,
                       int nmeta, Diag *d);

#endif
