/* rearrange.c — PLACEHOLDER: not implemented yet (being written). */
#include "../emit.h"
#include "../ops.h"

bool onehot_infer(Graph *g, Node *n, Diag *d) { return diag_node(d, g, n, "not implemented yet"); }
bool onehot_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) { return diag_error(d, "not implemented yet"); }
bool onehot_emit(Emit *e, const Node *n) { return false; }
bool eyelike_infer(Graph *g, Node *n, Diag *d) { return diag_node(d, g, n, "not implemented yet"); }
bool eyelike_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) { return diag_error(d, "not implemented yet"); }
bool eyelike_emit(Emit *e, const Node *n) { return false; }
bool depth_space_infer(Graph *g, Node *n, Diag *d) { return diag_node(d, g, n, "not implemented yet"); }
bool depth_space_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) { return diag_error(d, "not implemented yet"); }
bool depth_space_emit(Emit *e, const Node *n) { return false; }
