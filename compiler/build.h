/* build.h — building IR in code: what the Lua frontend, the decompositions
 * kiln export needs, and tests use to add values, constants and nodes to a
 * Graph. Every node added through ir_op is type-inferred on the spot, so a
 * bad call fails where it is made, with the op's own message. */
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

#endif
