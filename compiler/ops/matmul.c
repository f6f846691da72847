/* matmul.c — PLACEHOLDER: not implemented yet (being written). */
#include "../emit.h"
#include "../ops.h"

bool matmul_infer(Graph *g, Node *n, Diag *d) { return diag_node(d, g, n, "not implemented yet"); }
bool matmul_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) { return diag_error(d, "not implemented yet"); }
bool matmul_emit(Emit *e, const Node *n) { return false; }
bool gemm_infer(Graph *g, Node *n, Diag *d) { return diag_node(d, g, n, "not implemented yet"); }
bool gemm_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) { return diag_error(d, "not implemented yet"); }
bool gemm_emit(Emit *e, const Node *n) { return false; }
bool einsum_infer(Graph *g, Node *n, Diag *d) { return diag_node(d, g, n, "not implemented yet"); }
bool einsum_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) { return diag_error(d, "not implemented yet"); }
bool einsum_emit(Emit *e, const Node *n) { return false; }
