/* passes.h — the pass pipeline: one flat list (pipeline.c), each pass a
 * function over the graph. A pass reports bad input through Diag and
 * returns false; it never frees (the arena owns everything). */
#ifndef KILN_PASSES_H
#define KILN_PASSES_H

#include "../ir/ir.h"

/* A --shape binding: a graph input's full shape, or one symbolic dim. */
typedef struct ShapeBinding {
  const char *name;        /* input name or dim_param name */
  int rank;
  int64_t dims[MAX_RANK];
  bool used;
} ShapeBinding;

/* --quantize: quantization by the quantize pass (quantize.c): int8
 * weight-only, or w8a8 (int8 weights, and the activations of each Linear
 * quantized to u8 per row at run time: int8 x int8 products). */
typedef enum QuantMode { QUANT_NONE, QUANT_INT8, QUANT_W8A8 } QuantMode;

/* One quantized weight, for the error reports of compile -v, info and check. */
typedef struct QuantLayer {
  const char *node;        /* the first node that reads it (its origin) */
  const char *op;          /* that node's op: Linear, MatMul, Gather */
  const char *weight;      /* the f32 constant's name */
  const char *out;         /* the node's output value (same name in the f32 graph) */
  Type type;               /* the f32 weight's */
  bool per_row;            /* a scale per row (Gather tables), else per column */
  double rms;              /* RMS of the f32 weight */
  double err_max, err_rms; /* |W - Wq·scale|: max and RMS */
} QuantLayer;

typedef struct QuantReport {
  QuantLayer *layers;
  int n, cap;
  int kept;                /* f32 weights left as they were (non-finite values) */
  QuantMode mode;          /* the scheme (set by the pass) */
  int act_u8;              /* w8a8: Linears whose activations are quantized to u8 */
  int act_f32;             /* w8a8: Linears that keep f32 activations (K too large) */
  int64_t f32_bytes, q_bytes; /* the quantized weights before and after (int8 + scales) */
} QuantReport;

typedef struct PassOptions {
  ShapeBinding *shapes;
  int nshapes;
  size_t fold_limit;       /* bytes: larger results are not folded */
  bool verbose;
  QuantMode quantize;      /* --quantize=int8|w8a8: the quantize pass runs */
  QuantReport *quant_report; /* when not NULL, the quantize pass fills it (arena memory) */
  int64_t kv_cache;        /* --kv-cache=N: the kv_cache pass runs, a cache of N positions (0: it does not) */
  int64_t kv_prefill;      /* --prefill=P: tokens one prefill call takes (0: min(N, 64)) */
  DType kv_dtype;          /* --kv-dtype: the caches' dtype (DT_UNDEF: f32) */
  bool kquant_act_q8;      /* --kquant-act=q8: fuse_blocks marks K-quant BlockLinears act="q8" */
  bool bf16;               /* --precision=bf16: conv_gemm keeps 3x3 convs off Winograd (its transforms
                            * multiply the products' bf16 rounding: 8x the direct GEMM's error) */
  bool no_winograd;        /* --winograd=off: conv_gemm keeps every conv on the direct GEMM */
  const char *rows_axis;   /* --rows-axis=INPUT:AXIS[,INPUT:AXIS...]: the token axis of each listed
                            * input; bound_rows gives the encoder a run-time token count (NULL: none) */
} PassOptions;

typedef bool (*PassFn)(Graph *g, const PassOptions *o, Diag *d);

typedef struct Pass {
  const char *name;
  PassFn fn;
  const char *what;        /* one line for `kiln passes` */
} Pass;

extern const Pass pass_list[];
extern const int pass_count;
const Pass *pass_find(const char *name);
/* A pass an option asks for (kv_cache: --kv-cache) runs only when that
 * option is given, and is otherwise skipped (not run, counted or dumped);
 * the others always run. pass_option: that option ("--kv-cache=N"), or
 * NULL for a pass that always runs. */
bool pass_runs(const Pass *p, const PassOptions *o);
const char *pass_option(const Pass *p);

/* --kv-cache=N: an ONNX decoder with a past to a generative model
 * (passes/kv_cache.c over onnx_decoder.c); asked when o->kv_cache > 0. */
bool pass_kv_cache(Graph *g, const PassOptions *o, Diag *d);
bool pass_kv_cache_asked(const PassOptions *o);
bool pass_bind(Graph *g, const PassOptions *o, Diag *d);
bool pass_infer(Graph *g, const PassOptions *o, Diag *d);
bool pass_fold(Graph *g, const PassOptions *o, Diag *d);
bool pass_simplify(Graph *g, const PassOptions *o, Diag *d);
/* The fusions, one pass each (passes/fuse_*.c, the rules in fuse_match.h) */
bool pass_fuse_blocks(Graph *g, const PassOptions *o, Diag *d);
bool pass_fuse_normalize(Graph *g, const PassOptions *o, Diag *d);
/* BatchNormalization and per-channel Mul/Add after a constant-weight Conv
 * into its W and B (fold_bn.c). */
bool pass_fold_bn(Graph *g, const PassOptions *o, Diag *d);
/* f32 Conv (group 1, constant W) to Im2Row -> Linear -> Transpose on the
 * packed GEMM (conv_gemm.c). */
bool pass_conv_gemm(Graph *g, const PassOptions *o, Diag *d);
bool pass_fuse_attention(Graph *g, const PassOptions *o, Diag *d);
bool pass_fuse_gelu(Graph *g, const PassOptions *o, Diag *d);
bool pass_fuse_layernorm(Graph *g, const PassOptions *o, Diag *d);
bool pass_fuse_rmsnorm(Graph *g, const PassOptions *o, Diag *d);
bool pass_fuse_dynquant(Graph *g, const PassOptions *o, Diag *d);
bool pass_fuse_linear(Graph *g, const PassOptions *o, Diag *d);
bool pass_fuse_qdq(Graph *g, const PassOptions *o, Diag *d);
bool pass_fuse_addnorm(Graph *g, const PassOptions *o, Diag *d);
bool pass_fuse_residual(Graph *g, const PassOptions *o, Diag *d);
bool pass_fuse_transpose(Graph *g, const PassOptions *o, Diag *d);
bool pass_fuse_chain(Graph *g, const PassOptions *o, Diag *d);
bool pass_quantize(Graph *g, const PassOptions *o, Diag *d);
bool pass_bound_rows(Graph *g, const PassOptions *o, Diag *d);
/* The report as text: one line per weight, then the totals. */
void quant_report_print(Buf *b, const QuantReport *r);
bool pass_dce(Graph *g, const PassOptions *o, Diag *d);
bool pass_equal_layers(Graph *g, const PassOptions *o, Diag *d);
bool pass_plan(Graph *g, const PassOptions *o, Diag *d);

/* kiln export's last step (export/decompose.c): replace every kiln op
 * (since = 0 in ops.def) and every op newer than g->opset by standard ONNX
 * ops valid at g->opset, with each op's lowering (ops.def's lower column),
 * keeping output value ids and node order. */
bool decompose_kiln_ops(Graph *g, Diag *d);

/* Structural checks (SSA, order, arity, types known after infer). */
bool graph_verify(Graph *g, bool typed, Diag *d);

#endif
