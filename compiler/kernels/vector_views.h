/* vector_views.h — the GNU C vector widths the generated kernels may run
 * on, widest first, shared by the GEMM and attention generators: each
 * width's `#if` guard (the macro that says the C compiler targets it;
 * NULL: any GNU C compiler), the macro that forces it (for tests), and the
 * accumulators a register tile of that width may hold. */
#ifndef KILN_VECTOR_VIEWS_H
#define KILN_VECTOR_VIEWS_H

#include <stdbool.h>
#include <stddef.h>

#include "../emit/emit.h"

typedef struct View {
  int vw;
  const char *cpp, *force;
  int acc;
} View;

static const View views[] = {
    {16, "__AVX512F__", "KILN_GEMM_V16", 24},
    {8, "__AVX__", "KILN_GEMM_V8", 12},
    {4, NULL, NULL, 12},
};

/* Does --isa write view v's bodies? portable (ISA_GENERIC) every width,
 * avx2 the 8-wide, avx512 the 16-wide. */
static inline bool isa_writes_view(EmitIsa isa, const View *v) {
  return isa == ISA_GENERIC || v->vw == (isa == ISA_AVX512 ? 16 : 8);
}

/* The `#if` condition that picks view v's body in the generated C, under
 * the GNU C condition gnu: the width's own macro or the one that forces it. */
static inline const char *view_cond(Emit *e, const View *v, const char *gnu) {
  if (!v->cpp)
    return gnu;
  return arena_printf(e->g->arena, "%s && (defined(%s) || defined(%s))", gnu, v->cpp, v->force);
}

/* A kernel's bodies in the generated C: n SIMD bodies, body i under the
 * `#if` condition cond[i] (the first that holds is compiled), and the plain
 * C body for when none does. The kernel emits them in the order
 * simd_paths_plain_first says, each after its guard line:
 *
 *   --isa=portable (several widths; widest first, the plain C last):
 *     #if c0 / body 0 / #elif c1 / body 1 / ... / #else / plain C / #endif
 *   --isa=avx2, avx512 (one width; the plain C first, so a reader sees the
 *   portable form before the SIMD one):
 *     #if !(c0) [&& !(c1)] / plain C / [#elif c0 / body 0 /] #else / body n-1 / #endif
 *
 * With no SIMD body (n 0) the plain C stands alone, with no guard. */
typedef struct SimdPaths {
  const char *cond[4];
  int n;
  bool plain_first;
} SimdPaths;

static inline SimdPaths simd_paths(const Emit *e) {
  SimdPaths p = {.n = 0, .plain_first = e->isa != ISA_GENERIC};
  return p;
}

static inline void simd_paths_add(SimdPaths *p, const char *cond) {
  KILN_ASSERT(p->n < (int)(sizeof p->cond / sizeof p->cond[0]));
  p->cond[p->n++] = cond;
}

/* The guard line before SIMD body i. */
static inline void simd_paths_body(Emit *e, const SimdPaths *p, int i) {
  if (p->plain_first && i == p->n - 1)
    emit_line(e, "#else");
  else if (p->plain_first)
    emit_line(e, "#elif %s", p->cond[i]);
  else
    emit_line(e, "#%s %s", i ? "elif" : "if", p->cond[i]);
}

/* The guard line before the plain C body. */
static inline void simd_paths_plain(Emit *e, const SimdPaths *p) {
  if (!p->n)
    return;
  if (!p->plain_first) {
    emit_line(e, "#else");
    return;
  }
  Buf b = {0};
  for (int i = 0; i < p->n; i++)
    buf_printf(&b, "%s!(%s)", i ? " && " : "", p->cond[i]);
  emit_line(e, "#if %s", b.s ? b.s : "1");
  emit_line(e, "/* plain C: the C compiler does not target --isa=%s (or -DKILN_GEMM_SCALAR) */",
            e->isa == ISA_AVX512 ? "avx512" : "avx2");
  buf_free(&b);
}

/* The line after the last body. */
static inline void simd_paths_end(Emit *e, const SimdPaths *p) {
  if (p->n)
    emit_line(e, "#endif");
}

#endif
