/* ops.h — the op table: for each op in ops.def, its ONNX name, arity, the
 * inputs that must be compile-time constants, the facts passes and reports
 * ask of it (flags, FLOP count), and its three functions:
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
#define OP(id, name, fn, a, b, c, d, k, since, upto, flags, fl, lo) OP_##id,
#include "ops.def"
#undef OP
  OP_COUNT_
} OpId;

struct Emit;

typedef bool (*InferFn)(Graph *g, Node *n, Diag *d);
typedef bool (*EvalFn)(const Node *n, const Tensor *in, Tensor *out, Diag *d);
typedef bool (*EmitFn)(struct Emit *e, const Node *n);
typedef int64_t (*FlopsFn)(const Graph *g, const Node *n);
/* Replace node `node` (still live; the caller marks it dead) by standard
 * ops appended with build.h's lw_*, the last writing its outputs. */
typedef bool (*LowerFn)(Graph *g, int node, Diag *d);

/* Op flags: facts of an op's kernels (its _emit and _eval alike).
 *   OPF_INPLACE       elementwise: each element of every input is read
 *                     before the same element of the output is written, so
 *                     the output may take over any input's storage
 *   OPF_INPLACE_ROW   row-wise: a whole row of input 0 is read before that
 *                     row of output 0 is written; output 0 may take over
 *                     input 0 (and no other output or input)
 *   OPF_INPLACE_PAIR  as ROW, for inputs 0 and 1 and every output
 *                     (AddLayerNorm's residual pair and its two outputs)
 *   OPF_VIEW          output 0 holds input 0's bytes in the same order
 *                     (Reshape and friends): simplify makes it an alias
 *   OPF_UPDATE        output 0 is input 0, a state, changed where it lives
 *                     (a KV cache's row write): _infer makes the output an
 *                     alias of the state, and the generated code writes
 *                     into the caller's state struct, never a copy
 *   OPF_HALF          computes f16/bf16 (in f32, or as bit patterns); ops
 *                     without it refuse them (op_check_half)
 *   OPF_NOFOLD        never evaluated at compile time, even on constant
 *                     inputs: its output is much larger than its inputs
 *                     (DequantizeBlocks: 4-8x the blocks), and passes
 *                     fuse it into its readers instead (fold.c)
 *   OPF_NARROW        reads and writes the narrow types (float8, float4,
 *                     e8m0, 4- and 2-bit integers; dt_is_narrow): Cast,
 *                     the linear quantization ops and the ops that move
 *                     bytes without reading elements; others refuse them
 *                     (op_check_half)
 *   OPF_ROWS_EXACT    with its run-time token count input (--rows-axis,
 *                     compiler/passes/bound_rows.c), the kernel reads and
 *                     writes only the first `rows` rows of its token
 *                     operands: NAME_run_batch's packs call it in place on
 *                     one sentence's rows (compiler/emit/emit_pack.c)
 * Ops that accumulate into their output input by input (Max, Sum, ...) or
 * write before they read (GEMMs and their epilogues) have no INPLACE flag. */
enum {
  OPF_INPLACE = 1 << 0,
  OPF_INPLACE_ROW = 1 << 1,
  OPF_INPLACE_PAIR = 1 << 2,
  OPF_VIEW = 1 << 3,
  OPF_HALF = 1 << 4,
  OPF_UPDATE = 1 << 5,
  OPF_NOFOLD = 1 << 6,
  OPF_NARROW = 1 << 7,
  OPF_ROWS_EXACT = 1 << 8,
};

typedef struct OpInfo {
  const char *name;
  InferFn infer;
  EvalFn eval;
  EmitFn emit;
  int min_in, max_in, min_out, max_out;
  unsigned const_in;
  int since;          /* first opset defining the op */
  int upto;           /* newest ONNX version of the op whose semantics kiln implements */
  unsigned flags;     /* OPF_* */
  FlopsFn flops;      /* floating-point (or integer) operations of one run of n */
  LowerFn lower;      /* kiln export's lowering to standard ops, or NULL */
} OpInfo;

extern const OpInfo op_table[OP_COUNT_];

int op_lookup(const char *onnx_name); /* -1 if kiln does not support it */

/* The version of default-domain ONNX op `onnx_name` at `opset`: the newest
 * opset <= `opset` at which its definition changed (compiler/
 * onnx_versions.def, generated from the onnx release named there); 0 when
 * the op does not exist yet at that opset, -1 when ONNX has no such op. */
int onnx_op_version(const char *onnx_name, int opset);
/* The newest opset that table knows (25 for onnx 1.20). */
int onnx_opset_newest(void);
/* The version ONNX op `op` has at `opset` when kiln does not implement it
 * (newer than its row's upto), else 0; 0 for kiln ops. */
int op_version_beyond(int op, int opset);

/* f16 and bf16 tensors are computed in f32 by the elementwise kernels
 * (emit_elementwise reads them through kiln_f16_to_f32 and friends) and
 * copied as bit patterns by the data-movement ops: the ops flagged
 * OPF_HALF. False, with a message naming the node, when n reads or writes
 * one and its op is not flagged; the same for the narrow types and
 * OPF_NARROW. Called after _infer and before _emit. */
bool op_check_half(const Graph *g, const Node *n, Diag *d);
/* Is state vid written in place by a node (an OPF_UPDATE op, CacheWrite)?
 * Such a state needs no next value: the node changes it where it lives. */
bool op_state_in_place(const Graph *g, int vid);

/* Evaluate n with its _eval if every present input is constant and the
 * outputs fit in `limit` bytes; sets the outputs' data. *folded says
 * whether it did (fold_node.c: passes/fold.c, infer.c and build.c). */
bool fold_node(Graph *g, Node *n, size_t limit, bool *folded, Diag *d);

/* Multiply-adds count 2; a family's count says what else it counts. */
#define OP(id, name, fn, a, b, c, d, k, since, upto, flags, fl, lo)        \
  bool fn##_infer(Graph *g, Node *n, Diag *d_);                            \
  bool fn##_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d_); \
  bool fn##_emit(struct Emit *e, const Node *n);                           \
  int64_t fl##_flops(const Graph *g, const Node *n);                       \
  bool lo##_lower(Graph *g, int node, Diag *d_);
#include "ops.def"
#undef OP

#endif
