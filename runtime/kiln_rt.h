/* kiln_rt.h — the whole runtime of kiln's generated code: a few portable
 * macros and the vector math below. Generated files include it; it has no
 * .c and no dependencies beyond the C standard library's headers. */
#ifndef KILN_RT_H
#define KILN_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define KILN_ALIGNED(n) __attribute__((aligned(n)))
#else
#define KILN_ALIGNED(n)
#endif

/* Before a loop whose iteration i reads and writes only element i of each
 * array (an output written over its input is fine): no iteration depends on
 * another. Row kernels needed it under OpenMP, which moved a parallel
 * loop's body into a function of its own where the kernel's restrict
 * pointers were plain ones (gcc then left AddLayerNorm's loops scalar: one
 * thread of a --threads 2 MiniLM build 9% slower than the serial build);
 * kiln's pool keeps the loops in the kernel, and the pragma stays where
 * the dependence analysis needs the help. */
#if defined(__clang__)
#define KILN_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define KILN_IVDEP _Pragma("GCC ivdep")
#else
#define KILN_IVDEP
#endif

/* Compile-time check usable in C99 (no _Static_assert needed). */
#define KILN_STATIC_ASSERT(cond, name) typedef char kiln_assert_##name[(cond) ? 1 : -1]

/* ---- vector math -----------------------------------------------------------
 * kiln_expf, kiln_erff and kiln_tanhf: the f32 exp, erf and tanh of the
 * generated kernels (softmax, attention, GELU, the Exp/Erf/Tanh ops), in
 * place of libm's expf/erff/tanhf, which are calls gcc cannot vectorise.
 * Each is straight-line float arithmetic — no branch on the value, no
 * table; the two halves of erf and tanh are both computed and one is
 * selected by a bit mask (kiln_selectf) — so a loop that calls them
 * vectorises at -O2 (8 lanes with -march=native on AVX2, 16 on AVX-512;
 * 4 with plain SSE2). A `c ? a : b` would not do for gcc: it moves the
 * computation of the half that is used on one side only into a branch,
 * and under the default -ftrapping-math it may not turn that back into
 * straight-line vector code.
 *
 * Accuracy against double-precision libm, measured on every float where
 * they compute anything and on every 61st bit pattern of the rest
 * (tests/vecmath/vecmath_exhaustive.c), without / with FMA contraction:
 *   kiln_expf   max 0.99 / 1.02 ulp   (subnormal results included)
 *   kiln_erff   max 1.09 / 1.05 ulp, 6.5e-8 absolute
 *   KILN_ERFF_VEC's table form (8, 16 lanes, gcc) 1.23 / 1.04 ulp, 7.3e-8
 *   kiln_tanhf  max 1.33 / 1.33 ulp
 * (libm's own are within 1 ulp); the test holds them to 1.5, 1.5 and
 * 1e-7 absolute, and 2 ulp.
 * Special values as C99 says: NaN gives NaN, ±inf gives exp's inf/0 and
 * erf's/tanh's ±1, -0 gives -0 (erf, tanh), exp overflows to inf above
 * 88.72 and underflows through the subnormals to 0 below -103.97.
 * They rely on IEEE float arithmetic in round-to-nearest: built with
 * -ffast-math, the rounding by adding 1.5·2^23 may be folded away.
 *
 * The coefficients are near-minimax fits of our own (float coefficients,
 * Lawson's algorithm on Chebyshev points): tools/fit_vecmath.py prints
 * this block of #defines and checks it (--check runtime/kiln_rt.h). */
#include <math.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define KILN_MATH static inline __attribute__((always_inline))
#else
#define KILN_MATH static inline
#endif

/* EXPF: n = round(x·LOG2E), r = x - n·LN2_HI - n·LN2_LO */
#define KILN_EXPF_LOG2E 1.44269502f
#define KILN_EXPF_LN2_HI 0.693145752f
#define KILN_EXPF_LN2_LO 1.42860677e-06f
/* EXPF: fit error 3.1e-09 (relative, |r| <= 0.3467) */
#define KILN_EXPF_C2 0.49999994f
#define KILN_EXPF_C3 0.166665211f
#define KILN_EXPF_C4 0.0416682623f
#define KILN_EXPF_C5 0.00836867467f
#define KILN_EXPF_C6 0.00138210552f
/* ERFF_P: fit error 1.4e-08 (relative, |x| < 0.875) */
#define KILN_ERFF_P_C0 0.128379151f
#define KILN_ERFF_P_C1 -0.376125067f
#define KILN_ERFF_P_C2 0.112819627f
#define KILN_ERFF_P_C3 -0.0267722793f
#define KILN_ERFF_P_C4 0.00500202086f
#define KILN_ERFF_P_C5 -0.000603880559f
/* ERFF_Q: fit error 8.5e-09 (absolute in erf, 0.875 <= |x| <= 4) */
#define KILN_ERFF_Q_C0 -1.5328244f
#define KILN_ERFF_Q_C1 -2.43022275f
#define KILN_ERFF_Q_C2 -0.826508343f
#define KILN_ERFF_Q_C3 -0.0470155329f
#define KILN_ERFF_Q_C4 0.0114943767f
#define KILN_ERFF_Q_C5 -0.00224940595f
#define KILN_ERFF_Q_C6 0.000255125051f
/* TANHF_P: fit error 4.5e-09 (relative, |x| < 0.625) */
#define KILN_TANHF_P_C0 -0.333332807f
#define KILN_TANHF_P_C1 0.133314058f
#define KILN_TANHF_P_C2 -0.0537365153f
#define KILN_TANHF_P_C3 0.0206281673f
#define KILN_TANHF_P_C4 -0.00569229666f

KILN_MATH float kiln_float_of_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

KILN_MATH uint32_t kiln_bits_of_float(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* c ? a : b without a branch: the bits of a where c, of b elsewhere. */
KILN_MATH float kiln_selectf(bool c, float a, float b) {
  const uint32_t mask = 0u - (uint32_t)c;
  return kiln_float_of_bits((kiln_bits_of_float(a) & mask) | (kiln_bits_of_float(b) & ~mask));
}

/* Round to the nearest integer (ties to even) for |x| < 2^22: added to
 * 1.5·2^23, x loses its fraction; subtracted again, the integer is left. */
KILN_MATH float kiln_roundf(float x) {
  const float shifter = 12582912.0f;
  return (x + shifter) - shifter;
}

/* 2^k for an integer-valued k in [-126, 127]: k + 1.5·2^23 + 127 holds
 * k + 127 in its low mantissa bits; shifted left by 23 they become the
 * exponent field of 2^k and the rest falls off the top. */
KILN_MATH float kiln_pow2if(float k) {
  return kiln_float_of_bits(kiln_bits_of_float(k + 12583039.0f) << 23);
}

/* e^r for r = x - n·ln2 (n = round(x / ln2)): the reduction and the
 * degree-6 polynomial that kiln_expf and kiln_expf_nonpos share. */
KILN_MATH float kiln_expf_reduced(float x, float n) {
  float r = x - n * KILN_EXPF_LN2_HI; /* exact */
  r = r - n * KILN_EXPF_LN2_LO;
  float p = KILN_EXPF_C6;
  p = p * r + KILN_EXPF_C5;
  p = p * r + KILN_EXPF_C4;
  p = p * r + KILN_EXPF_C3;
  p = p * r + KILN_EXPF_C2;
  return 1.0f + (r + r * r * p);
}

/* exp(x) = 2^n · e^r with n = round(x / ln2), |r| <= ln2/2, e^r by a
 * degree-6 polynomial. 2^n is applied in two halves, 2^n1 · 2^n2, so that
 * n from -150 to 128 needs no special case: the result overflows to inf
 * or rounds into the subnormals (once, at the last product) by itself.
 * x is clamped to [-104, 89] first, where the result is already 0 / inf. */
KILN_MATH float kiln_expf(float x) {
  x = kiln_selectf(x > 89.0f, 89.0f, x); /* comparisons keep a NaN as it is */
  x = kiln_selectf(x < -104.0f, -104.0f, x);
  const float n = kiln_roundf(x * KILN_EXPF_LOG2E);
  const float p = kiln_expf_reduced(x, n);
  const float n1 = kiln_roundf(n * 0.5f);
  return p * kiln_pow2if(n1) * kiln_pow2if(n - n1);
}

/* exp(x) for x <= 0, as softmax's exp(x - max) needs: kiln_expf's steps
 * with one 2^n (n >= -126 after the clamp), and 0 below -87.34 where
 * kiln_expf rounds into the subnormals (softmax then divides by a sum of
 * at least 1: a difference below 1.2e-38). Equal to kiln_expf bit for bit
 * on [-87.34, 0]; NaN gives NaN. Two operations fewer an element, and one
 * vector of bits instead of two (KILN_EXPF_NONPOS_VEC is its vector form). */
KILN_MATH float kiln_expf_nonpos(float x) {
  const bool tiny = x < -87.3365479f;
  x = kiln_selectf(tiny, -87.3365479f, x);
  const float n = kiln_roundf(x * KILN_EXPF_LOG2E);
  return kiln_selectf(tiny, 0.0f, kiln_expf_reduced(x, n) * kiln_pow2if(n));
}

/* kiln_expf's steps on a GNU C vector x <= 0 of floats (type VT; VI is
 * the int vector of its width), as the attention kernel's exp(s - max)
 * needs: n = round(x / ln 2) by the 1.5·2^23 shifter, x - n·ln 2 in two
 * parts, the same degree-6 polynomial, 2^n from the bits of n + 1.5·2^23
 * + 127; as x <= 0, one 2^n does, and x < -87.34 (a subnormal result)
 * gives 0. Within 1.02 ulp elsewhere. A statement expression: GNU C,
 * like the vectors themselves. */
#define KILN_EXPF_NONPOS_VEC(VT, VI, xin)                                       \
  __extension__({                                                             \
    const VT kiln_zero_ = {0};                                                \
    const VT kiln_lo_ = kiln_zero_ - 87.3365479f;                             \
    const VT kiln_shift_ = kiln_zero_ + 12582912.0f;                          \
    VT kiln_x_ = (xin);                                                       \
    const VI kiln_tiny_ = kiln_x_ < kiln_lo_;                                 \
    kiln_x_ = (VT)((kiln_tiny_ & (VI)kiln_lo_) | (~kiln_tiny_ & (VI)kiln_x_)); \
    const VT kiln_n_ = (kiln_x_ * KILN_EXPF_LOG2E + kiln_shift_) - kiln_shift_; \
    VT kiln_f_ = kiln_x_ - kiln_n_ * KILN_EXPF_LN2_HI;                        \
    kiln_f_ = kiln_f_ - kiln_n_ * KILN_EXPF_LN2_LO;                           \
    VT kiln_p_ = kiln_f_ * KILN_EXPF_C6 + KILN_EXPF_C5;                       \
    kiln_p_ = kiln_p_ * kiln_f_ + KILN_EXPF_C4;                               \
    kiln_p_ = kiln_p_ * kiln_f_ + KILN_EXPF_C3;                               \
    kiln_p_ = kiln_p_ * kiln_f_ + KILN_EXPF_C2;                               \
    kiln_p_ = 1.0f + (kiln_f_ + kiln_f_ * kiln_f_ * kiln_p_);                 \
    const VI kiln_pow2n_ = ((VI)(kiln_n_ + 12583039.0f) - 0x4B400000) << 23;  \
    (VT)((VI)(kiln_p_ * (VT)kiln_pow2n_) & ~kiln_tiny_);                      \
  })

/* erf(x) = ±erf(a), a = |x|: below a = 0.875, a + a·P(a²); above,
 * 1 - erfc(a) with erfc(a) = exp(Q(a - 0.875)), a clamped at 4 (erf(4) is
 * 1 in float). The sign is put back last, so erf(-x) is -erf(x) exactly. */
KILN_MATH float kiln_erff(float x) {
  const float a = fabsf(x), x2 = a * a;
  float p = KILN_ERFF_P_C5;
  p = p * x2 + KILN_ERFF_P_C4;
  p = p * x2 + KILN_ERFF_P_C3;
  p = p * x2 + KILN_ERFF_P_C2;
  p = p * x2 + KILN_ERFF_P_C1;
  p = p * x2 + KILN_ERFF_P_C0;
  const float small = a + a * p;
  const float t = kiln_selectf(a > 4.0f, 4.0f, a) - 0.875f;
  float q = KILN_ERFF_Q_C6;
  q = q * t + KILN_ERFF_Q_C5;
  q = q * t + KILN_ERFF_Q_C4;
  q = q * t + KILN_ERFF_Q_C3;
  q = q * t + KILN_ERFF_Q_C2;
  q = q * t + KILN_ERFF_Q_C1;
  q = q * t + KILN_ERFF_Q_C0;
  const float large = 1.0f - kiln_expf(q);
  return copysignf(kiln_selectf(a < 0.875f, small, large), x);
}

/* kiln_erff's steps on a GNU C vector x of floats (type VT; VI the int
 * vector of its width): the same polynomials, the large branch's exp by
 * KILN_EXPF_NONPOS_VEC (its argument, log erfc, is <= 0 there), both
 * branches computed and one kept per lane, the sign put back by its bit.
 * KILN_ERFF_VEC's form for clang and for vectors of 4 lanes. Within the
 * bound kiln_erff states (tests/vecmath). */
#define KILN_ERFF_VEC_EXP(VT, VI, xin)                                              \
  __extension__({                                                             \
    const VT kiln_ex_ = (xin);                                                \
    const VI kiln_sign_ = (VI)kiln_ex_ & ((VI){0} + (-2147483647 - 1));       \
    const VT kiln_a_ = (VT)((VI)kiln_ex_ & ~kiln_sign_);                      \
    const VT kiln_x2_ = kiln_a_ * kiln_a_;                                    \
    VT kiln_erfp_ = kiln_x2_ * KILN_ERFF_P_C5 + KILN_ERFF_P_C4;                  \
    kiln_erfp_ = kiln_erfp_ * kiln_x2_ + KILN_ERFF_P_C3;                            \
    kiln_erfp_ = kiln_erfp_ * kiln_x2_ + KILN_ERFF_P_C2;                            \
    kiln_erfp_ = kiln_erfp_ * kiln_x2_ + KILN_ERFF_P_C1;                            \
    kiln_erfp_ = kiln_erfp_ * kiln_x2_ + KILN_ERFF_P_C0;                            \
    const VT kiln_small_ = kiln_a_ + kiln_a_ * kiln_erfp_;                       \
    const VI kiln_big_ = kiln_a_ > (VT){0} + 4.0f;                            \
    const VT kiln_t_ = (VT)((kiln_big_ & (VI)((VT){0} + 4.0f)) |              \
                            (~kiln_big_ & (VI)kiln_a_)) - 0.875f;             \
    VT kiln_q_ = kiln_t_ * KILN_ERFF_Q_C6 + KILN_ERFF_Q_C5;                   \
    kiln_q_ = kiln_q_ * kiln_t_ + KILN_ERFF_Q_C4;                             \
    kiln_q_ = kiln_q_ * kiln_t_ + KILN_ERFF_Q_C3;                             \
    kiln_q_ = kiln_q_ * kiln_t_ + KILN_ERFF_Q_C2;                             \
    kiln_q_ = kiln_q_ * kiln_t_ + KILN_ERFF_Q_C1;                             \
    kiln_q_ = kiln_q_ * kiln_t_ + KILN_ERFF_Q_C0;                             \
    const VT kiln_large_ = 1.0f - KILN_EXPF_NONPOS_VEC(VT, VI, kiln_q_);      \
    const VI kiln_lo_ = kiln_a_ < (VT){0} + 0.875f;                           \
    (VT)(((kiln_lo_ & (VI)kiln_small_) | (~kiln_lo_ & (VI)kiln_large_)) | kiln_sign_); \
  })

/* KILN_ERFF_VEC_TAB's pieces (tools/fit_vecmath.py, fit_erf_pieces): on
 * piece i = floor(2a) of a = |x| in [0, 4), t = a - i/2,
 *   erf(a) = (C0 + t·U) + (C0LO + t·(C1 + t·(C2 + ... + t·C7)))
 * with row k's value for piece i at kiln_erff_tab[k][i] (and [i + 8]).
 * C0 + C0LO is erf(i/2) to far below an ulp; piece 0 has C0 = C0LO = 0,
 * U = 1: erf(a) = a + a·(2/√π - 1 + ...), relative to an ulp at any a. */
#define KILN_ERFF_TAB_C0 0
#define KILN_ERFF_TAB_C0LO 1
#define KILN_ERFF_TAB_C(k) (1 + (k))
#define KILN_ERFF_TAB_U 9
#if defined(__GNUC__)
__attribute__((unused))
#endif
static const float kiln_erff_tab[10][16] = {
/* ERFF_TAB: fit error 1.2e-08 (relative on [0, 0.5), absolute above; 8 pieces, degree 7) */
    {0.0f, 0.520499885f, 0.842700779f, 0.966105163f, 0.995322287f, 0.999593019f, 0.999977887f, 0.999999285f, /* C0 */
     0.0f, 0.520499885f, 0.842700779f, 0.966105163f, 0.995322287f, 0.999593019f, 0.999977887f, 0.999999285f},
    {0.0f, -7.55832819e-09f, 1.41764627e-08f, -1.67031544e-08f, -2.21828511e-08f, 2.85067951e-08f, 2.28359998e-08f, -2.78412529e-08f, /* C0LO */
     0.0f, -7.55832819e-09f, 1.41764627e-08f, -1.67031544e-08f, -2.21828511e-08f, 2.85067951e-08f, 2.28359998e-08f, -2.78412529e-08f},
    {0.128379181f, 0.87878263f, 0.41510734f, 0.11893031f, 0.0206670165f, 0.00217828201f, 0.000139250493f, 5.39906068e-06f, /* C1 */
     0.128379181f, 0.87878263f, 0.41510734f, 0.11893031f, 0.0206670165f, 0.00217828201f, 0.000139250493f, 5.39906068e-06f},
    {-2.47230128e-06f, -0.439394057f, -0.415100634f, -0.17839621f, -0.0413353071f, -0.00544562424f, -0.000417649571f, -1.88820468e-05f, /* C2 */
     -2.47230128e-06f, -0.439394057f, -0.415100634f, -0.17839621f, -0.0413353071f, -0.00544562424f, -0.000417649571f, -1.88820468e-05f},
    {-0.376054794f, -0.146409452f, 0.138256386f, 0.138762519f, 0.0482448712f, 0.00834884215f, 0.000787308731f, 4.20294127e-05f, /* C3 */
     -0.376054794f, -0.146409452f, 0.138256386f, 0.138762519f, 0.0482448712f, 0.00834884215f, 0.000787308731f, 4.20294127e-05f},
    {-0.000771620427f, 0.182570845f, 0.0700885057f, -0.044662714f, -0.034622252f, -0.00861403998f, -0.00102993369f, -6.55132026e-05f, /* C4 */
     -0.000771620427f, 0.182570845f, 0.0700885057f, -0.044662714f, -0.034622252f, -0.00861403998f, -0.00102993369f, -6.55132026e-05f},
    {0.11672546f, 0.00991465151f, -0.0731005147f, -0.0147056701f, 0.0138754752f, 0.00609152345f, 0.000952533737f, 7.19887175e-05f, /* C5 */
     0.11672546f, 0.00991465151f, -0.0731005147f, -0.0147056701f, 0.0138754752f, 0.00609152345f, 0.000952533737f, 7.19887175e-05f},
    {-0.00959363021f, -0.0575740673f, 0.0139528932f, 0.019378107f, -0.00150673208f, -0.00277898996f, -0.000578164239f, -5.08667981e-05f, /* C6 */
     -0.00959363021f, -0.0575740673f, 0.0139528932f, 0.019378107f, -0.00150673208f, -0.00277898996f, -0.000578164239f, -5.08667981e-05f},
    {-0.0168682542f, 0.0177126285f, 0.00379385147f, -0.00590206916f, -0.000727370847f, 0.000634933007f, 0.000173945082f, 1.72425389e-05f, /* C7 */
     -0.0168682542f, 0.0177126285f, 0.00379385147f, -0.00590206916f, -0.000727370847f, 0.000634933007f, 0.000173945082f, 1.72425389e-05f},
    {1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, /* U */
     1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f},
};

/* Row `row` of kiln_erff_tab for each lane's piece (idx, 0..7): a vector
 * of 8 or 16 lanes loads the row and permutes it by idx (one vpermps). */
#define KILN_ERFF_TAB_ROW(VT, row, idx)                                         \
  __extension__({                                                             \
    VT kiln_row_;                                                             \
    memcpy(&kiln_row_, kiln_erff_tab[row], sizeof kiln_row_);                 \
    __builtin_shuffle(kiln_row_, (idx));                                      \
  })

/* erf on a GNU C vector of 8 or 16 floats by the table: no exp, no second
 * branch. a = |x| clamped below 4 (erf rounds to 1 from 3.92 on; a NaN
 * stays NaN, its lane's piece is any), i = (int)(2a), t = a - i/2 exact;
 * ten row lookups and nine FMAs; the sign put back by its bit. Within 1.23
 * ulp and 7.3e-8 absolute (1.04 and 6.2e-8 with FMA; tests/vecmath:
 * erff_vec, erff_vec16), about 1.6x faster than KILN_ERFF_VEC_EXP in a
 * loop (AVX-512, 16 lanes). gcc only: clang has no __builtin_shuffle of
 * a variable index. */
#define KILN_ERFF_VEC_TAB(VT, VI, xin)                                          \
  __extension__({                                                             \
    const VT kiln_ex_ = (xin);                                                \
    const VI kiln_sign_ = (VI)kiln_ex_ & ((VI){0} + (-2147483647 - 1));       \
    VT kiln_a_ = (VT)((VI)kiln_ex_ & ~kiln_sign_);                            \
    const VI kiln_big_ = kiln_a_ > (VT){0} + 3.99999976f;                     \
    kiln_a_ = (VT)((kiln_big_ & (VI)((VT){0} + 3.99999976f)) | (~kiln_big_ & (VI)kiln_a_)); \
    const VI kiln_i_ = __builtin_convertvector(kiln_a_ * 2.0f, VI);           \
    const VT kiln_t_ = kiln_a_ - __builtin_convertvector(kiln_i_, VT) * 0.5f; \
    VT kiln_q_ = KILN_ERFF_TAB_ROW(VT, KILN_ERFF_TAB_C(7), kiln_i_);          \
    kiln_q_ = kiln_q_ * kiln_t_ + KILN_ERFF_TAB_ROW(VT, KILN_ERFF_TAB_C(6), kiln_i_); \
    kiln_q_ = kiln_q_ * kiln_t_ + KILN_ERFF_TAB_ROW(VT, KILN_ERFF_TAB_C(5), kiln_i_); \
    kiln_q_ = kiln_q_ * kiln_t_ + KILN_ERFF_TAB_ROW(VT, KILN_ERFF_TAB_C(4), kiln_i_); \
    kiln_q_ = kiln_q_ * kiln_t_ + KILN_ERFF_TAB_ROW(VT, KILN_ERFF_TAB_C(3), kiln_i_); \
    kiln_q_ = kiln_q_ * kiln_t_ + KILN_ERFF_TAB_ROW(VT, KILN_ERFF_TAB_C(2), kiln_i_); \
    kiln_q_ = kiln_q_ * kiln_t_ + KILN_ERFF_TAB_ROW(VT, KILN_ERFF_TAB_C(1), kiln_i_); \
    kiln_q_ = kiln_q_ * kiln_t_ + KILN_ERFF_TAB_ROW(VT, KILN_ERFF_TAB_C0LO, kiln_i_); \
    const VT kiln_r_ = kiln_q_ + (kiln_t_ * KILN_ERFF_TAB_ROW(VT, KILN_ERFF_TAB_U, kiln_i_) + \
                                  KILN_ERFF_TAB_ROW(VT, KILN_ERFF_TAB_C0, kiln_i_)); \
    (VT)((VI)kiln_r_ | kiln_sign_);                                           \
  })

/* erf on a GNU C vector x of floats (type VT; VI the int vector of its
 * width), as the packed GEMM's GELU epilogue applies it to the
 * accumulators in registers: the table's form where a permute of a
 * variable index is one instruction (gcc; 8 lanes with AVX2, 16 with
 * AVX-512), kiln_erff's steps (exp) elsewhere. The width is a constant,
 * so the choice costs nothing at run time. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)
#define KILN_ERFF_VEC(VT, VI, xin)                                              \
  (sizeof(VT) == 32 || sizeof(VT) == 64 ? KILN_ERFF_VEC_TAB(VT, VI, xin)      \
                                        : KILN_ERFF_VEC_EXP(VT, VI, xin))
#elif defined(__GNUC__) && !defined(__clang__) && defined(__AVX2__)
#define KILN_ERFF_VEC(VT, VI, xin)                                              \
  (sizeof(VT) == 32 ? KILN_ERFF_VEC_TAB(VT, VI, xin) : KILN_ERFF_VEC_EXP(VT, VI, xin))
#else
#define KILN_ERFF_VEC(VT, VI, xin) KILN_ERFF_VEC_EXP(VT, VI, xin)
#endif

/* tanh(x) = ±tanh(a), a = |x|: below a = 0.625, a + a³·P(a²); above,
 * 1 - 2 / (e^2a + 1), a clamped at 10 (tanh(10) is 1 in float). The sign
 * is put back last, so tanh(-x) is -tanh(x) exactly, -0 included. */
KILN_MATH float kiln_tanhf(float x) {
  const float a = fabsf(x), x2 = a * a;
  float p = KILN_TANHF_P_C4;
  p = p * x2 + KILN_TANHF_P_C3;
  p = p * x2 + KILN_TANHF_P_C2;
  p = p * x2 + KILN_TANHF_P_C1;
  p = p * x2 + KILN_TANHF_P_C0;
  const float small = a + a * x2 * p;
  const float e = kiln_expf(2.0f * kiln_selectf(a > 10.0f, 10.0f, a));
  const float large = 1.0f - 2.0f / (e + 1.0f);
  return copysignf(kiln_selectf(a < 0.625f, small, large), x);
}


/* ---- f16 and bf16 -------------------------------------------------------------
 * Tensors of ONNX's FLOAT16 (IEEE binary16) and BFLOAT16 are stored as
 * their uint16_t bit patterns and computed in float: an element is read
 * through kiln_f16_to_f32 / kiln_bf16_to_f32 (exact) and written through
 * kiln_f32_to_f16 / kiln_f32_to_bf16, which round to nearest, ties to even,
 * overflow to infinity and keep NaN a (quiet) NaN. */
KILN_MATH float kiln_f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) { /* zero or subnormal: m * 2^-24, exact in float */
    const float v = (float)m * 0x1p-24f;
    return sign ? -v : v;
  }
  /* normal: rebias 15 -> 127; inf and NaN keep an all-ones exponent */
  return kiln_float_of_bits(sign | (e == 0x1f ? 0x7f800000u : (e + 112u) << 23) | m << 13);
}

KILN_MATH uint16_t kiln_f32_to_f16(float f) {
  const uint32_t x = kiln_bits_of_float(f), sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u) /* NaN: quiet, with the payload's top bits */
    return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) /* 65520 and above round to infinity */
    return (uint16_t)(sign | 0x7c00u);
  if (a >= 0x38800000u) { /* normal: rebias 127 -> 15, round at bit 13 (a carry bumps the exponent) */
    const uint32_t r = a - 0x38000000u;
    return (uint16_t)(sign | (r + 0xfffu + ((r >> 13) & 1u)) >> 13);
  }
  if (a <= 0x33000000u) /* at most 2^-25: rounds to zero (2^-25 is a tie, zero is even) */
    return (uint16_t)sign;
  /* subnormal: the significand (with its hidden bit) shifted to units of 2^-24 */
  const uint32_t m = (a & 0x7fffffu) | 0x800000u, shift = 126u - (a >> 23);
  const uint32_t q = m >> shift, rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  return (uint16_t)(sign | (q + (rest > half || (rest == half && (q & 1u)))));
}

/* A double rounded to float "to odd" (toward zero, then the last bit set
 * when anything was lost): rounding that float to a 16-bit format then
 * gives the double correctly rounded, which a plain (float) conversion
 * followed by a second rounding would not always do (f64 -> f16 Cast). */
KILN_MATH float kiln_f64_to_f32_odd(double x) {
  const float f = (float)x;
  if (!((double)f < x || (double)f > x)) /* exact, or NaN */
    return f;
  uint32_t u = kiln_bits_of_float(f);
  if ((double)f < 0.0 ? (double)f < x : (double)f > x) /* rounded away from zero */
    u -= 1u;
  return kiln_float_of_bits(u | 1u);
}

/* kiln_f16_to_f32 for hot loops: the same exact values. _branchless (a
 * decoder's f16 KV cache: a loop of it vectorises) shifts the 15 bits
 * into an f32's place, which is 2^-112 times the value for zeros,
 * subnormals and normals alike (the product is exact), and gives an
 * all-ones exponent f32's (inf, NaN); _fast (the scales of ggml's weight
 * blocks, compiler/kernels/qgemm_kernel.c) is one F16C instruction
 * (vcvtph2ps) where the compiler targets it, else the same. */
KILN_MATH float kiln_f16_to_f32_branchless(uint16_t h) {
  const uint32_t a = (uint32_t)(h & 0x7fffu) << 13;
  const uint32_t v = kiln_bits_of_float(kiln_float_of_bits(a) * 0x1p112f);
  return kiln_float_of_bits(v | (a >= 0x7c00u << 13 ? 0x7f800000u : 0u) | (uint32_t)(h & 0x8000u) << 16);
}

KILN_MATH float kiln_f16_to_f32_fast(uint16_t h) {
#if defined(__F16C__) && defined(__GNUC__)
  typedef short kiln_v8h __attribute__((vector_size(16)));
  return __builtin_ia32_vcvtph2ps((kiln_v8h){(short)h})[0];
#else
  return kiln_f16_to_f32_branchless(h);
#endif
}

KILN_MATH float kiln_bf16_to_f32(uint16_t h) { return kiln_float_of_bits((uint32_t)h << 16); }

KILN_MATH uint16_t kiln_f32_to_bf16(float f) {
  const uint32_t x = kiln_bits_of_float(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: quiet */
    return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16); /* ties to even; a carry may give inf */
}

/* ---- the narrow types: float8, float4, e8m0, 4- and 2-bit integers -----------
 * Stored as their codes in uint8_t: float8 and e8m0 one a byte, the 4- and
 * 2-bit types packed, element 0 in the lowest bits of byte 0 (ONNX's
 * order). Floats are computed in float like f16: read exactly, written
 * rounded to nearest, ties to even, with ONNX Cast's rules for NaN,
 * infinities and values past the largest code (`sat`: the largest code;
 * otherwise NaN, or inf for e5m2). */
KILN_MATH int kiln_get_u4(const uint8_t *p, int64_t i) { return p[i >> 1] >> ((i & 1) * 4) & 15; }
KILN_MATH int kiln_get_i4(const uint8_t *p, int64_t i) { return (kiln_get_u4(p, i) ^ 8) - 8; }
KILN_MATH int kiln_get_u2(const uint8_t *p, int64_t i) { return p[i >> 2] >> ((i & 3) * 2) & 3; }
KILN_MATH int kiln_get_i2(const uint8_t *p, int64_t i) { return (kiln_get_u2(p, i) ^ 2) - 2; }
KILN_MATH void kiln_set_4(uint8_t *p, int64_t i, unsigned v) {
  const int sh = (int)(i & 1) * 4;
  p[i >> 1] = (uint8_t)((p[i >> 1] & ~(15u << sh)) | (v & 15u) << sh);
}
KILN_MATH void kiln_set_2(uint8_t *p, int64_t i, unsigned v) {
  const int sh = (int)(i & 3) * 2;
  p[i >> 2] = (uint8_t)((p[i >> 2] & ~(3u << sh)) | (v & 3u) << sh);
}

/* The value of a code without its sign bit: mbits mantissa bits, exponent
 * bias `bias` (exact in float). */
KILN_MATH float kiln_minifloat_to_f32(uint32_t mag, int mbits, int bias) {
  const uint32_t e = mag >> mbits, m = mag & ((1u << mbits) - 1u);
  if (e == 0) /* zero or subnormal: m * 2^(1 - bias - mbits) */
    return (float)m * kiln_float_of_bits((uint32_t)(128 - bias - mbits) << 23);
  return kiln_float_of_bits((e + 127u - (uint32_t)bias) << 23 | m << (23 - mbits));
}
KILN_MATH float kiln_signed_f32(float v, int neg) { return neg ? -v : v; }

KILN_MATH float kiln_f8e4m3fn_to_f32(uint8_t c) {
  return (c & 0x7f) == 0x7f ? NAN : kiln_signed_f32(kiln_minifloat_to_f32(c & 0x7fu, 3, 7), c & 0x80);
}
KILN_MATH float kiln_f8e4m3fnuz_to_f32(uint8_t c) {
  return c == 0x80 ? NAN : kiln_signed_f32(kiln_minifloat_to_f32(c & 0x7fu, 3, 8), c & 0x80);
}
KILN_MATH float kiln_f8e5m2_to_f32(uint8_t c) {
  const uint32_t m = c & 0x7fu;
  return m > 0x7c ? NAN : kiln_signed_f32(m == 0x7c ? INFINITY : kiln_minifloat_to_f32(m, 2, 15), c & 0x80);
}
KILN_MATH float kiln_f8e5m2fnuz_to_f32(uint8_t c) {
  return c == 0x80 ? NAN : kiln_signed_f32(kiln_minifloat_to_f32(c & 0x7fu, 2, 16), c & 0x80);
}
KILN_MATH float kiln_f4e2m1_to_f32(int c) { return kiln_signed_f32(kiln_minifloat_to_f32((uint32_t)c & 7u, 1, 1), c & 8); }
KILN_MATH float kiln_f8e8m0_to_f32(uint8_t c) {
  return c == 0xff ? NAN : c == 0 ? 0x1p-127f : kiln_float_of_bits((uint32_t)c << 23);
}

/* The code (without sign) of |f| (bits a, finite) rounded to mbits mantissa
 * bits and exponent bias `bias`, ties to even, with no upper limit: the
 * caller compares it with its largest code. */
KILN_MATH uint32_t kiln_minifloat_mag(uint32_t a, int mbits, int bias) {
  const int fe = (int)(a >> 23) ? (int)(a >> 23) : 1;      /* f32's biased exponent */
  const uint32_t m = (a & 0x7fffffu) | (a >> 23 ? 0x800000u : 0u); /* with the hidden bit */
  const int te = fe - 127 + bias;                          /* the target's biased exponent */
  const int shift = 23 - mbits + (te < 1 ? 1 - te : 0);    /* subnormal: a larger quantum */
  if (shift > 24) /* below half the smallest subnormal */
    return 0;
  const uint32_t q = m >> shift, rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
  const uint32_t r = q + (rest > half || (rest == half && (q & 1u))); /* a carry bumps the exponent */
  return te < 1 ? r : ((uint32_t)(te - 1) << mbits) + r;
}

KILN_MATH uint8_t kiln_f32_to_f8e4m3fn(float f, int sat) {
  const uint32_t x = kiln_bits_of_float(f), a = x & 0x7fffffffu, s = x >> 24 & 0x80u;
  if (a > 0x7f800000u) /* NaN, its sign kept */
    return (uint8_t)(s | 0x7f);
  const uint32_t c = a == 0x7f800000u ? 0xffu : kiln_minifloat_mag(a, 3, 7);
  return (uint8_t)(s | (c <= 0x7e ? c : sat ? 0x7e : 0x7f));
}
KILN_MATH uint8_t kiln_f32_to_f8e5m2(float f, int sat) {
  const uint32_t x = kiln_bits_of_float(f), a = x & 0x7fffffffu, s = x >> 24 & 0x80u;
  if (a > 0x7f800000u)
    return (uint8_t)(s | 0x7e);
  const uint32_t c = a == 0x7f800000u ? 0xffu : kiln_minifloat_mag(a, 2, 15);
  return (uint8_t)(s | (c <= 0x7b ? c : sat ? 0x7b : 0x7c));
}
/* the "uz" kinds: no -0 (a negative result of 0 is +0), NaN 0x80 alone */
KILN_MATH uint8_t kiln_f32_to_uz(float f, int sat, int mbits, int bias) {
  const uint32_t x = kiln_bits_of_float(f), a = x & 0x7fffffffu, s = x >> 24 & 0x80u;
  if (a > 0x7f800000u)
    return 0x80;
  const uint32_t c = a == 0x7f800000u ? 0xffu : kiln_minifloat_mag(a, mbits, bias);
  return (uint8_t)(c == 0 ? 0 : c <= 0x7f ? s | c : sat ? s | 0x7f : 0x80);
}
KILN_MATH uint8_t kiln_f32_to_f8e4m3fnuz(float f, int sat) { return kiln_f32_to_uz(f, sat, 3, 8); }
KILN_MATH uint8_t kiln_f32_to_f8e5m2fnuz(float f, int sat) { return kiln_f32_to_uz(f, sat, 2, 16); }
/* float4 has no NaN nor infinity: it saturates, and a NaN becomes a zero
 * of the other sign (what ml_dtypes, ONNX's reference, gives) */
KILN_MATH unsigned kiln_f32_to_f4e2m1(float f) {
  const uint32_t x = kiln_bits_of_float(f), a = x & 0x7fffffffu, s = x >> 28 & 8u;
  if (a > 0x7f800000u)
    return s ^ 8u;
  const uint32_t c = a == 0x7f800000u ? 7u : kiln_minifloat_mag(a, 1, 1);
  return s | (c <= 7u ? c : 7u);
}
/* e8m0: 2^(c - 127), the power of two |f| rounds to: mode 0 up (away from
 * zero), 1 down, 2 nearest (ties up); past either end the end code when
 * saturating, else NaN (0xff). */
KILN_MATH uint8_t kiln_f32_to_f8e8m0(float f, int sat, int mode) {
  const uint32_t a = kiln_bits_of_float(f) & 0x7fffffffu;
  if (a > 0x7f800000u)
    return 0xff;
  if (a == 0x7f800000u)
    return sat ? 0xfe : 0xff;
  if (a == 0)
    return sat ? 0 : 0xff;
  int e = (int)(a >> 23) - 127;  /* |f| = m * 2^e, m in [1, 2) */
  uint32_t m = a & 0x7fffffu;
  if (e == -127) {               /* subnormal: m * 2^-149, normalised */
    e = -126;
    while (!(m & 0x800000u)) {
      m <<= 1;
      e--;
    }
    m &= 0x7fffffu;
  }
  e += mode == 0 ? m != 0 : mode == 2 ? m >= 0x400000u : 0;
  return (uint8_t)(e < -127 ? (sat ? 0 : 0xff) : e > 127 ? (sat ? 0xfe : 0xff) : e + 127);
}

/* ---- AMX tiles (--precision=bf16 and --quantize=w8a8 GEMMs) -----------------
 * A thin layer over Intel AMX that the GEMM kernels (compiler/kernels/
 * gemm_kernel.c, igemm_kernel.c) are written in: eight tile registers of
 * 16 rows x 64 bytes, all configured full (the kernels pad their operands
 * to whole tiles, so no other shape is ever needed), and
 *
 *   KILN_TILE_REGS              declares the tiles (a block's first line)
 *   KILN_TILE_CONFIG()          LDTILECFG: palette 1, tiles 0-7 16 x 64 bytes
 *   KILN_TILE_ZERO(t)           TILEZERO
 *   KILN_TILE_LOAD(t, p, s)     TILELOADD: 16 rows of 64 bytes, s bytes apart
 *   KILN_TILE_STORE(t, p, s)    TILESTORED
 *   KILN_TILE_DP_BF16(c, a, b)  TDPBF16PS: c.f32[m][n] += pairs of bf16
 *   KILN_TILE_DP_INT8(c, a, b)  TDPBUSD: c.i32[m][n] += quads of u8 x s8
 *   KILN_TILE_RELEASE()         TILERELEASE
 *
 * KILN_AMX is 2 where the C compiler targets AMX (-march=sapphirerapids,
 * or -march=native on such a CPU: __AMX_TILE__, __AMX_BF16__, __AMX_INT8__)
 * on x86-64 Linux: the macros are the intrinsics, and kiln_amx_ready()
 * says at run time whether the CPU has the three (CPUID leaf 7) and Linux
 * granted the tile data (arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA), asked
 * once, on the first product); when not, the kernels take their AVX-512
 * path. -DKILN_NO_AMX turns it off. KILN_AMX is 1 with -DKILN_AMX_EMULATE
 * (any GNU C compiler, any CPU): the macros are the C model below of the
 * instructions on full tiles, so the kernels' tiling, packing, padding and
 * epilogues run, and are tested, anywhere.
 *
 * The model, from the instructions' pseudo-code in Intel's SDM:
 *   TDPBUSD: for each row m and column n, the 16 dwords k of A's row m and
 *     B's row k hold 4 u8 and 4 s8; their 64 products are added to C[m][n]
 *     in int32 (wrapping: the sums are computed in uint32).
 *   TDPBF16PS: each dword holds a pair of bf16 (the even element in the low
 *     half). For each (m, n), two f32 sums start at 0 and take, for k = 0
 *     .. 15, the even and the odd products by an FMA each (a bf16 product
 *     is exact in f32, so the FMA rounds once); then C[m][n] += even + odd.
 *     Every step rounds to nearest even, denormal inputs are read as 0 and
 *     denormal results flushed to 0 (DAZ, FTZ; MXCSR is not used).
 * tests/amx/amx_model.c holds the model to the instructions, bit for bit,
 * on a CPU that has them. */
#if defined(KILN_AMX_EMULATE) && defined(__GNUC__) && !defined(KILN_GEMM_SCALAR)
#define KILN_AMX 1

typedef struct kiln_tiles {
  unsigned char reg[8][16][64];
} kiln_tiles;

#define KILN_TILE_REGS kiln_tiles kiln_tiles_
#define KILN_TILE_CONFIG() memset(&kiln_tiles_, 0, sizeof kiln_tiles_)
#define KILN_TILE_ZERO(t) memset(kiln_tiles_.reg[t], 0, sizeof kiln_tiles_.reg[t])
#define KILN_TILE_LOAD(t, p, s) kiln_tile_load(&kiln_tiles_, t, p, s)
#define KILN_TILE_STORE(t, p, s) kiln_tile_store(&kiln_tiles_, t, p, s)
#define KILN_TILE_DP_BF16(c, a, b) kiln_tile_dpbf16ps(&kiln_tiles_, c, a, b)
#define KILN_TILE_DP_INT8(c, a, b) kiln_tile_dpbusd(&kiln_tiles_, c, a, b)
#define KILN_TILE_RELEASE() (void)kiln_tiles_

static inline int kiln_amx_ready(void) { return 1; }

static inline void kiln_tile_load(kiln_tiles *r, int t, const void *p, long s) {
  for (int m = 0; m < 16; m++)
    memcpy(r->reg[t][m], (const unsigned char *)p + m * s, 64);
}

static inline void kiln_tile_store(const kiln_tiles *r, int t, void *p, long s) {
  for (int m = 0; m < 16; m++)
    memcpy((unsigned char *)p + m * s, r->reg[t][m], 64);
}

static inline uint32_t kiln_tile_dword(const kiln_tiles *r, int t, int m, int k) {
  uint32_t d;
  memcpy(&d, r->reg[t][m] + 4 * k, 4);
  return d;
}

static inline void kiln_tile_dpbusd(kiln_tiles *r, int c, int a, int b) {
  for (int m = 0; m < 16; m++)
    for (int n = 0; n < 16; n++) {
      uint32_t acc = kiln_tile_dword(r, c, m, n);
      for (int k = 0; k < 16; k++)
        for (int q = 0; q < 4; q++)
          acc += (uint32_t)((int32_t)r->reg[a][m][4 * k + q] * (int32_t)(int8_t)r->reg[b][k][4 * n + q]);
      memcpy(r->reg[c][m] + 4 * n, &acc, 4);
    }
}

/* f with a denormal read as (or flushed to) a zero of its sign */
static inline float kiln_amx_flush(float f) {
  const uint32_t u = kiln_bits_of_float(f);
  return (u & 0x7f800000u) == 0 ? kiln_float_of_bits(u & 0x80000000u) : f;
}

static inline void kiln_tile_dpbf16ps(kiln_tiles *r, int c, int a, int b) {
  for (int m = 0; m < 16; m++)
    for (int n = 0; n < 16; n++) {
      float s[2] = {0.0f, 0.0f};
      for (int k = 0; k < 16; k++) {
        const uint32_t x = kiln_tile_dword(r, a, m, k), y = kiln_tile_dword(r, b, k, n);
        for (int h = 0; h < 2; h++) {
          const float xa = kiln_amx_flush(kiln_float_of_bits(h ? x & 0xffff0000u : x << 16));
          const float yb = kiln_amx_flush(kiln_float_of_bits(h ? y & 0xffff0000u : y << 16));
          s[h] = kiln_amx_flush(fmaf(xa, yb, s[h]));
        }
      }
      const float cv = kiln_amx_flush(kiln_float_of_bits(kiln_tile_dword(r, c, m, n)));
      const float v = kiln_amx_flush(cv + kiln_amx_flush(s[0] + s[1]));
      memcpy(r->reg[c][m] + 4 * n, &v, 4);
    }
}

#elif defined(__GNUC__) && defined(__x86_64__) && defined(__linux__) && defined(__AMX_TILE__) && \
    defined(__AMX_BF16__) && defined(__AMX_INT8__) && !defined(KILN_NO_AMX) && !defined(KILN_GEMM_SCALAR)
#define KILN_AMX 2
#include <cpuid.h>
#include <immintrin.h>

/* LDTILECFG's 64 bytes: palette 1, then each tile's bytes a row and rows */
typedef struct kiln_tilecfg {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} kiln_tilecfg;

#define KILN_TILE_REGS (void)0
#define KILN_TILE_CONFIG() kiln_tile_config()
#define KILN_TILE_ZERO(t) _tile_zero(t)
#define KILN_TILE_LOAD(t, p, s) _tile_loadd(t, p, s)
#define KILN_TILE_STORE(t, p, s) _tile_stored(t, p, s)
#define KILN_TILE_DP_BF16(c, a, b) _tile_dpbf16ps(c, a, b)
#define KILN_TILE_DP_INT8(c, a, b) _tile_dpbusd(c, a, b)
#define KILN_TILE_RELEASE() _tile_release()

static inline void kiln_tile_config(void) {
  static const kiln_tilecfg full = {1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};
  _tile_loadconfig(&full);
}

/* Does the CPU have AMX-TILE, -BF16 and -INT8, and has Linux granted this
 * process the tile data? Asked once (arch_prctl by its system call number,
 * 158, so no header beyond the compiler's is needed); a race between
 * threads asks twice, which is harmless. */
static inline int kiln_amx_ready(void) {
  static int state; /* 0: not asked yet, 1: yes, -1: no */
  int s = __atomic_load_n(&state, __ATOMIC_RELAXED);
  if (s == 0) {
    unsigned a, b, c, d;
    s = -1;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 22 & 1) && (d >> 24 & 1) && (d >> 25 & 1)) {
      long r; /* arch_prctl(ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18) */
      __asm__ volatile("syscall" : "=a"(r) : "0"(158L), "D"(0x1023L), "S"(18L) : "rcx", "r11", "memory");
      s = r == 0 ? 1 : -1;
    }
    __atomic_store_n(&state, s, __ATOMIC_RELAXED);
  }
  return s > 0;
}
#endif

/* ---- threads (--threads N > 1): kiln's pool --------------------------------
 * A --threads N file splits its large loops among N threads when it is
 * built with -pthread (or -fopenmp, which implies it; or -DKILN_THREADS);
 * built without, or with -DKILN_SERIAL, every loop runs whole on the
 * calling thread. The results are bit-identical either way: a split loop's
 * iterations are independent, so only who computes them changes.
 *
 * Why not OpenMP (DESIGN.md, "Threads"): every OpenMP loop ends at a
 * barrier that waits for all N threads to arrive, and libgomp spins for
 * milliseconds before it sleeps, so a thread that shares its core with
 * another process stalls every loop, and 8 threads on 2 cores spin over
 * each other. Here:
 * - a kernel with split loops (KILN_PARALLEL_FOR) is a job: its caller,
 *   the lead, publishes the kernel and its arguments at the first split
 *   loop, and workers that are awake run the same kernel; each split loop
 *   cuts its iterations into tiles (KILN_TILES_PER_THREAD per thread; a
 *   loop of at most twice that many iterations, one tile each) that the
 *   threads claim from one atomic word, so a late or descheduled worker
 *   costs at most the tile it holds, never a barrier;
 * - the lead waits for its loop's tiles to be done, workers for the next
 *   job or loop to open: each spins for KILN_SPIN_TICKS, then sleeps on
 *   the pool's condition variable, which frees the core (and lets the
 *   kernel move a preempted worker onto it);
 * - a spinning worker is a runnable thread: beside another process (or
 *   the lead, on the same core) it took the core's time from whoever had
 *   work. So every KILN_SPIN_YIELD rounds it calls sched_yield, and when
 *   that returns later than KILN_SPIN_GAP ticks, another thread ran on its
 *   core in between: the core is not idle, spinning there costs the
 *   others, and a tile it claimed there could be held through the other
 *   thread's time slice. So it rests: it sleeps where no event wakes it,
 *   for KILN_REST_TICKS, until the lead's next publish after that
 *   (kiln_pool_rest, kiln_pool_rouse); then it probes again. On an idle
 *   core sched_yield returns at once (a system call). The lead does not
 *   yield: that would give a busy process its core for a time slice;
 * - a wake-up (pthread_cond_broadcast) is sent only to threads that said
 *   they sleep, once: each waker takes the count of sleepers to 0, so a
 *   job's publish, loop opens and last tiles cost one system call between
 *   them, not one each, while a woken worker has not yet run;
 * - code outside the split loops runs on every thread of the job, so it
 *   may only compute locals (pointers, sizes, scratch on the stack): a
 *   store to memory there is KILN_LEAD_ONLY;
 * - the job number tags everything a worker reads, so a late worker never
 *   takes a tile of the next job: it sees the number change and leaves.
 * The pool (N - 1 workers, started on the first threaded call, never
 * stopped) is the one piece of run-time state in a generated file; a
 * second thread calling while a run holds the pool runs its loops whole. */
#if defined(__GNUC__) && !defined(KILN_SERIAL) && (defined(_OPENMP) || defined(_REENTRANT) || defined(KILN_THREADS)) && \
    (defined(__unix__) || defined(__APPLE__))
#define KILN_POOL 1
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#define KILN_JOB_ARGS 64  /* most parameters of a kernel with split loops (compiler/emit/emit_kernel.c) */
#define KILN_JOB_SHARED 8 /* most KILN_SHARED arrays in one */
#ifndef KILN_TILES_PER_THREAD
#define KILN_TILES_PER_THREAD 4
#endif
#ifndef KILN_SPIN_TICKS
#define KILN_SPIN_TICKS 100000 /* how long a waiting thread spins: kiln_ticks, about 30-50 microseconds */
#endif
#ifndef KILN_SPIN_YIELD
#define KILN_SPIN_YIELD 16 /* a spinning worker calls sched_yield every KILN_SPIN_YIELD rounds; 0: never */
#endif
#ifndef KILN_SPIN_GAP
#define KILN_SPIN_GAP 200000 /* a sched_yield longer than this (kiln_ticks, about 60-100 microseconds): the core is shared */
#endif
#ifndef KILN_REST_TICKS
#define KILN_REST_TICKS 2000000 /* how long a worker that found its core shared sits out: about 0.6-1 ms */
#endif

/* A cycle count for spin limits and kiln_adapt's timing (only ratios of
 * it are used); 0 where there is none, which leaves kiln_adapt on N
 * threads and limits spinning by rounds. */
static inline unsigned long long kiln_ticks(void) {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
  unsigned long long t;
  __asm__ volatile("mrs %0, cntvct_el0" : "=r"(t));
  return t;
#else
  return 0;
#endif
}

static inline void kiln_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

typedef void (*kiln_job_fn)(const void *const *args);

/* pool->loop, the split loop in progress, one word so that a claim checks
 * the loop it claims from: bits 44-63 the job number (its low 20 bits),
 * 28-43 the loop's index in the job, 14-27 tiles claimed, 0-13 tiles done.
 * The top 36 bits are the loop's id. */
#define KILN_LOOP_ID(w) ((w) >> 28)
#define KILN_LOOP_NEXT(w) ((unsigned)((w) >> 14) & 0x3fffu)
#define KILN_LOOP_DONE(w) ((unsigned)(w)&0x3fffu)

typedef struct kiln_pool {
  unsigned long long job;           /* the job's number, even; odd while the lead writes the job */
  kiln_job_fn fn;                   /* the job: a kernel, as a function of its arguments */
  const void *args[KILN_JOB_ARGS];  /* its arguments */
  void *shared[KILN_JOB_SHARED];    /* its KILN_SHARED arrays: the lead's */
  int team;                         /* the threads it may use, the lead included */
  unsigned long long loop;          /* the split loop in progress (KILN_LOOP_*) */
  unsigned seq;                     /* bumped by every event a thread may sleep for */
  int sleepers;                     /* threads that said they sleep on cv since the last wake-up (or more) */
  int resting;                      /* workers sitting out on rest_cv (their core was shared) */
  unsigned rest_seq;                /* bumped when the lead ends their rest */
  unsigned long long rest_until;    /* kiln_ticks when the last of them to start its rest may end it */
  int owner;                        /* 1 while a lead holds the pool */
  int state;                        /* workers: 0 not started, 1 starting, 2 started, 3 none (a forked child) */
  int nworkers;                     /* workers started */
  int next_index;                   /* the index the next worker takes (the lead is 0) */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_cond_t rest_cv;
} kiln_pool;

/* A generated file's pool, name, and name_forked, the fork handler that
 * leaves a child's pool without workers (it has none of the parent's, and
 * starting threads after fork is not safe): the child runs alone. */
#define KILN_POOL_DEFINE(name)                                                                              \
  static kiln_pool name = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER,                 \
                           .rest_cv = PTHREAD_COND_INITIALIZER};                                            \
  static void name##_forked(void) {                                                                          \
    kiln_pool_forked(&name);                                                                                \
  }

/* What each thread knows of the job it is in. */
typedef struct kiln_member {
  kiln_pool *pool;
  int role;                  /* 0: runs its loops whole; 1: leads a run; 2: works a job */
  int team;                  /* the job's threads */
  unsigned long long job;    /* the job's number */
  unsigned long long id;     /* the next split loop's id: job number << 16 | loops met in the job */
  kiln_job_fn fn;            /* lead: the kernel in progress, published at its first split loop */
  const void *const *args;   /* ... its arguments */
  int nargs;
  int published;             /* ... whether it is the pool's job yet */
  void *shared[KILN_JOB_SHARED]; /* lead: its KILN_SHARED arrays; worker: the lead's */
  int nshared;               /* KILN_SHARED arrays met in the kernel so far */
} kiln_member;
static __thread kiln_member kiln_me;

static inline void kiln_pool_forked(kiln_pool *p) {
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  pthread_cond_init(&p->rest_cv, NULL);
  p->resting = 0;
  p->owner = p->sleepers = p->nworkers = p->next_index = 0;
  p->state = 3;
  kiln_me.role = 0;
}

/* An event: bump seq, and wake the threads that said they sleep (taking
 * their count to 0: a woken thread that must sleep again says so again,
 * so a second event before it has run costs no system call). */
static inline void kiln_pool_wake(kiln_pool *p) {
  __atomic_add_fetch(&p->seq, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST) > 0 && __atomic_exchange_n(&p->sleepers, 0, __ATOMIC_SEQ_CST) > 0) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
  }
}

/* A worker whose core another thread shares sits out: it sleeps on
 * rest_cv, which no event wakes, until the lead publishes a job after
 * rest_until (kiln_pool_rouse). Nothing waits for it meanwhile. */
static inline void kiln_pool_rest(kiln_pool *p) {
  pthread_mutex_lock(&p->mu);
  const unsigned r = __atomic_load_n(&p->rest_seq, __ATOMIC_RELAXED);
  __atomic_store_n(&p->rest_until, kiln_ticks() + KILN_REST_TICKS, __ATOMIC_RELAXED);
  __atomic_add_fetch(&p->resting, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&p->rest_seq, __ATOMIC_RELAXED) == r)
    pthread_cond_wait(&p->rest_cv, &p->mu);
  __atomic_sub_fetch(&p->resting, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&p->mu);
}

/* The lead, publishing a job: end the workers' rest once it is over (a
 * worker that starts one after this look is roused by a later publish). */
static inline void kiln_pool_rouse(kiln_pool *p) {
  if (__atomic_load_n(&p->resting, __ATOMIC_RELAXED) > 0 &&
      (long long)(kiln_ticks() - __atomic_load_n(&p->rest_until, __ATOMIC_RELAXED)) >= 0) {
    pthread_mutex_lock(&p->mu);
    __atomic_add_fetch(&p->rest_seq, 1, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&p->rest_cv);
    pthread_mutex_unlock(&p->mu);
  }
}

/* Wait until ready(p, arg): spin KILN_SPIN_TICKS (a worker, probe = 1:
 * with sched_yield every KILN_SPIN_YIELD rounds, and no longer once one of
 * them took KILN_SPIN_GAP), then sleep until an event (kiln_pool_wake) and
 * look again. A sleeper adds itself to sleepers before each look at seq
 * that may end in cond_wait (both seq_cst, as the waker's bump and
 * exchange are): either it sees the bump, or the waker sees it and
 * broadcasts under the mutex it holds until cond_wait. */
static inline void kiln_pool_wait(kiln_pool *p, int (*ready)(kiln_pool *, const void *), const void *arg, int probe) {
  const unsigned long long t0 = kiln_ticks();
  for (unsigned i = 1; i < (1u << 20); i++) {
    if (ready(p, arg))
      return;
    if ((i & 63) == 0 && kiln_ticks() - t0 > KILN_SPIN_TICKS)
      break;
    if (probe && KILN_SPIN_YIELD > 0 && i % (KILN_SPIN_YIELD > 0 ? KILN_SPIN_YIELD : 1) == 0) {
      const unsigned long long y = kiln_ticks();
      sched_yield();
      if (kiln_ticks() - y > KILN_SPIN_GAP) {
        kiln_pool_rest(p);
        continue;
      }
    } else {
      kiln_relax();
    }
  }
  for (;;) {
    const unsigned s = __atomic_load_n(&p->seq, __ATOMIC_SEQ_CST);
    if (ready(p, arg))
      return;
    pthread_mutex_lock(&p->mu);
    for (;;) {
      __atomic_add_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
      if (__atomic_load_n(&p->seq, __ATOMIC_SEQ_CST) != s)
        break;
      pthread_cond_wait(&p->cv, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
  }
}

static inline int kiln_job_new(kiln_pool *p, const void *seen) {
  const unsigned long long j = __atomic_load_n(&p->job, __ATOMIC_ACQUIRE);
  return j != *(const unsigned long long *)seen && !(j & 1);
}

static void *kiln_pool_worker(void *arg) {
  kiln_pool *p = (kiln_pool *)arg;
  const int index = __atomic_add_fetch(&p->next_index, 1, __ATOMIC_SEQ_CST);
  unsigned long long seen = 0;
  for (;;) {
    kiln_pool_wait(p, kiln_job_new, &seen, 1);
    const unsigned long long j = __atomic_load_n(&p->job, __ATOMIC_ACQUIRE);
    const void *args[KILN_JOB_ARGS];
    const kiln_job_fn fn = __atomic_load_n(&p->fn, __ATOMIC_RELAXED);
    const int team = __atomic_load_n(&p->team, __ATOMIC_RELAXED);
    for (int i = 0; i < KILN_JOB_ARGS; i++)
      args[i] = __atomic_load_n(&p->args[i], __ATOMIC_RELAXED);
    for (int i = 0; i < KILN_JOB_SHARED; i++)
      kiln_me.shared[i] = __atomic_load_n(&p->shared[i], __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if ((j & 1) || __atomic_load_n(&p->job, __ATOMIC_RELAXED) != j)
      continue; /* the lead was writing the next job: read that one */
    seen = j;
    if (index >= team)
      continue; /* not wanted: NAME_set_threads lowered the count */
    kiln_me.pool = p;
    kiln_me.role = 2;
    kiln_me.team = team;
    kiln_me.job = j;
    kiln_me.id = (j >> 1 & 0xfffffu) << 16;
    kiln_me.nshared = 0;
    fn(args);
    kiln_me.role = 0;
  }
  return NULL;
}

/* Start the pool's workers once, never more than the online CPUs less
 * the lead (more threads than cores only take turns: --threads 8 on 2
 * cores runs on 2); a thread that finds them starting runs its call alone
 * (kiln_team_begin sees no workers). */
static inline void kiln_pool_start(kiln_pool *p, void (*forked)(void), int workers) {
  int s = 0;
  if (!__atomic_compare_exchange_n(&p->state, &s, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus >= 1 && workers > cpus - 1)
    workers = (int)(cpus - 1);
  pthread_atfork(NULL, NULL, forked);
  int n = 0;
  for (; n < workers; n++) {
    pthread_t t;
    if (pthread_create(&t, NULL, kiln_pool_worker, p) != 0)
      break; /* fewer workers: their tiles go to the others */
    pthread_detach(t);
  }
  __atomic_store_n(&p->nworkers, n, __ATOMIC_RELEASE);
  __atomic_store_n(&p->state, 2, __ATOMIC_RELEASE);
}

/* An entry point's start: lead this run on up to n threads (the pool has
 * max - 1 workers), or run it alone when n is 1 or another run holds the
 * pool. */
static inline void kiln_team_begin(kiln_pool *p, void (*forked)(void), int n, int max) {
  kiln_member *me = &kiln_me;
  me->role = 0;
  if (n < 2)
    return;
  if (__atomic_load_n(&p->state, __ATOMIC_ACQUIRE) == 0)
    kiln_pool_start(p, forked, max - 1);
  const int w = __atomic_load_n(&p->state, __ATOMIC_ACQUIRE) == 2 ? __atomic_load_n(&p->nworkers, __ATOMIC_ACQUIRE) : 0;
  if (w < 1 || __atomic_exchange_n(&p->owner, 1, __ATOMIC_ACQUIRE))
    return;
  me->pool = p;
  me->role = 1;
  me->team = n < w + 1 ? n : w + 1;
  me->fn = NULL;
  me->published = 0;
}

static inline void kiln_team_end(kiln_pool *p) {
  if (kiln_me.role == 1) {
    kiln_me.role = 0;
    __atomic_store_n(&p->owner, 0, __ATOMIC_RELEASE);
  }
}

/* A kernel with split loops starts here (KILN_TEAM): the lead notes the
 * call; it becomes the pool's job at the kernel's first split loop. */
static inline void kiln_team_note(kiln_job_fn fn, const void *const *args, int nargs) {
  if (kiln_me.role == 1) {
    kiln_me.fn = fn;
    kiln_me.args = args;
    kiln_me.nargs = nargs;
    kiln_me.published = 0;
    kiln_me.nshared = 0;
  }
}

/* KILN_SHARED: scratch that a kernel's split loops share (one loop's tiles
 * write it, the next loop's read it) is the lead's array on every thread
 * of the job; a thread outside a job uses its own. The lead's arrays are
 * declared before the kernel's first split loop publishes the job. */
static inline void *kiln_team_shared(void *own) {
  kiln_member *me = &kiln_me;
  if (me->role == 0 || me->nshared >= KILN_JOB_SHARED)
    return own;
  if (me->role == 1)
    return me->shared[me->nshared++] = own;
  return me->shared[me->nshared++];
}

static inline void kiln_team_publish(kiln_member *me) {
  kiln_pool *p = me->pool;
  const unsigned long long j = __atomic_load_n(&p->job, __ATOMIC_RELAXED) + 2;
  __atomic_store_n(&p->job, j - 1, __ATOMIC_RELAXED); /* odd: being written */
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&p->fn, me->fn, __ATOMIC_RELAXED);
  for (int i = 0; i < me->nargs; i++)
    __atomic_store_n(&p->args[i], me->args[i], __ATOMIC_RELAXED);
  __atomic_store_n(&p->team, me->team, __ATOMIC_RELAXED);
  for (int i = 0; i < me->nshared; i++)
    __atomic_store_n(&p->shared[i], me->shared[i], __ATOMIC_RELAXED);
  __atomic_store_n(&p->job, j, __ATOMIC_RELEASE);
  me->job = j;
  me->id = (j >> 1 & 0xfffffu) << 16;
  me->published = 1;
  kiln_pool_rouse(p);
  kiln_pool_wake(p);
}

/* One split loop as a thread sees it: n iterations in ntiles tiles, the
 * tile [lo, hi) last claimed. */
typedef struct kiln_tiles {
  long long n, lo, hi;
  unsigned long long id;
  unsigned ntiles;
  int whole;   /* 1: this thread runs the loop whole, alone */
  int holding; /* a claimed tile not yet counted done */
} kiln_tiles;

/* A worker waits for its next loop to open, or for the job to end. */
static inline int kiln_loop_open(kiln_pool *p, const void *arg) {
  const unsigned long long id = *(const unsigned long long *)arg, w = KILN_LOOP_ID(__atomic_load_n(&p->loop, __ATOMIC_ACQUIRE));
  return __atomic_load_n(&p->job, __ATOMIC_RELAXED) != kiln_me.job || (w >> 16) != (id >> 16) || w >= id;
}

/* The lead waits for its loop's tiles. */
static inline int kiln_loop_done(kiln_pool *p, const void *arg) {
  const kiln_tiles *t = (const kiln_tiles *)arg;
  return KILN_LOOP_DONE(__atomic_load_n(&p->loop, __ATOMIC_ACQUIRE)) == t->ntiles;
}

static inline kiln_tiles kiln_tiles_open(long long n) {
  kiln_member *me = &kiln_me;
  kiln_tiles t = {n, 0, 0, 0, 0, 1, 0};
  if (me->role == 0 || n < 2 || (me->role == 1 && !me->fn))
    return t;
  if (me->role == 1 && !me->published)
    kiln_team_publish(me);
  if ((me->id & 0xffffu) == 0xffffu)
    return t; /* 65535 split loops in one kernel call: the rest run whole */
  /* KILN_TILES_PER_THREAD tiles a thread, or a tile an iteration up to
   * twice that: tiles of 1 and 2 iterations leave a thread a whole
   * iteration behind (10 GEMM items on 2 threads in 8 tiles: 1.45x the
   * 1-thread time; in 10 tiles: 2x) */
  const long long most = (long long)KILN_TILES_PER_THREAD * me->team;
  t.ntiles = (unsigned)(n <= 2 * most ? n : most);
  t.id = me->id++;
  t.whole = 0;
  kiln_pool *p = me->pool;
  if (me->role == 1) {
    __atomic_store_n(&p->loop, t.id << 28, __ATOMIC_RELEASE);
    kiln_pool_wake(p);
  } else {
    kiln_pool_wait(p, kiln_loop_open, &t.id, 1);
  }
  return t;
}

/* Claim the loop's next tile into [t->lo, t->hi): 1, or 0 when none is
 * left (the lead then waits for the others' tiles to be done). */
static inline int kiln_tiles_take(kiln_tiles *t) {
  if (t->whole) {
    t->lo = 0;
    t->hi = t->holding ? 0 : t->n;
    t->holding = 1;
    return t->hi > 0;
  }
  kiln_pool *p = kiln_me.pool;
  if (t->holding) {
    t->holding = 0;
    if (KILN_LOOP_DONE(__atomic_add_fetch(&p->loop, 1, __ATOMIC_ACQ_REL)) == t->ntiles)
      kiln_pool_wake(p); /* the last tile: the lead may be asleep */
  }
  unsigned long long w = __atomic_load_n(&p->loop, __ATOMIC_ACQUIRE);
  while (KILN_LOOP_ID(w) == t->id && KILN_LOOP_NEXT(w) < t->ntiles) {
    const unsigned k = KILN_LOOP_NEXT(w);
    if (__atomic_compare_exchange_n(&p->loop, &w, w + (1ull << 14), 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      t->lo = (long long)k * t->n / t->ntiles;
      t->hi = (long long)(k + 1) * t->n / t->ntiles;
      t->holding = 1;
      return 1;
    }
  }
  if (kiln_me.role == 1 && KILN_LOOP_ID(w) == t->id)
    kiln_pool_wait(p, kiln_loop_done, t, 0);
  return 0;
}

/* The kernel-side forms (compiler/emit/emit_kernel.c writes them): */
#define KILN_TEAM(fn, ...)                                                                                  \
  const void *const kiln_args_[] = {__VA_ARGS__};                                                           \
  kiln_team_note(fn, kiln_args_, (int)(sizeof kiln_args_ / sizeof *kiln_args_))
#define KILN_PARALLEL_FOR(T, i, a, b, c)                                                                    \
  for (kiln_tiles kiln_tl_ = kiln_tiles_open(((long long)(b) - (a) + (c)-1) / (c)); kiln_tiles_take(&kiln_tl_);) \
    for (T i = (T)((a) + kiln_tl_.lo * (c)); i < (T)((a) + kiln_tl_.hi * (c)); i += (c))
#define KILN_LEAD_ONLY if (kiln_me.role != 2)
#define KILN_SHARED(T, name, n)                                                                             \
  T name##_own_[n] KILN_ALIGNED(64);                                                                       \
  T *const name = (T *)kiln_team_shared(name##_own_)
#else
#define KILN_TEAM(fn, ...) (void)(fn)
#define KILN_PARALLEL_FOR(T, i, a, b, c) for (T i = (a); i < (b); i += (c))
#define KILN_LEAD_ONLY
#define KILN_SHARED(T, name, n) T name[n] KILN_ALIGNED(64)
#endif

/* ---- threads that step aside (kiln_adapt) ----------------------------------
 * When another process holds one of the cores, N threads can still be
 * slower than one (a worker preempted while it holds a tile). So each
 * entry point times its calls and keeps the faster of two modes, its loops
 * on N threads or on one: the first call warms up (not counted), the next
 * KILN_ADAPT_SAMPLES pairs alternate one thread and N, and from then on
 * every KILN_ADAPT_PROBE-th call tries the mode not in use, so the choice
 * follows the machine both ways at a cost of one call in KILN_ADAPT_PROBE.
 * A mode's time is the median of its last KILN_ADAPT_SAMPLES calls: one
 * call slowed by something else (a page fault, a thread waking, an
 * interrupt) must not decide, as it did with a moving average (a --threads
 * 2 MiniLM stuck on one thread for a whole bench round of 50 calls after
 * one slow sample). -DKILN_ADAPT_PROBE=0 turns it off (always N threads). */
#if defined(KILN_POOL)
#ifndef KILN_ADAPT_PROBE
#define KILN_ADAPT_PROBE 64
#endif
#define KILN_ADAPT_SAMPLES 3
typedef struct kiln_adapt {
  double t[2][KILN_ADAPT_SAMPLES]; /* the last call times of each mode, in kiln_ticks: [0] one thread, [1] N */
  long long n[2];                  /* calls timed in each mode */
  long long calls;                 /* calls begun */
  int best;                        /* the mode in use: 1 until measured otherwise */
  int lock;                        /* a spin lock over the fields above */
} kiln_adapt;

static inline void kiln_adapt_lock(kiln_adapt *a) {
  while (__atomic_exchange_n(&a->lock, 1, __ATOMIC_ACQUIRE))
    kiln_relax();
}

/* The median of a mode's last KILN_ADAPT_SAMPLES times (3 of them). */
static inline double kiln_adapt_median(const double *t) {
  const double lo = t[0] < t[1] ? t[0] : t[1], hi = t[0] < t[1] ? t[1] : t[0];
  return t[2] < lo ? lo : t[2] > hi ? hi : t[2];
}

/* Start a call of the entry point that owns a: its mode, 1 for N threads. */
static inline int kiln_adapt_begin(kiln_adapt *a) {
  int mode = 1;
  kiln_adapt_lock(a);
  const long long c = a->calls++;
  if (c == 0)
    a->best = 1;
#if KILN_ADAPT_PROBE > 0 /* not an `if`: c % 0 would not compile (-Werror=div-by-zero) */
  mode = c == 0 ? 1
         : c <= 2 * KILN_ADAPT_SAMPLES ? (int)(c % 2 == 0)
         : c % KILN_ADAPT_PROBE == KILN_ADAPT_PROBE - 1 ? !a->best : a->best;
#endif
  __atomic_store_n(&a->lock, 0, __ATOMIC_RELEASE);
  return mode;
}

/* End a call that ran in mode for t (call 0 is not counted: cold caches,
 * threads starting). */
static inline void kiln_adapt_end(kiln_adapt *a, int mode, double t) {
  kiln_adapt_lock(a);
  if (a->calls > 1)
    a->t[mode][a->n[mode]++ % KILN_ADAPT_SAMPLES] = t;
  a->best = a->n[0] >= KILN_ADAPT_SAMPLES && a->n[1] >= KILN_ADAPT_SAMPLES &&
                    kiln_adapt_median(a->t[0]) < kiln_adapt_median(a->t[1])
                ? 0
                : 1;
  __atomic_store_n(&a->lock, 0, __ATOMIC_RELEASE);
}
#endif

#endif
