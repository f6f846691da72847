/* ops.h — the op table: for each op in ops.def, its ONNX name, arity, the
 * inputs that must be compile-time constants, and its three functions:
 *
 *   _infer  set output dtypes and shapes from inputs and attributes; reject
 *           bad input with diag_node (never assert on model content)
 *   _eval   plain reference implementation on Tensors whose output types
 *           are already inferred and whose output data is allocated (zeroed);
 *           used by constant folding, `kiln run` and tests as the oracle
 *   _emit   write the node's C kernel (see emit.h)
 */
#ifndef KILN_OPS_H
#define KILN_OPS_H

#include "ir.h"

typedef enum OpId {
#define OP(id, name, fn, a, b, c, d, k, since) OP_##id,
#include "ops.def"
#undef OP
  OP_COUNT_
} OpId;

struct Emit;

typedef bool (*InferFn)(Graph *g, Node *n, Diag *d);
typedef bool (*EvalFn)(const Node *n, const Tensor *in, Tensor *out, Diag *d);
typedef bool (*EmitFn)(struct Emit *e, const Node *n);

typedef struct OpInfo {
  const char *name;
  InferFn infer;
  EvalFn eval;
  EmitFn emit;
  int min_in, max_in, min_out, max_out;
  unsigned const_in;
  int since;          /* first opset defining the op */
} OpInfo;

extern const OpInfo op_table[OP_COUNT_];

int op_lookup(const char *onnx_name); /* -1 if kiln does not support it */

/* f16 and bf16 tensors are computed in f32 by the elementwise kernels
 * (emit_elementwise reads them through kiln_f16_to_f32 and friends) and
 * copied as bit patterns by the data-movement ops; every other op refuses
 * them. False, with a message naming the node, when n reads or writes one
 * and its op is not among those. Called after _infer and before _emit. */
bool op_check_half(const Graph *g, const Node *n, Diag *d);

#define OP(id, name, fn, a, b, c, d, k, since)                                    \
  bool fn##_infer(Graph *g, Node *n, Diag *d_);                            \
  bool fn##_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d_); \
  bool fn##_emit(struct Emit *e, const Node *n);
#include "ops.def"
#undef OP

#endif
