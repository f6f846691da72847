/* driver.h — the stages main.c strings together: load a model, run the
 * pass pipeline (with dumps), emit C, interpret, check. */
#ifndef KILN_DRIVER_H
#define KILN_DRIVER_H

#include "../emit/emit_api.h"
#include "../lua/lua_frontend.h"
#include "../passes/passes.h"

typedef struct PipelineOptions {
  PassOptions pass;
  const char *passes;       /* --passes=a,b,c (NULL: the full list) */
  const char *dump_after;   /* pass name, or "all" */
  const char *dump_before;
  const char *dump_dir;     /* --dump-all=DIR: DIR/NN-pass.kir after each pass */
  bool verify_each;
  bool stop_before_plan;    /* the interpreter needs no workspace */
  const LuaOptions *lua;    /* for .lua models (NULL: defaults) */
} PipelineOptions;

/* An ONNX model, IR text when path ends in .kir (with its .bin), a Lua
 * model description when it ends in .lua (run with lua's options: --set,
 * --weights, limits; NULL for the defaults), or a GGUF file (named .gguf
 * or by its magic): kiln's description of its general.architecture, run
 * with the file as its weights (lua's --set and limits apply). */
Graph *driver_load_opts(Arena *a, const char *path, const LuaOptions *lua, Diag *d);
Graph *driver_load(Arena *a, const char *path, Diag *d);
/* Write g as path (.kir) plus path's .bin sidecar when it has large
 * constants: a complete, loadable model. */
bool driver_write_kir(Graph *g, const char *path, Diag *d);
bool driver_lower(Graph *g, const PipelineOptions *o, Diag *d);
/* Write the .c file out_c, the header eo->header and kiln_rt.h beside it,
 * for a planned graph. Nothing is left behind on failure. */
bool driver_write_c(Graph *g, const EmitOptions *eo, const char *out_c, Diag *d);

/* Graph inputs whose values fix shapes (directly or through arithmetic)
 * become constants with the given values: in[] is in graph-input order,
 * *nin its length; both are compacted to the inputs that remain. */
void driver_freeze_shape_inputs(Graph *g, Tensor *in, int *nin);
/* False + d for a generative model (Graph.decoder): the commands that call
 * NAME_run (kiln check, kiln bench) cannot run one. */
bool driver_not_decoder(const Graph *g, const char *cmd, Diag *d);

/* Reference interpreter: inputs in graph-input order; outputs (graph-output
 * order) are allocated in g's arena. */
bool interp_run(Graph *g, const Tensor *inputs, Tensor *outputs, Diag *d);
/* The same, keeping every value: (*values)[vid], in g's arena. */
bool interp_values(Graph *g, const Tensor *inputs, Tensor **values, Diag *d);
/* Graph input i, when it is a state, as it is at the first call (its
 * initial value) into *t; false for other inputs. */
bool interp_state_start(const Graph *g, int i, Tensor *t);

typedef struct CheckOptions {
  double rtol, atol;
  double min_cosine;      /* --min-cosine: a float output must also reach this cosine with the
                             reference (0: not asked) */
  bool interp;            /* compare the interpreter instead of generated C */
  bool keep;              /* keep the build folder */
  bool quiet;
  const char *cc, *cflags;
  EmitIsa isa;            /* --isa, for the generated C (and kiln compile's) */
  int threads;            /* --threads N (and kiln compile's): N > 1 builds with -pthread */
  EmitGemm gemm;          /* --gemm (and kiln compile's): openblas links -lopenblas */
  EmitPrecision precision; /* --precision (and kiln compile's) */
  EmitWeights weights;    /* --weights-mode=inline|blob (and kiln compile's) */
  bool unroll_layers;     /* --unroll-layers (and kiln compile's) */
  const char *model;      /* --model FILE: compile this instead of DIR/model.* */
  PipelineOptions pipe;
} CheckOptions;

/* For the programs kiln check and kiln bench build around model.c in
 * folder dir: the weights blob's assembler file to add to the build
 * (" 'DIR/model_weights.S' -I'DIR'", or "" when the weights are inline),
 * and the C statement that binds it at the start of main (or ""). */
const char *driver_blob_sources(Arena *a, const char *dir);
const char *driver_blob_bind(Arena *a, const char *dir);

/* C text of load(path, bytes) and save(path, data, bytes) for the programs
 * kiln check and kiln bench generate around a model: raw arrays in files,
 * exit status 2 on I/O failure. */
extern const char *const driver_io_source;
/* What building generated C needs beyond --cflags, at the end of the cc
 * command: -pthread for --threads N > 1, -lopenblas (and the include
 * folder of cblas.h where it is not on the default path) for
 * --gemm=openblas; "" for neither. */
const char *driver_extra_flags(Arena *a, int threads, EmitGemm gemm);
/* The part of those a compile-only (cc -c) step needs: no libraries. */
const char *driver_compile_flags(Arena *a, int threads, EmitGemm gemm);

/* kiln check DIR: 0 all agree, 1 mismatch or error. */
int check_dir(const char *dir, const CheckOptions *o);

typedef struct BenchOptions {
  int runs;               /* timed runs (default 200), after runs/10 (at least 5) warm-up runs */
  int threads;            /* --threads N: code for N threads, built with -pthread when N > 1 */
  bool keep;              /* keep the build folder */
  EmitIsa isa;            /* --isa for the generated GEMM panels */
  EmitGemm gemm;          /* --gemm; openblas runs with OPENBLAS_NUM_THREADS=threads */
  EmitPrecision precision; /* --precision */
  EmitWeights weights;    /* --weights-mode=inline|blob */
  bool unroll_layers;     /* --unroll-layers */
  const char *cc, *cflags;
  const char *const *inputs; /* --input NAME=FILE.pb; inputs not given get random data */
  int ninputs;
  int64_t rows;           /* --rows=N (with --rows-axis): time NAME_run_rows(..., N); 0: NAME_run */
  bool profile;           /* --profile: each kernel's time, share and GFLOP/s against the FMA peak */
  PipelineOptions pipe;
} BenchOptions;

/* kiln bench MODEL: compile, build with a timing driver, run; prints a
 * summary ending with "median_ms=.. min_ms=.. runs=.. workspace_bytes=..
 * rss_kb=..". 0 on success, 1 on error. */
int bench_model(const char *model, const BenchOptions *o);

#endif
