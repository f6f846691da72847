/* generate.c — PLACEHOLDER: not implemented yet (being written). */
#include "../emit.h"
#include "../ops.h"

bool constant_infer(Graph *g, Node *n, Diag *d) { return diag_node(d, g, n, "not implemented yet"); }
bool constant_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) { return diag_error(d, "not implemented yet"); }
bool constant_emit(Emit *e, const Node *n) { return false; }
bool constant_of_shape_infer(Graph *g, Node *n, Diag *d) { return diag_node(d, g, n, "not implemented yet"); }
bool constant_of_shape_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) { return diag_error(d, "not implemented yet"); }
bool constant_of_shape_emit(Emit *e, const Node *n) { return false; }
bool range_infer(Graph *g, Node *n, Diag *d) { return diag_node(d, g, n, "not implemented yet"); }
bool range_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) { return diag_error(d, "not implemented yet"); }
bool range_emit(Emit *e, const Node *n) { return false; }
bool shape_infer(Graph *g, Node *n, Diag *d) { return diag_node(d, g, n, "not implemented yet"); }
bool shape_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) { return diag_error(d, "not implemented yet"); }
bool shape_emit(Emit *e, const Node *n) { return false; }
