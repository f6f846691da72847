/* lower_elementwise_chain.c — kiln export's lowering of ElementwiseChain
 * (compiler/ops/elementwise_chain.c; ops.def's lower column): the chain's
 * steps, read back from its `steps` attribute by chain_steps, as the
 * standard elementwise nodes fuse_chain.c took. */
#include "../ir/build.h"
#include "../ir/ops.h"
#include "../ops/elementwise_chain.h"

/* Lower node `node`: one standard node per
 * step, in order, named NAME/Op, the last writing the chain's output. */
bool elementwise_chain_lower(Graph *g, int node, Diag *d) {
  Step st[CHAIN_MAX_STEPS];
  int ns, t[CHAIN_MAX_STEPS];
  char err[256];
  KILN_ASSERT(chain_steps(&g->nodes[node], st, &ns, err, sizeof err));
  Lowering l = lw_start(g, node, gval(g, g->nodes[node].out[0])->type.dt, d);
  for (int s = 0; s < ns; s++) {
    int in[3];
    for (int a = 0; a < st[s].narg; a++)
      in[a] = st[s].arg[a] >= 0 ? g->nodes[node].in[st[s].arg[a]] : t[-1 - st[s].arg[a]];
    t[s] = lw_op(&l, st[s].op, in, st[s].narg);
  }
  return lw_result(&l, t[ns - 1], 0);
}
