/* emit_kernel.h — every node's code becomes a kernel: a static function of
 * `restrict` pointer parameters with every dimension fixed, emitted once
 * however many nodes it serves (layer 1's GEMMs are layer 0's). The run
 * function is then a list of calls, one per node, like llama2.c's forward.
 *
 * While a node's _emit runs, emit_ref and emit_const_array hand out
 * parameter names instead of the run function's: in<i> for the value in
 * input slot i, out<j> for output j, arr<k> for the k-th derived array
 * (packed weights, tables), aux<k> for anything else. Two values stored
 * in the same bytes (an alias, or an output written in place over its
 * input) are one parameter, so `restrict` holds: the planner puts no two
 * other values that live at one node in overlapping bytes, graph inputs
 * and outputs must not overlap (the header says so) and weights are
 * read-only. Names depend only on the op's code, so two nodes with the
 * same op, dims, attributes and epilogue give the same text: one kernel. */
#ifndef KILN_EMIT_KERNEL_H
#define KILN_EMIT_KERNEL_H

#include "emit.h"

typedef struct KParam {
  const char *name; /* in0, out0, arr0, aux0 */
  int vid;          /* the first value referenced through it, or -1 */
  int arr;          /* or the emit_const_array array, or -1 */
  int out_vid;      /* an output of the node stored here (it is written), or -1 */
  int64_t loc;      /* the storage it points to: one storage, one parameter */
  DType dt;
  int order;        /* its place in the signature: inputs by slot, arrays, others, outputs */
} KParam;

typedef struct Kernel {
  const char *name;    /* C name (unique in the file) */
  const char *comment; /* the op and its operands' types */
  char *text;          /* "(parameters) {\n body }\n" */
  uint64_t hash;
  int calls;
  int op;              /* OpId of the node it was made for */
  const KParam *kp;    /* its parameters, in order */
  int nkp;
  bool split;          /* has KILN_PARALLEL_FOR loops: a job for the thread pool (kiln_rt.h) */
} Kernel;

typedef struct KCall {
  const Node *node;
  int kernel;         /* index into kernels, or -1: no code (view ops) */
  const char *text;   /* for kernel -1: the node's comment lines */
  KParam *args;
  int nargs;
} KCall;

typedef struct KernelSet {
  Kernel *kernels;
  int nkernels, capkernels;
  KCall *calls;
  int ncalls, capcalls;
  /* the kernel being generated */
  const Node *node; /* NULL when none */
  const int *io_slot; /* per value: its run-function parameter index, or -1 */
  KParam *kp;
  int nkp, capkp;
  Buf body;
} KernelSet;

KernelSet *kernels_new(Arena *a, const int *io_slot);
/* Start capturing node n's code: emit_line and friends write into the
 * kernel's body, emit_ref gives parameters. */
void kernel_begin(Emit *e, const Node *n);
/* The parameter through which the kernel reads or writes value vid (arr
 * < 0) or emit_const_array array arr. */
const char *kernel_param(Emit *e, int vid, int arr);
/* Finish the node: its kernel (a new one, or the same text seen before)
 * and the call to it. */
void kernel_end(Emit *e);
/* Abandon the node (its _emit failed). */
void kernel_abort(Emit *e);
/* The kernels, as static functions, into c. */
void kernels_put(Emit *e, Buf *c);

/* Does name occur in text as a whole identifier? */
bool emit_has_token(const char *text, const char *name);
/* Where value v's bytes are: itself for a run-function parameter (a graph
 * input or output), a constant or a workspace tensor; an alias's root. */
int emit_storage_root(const Emit *e, int v);
#endif
