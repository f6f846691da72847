/* winograd.h — Winograd's minimal filtering F(m x m, 3 x 3) for the
 * conv_gemm pass: the transforms' matrices and the weight transform, done
 * at compile time. The ops WinogradIn and WinogradOut (winograd.c) are the
 * input and output transforms; the product between them is a MatMul by
 * the transformed weight, one GEMM per position of the tile. */
#ifndef KILN_WINOGRAD_H
#define KILN_WINOGRAD_H

#include "../ir/ir.h"

/* The tile sizes m kiln has matrices for: F(2x2, 3x3), α = 4 (16 products)
 * and F(4x4, 3x3), α = 6 (36). */
bool winograd_tile_ok(int64_t m);

/* U [α², C, M], U[i·α + j][c][o] = (G · w[o][c] · Gᵀ)[i][j], from the conv
 * weight w [M, C, 3, 3] (f32), computed in double; arena memory. */
float *winograd_weight(Arena *a, int64_t m, const float *w, int64_t cout, int64_t cin);

#endif
