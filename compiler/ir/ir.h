/* ir.h — kiln's one IR, shared by both frontends, every pass, the
 * interpreter and the emitter.
 *
 * A Graph holds SSA tensor Values (dtype + shape + optional constant data)
 * and Nodes (an op, typed attributes, value ids). The node array is kept in
 * topological order. Everything lives in the graph's arena. Shapes are fully
 * static after the bind and infer passes; before that a graph input may have
 * symbolic dims (dims[i] == -1, sym[i] names it) and other values have
 * rank -1 (unknown). */
#ifndef KILN_IR_H
#define KILN_IR_H

#include "../base/base.h"

#define MAX_RANK 8
/* The largest tensor kiln handles (elements); every size read from a file
 * or flag is checked against it before any product can overflow. */
#define MAX_NUMEL ((int64_t)1 << 34)

/* Element types. Values equal ONNX's TensorProto.DataType codes, so import
 * and export need no table. */
typedef enum DType {
  DT_UNDEF = 0,
  DT_F32 = 1, DT_U8 = 2, DT_I8 = 3, DT_U16 = 4, DT_I16 = 5, DT_I32 = 6,
  DT_I64 = 7, DT_STRING = 8, DT_BOOL = 9, DT_F16 = 10, DT_F64 = 11,
  DT_U32 = 12, DT_U64 = 13, DT_BF16 = 16,
  /* the narrow types (ONNX 1.14-1.20): float8 codes, 4- and 2-bit integers
   * and float4, and the e8m0 scale of the MX formats (see DESIGN.md,
   * "Narrow element types") */
  DT_F8E4M3FN = 17, DT_F8E4M3FNUZ = 18, DT_F8E5M2 = 19, DT_F8E5M2FNUZ = 20,
  DT_U4 = 21, DT_I4 = 22, DT_F4E2M1 = 23, DT_F8E8M0 = 24, DT_U2 = 25, DT_I2 = 26,
  DT_MAX_ = 27
} DType;

bool dt_supported(DType dt);      /* numeric or bool, and kiln computes with it */
const char *dt_name(DType dt);    /* "f32", "i64", "bool", ... */
DType dt_from_name(const char *s);
const char *dt_ctype(DType dt);   /* "float", "int64_t", "bool", ... */
size_t dt_size(DType dt);
bool dt_is_float(DType dt);       /* f32, f64, and f16/bf16 (stored as uint16_t bit patterns) */
bool dt_is_half(DType dt);        /* f16 or bf16: computed in f32 by the generated code */
/* The narrow types: float8 (4 kinds and e8m0), float4 and the 4- and 2-bit
 * integers. Only ops flagged OPF_NARROW read or write them. */
bool dt_is_narrow(DType dt);
/* float8, float4 and e8m0: codes computed in f32, like f16 */
bool dt_is_minifloat(DType dt);
/* Packed: 4-bit and 2-bit types, several elements a byte, element 0 in the
 * lowest bits (ONNX's order). dt_bits gives the bits an element takes; a
 * packed tensor takes ceil(numel * bits / 8) bytes (type_bytes), and
 * dt_size is 1, the byte its C array is made of. */
bool dt_is_packed(DType dt);
int dt_bits(DType dt);
/* A float8/float4/e8m0 code as a double (exact), and a double rounded to
 * one, ties to even, with ONNX Cast's rules for NaN, infinities and values
 * beyond the largest code (`saturate`: the largest code; otherwise NaN, or
 * inf for f8e5m2). e8m0 rounds as round_mode says (MF_UP, the default, away
 * from zero; MF_DOWN toward it; MF_NEAREST, ties up). */
enum { MF_UP = 0, MF_DOWN = 1, MF_NEAREST = 2 };
double minifloat_to_double(DType dt, unsigned code);
unsigned minifloat_from_double(DType dt, double v, bool saturate, int round_mode);
/* The code of element i of packed data p, and storing one (the low bits of v). */
unsigned packed_get(DType dt, const void *p, int64_t i);
void packed_set(DType dt, void *p, int64_t i, unsigned v);
/* An f16/bf16 bit pattern as a double (exact), and a double rounded to
 * nearest, ties to even, as one (overflow to inf, NaN stays NaN). */
double half_to_double(DType dt, uint16_t h);
uint16_t half_from_double(DType dt, double v);
bool dt_is_signed_int(DType dt);
bool dt_is_unsigned_int(DType dt); /* bool counts as unsigned */
bool dt_is_int(DType dt);

/* Dtype-generic element access, used by _eval code that need not be fast:
 * floats go through double, signed ints through int64, unsigned through
 * uint64. Store converts with C's rules (float->int truncates). */
double el_get_f(DType dt, const void *p, int64_t i);
int64_t el_get_i(DType dt, const void *p, int64_t i);
uint64_t el_get_u(DType dt, const void *p, int64_t i);
void el_set_f(DType dt, void *p, int64_t i, double v);
void el_set_i(DType dt, void *p, int64_t i, int64_t v);
void el_set_u(DType dt, void *p, int64_t i, uint64_t v);
/* Copy element i of (sdt, src) to element j of (ddt, dst) with ONNX Cast
 * semantics. */
void el_convert(DType ddt, void *dst, int64_t j, DType sdt, const void *src, int64_t i);

typedef struct Type {
  DType dt;
  int rank;                 /* -1: not inferred yet */
  int64_t dims[MAX_RANK];   /* -1: symbolic (graph inputs before bind) */
} Type;

int64_t type_numel(const Type *t);   /* product of dims (1 for rank 0) */
/* False when a dim is negative or the element count exceeds MAX_NUMEL. */
bool type_size_ok(const Type *t);
/* The same, but with `unknown_ok` a dim of -1 (unknown) is allowed and
 * left out of the count. */
bool type_dims_ok(const Type *t, bool unknown_ok);
size_t type_bytes(const Type *t);
bool type_equal(const Type *a, const Type *b);
/* "f32[1,16,64]" into buf (also handles unknown rank as "f32[?]"). */
const char *type_str(const Type *t, char *buf, size_t n);
/* Row-major strides of t into st (elements). */
void type_strides(const Type *t, int64_t st[MAX_RANK]);

/* A tensor with data: what _eval reads and writes, and what constants are. */
typedef struct Tensor {
  Type type;
  void *data;       /* NULL for an absent optional input */
} Tensor;

typedef struct Value {
  const char *name;          /* unique in the graph (ONNX name) */
  const char *name_base;     /* the model name a derived name grew from (naming.h), or NULL */
  Type type;
  void *data;                /* constant contents, or NULL */
  const char *sym[MAX_RANK]; /* symbolic dim names (graph inputs) */
  int producer;              /* node index, -1 for inputs and constants */
  int nuses;                 /* filled by graph_count_uses */
  bool is_input, is_output;
  /* A state (Transformer-XL memory, a decoder's cache): a graph input whose
   * value is carried from one call to the next. state_next is the index in
   * g->outputs of the value it takes for the next call; state_init holds
   * its value at the first call (type_bytes(&type) bytes). */
  bool is_state;
  int state_next;
  void *state_init;
  int alias_of;              /* value whose storage this one shares, or -1 */
  int64_t ws_offset;         /* byte offset in the workspace (plan), or -1 */
  int live_first, live_last; /* steps (node indices) it is live (plan) */
} Value;
/* "f32[batch,16]": a value's type with its symbolic dims by name (before
 * bind; type_str prints them as ?). */
const char *value_type_str(const Value *v, char *buf, size_t n);

typedef enum AttrKind {
  ATTR_INT, ATTR_FLOAT, ATTR_STRING, ATTR_INTS, ATTR_FLOATS, ATTR_STRINGS,
  ATTR_TENSOR
} AttrKind;

typedef struct Attr {
  const char *name;
  AttrKind kind;
  int64_t i;
  double f;
  const char *s;
  int n;              /* length of ints / floats / strings */
  int64_t *ints;
  double *floats;
  const char **strings;
  Tensor *t;
} Attr;

typedef struct Node {
  int op;             /* OpId */
  const char *name;   /* ONNX node name, or one kiln made up ("Add_3") */
  const char *origin; /* source trace: "MatMul_12 + Add_13"; kept by passes */
  int opset;          /* version of the op's domain the model imports */
  int nin, nout;
  int *in;            /* value ids; -1 = absent optional input */
  int *out;
  int nattr;
  Attr *attrs;
  bool dead;          /* removed; compacted away by graph_compact */
} Node;

/* A generative model (Lua decoder{}, issue 10): the graph holds one
 * forward pass per entry point — a prompt chunk of `tokens` positions
 * (prefill) and one token (step) — over the same weights and the same
 * KV-cache states, and the emitter writes one function per entry. An
 * entry's inputs are its token ids [tokens], the position of its first
 * token (start, i64[1]: how many the cache held) and how many of its
 * tokens are real (count, i64[1]); its output is the logits of the last
 * real token. An encoder–decoder adds a third entry, encode (tokens 0):
 * its inputs are its own (the source), it has no output, and it stores
 * what the other two read (cross-attention keys and values) in states,
 * emptying the caches. Every node depends on the inputs of exactly one
 * entry. */
enum { DECODER_MAX_ENTRIES = 3 };
typedef struct DecoderEntry {
  const char *name;      /* "prefill", "step", "encode" */
  int64_t tokens;        /* token ids per call; 0 for encode */
  int tokens_vid, start_vid, count_vid; /* graph inputs (value ids); -1 in encode */
  int logits_out;        /* index in g->outputs; -1 in encode */
  int ninputs;           /* encode: its graph inputs (value ids) */
  int *inputs;
} DecoderEntry;

typedef struct Decoder {
  int64_t ctx;           /* the caches' capacity in positions */
  int nentries;          /* prefill and step, then encode when there is one */
  DecoderEntry entries[DECODER_MAX_ENTRIES];
} Decoder;
/* The entry named name ("encode"), or NULL. */
const DecoderEntry *decoder_find_entry(const Decoder *dec, const char *name);

/* A run-time token count for an encoder (--rows-axis, compiler/passes/
 * bound_rows.c): `vid` is an i64[1] value that no node makes and that is
 * not a graph input — the generated NAME_run_rows() passes the caller's
 * count, NAME_run() the compiled maximum. Row-wise ops read it as their
 * `rows` input; `axis` holds, per value, the position of its token axis
 * (-1: none), for the emitter to zero the outputs' rows past the count. */
typedef struct RowsBound {
  int vid;
  int64_t max;    /* the token axis's compiled length */
  int *axis;      /* [naxis]: per value, its token axis (-1: none) */
  bool *zero;     /* [naxis]: its rows past the count are 0 (a bounded product or norm wrote them) */
  int naxis;      /* values when the pass ran (later ones have no token axis) */
  /* NAME_run_batch's packs (docs/batch.md): the same walk with each
   * unlisted input that has one axis of the token length taken as a token
   * input too, 0 past the count (checked per sentence at run time).
   * pack_axis and pack_zero as axis and zero for that walk, or NULL when it
   * refused (batches then run sentence after sentence; pack_why says why) */
  int *pack_axis;
  bool *pack_zero;
  const char *pack_why;
} RowsBound;

typedef struct Graph {
  Arena *arena;
  const char *file;   /* where it came from, for diagnostics */
  const char *name;
  int opset;          /* default-domain opset of the model */
  Value *vals;  int nvals, capvals;
  Node *nodes;  int nnodes, capnodes;
  int *inputs;  int ninputs, capinputs;
  int *outputs; int noutputs, capoutputs;
  int64_t ws_size;    /* workspace bytes, set by the plan pass */
  bool planned;       /* plan ran and no pass has changed the graph since */
  Decoder *decoder;   /* a generative model's entry points, or NULL */
  RowsBound *rows;    /* an encoder's run-time token count (--rows-axis), or NULL */
} Graph;

Graph *graph_new(Arena *a, const char *file);
int graph_add_value(Graph *g, const char *name);  /* returns id */
int graph_find_value(const Graph *g, const char *name); /* -1 if none */
/* Add a node; in/out arrays are copied. Returns its index. */
int graph_add_node(Graph *g, int op, const char *name, const int *in, int nin,
                   const int *out, int nout);
void graph_add_input(Graph *g, int vid);
/* A new state input of type t that a CacheWrite changes where it lives (a
 * decoder's KV cache, or what its encode entry stores): no next value,
 * zeros at the first call. Returns its id. */
int graph_add_state_in_place(Graph *g, const char *name, Type t);
void graph_add_output(Graph *g, int vid);
Attr *node_add_attr(Graph *g, Node *n, const char *name, AttrKind kind);
void graph_count_uses(Graph *g);
/* Drop dead nodes, keeping order. */
void graph_compact(Graph *g);
/* After nodes were appended past n0 as replacements: node i < n0 with
 * first[i] >= 0 is replaced, in place, by nodes [first[i], end[i]); the
 * others stay. Producers are recomputed (graph_compact). */
void graph_splice(Graph *g, int n0, const int *first, const int *end);
/* Replace every use of value `from` (node inputs and graph outputs) by `to`. */
void graph_replace_uses(Graph *g, int from, int to);
/* Sort nodes topologically (stable for already-sorted input); false + diag
 * on a cycle or a value used before any producer. */
bool graph_toposort(Graph *g, Diag *d);
/* A decoder's node -> entry map (arena memory): per node, the index of the
 * entry whose inputs it reads, DECODER_ENTRY_ALL for a computed node that
 * reads only constants and states (every entry runs it), -1 for a node
 * whose outputs are all constants. NULL + d when a node reads two
 * entries' inputs. */
enum { DECODER_ENTRY_ALL = -2 };
int *graph_decoder_entries(Graph *g, Diag *d);
/* Entry e's graph inputs, named "<e->name>.tokens" (i64[e->tokens]),
 * ".start" and ".count" (i64[1]), added to g; sets e's value ids. */
void decoder_entry_inputs(Graph *g, DecoderEntry *e);

static inline Value *gval(const Graph *g, int vid) { return &g->vals[vid]; }
/* The state input that graph output k becomes at the next call, or -1. */
static inline int graph_state_of_output(const Graph *g, int k) {
  for (int i = 0; i < g->ninputs; i++)
    if (g->vals[g->inputs[i]].is_state && g->vals[g->inputs[i]].state_next == k)
      return g->inputs[i];
  return -1;
}
/* Input i of n, or NULL when absent (i >= nin or the slot is ""). */
Value *node_in(const Graph *g, const Node *n, int i);
Value *node_out(const Graph *g, const Node *n, int i);
bool node_has_in(const Node *n, int i);

/* Attributes: lookups return the default when absent. */
const Attr *attr_get(const Node *n, const char *name);
/* The kind ONNX gives the attribute `name` (*known false: not checked). */
AttrKind attr_expected_kind(const char *name, bool *known);
/* n's first attribute of another kind than its name says (*want: that
 * kind), or NULL: every frontend refuses such a node. */
const Attr *attr_mistyped(const Node *n, AttrKind *want);
/* "an int", "a float", "a list of ints", ... */
const char *attr_kind_name(AttrKind k);
int64_t attr_int(const Node *n, const char *name, int64_t dflt);
double attr_float(const Node *n, const char *name, double dflt);
const char *attr_str(const Node *n, const char *name, const char *dflt);

/* The node's op name ("MatMul"), from the op table. */
const char *node_op_name(const Node *n);
/* Record an error about node n, "node 'NAME' (Op): msg" (first one wins),
 * and return false: `return diag_node(d, g, n, "...")`. */
bool diag_node(Diag *d, const Graph *g, const Node *n, const char *fmt, ...) KILN_PRINTF(4, 5);

/* ---- shape helpers shared by _infer functions ------------------------------ */

/* Numpy-style broadcast of a and b into out; false if incompatible. */
bool shape_broadcast(const Type *a, const Type *b, Type *out);
/* Index into a tensor of type `in` that numpy broadcasting maps to element
 * i of `out` (for _eval code; in's rank <= out's rank). */
int64_t bcast_src(const Type *out, const Type *in, int64_t i);
/* Normalise a possibly negative axis into [0, rank); false if out of range. */
bool axis_norm(int64_t axis, int rank, int *out);
/* Read a constant integer tensor input (shape, axes, pads...): false + diag
 * when it is not a compile-time constant. *vals lives in g's arena. */
bool const_input_ints(Graph *g, const Node *n, int i, const char *what,
                      int64_t **vals, int *len, Diag *d);

#endif
