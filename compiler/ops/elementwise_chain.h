/* elementwise_chain.h — what the ElementwiseChain op (elementwise_chain.c)
 * tells the pass that builds it (passes/fuse_chain.c): which ops a chain
 * can hold. */
#ifndef KILN_OPS_ELEMENTWISE_CHAIN_H
#define KILN_OPS_ELEMENTWISE_CHAIN_H

/* Operands of op in an ElementwiseChain step, 0 when a chain cannot hold
 * it. */
int chain_op_arity(int op);

#endif
