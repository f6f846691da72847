/* half_convert.c — f16 and bf16 conversions, the generated code's
 * (runtime/kiln_rt.h: kiln_f16_to_f32, kiln_f32_to_f16, kiln_bf16_to_f32,
 * kiln_f32_to_bf16) against the compiler's (half_to_double,
 * half_from_double: the reference _eval and constant folding use):
 *   - every f16 and bf16 bit pattern widens to the same value both ways
 *     and narrows back to itself (NaNs: to a NaN);
 *   - every STRIDE-th f32 bit pattern, plus the ranges where rounding is
 *     delicate (around each format's halfway points, its largest finite
 *     value and its subnormals), narrows to the same bits both ways —
 *     half_from_double rounds with nearbyint, kiln_rt.h with integer
 *     arithmetic, so agreement is a check of both;
 *   - hand-picked cases: ties to even, overflow to inf, 2^-25 to zero.
 * Prints one line and exits 1 on the first disagreement. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "kiln_rt.h"

static int fails;

static void fail(const char *what, uint32_t bits, unsigned got, unsigned want) {
  if (fails++ < 10)
    printf("FAIL %s: input 0x%08x gave 0x%04x, expected 0x%04x\n", what, bits, got, want);
}

static float f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void widen_all(void) {
  for (uint32_t h = 0; h < 65536; h++) {
    float a = kiln_f16_to_f32((uint16_t)h), b = kiln_bf16_to_f32((uint16_t)h);
    double ra = half_to_double(DT_F16, (uint16_t)h), rb = half_to_double(DT_BF16, (uint16_t)h);
    if (!(a == ra || (isnan(a) && isnan(ra))) || !signbit(a) != !signbit(ra))
      fail("f16 -> f32", h, 0, 0);
    if (!(b == rb || (isnan(b) && isnan(rb))) || !signbit(b) != !signbit(rb))
      fail("bf16 -> f32", h, 0, 0);
    uint16_t back = kiln_f32_to_f16(a), backb = kiln_f32_to_bf16(b);
    if (isnan(a) ? !isnan(kiln_f16_to_f32(back)) : back != h)
      fail("f16 round trip", h, back, h);
    if (isnan(b) ? !isnan(kiln_bf16_to_f32(backb)) : backb != h)
      fail("bf16 round trip", h, backb, h);
  }
}

static void narrow(uint32_t u) {
  float f = f32(u);
  if (isnan(f)) {
    if (!isnan(kiln_f16_to_f32(kiln_f32_to_f16(f))) || !isnan(kiln_bf16_to_f32(kiln_f32_to_bf16(f))))
      fail("NaN stays NaN", u, 0, 0);
    return;
  }
  uint16_t a = kiln_f32_to_f16(f), ra = half_from_double(DT_F16, f);
  uint16_t b = kiln_f32_to_bf16(f), rb = half_from_double(DT_BF16, f);
  if (a != ra)
    fail("f32 -> f16", u, a, ra);
  if (b != rb)
    fail("f32 -> bf16", u, b, rb);
}

static void narrow_range(uint32_t from, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    narrow(from + i);
    narrow((from + i) | 0x80000000u);
  }
}

/* Doubles between two f16 (and bf16) neighbours, near their halfway
 * point: kiln_f64_to_f32_odd then the 16-bit rounding must round once. */
static void narrow_double(void) {
  for (uint32_t h = 0; h < 0x7c00; h += 7) {
    double a = half_to_double(DT_F16, (uint16_t)h), b = half_to_double(DT_F16, (uint16_t)(h + 1));
    double mid = (a + b) / 2, eps = (b - a) * 0x1p-20;
    double xs[] = {mid, mid - eps, mid + eps, nextafter(mid, 0), nextafter(mid, 1e9)};
    for (int i = 0; i < 5; i++) {
      uint16_t got = kiln_f32_to_f16(kiln_f64_to_f32_odd(xs[i])), want = half_from_double(DT_F16, xs[i]);
      if (got != want)
        fail("f64 -> f16", h, got, want);
      got = kiln_f32_to_bf16(kiln_f64_to_f32_odd(xs[i]));
      want = half_from_double(DT_BF16, xs[i]);
      if (got != want)
        fail("f64 -> bf16", h, got, want);
    }
  }
}

int main(int argc, char **argv) {
  uint32_t stride = argc > 1 ? (uint32_t)atoi(argv[1]) : 61;
  widen_all();
  narrow_double();
  for (uint64_t u = 0; u <= 0xffffffffu; u += stride)
    narrow((uint32_t)u);
  narrow_range(0x33000000u - 4096, 8192);  /* f16: around 2^-25, the tie with zero */
  narrow_range(0x33800000u - 4096, 1u << 23); /* f16 subnormals: [2^-24, 2^-14) */
  narrow_range(0x477fe000u - 8192, 16384); /* f16: 65504 up to the overflow at 65520 */
  narrow_range(0x3f800000u, 1u << 16);     /* [1, 1.0078): every f16 and bf16 tie */
  narrow_range(0x7f7f0000u, 0x10000u);     /* bf16: the largest finite values and overflow */
  narrow_range(0x00000000u, 1u << 16);     /* f32 subnormals: bf16 subnormals */
  struct { float x; unsigned f16, bf16; } cases[] = {
      {1.0f, 0x3c00, 0x3f80},           {-2.0f, 0xc000, 0xc000},
      {65504.0f, 0x7bff, 0x4780},       {65520.0f, 0x7c00, 0x4780},
      {0x1p-24f, 0x0001, 0x3380},       {0x1p-25f, 0x0000, 0x3300},
      {0x1.8p-25f, 0x0001, 0x3340},     {1.0f + 0x1p-11f, 0x3c00, 0x3f80}, /* ties to even */
      {1.0f + 0x3p-11f, 0x3c02, 0x3f80}, {1.0f + 0x1p-8f, 0x3c04, 0x3f80},
      {1.0f + 0x3p-8f, 0x3c0c, 0x3f82}, {INFINITY, 0x7c00, 0x7f80},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint32_t u;
    memcpy(&u, &cases[i].x, 4);
    if (kiln_f32_to_f16(cases[i].x) != cases[i].f16)
      fail("f16 case", u, kiln_f32_to_f16(cases[i].x), cases[i].f16);
    if (kiln_f32_to_bf16(cases[i].x) != cases[i].bf16)
      fail("bf16 case", u, kiln_f32_to_bf16(cases[i].x), cases[i].bf16);
  }
  printf("%s: %d disagreements (every 16-bit pattern; every %u-th f32 and the delicate ranges)\n",
         fails ? "FAIL" : "ok", fails, stride);
  return fails ? 1 : 0;
}
