/* scatter.c — PLACEHOLDER: not implemented yet (being written). */
#include "../emit.h"
#include "../ops.h"

bool gather_nd_infer(Graph *g, Node *n, Diag *d) { return diag_node(d, g, n, "not implemented yet"); }
bool gather_nd_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) { return diag_error(d, "not implemented yet"); }
bool gather_nd_emit(Emit *e, const Node *n) { return false; }
bool scatter_infer(Graph *g, Node *n, Diag *d) { return diag_node(d, g, n, "not implemented yet"); }
bool scatter_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) { return diag_error(d, "not implemented yet"); }
bool scatter_emit(Emit *e, const Node *n) { return false; }
