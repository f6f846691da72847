/* safetensors.c — the .safetensors reader and writer (see safetensors.h).
 *
 * Reading goes in three steps: the 8-byte header length; the JSON header,
 * which jansson turns into a tree whose every field is then checked against
 * the format; and the data area, whose tensor byte ranges must tile it
 * exactly before each tensor is copied (F16/BF16 converted to F32) into
 * aligned arena memory. Every message starts with the file's path and names
 * the tensor it is about. */
#include "safetensors.h"
#include "weight_files.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c copies tensor data as the file lays it out: it needs a little-endian host"
#endif

/* The reference implementation's limit: a larger header is not a weights file. */
#define ST_MAX_HEADER ((uint64_t)100000000)

/* The dtypes kiln reads, as the format names them, and what kiln keeps them as. */
static const struct {
  const char *name;
  DType file_dt, kiln_dt;
} st_dtypes[] = {
    {"F64", DT_F64, DT_F64}, {"F32", DT_F32, DT_F32}, {"F16", DT_F16, DT_F32},
    {"BF16", DT_BF16, DT_F32}, {"I64", DT_I64, DT_I64}, {"I32", DT_I32, DT_I32},
    {"I16", DT_I16, DT_I16}, {"I8", DT_I8, DT_I8}, {"U64", DT_U64, DT_U64},
    {"U32", DT_U32, DT_U32}, {"U16", DT_U16, DT_U16}, {"U8", DT_U8, DT_U8},
    {"BOOL", DT_BOOL, DT_BOOL},
};
#define ST_DTYPE_LIST "F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8 or BOOL"
#define ST_FIELDS "\"dtype\", \"shape\" and \"data_offsets\""

typedef struct Reader {
  Arena *a;
  const char *path;
  const unsigned char *data; /* the data area: the bytes after the header */
  uint64_t data_len;
  Diag *d;
} Reader;

/* One tensor's byte range in the data area, for the tiling check. */
typedef struct Span {
  uint64_t begin, end;
  int tensor;
} Span;

/* "PATH: tensor 'NAME': what" (or "PATH: what" for the file as a whole). */
KILN_PRINTF(3, 4) static bool st_error(Reader *r, const char *tensor, const char *fmt, ...) {
  char what[sizeof r->d->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (tensor)
    return diag_error(r->d, "%s: tensor '%s': %s", r->path, tensor, what);
  return diag_error(r->d, "%s: %s", r->path, what);
}

static int st_dtype_index(const char *name) {
  for (int i = 0; i < KILN_COUNT(st_dtypes); i++)
    if (strcmp(st_dtypes[i].name, name) == 0)
      return i;
  return -1;
}

static const char *st_dtype_name(DType file_dt) {
  for (int i = 0; i < KILN_COUNT(st_dtypes); i++)
    if (st_dtypes[i].file_dt == file_dt)
      return st_dtypes[i].name;
  return NULL;
}

/* A JSON value in a message: numbers as themselves, other values by kind. */
static const char *json_describe(const json_t *j, char *buf, size_t n) {
  switch (json_typeof(j)) {
  case JSON_INTEGER: snprintf(buf, n, "%lld", (long long)json_integer_value(j)); return buf;
  case JSON_REAL: /* "1000.0", so a real never reads as an integer */
    snprintf(buf, n, "%.17g%s", json_real_value(j),
             fmod(json_real_value(j), 1.0) == 0 && fabs(json_real_value(j)) < 1e17 ? ".0" : "");
    return buf;
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "an array";
  case JSON_STRING: return "a string";
  case JSON_TRUE:
  case JSON_FALSE: return "a boolean";
  default: return "null";
  }
}

/* "[2,3]" */
static const char *shape_str(const Type *t, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < t->rank && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "", (long long)t->dims[i]);
  if (k < n)
    snprintf(buf + k, n - k, "]");
  return buf;
}

/* ---- the header ----------------------------------------------------------- */

/* The key a duplicate-key error stops after: jansson's error position is
 * just past its closing quote; the string is decoded by jansson itself. */
static const char *duplicate_key(Reader *r, const char *header, int position) {
  if (position < 2 || header[position - 1] != '"')
    return NULL;
  for (int i = position - 2; i >= 0; i--) {
    if (header[i] != '"')
      continue;
    int slashes = 0;
    while (i - 1 - slashes >= 0 && header[i - 1 - slashes] == '\\')
      slashes++;
    if (slashes % 2) /* an escaped quote inside the key */
      continue;
    json_t *s = json_loadb(header + i, (size_t)(position - i), JSON_DECODE_ANY, NULL);
    const char *key = json_is_string(s) ? arena_strdup(r->a, json_string_value(s)) : NULL;
    json_decref(s);
    return key;
  }
  return NULL;
}

static bool json_syntax_error(Reader *r, const char *header, const json_error_t *e) {
  if (json_error_code(e) == json_error_duplicate_key) {
    const char *key = duplicate_key(r, header, e->position);
    if (key)
      return st_error(r, NULL,
                      "the header names '%s' twice in one object (line %d, column %d); expected "
                      "each tensor name and field once",
                      key, e->line, e->column);
  }
  return st_error(r, NULL, "the header is not valid JSON: %s at line %d, column %d", e->text,
                  e->line, e->column);
}

static bool read_size(Reader *r, const char *tensor, const json_t *j, const char *what,
                      int64_t *out) {
  char buf[64];
  if (!json_is_integer(j) || json_integer_value(j) < 0)
    return st_error(r, tensor, "%s is %s; expected a non-negative integer", what,
                    json_describe(j, buf, sizeof buf));
  *out = json_integer_value(j);
  return true;
}

static bool parse_dtype(Reader *r, const char *tensor, const json_t *j, int *dtype) {
  char buf[64];
  if (!json_is_string(j))
    return st_error(r, tensor, "\"dtype\" is %s; expected a string such as \"F32\"",
                    json_describe(j, buf, sizeof buf));
  *dtype = st_dtype_index(json_string_value(j));
  if (*dtype < 0)
    return st_error(r, tensor, "dtype '%s' is not supported; expected " ST_DTYPE_LIST,
                    json_string_value(j));
  return true;
}

static bool parse_shape(Reader *r, const char *tensor, const json_t *j, Type *t) {
  char buf[64];
  if (!json_is_array(j))
    return st_error(r, tensor, "\"shape\" is %s; expected an array of non-negative integers",
                    json_describe(j, buf, sizeof buf));
  size_t rank = json_array_size(j);
  if (rank > MAX_RANK)
    return st_error(r, tensor, "shape has rank %zu; expected at most %d", rank, MAX_RANK);
  t->rank = (int)rank;
  for (size_t i = 0; i < rank; i++) {
    char what[32];
    snprintf(what, sizeof what, "shape[%zu]", i);
    if (!read_size(r, tensor, json_array_get(j, i), what, &t->dims[i]))
      return false;
  }
  if (!type_size_ok(t))
    return st_error(r, tensor, "shape %s has more than %lld elements; expected a smaller tensor",
                    shape_str(t, buf, sizeof buf), (long long)MAX_NUMEL);
  return true;
}

static bool parse_offsets(Reader *r, const char *tensor, const json_t *j, Span *s) {
  char buf[64];
  if (!json_is_array(j) || json_array_size(j) != 2)
    return st_error(r, tensor, "\"data_offsets\" is %s; expected [begin, end]",
                    json_is_array(j) ? "an array of other than 2 items"
                                     : json_describe(j, buf, sizeof buf));
  int64_t begin, end;
  if (!read_size(r, tensor, json_array_get(j, 0), "data_offsets[0]", &begin) ||
      !read_size(r, tensor, json_array_get(j, 1), "data_offsets[1]", &end))
    return false;
  if (begin > end)
    return st_error(r, tensor, "data_offsets [%lld, %lld] end before they begin",
                    (long long)begin, (long long)end);
  if ((uint64_t)end > r->data_len)
    return st_error(r, tensor,
                    "data_offsets [%lld, %lld] go past the end of the data area (%llu bytes)",
                    (long long)begin, (long long)end, (unsigned long long)r->data_len);
  s->begin = (uint64_t)begin;
  s->end = (uint64_t)end;
  return true;
}

/* The three fields, present, and no others. */
static bool check_fields(Reader *r, const char *tensor, json_t *info) {
  char buf[64];
  if (!json_is_object(info))
    return st_error(r, tensor, "is %s; expected an object with " ST_FIELDS,
                    json_describe(info, buf, sizeof buf));
  static const char *const fields[] = {"dtype", "shape", "data_offsets"};
  for (int i = 0; i < KILN_COUNT(fields); i++)
    if (!json_object_get(info, fields[i]))
      return st_error(r, tensor, "has no \"%s\"; expected " ST_FIELDS, fields[i]);
  if (json_object_size(info) != KILN_COUNT(fields)) {
    const char *key;
    json_t *v;
    json_object_foreach(info, key, v) {
      if (strcmp(key, "dtype") && strcmp(key, "shape") && strcmp(key, "data_offsets"))
        return st_error(r, tensor, "unknown field '%s'; expected only " ST_FIELDS, key);
    }
  }
  return true;
}

/* One tensor's entry: its type, and its byte range (sized for that type). */
static bool parse_tensor(Reader *r, const char *name, json_t *info, StTensor *t, int *dtype,
                         Span *s) {
  if (!check_fields(r, name, info) ||
      !parse_dtype(r, name, json_object_get(info, "dtype"), dtype) ||
      !parse_shape(r, name, json_object_get(info, "shape"), &t->type) ||
      !parse_offsets(r, name, json_object_get(info, "data_offsets"), s))
    return false;
  DType file_dt = st_dtypes[*dtype].file_dt;
  t->name = arena_strdup(r->a, name);
  t->file_dtype = st_dtypes[*dtype].name;
  t->type.dt = st_dtypes[*dtype].kiln_dt;
  uint64_t want = (uint64_t)type_numel(&t->type) * dt_size(file_dt);
  if (s->end - s->begin != want) {
    char shape[256];
    return st_error(r, name, "data_offsets [%llu, %llu] hold %llu bytes; expected %llu (%s %s)",
                    (unsigned long long)s->begin, (unsigned long long)s->end,
                    (unsigned long long)(s->end - s->begin), (unsigned long long)want,
                    t->file_dtype, shape_str(&t->type, shape, sizeof shape));
  }
  return true;
}

static bool parse_metadata(Reader *r, json_t *m, SafeTensors *st) {
  char buf[64];
  if (!json_is_object(m))
    return st_error(r, NULL, "\"__metadata__\" is %s; expected an object of strings",
                    json_describe(m, buf, sizeof buf));
  st->meta = arena_alloc(r->a, json_object_size(m) * sizeof *st->meta);
  const char *key;
  json_t *v;
  json_object_foreach(m, key, v) {
    if (!json_is_string(v))
      return st_error(r, NULL, "\"__metadata__\" entry '%s' is %s; expected a string", key,
                      json_describe(v, buf, sizeof buf));
    st->meta[st->nmeta++] =
        (StMeta){arena_strdup(r->a, key), arena_strdup(r->a, json_string_value(v))};
  }
  return true;
}

/* ---- the data area -------------------------------------------------------- */

static int span_cmp(const void *pa, const void *pb) {
  const Span *a = pa, *b = pb;
  if (a->begin != b->begin)
    return a->begin < b->begin ? -1 : 1;
  if (a->end != b->end)
    return a->end < b->end ? -1 : 1;
  return a->tensor - b->tensor;
}

/* The format requires the byte ranges to cover the data area exactly:
 * sorted by start, each begins where the one before ended. */
static bool check_tiling(Reader *r, const SafeTensors *st, Span *s, int n) {
  qsort(s, (size_t)n, sizeof *s, span_cmp);
  uint64_t at = 0;
  for (int i = 0; i < n; i++) {
    const char *name = st->t[s[i].tensor].name;
    if (s[i].begin > at)
      return st_error(r, name,
                      "data_offsets [%llu, %llu] leave bytes [%llu, %llu) of the data area to no "
                      "tensor; expected the tensors to cover it without holes",
                      (unsigned long long)s[i].begin, (unsigned long long)s[i].end,
                      (unsigned long long)at, (unsigned long long)s[i].begin);
    if (s[i].begin < at)
      return st_error(r, name,
                      "data_offsets [%llu, %llu] overlap those of tensor '%s', [%llu, %llu]; "
                      "expected disjoint byte ranges",
                      (unsigned long long)s[i].begin, (unsigned long long)s[i].end,
                      st->t[s[i - 1].tensor].name, (unsigned long long)s[i - 1].begin,
                      (unsigned long long)s[i - 1].end);
    at = s[i].end;
  }
  if (at != r->data_len)
    return st_error(r, NULL,
                    "the data area has %llu bytes after the last tensor's end (%llu); expected "
                    "the tensors to cover it exactly",
                    (unsigned long long)(r->data_len - at), (unsigned long long)at);
  return true;
}

/* Copy tensor t's bytes at offset begin into aligned arena memory,
 * converting F16/BF16 to F32 and checking that BOOLs are 0 or 1. */
static bool copy_data(Reader *r, StTensor *t, DType file_dt, uint64_t begin) {
  const unsigned char *src = r->data + begin;
  int64_t numel = type_numel(&t->type);
  t->bytes = type_bytes(&t->type);
  void *dst = arena_alloc(r->a, t->bytes);
  t->data = dst;
  if (file_dt == DT_F16 || file_dt == DT_BF16) {
    for (int64_t i = 0; i < numel; i++) {
      uint16_t h;
      memcpy(&h, src + 2 * i, sizeof h);
      ((float *)dst)[i] = (float)half_to_double(file_dt, h); /* exact */
    }
    return true;
  }
  if (file_dt == DT_BOOL)
    for (int64_t i = 0; i < numel; i++)
      if (src[i] > 1)
        return st_error(r, t->name, "BOOL element %lld is %u; expected 0 or 1", (long long)i,
                        src[i]);
  if (t->bytes)
    memcpy(dst, src, t->bytes);
  return true;
}

static bool parse_tensors(Reader *r, json_t *root, SafeTensors *st) {
  char buf[64];
  if (!json_is_object(root))
    return st_error(r, NULL, "the header is %s; expected a JSON object of tensors",
                    json_describe(root, buf, sizeof buf));
  size_t cap = json_object_size(root);
  st->t = arena_alloc(r->a, cap * sizeof *st->t);
  Span *spans = arena_alloc(r->a, cap * sizeof *spans);
  int *dtypes = arena_alloc(r->a, cap * sizeof *dtypes);
  const char *key;
  json_t *v;
  json_object_foreach(root, key, v) {
    if (strcmp(key, "__metadata__") == 0) {
      if (!parse_metadata(r, v, st))
        return false;
      continue;
    }
    spans[st->n].tensor = st->n;
    if (!parse_tensor(r, key, v, &st->t[st->n], &dtypes[st->n], &spans[st->n]))
      return false;
    st->n++;
  }
  uint64_t *begins = arena_alloc(r->a, cap * sizeof *begins);
  for (int i = 0; i < st->n; i++)
    begins[spans[i].tensor] = spans[i].begin;
  if (!check_tiling(r, st, spans, st->n))
    return false;
  for (int i = 0; i < st->n; i++)
    if (!copy_data(r, &st->t[i], st_dtypes[dtypes[i]].file_dt, begins[i]))
      return false;
  return true;
}

/* The 8-byte length and the JSON it announces; the data area follows. */
bool safetensors_parse(Arena *a, const void *bytes, size_t len, const char *path,
                       SafeTensors *st, Diag *d) {
  memset(st, 0, sizeof *st);
  st->path = arena_strdup(a, path);
  Reader r = {.a = a, .path = st->path, .d = d};
  const unsigned char *b = bytes;
  if (len < 8)
    return st_error(&r, NULL, "the file is %zu bytes; expected at least 8 (the header length)",
                    len);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--)
    n = n << 8 | b[i];
  if (n > ST_MAX_HEADER)
    return st_error(&r, NULL,
                    "header length %llu; expected at most %llu bytes (is it a safetensors file?)",
                    (unsigned long long)n, (unsigned long long)ST_MAX_HEADER);
  if (n > len - 8)
    return st_error(&r, NULL, "header length %llu is more than the %zu bytes after it",
                    (unsigned long long)n, len - 8);
  const unsigned char *nul = memchr(b + 8, 0, (size_t)n); /* the JSON parser would stop there */
  if (nul)
    return st_error(&r, NULL, "the header holds a NUL byte at offset %zu of its %llu; expected JSON text "
                    "(padded with spaces, if at all)", (size_t)(nul - b - 8), (unsigned long long)n);
  r.data = b + 8 + n;
  r.data_len = len - 8 - n;
  json_error_t e;
  json_t *root = json_loadb((const char *)b + 8, (size_t)n,
                            JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &e);
  if (!root) {
    /* the header is not NUL-terminated: give duplicate_key a copy that is */
    char *header = arena_alloc(a, (size_t)n + 1);
    memcpy(header, b + 8, (size_t)n);
    return json_syntax_error(&r, header, &e);
  }
  bool ok = parse_tensors(&r, root, st);
  json_decref(root);
  return ok;
}

bool safetensors_load(Arena *a, const char *path, SafeTensors *st, Diag *d) {
  size_t len;
  unsigned char *bytes = read_file(path, &len, d);
  if (!bytes)
    return false;
  bool ok = safetensors_parse(a, bytes, len, path, st, d);
  free(bytes);
  return ok;
}

/* ---- lookup and binding --------------------------------------------------- */

StTensor *safetensors_find(SafeTensors *st, const char *name) {
  for (int i = 0; i < st->n; i++)
    if (strcmp(st->t[i].name, name) == 0)
      return &st->t[i];
  return NULL;
}

const char *safetensors_meta(const SafeTensors *st, const char *key) {
  for (int i = 0; i < st->nmeta; i++)
    if (strcmp(st->meta[i].key, key) == 0)
      return st->meta[i].value;
  return NULL;
}

/* The file's tensors as the shared binding messages see them. */
static const char *tensor_name(const void *f, int i) { return ((const SafeTensors *)f)->t[i].name; }
static bool tensor_used(const void *f, int i) { return ((const SafeTensors *)f)->t[i].used; }
static const char *tensor_label(const void *f, int i, char *buf, size_t n) {
  return type_str(&((const SafeTensors *)f)->t[i].type, buf, n);
}

static WeightFile weight_file(const SafeTensors *st) {
  return (WeightFile){st->path, st->n, st, tensor_name, tensor_used, tensor_label};
}

StTensor *safetensors_take(SafeTensors *st, const char *name, const Type *want, Diag *d) {
  char wt[96], gt[96];
  StTensor *t = safetensors_find(st, name);
  if (!t) {
    WeightFile wf = weight_file(st);
    wf_missing(&wf, name, want, d);
    return NULL;
  }
  if (!type_equal(&t->type, want)) {
    bool converted = strcmp(t->file_dtype, st_dtype_name(t->type.dt)) != 0;
    diag_error(d, "%s: tensor '%s' is %s%s%s%s; expected %s", st->path, name,
               type_str(&t->type, gt, sizeof gt), converted ? " (" : "",
               converted ? t->file_dtype : "", converted ? " in the file)" : "",
               type_str(want, wt, sizeof wt));
    return NULL;
  }
  t->used = true;
  return t;
}

bool safetensors_check_all_used(const SafeTensors *st, Diag *d) {
  WeightFile wf = weight_file(st);
  return wf_check_all_used(&wf, d);
}

char *safetensors_unused_list(const SafeTensors *st) {
  WeightFile wf = weight_file(st);
  return wf_unused_list(&wf);
}

/* ---- writing -------------------------------------------------------------- */

static json_t *tensor_entry(const StTensor *t, const char *dtype, uint64_t begin) {
  json_t *shape = json_array();
  for (int i = 0; i < t->type.rank; i++)
    json_array_append_new(shape, json_integer(t->type.dims[i]));
  return json_pack("{s:s, s:o, s:[I, I]}", "dtype", dtype, "shape", shape, "data_offsets",
                   (json_int_t)begin, (json_int_t)(begin + t->bytes));
}

/* Why tensor t cannot be written, or NULL. */
static const char *unwritable(const StTensor *t, json_t *root) {
  if (!t->name || strcmp(t->name, "__metadata__") == 0)
    return "has no name or is named \"__metadata__\"";
  if (json_object_get(root, t->name))
    return "appears twice";
  if (!st_dtype_name(t->type.dt))
    return "has a dtype the format cannot hold";
  if (t->type.rank < 0 || t->type.rank > MAX_RANK || !type_size_ok(&t->type))
    return "has a bad shape";
  if (t->bytes != type_numel(&t->type) * dt_size(t->type.dt) || (t->bytes && !t->data))
    return "has a byte count that does not match its shape";
  return NULL;
}

static json_t *metadata_object(const StMeta *meta, int nmeta) {
  json_t *m = json_object();
  for (int i = 0; i < nmeta && m; i++) {
    json_t *v = meta[i].value ? json_string(meta[i].value) : NULL;
    if (!meta[i].key || !v || json_object_set_new(m, meta[i].key, v) != 0) {
      json_decref(m);
      m = NULL;
    }
  }
  return m;
}

/* The header as a JSON object, "__metadata__" first; NULL + d on bad input. */
static json_t *header_json(const StTensor *t, int n, const StMeta *meta, int nmeta, Diag *d) {
  json_t *root = json_object();
  if (nmeta) {
    json_t *m = metadata_object(meta, nmeta);
    if (!m || json_object_set_new(root, "__metadata__", m) != 0) {
      json_decref(root);
      diag_error(d, "safetensors: metadata keys and values must be UTF-8 strings");
      return NULL;
    }
  }
  uint64_t offset = 0;
  for (int i = 0; i < n; i++) {
    const char *why = unwritable(&t[i], root);
    json_t *entry = why ? NULL : tensor_entry(&t[i], st_dtype_name(t[i].type.dt), offset);
    if (!why && (!entry || json_object_set_new(root, t[i].name, entry) != 0))
      why = "has a name that is not UTF-8";
    if (why) {
      json_decref(root);
      diag_error(d, "safetensors: tensor '%s' %s", t[i].name ? t[i].name : "?", why);
      return NULL;
    }
    offset += t[i].bytes;
  }
  return root;
}

bool safetensors_serialize(const StTensor *t, int n, const StMeta *meta, int nmeta, Buf *out,
                           Diag *d) {
  json_t *root = header_json(t, n, meta, nmeta, d);
  if (!root)
    return false;
  char *text = json_dumps(root, JSON_COMPACT);
  json_decref(root);
  if (!text)
    return diag_error(d, "safetensors: out of memory writing the header");
  size_t len = strlen(text), padded = (len + 7) & ~(size_t)7; /* data starts 8-aligned */
  unsigned char n8[8];
  for (int i = 0; i < 8; i++)
    n8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
  buf_put(out, (const char *)n8, 8);
  buf_put(out, text, len);
  buf_put(out, "        ", padded - len);
  free(text);
  for (int i = 0; i < n; i++)
    if (t[i].bytes)
      buf_put(out, t[i].data, t[i].bytes);
  return true;
}

bool safetensors_write(const char *path, const StTensor *t, int n, const StMeta *meta,
                       int nmeta, Diag *d) {
  Buf b = {0};
  bool ok = safetensors_serialize(t, n, meta, nmeta, &b, d) &&
            write_file_atomic(path, b.s ? b.s : "", b.len, d);
  buf_free(&b);
  return ok;
}
