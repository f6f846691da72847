/* gguf.h — read GGUF files (llama.cpp's weights format), so a model
 * described in Lua can take its parameters from a GGUF checkpoint
 * (`weights(path)` / `--weights`), bound by name, and read the file's
 * metadata (hyperparameters, the tokenizer's vocabulary).
 *
 * The format (ggml's docs/gguf.md), all little-endian:
 *   "GGUF", u32 version (2 or 3), u64 tensor_count, u64 kv_count;
 *   kv_count metadata entries: string key, u32 value type, value;
 *   tensor_count tensor infos: string name, u32 n_dims (<= 4),
 *     u64 ne[n_dims] (ne[0] varies fastest), u32 ggml type, u64 offset;
 *   padding to general.alignment (default 32), then the data section,
 *   where each tensor's offset (relative to the section, a multiple of the
 *   alignment) locates its bytes.
 * A string is a u64 length and that many bytes; an array is a u32 element
 * type, a u64 count and the elements (arrays may nest).
 *
 * Everything read from the file is checked before use; bad input gives one
 * Diag message that starts with the file's path and names the key or the
 * tensor. The file is read into the arena once: block-quantized tensors
 * (Q8_0, Q4_0, Q4_1, ...) point into that image and stay quantized; F16 and
 * BF16 tensors are converted to F32 on load, exactly (like safetensors.c).
 * Every string (keys, values, array items, tensor names) is copied
 * NUL-terminated into the arena; its length is kept too, since a value may
 * hold a NUL byte. The host is assumed little-endian, like the format. */
#ifndef KILN_GGUF_H
#define KILN_GGUF_H

#include "../ir/ir.h"

/* Metadata value types, numbered as in the file. */
typedef enum GgufType {
  GGUF_U8 = 0, GGUF_I8 = 1, GGUF_U16 = 2, GGUF_I16 = 3, GGUF_U32 = 4, GGUF_I32 = 5,
  GGUF_F32 = 6, GGUF_BOOL = 7, GGUF_STRING = 8, GGUF_ARRAY = 9, GGUF_U64 = 10,
  GGUF_I64 = 11, GGUF_F64 = 12,
  GGUF_NTYPES
} GgufType;

/* Tensor types kiln knows by number (ggml's enum ggml_type). */
enum {
  GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1, GGML_TYPE_Q4_0 = 2, GGML_TYPE_Q4_1 = 3,
  GGML_TYPE_Q5_0 = 6, GGML_TYPE_Q5_1 = 7, GGML_TYPE_Q8_0 = 8, GGML_TYPE_Q8_1 = 9,
  GGML_TYPE_Q2_K = 10, GGML_TYPE_Q3_K = 11, GGML_TYPE_Q4_K = 12, GGML_TYPE_Q5_K = 13,
  GGML_TYPE_Q6_K = 14, GGML_TYPE_Q8_K = 15, GGML_TYPE_I8 = 24, GGML_TYPE_I16 = 25,
  GGML_TYPE_I32 = 26, GGML_TYPE_I64 = 27, GGML_TYPE_F64 = 28, GGML_TYPE_BF16 = 30,
};

typedef struct GgufStr {
  const char *s;           /* NUL-terminated arena copy */
  size_t len;              /* bytes, without the NUL (s may hold NULs itself) */
} GgufStr;

typedef struct GgufValue GgufValue;
struct GgufValue {
  GgufType type;
  union {
    uint64_t u;            /* GGUF_U8, U16, U32, U64 and BOOL (0 or 1) */
    int64_t i;             /* GGUF_I8, I16, I32, I64 */
    double f;              /* GGUF_F32, F64 (exact) */
    GgufStr s;             /* GGUF_STRING */
    struct {
      GgufType elem;       /* the items' type */
      uint64_t n;          /* item count */
      const unsigned char *raw; /* numeric and bool items as the file has them (little-endian, unaligned) */
      const GgufStr *strs; /* GGUF_STRING items: strs[n] */
      const GgufValue *items; /* GGUF_ARRAY items (nested arrays): items[n] */
    } arr;                 /* GGUF_ARRAY */
  };
};

typedef struct GgufKV {
  const char *key;         /* valid UTF-8, no control characters, unique in the file */
  GgufValue v;
} GgufKV;

typedef struct GgufTensor {
  const char *name;        /* unique in the file */
  int ggml_type;           /* GGML_TYPE_* as in the file */
  const char *type_name;   /* "F32", "Q4_1", "Q6_K", ... */
  int n_dims;              /* 0..4 (0: a scalar) */
  int64_t ne[4];           /* GGUF order: ne[0] varies fastest (unused dims are 1) */
  Type type;               /* what kiln binds: dims ne reversed (row-major: GGUF ne=[576,49152]
                              is [49152,576]); f32 for F32, F16, BF16 and the block-quantized
                              types; i8..i64, f64 for those */
  uint64_t offset;         /* in the data section, as the file gives it */
  size_t file_bytes;       /* bytes in the file */
  const void *data;        /* f32/int data (type_bytes(&type), 16-byte aligned) for the plain
                              types; the raw blocks (file_bytes) for block-quantized ones */
  size_t bytes;            /* bytes at data */
  bool quantized;          /* data holds blocks (Q8_0, Q4_0, Q4_1, ...), not elements */
  bool readable;           /* kiln can bind it: F32, F16, BF16, I8..I64, F64, Q8_0, Q4_0, Q4_1 */
  bool used;               /* set by gguf_take */
} GgufTensor;

typedef struct Gguf {
  const char *path;
  uint32_t version;        /* 2 or 3 */
  uint32_t alignment;      /* general.alignment, else 32 */
  GgufKV *kv;              /* [nkv], in file order */
  int nkv;
  GgufTensor *t;           /* [n], in file order */
  int n;
  const unsigned char *image; /* the file's bytes (arena) */
  size_t image_len;
  uint64_t data_start;     /* the data section's offset in the file */
} Gguf;

/* Whether bytes start with the GGUF magic (to tell a .gguf from a
 * .safetensors by content, not name); len may be short. */
bool gguf_is_gguf(const void *bytes, size_t len);
/* Whether the file at path starts with the magic (false when unreadable). */
bool gguf_file_is_gguf(const char *path);

/* Read a whole GGUF file into arena a. False + d on failure. */
bool gguf_load(Arena *a, const char *path, Gguf *g, Diag *d);
/* The same from bytes in memory, which must stay valid as long as g (the
 * quantized tensors point into them); path names the file in messages. */
bool gguf_parse(Arena *a, const void *bytes, size_t len, const char *path, Gguf *g, Diag *d);

/* ---- metadata -------------------------------------------------------------- */

/* The entry for key, or NULL. */
const GgufKV *gguf_kv(const Gguf *g, const char *key);
const char *gguf_type_name(GgufType t);  /* "u32", "string", "array", ... */

/* Typed reads of one value; false when v is NULL or of another kind.
 * int: any integer type whose value fits int64; float: F32, F64 or any
 * integer; bool: BOOL; string: STRING (len may be NULL). */
bool gguf_value_int(const GgufValue *v, int64_t *out);
bool gguf_value_float(const GgufValue *v, double *out);
bool gguf_value_bool(const GgufValue *v, bool *out);
const char *gguf_value_string(const GgufValue *v, size_t *len);
/* Arrays: the item type and count (false when v is not an array); item i
 * as a number (numeric and bool items), an integer, a string, or a value
 * (any type; for nested arrays). False / NULL when i is out of range or the
 * item is of another kind. */
bool gguf_value_array(const GgufValue *v, GgufType *elem, uint64_t *n);
bool gguf_array_float(const GgufValue *v, uint64_t i, double *out);
bool gguf_array_int(const GgufValue *v, uint64_t i, int64_t *out);
const char *gguf_array_string(const GgufValue *v, uint64_t i, size_t *len);
bool gguf_array_value(const GgufValue *v, uint64_t i, GgufValue *out);

/* The same on an entry (NULL kv: false / NULL), so a lookup and a read are
 * one line: gguf_kv_int(gguf_kv(g, "llama.block_count"), &n). */
static inline bool gguf_kv_int(const GgufKV *kv, int64_t *out) {
  return kv && gguf_value_int(&kv->v, out);
}
static inline bool gguf_kv_float(const GgufKV *kv, double *out) {
  return kv && gguf_value_float(&kv->v, out);
}
static inline bool gguf_kv_bool(const GgufKV *kv, bool *out) {
  return kv && gguf_value_bool(&kv->v, out);
}
static inline const char *gguf_kv_string(const GgufKV *kv, size_t *len) {
  return kv ? gguf_value_string(&kv->v, len) : NULL;
}
static inline bool gguf_kv_array(const GgufKV *kv, GgufType *elem, uint64_t *n) {
  return kv && gguf_value_array(&kv->v, elem, n);
}

/* ---- tensors and binding ---------------------------------------------------- */

/* The tensor called name, or NULL. */
GgufTensor *gguf_tensor(Gguf *g, const char *name);

/* Binding by name: the tensor called name, readable by kiln, whose type
 * (row-major, see GgufTensor.type) is exactly want; marked used. NULL + d
 * when it is missing (the message lists a few names the file has), of a
 * type kiln does not read ("tensor 'x' is Q6_K; kiln reads F32, F16, ...")
 * or of another shape. The caller checks t->quantized. */
GgufTensor *gguf_take(Gguf *g, const char *name, const Type *want, Diag *d);
/* False + d naming the first tensor no gguf_take used (--strict-weights). */
bool gguf_check_all_used(const Gguf *g, Diag *d);
/* The unused tensors as one line for a notice, as safetensors_unused_list
 * words it; heap-allocated; NULL when every tensor was bound. */
char *gguf_unused_list(const Gguf *g);

#endif
