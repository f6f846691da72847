/* vecmath_exhaustive.c — checks kiln's vector math (kiln_expf, kiln_erff,
 * kiln_tanhf, KILN_ERFF_VEC and kiln_expf_nonpos of runtime/kiln_rt.h) against double precision: the error in
 * ulps of the exact result, the absolute error, NaN in → NaN out, the sign
 * of every result (of -0 too). Exits 1 when a function exceeds the bound
 * kiln_rt.h states for it, printing the worst input.
 *
 * Which floats: every one whose magnitude lies where the function
 * computes something (exp: 2^-26 <= |x| <= 104, erf: up to 4, tanh: up to
 * 10), and every 61st bit pattern of all 2^32 besides (tiny |x|, the
 * subnormals, saturation, infinities, NaNs): about 1.2·10^9 evaluations.
 * All 2^32 would take minutes: tiny inputs make subnormal intermediates,
 * which x86 computes slowly.
 *
 *   vecmath_exhaustive [STRIDE]   test every STRIDE-th of those (default 1)
 *
 * The functions run on blocks of 4096 inputs in loops gcc vectorises, as
 * in the generated code (restrict pointers and a constant trip count:
 * gcc -O2's cost model neither checks aliasing at run time nor adds a
 * scalar epilogue). CTest builds it twice: with the default flags and
 * with -march=native -ffp-contract=fast (FMA contraction changes the
 * rounding of every polynomial step).
 *
 * To run in seconds, the reference is libm's double exp/erf/tanh only
 * where that is needed: for |x| < 2^-12 it is the Taylor series to a
 * relative error below 2^-60, and where the float result is saturated
 * (exp: |x| >= 256; erf: |x| >= 8; tanh: |x| >= 20) the exact constant;
 * erf and tanh are checked on x >= 0 against the reference and on x < 0
 * by oddness, bit for bit: f(-x) == -f(x). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kiln_rt.h"

enum { BLOCK = 4096 };

typedef struct Check {
  const char *name;
  void (*run)(const float *restrict x, float *restrict y); /* the kiln function on BLOCK inputs */
  double (*ref)(double x);                      /* the exact result, to double precision */
  bool odd;                                     /* x < 0 checked by f(-x) == -f(x) */
  float busy_max;                               /* all floats with 2^-26 <= |x| <= this */
  double ulp_bound, abs_bound;                  /* what kiln_rt.h promises */
  double worst_ulp, worst_abs;
  float worst_ulp_x, worst_abs_x;
  long long failures; /* NaN, sign or oddness wrong */
  float failure_x;
} Check;

static void run_exp(const float *restrict x, float *restrict y) {
  for (int i = 0; i < BLOCK; i++)
    y[i] = kiln_expf(x[i]);
}

static void run_erf(const float *restrict x, float *restrict y) {
  for (int i = 0; i < BLOCK; i++)
    y[i] = kiln_erff(x[i]);
}

/* KILN_ERFF_VEC, 8, 16 and 4 lanes at a time (the GEMM's GELU epilogue's
 * erf): built -march=native under gcc, the table's form (KILN_ERFF_VEC_TAB)
 * on 8 lanes with AVX2 and on 16 with AVX-512; the exp form elsewhere */
typedef float v8f __attribute__((vector_size(32)));
typedef int v8i __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));
typedef int v16i __attribute__((vector_size(64)));
typedef float v4f __attribute__((vector_size(16)));
typedef int v4i __attribute__((vector_size(16)));
#define RUN_ERF_VEC(NAME, VF, VI)                                \
  static void NAME(const float *restrict x, float *restrict y) { \
    for (int i = 0; i < BLOCK; i += (int)(sizeof(VF) / 4)) {     \
      VF v;                                                      \
      memcpy(&v, x + i, sizeof v);                               \
      v = KILN_ERFF_VEC(VF, VI, v);                              \
      memcpy(y + i, &v, sizeof v);                               \
    }                                                            \
  }
RUN_ERF_VEC(run_erf_vec, v8f, v8i)
RUN_ERF_VEC(run_erf_vec16, v16f, v16i)
RUN_ERF_VEC(run_erf_vec4, v4f, v4i)

static void run_exp_nonpos(const float *restrict x, float *restrict y) {
  for (int i = 0; i < BLOCK; i++)
    y[i] = kiln_expf_nonpos(x[i]);
}

static void run_tanh(const float *restrict x, float *restrict y) {
  for (int i = 0; i < BLOCK; i++)
    y[i] = kiln_tanhf(x[i]);
}

static bool tiny(double x) { return fabs(x) < 0x1p-12; }

static double ref_exp(double x) {
  if (isnan(x))
    return x;
  if (tiny(x))
    return 1 + x * (1 + x * (1.0 / 2 + x * (1.0 / 6 + x * (1.0 / 24))));
  if (fabs(x) >= 256)
    return x > 0 ? INFINITY : 0;
  return exp(x);
}

static double ref_erf(double x) {
  double x2 = x * x;
  if (tiny(x))
    return 1.1283791670955126 * x * (1 - x2 * (1.0 / 3 - x2 * (1.0 / 10 - x2 * (1.0 / 42))));
  return fabs(x) >= 8 ? copysign(1, x) : erf(x);
}

static double ref_tanh(double x) {
  double x2 = x * x;
  if (tiny(x))
    return x * (1 - x2 * (1.0 / 3 - x2 * (2.0 / 15 - x2 * (17.0 / 315))));
  return fabs(x) >= 20 ? copysign(1, x) : tanh(x);
}

/* |v| >= 2^128 (inf, or what rounds to it) stands for 2^128, the next
 * value after FLT_MAX were there one. */
static double clamp_to_float_range(double v) { return fabs(v) >= 0x1p128 ? copysign(0x1p128, v) : v; }

/* The spacing of floats at magnitude |r| (the subnormals' below 2^-126),
 * from r's exponent bits. */
static double float_ulp(double r) {
  uint64_t bits;
  memcpy(&bits, &r, sizeof bits);
  int e = (int)((bits >> 52) & 0x7ff) - 1023; /* |r| in [2^e, 2^(e+1)) */
  e = (e < -126 ? -126 : e) - 23;
  bits = (uint64_t)(e + 1023) << 52;
  memcpy(&r, &bits, sizeof r);
  return r;
}

static void fail(Check *c, float x) {
  if (c->failures++ == 0)
    c->failure_x = x;
}

static void check_one(Check *c, float x, float y) {
  double r = c->ref((double)x);
  if (isnan(r) || isnan(y) || !signbit(y) != !signbit(r)) {
    if (!(isnan(r) && isnan(y)))
      fail(c, x);
    return;
  }
  double rc = clamp_to_float_range(r);
  double err = fabs(clamp_to_float_range(y) - rc), ulps = err / float_ulp(rc);
  if (ulps > c->worst_ulp) {
    c->worst_ulp = ulps;
    c->worst_ulp_x = x;
  }
  if (fabs(r) < 0x1p128 && err > c->worst_abs) {
    c->worst_abs = err;
    c->worst_abs_x = x;
  }
}

/* The first n of block x against the reference (x >= 0 for an odd
 * function) and, for an odd one, -x against -f(x). The rest of the block
 * is zeroed: the loops run a constant BLOCK times, which gcc -O2
 * vectorises without a scalar epilogue. */
static void check_block(Check *c, float *x, float *y, float *ym, int n) {
  for (int i = n; i < BLOCK; i++)
    x[i] = 0;
  c->run(x, y);
  for (int i = 0; i < n; i++)
    check_one(c, x[i], y[i]);
  if (!c->odd)
    return;
  for (int i = 0; i < n; i++)
    x[i] = -x[i];
  c->run(x, ym);
  for (int i = 0; i < n; i++)
    if (kiln_bits_of_float(ym[i]) != kiln_bits_of_float(-y[i]) && !(isnan(ym[i]) && isnan(y[i])))
      fail(c, x[i]);
}

/* Every stride-th bit pattern from first to last (and their negations
 * for a function that is not odd: sign_bit 0x80000000). */
static void check_patterns(Check *c, uint32_t first, uint32_t last, uint32_t sign_bit, unsigned stride) {
  static float x[BLOCK], y[BLOCK], ym[BLOCK];
  int n = 0;
  for (uint64_t bits = first; bits <= last; bits += stride) {
    x[n++] = kiln_float_of_bits((uint32_t)bits);
    if (sign_bit)
      x[n++] = kiln_float_of_bits((uint32_t)bits | sign_bit);
    if (n >= BLOCK - 1 || bits + stride > last) {
      check_block(c, x, y, ym, n);
      n = 0;
    }
  }
}

static void check_all(Check *c, unsigned stride) {
  check_patterns(c, 0x32800000u /* 2^-26 */, kiln_bits_of_float(c->busy_max), c->odd ? 0 : 0x80000000u, stride);
  check_patterns(c, 0, c->odd ? 0x7FFFFFFFu : 0xFFFFFFFFu, 0, 61 * stride);
}

static bool report(const Check *c) {
  bool ok = c->failures == 0 && c->worst_ulp <= c->ulp_bound && c->worst_abs <= c->abs_bound;
  printf("%-10s max %.3f ulp (x = %a), max %.3g absolute (x = %a), NaN/sign/oddness failures %lld: %s\n",
         c->name, c->worst_ulp, (double)c->worst_ulp_x, c->worst_abs, (double)c->worst_abs_x, c->failures,
         ok ? "ok" : "FAIL");
  if (c->failures)
    printf("  first NaN/sign/oddness failure at x = %a\n", (double)c->failure_x);
  return ok;
}

/* kiln_expf_nonpos (softmax's exp of x - max <= 0) on every 7·stride-th
 * float x <= 0, -0 to -NaN: kiln_expf's result bit for bit from -87.34
 * up, 0 below (-inf included), NaN for NaN. */
static bool check_exp_nonpos(unsigned stride) {
  static float x[BLOCK], y[BLOCK];
  long long bad = 0;
  float bad_x = 0;
  uint64_t step = 7ull * stride;
  for (uint64_t u = 0x80000000u; u <= 0xFFFFFFFFu;) {
    int n = 0;
    for (; n < BLOCK && u <= 0xFFFFFFFFu; n++, u += step)
      x[n] = kiln_float_of_bits((uint32_t)u);
    for (int i = n; i < BLOCK; i++)
      x[i] = 0.0f;
    run_exp_nonpos(x, y);
    for (int i = 0; i < n; i++) {
      float want = isnan(x[i]) ? NAN : x[i] < -87.3365479f ? 0.0f : kiln_expf(x[i]);
      bool ok = isnan(want) ? isnan(y[i]) : kiln_bits_of_float(y[i]) == kiln_bits_of_float(want);
      if (!ok && bad++ == 0)
        bad_x = x[i];
    }
  }
  printf("%-10s kiln_expf's bits on [-87.34, 0], 0 below, NaN for NaN: %lld failures%s\n", "expf_nonpos", bad,
         bad ? "" : ": ok");
  if (bad)
    printf("  first failure at x = %a\n", (double)bad_x);
  return bad == 0;
}

int main(int argc, char **argv) {
  unsigned stride = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1;
  if (stride == 0) {
    fprintf(stderr, "usage: vecmath_exhaustive [STRIDE >= 1]\n");
    return 2;
  }
  Check checks[] = {
      {"kiln_expf", run_exp, ref_exp, false, 104.0f, 1.5, INFINITY, 0, 0, 0, 0, 0, 0},
      {"kiln_erff", run_erf, ref_erf, true, 4.0f, 1.5, 1e-7, 0, 0, 0, 0, 0, 0},
      {"erff_vec", run_erf_vec, ref_erf, true, 4.0f, 1.5, 1e-7, 0, 0, 0, 0, 0, 0},
      {"erff_vec16", run_erf_vec16, ref_erf, true, 4.0f, 1.5, 1e-7, 0, 0, 0, 0, 0, 0},
      {"erff_vec4", run_erf_vec4, ref_erf, true, 4.0f, 1.5, 1e-7, 0, 0, 0, 0, 0, 0},
      {"kiln_tanhf", run_tanh, ref_tanh, true, 10.0f, 2.0, INFINITY, 0, 0, 0, 0, 0, 0},
  };
  bool ok = true;
  for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
    check_all(&checks[i], stride);
    ok = report(&checks[i]) && ok;
  }
  ok = check_exp_nonpos(stride) && ok;
  return ok ? 0 : 1;
}
