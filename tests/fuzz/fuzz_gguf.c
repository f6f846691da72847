/* fuzz_gguf.c — libFuzzer target: arbitrary bytes through the GGUF reader
 * (compiler/formats/gguf.c), and what it accepts through every accessor.
 *
 * The contract under test is STYLE.md's first kind of error: bad input ends
 * in a Diag naming the file and a false return, never a crash, a leak, an
 * out-of-bounds access or undefined behaviour (ASan and UBSan report
 * those). On success the result must be consistent: every metadata value
 * reads back through the typed accessors (nested arrays walked to the
 * end), every tensor's bytes lie inside the image or the arena and are
 * read in full, its kiln type is its ne reversed, names are unique, every
 * readable tensor binds to its own type and the rest are refused with a
 * message; any violation aborts, which the fuzzer reports. Build and run
 * with tests/fuzz/run_fuzz.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"

KILN_NORETURN static void fail(const char *what, const char *detail) {
  fprintf(stderr, "kiln fuzz: gguf: %s %s\n", what, detail ? detail : "");
  abort();
}

static volatile unsigned sink;

static void walk(const GgufValue *v, int depth) {
  if (depth > 8)
    fail("arrays nested deeper than the reader allows", NULL);
  int64_t i;
  double f;
  bool b;
  size_t len;
  switch (v->type) {
  case GGUF_STRING:
    if (!gguf_value_string(v, &len) || strlen(v->s.s) > len)
      fail("a string does not read back", NULL);
    sink += (unsigned)len;
    return;
  case GGUF_BOOL:
    if (!gguf_value_bool(v, &b) || v->u > 1)
      fail("a bool is not 0 or 1", NULL);
    return;
  case GGUF_ARRAY: break;
  default:
    if (!gguf_value_float(v, &f))
      fail("a number does not read as a float", NULL);
    if (v->type != GGUF_U64 && v->type != GGUF_F32 && v->type != GGUF_F64 && !gguf_value_int(v, &i))
      fail("an integer does not read as an int", NULL);
    return;
  }
  GgufType elem;
  uint64_t n;
  if (!gguf_value_array(v, &elem, &n) || elem >= GGUF_NTYPES)
    fail("an array does not read back", NULL);
  for (uint64_t k = 0; k < n; k++) {
    GgufValue item;
    if (!gguf_array_value(v, k, &item) || item.type != elem)
      fail("an array item does not read back", NULL);
    if (elem == GGUF_STRING && gguf_array_string(v, k, &len) != item.s.s)
      fail("gguf_array_string and gguf_array_value differ", NULL);
    walk(&item, depth + 1);
  }
  GgufValue past;
  if (gguf_array_value(v, n, &past))
    fail("an array reads past its end", NULL);
}

static void check(Gguf *g, const uint8_t *data, size_t size) {
  for (int i = 0; i < g->nkv; i++) {
    if (gguf_kv(g, g->kv[i].key) != &g->kv[i])
      fail("two entries share the key", g->kv[i].key);
    walk(&g->kv[i].v, 0);
  }
  for (int i = 0; i < g->n; i++) {
    GgufTensor *t = &g->t[i];
    if (gguf_tensor(g, t->name) != t)
      fail("two tensors share the name", t->name);
    if (t->n_dims < 0 || t->n_dims > 4 || t->type.rank != t->n_dims)
      fail("bad rank for", t->name);
    for (int k = 0; k < t->n_dims; k++)
      if (t->type.dims[k] != t->ne[t->n_dims - 1 - k])
        fail("type is not ne reversed for", t->name);
    const uint8_t *p = t->data;
    bool in_image = p >= data && p <= data + size;
    if (in_image && (size_t)(p - data) + t->bytes > size)
      fail("data past the end of the image for", t->name);
    if (!t->quantized && t->bytes != type_bytes(&t->type))
      fail("byte count does not match the type for", t->name);
    unsigned sum = 0;
    for (size_t k = 0; k < t->bytes; k++)
      sum += p[k];
    sink += sum;
    Diag d = {0};
    Type want = t->type;
    GgufTensor *got = gguf_take(g, t->name, &want, &d);
    if (t->readable != (got != NULL))
      fail("gguf_take disagrees with readable for", t->name);
    if (!got && strncmp(d.msg, "fuzz.gguf: ", 11) != 0)
      fail("a refusal without a message naming the file:", d.msg);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Arena *a = arena_new();
  Diag d = {0};
  Gguf g;
  if (gguf_parse(a, data, size, "fuzz.gguf", &g, &d)) {
    check(&g, data, size);
    free(gguf_unused_list(&g));
  } else if (!d.failed || strncmp(d.msg, "fuzz.gguf: ", 11) != 0)
    fail("a failure without a message naming the file:", d.msg);
  arena_free(a);
  return 0;
}
