/* onnx_attention.h — the attention ops ONNX files carry (ONNX's own
 * Attention of opsets 23 and 24; ONNX Runtime's com.microsoft Attention,
 * MultiHeadAttention and GroupQueryAttention), imported as the chains of
 * standard ops that define them; the fuse_attention pass makes kiln's
 * Attention of each (compiler/frontend/onnx_attention.c says why). */
#ifndef KILN_ONNX_ATTENTION_H
#define KILN_ONNX_ATTENTION_H

#include "../ir/ir.h"

struct Onnx__NodeProto;

/* Is (domain, op_type) one of the ops this file imports? */
bool onnx_attention_handles(const char *domain, const char *op_type);

/* Add the chain of node np (named name) to g; false + d (naming the node)
 * on a node the op's specification does not allow or kiln cannot read. */
bool onnx_attention_import(Graph *g, const struct Onnx__NodeProto *np, const char *name, Diag *d);

#endif
