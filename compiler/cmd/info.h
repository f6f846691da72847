/* info.h — what `kiln info` and `kiln dot` show about a model. */
#ifndef KILN_INFO_H
#define KILN_INFO_H

#include "../ir/ir.h"
#include "../passes/passes.h"

/* Floating-point operations of one node (multiply-add = 2). */
int64_t node_flops(const Graph *g, const Node *n);

typedef struct InfoOptions {
  bool json;
  const char *memory_svg; /* write the workspace picture here */
  const QuantReport *quant; /* --quantize: the quantize pass's report, or NULL */
} InfoOptions;

/* Print the report for `before` (as imported) and `g` (planned). */
bool info_report(const Graph *before, Graph *g, const InfoOptions *o, Diag *d);
/* The workspace picture: one bar per buffer, x = step, y = offset. */
void info_memory_svg(Buf *b, const Graph *g);
/* Graphviz for g: ops with key attributes and shapes, constants folded
 * into their users' labels, fused nodes marked. */
void dot_print(Buf *b, const Graph *g);

#endif
