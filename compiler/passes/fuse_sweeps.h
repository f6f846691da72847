/* fuse_sweeps.h — the fusions fuse.c calls from files of their own:
 *
 *   fuse_residual.c  Gemm -> Linear and unit transposes -> views (normalising),
 *                    Add + LayerNorm -> AddLayerNorm, Linear + Add -> Linear
 *                    with a residual;
 *   fuse_transpose.c Transposes folded into MatMul operand layouts;
 *   fuse_chain.c     chains of elementwise ops -> one ElementwiseChain loop.
 *
 * Each fuse_* takes the node the pattern is found from and returns whether
 * it rewrote the graph (reporting under -v as fm_fuse_done does). */
#ifndef KILN_FUSE_SWEEPS_H
#define KILN_FUSE_SWEEPS_H

#include "fuse_match.h"

/* Rewrites that add constants, so they run before the reader index is
 * built: Gemm by a constant -> Linear, Transpose of dims of 1 -> Reshape. */
void fuse_normalize(Graph *g, bool verbose);
bool fuse_add_layernorm(Fuser *f, Node *layernorm);
bool fuse_linear_residual(Fuser *f, Node *add);
bool fuse_matmul_transposes(Fuser *f, Node *matmul);
bool fuse_elementwise_chain(Fuser *f, Node *root);
/* Operands of op in an ElementwiseChain step, 0 when a chain cannot hold
 * it (compiler/ops/elementwise_chain.c). */
int chain_op_arity(int op);

#endif
