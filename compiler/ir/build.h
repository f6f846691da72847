/* build.h — building IR in code: what the Lua frontend, the decompositions
 * kiln export needs, and tests use to add values, constants and nodes to a
 * Graph. Every node added through ir_op is type-inferred on the spot, so a
 * bad call fails where it is made, with the op's own message. Lowering
 * (lw_*) builds the chain of standard ops that replaces one node, the one
 * builder every export decomposition uses. */
#ifndef KILN_BUILD_H
#define KILN_BUILD_H

#include "ir.h"

/* A new value named `hint` ("t" when NULL), or hint_2, hint_3, ... when the
 * name is taken. */
int ir_value(Graph *g, const char *hint);
/* A constant of type (dt, rank, dims) whose data is copied from `data`
 * (zeros when NULL). */
int ir_const(Graph *g, const char *hint, DType dt, int rank, const int64_t *dims, const void *data);
/* The same over data the graph's arena already holds (not copied; the
 * value owns it from now on): a weights file's tensors, 90 MB for MiniLM,
 * are not duplicated. data NULL leaves v->data for the caller to set. */
int ir_const_in_place(Graph *g, const char *hint, DType dt, int rank, const int64_t *dims, void *data);
/* A 1-D i64 constant (shapes, axes, pads). */
int ir_const_i64(Graph *g, const char *hint, const int64_t *v, int n);
/* A rank-0 constant of dtype dt holding x (converted with C's rules). */
int ir_const_scalar(Graph *g, const char *hint, DType dt, double x);

/* Add node `op` reading in[0..nin) (-1 = absent optional input) with nout
 * fresh outputs named after the op; origin ("model.lua:14") goes into dumps
 * and the generated C. Attributes are added with ir_attr_* before the node
 * is inferred by ir_finish. Returns the node index (pointers into g->nodes
 * move when nodes are added). */
int ir_op(Graph *g, int op, const char *origin, const int *in, int nin, int nout);
void ir_attr_int(Graph *g, int node, const char *name, int64_t v);
void ir_attr_float(Graph *g, int node, const char *name, double v);
void ir_attr_str(Graph *g, int node, const char *name, const char *s);
void ir_attr_ints(Graph *g, int node, const char *name, const int64_t *v, int n);
void ir_attr_floats(Graph *g, int node, const char *name, const double *v, int n);
/* Check arity and constant inputs, then run the op's _infer: false + diag
 * (naming the node) on bad input. */
bool ir_finish(Graph *g, int node, Diag *d);
/* Output i of node `node`. */
static inline int ir_out(const Graph *g, int node, int i) { return g->nodes[node].out[i]; }

/* ---- a node replaced by a chain of ops (kiln export, export/lower_*.c) ----
 *
 * lw_start, then append the chain with lw_* and end with lw_result for each
 * of the node's outputs. New nodes are named NAME/Op (their outputs alike,
 * made unique), constants NAME/hint, and keep the node's origin. Every call
 * returns -1 once anything failed (an input of -1 included), so a chain of
 * nested calls stops at its first failure and the diag says where. */
typedef struct Lowering {
  Graph *g;
  int node;            /* the node being replaced (still live) */
  const char *name;    /* its name */
  const char *origin;  /* its origin, kept on every new node */
  DType dt;            /* dtype of lw_scalar's constants */
  int first;           /* index of the first new node */
  Diag *d;
  bool failed;
} Lowering;

Lowering lw_start(Graph *g, int node, DType dt, Diag *d);
/* Fails (with a message naming the node) unless g->opset >= need. */
bool lw_need_opset(Lowering *l, int need, const char *why);
/* A new node op(in[0..nin)) with nout outputs, not yet inferred: add
 * attributes with ir_attr_*, then lw_finish. Check l->failed first. */
int lw_node(Lowering *l, int op, const int *in, int nin, int nout);
/* Infer node idx; its first output, or -1 (and l->failed) when that fails. */
int lw_finish(Lowering *l, int idx);
/* op(in[0..nin)) with one output and no attributes. */
int lw_op(Lowering *l, int op, const int *in, int nin);
int lw_unary(Lowering *l, int op, int x);
int lw_binary(Lowering *l, int op, int a, int b);
/* Cast(x, to), or x when it is of dtype `to` already. */
int lw_cast(Lowering *l, int x, DType to);
/* The name NAME/hint, for a constant of the chain. */
const char *lw_name(Lowering *l, const char *hint);
/* A rank-0 constant of dtype l->dt; a [1] i64 constant. */
int lw_scalar(Lowering *l, const char *hint, double x);
int lw_i64(Lowering *l, const char *hint, int64_t v);
/* Make the new node that produced v write the replaced node's output
 * `slot` instead (and the new nodes that read v read that), so the node's
 * users are unchanged; v is left unused. */
bool lw_result(Lowering *l, int v, int slot);
/* x reshaped to dims[0..rank) (x itself when it has them already). */
int lw_reshape(Lowering *l, int x, const int64_t *dims, int rank);

#endif
