/* narrow_convert.c — the narrow types' conversions, three ways:
 *   - the generated code's (runtime/kiln_rt.h: kiln_f8e4m3fn_to_f32,
 *     kiln_f32_to_f8e4m3fn, ..., kiln_get_i4, kiln_set_4, ...) against the
 *     compiler's (ir.c: minifloat_to_double, minifloat_from_double,
 *     packed_get, packed_set, which _eval and constant folding use): every
 *     code decodes to the same value, and every STRIDE-th f32 bit pattern
 *     plus every code's neighbourhood encodes to the same code, saturating
 *     and not (e8m0: each round_mode);
 *   - both against ONNX's reference (ml_dtypes, onnx.numpy_helper) on the
 *     inputs of tests/unit/narrow_convert_ref.txt (tools/make_narrow_ref.py);
 *   - packed 4- and 2-bit elements: ONNX's order (element 0 in the low
 *     bits), sign extension, and a store leaving its neighbours alone.
 * usage: unit_narrow_convert REF_FILE [STRIDE]. Prints the first
 * disagreements and exits 1 if there is any. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "kiln_rt.h"

static int fails;

static void fail(const char *what, uint32_t in, unsigned got, unsigned want) {
  if (fails++ < 12)
    printf("FAIL %s: input 0x%08x gave 0x%02x, expected 0x%02x\n", what, in, got, want);
}

static float f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static const DType kinds[] = {DT_F8E4M3FN, DT_F8E4M3FNUZ, DT_F8E5M2, DT_F8E5M2FNUZ, DT_F4E2M1, DT_F8E8M0};
enum { NKINDS = 6 };

static float rt_decode(DType dt, unsigned c) {
  switch (dt) {
  case DT_F8E4M3FN: return kiln_f8e4m3fn_to_f32((uint8_t)c);
  case DT_F8E4M3FNUZ: return kiln_f8e4m3fnuz_to_f32((uint8_t)c);
  case DT_F8E5M2: return kiln_f8e5m2_to_f32((uint8_t)c);
  case DT_F8E5M2FNUZ: return kiln_f8e5m2fnuz_to_f32((uint8_t)c);
  case DT_F4E2M1: return kiln_f4e2m1_to_f32((int)c);
  default: return kiln_f8e8m0_to_f32((uint8_t)c);
  }
}

static unsigned rt_encode(DType dt, float f, int sat, int mode) {
  switch (dt) {
  case DT_F8E4M3FN: return kiln_f32_to_f8e4m3fn(f, sat);
  case DT_F8E4M3FNUZ: return kiln_f32_to_f8e4m3fnuz(f, sat);
  case DT_F8E5M2: return kiln_f32_to_f8e5m2(f, sat);
  case DT_F8E5M2FNUZ: return kiln_f32_to_f8e5m2fnuz(f, sat);
  case DT_F4E2M1: return kiln_f32_to_f4e2m1(f);
  default: return kiln_f32_to_f8e8m0(f, sat, mode);
  }
}

/* Every code widens to the same value both ways. */
static void decode_all(void) {
  for (int k = 0; k < NKINDS; k++)
    for (unsigned c = 0; c < (kinds[k] == DT_F4E2M1 ? 16u : 256u); c++) {
      float a = rt_decode(kinds[k], c);
      double r = minifloat_to_double(kinds[k], c);
      if (!(a == r || (isnan(a) && isnan(r))) || (!isnan(a) && !signbit(a) != !signbit(r)))
        fail(dt_name(kinds[k]), c, 0, 0);
    }
}

/* f32 bits u encodes to the same code both ways, for every rule. */
static void encode_one(uint32_t u) {
  float f = f32(u);
  for (int k = 0; k < NKINDS; k++)
    for (int sat = 0; sat < 2; sat++)
      for (int mode = 0; mode < (kinds[k] == DT_F8E8M0 ? 3 : 1); mode++) {
        unsigned a = rt_encode(kinds[k], f, sat, mode), r = minifloat_from_double(kinds[k], f, sat, mode);
        if (a != r)
          fail(dt_name(kinds[k]), u, a, r);
      }
}

static void encode_all(uint32_t stride) {
  for (uint64_t u = 0; u <= 0xffffffffu; u += stride)
    encode_one((uint32_t)u);
  for (int k = 0; k < NKINDS; k++) /* around every code's value */
    for (unsigned c = 0; c < 256; c++) {
      float v = (float)minifloat_to_double(kinds[k], c);
      uint32_t b;
      memcpy(&b, &v, 4);
      for (int d = -3; d <= 3; d++)
        encode_one(b + (uint32_t)d);
    }
}

/* The reference file: f32 bits, then the codes of tools/make_narrow_ref.py. */
static void against_reference(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    printf("FAIL cannot open %s\n", path);
    fails++;
    return;
  }
  char line[256];
  int rows = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#')
      continue;
    char *p = line, *end;
    uint32_t u = (uint32_t)strtoul(p, &end, 16);
    float x = f32(u);
    p = end;
    /* e4m3fn s n, e4m3fnuz s n, e5m2 s n, e5m2fnuz s n, f4e2m1, e8m0 up down nearest */
    for (int col = 0; col < 12; col++) {
      while (*p == ' ')
        p++;
      if (p[0] == '-') {
        p += 2;
        continue;
      }
      unsigned want = (unsigned)strtoul(p, &end, 16);
      p = end;
      DType dt = col < 8 ? kinds[col / 2] : col == 8 ? DT_F4E2M1 : DT_F8E8M0;
      int sat = col < 8 ? !(col & 1) : 1, mode = col > 8 ? col - 9 : 0;
      unsigned a = rt_encode(dt, x, sat, mode), r = minifloat_from_double(dt, x, sat, mode);
      /* a NaN is any NaN code of the kind (e5m2's are several) */
      bool nan_ok = isnan(minifloat_to_double(dt, want)) && isnan(minifloat_to_double(dt, r));
      if (r != want && !nan_ok)
        fail(dt_name(dt), u, r, want);
      if (a != want && !nan_ok)
        fail(dt_name(dt), u, a, want);
    }
    rows++;
  }
  fclose(f);
  if (rows < 1000) {
    printf("FAIL %s: %d rows; expected the reference table\n", path, rows);
    fails++;
  }
}

/* ONNX's packing: element i of a 4-bit tensor in bits 4*(i%2) of byte i/2. */
static void packed(void) {
  uint8_t p[3] = {0x8f, 0x71, 0xe4}, q[3] = {0};
  static const int i4[6] = {-1, -8, 1, 7, 4, -2}, u2[12] = {3, 3, 0, 2, 1, 0, 3, 1, 0, 1, 2, 3};
  for (int i = 0; i < 6; i++) {
    if (kiln_get_i4(p, i) != i4[i] || packed_get(DT_I4, p, i) != ((unsigned)i4[i] & 15u) ||
        el_get_i(DT_I4, p, i) != i4[i])
      fail("i4 read", (uint32_t)i, (unsigned)kiln_get_i4(p, i), (unsigned)i4[i] & 15u);
    kiln_set_4(q, i, (unsigned)i4[i]);
  }
  for (int i = 0; i < 12; i++) {
    if (kiln_get_u2(p, i) != u2[i] || el_get_u(DT_U2, p, i) != (uint64_t)u2[i] ||
        kiln_get_i2(p, i) != (u2[i] >= 2 ? u2[i] - 4 : u2[i]))
      fail("u2/i2 read", (uint32_t)i, (unsigned)kiln_get_u2(p, i), (unsigned)u2[i]);
  }
  if (memcmp(p, q, 3))
    fail("i4 stores", 0, q[0], p[0]);
  packed_set(DT_U2, q, 5, 3);
  kiln_set_2(p, 5, 3);
  if (memcmp(p, q, 3) || q[1] != 0x7d)
    fail("u2 store", 5, q[1], 0x7d);
  Type t = {DT_I4, 1, {5}};
  if (type_bytes(&t) != 3)
    fail("i4[5] bytes", 5, (unsigned)type_bytes(&t), 3);
  t = (Type){DT_U2, 2, {3, 3}};
  if (type_bytes(&t) != 3)
    fail("u2[3,3] bytes", 9, (unsigned)type_bytes(&t), 3);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s REF_FILE [STRIDE]\n", argv[0]);
    return 2;
  }
  uint32_t stride = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 4099;
  decode_all();
  encode_all(stride ? stride : 1);
  against_reference(argv[1]);
  packed();
  printf("%s: %d disagreement%s\n", fails ? "FAIL" : "ok", fails, fails == 1 ? "" : "s");
  return fails ? 1 : 0;
}
