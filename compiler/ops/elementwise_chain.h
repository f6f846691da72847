/* elementwise_chain.h — what the ElementwiseChain op (elementwise_chain.c)
 * tells the pass that builds it (passes/fuse_chain.c): which ops a chain
 * can hold; and what it tells its export lowering
 * (export/lower_elementwise_chain.c): the steps of a chain node. */
#ifndef KILN_OPS_ELEMENTWISE_CHAIN_H
#define KILN_OPS_ELEMENTWISE_CHAIN_H

#include "../ir/ir.h"

/* Operands of op in an ElementwiseChain step, 0 when a chain cannot hold
 * it. */
int chain_op_arity(int op);

#define CHAIN_MAX_STEPS 32

/* One step of a chain: op applied to its operands. */
typedef struct Step {
  int op;       /* OpId */
  int narg;
  int arg[3];   /* >= 0: input index; < 0: the result of step -1 - arg */
} Step;

/* The steps of chain node n, parsed from its `steps` attribute, into
 * st[0..*ns) (at most CHAIN_MAX_STEPS); false with a message in err when
 * malformed. */
bool chain_steps(const Node *n, Step *st, int *ns, char *err, size_t en);

#endif
