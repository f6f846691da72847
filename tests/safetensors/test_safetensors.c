/* test_safetensors.c — tests of the .safetensors reader and writer
 * (compiler/formats/safetensors.c) against the corpus tests/safetensors/make_files.py
 * writes with Python's struct and json, independently of kiln.
 *
 * usage: test_safetensors DIR   (DIR holds the corpus and its cases.txt)
 *
 * Good files: every tensor's dtype, shape and values (F16/BF16 widened to
 * f32, compared bit for bit, NaN as NaN), 16-byte alignment, metadata; each
 * is then written back with safetensors_write and must read back the same.
 * Bad files: loading fails with a message that starts with the file's path
 * and contains the expected text. Then binding by name (safetensors_take,
 * safetensors_check_all_used) and the writer's own refusals. Prints
 * "N passed, N failed"; exit status 1 on any failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/safetensors.h"
#include "st_same.h"

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

/* Split s at tabs in place; returns the number of fields (empty ones kept). */
static int split_tabs(char *s, char **field, int max) {
  int n = 0;
  field[n++] = s;
  for (char *p = s; *p && n < max; p++)
    if (*p == '\t') {
      *p = 0;
      field[n++] = p + 1;
    }
  return n;
}

static Type parse_dims(DType dt, const char *s) {
  Type t = {.dt = dt};
  while (*s) {
    char *end;
    t.dims[t.rank++] = strtoll(s, &end, 10);
    s = *end == ',' ? end + 1 : end;
  }
  return t;
}

static bool same_float(double want, double got) {
  if (isnan(want))
    return isnan(got);
  return want == got && signbit(want) == signbit(got);
}

/* Element i of t equals the manifest's text value. */
static bool same_element(const StTensor *t, int64_t i, const char *text) {
  DType dt = t->type.dt;
  if (dt_is_float(dt))
    return same_float(strtod(text, NULL), el_get_f(dt, t->data, i));
  if (dt_is_signed_int(dt))
    return strtoll(text, NULL, 10) == el_get_i(dt, t->data, i);
  return strtoull(text, NULL, 10) == el_get_u(dt, t->data, i);
}

/* line: tensor NAME KILN_DTYPE FILE_DTYPE DIMS VALUES */
static void check_tensor(SafeTensors *st, char *line) {
  char *f[6];
  if (!CHECK(split_tabs(line, f, 6) == 6))
    return;
  StTensor *t = safetensors_find(st, f[1]);
  if (!CHECK_AT(t != NULL, f[1]))
    return;
  Type want = parse_dims(dt_from_name(f[2]), f[4]);
  CHECK_AT(type_equal(&t->type, &want), f[1]);
  CHECK_AT(strcmp(t->file_dtype, f[3]) == 0, f[1]);
  CHECK_AT(t->bytes == type_bytes(&want), f[1]);
  CHECK_AT(((uintptr_t)t->data & 15) == 0, f[1]);
  int64_t i = 0;
  bool values_ok = true;
  for (char *v = strtok(f[5], " "); v; v = strtok(NULL, " "), i++)
    values_ok = values_ok && i < type_numel(&want) && same_element(t, i, v);
  CHECK_AT(values_ok && i == type_numel(&want), f[1]);
}

static void check_meta(SafeTensors *st, char *line) {
  char *f[3];
  if (!CHECK(split_tabs(line, f, 3) == 3))
    return;
  const char *v = safetensors_meta(st, f[1]);
  CHECK_AT(v && strcmp(v, f[2]) == 0, f[1]);
}

/* Write st back out with kiln's writer; it must read back identically,
 * with the data area starting 8-byte aligned. */
static void check_round_trip(Arena *a, const SafeTensors *st, const char *dir) {
  char *path = arena_printf(a, "%s/roundtrip.safetensors", dir);
  Diag d = {0};
  if (!CHECK_AT(safetensors_write(path, st->t, st->n, st->meta, st->nmeta, &d), d.msg))
    return;
  SafeTensors back;
  if (!CHECK_AT(safetensors_load(a, path, &back, &d), d.msg))
    return;
  CHECK_AT(st_same(st, &back), st->path);
  size_t len;
  unsigned char *bytes = read_file(path, &len, &d);
  CHECK(bytes && len >= 8 && bytes[0] % 8 == 0);
  free(bytes);
  remove(path);
}

/* line: good FILE NTENSORS NMETA; its tensor and meta lines follow. */
static void check_good(Arena *a, const char *dir, char *line, FILE *cases, SafeTensors *st) {
  char *f[4];
  split_tabs(line, f, 4);
  char *path = arena_printf(a, "%s/%s", dir, f[1]);
  Diag d = {0};
  bool ok = safetensors_load(a, path, st, &d);
  CHECK_AT(ok, d.msg);
  CHECK_AT(!ok || (st->n == atoi(f[2]) && st->nmeta == atoi(f[3])), path);
  char next[4096];
  long at = ftell(cases);
  while (fgets(next, sizeof next, cases)) {
    next[strcspn(next, "\n")] = 0;
    if (ok && strncmp(next, "tensor\t", 7) == 0)
      check_tensor(st, next);
    else if (ok && strncmp(next, "meta\t", 5) == 0)
      check_meta(st, next);
    else if (strncmp(next, "tensor\t", 7) && strncmp(next, "meta\t", 5)) {
      fseek(cases, at, SEEK_SET); /* the next case: read it again */
      break;
    }
    at = ftell(cases);
  }
  if (ok)
    check_round_trip(a, st, dir);
}

/* line: bad FILE SUBSTRING */
static void check_bad(Arena *a, const char *dir, char *line) {
  char *f[3];
  if (!CHECK(split_tabs(line, f, 3) == 3))
    return;
  char *path = arena_printf(a, "%s/%s", dir, f[1]);
  Diag d = {0};
  SafeTensors st;
  CHECK_AT(!safetensors_load(a, path, &st, &d), path);
  char *prefix = arena_printf(a, "%s: ", path);
  CHECK_AT(strncmp(d.msg, prefix, strlen(prefix)) == 0, d.msg);
  if (!CHECK_AT(strstr(d.msg, f[2]) != NULL, path))
    fprintf(stderr, "  got:  %s\n  want: %s\n", d.msg, f[2]);
}

/* Binding by name on dtypes.safetensors and halves.safetensors. */
static void check_take(Arena *a, const char *dir) {
  SafeTensors st, half;
  Diag d = {0};
  if (!CHECK(safetensors_load(a, arena_printf(a, "%s/dtypes.safetensors", dir), &st, &d)) ||
      !CHECK(safetensors_load(a, arena_printf(a, "%s/halves.safetensors", dir), &half, &d)))
    return;
  Type f32_23 = {.dt = DT_F32, .rank = 2, .dims = {2, 3}};
  CHECK(safetensors_take(&st, "weight", &f32_23, &d) != NULL && st.t[1].used);
  Type f32_32 = {.dt = DT_F32, .rank = 2, .dims = {3, 2}};
  CHECK(!safetensors_take(&st, "i64", &f32_32, &d) &&
        strstr(d.msg, "tensor 'i64' is i64[3]; expected f32[3,2]"));
  d = (Diag){0};
  CHECK(!safetensors_take(&st, "wieght", &f32_23, &d) &&
        strstr(d.msg, "no tensor 'wieght' (f32[2,3])") && strstr(d.msg, "'bytes', 'weight'") &&
        strstr(d.msg, "(11 in all)"));
  d = (Diag){0};
  CHECK(!safetensors_check_all_used(&st, &d) &&
        strstr(d.msg, "tensor 'bytes' (u8[3]) is not a parameter of the model (10 of 11"));
  d = (Diag){0};
  Type f16_34 = {.dt = DT_F16, .rank = 2, .dims = {3, 4}};
  CHECK(!safetensors_take(&half, "h", &f16_34, &d) &&
        strstr(d.msg, "tensor 'h' is f32[3,4] (F16 in the file); expected f16[3,4]"));
  Type f32_34 = {.dt = DT_F32, .rank = 2, .dims = {3, 4}};
  Type f32_8 = {.dt = DT_F32, .rank = 1, .dims = {8}};
  Type f32_1 = {.dt = DT_F32, .rank = 1, .dims = {1}};
  d = (Diag){0};
  CHECK(safetensors_take(&half, "h", &f32_34, &d) && safetensors_take(&half, "b", &f32_8, &d) &&
        safetensors_take(&half, "h_odd", &f32_1, &d) && safetensors_check_all_used(&half, &d));
}

/* What the writer refuses, and raw F16 written as F16. */
static void check_writer(Arena *a, const char *dir) {
  float x[2] = {1, 2};
  uint16_t h[2] = {0x3c00, 0xc000}; /* 1.0, -2.0 */
  StTensor t[2] = {
      {.name = "x", .type = {.dt = DT_F32, .rank = 1, .dims = {2}}, .data = x, .bytes = 8},
      {.name = "h", .type = {.dt = DT_F16, .rank = 1, .dims = {2}}, .data = h, .bytes = 4},
  };
  char *path = arena_printf(a, "%s/written.safetensors", dir);
  Diag d = {0};
  SafeTensors st;
  CHECK(safetensors_write(path, t, 2, NULL, 0, &d) && safetensors_load(a, path, &st, &d));
  StTensor *back = safetensors_find(&st, "h");
  CHECK(back && strcmp(back->file_dtype, "F16") == 0 && ((const float *)back->data)[1] == -2.0f);
  remove(path);

  StTensor dup[2] = {t[0], t[0]};
  d = (Diag){0};
  CHECK(!safetensors_write(path, dup, 2, NULL, 0, &d) && strstr(d.msg, "tensor 'x' appears twice"));
  StTensor wrong = t[0];
  wrong.bytes = 4;
  d = (Diag){0};
  CHECK(!safetensors_write(path, &wrong, 1, NULL, 0, &d) && strstr(d.msg, "byte count"));
  StTensor str = t[0];
  str.type.dt = DT_STRING;
  d = (Diag){0};
  CHECK(!safetensors_write(path, &str, 1, NULL, 0, &d) &&
        strstr(d.msg, "dtype the format cannot hold"));
  StTensor meta_named = t[0];
  meta_named.name = "__metadata__";
  d = (Diag){0};
  CHECK(!safetensors_write(path, &meta_named, 1, NULL, 0, &d) && strstr(d.msg, "__metadata__"));
  StMeta bad_utf8 = {"k", "\xff"};
  d = (Diag){0};
  CHECK(!safetensors_write(path, t, 1, &bad_utf8, 1, &d) && strstr(d.msg, "UTF-8"));
  FILE *f = fopen(path, "rb");
  CHECK(f == NULL); /* nothing left behind by the failures */
  if (f)
    fclose(f);
  d = (Diag){0};
  CHECK(!safetensors_load(a, arena_printf(a, "%s/no-such-file.safetensors", dir), &st, &d) &&
        strstr(d.msg, "cannot open"));
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_safetensors DIR (made by make_files.py)\n");
    return 2;
  }
  const char *dir = argv[1];
  Arena *a = arena_new();
  FILE *cases = fopen(arena_printf(a, "%s/cases.txt", dir), "r");
  if (!cases) {
    fprintf(stderr, "test_safetensors: cannot open %s/cases.txt\n", dir);
    return 2;
  }
  char line[4096];
  int ngood = 0, nbad = 0;
  while (fgets(line, sizeof line, cases)) {
    line[strcspn(line, "\n")] = 0;
    SafeTensors st;
    if (strncmp(line, "good\t", 5) == 0 && ++ngood)
      check_good(a, dir, line, cases, &st);
    else if (strncmp(line, "bad\t", 4) == 0 && ++nbad)
      check_bad(a, dir, line);
  }
  fclose(cases);
  CHECK(ngood >= 5 && nbad >= 40); /* the corpus was read */
  check_take(a, dir);
  check_writer(a, dir);
  arena_free(a);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
