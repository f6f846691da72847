/* ir.c — dtypes, element access, graph construction and the shape helpers
 * every _infer shares (see ir.h). */
#include "ir.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"

/* ---- dtypes --------------------------------------------------------------- */

typedef struct DTInfo {
  const char *name, *ctype;
  size_t size;
  char kind; /* 'f' float, 'i' signed, 'u' unsigned, 'b' bool, 0 unsupported */
} DTInfo;

static const DTInfo dtinfo[DT_MAX_] = {
    [DT_F32] = {"f32", "float", 4, 'f'},      [DT_F64] = {"f64", "double", 8, 'f'},
    [DT_I8] = {"i8", "int8_t", 1, 'i'},       [DT_I16] = {"i16", "int16_t", 2, 'i'},
    [DT_I32] = {"i32", "int32_t", 4, 'i'},    [DT_I64] = {"i64", "int64_t", 8, 'i'},
    [DT_U8] = {"u8", "uint8_t", 1, 'u'},      [DT_U16] = {"u16", "uint16_t", 2, 'u'},
    [DT_U32] = {"u32", "uint32_t", 4, 'u'},   [DT_U64] = {"u64", "uint64_t", 8, 'u'},
    [DT_BOOL] = {"bool", "bool", 1, 'b'},     [DT_F16] = {"f16", "uint16_t", 2, 'f'},
    [DT_BF16] = {"bf16", "uint16_t", 2, 'f'}, [DT_STRING] = {"string", NULL, 0, 0},
    [DT_F8E4M3FN] = {"f8e4m3fn", "uint8_t", 1, 'f'},
    [DT_F8E4M3FNUZ] = {"f8e4m3fnuz", "uint8_t", 1, 'f'},
    [DT_F8E5M2] = {"f8e5m2", "uint8_t", 1, 'f'},
    [DT_F8E5M2FNUZ] = {"f8e5m2fnuz", "uint8_t", 1, 'f'},
    [DT_F8E8M0] = {"f8e8m0", "uint8_t", 1, 'f'},
    [DT_F4E2M1] = {"f4e2m1", "uint8_t", 1, 'f'}, /* packed: see packed_bits */
    [DT_U4] = {"u4", "uint8_t", 1, 'u'},      [DT_I4] = {"i4", "uint8_t", 1, 'i'},
    [DT_U2] = {"u2", "uint8_t", 1, 'u'},      [DT_I2] = {"i2", "uint8_t", 1, 'i'},
};

static const DTInfo *dti(DType dt) {
  static const DTInfo none = {"?", NULL, 0, 0};
  return ((unsigned)dt < DT_MAX_ && dtinfo[dt].name) ? &dtinfo[dt] : &none;
}

bool dt_supported(DType dt) { return dti(dt)->kind != 0; }
const char *dt_name(DType dt) { return dti(dt)->name; }
const char *dt_ctype(DType dt) { return dti(dt)->ctype; }
size_t dt_size(DType dt) { return dti(dt)->size; }
bool dt_is_float(DType dt) { return dti(dt)->kind == 'f'; }
bool dt_is_half(DType dt) { return dt == DT_F16 || dt == DT_BF16; }
bool dt_is_narrow(DType dt) { return dt >= DT_F8E4M3FN && dt <= DT_I2; }
bool dt_is_minifloat(DType dt) { return dt_is_narrow(dt) && dt_is_float(dt); }
/* bits of an element of a packed type, 0 for the others */
static int packed_bits(DType dt) {
  return dt == DT_U4 || dt == DT_I4 || dt == DT_F4E2M1 ? 4 : dt == DT_U2 || dt == DT_I2 ? 2 : 0;
}
bool dt_is_packed(DType dt) { return packed_bits(dt) != 0; }
int dt_bits(DType dt) { return packed_bits(dt) ? packed_bits(dt) : 8 * (int)dti(dt)->size; }

/* ---- float8, float4, e8m0 ---------------------------------------------------
 * A code is sign | exponent | mantissa. The kinds differ in their special
 * codes: e4m3fn has no infinity and NaN is S.1111.111 (so its largest value
 * is 448); e5m2 is IEEE-like (inf S.11111.00, NaN above it); the "uz" kinds
 * have no -0, their only NaN is 0x80, and their bias is one more; f4e2m1
 * has neither NaN nor infinity; e8m0 is an exponent alone, 2^(code - 127),
 * with 0xFF its NaN. */
typedef struct MiniFmt {
  int mbits, bias;
  unsigned maxmag;   /* the largest finite code without its sign */
  unsigned signbit;  /* 0x80, or 0x8 for float4 */
  bool inf, uz;      /* has infinities (e5m2); unsigned zero, NaN 0x80 */
} MiniFmt;

static MiniFmt minifmt(DType dt) {
  switch (dt) {
  case DT_F8E4M3FN: return (MiniFmt){3, 7, 0x7e, 0x80, false, false};
  case DT_F8E4M3FNUZ: return (MiniFmt){3, 8, 0x7f, 0x80, false, true};
  case DT_F8E5M2: return (MiniFmt){2, 15, 0x7b, 0x80, true, false};
  case DT_F8E5M2FNUZ: return (MiniFmt){2, 16, 0x7f, 0x80, false, true};
  default: KILN_ASSERT(dt == DT_F4E2M1); return (MiniFmt){1, 1, 0x7, 0x8, false, false};
  }
}

double minifloat_to_double(DType dt, unsigned code) {
  if (dt == DT_F8E8M0)
    return code == 0xff ? NAN : ldexp(1, (int)code - 127);
  MiniFmt f = minifmt(dt);
  unsigned mag = code & (f.signbit - 1);
  if ((f.uz && code == 0x80) || (dt == DT_F8E4M3FN && mag == 0x7f) || (f.inf && mag > 0x7c))
    return NAN;
  if (f.inf && mag == 0x7c)
    return code & f.signbit ? -INFINITY : INFINITY;
  int e = (int)(mag >> f.mbits), m = (int)(mag & ((1u << f.mbits) - 1));
  double v = e == 0 ? ldexp(m, 1 - f.bias - f.mbits) : ldexp(m + (1 << f.mbits), e - f.bias - f.mbits);
  return code & f.signbit ? -v : v;
}

/* e8m0: the power of two that v rounds to, as Cast's round_mode says. */
static unsigned e8m0_from_double(double v, bool saturate, int round_mode) {
  if (isnan(v))
    return 0xff;
  double a = fabs(v); /* negative values are unspecified: their magnitude */
  if (isinf(a))
    return saturate ? 0xfe : 0xff;
  if (a == 0)
    return saturate ? 0 : 0xff;
  int e;
  double f = frexp(a, &e) * 2; /* a = f * 2^(e-1), f in [1, 2) */
  int ex = e - 1 + (round_mode == MF_UP ? f > 1 : round_mode == MF_NEAREST ? f >= 1.5 : 0);
  if (ex < -127)
    return saturate ? 0 : 0xff;
  if (ex > 127)
    return saturate ? 0xfe : 0xff;
  return (unsigned)(ex + 127);
}

unsigned minifloat_from_double(DType dt, double v, bool saturate, int round_mode) {
  if (dt == DT_F8E8M0)
    return e8m0_from_double(v, saturate, round_mode);
  MiniFmt f = minifmt(dt);
  if (dt == DT_F4E2M1)
    saturate = true; /* no NaN, no infinity: saturate applies to float8 only */
  unsigned sign = signbit(v) ? f.signbit : 0;
  unsigned nan = f.uz ? 0x80 : sign | (f.inf ? 0x7e : 0x7f);
  unsigned over = saturate ? sign | f.maxmag : f.inf ? sign | 0x7c : nan;
  if (isnan(v)) /* float4: ml_dtypes (ONNX's reference) gives a zero of the other sign */
    return dt == DT_F4E2M1 ? sign ^ f.signbit : nan;
  double a = fabs(v);
  if (isinf(a))
    return over;
  if (a == 0)
    return f.uz ? 0 : sign;
  int e;
  frexp(a, &e); /* a in [2^(e-1), 2^e) */
  int exp = e - 1 < 1 - f.bias ? 1 - f.bias : e - 1;
  if (exp + f.bias > 64) /* far beyond every kind's range */
    return over;
  double q = nearbyint(ldexp(a, f.mbits - exp)); /* the significand, ties to even */
  unsigned mag = q < ldexp(1, f.mbits) ? (unsigned)q /* subnormal, or zero */
                                       : (unsigned)(exp + f.bias - 1) * (1u << f.mbits) + (unsigned)q;
  if (mag > f.maxmag)
    return over;
  return mag == 0 && f.uz ? 0 : sign | mag;
}

unsigned packed_get(DType dt, const void *p, int64_t i) {
  int bits = packed_bits(dt), per = 8 / bits;
  unsigned byte = ((const uint8_t *)p)[i / per];
  return byte >> (i % per * bits) & ((1u << bits) - 1);
}

void packed_set(DType dt, void *p, int64_t i, unsigned v) {
  int bits = packed_bits(dt), per = 8 / bits, sh = (int)(i % per) * bits;
  uint8_t *b = (uint8_t *)p + i / per, mask = (uint8_t)(((1u << bits) - 1) << sh);
  *b = (uint8_t)((*b & ~mask) | ((v << sh) & mask));
}

/* A packed signed code, sign-extended. */
static int64_t packed_get_signed(DType dt, const void *p, int64_t i) {
  int bits = packed_bits(dt);
  int64_t v = packed_get(dt, p, i);
  return v >= (1 << (bits - 1)) ? v - (1 << bits) : v;
}

/* ---- f16 and bf16: bit patterns of 16-bit binary floats ---------------------
 * f16 (IEEE binary16): 5 exponent bits, bias 15, 10 mantissa bits; bf16:
 * f32's 8 exponent bits, bias 127, 7 mantissa bits. Both go through double
 * here (exact), and come back rounded to nearest, ties to even, from the
 * double itself — a Cast from f64 is rounded once, not through f32. */
#define HALF_MBITS(dt) ((dt) == DT_F16 ? 10 : 7)
#define HALF_BIAS(dt) ((dt) == DT_F16 ? 15 : 127)

double half_to_double(DType dt, uint16_t h) {
  int mbits = HALF_MBITS(dt), bias = HALF_BIAS(dt), emask = (1 << (15 - mbits)) - 1;
  int e = (h >> mbits) & emask, m = h & ((1 << mbits) - 1);
  double v = e == 0       ? ldexp(m, 1 - bias - mbits)                  /* zero, subnormal */
             : e == emask ? (m ? NAN : INFINITY)
                          : ldexp(m + (1 << mbits), e - bias - mbits); /* normal */
  return (h & 0x8000) ? -v : v;
}

uint16_t half_from_double(DType dt, double v) {
  int mbits = HALF_MBITS(dt), bias = HALF_BIAS(dt), emask = (1 << (15 - mbits)) - 1;
  uint16_t sign = signbit(v) ? 0x8000 : 0, inf = (uint16_t)(emask << mbits);
  if (isnan(v))
    return (uint16_t)(sign | inf | 1 << (mbits - 1)); /* a quiet NaN */
  double a = fabs(v);
  if (isinf(a))
    return sign | inf;
  if (a == 0)
    return sign;
  int e;
  frexp(a, &e); /* a in [2^(e-1), 2^e) */
  int exp = e - 1 < 1 - bias ? 1 - bias : e - 1; /* below the normals: the subnormals' quantum */
  double q = nearbyint(ldexp(a, mbits - exp)); /* the significand, ties to even */
  if (q >= ldexp(1, mbits + 1)) { /* rounded up to the next power of two */
    q /= 2;
    exp++;
  }
  if (exp + bias >= emask)
    return sign | inf;
  if (q < ldexp(1, mbits)) /* subnormal (rounding up to 2^mbits gives the first normal) */
    return (uint16_t)(sign | (uint16_t)q);
  return (uint16_t)(sign | (exp + bias) << mbits | (uint16_t)(q - ldexp(1, mbits)));
}
bool dt_is_signed_int(DType dt) { return dti(dt)->kind == 'i'; }
bool dt_is_unsigned_int(DType dt) { return dti(dt)->kind == 'u' || dti(dt)->kind == 'b'; }
bool dt_is_int(DType dt) { return dt_is_signed_int(dt) || dt_is_unsigned_int(dt); }

DType dt_from_name(const char *s) {
  for (int i = 0; i < DT_MAX_; i++)
    if (dtinfo[i].name && strcmp(dtinfo[i].name, s) == 0)
      return (DType)i;
  return DT_UNDEF;
}

double el_get_f(DType dt, const void *p, int64_t i) {
  switch (dt) {
  case DT_F32: return ((const float *)p)[i];
  case DT_F64: return ((const double *)p)[i];
  case DT_F16: case DT_BF16: return half_to_double(dt, ((const uint16_t *)p)[i]);
  case DT_I8: return ((const int8_t *)p)[i];
  case DT_I16: return ((const int16_t *)p)[i];
  case DT_I32: return ((const int32_t *)p)[i];
  case DT_I64: return (double)((const int64_t *)p)[i];
  case DT_U8: case DT_BOOL: return ((const uint8_t *)p)[i];
  case DT_U16: return ((const uint16_t *)p)[i];
  case DT_U32: return ((const uint32_t *)p)[i];
  case DT_U64: return (double)((const uint64_t *)p)[i];
  case DT_F8E4M3FN: case DT_F8E4M3FNUZ: case DT_F8E5M2: case DT_F8E5M2FNUZ: case DT_F8E8M0:
    return minifloat_to_double(dt, ((const uint8_t *)p)[i]);
  case DT_F4E2M1: return minifloat_to_double(dt, packed_get(dt, p, i));
  case DT_I4: case DT_I2: return (double)packed_get_signed(dt, p, i);
  case DT_U4: case DT_U2: return packed_get(dt, p, i);
  default: KILN_ASSERT(!"el_get_f: unsupported dtype"); return 0;
  }
}

/* Float to integer without C's undefined behaviour: NaN -> 0, saturate. */
static int64_t f2i(double v) {
  if (v != v)
    return 0;
  if (v >= 9223372036854775807.0)
    return INT64_MAX;
  if (v <= -9223372036854775808.0)
    return INT64_MIN;
  return (int64_t)v;
}

int64_t el_get_i(DType dt, const void *p, int64_t i) {
  if (dt_is_float(dt))
    return f2i(el_get_f(dt, p, i));
  switch (dt) {
  case DT_I4: case DT_I2: return packed_get_signed(dt, p, i);
  case DT_I8: return ((const int8_t *)p)[i];
  case DT_I16: return ((const int16_t *)p)[i];
  case DT_I32: return ((const int32_t *)p)[i];
  case DT_I64: return ((const int64_t *)p)[i];
  default:
    KILN_ASSERT(dt_is_unsigned_int(dt));
    return (int64_t)el_get_u(dt, p, i);
  }
}

uint64_t el_get_u(DType dt, const void *p, int64_t i) {
  switch (dt) {
  case DT_U8: case DT_BOOL: return ((const uint8_t *)p)[i];
  case DT_U16: return ((const uint16_t *)p)[i];
  case DT_U32: return ((const uint32_t *)p)[i];
  case DT_U64: return ((const uint64_t *)p)[i];
  case DT_U4: case DT_U2: return packed_get(dt, p, i);
  case DT_F32: case DT_F64: case DT_F16: case DT_BF16: case DT_F8E4M3FN: case DT_F8E4M3FNUZ:
  case DT_F8E5M2: case DT_F8E5M2FNUZ: case DT_F8E8M0: case DT_F4E2M1: {
    double v = el_get_f(dt, p, i);
    if (v != v || v <= -1.0)
      return (uint64_t)f2i(v);
    return v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v;
  }
  default:
    KILN_ASSERT(dt_is_signed_int(dt));
    return (uint64_t)el_get_i(dt, p, i);
  }
}

void el_set_f(DType dt, void *p, int64_t i, double v) {
  switch (dt) {
  case DT_F32: ((float *)p)[i] = (float)v; return;
  case DT_F64: ((double *)p)[i] = v; return;
  case DT_F16: case DT_BF16: ((uint16_t *)p)[i] = half_from_double(dt, v); return;
  case DT_BOOL: ((uint8_t *)p)[i] = v != 0; return;
  case DT_F8E4M3FN: case DT_F8E4M3FNUZ: case DT_F8E5M2: case DT_F8E5M2FNUZ: case DT_F8E8M0:
    ((uint8_t *)p)[i] = (uint8_t)minifloat_from_double(dt, v, true, MF_UP); return;
  case DT_F4E2M1: packed_set(dt, p, i, minifloat_from_double(dt, v, true, MF_UP)); return;
  default:
    if (dt_is_signed_int(dt))
      el_set_i(dt, p, i, f2i(v));
    else
      el_set_u(dt, p, i, (v != v || v < 0) ? (uint64_t)f2i(v) : v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v);
  }
}

void el_set_i(DType dt, void *p, int64_t i, int64_t v) {
  switch (dt) {
  case DT_F32: ((float *)p)[i] = (float)v; return;
  case DT_F64: ((double *)p)[i] = (double)v; return;
  case DT_F16: case DT_BF16: case DT_F8E4M3FN: case DT_F8E4M3FNUZ: case DT_F8E5M2:
  case DT_F8E5M2FNUZ: case DT_F8E8M0: case DT_F4E2M1: el_set_f(dt, p, i, (double)v); return;
  case DT_I4: case DT_I2: packed_set(dt, p, i, (unsigned)(uint64_t)v); return; /* the low bits */
  case DT_I8: ((int8_t *)p)[i] = (int8_t)v; return;
  case DT_I16: ((int16_t *)p)[i] = (int16_t)v; return;
  case DT_I32: ((int32_t *)p)[i] = (int32_t)v; return;
  case DT_I64: ((int64_t *)p)[i] = v; return;
  default:
    KILN_ASSERT(dt_is_unsigned_int(dt)); /* callers check dt_supported */
    el_set_u(dt, p, i, (uint64_t)v);
  }
}

void el_set_u(DType dt, void *p, int64_t i, uint64_t v) {
  switch (dt) {
  case DT_F32: ((float *)p)[i] = (float)v; return;
  case DT_F64: ((double *)p)[i] = (double)v; return;
  case DT_F16: case DT_BF16: case DT_F8E4M3FN: case DT_F8E4M3FNUZ: case DT_F8E5M2:
  case DT_F8E5M2FNUZ: case DT_F8E8M0: case DT_F4E2M1: el_set_f(dt, p, i, (double)v); return;
  case DT_BOOL: ((uint8_t *)p)[i] = v != 0; return;
  case DT_U4: case DT_U2: packed_set(dt, p, i, (unsigned)v); return;
  case DT_U8: ((uint8_t *)p)[i] = (uint8_t)v; return;
  case DT_U16: ((uint16_t *)p)[i] = (uint16_t)v; return;
  case DT_U32: ((uint32_t *)p)[i] = (uint32_t)v; return;
  case DT_U64: ((uint64_t *)p)[i] = v; return;
  default:
    KILN_ASSERT(dt_is_signed_int(dt));
    el_set_i(dt, p, i, (int64_t)v);
  }
}

void el_convert(DType ddt, void *dst, int64_t j, DType sdt, const void *src, int64_t i) {
  if (ddt == DT_BOOL) {
    bool nz = dt_is_float(sdt) ? el_get_f(sdt, src, i) != 0 : el_get_u(sdt, src, i) != 0;
    ((uint8_t *)dst)[j] = nz;
  } else if (dt_is_float(sdt)) {
    el_set_f(ddt, dst, j, el_get_f(sdt, src, i));
  } else if (dt_is_signed_int(sdt)) {
    el_set_i(ddt, dst, j, el_get_i(sdt, src, i));
  } else {
    el_set_u(ddt, dst, j, el_get_u(sdt, src, i));
  }
}

/* ---- types ---------------------------------------------------------------- */

int64_t type_numel(const Type *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++)
    n *= t->dims[i];
  return n;
}

bool type_dims_ok(const Type *t, bool unknown_ok) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->dims[i] == -1 && unknown_ok)
      continue;
    if (t->dims[i] < 0 || t->dims[i] > MAX_NUMEL)
      return false;
    if (t->dims[i] && n > MAX_NUMEL / t->dims[i])
      return false;
    n *= t->dims[i];
  }
  return true;
}

bool type_size_ok(const Type *t) { return type_dims_ok(t, false); }

size_t type_bytes(const Type *t) {
  if (dt_is_packed(t->dt))
    return ((size_t)type_numel(t) * (size_t)dt_bits(t->dt) + 7) / 8;
  return (size_t)type_numel(t) * dt_size(t->dt);
}

bool type_equal(const Type *a, const Type *b) {
  if (a->dt != b->dt || a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i])
      return false;
  return true;
}

/* "f32[batch,16]": the type with its symbolic dims by name */
const char *value_type_str(const Value *v, char *buf, size_t n) {
  int k = snprintf(buf, n, "%s[", dt_name(v->type.dt));
  for (int i = 0; i < v->type.rank && k > 0 && (size_t)k < n; i++) {
    if (v->type.dims[i] >= 0)
      k += snprintf(buf + k, n - (size_t)k, "%s%lld", i ? "," : "", (long long)v->type.dims[i]);
    else
      k += snprintf(buf + k, n - (size_t)k, "%s%s", i ? "," : "", v->sym[i] ? v->sym[i] : "?");
  }
  if (k > 0 && (size_t)k < n)
    snprintf(buf + k, n - (size_t)k, "]");
  return buf;
}

const char *type_str(const Type *t, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "%s[", dt_name(t->dt));
  if (t->rank < 0)
    k += (size_t)snprintf(buf + (k < n ? k : n), k < n ? n - k : 0, "?");
  for (int i = 0; i < t->rank; i++) {
    const char *sep = i ? "," : "";
    if (t->dims[i] < 0)
      k += (size_t)snprintf(buf + (k < n ? k : n), k < n ? n - k : 0, "%s?", sep);
    else
      k += (size_t)snprintf(buf + (k < n ? k : n), k < n ? n - k : 0, "%s%lld", sep,
                            (long long)t->dims[i]);
  }
  snprintf(buf + (k < n ? k : n), k < n ? n - k : 0, "]");
  return buf;
}

void type_strides(const Type *t, int64_t st[MAX_RANK]) {
  int64_t s = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    st[i] = s;
    s *= t->dims[i];
  }
}

/* ---- graph ---------------------------------------------------------------- */

Graph *graph_new(Arena *a, const char *file) {
  Graph *g = arena_alloc(a, sizeof *g);
  g->arena = a;
  g->file = file ? arena_strdup(a, file) : NULL;
  g->name = "model";
  return g;
}

int graph_add_value(Graph *g, const char *name) {
  g->vals = arena_grow(g->arena, g->vals, &g->capvals, g->nvals + 1, sizeof(Value));
  Value *v = &g->vals[g->nvals];
  memset(v, 0, sizeof *v);
  v->name = name ? arena_strdup(g->arena, name) : arena_printf(g->arena, "v%d", g->nvals);
  v->type.rank = -1;
  v->producer = -1;
  v->alias_of = -1;
  v->ws_offset = -1;
  return g->nvals++;
}

int graph_find_value(const Graph *g, const char *name) {
  for (int i = 0; i < g->nvals; i++)
    if (strcmp(g->vals[i].name, name) == 0)
      return i;
  return -1;
}

int graph_add_node(Graph *g, int op, const char *name, const int *in, int nin, const int *out,
                   int nout) {
  g->nodes = arena_grow(g->arena, g->nodes, &g->capnodes, g->nnodes + 1, sizeof(Node));
  Node *n = &g->nodes[g->nnodes];
  memset(n, 0, sizeof *n);
  n->op = op;
  n->name = name && *name ? arena_strdup(g->arena, name)
                          : arena_printf(g->arena, "%s_%d", op_table[op].name, g->nnodes);
  n->origin = n->name;
  n->opset = g->opset;
  n->nin = nin;
  n->nout = nout;
  n->in = arena_dup(g->arena, in, sizeof(int) * (size_t)(nin ? nin : 1));
  n->out = arena_dup(g->arena, out, sizeof(int) * (size_t)(nout ? nout : 1));
  for (int i = 0; i < nout; i++)
    g->vals[out[i]].producer = g->nnodes;
  return g->nnodes++;
}

void graph_add_input(Graph *g, int vid) {
  g->inputs = arena_grow(g->arena, g->inputs, &g->capinputs, g->ninputs + 1, sizeof(int));
  g->inputs[g->ninputs++] = vid;
  g->vals[vid].is_input = true;
}

int graph_add_state_in_place(Graph *g, const char *name, Type t) {
  int vid = graph_add_value(g, name);
  Value *v = gval(g, vid);
  v->type = t;
  v->is_state = true;
  v->state_next = -1; /* none: CacheWrite changes it where it lives */
  v->state_init = arena_alloc(g->arena, type_bytes(&t) + 1);
  graph_add_input(g, vid);
  return vid;
}

void graph_add_output(Graph *g, int vid) {
  g->outputs = arena_grow(g->arena, g->outputs, &g->capoutputs, g->noutputs + 1, sizeof(int));
  g->outputs[g->noutputs++] = vid;
  g->vals[vid].is_output = true;
}

Attr *node_add_attr(Graph *g, Node *n, const char *name, AttrKind kind) {
  Attr *a = arena_alloc(g->arena, sizeof(Attr) * (size_t)(n->nattr + 1));
  if (n->nattr)
    memcpy(a, n->attrs, sizeof(Attr) * (size_t)n->nattr);
  n->attrs = a;
  Attr *r = &a[n->nattr++];
  r->name = arena_strdup(g->arena, name);
  r->kind = kind;
  return r;
}

void graph_count_uses(Graph *g) {
  for (int i = 0; i < g->nvals; i++)
    g->vals[i].nuses = 0;
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = &g->nodes[i];
    if (n->dead)
      continue;
    for (int j = 0; j < n->nin; j++)
      if (n->in[j] >= 0)
        g->vals[n->in[j]].nuses++;
  }
  for (int i = 0; i < g->noutputs; i++)
    g->vals[g->outputs[i]].nuses++;
}

void graph_compact(Graph *g) {
  int k = 0;
  for (int i = 0; i < g->nnodes; i++) {
    if (g->nodes[i].dead)
      continue;
    g->nodes[k] = g->nodes[i];
    k++;
  }
  g->nnodes = k;
  for (int i = 0; i < g->nvals; i++)
    g->vals[i].producer = -1;
  for (int i = 0; i < g->nnodes; i++)
    for (int j = 0; j < g->nodes[i].nout; j++)
      if (g->nodes[i].out[j] >= 0)
        g->vals[g->nodes[i].out[j]].producer = i;
}

void graph_splice(Graph *g, int n0, const int *first, const int *end) {
  Node *order = arena_alloc(g->arena, sizeof(Node) * (size_t)g->nnodes);
  int k = 0;
  for (int i = 0; i < n0; i++) {
    if (first[i] < 0) {
      order[k++] = g->nodes[i];
      continue;
    }
    for (int j = first[i]; j < end[i]; j++)
      order[k++] = g->nodes[j];
  }
  memcpy(g->nodes, order, sizeof(Node) * (size_t)k);
  g->nnodes = k;
  graph_compact(g); /* recomputes every producer */
}

void graph_replace_uses(Graph *g, int from, int to) {
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = &g->nodes[i];
    for (int j = 0; j < n->nin; j++)
      if (n->in[j] == from)
        n->in[j] = to;
  }
  for (int i = 0; i < g->noutputs; i++)
    if (g->outputs[i] == from)
      g->outputs[i] = to;
}

/* Kahn's algorithm over node indices; nodes with no pending producers keep
 * their original relative order, so sorted graphs are left as they are. */
bool graph_toposort(Graph *g, Diag *d) {
  int nn = g->nnodes;
  if (nn == 0)
    return true;
  int *pending = arena_alloc(g->arena, sizeof(int) * (size_t)nn);
  int *order = arena_alloc(g->arena, sizeof(int) * (size_t)nn);
  bool *done = arena_alloc(g->arena, (size_t)nn);
  /* producer of each value by scanning outputs */
  int *prod = arena_alloc(g->arena, sizeof(int) * (size_t)g->nvals);
  for (int i = 0; i < g->nvals; i++)
    prod[i] = -1;
  for (int i = 0; i < nn; i++)
    for (int j = 0; j < g->nodes[i].nout; j++)
      if (g->nodes[i].out[j] >= 0)
        prod[g->nodes[i].out[j]] = i;
  for (int i = 0; i < nn; i++)
    for (int j = 0; j < g->nodes[i].nin; j++) {
      int v = g->nodes[i].in[j];
      if (v >= 0 && prod[v] >= 0)
        pending[i]++;
    }
  int k = 0;
  /* repeated scans: O(n^2) worst case, fine for graphs of a few thousand nodes
   * and keeps the original order whenever it is already valid */
  bool progress = true;
  while (k < nn && progress) {
    progress = false;
    for (int i = 0; i < nn; i++) {
      if (done[i] || pending[i] > 0)
        continue;
      done[i] = true;
      order[k++] = i;
      progress = true;
      for (int j = 0; j < g->nodes[i].nout; j++) {
        int v = g->nodes[i].out[j];
        if (v < 0)
          continue;
        for (int u = 0; u < nn; u++)
          for (int m = 0; m < g->nodes[u].nin; m++)
            if (g->nodes[u].in[m] == v)
              pending[u]--;
      }
    }
  }
  if (k < nn) {
    for (int i = 0; i < nn; i++)
      if (!done[i])
        return diag_node(d, g, &g->nodes[i], "the graph has a cycle through this node; expected an acyclic graph");
  }
  Node *sorted = arena_alloc(g->arena, sizeof(Node) * (size_t)nn);
  for (int i = 0; i < nn; i++)
    sorted[i] = g->nodes[order[i]];
  memcpy(g->nodes, sorted, sizeof(Node) * (size_t)nn);
  graph_compact(g);
  return true;
}

Value *node_in(const Graph *g, const Node *n, int i) {
  if (i < 0 || i >= n->nin || n->in[i] < 0)
    return NULL;
  return &g->vals[n->in[i]];
}

Value *node_out(const Graph *g, const Node *n, int i) {
  if (i < 0 || i >= n->nout || n->out[i] < 0)
    return NULL;
  return &g->vals[n->out[i]];
}

bool node_has_in(const Node *n, int i) { return i >= 0 && i < n->nin && n->in[i] >= 0; }

/* ---- attribute types ----------------------------------------------------------
 * The type ONNX gives each attribute kiln's ops read, by name (one type per
 * name across the standard ops; kiln's own ops follow it). The accessors
 * (attr_int, ...) fall back to the default on another kind, so a mistyped
 * attribute would silently change what the model computes: every frontend
 * (ONNX, .kir, Lua) refuses it with attr_mistyped. Names not listed are not
 * checked. A float also takes an int (attr_float reads one), and 'value',
 * Constant's tensor, also a float (Pad-2's). */
static const struct {
  const char *name;
  AttrKind kind;
} attr_types[] = {
    {"allowzero", ATTR_INT}, {"axis", ATTR_INT}, {"batch_dims", ATTR_INT}, {"blocksize", ATTR_INT},
    {"broadcast", ATTR_INT}, {"ceil_mode", ATTR_INT}, {"count_include_pad", ATTR_INT},
    {"detect_negative", ATTR_INT}, {"detect_positive", ATTR_INT}, {"dtype", ATTR_INT},
    {"end", ATTR_INT}, {"exclusive", ATTR_INT}, {"fmod", ATTR_INT}, {"group", ATTR_INT},
    {"ignore_index", ATTR_INT}, {"interleaved", ATTR_INT}, {"is_packed_batching", ATTR_INT},
    {"is_test", ATTR_INT}, {"k", ATTR_INT}, {"keepdims", ATTR_INT}, {"largest", ATTR_INT},
    {"noop_with_empty_axes", ATTR_INT}, {"num_groups", ATTR_INT}, {"num_heads", ATTR_INT},
    {"num_outputs", ATTR_INT}, {"p", ATTR_INT}, {"reverse", ATTR_INT},
    {"rotary_embedding_dim", ATTR_INT}, {"select_last_index", ATTR_INT}, {"size", ATTR_INT},
    {"sorted", ATTR_INT}, {"spatial", ATTR_INT}, {"start", ATTR_INT}, {"stash_type", ATTR_INT},
    {"storage_order", ATTR_INT}, {"to", ATTR_INT}, {"training_mode", ATTR_INT}, {"transA", ATTR_INT},
    {"transB", ATTR_INT}, {"upper", ATTR_INT}, {"value_int", ATTR_INT},
    {"alpha", ATTR_FLOAT}, {"beta", ATTR_FLOAT}, {"bias", ATTR_FLOAT}, {"epsilon", ATTR_FLOAT},
    {"gamma", ATTR_FLOAT}, {"lambd", ATTR_FLOAT}, {"max", ATTR_FLOAT}, {"min", ATTR_FLOAT},
    {"momentum", ATTR_FLOAT}, {"scale", ATTR_FLOAT}, {"value_float", ATTR_FLOAT},
    {"approximate", ATTR_STRING}, {"auto_pad", ATTR_STRING}, {"direction", ATTR_STRING}, {"equation", ATTR_STRING},
    {"mode", ATTR_STRING}, {"reduction", ATTR_STRING}, {"value_string", ATTR_STRING},
    {"axes", ATTR_INTS}, {"dilations", ATTR_INTS}, {"ends", ATTR_INTS}, {"kernel_shape", ATTR_INTS},
    {"output_padding", ATTR_INTS}, {"output_shape", ATTR_INTS}, {"pads", ATTR_INTS}, {"perm", ATTR_INTS},
    {"shape", ATTR_INTS}, {"split", ATTR_INTS}, {"starts", ATTR_INTS}, {"strides", ATTR_INTS},
    {"value_ints", ATTR_INTS}, {"value_floats", ATTR_FLOATS}, {"value_strings", ATTR_STRINGS},
    {"sparse_value", ATTR_TENSOR}, {"value", ATTR_TENSOR},
};

const char *attr_kind_name(AttrKind k) {
  static const char *const names[] = {"an int", "a float", "a string", "a list of ints",
                                      "a list of floats", "a list of strings", "a tensor"};
  return (int)k >= 0 && (int)k < KILN_COUNT(names) ? names[k] : "?";
}

AttrKind attr_expected_kind(const char *name, bool *known) {
  for (int k = 0; k < KILN_COUNT(attr_types); k++)
    if (!strcmp(name, attr_types[k].name)) {
      *known = true;
      return attr_types[k].kind;
    }
  *known = false;
  return ATTR_INT;
}

const Attr *attr_mistyped(const Node *n, AttrKind *want) {
  for (int i = 0; i < n->nattr; i++) {
    const Attr *a = &n->attrs[i];
    bool known;
    AttrKind k = attr_expected_kind(a->name, &known);
    if (!known || a->kind == k || (k == ATTR_FLOAT && a->kind == ATTR_INT) ||
        (k == ATTR_TENSOR && a->kind == ATTR_FLOAT && !strcmp(a->name, "value")))
      continue;
    *want = k;
    return a;
  }
  return NULL;
}

const Attr *attr_get(const Node *n, const char *name) {
  for (int i = 0; i < n->nattr; i++)
    if (strcmp(n->attrs[i].name, name) == 0)
      return &n->attrs[i];
  return NULL;
}

int64_t attr_int(const Node *n, const char *name, int64_t dflt) {
  const Attr *a = attr_get(n, name);
  return a && a->kind == ATTR_INT ? a->i : dflt;
}

double attr_float(const Node *n, const char *name, double dflt) {
  const Attr *a = attr_get(n, name);
  if (a && a->kind == ATTR_FLOAT)
    return a->f;
  if (a && a->kind == ATTR_INT)
    return (double)a->i;
  return dflt;
}

const char *attr_str(const Node *n, const char *name, const char *dflt) {
  const Attr *a = attr_get(n, name);
  return a && a->kind == ATTR_STRING ? a->s : dflt;
}

const char *node_op_name(const Node *n) {
  return (n->op >= 0 && n->op < OP_COUNT_) ? op_table[n->op].name : "?";
}

bool diag_node(Diag *d, const Graph *g, const Node *n, const char *fmt, ...) {
  (void)g;
  if (d->failed)
    return false;
  int k = snprintf(d->msg, sizeof d->msg, "node '%s' (%s): ", n->name ? n->name : "?",
                   node_op_name(n));
  if (k < 0 || k >= (int)sizeof d->msg)
    k = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->msg + k, sizeof d->msg - (size_t)k, fmt, ap);
  va_end(ap);
  d->failed = true;
  return false;
}

/* ---- shape helpers -------------------------------------------------------- */

bool shape_broadcast(const Type *a, const Type *b, Type *out) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  Type t = {.dt = a->dt, .rank = r};
  for (int i = 0; i < r; i++) {
    int ia = i - (r - a->rank), ib = i - (r - b->rank);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return false;
    t.dims[i] = da == 1 ? db : da;
  }
  *out = t;
  return true;
}

int64_t bcast_src(const Type *out, const Type *in, int64_t i) {
  int64_t src = 0, stride = 1;
  for (int d = out->rank - 1; d >= 0; d--) {
    int64_t od = out->dims[d], c = i % od;
    i /= od;
    int id = d - (out->rank - in->rank);
    if (id < 0)
      break;
    if (in->dims[id] != 1)
      src += c * stride;
    stride *= in->dims[id];
  }
  return src;
}

bool axis_norm(int64_t axis, int rank, int *out) {
  if (axis < -rank || axis >= rank)
    return false;
  *out = (int)(axis < 0 ? axis + rank : axis);
  return true;
}

bool const_input_ints(Graph *g, const Node *n, int i, const char *what, int64_t **vals, int *len,
                      Diag *d) {
  const Value *v = node_in(g, n, i);
  if (!v)
    return diag_node(d, g, n, "input %d ('%s') is missing; expected a constant integer tensor", i, what);
  if (!v->data)
    return diag_node(d, g, n,
                     "input '%s' (%s) is computed at run time; expected a compile-time constant "
                     "(an initializer, or a value folded from one) because it fixes the output shape",
                     v->name, what);
  if (!dt_is_int(v->type.dt) || v->type.rank > 1)
    return diag_node(d, g, n, "input '%s' (%s) is %s of rank %d; expected a 1-D integer tensor",
                     v->name, what, dt_name(v->type.dt), v->type.rank);
  int64_t m = type_numel(&v->type);
  int64_t *r = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(m ? m : 1));
  for (int64_t k = 0; k < m; k++)
    r[k] = el_get_i(v->type.dt, v->data, k);
  *vals = r;
  *len = (int)m;
  return true;
}

/* The entry each node belongs to: the one whose inputs it depends on; for
 * a node that reads only constants and states but is not folded (a
 * stored key reshaped, DequantizeBlocks left unfused), the one entry that
 * uses it, or DECODER_ENTRY_ALL when several do: each of them runs it.
 * NULL + d when a node depends on two entries' inputs. */
int *graph_decoder_entries(Graph *g, Diag *d) {
  const Decoder *dec = g->decoder;
  int *val = arena_alloc(g->arena, sizeof(int) * (size_t)(g->nvals + 1));
  int *node = arena_alloc(g->arena, sizeof(int) * (size_t)(g->nnodes + 1));
  for (int v = 0; v < g->nvals; v++)
    val[v] = -1;
  for (int k = 0; k < dec->nentries; k++) {
    const DecoderEntry *en = &dec->entries[k];
    if (en->tokens)
      val[en->tokens_vid] = val[en->start_vid] = val[en->count_vid] = k;
    for (int i = 0; i < en->ninputs; i++)
      val[en->inputs[i]] = k;
  }
  for (int i = 0; i < g->nnodes; i++) {
    const Node *n = &g->nodes[i];
    int k = -1;
    for (int j = 0; j < n->nin; j++) {
      int e = n->in[j] >= 0 ? val[n->in[j]] : -1;
      if (e >= 0 && k >= 0 && e != k)
        return diag_node(d, g, n, "reads values of both the %s and the %s entry%s%s%s; expected each node in "
                         "one entry point (entries share only weights and states: encode's values reach the "
                         "others through e:set and x:get)", dec->entries[k].name, dec->entries[e].name,
                         n->origin ? " (" : "", n->origin ? n->origin : "", n->origin ? ": here)" : ""), NULL;
      k = e >= 0 ? e : k;
    }
    bool computed = false;
    for (int j = 0; j < n->nout; j++)
      computed = computed || !g->vals[n->out[j]].data;
    node[i] = k >= 0 ? k : computed ? DECODER_ENTRY_ALL : -1;
    for (int j = 0; j < n->nout; j++)
      val[n->out[j]] = k;
  }
  /* A computed node that reads only states and constants (the encoder's
   * stored keys, reshaped) runs in the entries that use it: backwards,
   * each such node takes the one entry of all its users when there is
   * one. Nodes come in topological order, so users are settled first. */
  int *user = arena_alloc(g->arena, sizeof(int) * (size_t)(g->nvals + 1)); /* -1 none, -3 several */
  for (int v = 0; v < g->nvals; v++)
    user[v] = g->vals[v].is_output ? -3 : -1;
  for (int i = g->nnodes - 1; i >= 0; i--) {
    const Node *n = &g->nodes[i];
    if (node[i] == DECODER_ENTRY_ALL) {
      int k = -1;
      for (int j = 0; j < n->nout; j++) {
        int u = user[n->out[j]];
        k = u == -1 ? k : k == -1 ? u : k == u ? k : -3;
      }
      if (k >= 0)
        node[i] = k;
    }
    int mine = node[i] >= 0 ? node[i] : -3;
    for (int j = 0; j < n->nin; j++) {
      int v = n->in[j];
      if (v >= 0)
        user[v] = user[v] == -1 ? mine : user[v] == mine ? mine : -3;
    }
  }
  return node;
}


/* An i64 input of an entry: "<entry>.<role>". */
static int entry_input(Graph *g, const char *entry, const char *role, int64_t n) {
  int vid = graph_add_value(g, arena_printf(g->arena, "%s.%s", entry, role));
  Value *v = gval(g, vid);
  v->type = (Type){.dt = DT_I64, .rank = 1, .dims = {n}};
  v->is_input = true;
  graph_add_input(g, vid);
  return vid;
}

const DecoderEntry *decoder_find_entry(const Decoder *dec, const char *name) {
  for (int k = 0; dec && k < dec->nentries; k++)
    if (!strcmp(dec->entries[k].name, name))
      return &dec->entries[k];
  return NULL;
}

void decoder_entry_inputs(Graph *g, DecoderEntry *e) {
  e->tokens_vid = entry_input(g, e->name, "tokens", e->tokens);
  e->start_vid = entry_input(g, e->name, "start", 1);
  e->count_vid = entry_input(g, e->name, "count", 1);
}
