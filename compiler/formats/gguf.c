/* gguf.c — the GGUF reader (see gguf.h).
 *
 * Reading goes front to back through the file image with one cursor whose
 * every step is checked against the bytes left: the header; the metadata
 * entries (recursively for nested arrays, to a fixed depth), each count
 * checked against the smallest size its items could take before anything
 * is allocated; the tensor infos; then the data section, whose tensors
 * must lie inside it, start at aligned offsets and not overlap. Only then
 * are F16/BF16 tensors converted to F32; F32 and block-quantized tensors
 * stay where they are in the image. Every message starts with the file's
 * path and names the key or tensor it is about. */
#include "gguf.h"
#include "weight_files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gguf.c reads tensor data as the file lays it out: it needs a little-endian host"
#endif

#define GGUF_DEFAULT_ALIGNMENT 32u
#define GGUF_MAX_DEPTH 8        /* nested arrays deeper than this are refused */
#define GGUF_MAX_KEY 65535      /* the spec's limit on a key's length */
#define GGUF_MAX_NAME 255       /* tensor names (llama.cpp's limit is 63) */
#define GGUF_MAX_DIMS 4
/* the smallest tensor info: empty name (8), n_dims (4), type (4), offset (8) */
#define GGUF_MIN_TENSOR_INFO 24u
/* the smallest entry: empty key (8), type (4), a u8 (1) */
#define GGUF_MIN_KV 13u

/* ggml's tensor types: block size in elements, bytes per block, and what
 * kiln keeps a readable one as (DT_UNDEF: blocks, kept raw). */
static const struct {
  int id;
  const char *name;
  int blck, size;
  bool readable;
  DType dt;
} ggml_types[] = {
    {0, "F32", 1, 4, true, DT_F32},         {1, "F16", 1, 2, true, DT_F32},
    {2, "Q4_0", 32, 18, true, DT_UNDEF},    {3, "Q4_1", 32, 20, true, DT_UNDEF},
    {6, "Q5_0", 32, 22, true, DT_UNDEF},    {7, "Q5_1", 32, 24, true, DT_UNDEF},
    {8, "Q8_0", 32, 34, true, DT_UNDEF},    {9, "Q8_1", 32, 40, false, DT_UNDEF},
    {10, "Q2_K", 256, 84, false, DT_UNDEF}, {11, "Q3_K", 256, 110, false, DT_UNDEF},
    {12, "Q4_K", 256, 144, true, DT_UNDEF}, {13, "Q5_K", 256, 176, true, DT_UNDEF},
    {14, "Q6_K", 256, 210, true, DT_UNDEF}, {15, "Q8_K", 256, 292, true, DT_UNDEF},
    {16, "IQ2_XXS", 256, 66, false, DT_UNDEF}, {17, "IQ2_XS", 256, 74, false, DT_UNDEF},
    {18, "IQ3_XXS", 256, 98, false, DT_UNDEF}, {19, "IQ1_S", 256, 50, false, DT_UNDEF},
    {20, "IQ4_NL", 32, 18, false, DT_UNDEF}, {21, "IQ3_S", 256, 110, false, DT_UNDEF},
    {22, "IQ2_S", 256, 82, false, DT_UNDEF}, {23, "IQ4_XS", 256, 136, false, DT_UNDEF},
    {24, "I8", 1, 1, true, DT_I8},          {25, "I16", 1, 2, true, DT_I16},
    {26, "I32", 1, 4, true, DT_I32},        {27, "I64", 1, 8, true, DT_I64},
    {28, "F64", 1, 8, true, DT_F64},        {29, "IQ1_M", 256, 56, false, DT_UNDEF},
    {30, "BF16", 1, 2, true, DT_F32},       {34, "TQ1_0", 256, 54, false, DT_UNDEF},
    {35, "TQ2_0", 256, 66, false, DT_UNDEF}, {39, "MXFP4", 32, 17, false, DT_UNDEF},
    {40, "NVFP4", 64, 36, false, DT_UNDEF}, {41, "Q1_0", 128, 18, false, DT_UNDEF},
};
#define GGUF_READABLE \
  "F32, F16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q8_K (and BF16, F64, I8, I16, I32, I64)"

static const char *const value_type_names[GGUF_NTYPES] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
};
/* bytes of a scalar of each type (0: string and array, whose size varies) */
static const int value_type_size[GGUF_NTYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

typedef struct Reader {
  Arena *a;
  const char *path;
  const unsigned char *b;
  size_t len, at;     /* the image and the cursor */
  const char *key;    /* the entry being read, for messages */
  const char *tensor; /* the tensor info being read */
  Diag *d;
} Reader;

/* "PATH: key 'K': what", "PATH: tensor 'T': what" or "PATH: what". */
KILN_PRINTF(2, 3) static bool gg_error(Reader *r, const char *fmt, ...) {
  char what[sizeof r->d->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (r->tensor)
    return diag_error(r->d, "%s: tensor '%s': %s", r->path, r->tensor, what);
  if (r->key)
    return diag_error(r->d, "%s: key '%s': %s", r->path, r->key, what);
  return diag_error(r->d, "%s: %s", r->path, what);
}

static int ggml_type_index(uint32_t id) {
  for (int i = 0; i < KILN_COUNT(ggml_types); i++)
    if ((uint32_t)ggml_types[i].id == id)
      return i;
  return -1;
}

/* ---- the cursor --------------------------------------------------------------- */

static size_t left(const Reader *r) { return r->len - r->at; }

static bool need(Reader *r, uint64_t n, const char *what) {
  if (n <= left(r))
    return true;
  return gg_error(r, "the file ends inside %s (%llu bytes needed at byte %zu, %zu left); "
                     "expected a complete file",
                  what, (unsigned long long)n, r->at, left(r));
}

static bool rd_u32(Reader *r, const char *what, uint32_t *out) {
  if (!need(r, 4, what))
    return false;
  memcpy(out, r->b + r->at, 4);
  r->at += 4;
  return true;
}

static bool rd_u64(Reader *r, const char *what, uint64_t *out) {
  if (!need(r, 8, what))
    return false;
  memcpy(out, r->b + r->at, 8);
  r->at += 8;
  return true;
}

/* A string: u64 length, then the bytes; copied NUL-terminated. */
static bool rd_string(Reader *r, const char *what, GgufStr *out) {
  uint64_t n;
  if (!rd_u64(r, what, &n))
    return false;
  if (n > left(r))
    return gg_error(r, "%s has length %llu, past the end of the file (%zu bytes left); expected "
                       "at most %zu",
                    what, (unsigned long long)n, left(r), left(r));
  if (n == 0) {
    *out = (GgufStr){"", 0};
    return true;
  }
  char *s = arena_alloc(r->a, (size_t)n + 1);
  memcpy(s, r->b + r->at, (size_t)n);
  r->at += (size_t)n;
  *out = (GgufStr){s, (size_t)n};
  return true;
}

/* Valid UTF-8 without control characters (names that go into messages and
 * generated C comments). */
static bool clean_utf8(const GgufStr *s, bool ascii_only) {
  const unsigned char *p = (const unsigned char *)s->s, *end = p + s->len;
  while (p < end) {
    unsigned c = *p;
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f)
        return false;
      p++;
      continue;
    }
    if (ascii_only)
      return false;
    int n = c >= 0xf0 && c <= 0xf4 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 && c < 0xe0 ? 1 : -1;
    if (n < 0 || end - p <= n)
      return false;
    uint32_t cp = c & (0x3f >> n);
    for (int k = 1; k <= n; k++) {
      if ((p[k] & 0xc0) != 0x80)
        return false;
      cp = cp << 6 | (p[k] & 0x3f);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000))) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
      return false;
    p += n + 1;
  }
  return true;
}

/* ---- metadata ------------------------------------------------------------------ */

static bool read_value(Reader *r, uint32_t type, GgufValue *v, int depth);

static bool check_type(Reader *r, uint32_t type, const char *what) {
  if (type < GGUF_NTYPES)
    return true;
  return gg_error(r, "%s type %u is unknown; expected 0..12 (u8, i8, u16, i16, u32, i32, f32, "
                     "bool, string, array, u64, i64, f64)",
                  what, type);
}

static bool read_array(Reader *r, GgufValue *v, int depth) {
  uint32_t elem;
  uint64_t n;
  if (!rd_u32(r, "an array's item type", &elem) || !check_type(r, elem, "array item") ||
      !rd_u64(r, "an array's length", &n))
    return false;
  if (depth >= GGUF_MAX_DEPTH)
    return gg_error(r, "arrays nested %d deep; expected at most %d levels", depth + 1,
                    GGUF_MAX_DEPTH);
  /* the least each item takes in the file: a count past that cannot be */
  uint64_t min = elem == GGUF_STRING ? 8 : elem == GGUF_ARRAY ? 12 : (uint64_t)value_type_size[elem];
  if (n > left(r) / min)
    return gg_error(r, "array of %llu %s items cannot fit in the %zu bytes left (each takes at "
                       "least %llu); expected a shorter array",
                    (unsigned long long)n, value_type_names[elem], left(r), (unsigned long long)min);
  v->arr.elem = (GgufType)elem;
  v->arr.n = n;
  v->arr.raw = r->b + r->at;
  if (elem == GGUF_STRING) {
    GgufStr *s = arena_alloc(r->a, (size_t)n * sizeof *s);
    for (uint64_t i = 0; i < n; i++)
      if (!rd_string(r, "an array's string", &s[i]))
        return false;
    v->arr.strs = s;
    return true;
  }
  if (elem == GGUF_ARRAY) {
    GgufValue *items = arena_alloc(r->a, (size_t)n * sizeof *items);
    for (uint64_t i = 0; i < n; i++)
      if (!read_value(r, GGUF_ARRAY, &items[i], depth + 1))
        return false;
    v->arr.items = items;
    return true;
  }
  if (elem == GGUF_BOOL)
    for (uint64_t i = 0; i < n; i++)
      if (r->b[r->at + i] > 1)
        return gg_error(r, "bool item %llu is %u; expected 0 or 1", (unsigned long long)i,
                        r->b[r->at + i]);
  r->at += (size_t)(n * min);
  return true;
}

static bool read_value(Reader *r, uint32_t type, GgufValue *v, int depth) {
  v->type = (GgufType)type;
  if (type == GGUF_STRING)
    return rd_string(r, "the string value", &v->s);
  if (type == GGUF_ARRAY)
    return read_array(r, v, depth);
  int size = value_type_size[type];
  if (!need(r, (uint64_t)size, "the value"))
    return false;
  const unsigned char *p = r->b + r->at;
  r->at += (size_t)size;
  uint8_t u8 = p[0];
  uint16_t u16 = 0;
  uint32_t u32 = 0;
  uint64_t u64 = 0;
  float f32 = 0;
  memcpy(&u16, p, size >= 2 ? 2 : 0);
  memcpy(&u32, p, size >= 4 ? 4 : 0);
  memcpy(&u64, p, size >= 8 ? 8 : 0);
  memcpy(&f32, p, size >= 4 ? 4 : 0);
  switch ((GgufType)type) {
  case GGUF_U8: v->u = u8; break;
  case GGUF_I8: v->i = (int8_t)u8; break;
  case GGUF_U16: v->u = u16; break;
  case GGUF_I16: v->i = (int16_t)u16; break;
  case GGUF_U32: v->u = u32; break;
  case GGUF_I32: v->i = (int32_t)u32; break;
  case GGUF_U64: v->u = u64; break;
  case GGUF_I64: memcpy(&v->i, p, 8); break;
  case GGUF_F32: v->f = f32; break;
  case GGUF_F64: memcpy(&v->f, p, 8); break;
  case GGUF_BOOL:
    if (u8 > 1)
      return gg_error(r, "bool value %u; expected 0 or 1", u8);
    v->u = u8;
    break;
  default: KILN_ASSERT(0);
  }
  return true;
}

static int str_ptr_cmp(const void *pa, const void *pb) {
  return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/* The first name that appears twice, or NULL (sorting a copy: n log n). */
static const char *first_duplicate(Arena *a, const char **names, int n) {
  const char **s = arena_alloc(a, (size_t)n * sizeof *s + 1);
  memcpy(s, names, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, str_ptr_cmp);
  for (int i = 1; i < n; i++)
    if (strcmp(s[i - 1], s[i]) == 0)
      return s[i];
  return NULL;
}

static bool read_kvs(Reader *r, Gguf *g, uint64_t count) {
  if (count > left(r) / GGUF_MIN_KV)
    return gg_error(r, "kv_count %llu cannot fit in the %zu bytes left (each entry takes at least "
                       "%u); expected a smaller count",
                    (unsigned long long)count, left(r), GGUF_MIN_KV);
  g->kv = arena_alloc(r->a, (size_t)count * sizeof *g->kv + 1);
  const char **keys = arena_alloc(r->a, (size_t)count * sizeof *keys + 1);
  for (uint64_t i = 0; i < count; i++) {
    GgufStr key;
    char what[64];
    snprintf(what, sizeof what, "the key of entry %llu", (unsigned long long)i);
    if (!rd_string(r, what, &key))
      return false;
    if (key.len == 0 || key.len > GGUF_MAX_KEY || !clean_utf8(&key, true))
      return gg_error(r, "%s is %s; expected 1 to %d printable ASCII characters", what,
                      key.len ? "not printable ASCII or too long" : "empty", GGUF_MAX_KEY);
    r->key = key.s;
    uint32_t type;
    if (!rd_u32(r, "the value type", &type) || !check_type(r, type, "value") ||
        !read_value(r, type, &g->kv[i].v, 0))
      return false;
    g->kv[i].key = keys[i] = key.s;
    r->key = NULL;
    g->nkv++;
  }
  const char *dup = first_duplicate(r->a, keys, g->nkv);
  if (dup)
    return gg_error(r, "key '%s' appears twice; expected each key once", dup);
  return true;
}

/* general.alignment: a u32 power of two, when present. */
static bool read_alignment(Reader *r, Gguf *g) {
  g->alignment = GGUF_DEFAULT_ALIGNMENT;
  const GgufKV *kv = gguf_kv(g, "general.alignment");
  if (!kv)
    return true;
  r->key = kv->key;
  if (kv->v.type != GGUF_U32)
    return gg_error(r, "is a %s; expected a u32", value_type_names[kv->v.type]);
  uint64_t al = kv->v.u;
  if (al == 0 || (al & (al - 1)) != 0)
    return gg_error(r, "is %llu; expected a power of two", (unsigned long long)al);
  g->alignment = (uint32_t)al;
  r->key = NULL;
  return true;
}

/* ---- tensor infos ---------------------------------------------------------------- */

static const char *ne_str(const GgufTensor *t, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < t->n_dims && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "", (long long)t->ne[i]);
  if (k < n)
    snprintf(buf + k, n - k, "]");
  return buf;
}

static bool read_tensor_info(Reader *r, uint64_t i, GgufTensor *t) {
  char what[64];
  snprintf(what, sizeof what, "the name of tensor %llu", (unsigned long long)i);
  GgufStr name;
  if (!rd_string(r, what, &name))
    return false;
  if (name.len == 0 || name.len > GGUF_MAX_NAME || !clean_utf8(&name, false))
    return gg_error(r, "%s is %s; expected 1 to %d bytes of UTF-8 without control characters",
                    what, name.len ? "not clean UTF-8 or too long" : "empty", GGUF_MAX_NAME);
  t->name = r->tensor = name.s;
  uint32_t n_dims, type;
  if (!rd_u32(r, "n_dims", &n_dims))
    return false;
  if (n_dims > GGUF_MAX_DIMS)
    return gg_error(r, "n_dims %u; expected at most %d", n_dims, GGUF_MAX_DIMS);
  t->n_dims = (int)n_dims;
  for (int k = 0; k < GGUF_MAX_DIMS; k++)
    t->ne[k] = 1;
  for (uint32_t k = 0; k < n_dims; k++) {
    uint64_t ne;
    if (!rd_u64(r, "the dimensions", &ne))
      return false;
    if (ne > (uint64_t)MAX_NUMEL)
      return gg_error(r, "ne[%u] is %llu; expected at most %lld", k, (unsigned long long)ne,
                      (long long)MAX_NUMEL);
    t->ne[k] = (int64_t)ne;
  }
  if (!rd_u32(r, "the ggml type", &type) || !rd_u64(r, "the offset", &t->offset))
    return false;
  int ti = ggml_type_index(type);
  if (ti < 0)
    return gg_error(r, "ggml type %u is unknown; expected one of ggml's types (kiln reads " GGUF_READABLE ")",
                    type);
  t->ggml_type = (int)type;
  t->type_name = ggml_types[ti].name;
  t->readable = ggml_types[ti].readable;
  t->quantized = ggml_types[ti].blck > 1;
  t->type.dt = ggml_types[ti].dt == DT_UNDEF ? DT_F32 : ggml_types[ti].dt;
  t->type.rank = t->n_dims;
  for (int k = 0; k < t->n_dims; k++)
    t->type.dims[k] = t->ne[t->n_dims - 1 - k];
  char buf[128];
  if (!type_size_ok(&t->type))
    return gg_error(r, "ne %s has more than %lld elements; expected a smaller tensor",
                    ne_str(t, buf, sizeof buf), (long long)MAX_NUMEL);
  int blck = ggml_types[ti].blck;
  if (t->ne[0] % blck != 0)
    return gg_error(r, "ne %s: %s stores blocks of %d along ne[0], and %lld is not a multiple; "
                       "expected ne[0] a multiple of %d",
                    ne_str(t, buf, sizeof buf), t->type_name, blck, (long long)t->ne[0], blck);
  /* numel <= 2^34 and at most 292 bytes a block: no overflow */
  t->file_bytes = (size_t)(type_numel(&t->type) / blck * ggml_types[ti].size);
  r->tensor = NULL;
  return true;
}

/* ---- the data section ------------------------------------------------------------- */

typedef struct Span {
  uint64_t begin, end;
  int tensor;
} Span;

static int span_cmp(const void *pa, const void *pb) {
  const Span *a = pa, *b = pb;
  if (a->begin != b->begin)
    return a->begin < b->begin ? -1 : 1;
  if (a->end != b->end)
    return a->end < b->end ? -1 : 1;
  return a->tensor - b->tensor;
}

/* Each tensor aligned, inside the data section, and none overlapping. */
static bool check_layout(Reader *r, Gguf *g, uint64_t data_len) {
  Span *s = arena_alloc(r->a, (size_t)g->n * sizeof *s + 1);
  int ns = 0;
  for (int i = 0; i < g->n; i++) {
    GgufTensor *t = &g->t[i];
    r->tensor = t->name;
    if (t->offset % g->alignment != 0)
      return gg_error(r, "offset %llu is not a multiple of the alignment %u; expected an aligned "
                         "offset",
                      (unsigned long long)t->offset, g->alignment);
    if (t->offset > data_len || t->file_bytes > data_len - t->offset)
      return gg_error(r, "bytes [%llu, %llu) of the data section go past its end (%llu bytes); "
                         "expected the tensor inside the file",
                      (unsigned long long)t->offset,
                      (unsigned long long)t->offset + (unsigned long long)t->file_bytes,
                      (unsigned long long)data_len);
    if (t->file_bytes)
      s[ns++] = (Span){t->offset, t->offset + t->file_bytes, i};
  }
  r->tensor = NULL;
  qsort(s, (size_t)ns, sizeof *s, span_cmp);
  for (int i = 1; i < ns; i++)
    if (s[i].begin < s[i - 1].end) {
      r->tensor = g->t[s[i].tensor].name;
      return gg_error(r, "bytes [%llu, %llu) of the data section overlap those of tensor '%s', "
                         "[%llu, %llu); expected disjoint byte ranges",
                      (unsigned long long)s[i].begin, (unsigned long long)s[i].end,
                      g->t[s[i - 1].tensor].name, (unsigned long long)s[i - 1].begin,
                      (unsigned long long)s[i - 1].end);
    }
  return true;
}

/* Point each tensor at its data: F16/BF16 converted to F32, everything else
 * in place when 16-byte aligned, else copied once. */
static void bind_data(Reader *r, Gguf *g) {
  for (int i = 0; i < g->n; i++) {
    GgufTensor *t = &g->t[i];
    const unsigned char *src = r->b + g->data_start + t->offset;
    if (t->ggml_type == GGML_TYPE_F16 || t->ggml_type == GGML_TYPE_BF16) {
      int64_t numel = type_numel(&t->type);
      DType half = t->ggml_type == GGML_TYPE_F16 ? DT_F16 : DT_BF16;
      float *dst = arena_alloc(r->a, (size_t)numel * sizeof *dst);
      for (int64_t k = 0; k < numel; k++) {
        uint16_t h;
        memcpy(&h, src + 2 * k, sizeof h);
        dst[k] = (float)half_to_double(half, h); /* exact */
      }
      t->data = dst;
      t->bytes = (size_t)numel * sizeof *dst;
      continue;
    }
    t->bytes = t->file_bytes;
    t->data = ((uintptr_t)src & 15) == 0 || !t->bytes ? src : arena_dup(r->a, src, t->bytes);
  }
}

static bool read_tensors(Reader *r, Gguf *g, uint64_t count) {
  if (count > left(r) / GGUF_MIN_TENSOR_INFO)
    return gg_error(r, "tensor_count %llu cannot fit in the %zu bytes left (each tensor info "
                       "takes at least %u); expected a smaller count",
                    (unsigned long long)count, left(r), GGUF_MIN_TENSOR_INFO);
  g->t = arena_alloc(r->a, (size_t)count * sizeof *g->t + 1);
  const char **names = arena_alloc(r->a, (size_t)count * sizeof *names + 1);
  for (uint64_t i = 0; i < count; i++) {
    if (!read_tensor_info(r, i, &g->t[i]))
      return false;
    names[i] = g->t[i].name;
    g->n++;
  }
  const char *dup = first_duplicate(r->a, names, g->n);
  if (dup)
    return gg_error(r, "tensor '%s' appears twice; expected each name once", dup);
  /* the data section starts at the next multiple of the alignment */
  uint64_t start = ((uint64_t)r->at + g->alignment - 1) / g->alignment * g->alignment;
  g->data_start = start;
  uint64_t data_len = start <= r->len ? r->len - start : 0;
  if (!check_layout(r, g, data_len))
    return false;
  bind_data(r, g);
  return true;
}

/* ---- the file --------------------------------------------------------------------- */

bool gguf_is_gguf(const void *bytes, size_t len) {
  return len >= 4 && memcmp(bytes, "GGUF", 4) == 0;
}

bool gguf_file_is_gguf(const char *path) {
  const char *why;
  FILE *f = open_regular_file(path, &why);
  if (!f)
    return false;
  unsigned char m[4];
  size_t n = fread(m, 1, sizeof m, f);
  fclose(f);
  return gguf_is_gguf(m, n);
}

bool gguf_parse(Arena *a, const void *bytes, size_t len, const char *path, Gguf *g, Diag *d) {
  memset(g, 0, sizeof *g);
  g->path = arena_strdup(a, path);
  g->image = bytes;
  g->image_len = len;
  Reader r = {.a = a, .path = g->path, .b = bytes, .len = len, .d = d};
  if (len < 4 || !gguf_is_gguf(bytes, len)) {
    char got[16] = "";
    for (size_t i = 0, k = 0; i < 4 && i < len; i++)
      k += (size_t)snprintf(got + k, sizeof got - k, "%s%02x", i ? " " : "", r.b[i]);
    return gg_error(&r, "the file starts with %s%s; expected the GGUF magic \"GGUF\" (47 47 55 46)",
                    len ? "bytes " : "no bytes", got);
  }
  r.at = 4;
  uint32_t version;
  uint64_t ntensors, nkv;
  if (!rd_u32(&r, "the header", &version))
    return false;
  if (version == 1)
    return gg_error(&r, "GGUF version 1 (the 2023 draft, with 32-bit counts); kiln reads versions "
                        "2 and 3");
  if (version != 2 && version != 3)
    return gg_error(&r, "GGUF version %u%s; kiln reads versions 2 and 3", version,
                    version == 0x02000000 || version == 0x03000000 ? " (a big-endian file?)" : "");
  g->version = version;
  if (!rd_u64(&r, "the header", &ntensors) || !rd_u64(&r, "the header", &nkv) ||
      !read_kvs(&r, g, nkv) || !read_alignment(&r, g))
    return false;
  return read_tensors(&r, g, ntensors);
}

bool gguf_load(Arena *a, const char *path, Gguf *g, Diag *d) {
  memset(g, 0, sizeof *g);
  const char *why;
  FILE *f = open_regular_file(path, &why);
  if (!f)
    return diag_error(d, "cannot open '%s': %s", path, why);
  /* the whole file into the arena, once: quantized tensors stay there */
  bool ok = fseek(f, 0, SEEK_END) == 0;
  long size = ok ? ftell(f) : -1;
  ok = size >= 0 && fseek(f, 0, SEEK_SET) == 0;
  unsigned char *bytes = ok ? arena_alloc(a, (size_t)size + 1) : NULL;
  ok = ok && fread(bytes, 1, (size_t)size, f) == (size_t)size;
  fclose(f);
  if (!ok)
    return diag_error(d, "cannot read '%s'", path);
  return gguf_parse(a, bytes, (size_t)size, path, g, d);
}

/* ---- metadata access ---------------------------------------------------------------- */

const GgufKV *gguf_kv(const Gguf *g, const char *key) {
  for (int i = 0; i < g->nkv; i++)
    if (strcmp(g->kv[i].key, key) == 0)
      return &g->kv[i];
  return NULL;
}

const char *gguf_type_name(GgufType t) {
  return (unsigned)t < GGUF_NTYPES ? value_type_names[t] : "?";
}

static bool is_unsigned(GgufType t) {
  return t == GGUF_U8 || t == GGUF_U16 || t == GGUF_U32 || t == GGUF_U64;
}
static bool is_signed(GgufType t) {
  return t == GGUF_I8 || t == GGUF_I16 || t == GGUF_I32 || t == GGUF_I64;
}

bool gguf_value_int(const GgufValue *v, int64_t *out) {
  if (!v)
    return false;
  if (is_signed(v->type)) {
    *out = v->i;
    return true;
  }
  if (is_unsigned(v->type) && v->u <= (uint64_t)INT64_MAX) {
    *out = (int64_t)v->u;
    return true;
  }
  return false;
}

bool gguf_value_float(const GgufValue *v, double *out) {
  if (!v)
    return false;
  if (v->type == GGUF_F32 || v->type == GGUF_F64)
    *out = v->f;
  else if (is_signed(v->type))
    *out = (double)v->i;
  else if (is_unsigned(v->type))
    *out = (double)v->u;
  else
    return false;
  return true;
}

bool gguf_value_bool(const GgufValue *v, bool *out) {
  if (!v || v->type != GGUF_BOOL)
    return false;
  *out = v->u != 0;
  return true;
}

const char *gguf_value_string(const GgufValue *v, size_t *len) {
  if (!v || v->type != GGUF_STRING)
    return NULL;
  if (len)
    *len = v->s.len;
  return v->s.s;
}

bool gguf_value_array(const GgufValue *v, GgufType *elem, uint64_t *n) {
  if (!v || v->type != GGUF_ARRAY)
    return false;
  if (elem)
    *elem = v->arr.elem;
  if (n)
    *n = v->arr.n;
  return true;
}

bool gguf_array_value(const GgufValue *v, uint64_t i, GgufValue *out) {
  if (!v || v->type != GGUF_ARRAY || i >= v->arr.n)
    return false;
  GgufType e = v->arr.elem;
  if (e == GGUF_ARRAY) {
    *out = v->arr.items[i];
    return true;
  }
  if (e == GGUF_STRING) {
    *out = (GgufValue){.type = GGUF_STRING, .s = v->arr.strs[i]};
    return true;
  }
  const unsigned char *p = v->arr.raw + i * (uint64_t)value_type_size[e];
  uint8_t u8 = p[0];
  uint16_t u16 = 0;
  uint32_t u32 = 0;
  float f32 = 0;
  *out = (GgufValue){.type = e};
  switch (e) {
  case GGUF_U8:
  case GGUF_BOOL: out->u = u8; break;
  case GGUF_I8: out->i = (int8_t)u8; break;
  case GGUF_U16: memcpy(&u16, p, 2); out->u = u16; break;
  case GGUF_I16: memcpy(&u16, p, 2); out->i = (int16_t)u16; break;
  case GGUF_U32: memcpy(&u32, p, 4); out->u = u32; break;
  case GGUF_I32: memcpy(&u32, p, 4); out->i = (int32_t)u32; break;
  case GGUF_U64: memcpy(&out->u, p, 8); break;
  case GGUF_I64: memcpy(&out->i, p, 8); break;
  case GGUF_F32: memcpy(&f32, p, 4); out->f = f32; break;
  case GGUF_F64: memcpy(&out->f, p, 8); break;
  default: return false;
  }
  return true;
}

bool gguf_array_float(const GgufValue *v, uint64_t i, double *out) {
  GgufValue x;
  if (!gguf_array_value(v, i, &x))
    return false;
  if (x.type == GGUF_BOOL) {
    *out = (double)x.u;
    return true;
  }
  return gguf_value_float(&x, out);
}

bool gguf_array_int(const GgufValue *v, uint64_t i, int64_t *out) {
  GgufValue x;
  return gguf_array_value(v, i, &x) && gguf_value_int(&x, out);
}

const char *gguf_array_string(const GgufValue *v, uint64_t i, size_t *len) {
  if (!v || v->type != GGUF_ARRAY || v->arr.elem != GGUF_STRING || i >= v->arr.n)
    return NULL;
  if (len)
    *len = v->arr.strs[i].len;
  return v->arr.strs[i].s;
}

/* ---- lookup and binding --------------------------------------------------------------- */

GgufTensor *gguf_tensor(Gguf *g, const char *name) {
  for (int i = 0; i < g->n; i++)
    if (strcmp(g->t[i].name, name) == 0)
      return &g->t[i];
  return NULL;
}

/* "f32[49152,576]", with the file's type when kiln converted it or keeps
 * blocks: "f32[49152,576] (Q8_0 in the file)", or in a list (paren false)
 * "f32[49152,576], Q8_0 in the file". */
static const char *tensor_str(const GgufTensor *t, bool paren, char *buf, size_t n) {
  char ty[96];
  type_str(&t->type, ty, sizeof ty);
  bool as_is = t->ggml_type == GGML_TYPE_F32 ||
               (!t->quantized && t->ggml_type != GGML_TYPE_F16 && t->ggml_type != GGML_TYPE_BF16);
  if (as_is)
    snprintf(buf, n, "%s", ty);
  else
    snprintf(buf, n, paren ? "%s (%s in the file)" : "%s, %s in the file", ty, t->type_name);
  return buf;
}

/* The file's tensors as the shared binding messages see them. */
static const char *tensor_name(const void *f, int i) { return ((const Gguf *)f)->t[i].name; }
static bool tensor_used(const void *f, int i) { return ((const Gguf *)f)->t[i].used; }
static const char *tensor_label(const void *f, int i, char *buf, size_t n) {
  return tensor_str(&((const Gguf *)f)->t[i], false, buf, n);
}

static WeightFile weight_file(const Gguf *g) {
  return (WeightFile){g->path, g->n, g, tensor_name, tensor_used, tensor_label};
}

GgufTensor *gguf_take(Gguf *g, const char *name, const Type *want, Diag *d) {
  char wt[96], gt[160];
  GgufTensor *t = gguf_tensor(g, name);
  if (!t) {
    WeightFile wf = weight_file(g);
    wf_missing(&wf, name, want, d);
    return NULL;
  }
  if (!t->readable) {
    diag_error(d, "%s: tensor '%s' is %s; kiln reads " GGUF_READABLE, g->path, name, t->type_name);
    return NULL;
  }
  if (!type_equal(&t->type, want)) {
    diag_error(d, "%s: tensor '%s' is %s; expected %s", g->path, name,
               tensor_str(t, true, gt, sizeof gt), type_str(want, wt, sizeof wt));
    return NULL;
  }
  t->used = true;
  return t;
}

bool gguf_check_all_used(const Gguf *g, Diag *d) {
  WeightFile wf = weight_file(g);
  return wf_check_all_used(&wf, d);
}

char *gguf_unused_list(const Gguf *g) {
  WeightFile wf = weight_file(g);
  return wf_unused_list(&wf);
}
