/* quant.h — the integer arithmetic the quantized ops share: the linear
 * quantization ops and integer products (quantize_linear.c) and the
 * integer convolutions (conv_integer.c). One definition of each step, for
 * _eval and for the emitted C alike, so the two agree exactly:
 *
 *   accumulate  acc = bias + sum of (a - a_zp) * (b - b_zp), wrapping mod
 *               2^32 as ONNX's int32 accumulation does. Each product of
 *               two 8-bit differences is within ±255² = 65025, so the C
 *               accumulates in int32_t when the term count (and the bias)
 *               proves it cannot overflow — K <= 33025 without a bias —
 *               and otherwise in int64_t, narrowed mod 2^32 at the end:
 *               never a signed overflow.
 *   requantize  y = saturate(rint((float)acc * multiplier) + y_zp), rint
 *               half to even in f32 (nearbyintf under the default rounding
 *               mode), multiplier = a_scale · b_scale / y_scale in f32, as
 *               ONNX Runtime does; NaN becomes the zero point. */
#ifndef KILN_QUANT_H
#define KILN_QUANT_H

#include "../emit/emit.h"

#define QUANT_MAX_PRODUCT 65025 /* |(a - a_zp) * (b - b_zp)| for 8-bit a, b, zero points */

bool quant_is_8bit(DType dt);
int64_t quant_min(DType dt); /* the saturation range of a quantized type */
int64_t quant_max(DType dt);
/* Element c of a per-axis parameter, or its only element (per tensor);
 * quant_param_i gives 0 for an absent zero point (data NULL). */
double quant_param_f(const Tensor *t, int64_t c);
int64_t quant_param_i(const Tensor *t, int64_t c);

/* The int32 that a sum accumulated in wrapping 64-bit arithmetic has mod 2^32. */
int32_t quant_wrap32(uint64_t acc);
/* saturate(rint((float)acc * mult) + zp) in dt's range. */
int64_t quant_requant(int32_t acc, float mult, int64_t zp, DType dt);

/* C type of an accumulator of `terms` products plus a bias of magnitude at
 * most maxbias: "int32_t" when it cannot overflow, else "int64_t". */
const char *quant_acc_ctype(int64_t terms, int64_t maxbias);
/* The int32 value of accumulator `acc` of C type ctype as a C expression:
 * acc itself, or (int64_t) a narrowing mod 2^32 declared first as
 * `const int32_t NAME32`. */
const char *quant_emit_acc32(Emit *e, const char *acc, const char *ctype);
/* `y = saturate(rint((float)acc * mult) + zp);` as C statements. */
void quant_emit_requant(Emit *e, const char *y, const char *acc, const char *mult, const char *zp, DType dt);

#endif
