/* info.h — what `kiln info` and `kiln dot` show about a model. */
#ifndef KILN_INFO_H
#define KILN_INFO_H

#include "../ir/ir.h"
#include "../passes/passes.h"

/* Floating-point operations of one node (multiply-add = 2). */
int64_t node_flops(const Graph *g, const Node *n);

typedef struct InfoOptions {
  bool json;
  bool verbose;           /* -v: info_gguf lists every tensor */
  const char *gguf_part;  /* info_gguf's text, printed first (NULL: none) */
  const char *memory_svg; /* write the workspace picture here */
  const QuantReport *quant; /* --quantize: the quantize pass's report, or NULL */
} InfoOptions;

/* kiln info FILE.gguf, first part: the file's architecture (and whether
 * kiln has a description of it), its ARCH.* hyperparameters, tensors by
 * quantization type (-v: each), tokenizer kind, vocabulary size, BOS/EOS
 * and whether it has a chat template, appended to out. With json, it
 * opens the report's object ("{\n  \"gguf\": {...},\n") for info_report
 * (InfoOptions.gguf_part) to go on or, when kiln has no description (false
 * in *described: kiln cannot compile the file), is the whole object. */
bool info_gguf(Buf *out, Arena *a, const char *path, const InfoOptions *o, bool *described, Diag *d);
/* Print the report for `before` (as imported) and `g` (planned). */
bool info_report(const Graph *before, Graph *g, const InfoOptions *o, Diag *d);
/* The workspace picture: one bar per buffer, x = step, y = offset. */
void info_memory_svg(Buf *b, const Graph *g);
/* Graphviz for g: ops with key attributes and shapes, constants folded
 * into their users' labels, fused nodes marked. */
void dot_print(Buf *b, const Graph *g);

#endif
