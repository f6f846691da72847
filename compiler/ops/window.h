/* window.h — helpers shared by the sliding-window ops (conv.c, pool.c):
 * attribute lists with one value per spatial dim, flat index expressions,
 * and the constant tables their emitted loops read. */
#ifndef KILN_OPS_WINDOW_H
#define KILN_OPS_WINDOW_H

#include "../emit/emit.h"

#define WHY 256                      /* size of the `why` message buffers */
#define ATTR_MAX ((int64_t)1 << 30) /* bound on strides, pads, dilations ... */

/* Format a message into why (WHY bytes) and return false. */
bool window_fail(char *why, const char *fmt, ...) KILN_PRINTF(2, 3);
/* Read ints attribute `name` of exactly len values in [lo, ATTR_MAX] into
 * v, or fill v with dflt when it is absent or empty. */
bool window_ints_attr(const Node *n, const char *name, int len, int64_t dflt, int64_t lo,
                      int64_t *v, char *why);
int64_t window_prod(const int64_t *v, int n);
/* Row-major (or, with col, column-major) flat index expression of the n
 * terms over dims; size-1 dims drop out; "0" when nothing is left. */
const char *window_flat(Arena *a, int n, const char **terms, const int64_t *dims, bool col);
/* Flat index i into coordinates at[n] over dims. */
void window_unflatten(int64_t i, const int64_t *dims, int n, int64_t *at);
/* Suffix naming spatial dim j of ns: "d", "h", "w" (or the number). */
const char *window_dim_sfx(Arena *a, int ns, int j);
/* static const int NAME[n] = {...}; 16 values a line. */
void window_emit_table(Emit *e, const char *name, const int64_t *v, int64_t n, const char *what);

/* The channels-last forms of conv_gemm's layout (MaxPool and a depthwise
 * Conv {channels_last=1}): [N, spatial..., C] -> [N, C, spatial...]
 * (to_last false), or back (to_last true). */
Type window_permute_last(const Type *x, bool to_last);
/* `for (c ...) STMT` over c < ch as a body of a multiple of 16 then the
 * rest: gcc -O2 vectorises a loop only when its trip count is a multiple
 * of the vector width (DESIGN.md, "Convolutions on the GEMM"). */
void window_channel_loop(Emit *e, int64_t ch, const char *stmt);

/* The epilogue operands of conv_gemm's kiln ops (WinogradOut, ConvBlocks),
 * y of type yt [.., M]: attribute act none or relu, input bias_in (when
 * present) f32 [M], input res_in (when present) of y's type; false with a
 * diag naming n otherwise. */
bool window_epilogue_infer(const Graph *g, const Node *n, int bias_in, int res_in, const Type *yt, Diag *d);

/* The geometry those channels-last kernels walk: a Conv's (ConvGeom) or a
 * pool's, ns spatial dims of each array. */
typedef struct WindowWalk {
  int ns;
  const int64_t *in, *out, *k, *stride, *dil, *pad;
} WindowWalk;
/* Open `for (n < nb) { for (o0 ...) { ... for (o_ns-1 ...) {` (o0 split
 * for --threads at 0.25 ns an element and tap) and set
 * `float *yp = Y + (n * out... + o) * ch;`. */
void window_last_outputs(Emit *e, const WindowWalk *w, int64_t nb, int64_t ch, const char *y);
/* Open `for (k0 ...) {` per spatial dim with `const int iJ = ...;` and the
 * taps outside x skipped; returns the flat input position of the tap
 * ("(i0) * in1 + i1"), and *tap (when not NULL) its flat tap index. */
const char *window_last_taps(Emit *e, const WindowWalk *w, const char **tap);
/* Close what the two above opened. */
void window_last_close(Emit *e, int ns);

#endif
