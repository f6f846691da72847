/* npy.c — NumPy .npy files, and the one way kiln run, check and bench
 * read and write tensor files (.npy or TensorProto .pb, by extension).
 *
 * A .npy file is: the magic "\x93NUMPY", a version byte pair (1.0: a
 * 2-byte header length; 2.0 and 3.0: 4 bytes), a header that is a Python
 * dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a newline, then the elements, raw. This reader
 * takes only that dict (three keys, each once; strings, True/False and a
 * tuple of non-negative ints), bounds the header's length, checks the
 * shape's element count against MAX_NUMEL and the data's size against the
 * file's, and refuses big-endian, Fortran-ordered and other element types
 * with the reason, so a damaged or lying file is one error line. */
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "onnx.h"

#define NPY_MAX_HEADER 65536 /* a plain dtype and 8 dims need ~120 bytes */

/* The .npy descr of each kiln element type (byte order aside). */
static const struct {
  const char *code;
  DType dt;
} npy_types[] = {
    {"f4", DT_F32}, {"f8", DT_F64}, {"f2", DT_F16}, {"i8", DT_I64}, {"i4", DT_I32},
    {"i2", DT_I16}, {"i1", DT_I8},  {"u1", DT_U8},  {"u2", DT_U16}, {"u4", DT_U32},
    {"u8", DT_U64}, {"b1", DT_BOOL},
};

#define NPY_TYPE_LIST "<f4 <f8 <f2 <i8 <i4 <i2 |i1 |u1 <u2 <u4 <u8 |b1"

/* Name the file an error is about (unless an earlier error was first). */
static void name_file(Diag *d, const char *path) {
  if (!d->failed)
    d->file = path;
}

/* Record the first error of a read, naming the file. */
#define FAIL(...) (name_file(d, path), diag_error(d, __VA_ARGS__))

/* ---- the header's dict literal ------------------------------------------------ */

typedef struct Lex {
  const char *p, *end;
} Lex;

static void skip_space(Lex *x) {
  while (x->p < x->end && (*x->p == ' ' || *x->p == '\t' || *x->p == '\n' || *x->p == '\r'))
    x->p++;
}

/* skip blanks, then take c if it is next */
static bool take(Lex *x, char c) {
  skip_space(x);
  if (x->p < x->end && *x->p == c) {
    x->p++;
    return true;
  }
  return false;
}

/* A quoted string without escapes, at most cap-1 characters, into s. */
static bool lex_string(Lex *x, char *s, size_t cap) {
  skip_space(x);
  if (x->p >= x->end || (*x->p != '\'' && *x->p != '"'))
    return false;
  char q = *x->p++;
  size_t n = 0;
  for (; x->p < x->end && *x->p != q; x->p++) {
    if (*x->p == '\\' || n + 1 >= cap)
      return false;
    s[n++] = *x->p;
  }
  s[n] = 0;
  if (x->p >= x->end)
    return false;
  x->p++;
  return true;
}

static bool lex_word(Lex *x, const char *w) {
  skip_space(x);
  size_t n = strlen(w);
  if ((size_t)(x->end - x->p) < n || memcmp(x->p, w, n) != 0)
    return false;
  x->p += n;
  return true;
}

/* A non-negative decimal int, at most MAX_NUMEL (so no overflow). */
static bool lex_dim(Lex *x, int64_t *v) {
  skip_space(x);
  if (x->p >= x->end || *x->p < '0' || *x->p > '9')
    return false;
  *v = 0;
  for (; x->p < x->end && *x->p >= '0' && *x->p <= '9'; x->p++) {
    *v = *v * 10 + (*x->p - '0');
    if (*v > MAX_NUMEL)
      return false;
  }
  return true;
}

/* "(2, 3)", "(5,)" or "()": a Python tuple of ints, into t's rank and dims. */
static bool parse_shape(Lex *x, Type *t, const char *path, Diag *d) {
  const char *what = "'shape' is not a tuple of sizes; expected a tuple like (2, 3), (5,) or ()";
  if (!take(x, '('))
    return FAIL("%s", what);
  t->rank = 0;
  if (take(x, ')'))
    return true;
  for (;;) {
    int64_t v;
    if (t->rank == MAX_RANK)
      return FAIL("'shape' has more than %d dims; expected at most %d", MAX_RANK, MAX_RANK);
    if (!lex_dim(x, &v))
      return FAIL("'shape' dim %d is not a size from 0 to %lld; expected a tuple of sizes like (2, 3)",
                  t->rank, (long long)MAX_NUMEL);
    t->dims[t->rank++] = v;
    bool comma = take(x, ',');
    if (take(x, ')'))
      return comma || t->rank > 1 ? true : FAIL("%s", what); /* "(5)" is an int in Python */
    if (!comma)
      return FAIL("%s", what);
  }
}

/* descr ("<f4", "|u1", ...) into *dt. */
static bool parse_descr(const char *s, DType *dt, const char *path, Diag *d) {
  char order = s[0];
  for (int i = 0; order && i < KILN_COUNT(npy_types); i++) {
    if (strcmp(s + 1, npy_types[i].code) != 0)
      continue;
    bool one_byte = dt_size(npy_types[i].dt) == 1;
    if (order == '<' || (one_byte && (order == '|' || order == '>' || order == '=')))
      return *dt = npy_types[i].dt, true;
    if (order == '>')
      return FAIL("element type '%s' is big-endian; expected little-endian '<%s' (numpy: "
                  "a.astype('<%s'))", s, s + 1, s + 1);
  }
  return FAIL("element type '%s' is not one kiln reads; expected one of %s", s, NPY_TYPE_LIST);
}

/* The value of one key of the header dict; seen[] catches repeats. */
static bool parse_entry(Lex *x, const char *key, Tensor *t, bool seen[3], const char *path, Diag *d) {
  static const char *const keys[] = {"descr", "fortran_order", "shape"};
  int k = 0;
  while (k < 3 && strcmp(key, keys[k]) != 0)
    k++;
  if (k == 3)
    return FAIL("header has the key '%s'; expected only 'descr', 'fortran_order' and 'shape'", key);
  if (seen[k])
    return FAIL("header has the key '%s' twice; expected it once", key);
  seen[k] = true;
  if (k == 0) {
    char s[32];
    if (!lex_string(x, s, sizeof s))
      return FAIL("'descr' is not a short string (a structured or subarray dtype?); expected an "
                  "element type such as '<f4'");
    return parse_descr(s, &t->type.dt, path, d);
  }
  if (k == 1) {
    if (lex_word(x, "False"))
      return true;
    if (lex_word(x, "True"))
      return FAIL("fortran_order is True (column-major); expected C order (numpy: "
                  "np.save(f, np.ascontiguousarray(a)))");
    return FAIL("'fortran_order' is not True or False; expected False");
  }
  return parse_shape(x, &t->type, path, d);
}

/* The header text [p, end) into t's type. */
static bool parse_header(const char *p, const char *end, Tensor *t, const char *path, Diag *d) {
  for (const char *c = p; c < end; c++)
    if ((unsigned char)*c < 0x20 && *c != '\n' && *c != '\t' && *c != '\r')
      return FAIL("header has a control byte 0x%02x at offset %d; expected a Python dict literal",
                  (unsigned char)*c, (int)(c - p));
  Lex x = {p, end};
  bool seen[3] = {false, false, false};
  if (!take(&x, '{'))
    return FAIL("header does not start with '{'; expected a Python dict literal");
  while (!take(&x, '}')) {
    char key[32];
    if (!lex_string(&x, key, sizeof key) || !take(&x, ':'))
      return FAIL("header is not a dict of quoted keys; expected {'descr': ..., 'fortran_order': "
                  "..., 'shape': ...}");
    if (!parse_entry(&x, key, t, seen, path, d))
      return false;
    if (!take(&x, ',') && !(skip_space(&x), x.p < x.end && *x.p == '}'))
      return FAIL("header has no ',' or '}' after '%s'; expected a Python dict literal", key);
  }
  skip_space(&x);
  if (x.p != x.end)
    return FAIL("header has text after its closing '}'; expected only padding");
  static const char *const names[] = {"descr", "fortran_order", "shape"};
  for (int k = 0; k < 3; k++)
    if (!seen[k])
      return FAIL("header has no '%s'; expected 'descr', 'fortran_order' and 'shape'", names[k]);
  return true;
}

/* ---- reading and writing ------------------------------------------------------ */

static uint32_t le16(const unsigned char *b) { return (uint32_t)b[0] | (uint32_t)b[1] << 8; }
static uint32_t le32(const unsigned char *b) { return le16(b) | le16(b + 2) << 16; }

bool npy_parse(Arena *a, const void *bytes, size_t len, const char *path, Tensor *t, Diag *d) {
  const unsigned char *b = bytes;
  memset(t, 0, sizeof *t);
  if (len < 6 || memcmp(b, "\x93NUMPY", 6) != 0)
    return FAIL("no .npy magic (\\x93NUMPY) at the start; expected a file written by numpy.save");
  if (len < 10)
    return FAIL("the file ends inside its preamble (%zu bytes); expected at least 10", len);
  int major = b[6], minor = b[7];
  if ((major < 1 || major > 3) || minor != 0)
    return FAIL(".npy format version %d.%d; expected 1.0, 2.0 or 3.0", major, minor);
  size_t pre = major == 1 ? 10 : 12;
  if (len < pre)
    return FAIL("the file ends inside its preamble (%zu bytes); expected at least %zu", len, pre);
  uint32_t hl = major == 1 ? le16(b + 8) : le32(b + 8);
  if (hl > NPY_MAX_HEADER)
    return FAIL("header length %u; expected at most %d bytes", (unsigned)hl, NPY_MAX_HEADER);
  if (hl > len - pre)
    return FAIL("header length %u runs past the end of the file (%zu bytes); expected the whole "
                "header in the file (truncated?)", (unsigned)hl, len);
  if (!parse_header((const char *)b + pre, (const char *)b + pre + hl, t, path, d))
    return false;
  if (!type_size_ok(&t->type))
    return FAIL("'shape' has more elements than kiln's limit; expected at most %lld",
                (long long)MAX_NUMEL);
  size_t want = type_bytes(&t->type), have = len - pre - hl;
  char ts[160];
  if (have != want)
    return FAIL("%zu bytes of data after the header; expected %zu for %s (truncated, or a "
                "shape that does not match the data?)", have, want, type_str(&t->type, ts, sizeof ts));
  t->data = arena_alloc(a, want ? want : 1);
  if (want)
    memcpy(t->data, b + pre + hl, want); /* little-endian host assumed, as for .pb */
  if (t->type.dt == DT_BOOL)
    for (size_t i = 0; i < want; i++)
      if (((unsigned char *)t->data)[i] > 1)
        return FAIL("bool element %zu is %u; expected 0 or 1", i, ((unsigned char *)t->data)[i]);
  return true;
}

bool npy_serialize(const Tensor *t, Buf *out, Diag *d) {
  const char *code = NULL;
  for (int i = 0; i < KILN_COUNT(npy_types); i++)
    if (npy_types[i].dt == t->type.dt)
      code = npy_types[i].code;
  if (!code)
    return diag_error(d, "the tensor is %s, which .npy cannot hold (numpy has no such type); "
                      "expected --out-format=pb", dt_name(t->type.dt));
  Buf h = {0};
  buf_printf(&h, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
             dt_size(t->type.dt) == 1 ? '|' : '<', code);
  for (int i = 0; i < t->type.rank; i++)
    buf_printf(&h, "%s%lld", i ? ", " : "", (long long)t->type.dims[i]);
  buf_puts(&h, t->type.rank == 1 ? ",), }" : "), }");
  while ((10 + h.len + 1) % 64)
    buf_put(&h, " ", 1);
  buf_put(&h, "\n", 1);
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(h.len & 0xff),
                           (unsigned char)(h.len >> 8)};
  buf_put(out, (const char *)pre, sizeof pre);
  buf_put(out, h.s, h.len);
  buf_free(&h);
  return true;
}

bool tensor_file_is_npy(const char *path) {
  size_t n = strlen(path);
  return n >= 4 && strcmp(path + n - 4, ".npy") == 0;
}

bool tensor_file_read(Arena *a, const char *path, Tensor *t, Diag *d) {
  if (!tensor_file_is_npy(path))
    return onnx_read_tensor(a, path, t, NULL, d);
  size_t len;
  Diag rd = {0};
  unsigned char *bytes = read_file(path, &len, &rd);
  if (!bytes)
    return FAIL("%s", rd.msg);
  bool ok = npy_parse(a, bytes, len, path, t, d);
  free(bytes);
  return ok;
}

bool tensor_file_write(const char *path, const Tensor *t, const char *name, Diag *d) {
  if (!tensor_file_is_npy(path))
    return onnx_write_tensor(path, t, name, d);
  Buf b = {0};
  bool first = !d->failed, ok = npy_serialize(t, &b, d);
  if (!ok && first) /* a write error names the path itself */
    d->file = path;
  if (ok) {
    FilePart parts[2] = {{b.s, b.len}, {t->data, type_bytes(&t->type)}};
    ok = write_file_parts_atomic(path, parts, 2, d);
  }
  buf_free(&b);
  return ok;
}

/* ---- --input NAME=FILE ------------------------------------------------------- */

bool tensor_file_fits_input(const char *path, const Tensor *t, const Value *v, Diag *d) {
  bool fits = t->type.dt == v->type.dt && (v->type.rank < 0 || t->type.rank == v->type.rank);
  for (int i = 0; fits && i < v->type.rank; i++)
    fits = v->type.dims[i] < 0 || v->type.dims[i] == t->type.dims[i];
  char x[160], y[320];
  if (!fits)
    return FAIL("%s for input '%s'; expected %s", type_str(&t->type, x, sizeof x), v->name,
                v->type.rank < 0 ? dt_name(v->type.dt) : value_type_str(v, y, sizeof y));
  return true;
}

bool tensor_file_read_input(Arena *a, const Graph *g, const char *flag, Tensor *in, bool *given,
                            Diag *d) {
  const char *eq = strchr(flag, '=');
  if (!eq || eq == flag || !eq[1])
    return diag_error(d, "--input %s: expected NAME=FILE (FILE a .npy or a TensorProto .pb)", flag);
  const char *name = arena_printf(a, "%.*s", (int)(eq - flag), flag), *path = eq + 1;
  int idx = -1;
  for (int i = 0; i < g->ninputs; i++)
    if (!strcmp(g->vals[g->inputs[i]].name, name))
      idx = i;
  if (idx < 0) {
    const char **names = arena_alloc(a, sizeof(char *) * (size_t)(g->ninputs + 1));
    Buf list = {0};
    for (int i = 0; i < g->ninputs; i++) {
      names[i] = g->vals[g->inputs[i]].name;
      buf_printf(&list, "%s'%s'", i ? ", " : "", names[i]);
    }
    const char *near = closest_name(name, names, g->ninputs);
    diag_error(d, "--input %s: the model has no input of that name%s%s%s; expected one of %s", name,
               near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "",
               list.len ? list.s : "(none: the model has no inputs)");
    buf_free(&list);
    return false;
  }
  if (given[idx])
    return diag_error(d, "--input %s: given twice; expected one file per input", name);
  if (!tensor_file_read(a, path, &in[idx], d) || !tensor_file_fits_input(path, &in[idx], gval(g, g->inputs[idx]), d))
    return false;
  given[idx] = true;
  return true;
}
