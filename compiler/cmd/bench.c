/* bench.c — `kiln bench MODEL`: the user-facing timer, in the spirit of
 * onnxruntime_perf_test and TFLite's benchmark_model. It compiles the model
 * as `kiln compile` does, writes a small timing driver around the generated
 * API, builds both with the recommended flags (-O2 -march=native -ffp-contract=fast unless
 * --cflags says otherwise; -pthread for --threads N > 1, -lopenblas for
 * --gemm=openblas), and runs the program: warm-up, then --runs
 * timed calls of model_run, each timed with clock_gettime(CLOCK_MONOTONIC).
 * Inputs are the --input files, or else fixed-seed random data: floats
 * uniform in [-1, 1), integers in [1, 10) (valid token ids for any
 * vocabulary of 10 or more, and never 0, the usual padding id, which can
 * mask a whole attention row and make the output NaN), bools false. The
 * output ends with one line scripts can parse:
 *   median_ms=... min_ms=... runs=... workspace_bytes=... rss_kb=...
 * rss_kb is getrusage's peak resident set of the timing program itself,
 * linked statically where the C library allows (see bench_build_run).
 * The build folder goes to /tmp and is removed afterwards (--keep keeps it). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"
#include "info.h"
#include "../base/c_text.h"
#include "../frontend/npy.h"
#include "../ir/ops.h"

#define BENCH_SEED 0x6b696c6eu /* "kiln" */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* splitmix64: a fixed, portable stream, so every run times the same data. */
static uint64_t next_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* Random data of type t: floats in [-1, 1), ints in [1, 10), bools false. */
static void random_tensor(Arena *a, const Type *t, uint64_t *seed, Tensor *out) {
  int64_t n = type_numel(t);
  out->type = *t;
  out->data = arena_alloc(a, type_bytes(t) + 1);
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = next_rand(seed);
    if (dt_is_float(t->dt))
      el_set_f(t->dt, out->data, i, (double)(r >> 11) * 0x1p-52 - 1.0);
    else if (t->dt != DT_BOOL)
      el_set_i(t->dt, out->data, i, 1 + (int64_t)(r % 9));
  }
}

/* The timing program: main(RUNS, WARMUP, in0.bin, ... [out0.bin, ...]):
 * inputs and outputs are raw arrays; the outputs of the last run are
 * written when their paths are given. With KILN_BENCH_TIMES=FILE in the
 * environment it also writes every run's time (ms), one per line, in run
 * order — for harnesses that pool runs (bench/run.sh). */
/* --profile: the driver's model_profile_mark (the generated body calls it
 * after each kernel, emit_api.h), a table per IR node of its name and
 * FLOPs, the FMA peak of one core (independent chains of vector FMAs,
 * best of 3 of ~50 ms; bench/peak_fma.c's method) and the report. A layer
 * loop (equal_layers) calls one node's kernel once per layer, so the
 * marks count calls: the node's FLOPs count once per call, and the report
 * says how many calls a run its time covers. */
static void profile_source(Arena *a, Buf *b, const Graph *g, int threads) {
  buf_printf(b, "#define PROF_N %d\nstatic double prof_last, prof_ms[PROF_N];\nstatic long prof_calls[PROF_N];\n"
                "void model_profile_mark(int node);\n"
                "void model_profile_mark(int node) {\n  double t = now_ms();\n"
                "  prof_ms[node] += t - prof_last;\n  prof_calls[node]++;\n  prof_last = t;\n}\n",
             g->nnodes);
  buf_puts(b, "static const char *const prof_name[PROF_N] = {\n");
  for (int i = 0; i < g->nnodes; i++) {
    const Node *n = &g->nodes[i];
    buf_printf(b, "  %s,\n", c_text(a, CT_STRING, arena_printf(a, "%s (%s)", n->name, op_table[n->op].name)));
  }
  buf_puts(b, "};\nstatic const double prof_flops[PROF_N] = {\n");
  for (int i = 0; i < g->nnodes; i++)
    buf_printf(b, "  %.17g,\n", g->nodes[i].dead ? 0.0 : (double)node_flops(g, &g->nodes[i]));
  buf_puts(b, "};\n\n"
              "#if defined(__GNUC__)\n"
              "typedef float prof_v __attribute__((vector_size(64)));\n"
              "/* iters x 12 independent 16-wide FMAs */\n"
              "__attribute__((noinline)) static float prof_fma(long iters, float seed) {\n"
              "  prof_v m, c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11; /* named: in registers */\n"
              "  for (int l = 0; l < 16; l++) {\n    m[l] = 0.999999f;\n"
              "    c0[l] = c1[l] = c2[l] = c3[l] = c4[l] = c5[l] = seed + (float)l;\n"
              "    c6[l] = c7[l] = c8[l] = c9[l] = c10[l] = c11[l] = seed - (float)l;\n  }\n"
              "  for (long i = 0; i < iters; i++) {\n"
              "    c0 = c0 * m + m, c1 = c1 * m + m, c2 = c2 * m + m, c3 = c3 * m + m;\n"
              "    c4 = c4 * m + m, c5 = c5 * m + m, c6 = c6 * m + m, c7 = c7 * m + m;\n"
              "    c8 = c8 * m + m, c9 = c9 * m + m, c10 = c10 * m + m, c11 = c11 * m + m;\n  }\n"
              "  prof_v s = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11;\n"
              "  float r = 0;\n  for (int l = 0; l < 16; l++) r += s[l];\n"
              "  return r;\n}\n"
              "static double prof_peak(void) { /* GFLOP/s of one core */\n"
              "  long iters = 1 << 16;\n  double best = 0;\n"
              "  while (iters < (1L << 30)) {\n    double t0 = now_ms();\n"
              "    volatile float r = prof_fma(iters, 1.0f);\n    (void)r;\n"
              "    if (now_ms() - t0 > 50) break;\n    iters *= 2;\n  }\n"
              "  for (int k = 0; k < 3; k++) {\n    double t0 = now_ms();\n"
              "    volatile float r = prof_fma(iters, 1.0f);\n    (void)r;\n"
              "    double g = 2.0 * 12 * 16 * (double)iters / ((now_ms() - t0) * 1e6);\n"
              "    best = g > best ? g : best;\n  }\n  return best;\n}\n"
              "#else\nstatic double prof_peak(void) { return 0; }\n#endif\n\n");
  buf_printf(b, "static void prof_report(int runs) {\n"
                "  double total = 0, peak = prof_peak() * %d;\n"
                "  int order[PROF_N], n = 0;\n"
                "  for (int i = 0; i < PROF_N; i++)\n"
                "    if (prof_ms[i] > 0) {\n      total += prof_ms[i];\n"
                "      int j = n++;\n"
                "      for (; j > 0 && prof_ms[order[j - 1]] < prof_ms[i]; j--) order[j] = order[j - 1];\n"
                "      order[j] = i;\n    }\n"
                "  printf(\"  profile: %%d kernel calls' nodes, %%.4f ms a run; FMA peak %%.1f GFLOP/s (%d thread%s)\\n\",\n"
                "         n, total / runs, peak);\n"
                "  printf(\"  %%10s %%6s %%9s %%6s  %%s\\n\", \"ms a run\", \"share\", \"GFLOP/s\", \"peak\", \"node (op)\");\n"
                "  for (int k = 0; k < n; k++) {\n    int i = order[k];\n"
                "    double ms = prof_ms[i] / runs, calls = (double)prof_calls[i] / runs;\n"
                "    double gf = prof_flops[i] * calls / (ms * 1e6);\n"
                "    char layers[48] = \"\";\n"
                "    if (prof_calls[i] > runs) /* a layer loop's node: its calls a run */\n"
                "      snprintf(layers, sizeof layers, \", %%g calls a run\", calls);\n"
                "    if (prof_flops[i] > 0)\n"
                "      printf(\"  %%10.4f %%5.1f%%%% %%9.2f %%5.1f%%%%  %%s%%s\\n\", ms, 100 * prof_ms[i] / total, gf,\n"
                "             peak > 0 ? 100 * gf / peak : 0, prof_name[i], layers);\n"
                "    else\n"
                "      printf(\"  %%10.4f %%5.1f%%%% %%9s %%6s  %%s%%s\\n\", ms, 100 * prof_ms[i] / total, \"-\", \"-\",\n"
                "             prof_name[i], layers);\n"
                "  }\n}\n\n",
             threads, threads, threads > 1 ? "s" : "");
}

static const char *timer_source(Arena *a, Graph *g, const char *dir, int64_t rows, int profile_threads) {
  Buf b = {0};
  buf_puts(&b, "/* timing driver generated by kiln bench */\n"
               "#define _POSIX_C_SOURCE 200809L\n"
               "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <sys/resource.h>\n"
               "#include <time.h>\n"
               "#include \"model.h\"\n\n");
  buf_puts(&b, driver_io_source);
  buf_puts(&b, "static double now_ms(void) {\n  struct timespec t;\n"
               "  clock_gettime(CLOCK_MONOTONIC, &t);\n"
               "  return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;\n}\n\n"
               "static int cmp(const void *x, const void *y) {\n"
               "  double u = *(const double *)x, v = *(const double *)y;\n"
               "  return (u > v) - (u < v);\n}\n\n");
  if (profile_threads)
    profile_source(a, &b, g, profile_threads);
  buf_puts(&b, "int main(int argc, char **argv) {\n");
  buf_printf(&b, "  (void)load; /* a model may have no inputs */\n"
                 "  if (argc != %d && argc != %d) return 2;\n",
             3 + g->ninputs, 3 + g->ninputs + g->noutputs);
  buf_puts(&b, driver_blob_bind(a, dir));
  buf_puts(&b, "  int runs = atoi(argv[1]), warmup = atoi(argv[2]);\n"
               "  if (runs < 1 || warmup < 0) return 2;\n");
  for (int i = 0; i < g->ninputs; i++)
    buf_printf(&b, "  void *in%d = load(argv[%d], %zu);\n", i, 3 + i,
               type_bytes(&g->vals[g->inputs[i]].type));
  for (int i = 0; i < g->noutputs; i++)
    buf_printf(&b, "  void *out%d = calloc(%zu, 1);\n", i,
               type_bytes(&g->vals[g->outputs[i]].type) + 64);
  const char *call = emit_run_call(g, "model");
  if (rows > 0) { /* model_run(a, b); -> model_run_rows(a, b, N); (bench_model checked: no state) */
    size_t n = strlen(call);
    KILN_ASSERT(!strncmp(call, "model_run(", 10) && n > 12 && !strcmp(call + n - 2, ");"));
    call = arena_printf(a, "if (model_run_rows(%.*s, %lld) != 0) return 3;", (int)(n - 12), call + 10,
                        (long long)rows);
  }
  buf_printf(&b, "  double *t = calloc((size_t)runs, sizeof *t);\n  if (!t) return 2;\n"
                 "  for (int i = 0; i < warmup; i++)\n    %s\n%s"
                 "  for (int i = 0; i < runs; i++) {\n    double t0 = now_ms();\n%s    %s\n"
                 "    t[i] = now_ms() - t0;\n  }\n",
             call, profile_threads ? "  memset(prof_ms, 0, sizeof prof_ms);\n  memset(prof_calls, 0, sizeof prof_calls);\n" : "",
             profile_threads ? "    prof_last = t0;\n" : "", call);
  /* a checksum of the float outputs: the result is used, and a glance
   * shows two builds computed the same thing */
  buf_puts(&b, "  double sum = 0;\n");
  for (int i = 0; i < g->noutputs; i++) {
    const Type *ty = &g->vals[g->outputs[i]].type;
    if (ty->dt == DT_F32 || ty->dt == DT_F64)
      buf_printf(&b, "  for (long i = 0; i < %lld; i++) sum += ((const %s *)out%d)[i];\n",
                 (long long)type_numel(ty), dt_ctype(ty->dt), i);
  }
  buf_printf(&b, "  if (argc == %d) {\n", 3 + g->ninputs + g->noutputs);
  for (int i = 0; i < g->noutputs; i++)
    buf_printf(&b, "    save(argv[%d], out%d, %zu);\n", 3 + g->ninputs + i, i,
               type_bytes(&g->vals[g->outputs[i]].type));
  buf_puts(&b, "  }\n  const char *tf = getenv(\"KILN_BENCH_TIMES\");\n"
               "  FILE *f = tf ? fopen(tf, \"w\") : NULL;\n"
               "  for (int i = 0; f && i < runs; i++) fprintf(f, \"%.6f\\n\", t[i]);\n"
               "  if (f) fclose(f);\n");
  buf_puts(&b, "  double total = 0;\n  for (int i = 0; i < runs; i++) total += t[i];\n"
               "  qsort(t, (size_t)runs, sizeof *t, cmp);\n"
               "  double med = runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]);\n"
               "  struct rusage ru;\n  getrusage(RUSAGE_SELF, &ru);\n"
               "  printf(\"  time (ms): min %.4f  median %.4f  mean %.4f  p90 %.4f  max %.4f\\n\",\n"
               "         t[0], med, total / runs, t[(runs * 9) / 10 < runs ? (runs * 9) / 10 : runs - 1],"
               " t[runs - 1]);\n"
               "  printf(\"  output checksum: %.9g\\n\", sum);\n");
  if (profile_threads)
    buf_puts(&b, "  prof_report(runs);\n");
  buf_puts(&b, 
               "  printf(\"median_ms=%.4f min_ms=%.4f runs=%d workspace_bytes=%lld rss_kb=%ld\\n\",\n"
               "         med, t[0], runs, (long long)MODEL_WORKSPACE_SIZE, (long)ru.ru_maxrss);\n");
  for (int i = 0; i < g->ninputs; i++)
    buf_printf(&b, "  free(in%d);\n", i);
  for (int i = 0; i < g->noutputs; i++)
    buf_printf(&b, "  free(out%d);\n", i);
  buf_puts(&b, "  free(t);\n  return 0;\n}\n");
  char *r = arena_strdup(a, b.s);
  buf_free(&b);
  return r;
}

/* Read the --input NAME=FILE flags (.npy or .pb) into in[] (graph-input
 * order); given[i] says which were read. */
static bool read_inputs(Arena *a, Graph *g, const BenchOptions *o, Tensor *in, bool *given,
                        Diag *d) {
  for (int k = 0; k < o->ninputs; k++)
    if (!tensor_file_read_input(a, g, o->inputs[k], in, given, d))
      return false;
  return true;
}

/* Load, bind (from --shape and the given inputs), lower to a planned graph;
 * fills in[] with the given or random input data, in the lowered graph's
 * input order. With `freeze`, when every input is given, the inputs that
 * fix shapes are compiled in as constants (as kiln run and check do). */
static Graph *lower_once(Arena *a, const char *model, const BenchOptions *o, bool freeze,
                         Tensor **inp, bool **randomp, bool *all_given, Diag *d) {
  Graph *g = driver_load_opts(a, model, o->pipe.lua, d);
  if (!g || !driver_not_decoder(g, "bench", d))
    return NULL;
  Tensor *in = arena_alloc(a, sizeof(Tensor) * (size_t)(g->ninputs + 1));
  bool *given = arena_alloc(a, (size_t)g->ninputs + 1);
  if (!read_inputs(a, g, o, in, given, d))
    return NULL;
  bool all = true;
  for (int i = 0; i < g->ninputs; i++)
    all = all && given[i];
  *all_given = all;
  int nin = g->ninputs;
  if (all && freeze)
    driver_freeze_shape_inputs(g, in, &nin);
  PipelineOptions po = o->pipe;
  ShapeBinding *sb = arena_alloc(a, sizeof(ShapeBinding) * (size_t)(po.pass.nshapes + nin + 1));
  memcpy(sb, po.pass.shapes, sizeof *sb * (size_t)po.pass.nshapes);
  for (int i = 0; i < nin; i++)
    if (all || given[i]) {
      ShapeBinding *b = &sb[po.pass.nshapes++];
      b->name = g->vals[g->inputs[i]].name;
      b->rank = in[i].type.rank;
      memcpy(b->dims, in[i].type.dims, sizeof b->dims);
    }
  po.pass.shapes = sb;
  po.stop_before_plan = false;
  if (!driver_lower(g, &po, d))
    return NULL;
  if (!g->planned)
    return diag_error(d, "--passes=%s: C needs a planned graph; expected a pass list that ends "
                      "with the plan pass", po.passes ? po.passes : ""), NULL;
  if (o->rows && (!g->rows || o->rows > g->rows->max))
    return diag_error(d, g->rows ? "--rows=%lld: the model takes at most %lld tokens (--rows-axis's length)"
                                 : "--rows=%lld needs --rows-axis=INPUT:AXIS (a model compiled with a token count)",
                      (long long)o->rows, g->rows ? (long long)g->rows->max : 0LL), NULL;
  for (int i = 0; o->rows && i < g->ninputs; i++)
    if (g->vals[g->inputs[i]].is_state)
      return diag_error(d, "--rows: the model has a state ('%s'); expected a stateless encoder",
                        g->vals[g->inputs[i]].name), NULL;
  uint64_t seed = BENCH_SEED;
  bool *random = arena_alloc(a, (size_t)g->ninputs + 1);
  for (int i = 0; i < g->ninputs; i++) {
    const Type *t = &g->vals[g->inputs[i]].type;
    char x[128], y[128];
    if (all || given[i]) {
      if (!type_equal(&in[i].type, t))
        return diag_error(d, "--input %s: the data is %s, expected %s", g->vals[g->inputs[i]].name,
                          type_str(&in[i].type, x, sizeof x), type_str(t, y, sizeof y)), NULL;
    } else {
      random_tensor(a, t, &seed, &in[i]);
      random[i] = true;
    }
  }
  *inp = in;
  *randomp = random;
  return g;
}

/* Inputs stay inputs when they can: freezing every input that reaches a
 * shape also catches data inputs whose Shape is taken, and would time a
 * constant. Only a model that needs its given inputs' values at compile
 * time gets them compiled in. */
static Graph *bench_lower(Arena *a, const char *model, const BenchOptions *o, Tensor **inp,
                          bool **randomp, bool *frozen, Diag *d) {
  bool all = false;
  Graph *g = lower_once(a, model, o, false, inp, randomp, &all, d);
  if (g || !all)
    return g;
  Diag d2 = {0};
  d2.file = d->file;
  g = lower_once(a, model, o, true, inp, randomp, &all, &d2);
  if (!g)
    *d = d2;
  *frozen = g != NULL;
  return g;
}

static int64_t graph_flops(const Graph *g) {
  int64_t f = 0;
  for (int n = 0; n < g->nnodes; n++)
    if (!g->nodes[n].dead)
      f += node_flops(g, &g->nodes[n]);
  return f;
}

/* Bytes of the constants the compiled nodes read: the weights in .rodata. */
/* Write model.c/.h and bench.c into tmp, build tmp/bench, run it. */
static bool bench_build_run(Arena *a, Graph *g, const Tensor *in, const char *tmp,
                            const BenchOptions *o, Diag *d) {
  int64_t stored = 0; /* the weights' bytes as the files hold them (bf16, int8: fewer) */
  EmitOptions eo = {.prefix = "model", .source = g->file, .header = "model.h", .isa = o->isa,
                    .threads = o->threads, .gemm = o->gemm, .precision = o->precision, .weights = o->weights,
                    .unroll_layers = o->unroll_layers, .profile = o->profile,
                    .weight_bytes = &stored};
  const char *extra = driver_extra_flags(a, o->threads, o->gemm);
  const char *cpath = arena_printf(a, "%s/model.c", tmp);
  const char *dpath = arena_printf(a, "%s/bench.c", tmp);
  const char *prog = arena_printf(a, "%s/bench", tmp);
  double t0 = now_s();
  if (!driver_write_c(g, &eo, cpath, d))
    return false;
  const char *drv = timer_source(a, g, tmp, o->rows, o->profile ? o->threads : 0);
  if (!write_file_atomic(dpath, drv, strlen(drv), d))
    return false;
  double t1 = now_s();
  /* compile, then link statically where the C library allows it (an
   * embedded app's usual form: its peak RSS is then the model's weights,
   * workspace and I/O plus ~0.5 MB, where a dynamic libc and libm alone
   * take ~1.7 MB), else dynamically */
  const char *obj = arena_printf(a, "%s/model.o", tmp);
  const char *compile_extra = driver_compile_flags(a, o->threads, o->gemm);
  const char *cmd = arena_printf(a, "%s -std=c99 %s%s -Wall -Wextra -Werror -c -o '%s' '%s'", o->cc,
                                 o->cflags, compile_extra, obj, cpath);
  if (system(cmd) != 0)
    return diag_error(d, "the generated C did not build (command: %s)", cmd);
  const char *link = arena_printf(a, "%s -std=c99 %s -Wall -Wextra -Werror -o '%s' '%s' '%s'%s -lm%s",
                                  o->cc, o->cflags, prog, obj, dpath, driver_blob_sources(a, tmp), extra);
  const char *linking = "static";
  cmd = arena_printf(a, "%s -static 2>/dev/null", link);
  if (system(cmd) != 0) {
    linking = "dynamic";
    if (system(link) != 0)
      return diag_error(d, "the timing program did not link (command: %s)", link);
  }
  double t2 = now_s();
  Buf run = {0};
  int warmup = o->runs / 10 < 5 ? 5 : o->runs / 10;
  buf_printf(&run, "'%s' %d %d", prog, o->runs, warmup);
  for (int i = 0; i < g->ninputs; i++) {
    const char *p = arena_printf(a, "%s/in%d.bin", tmp, i);
    if (!write_file_atomic(p, in[i].data, type_bytes(&in[i].type), d)) {
      buf_free(&run);
      return false;
    }
    buf_printf(&run, " '%s'", p);
  }
  struct stat st;
  long long bin = stat(prog, &st) == 0 ? (long long)st.st_size : -1;
  int64_t flops = graph_flops(g);
  printf("  build: emit %.2f s, %s %s%s: %.2f s; binary %lld bytes, linked %s\n", t1 - t0, o->cc,
         o->cflags, extra, t2 - t1, bin, linking);
  printf("  model: %.4f GFLOP, weights %lld bytes, workspace %lld bytes\n", (double)flops * 1e-9,
         (long long)stored, (long long)g->ws_size);
  printf("  runs: %d after %d warm-up\n", o->runs, warmup);
  if (o->keep) /* before the timings: the parseable line stays the last one */
    printf("  build folder kept: %s (rerun: %s)\n", tmp, run.s);
  fflush(stdout);
  int rc = system(run.s);
  buf_free(&run);
  if (rc != 0)
    return diag_error(d, "the timing program failed (status %d)", rc);
  return true;
}

int bench_model(const char *model, const BenchOptions *o) {
  Arena *a = arena_new();
  Diag d = {0};
  d.file = model;
  Tensor *in = NULL;
  bool *random = NULL, frozen = false;
  Graph *g = bench_lower(a, model, o, &in, &random, &frozen, &d);
  if (!g) {
    diag_print(&d);
    arena_free(a);
    return 1;
  }
  char tmp[] = "/tmp/kiln-bench-XXXXXX";
  if (!mkdtemp(tmp)) {
    fprintf(stderr, "kiln: cannot create a temporary folder\n");
    arena_free(a);
    return 1;
  }
  printf("kiln bench %s\n", model);
  for (int i = 0; i < g->ninputs; i++) {
    char ts[128];
    const Value *v = &g->vals[g->inputs[i]];
    printf("  input %s: %s (%s)\n", v->name, type_str(&v->type, ts, sizeof ts),
           random[i] ? "random" : "given");
  }
  if (frozen)
    printf("  inputs that fix shapes are compiled in as constants from their --input data\n");
  printf("  threads: %d%s\n", o->threads, o->threads > 1 ? " (kiln pool)" : "");
  if (o->gemm == GEMM_OPENBLAS) {
    /* OpenBLAS sizes its own thread pool: the same count as kiln's loops */
    char n[16];
    snprintf(n, sizeof n, "%d", o->threads);
    setenv("OPENBLAS_NUM_THREADS", n, 1);
    printf("  gemm: cblas_sgemm (--gemm=openblas, OPENBLAS_NUM_THREADS=%d)\n", o->threads);
  }
  Diag rd = {0};
  rd.file = model;
  bool ok = bench_build_run(a, g, in, tmp, o, &rd);
  if (!ok)
    diag_print(&rd);
  if (!o->keep && system(arena_printf(a, "rm -rf '%s'", tmp)) != 0)
    fprintf(stderr, "kiln: could not remove %s\n", tmp);
  arena_free(a);
  return ok ? 0 : 1;
}
