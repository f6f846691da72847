/* naming.h — names for values the model did not name. A value kiln makes
 * (a Lua op's output, a folded constant) or one an exporter named after its
 * op ("onnx::MatMul_245", "/enc/Transpose_output_0") takes a name derived
 * from the model's own names instead: the parameter it was computed from,
 * the layer scope of a parameter it reads, or the input it transforms
 * (DESIGN.md, "Names"). The rule lives here once; the Lua frontend, constant
 * folding and the ONNX importer call it. */
#ifndef KILN_NAMING_H
#define KILN_NAMING_H

#include "ir.h"

/* True when name says only which op made the value: its last part (after
 * the last '/' and a leading "onnx::") is an op's name followed by nothing
 * but "_<digits>" groups and an exporter's "_output_<digits>":
 * "Transpose_22", "MatMul_3090_2", "onnx::MatMul_245",
 * "/enc/Transpose_output_0". */
bool name_is_op_made(const char *name);

/* The short tag a derived name ends in for op: "t" (Transpose), "norm"
 * (the normalizations), else the op's name in lower case ("gelu"). */
const char *name_op_tag(int op);

/* A folded constant (node `node`, its outputs now constant): each output
 * with an op-made name is named after the node's first input when that is a
 * constant with a model name — "<input>_<tag>" ("enc.q.weight" through a
 * Transpose: "enc.q.weight_t"), made unique. Other outputs keep theirs. */
void name_folded_outputs(Graph *g, int node);

/* Each output of node `node` with an op-made name is named (unique in g):
 *   1. after the layer of a parameter it reads — the first constant input
 *      of rank >= 1 with a model name, less its last ".part"
 *      ("blk.0.attn_norm.weight" -> "blk.0.attn_norm"), prefix in front —
 *      then "_<tag>" ("_out" when the layer's name already ends in the tag:
 *      "blk.0.attn_norm_out", "encoder.layer.0.output.LayerNorm_out");
 *   2. else after its first computed input with a model name:
 *      "<input>_<tag>" ("blk.0.ffn_gate_silu"), where an input named by
 *      this rule counts as the name it grew from (Value.name_base), so a
 *      chain of ops adds one tag, not one per op ("blk.0.ffn_gate_mul");
 *   3. else "<prefix><tag>".
 * Outputs of a folded node are named by name_folded_outputs' rule first. */
void name_node_outputs(Graph *g, int node, const char *prefix);

/* After an ONNX import: values whose op-made names have no scope (an
 * exporter's top-level "/Add_2_output_0", torch.onnx's "onnx::MatMul_245"
 * for a transposed weight) are named from the model. Computed values by
 * name_node_outputs' rules 1-3 ("/Equal_1" on tgt_ids: "tgt_ids_equal");
 * then constants (initializers, Constant nodes' outputs) after their first
 * reader: "<reader's scope>/weight" ("/bert/layer.0/attention/self/query/
 * MatMul" reading it: "/bert/layer.0/attention/self/query/weight"), or
 * "<reader's output>_weight" when the reader has no scope; "const" for
 * rank < 2. Names with a scope ("/enc/layers.0/Relu_output_0") are the
 * names a model viewer shows and are kept; graph inputs and outputs too. */
void name_onnx_values(Graph *g);

#endif
