/* emit.h — what an op's _emit function has to work with.
 *
 * The emitter walks the planned graph and, for each node, opens a block in
 * the generated run function and calls the op's _emit. Every tensor is a flat
 * row-major C array with a fixed shape; emit_ref gives the C expression of
 * its pointer (a parameter, a weight array, or a slice of the workspace).
 * Kernels come from templates/ (emit_tmpl) or, for elementwise ops, from a
 * scalar expression expanded into broadcast loops (emit_elementwise). */
#ifndef KILN_EMIT_H
#define KILN_EMIT_H

#include "emit_api.h"

/* A weight array that is not a graph value (emit_const_array). */
typedef struct EmitArray {
  DType dt;
  const void *data;
  int64_t n;
  const char *stem;    /* what its C name is made from */
  const char *comment;
  int k;               /* its index in consts */
} EmitArray;

/* A weight, in the order the forward pass first reads it. */
typedef struct EmitConst {
  int id;              /* a value id, or -1 - i for arrays[i] (emit_const_array) */
  const char *name;    /* its C name (in blob mode, its struct member); NULL until named */
  int group, rep, mem; /* a layer's weight: its LayerGroup, layer and member; group -1: none */
} EmitConst;

/* Per-layer weights (or state fields) as an array of structs, which layer
 * loops index (emit_forward.h): weights->blk[l].attn_q_weight. */
typedef struct LayerGroup {
  const char *name;  /* the array's C name ("blk") */
  const char *tag;   /* its struct's tag ("smol_blk_weights") */
  bool state;        /* state fields (graph input indices) rather than weights (consts indices) */
  int reps;          /* its length */
  int nmem, capmem, capitem, caplocal;
  const char **mem;  /* member names */
  const char **local; /* state groups: the loop's local pointer to each member */
  int **item;        /* item[m][r]: member m of layer r (a consts index or a graph input index) */
} LayerGroup;

struct NameSet;
struct KernelSet;
struct LoopPlan;

typedef struct Emit {
  Graph *g;
  Buf *out;           /* where emit_line writes: the kernel being generated */
  int indent;         /* in units of two spaces */
  const char *prefix; /* --name: prefix of every exported symbol */
  const char **refs;  /* per value: its C expression in the run function
                         (set once names are given, emit_file.c) */
  EmitConst *consts;  /* the weights, in order of first use */
  int nconsts, capconsts;
  int *const_of;      /* per value: its index in consts, or -1 */
  EmitArray *arrays;
  int narrays, caparrays;
  EmitIsa isa;        /* --isa: vector width of the GEMM kernel */
  int threads;        /* --threads: 1 = serial code, no threading at all */
  EmitGemm gemm;      /* --gemm: the packed kernels or cblas_sgemm */
  EmitPrecision precision; /* --precision: bf16 weight GEMMs (gemm_kernel.c) */
  bool profile;       /* EmitOptions.profile: a PREFIX_profile_mark call after each kernel call */
  bool uses_bf16_dp;  /* a kernel calls vdpbf16ps: the file includes <immintrin.h> */
  bool uses_vnni;     /* an int8 dot kernel (igemm_kernel.c for w8a8, qgemm_q8act.c for
                         --kquant-act=q8) calls x86 intrinsics: the file includes
                         <immintrin.h> where the C compiler targets them */
  struct WeightsBlob *blob; /* blob mode: large weights are read from it */
  int nparallel;      /* loops marked by emit_parallel_for so far */
  int tmp;            /* counter for unique local names (per kernel) */
  struct NameSet *names;    /* every identifier the generated file uses */
  struct KernelSet *ks;     /* the kernels (emit_kernel.h); while one is
                               generated, emit_ref gives its parameters */
  LayerGroup *groups;       /* the layer groups (emit_forward.c makes them) */
  int ngroups, capgroups;
  struct LoopPlan *loops;   /* the layer loops (emit_forward.h) */
  struct PackPlan *pack;    /* NAME_run_batch's packs (emit_pack.h), or NULL */
  const char *pack_why;     /* with a token count and no packs: why not */
} Emit;

/* C expression of value vid's pointer (typed: `const float *` etc.). Inside
 * an op's _emit it is a parameter of the kernel function being generated
 * (in0.. for the node's input slots, out0.. for its outputs: emit_kernel.h);
 * outside, the run function's name for the value: a parameter, a weight
 * array (in blob mode, when larger than EMIT_BLOB_INLINE_MAX bytes, the
 * member `weights->NAME` of the blob), or a workspace tensor. */
const char *emit_ref(Emit *e, int vid);
/* Weight k of consts: a graph constant or an array of emit_const_array,
 * with the comment that goes above it. */
typedef struct Weight {
  DType dt;
  const void *data;
  int64_t n;
  const char *comment;
  bool aligned; /* emit_const_array's arrays are 64-byte aligned */
} Weight;

Weight emit_weight_at(const Emit *e, int k);
/* In blob mode, is weight k read from the blob (an array of more than
 * EMIT_BLOB_INLINE_MAX bytes, or a layer group's member)? */
bool emit_weight_in_blob(const Emit *e, int k);
/* The C name of weight k of e->consts; in blob mode, when the array is in
 * the blob, `weights->NAME` (`weights->blk[3].attn_q_weight` for a layer
 * group's). Named on first call, once every kernel is known. */
const char *emit_weight_name(Emit *e, int k);
/* Register an extra weight array of n elements of dt (data must outlive
 * the emission: arena memory) and return its C expression (inside an
 * _emit, a kernel parameter arr0, arr1, ...). It is emitted with the
 * graph's weights — named after `stem` (a model name: made C-safe and
 * unique), exact literals — but 64-byte aligned, with `comment` above it.
 * For data the compiler derives from constants, such as a GEMM's B packed
 * into the panel layout its kernel reads (compiler/kernels/gemm_kernel.c). */
const char *emit_const_array(Emit *e, DType dt, const void *data, int64_t n, const char *stem,
                             const char *comment);
/* One line at the current indentation (a newline is appended). */
void emit_line(Emit *e, const char *fmt, ...) KILN_PRINTF(2, 3);
/* Instantiate template `name` (templates/NAME.c.in). The variadic arguments
 * are NULL-terminated key, value string pairs replacing ${KEY}. Every ${...}
 * in the template must be given. A value may span lines: each line after
 * its first gets the indentation of the line the ${KEY} stands in. */
void emit_tmpl(Emit *e, const char *name, ...);
/* A fresh local identifier "stem_N" (numbered per kernel). */
const char *emit_tmpname(Emit *e, const char *stem);
/* Decimal / C literal helpers (arena strings). */
const char *emit_int(Emit *e, int64_t v);
/* Exact C literal for element i of a tensor of type dt ("0x1p-3f", "-7LL"). */
const char *emit_literal(Emit *e, DType dt, const void *data, int64_t i);
const char *emit_double_literal(Emit *e, DType dt, double v);

/* Elementwise kernel with numpy broadcasting over the node's inputs and
 * output 0: `expr` is a C expression in $0, $1, ... (the scalar input
 * elements, already of their own C types); the result is converted to the
 * output's C type. Contiguous runs are collapsed into one flat loop. */
void emit_elementwise(Emit *e, const Node *n, const char *expr);
/* The same for an explicit list of inputs (value ids) and output. */
void emit_elementwise_vals(Emit *e, const int *ins, int nin, int out, const char *expr);
/* How a result is stored in a float8 or e8m0 output (Cast's attributes):
 * saturate, and e8m0's round_mode (MF_UP, ...). The default is {true, MF_UP}. */
typedef struct EmitStore {
  bool saturate;
  int round_mode;
} EmitStore;
/* emit_elementwise_vals with the store's rules given (NULL: the default).
 * Narrow operands are read through kiln_f8e4m3fn_to_f32, kiln_get_i4 and
 * friends, and packed results stored a code at a time (never split among
 * threads: two threads would write the same byte). */
void emit_elementwise_store(Emit *e, const int *ins, int nin, int out, const char *expr, const EmitStore *st);
/* Element idx (a C expression) of value vid as a C expression: a float for
 * f16, bf16, float8 and float4, an int for the packed integers, else the
 * element itself. */
const char *emit_elem(Emit *e, int vid, const char *idx);
/* out[idx] = x, converted to out's type (x's operands `wide`: f64 or
 * 32/64-bit integers, which a float does not hold exactly; st as above). */
void emit_elem_store(Emit *e, int out, const char *idx, const char *x, bool wide, const EmitStore *st);

/* ---- threads (--threads N) -------------------------------------------------
 * One mechanism for every kernel. Call emit_parallel_for right before
 * emitting a `for` loop (the very next line written must be the `for`,
 * also when a template starts with it) whose iterations are independent:
 * each writes its own part of the outputs, reads nothing another iteration
 * writes, and declares its scratch (accumulators, row pointers) inside its
 * body — variables declared before the loop are shared by the threads and
 * must only be read. The loop must have the form
 * `for (int i = A; i < B; i++)` or `i += C`, with A, B, C the same on
 * every thread (constants, or locals computed from the parameters).
 *
 * With threads > 1, and when the loop is worth it (at least `threads`
 * iterations and an estimated serial time of EMIT_PARALLEL_MIN_NS or
 * more), it writes the line KILN_PARALLEL_FOR and returns true; otherwise
 * `KILN_LEAD_ONLY` (the loop, which writes outputs, may share its kernel
 * with a split loop: then the lead thread alone runs it), and false. With
 * --threads 1 it never writes anything, so serial
 * output is byte-identical to a kiln without threads. kernel_end
 * (emit_kernel.c) turns the marker and its loop into
 * `KILN_PARALLEL_FOR(int, i, A, B, C) {` and the kernel into a job of
 * kiln's thread pool (kiln_rt.h, "threads"): built with -pthread, the
 * iterations are cut into tiles that the pool's threads claim (n of them,
 * n = N, or less after NAME_set_threads(n)); built without, the macro is
 * the plain loop. A split costs a few microseconds per loop, hence the
 * threshold: small ops stay serial (DESIGN.md, "Threads", has the
 * measurements). emit_parallel_worth asks the same question without
 * writing anything, for kernels that shape their loops for threads (the
 * GEMM puts its edge panel into the split loop).
 *
 * serial_ns: the loop's estimated run time on one core, in nanoseconds.
 * Rules of thumb used by the kernels here: a GEMM 2·M·N·K / 100 (about
 * 100 GFLOP/s); vectorised arithmetic 0.25 per element; a libm call
 * (expf, erff, tanhf: scalar) about 4; a float sum along a row (a chain of
 * dependent adds) about 1 per element. iters: the loop's trip count. */
#define EMIT_PARALLEL_MIN_NS 10000
/* Most parameters of a kernel whose loops are split: KILN_JOB_ARGS in
 * kiln_rt.h (a kernel with more runs its loops serially). */
#define EMIT_JOB_ARGS 64
bool emit_parallel_worth(const Emit *e, int64_t iters, double serial_ns);
bool emit_parallel_for(Emit *e, int64_t iters, double serial_ns);
/* A loop nest of r dims (dims[], and the strides st[k][d] of nk operands)
 * about to be split at its outer dim: where it is one flat loop, make it
 * two, blocks of a constant count of elements inside the split one, and
 * return the new r (else r). gcc 12 at -O2 vectorises a loop only when its
 * trip count is a constant multiple of the vector width (the very-cheap
 * cost model), so a split flat loop, whose bounds are the thread's tile,
 * ran scalar: Clip over 245,760 floats 5x slower on 2 threads than on 1. */
int emit_split_blocks(const Emit *e, int r, int64_t *dims, int nk, int64_t (*st)[MAX_RANK], double serial_ns);
/* A kernel with split loops runs whole on every thread of the pool's job,
 * each split loop's tiles shared among them; so its code outside those
 * loops may only compute locals. A statement there that stores to memory
 * (zeroing the rows past a run-time count) is prefixed by this:
 * "KILN_LEAD_ONLY " (only the run's lead thread executes it) with
 * --threads N > 1, "" with 1. */
const char *emit_lead_only(const Emit *e);
/* A scratch array declared before a kernel's split loops that one loop's
 * iterations write and a later one's read: `type name[n]` (64-byte
 * aligned), one array for the whole team (KILN_SHARED, kiln_rt.h) with
 * --threads N > 1. what: its comment. */
void emit_shared_array(Emit *e, const char *type, const char *name, int64_t n, const char *what);

/* Name of the C math function for dt: emit_mathfn(e, DT_F32, "sqrt") =
 * "sqrtf", (e, DT_F64, "exp") = "exp"; but f32 exp, erf and tanh are
 * kiln's own kiln_expf, kiln_erff, kiln_tanhf (runtime/kiln_rt.h: within
 * 1.5 ulp, no branches, so that a loop calling them vectorises). */
const char *emit_mathfn(Emit *e, DType dt, const char *fn);

#endif
