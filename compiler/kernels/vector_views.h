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

/* The `#if` (the first path) or `#elif` line that picks view v's path in
 * the generated C, under the GNU C condition gnu: the width's own macro or
 * the one that forces it. */
static inline void emit_view_guard(Emit *e, const View *v, bool first, const char *gnu) {
  if (v->cpp)
    emit_line(e, "#%s %s && (defined(%s) || defined(%s))", first ? "if" : "elif", gnu, v->cpp, v->force);
  else
    emit_line(e, "#%s %s", first ? "if" : "elif", gnu);
}

#endif
