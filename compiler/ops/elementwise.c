/* elementwise.c — PLACEHOLDER: not implemented yet (being written). */
#include "../emit.h"
#include "../ops.h"

bool variadic_infer(Graph *g, Node *n, Diag *d) { return diag_node(d, g, n, "not implemented yet"); }
bool variadic_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) { return diag_error(d, "not implemented yet"); }
bool variadic_emit(Emit *e, const Node *n) { return false; }
bool where_infer(Graph *g, Node *n, Diag *d) { return diag_node(d, g, n, "not implemented yet"); }
bool where_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) { return diag_error(d, "not implemented yet"); }
bool where_emit(Emit *e, const Node *n) { return false; }
bool clip_infer(Graph *g, Node *n, Diag *d) { return diag_node(d, g, n, "not implemented yet"); }
bool clip_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) { return diag_error(d, "not implemented yet"); }
bool clip_emit(Emit *e, const Node *n) { return false; }
bool cast_infer(Graph *g, Node *n, Diag *d) { return diag_node(d, g, n, "not implemented yet"); }
bool cast_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) { return diag_error(d, "not implemented yet"); }
bool cast_emit(Emit *e, const Node *n) { return false; }
bool identity_infer(Graph *g, Node *n, Diag *d) { return diag_node(d, g, n, "not implemented yet"); }
bool identity_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) { return diag_error(d, "not implemented yet"); }
bool identity_emit(Emit *e, const Node *n) { return false; }
bool dropout_infer(Graph *g, Node *n, Diag *d) { return diag_node(d, g, n, "not implemented yet"); }
bool dropout_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) { return diag_error(d, "not implemented yet"); }
bool dropout_emit(Emit *e, const Node *n) { return false; }
