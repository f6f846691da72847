/* convgeom.h — the geometry of a convolution, shared by Conv and
 * ConvTranspose (conv.c) and the integer convolutions ConvInteger and
 * QLinearConv (conv_integer.c): output size and begin pads from pads or
 * auto_pad, strides, dilations and group, and the pieces of emitted C that
 * walk a window without testing for padding. */
#ifndef KILN_CONVGEOM_H
#define KILN_CONVGEOM_H

#include "../emit/emit.h"

typedef struct ConvGeom {
  bool transpose;
  int nsp; /* spatial dims */
  int64_t batch, cin, cout, group;
  int64_t in[MAX_RANK], out[MAX_RANK], k[MAX_RANK];
  int64_t stride[MAX_RANK], dil[MAX_RANK];
  int64_t pad[MAX_RANK]; /* pad before each spatial dim */
} ConvGeom;

/* Fill c from X [N, C, in...], W and n's attributes (ConvTranspose when
 * n is one); false with the reason in why (WHY bytes, window.h). */
bool conv_geom(const Node *n, const Type *x, const Type *w, ConvGeom *c, char *why);
/* Y's type: [batch, cout, out...] of dtype dt. */
Type conv_out_type(const ConvGeom *c, DType dt, int rank);
/* Flat offset in X's plane of the input that tap t of output position o
 * reads; false when it falls in the padding. */
bool conv_source(const ConvGeom *c, const int64_t *o, const int64_t *t, int64_t *off);
/* C expression "oh * 2 + kh - 1": where position bv of tap kv lands along
 * spatial dim j. */
const char *conv_landing(Arena *a, const ConvGeom *c, int j, const char *bv, const char *kv);
/* Emit static tables KV_lo[o], KV_hi[o]: the taps of each window along
 * spatial dim j that land inside x; false (nothing emitted) when every
 * window has all its taps inside. */
bool conv_window_table(Emit *e, const ConvGeom *c, int j, const char *ov, const char *kv);

#endif
