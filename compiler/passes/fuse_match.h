/* fuse_match.h — the toolkit the fusion passes (fuse_*.c, one pass each,
 * run in pipeline.c's order) match patterns with: who reads each value, "is
 * this intermediate swallowed by the pattern alone", constant tests, the
 * rewrite that replaces a matched set of nodes by one fused node in the slot
 * of the last, and the sweep that is each pass's body.
 *
 * The rules every fusion keeps: a pattern fuses only when each intermediate
 * value is read by the pattern alone (no other user, not a graph output),
 * every constant has the value the decomposition needs, and no broadcast
 * changes a shape. The fused node takes the slot of the pattern's last node
 * and keeps its output, so the node array stays topologically sorted: each
 * input of the fused node was read by a node of the pattern, and all of
 * those come before that slot. Its origin joins the sources' origins with
 * " + "; with -v each fusion prints one line to stderr. Fusion needs shapes:
 * on a graph not yet inferred every fusion pass leaves it as it is. */
#ifndef KILN_FUSE_MATCH_H
#define KILN_FUSE_MATCH_H

#include "../ir/ir.h"
#include "passes.h"

#define MAX_MATCH 24

typedef struct Fuser {
  Graph *g;
  bool verbose;
  int *ustart; /* readers of value v: ulist[ustart[v] .. ustart[v + 1]), one per input slot */
  int *ulist;
  int *fill;   /* scratch for index_users */
  int cap_vals, cap_edges; /* what the arrays were sized for (a rewrite that adds values grows them) */
} Fuser;

typedef struct Match {
  int idx[MAX_MATCH]; /* node indices */
  int n;
} Match;

/* Rebuild the reader lists from the live nodes (after every rewrite, so
 * matchers never see a stale use). The arrays grow when a rewrite added
 * values (new constants) or edges. */
void fm_index_users(Fuser *f);
int fm_nreaders(const Fuser *f, int v);
/* The live node of op `op` (-1: any) that produces v, or NULL. */
Node *fm_def(const Fuser *f, int v, int op);
/* v is an intermediate the pattern may swallow: read once, by one node. */
bool fm_sole(const Fuser *f, int v);
/* The one node of op `op` (-1: any) reading v, when v is sole; else NULL. */
Node *fm_sole_user(const Fuser *f, int v, int op);
/* The operand of binary node n that is not v (v itself for n(v, v)); -1 if
 * n does not read v. */
int fm_other(const Node *n, int v);
/* v is a one-element numeric constant (Pow's exponent may be an integer);
 * its value in *x. */
bool fm_scalar_const(const Graph *g, int v, double *x);
/* v is a one-element constant within rtol of want (0: exactly). */
bool fm_const_is(const Graph *g, int v, double want, double rtol);
bool fm_float_value(const Graph *g, int v);
void fm_take(Match *m, const Graph *g, const Node *n);
/* Every matched node's output has type t (no broadcast grew a shape). */
bool fm_outputs_are(const Graph *g, const Match *m, const Type *t);
/* Replace the matched nodes by one node of op `op` reading `in`, in the
 * slot of `last`, the node whose output the pattern computes (every other
 * matched node feeds it, so it comes last), keeping that output. Returns it
 * (attributes are added by the caller, before fm_fuse_done). */
Node *fm_fuse_into(Fuser *f, Match *m, const Node *last, int op, const int *in, int nin);
/* Check the fused node infers the type its output already has, report it
 * under -v and refresh the reader lists. */
void fm_fuse_done(Fuser *f, Node *n, const char *what);
void fm_set_str(Graph *g, Node *n, const char *name, const char *s);
/* r is ReduceMean over exactly the last axis of a rank-`rank` input,
 * keeping dims (the LayerNorm and RMSNorm statistics). */
bool fm_mean_last_axis(const Graph *g, const Node *r, int rank);
/* The node that divides d by sd (the Sqrt of the statistic): Div(d, sd),
 * or Mul(d, r) with r = Reciprocal(sd) or 1/sd (taken into m); NULL if
 * none. */
Node *fm_match_normalize(Fuser *f, Match *m, int d, int sd);
/* The tail both norms share, from r, the ReduceMean of the statistic:
 * Add of a scalar epsilon (*eps), Sqrt, d divided by it
 * (fm_match_normalize), then Mul by a [last dim of xt] parameter of xt's
 * dtype (*w). The nodes of the statistic's shape go into mr, the others
 * into m. Returns the Mul, or NULL. */
Node *fm_match_norm_tail(Fuser *f, Match *m, Match *mr, const Node *r, int d, const Type *xt, double *eps,
                         int *w);
/* v is a [dim] tensor of dtype dt (a LayerNorm's scale or bias, a bias). */
bool fm_is_param(const Graph *g, int v, DType dt, int64_t dim);
/* W_colsum i32[N] = Σ_k W[k,n] of a constant int8 W [K,N], a new constant
 * named W.colsum: the zero-point term of a w8a8 Linear (fuse_dynquant,
 * fuse_qdq). */
int fm_column_sums(Graph *g, int w);

/* ---- the passes' bodies ---- */

/* Every node output has an inferred type (fusion runs after infer). */
bool fm_graph_typed(const Graph *g);
/* Set f up over g with its reader lists; false (nothing to do) when g is
 * not typed. */
bool fm_begin(Fuser *f, Graph *g, bool verbose);
/* A fusion pass's body: on a typed graph, at(f, n) for every live node of
 * op `op` (-1: any) in order (each call may rewrite the graph), then the
 * dead nodes dropped. Returns true (fusion never fails). */
bool fm_sweep(Graph *g, const PassOptions *o, int op, bool (*at)(Fuser *f, Node *n));

#endif
