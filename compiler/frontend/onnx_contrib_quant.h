/* onnx_contrib_quant.h — ONNX Runtime's com.microsoft quantized products,
 * read by the ONNX importer (compiler/frontend/onnx_import.c) as the standard ops
 * they stand for (see onnx_contrib_quant.c). */
#ifndef KILN_ONNX_CONTRIB_QUANT_H
#define KILN_ONNX_CONTRIB_QUANT_H

#include "../ir/ir.h"
#include "onnx.pb-c.h"

struct Importer;
typedef int (*ContribValueFn)(struct Importer *im, const char *name);

/* op_type in domain dom is one this file reads: com.microsoft
 * MatMulIntegerToFloat, DynamicQuantizeMatMul or MatMulNBits. */
bool contrib_quant_op(const char *dom, const char *op_type);
/* Add node np (named nname) to g as its standard ops; value_for(im, name)
 * gives the value of a name. False + diag on bad input. */
bool contrib_quant_import(Graph *g, Diag *d, const Onnx__NodeProto *np, const char *nname,
                          ContribValueFn value_for, struct Importer *im);

#endif
