/* onnx_contrib_norm.h — ONNX Runtime's com.microsoft normalisation and
 * activation ops (what its transformer optimizer writes: SkipLayerNorm,
 * EmbedLayerNorm, BiasGelu, FastGelu, ...), read by the ONNX importer as
 * the kiln ops they stand for (compiler/frontend/onnx_contrib_norm.c). */
#ifndef KILN_ONNX_CONTRIB_NORM_H
#define KILN_ONNX_CONTRIB_NORM_H

#include "../ir/ir.h"
#include "onnx.pb-c.h"

/* Is op_type of domain dom one of the ops this file reads, in a model of
 * default-domain opset `opset`? (LayerNormalization below opset 17 is
 * ONNX Runtime's.) */
bool contrib_norm_known(const char *dom, const char *op_type, int opset);

/* Add to g the nodes that compute node np (named nname), reading and
 * writing the values its inputs and outputs name; their types are inferred
 * later with the rest of the graph. False + diag on a malformed node. */
bool contrib_norm_import(Graph *g, const Onnx__NodeProto *np, const char *nname, Diag *d);

#endif
