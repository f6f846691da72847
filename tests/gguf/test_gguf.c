/* test_gguf.c — tests of the GGUF reader (compiler/formats/gguf.c) on the fixture
 * tools/make_gguf_fixture.py writes with the PyPI gguf package's GGUFWriter
 * (independently of kiln), and on the real SmolLM2-135M file when given.
 *
 * usage: test_gguf DIR [REAL.gguf]
 *   DIR holds tiny_llama.gguf, tiny_llama.json (the writer's view: names,
 *   ggml types, ne, first/last values and sums), q6k.gguf and q6k.json
 *   (a Q6_K tensor, and BF16, I32 and F64 ones with their values), and
 *   kquant.gguf (tools/make_kquant_gguf.py: Q4_K, Q5_K, Q6_K, Q5_0, Q5_1 and a Q2_K).
 *
 * Checks: every tensor's type name, ne, kiln type (ne reversed), values
 * (F32 exact, F16 widened exactly, the block types dequantized here from
 * the raw blocks and compared with the gguf package's dequantization), the
 * 16-byte alignment of data; metadata of every value type through the typed
 * accessors (arrays of strings, numbers, nested arrays); binding by name
 * (gguf_take: missing, wrong shape, Q2_K refused by name; Q6_K kept as blocks; BF16, I32, F64 read), the unused list and
 * --strict-weights' check; the Lua frontend's LuaOptions.bound_gguf. With REAL.gguf: 272 tensors, the llama.*
 * hyperparameters, the tokenizer arrays, token_embd Q8_0 [49152,576]; a
 * missing REAL file is skipped with a note. Prints "N passed, N failed";
 * exit status 1 on any failure. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/gguf.h"
#include "lua/lua_frontend.h"

static int passed, failed;
#define CHECK(c) check((c), #c, __LINE__, "")
#define CHECK_AT(c, what) check((c), #c, __LINE__, (what))

static bool check(bool ok, const char *expr, int line, const char *what) {
  if (ok)
    passed++;
  else {
    failed++;
    fprintf(stderr, "%s:%d: CHECK(%s) failed %s\n", __FILE__, line, expr, what);
  }
  return ok;
}

static float f16(const unsigned char *p) {
  uint16_t h;
  memcpy(&h, p, 2);
  return (float)half_to_double(DT_F16, h);
}

/* Element k of a Q8_0 / Q4_0 / Q4_1 tensor, from its raw blocks (ggml's
 * layouts: d, [m,] then 32 int8 or 16 bytes of two nibbles: low nibbles are
 * elements 0..15, high ones 16..31). */
static float dequant(const GgufTensor *t, int64_t k) {
  const unsigned char *raw = t->data;
  int64_t b = k / 32, j = k % 32;
  if (t->ggml_type == GGML_TYPE_Q8_0) {
    const unsigned char *blk = raw + b * 34;
    return f16(blk) * (float)(int8_t)blk[2 + j];
  }
  int size = t->ggml_type == GGML_TYPE_Q4_0 ? 18 : 20;
  const unsigned char *blk = raw + b * size, *qs = blk + size - 16;
  int q = j < 16 ? (qs[j] & 15) : (qs[j - 16] >> 4);
  if (t->ggml_type == GGML_TYPE_Q4_0)
    return f16(blk) * (float)(q - 8);
  return f16(blk) * (float)q + f16(blk + 2);
}

static float value(const GgufTensor *t, int64_t k) {
  return t->quantized ? dequant(t, k) : ((const float *)t->data)[k];
}

static void check_tensor(Gguf *g, json_t *ref) {
  const char *name = json_string_value(json_object_get(ref, "name"));
  const char *type = json_string_value(json_object_get(ref, "type"));
  GgufTensor *t = gguf_tensor(g, name);
  if (!CHECK_AT(t != NULL, name))
    return;
  CHECK_AT(!strcmp(t->type_name, type), name);
  json_t *ne = json_object_get(ref, "ne");
  CHECK_AT(t->n_dims == (int)json_array_size(ne) && t->type.rank == t->n_dims, name);
  for (int i = 0; i < t->n_dims; i++) {
    CHECK_AT(t->ne[i] == json_integer_value(json_array_get(ne, i)), name);
    CHECK_AT(t->type.dims[t->n_dims - 1 - i] == t->ne[i], name);
  }
  CHECK_AT(t->type.dt == DT_F32 && t->readable, name);
  CHECK_AT(((uintptr_t)t->data & 15) == 0, name);
  int64_t n = type_numel(&t->type);
  CHECK_AT(t->quantized ? t->bytes == t->file_bytes : t->bytes == (size_t)n * 4, name);
  json_t *head = json_object_get(ref, "head"), *tail = json_object_get(ref, "tail");
  for (int i = 0; i < 8; i++) {
    float want_h = (float)json_real_value(json_array_get(head, i));
    float want_t = (float)json_real_value(json_array_get(tail, i));
    CHECK_AT(value(t, i) == want_h, name);
    CHECK_AT(value(t, n - 8 + i) == want_t, name);
  }
  double sum = 0;
  for (int64_t k = 0; k < n; k++)
    sum += value(t, k);
  double want = json_real_value(json_object_get(ref, "sum"));
  CHECK_AT(fabs(sum - want) <= 1e-9 * (1 + fabs(want)) + 1e-6, name);
}

static void check_meta(Gguf *g, json_t *meta) {
  const char *key;
  json_t *v;
  json_object_foreach(meta, key, v) {
    const GgufKV *kv = gguf_kv(g, key);
    if (!CHECK_AT(kv != NULL, key))
      continue;
    if (json_is_integer(v)) {
      int64_t x;
      CHECK_AT(gguf_kv_int(kv, &x) && x == json_integer_value(v), key);
      continue;
    }
    GgufType elem;
    uint64_t n;
    CHECK_AT(gguf_kv_array(kv, &elem, &n) && elem == GGUF_STRING && n == json_array_size(v), key);
    for (uint64_t i = 0; i < n && i < json_array_size(v); i++) {
      size_t len;
      const char *s = gguf_array_string(&kv->v, i, &len);
      const char *want = json_string_value(json_array_get(v, i));
      CHECK_AT(s && len == strlen(want) && !strcmp(s, want), key);
    }
  }
  /* every scalar type, read through the typed accessors */
  int64_t i;
  double f;
  bool b;
  size_t len;
  CHECK(gguf_kv_int(gguf_kv(g, "kiln.test.i8"), &i) && i == -7);
  CHECK(gguf_kv(g, "kiln.test.i8")->v.type == GGUF_I8);
  CHECK(gguf_kv_int(gguf_kv(g, "kiln.test.u16"), &i) && i == 65535);
  CHECK(gguf_kv_int(gguf_kv(g, "kiln.test.i16"), &i) && i == -300);
  CHECK(gguf_kv_int(gguf_kv(g, "kiln.test.i64"), &i) && i == -((int64_t)1 << 40));
  CHECK(!gguf_kv_int(gguf_kv(g, "kiln.test.u64"), &i)); /* 2^63 does not fit an int64 */
  CHECK(gguf_kv_float(gguf_kv(g, "kiln.test.u64"), &f) && f == 9223372036854775808.0);
  CHECK(gguf_kv_float(gguf_kv(g, "kiln.test.f64"), &f) && f == 0.1);
  CHECK(gguf_kv_float(gguf_kv(g, "llama.rope.freq_base"), &f) && f == 10000.0);
  CHECK(gguf_kv_float(gguf_kv(g, "llama.attention.layer_norm_rms_epsilon"), &f) && f == (double)1e-5f);
  CHECK(!gguf_kv_int(gguf_kv(g, "llama.rope.freq_base"), &i));
  CHECK(gguf_kv_bool(gguf_kv(g, "tokenizer.ggml.add_bos_token"), &b) && !b);
  CHECK(!strcmp(gguf_kv_string(gguf_kv(g, "general.architecture"), &len), "llama") && len == 5);
  CHECK(!strcmp(gguf_kv_string(gguf_kv(g, "tokenizer.ggml.model"), NULL), "gpt2"));
  CHECK(gguf_kv_string(gguf_kv(g, "kiln.test.empty"), &len) && len == 0);
  CHECK(!gguf_kv_string(gguf_kv(g, "llama.block_count"), &len));
  CHECK(gguf_kv(g, "no.such.key") == NULL && !gguf_kv_int(gguf_kv(g, "no.such.key"), &i));
  /* arrays of numbers and nested arrays */
  const GgufKV *fl = gguf_kv(g, "kiln.test.floats");
  GgufType elem;
  uint64_t n;
  CHECK(gguf_kv_array(fl, &elem, &n) && elem == GGUF_F32 && n == 3);
  CHECK(gguf_array_float(&fl->v, 1, &f) && f == -1.25);
  CHECK(!gguf_array_float(&fl->v, 3, &f) && !gguf_array_string(&fl->v, 0, NULL));
  const GgufKV *types = gguf_kv(g, "tokenizer.ggml.token_type");
  CHECK(gguf_kv_array(types, &elem, &n) && elem == GGUF_I32 && n == 256);
  CHECK(gguf_array_int(&types->v, 0, &i) && i == 3 && gguf_array_int(&types->v, 3, &i) && i == 1);
  const GgufKV *nested = gguf_kv(g, "kiln.test.nested");
  GgufValue row;
  CHECK(gguf_kv_array(nested, &elem, &n) && elem == GGUF_ARRAY && n == 2);
  CHECK(gguf_array_value(&nested->v, 0, &row) && gguf_value_array(&row, &elem, &n) && n == 2);
  CHECK(gguf_array_int(&row, 1, &i) && i == 2);
  CHECK(gguf_array_value(&nested->v, 1, &row) && gguf_array_int(&row, 0, &i) && i == 3);
  CHECK(!gguf_array_value(&nested->v, 2, &row));
  CHECK(g->alignment == 32 && g->version == 3 && g->data_start % 32 == 0);
}

static bool has(const Diag *d, const char *text) {
  bool ok = d->failed && strstr(d->msg, text) != NULL;
  if (!ok)
    fprintf(stderr, "  message: %s\n  lacks: %s\n", d->msg, text);
  return ok;
}

static void check_binding(Arena *a, Gguf *g, const char *dir) {
  Diag d = {0};
  Type want = {.dt = DT_F32, .rank = 2, .dims = {256, 64}};
  CHECK(gguf_take(g, "token_embd.weight", &want, &d) != NULL);
  CHECK(gguf_tensor(g, "token_embd.weight")->used && gguf_tensor(g, "token_embd.weight")->quantized);
  Diag unused = {0};
  CHECK(!gguf_check_all_used(g, &unused) && has(&unused, "tensor 'blk.0.attn_norm.weight' (f32[64]) is not a parameter"));
  char *list = gguf_unused_list(g);
  CHECK(list && strstr(list, "20 of 21 tensors not used") &&
        strstr(list, "blk.0.attn_q.weight (f32[64,64], Q4_1 in the file)"));
  free(list);
  Type wrong = {.dt = DT_F32, .rank = 2, .dims = {64, 256}};
  d = (Diag){0};
  CHECK(!gguf_take(g, "output.weight", &wrong, &d) &&
        has(&d, "tiny_llama.gguf: tensor 'output.weight' is f32[256,64] (F16 in the file); expected f32[64,256]"));
  d = (Diag){0};
  CHECK(!gguf_take(g, "lm_head.weight", &wrong, &d) &&
        has(&d, "no tensor 'lm_head.weight' (f32[64,256]); expected one for each parameter; the file has 'token_embd.weight'"));
  for (int i = 0; i < g->n; i++) {
    d = (Diag){0};
    CHECK_AT(gguf_take(g, g->t[i].name, &g->t[i].type, &d) != NULL, d.msg);
  }
  d = (Diag){0};
  CHECK(gguf_check_all_used(g, &d) && gguf_unused_list(g) == NULL);

  Gguf q6;
  d = (Diag){0};
  char *path = arena_printf(a, "%s/q6k.gguf", dir);
  if (!CHECK_AT(gguf_load(a, path, &q6, &d), d.msg))
    return;
  CHECK(q6.alignment == 64 && q6.data_start % 64 == 0);
  for (int i = 0; i < q6.n; i++)
    CHECK_AT(q6.t[i].offset % 64 == 0, q6.t[i].name);
  GgufTensor *t = gguf_tensor(&q6, "blk.0.ffn_down.weight");
  CHECK(t && t->readable && t->quantized && t->file_bytes == 64 * 210);
  Type q6t = {.dt = DT_F32, .rank = 2, .dims = {64, 256}};
  CHECK(t && type_equal(&t->type, &q6t));
  d = (Diag){0};
  GgufTensor *q6b = gguf_take(&q6, "blk.0.ffn_down.weight", &q6t, &d);
  CHECK_AT(q6b && q6b->ggml_type == 14 && q6b->bytes == 64 * 210 && !strcmp(q6b->type_name, "Q6_K"), d.msg);
  /* the K-quants kiln reads and one it does not: refused by type and tensor name */
  Gguf kq;
  d = (Diag){0};
  if (CHECK_AT(gguf_load(a, arena_printf(a, "%s/kquant.gguf", dir), &kq, &d), d.msg)) {
    static const struct { const char *name, *type; int64_t rows, cols, bytes; } want[] = {
        {"blk.0.ffn_up.weight", "Q4_K", 64, 512, 64 * 2 * 144}, {"blk.0.ffn_gate.weight", "Q5_K", 48, 256, 48 * 176},
        {"blk.0.ffn_down.weight", "Q6_K", 32, 768, 32 * 3 * 210}, {"token_embd.weight", "Q6_K", 40, 256, 40 * 210},
        {"blk.0.attn_k.weight", "Q5_0", 32, 640, 32 * 20 * 22}, {"blk.0.attn_v.weight", "Q5_1", 16, 640, 16 * 20 * 24}};
    for (int i = 0; i < 6; i++) {
      Type wt = {.dt = DT_F32, .rank = 2, .dims = {want[i].rows, want[i].cols}};
      d = (Diag){0};
      GgufTensor *x = gguf_take(&kq, want[i].name, &wt, &d);
      CHECK_AT(x && x->quantized && !strcmp(x->type_name, want[i].type) && (int64_t)x->bytes == want[i].bytes,
               want[i].name);
    }
    Type q2t = {.dt = DT_F32, .rank = 2, .dims = {16, 256}};
    d = (Diag){0};
    CHECK(!gguf_take(&kq, "blk.0.attn_q.weight", &q2t, &d) &&
          has(&d, "kquant.gguf: tensor 'blk.0.attn_q.weight' is Q2_K; kiln reads F32, F16, Q8_0, Q4_0, Q4_1, "
                  "Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q8_K"));
  }
  /* the other plain types: BF16 widened to f32, I32 and F64 as they are */
  json_error_t e;
  json_t *ref = json_load_file(arena_printf(a, "%s/q6k.json", dir), 0, &e);
  if (!CHECK_AT(ref != NULL, e.text))
    return;
  json_t *tensors = json_object_get(ref, "tensors");
  for (size_t i = 0; i < json_array_size(tensors); i++) {
    json_t *r = json_array_get(tensors, i);
    const char *name = json_string_value(json_object_get(r, "name"));
    const char *type = json_string_value(json_object_get(r, "type"));
    json_t *vals = json_object_get(r, "values");
    GgufTensor *x = gguf_tensor(&q6, name);
    if (!CHECK_AT(x && x->readable && !x->quantized && !strcmp(x->type_name, type), name))
      continue;
    DType want_dt = !strcmp(type, "I32") ? DT_I32 : !strcmp(type, "F64") ? DT_F64 : DT_F32;
    CHECK_AT(x->type.dt == want_dt && x->bytes == type_bytes(&x->type), name);
    CHECK_AT(type_numel(&x->type) == (int64_t)json_array_size(vals), name);
    for (size_t k = 0; k < json_array_size(vals) && k < (size_t)type_numel(&x->type); k++) {
      double got = want_dt == DT_I32 ? ((const int32_t *)x->data)[k]
                   : want_dt == DT_F64 ? ((const double *)x->data)[k]
                                       : ((const float *)x->data)[k];
      CHECK_AT(got == json_real_value(json_array_get(vals, k)), name);
    }
    d = (Diag){0};
    CHECK_AT(gguf_take(&q6, name, &x->type, &d) != NULL, d.msg);
  }
  json_decref(ref);
}

/* The Lua frontend hands the bound file on (LuaOptions.bound_gguf). */
static void check_frontend(const char *dir) {
  Arena *a = arena_new();
  const Gguf *bound = (const Gguf *)1;
  LuaOptions o = {.weights = arena_printf(a, "%s/tiny_llama.gguf", dir), .quiet = true,
                  .bound_gguf = &bound};
  Diag d = {0};
  Graph *g = dsl_load_model(a, arena_printf(a, "%s/bind/model.lua", dir), &o, &d);
  CHECK_AT(g != NULL, d.msg);
  CHECK(bound && bound->n == 21 && gguf_tensor((Gguf *)bound, "token_embd.weight")->used);
  size_t len;
  CHECK(bound && !strcmp(gguf_array_string(&gguf_kv(bound, "tokenizer.ggml.tokens")->v, 0, &len),
                         "<|endoftext|>"));
  /* no GGUF bound: NULL */
  o.weights = NULL;
  bound = (const Gguf *)1;
  d = (Diag){0};
  CHECK(!dsl_load_model(a, arena_printf(a, "%s/bind/model.lua", dir), &o, &d) && bound == NULL);
  arena_free(a);
}

static void check_real(Arena *a, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    printf("note: %s not found; the real-file checks are skipped\n", path);
    return;
  }
  fclose(f);
  Gguf g;
  Diag d = {0};
  clock_t t0 = clock();
  if (!CHECK_AT(gguf_load(a, path, &g, &d), d.msg))
    return;
  printf("real file: %d tensors, %d keys, %zu bytes, loaded in %.0f ms CPU\n", g.n, g.nkv,
         g.image_len, 1000.0 * (double)(clock() - t0) / CLOCKS_PER_SEC);
  CHECK(g.n == 272);
  int64_t x;
  double fx;
  CHECK(gguf_kv_int(gguf_kv(&g, "llama.block_count"), &x) && x == 30);
  CHECK(gguf_kv_int(gguf_kv(&g, "llama.embedding_length"), &x) && x == 576);
  CHECK(gguf_kv_int(gguf_kv(&g, "llama.attention.head_count"), &x) && x == 9);
  CHECK(gguf_kv_int(gguf_kv(&g, "llama.attention.head_count_kv"), &x) && x == 3);
  CHECK(gguf_kv_int(gguf_kv(&g, "llama.feed_forward_length"), &x) && x == 1536);
  CHECK(gguf_kv_float(gguf_kv(&g, "llama.rope.freq_base"), &fx) && fx == 100000.0);
  CHECK(!strcmp(gguf_kv_string(gguf_kv(&g, "tokenizer.ggml.pre"), NULL), "smollm"));
  GgufType elem;
  uint64_t n;
  CHECK(gguf_kv_array(gguf_kv(&g, "tokenizer.ggml.tokens"), &elem, &n) && elem == GGUF_STRING && n == 49152);
  CHECK(!strcmp(gguf_array_string(&gguf_kv(&g, "tokenizer.ggml.tokens")->v, 0, NULL), "<|endoftext|>"));
  CHECK(gguf_kv_array(gguf_kv(&g, "tokenizer.ggml.merges"), &elem, &n) && n == 48900);
  GgufTensor *emb = gguf_tensor(&g, "token_embd.weight");
  Type want = {.dt = DT_F32, .rank = 2, .dims = {49152, 576}};
  CHECK(emb && emb->ggml_type == GGML_TYPE_Q8_0 && type_equal(&emb->type, &want) &&
        emb->bytes == (size_t)49152 * 576 / 32 * 34);
  GgufTensor *up = gguf_tensor(&g, "blk.0.ffn_up.weight");
  Type upt = {.dt = DT_F32, .rank = 2, .dims = {1536, 576}};
  CHECK(up && up->ggml_type == GGML_TYPE_Q4_1 && type_equal(&up->type, &upt));
  CHECK(gguf_tensor(&g, "output.weight") == NULL && gguf_tensor(&g, "output_norm.weight"));
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_gguf DIR [REAL.gguf]\n");
    return 2;
  }
  Arena *a = arena_new();
  char *gpath = arena_printf(a, "%s/tiny_llama.gguf", argv[1]);
  char *jpath = arena_printf(a, "%s/tiny_llama.json", argv[1]);
  json_error_t e;
  json_t *ref = json_load_file(jpath, 0, &e);
  if (!ref) {
    fprintf(stderr, "test_gguf: %s: %s\n", jpath, e.text);
    return 1;
  }
  Gguf g;
  Diag d = {0};
  if (CHECK_AT(gguf_load(a, gpath, &g, &d), d.msg)) {
    json_t *tensors = json_object_get(ref, "tensors");
    CHECK(g.n == (int)json_array_size(tensors));
    for (size_t i = 0; i < json_array_size(tensors); i++)
      check_tensor(&g, json_array_get(tensors, i));
    check_meta(&g, json_object_get(ref, "meta"));
    CHECK(gguf_is_gguf(g.image, g.image_len) && gguf_file_is_gguf(gpath));
    check_binding(a, &g, argv[1]);
    check_frontend(argv[1]);
  }
  CHECK(!gguf_file_is_gguf(jpath));
  /* version 2 has version 3's layout: the same file read as version 2 */
  if (g.image) {
    unsigned char *v2 = arena_dup(a, g.image, g.image_len);
    v2[4] = 2;
    Gguf g2;
    d = (Diag){0};
    CHECK_AT(gguf_parse(a, v2, g.image_len, "v2.gguf", &g2, &d) && g2.version == 2 && g2.n == g.n, d.msg);
  }
  if (argc > 2)
    check_real(a, argv[2]);
  json_decref(ref);
  arena_free(a);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
