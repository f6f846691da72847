/* driver.c — load, lower and write: the stages behind `kiln compile`. */
#include "driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../frontend/onnx.h"
#include "../ir/ops.h"
#include "../ir/print.h"
#include "progress.h"
#include "../emit/templates.h"
#include "../emit/weights_blob.h"

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* path.kir -> path.bin (the sidecar with large constants) */
static const char *sidecar_path(Arena *a, const char *kir) {
  return arena_printf(a, "%.*s.bin", (int)(strlen(kir) - 4), kir);
}

static Graph *load_kir(Arena *a, const char *path, Diag *d) {
  size_t len, binlen = 0;
  char *text = (char *)read_file(path, &len, d);
  if (!text)
    return NULL;
  if (memchr(text, 0, len)) {
    free(text);
    diag_error(d, "the file contains a NUL byte; expected .kir text");
    return NULL;
  }
  const char *bpath = sidecar_path(a, path);
  Diag bd = {0};
  FILE *f = fopen(bpath, "rb");
  unsigned char *bin = NULL;
  if (f) {
    fclose(f);
    bin = read_file(bpath, &binlen, &bd);
  }
  Graph *g = kir_parse(a, path, text, bin, binlen, d);
  free(text);
  free(bin);
  return g;
}

Graph *driver_load_opts(Arena *a, const char *path, const LuaOptions *lua, Diag *d) {
  d->file = path;
  progress_status("reading %s", path);
  Graph *g = ends_with(path, ".kir")   ? load_kir(a, path, d)
             : ends_with(path, ".lua") ? dsl_load_model(a, path, lua, d)
             : dsl_is_gguf(path)       ? dsl_load_gguf(a, path, lua, d)
                                       : onnx_import(a, path, d);
  progress_clear();
  return g;
}

Graph *driver_load(Arena *a, const char *path, Diag *d) { return driver_load_opts(a, path, NULL, d); }

bool driver_write_kir(Graph *g, const char *path, Diag *d) {
  Buf text = {0}, bin = {0};
  ir_print(&text, g, &bin);
  bool ok = write_file_atomic(path, text.s, text.len, d);
  if (ok && bin.len)
    ok = write_file_atomic(sidecar_path(g->arena, path), bin.s, bin.len, d);
  if (!ok)
    remove(path);
  buf_free(&text);
  buf_free(&bin);
  return ok;
}

static void dump(const Graph *g, const char *when, const char *pass) {
  Buf b = {0};
  progress_clear();
  printf("# ---- IR %s %s ----\n", when, pass);
  ir_print(&b, g, NULL);
  fputs(b.s, stdout);
  buf_free(&b);
}

/* --passes names passes; `fuse` stands for every fuse_* pass (what one
 * pass did before the fusions were listed one by one). */
static bool wanted(const char *list, const char *name) {
  if (!list)
    return true;
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if ((len == n && !strncmp(p, name, n)) || (len == 4 && !strncmp(p, "fuse", 4) && !strncmp(name, "fuse_", 5)))
      return true;
    p += len + (end ? 1 : 0);
  }
  return false;
}

/* Every value a node makes has a type: inferred, or read from a typed .kir. */
static bool graph_typed(const Graph *g) {
  for (int i = 0; i < g->nnodes; i++)
    for (int j = 0; j < g->nodes[i].nout; j++)
      if (g->nodes[i].out[j] >= 0 && gval(g, g->nodes[i].out[j])->type.rank < 0)
        return false;
  return true;
}

/* --passes: known names, in the order the passes run (`kiln passes`),
 * each once; and on an untyped graph, no pass after infer without infer
 * (they read every value's shape). */
static bool check_pass_list(const Graph *g, const char *list, Diag *d) {
  int prev_last = -1, infer = pass_find("infer") ? (int)(pass_find("infer") - pass_list) : 0;
  const char *prev = "";
  for (const char *p = list; *p;) {
    const char *end = strchr(p, ',');
    int len = end ? (int)(end - p) : (int)strlen(p), first = -1, last = -1;
    for (int i = 0; i < pass_count; i++)
      if (((int)strlen(pass_list[i].name) == len && !strncmp(pass_list[i].name, p, (size_t)len)) ||
          (len == 4 && !strncmp(p, "fuse", 4) && !strncmp(pass_list[i].name, "fuse_", 5)))
        last = i, first = first < 0 ? i : first;
    if (first < 0)
      return diag_error(d, "--passes: unknown pass '%.*s'; expected names from `kiln passes`", len, p);
    if (first <= prev_last) {
      bool twice = !strncmp(prev, p, (size_t)len) && !prev[len];
      return diag_error(d, "--passes=%s: '%.*s' is listed %s; expected each pass once, in the order "
                        "they run (`kiln passes` lists it)", list, len, p,
                        twice ? "twice" : arena_printf(g->arena, "after '%s', but runs before it", prev));
    }
    if (first > infer && !wanted(list, "infer") && !graph_typed(g))
      return diag_error(d, "--passes=%s: '%.*s' needs every value's type and shape, which the "
                        "infer pass gives; expected infer in the list (e.g. --passes=bind,infer,%.*s)",
                        list, len, p, len, p);
    prev_last = last, prev = arena_printf(g->arena, "%.*s", len, p);
    p += len + (end ? 1 : 0);
  }
  return true;
}

bool driver_lower(Graph *g, const PipelineOptions *o, Diag *d) {
  if (o->passes && !check_pass_list(g, o->passes, d))
    return false;
  const char *const dumps[2] = {o->dump_after, o->dump_before}, *const flags[2] = {"--dump-after", "--dump-before"};
  for (int k = 0; k < 2; k++) {
    const Pass *p = dumps[k] && strcmp(dumps[k], "all") ? pass_find(dumps[k]) : NULL;
    if (dumps[k] && strcmp(dumps[k], "all") && !p)
      return diag_error(d, "%s=%s: unknown pass; expected a name from `kiln passes` or 'all'", flags[k], dumps[k]);
    if (p && !pass_runs(p, &o->pass))
      return diag_error(d, "%s=%s: that pass runs only with %s; expected %s too", flags[k], dumps[k],
                        pass_option(p), pass_option(p));
  }
  for (int i = 0; i < pass_count && o->passes; i++)
    if (pass_option(&pass_list[i]) && pass_runs(&pass_list[i], &o->pass) && !wanted(o->passes, pass_list[i].name))
      return diag_error(d, "--passes=%s: leaves out %s, the pass %s asks for; expected it in the list", o->passes,
                        pass_list[i].name, pass_option(&pass_list[i]));
  int step = 0, nrun = 0, total = 0; /* passes run, and to run (progress) */
  int typed_after = (int)(pass_find("bind") - pass_list); /* after bind, infer gives every value a type */
  for (int i = 0; i < pass_count && !(o->stop_before_plan && !strcmp(pass_list[i].name, "plan")); i++)
    total += wanted(o->passes, pass_list[i].name) && pass_runs(&pass_list[i], &o->pass);
  if (o->dump_dir) {
    if (!make_dirs(o->dump_dir, d)) /* an existing folder is fine */
      return false;
    if (!driver_write_kir(g, arena_printf(g->arena, "%s/00-import.kir", o->dump_dir), d))
      return false;
  }
  for (int i = 0; i < pass_count; i++) {
    const Pass *p = &pass_list[i];
    if (!wanted(o->passes, p->name) || !pass_runs(p, &o->pass))
      continue;
    if (o->stop_before_plan && !strcmp(p->name, "plan"))
      break;
    if (o->dump_before && (!strcmp(o->dump_before, p->name) || !strcmp(o->dump_before, "all")))
      dump(g, "before", p->name);
    g->planned = false;
    progress_pass(++nrun, total, p->name);
    if (!p->fn(g, &o->pass, d) || (o->verify_each && !graph_verify(g, i > typed_after, d))) {
      progress_clear();
      return false;
    }
    if (o->dump_after && (!strcmp(o->dump_after, p->name) || !strcmp(o->dump_after, "all")))
      dump(g, "after", p->name);
    if (o->dump_dir) {
      const char *path = arena_printf(g->arena, "%s/%02d-%s.kir", o->dump_dir, ++step, p->name);
      if (!driver_write_kir(g, path, d)) {
        progress_clear();
        return false;
      }
    }
  }
  progress_passes_done(nrun);
  return true;
}

bool driver_write_c(Graph *g, const EmitOptions *eo, const char *out_c, Diag *d) {
  Buf c = {0}, h = {0};
  WeightsBlob blob = {0};
  progress_status("writing C");
  bool ok = emit_c(g, eo, &c, &h, &blob, d);
  progress_clear();
  const char *slash = strrchr(out_c, '/');
  size_t dirlen = slash ? (size_t)(slash - out_c + 1) : 0;
  /* out/net.c: out/net.h, out/kiln_rt.h and, with a blob, out/net.weights.bin
   * and out/net_weights.S */
  const char *stem = arena_printf(g->arena, "%.*s", (int)(strlen(out_c) - 2), out_c);
  const char *stem_base = stem + dirlen;
  char *hpath = arena_printf(g->arena, "%.*s%s", (int)dirlen, out_c, eo->header);
  char *rtpath = arena_printf(g->arena, "%.*skiln_rt.h", (int)dirlen, out_c);
  char *binpath = arena_printf(g->arena, "%s.weights.bin", stem);
  char *spath = arena_printf(g->arena, "%s_weights.S", stem);
  const char *rt = template_text("kiln_rt.h");
  Diag wd = {0};
  if (ok && blob.size) {
    char *asm_text = blob_asm_source(arena_printf(g->arena, "%s_weights_blob", eo->prefix),
                                     arena_printf(g->arena, "%s.weights.bin", stem_base), eo->prefix);
    ok = blob_write(&blob, binpath, &wd) && write_file_atomic(spath, asm_text, strlen(asm_text), &wd);
    free(asm_text);
  }
  if (ok && blob.size)
    progress_wrote(binpath, blob.size);
  /* weights inline now: a blob an earlier compile left for this stem would
   * be linked by a build that globs the folder, so it goes */
  for (int i = 0; ok && !blob.size && i < 2; i++) {
    const char *stale = i ? spath : binpath;
    if (access(stale, F_OK) == 0 && remove(stale) == 0 && !eo->quiet)
      fprintf(stderr, "kiln: removed %s, left by an earlier compile with --weights-mode=blob (the weights are "
              "inline now)\n", stale);
  }
  ok = ok && write_file_atomic(hpath, h.s, h.len, &wd) && write_file_atomic(rtpath, rt, strlen(rt), &wd) &&
       write_file_atomic(out_c, c.s, c.len, &wd);
  if (ok)
    progress_wrote(out_c, c.len);
  if (!ok && wd.failed) {
    remove(hpath);
    remove(out_c);
    if (blob.size) {
      remove(binpath);
      remove(spath);
    }
    diag_error(d, "%s", wd.msg);
  }
  blob_free(&blob);
  buf_free(&c);
  buf_free(&h);
  return ok;
}

static bool blob_written(Arena *a, const char *dir) {
  struct stat st;
  return stat(arena_printf(a, "%s/model_weights.S", dir), &st) == 0;
}

const char *driver_blob_sources(Arena *a, const char *dir) {
  return blob_written(a, dir) ? arena_printf(a, " -I'%s' '%s/model_weights.S'", dir, dir) : "";
}

const char *driver_blob_bind(Arena *a, const char *dir) {
  return blob_written(a, dir) ? "  if (model_bind_linked_weights() != KILN_OK) return 3;\n" : "";
}

/* Graph inputs that fix shapes (Reshape's shape, TopK's K, ...), directly
 * or through arithmetic on them, cannot be run-time inputs of fixed-shape C:
 * take their values from the data set and compile them in as constants. */
void driver_freeze_shape_inputs(Graph *g, Tensor *in, int *nin) {
  /* mark values feeding const slots, then everything upstream of them */
  bool *feeds = calloc((size_t)g->nvals + 1, 1);
  for (int n = 0; n < g->nnodes; n++)
    for (int j = 0; j < g->nodes[n].nin; j++)
      if (g->nodes[n].in[j] >= 0 && (op_table[g->nodes[n].op].const_in >> j & 1))
        feeds[g->nodes[n].in[j]] = true;
  for (int n = g->nnodes - 1; n >= 0; n--) { /* reverse topological order */
    const Node *nd = &g->nodes[n];
    bool any = false;
    for (int j = 0; j < nd->nout; j++)
      any = any || (nd->out[j] >= 0 && feeds[nd->out[j]]);
    if (nd->op == OP_SHAPE || nd->op == OP_SIZE)
      continue; /* they read only the input's shape, never its values */
    for (int j = 0; any && j < nd->nin; j++)
      if (nd->in[j] >= 0)
        feeds[nd->in[j]] = true;
  }
  int k = 0;
  for (int i = 0; i < g->ninputs; i++) {
    int vid = g->inputs[i];
    if (feeds[vid] && i < *nin && !g->vals[vid].is_state) { /* a state stays an input */
      g->vals[vid].data = in[i].data;
      g->vals[vid].type = in[i].type;
      g->vals[vid].is_input = false;
      continue;
    }
    g->inputs[k] = vid;
    if (i < *nin)
      in[k] = in[i];
    k++;
  }
  free(feeds);
  *nin -= g->ninputs - k;
  g->ninputs = k;
}

const char *driver_compile_flags(Arena *a, int threads, EmitGemm gemm) {
  struct stat st;
  bool openblas_dir = stat("/usr/include/openblas/cblas.h", &st) == 0;
  return arena_printf(a, "%s%s", threads > 1 ? " -pthread" : "",
                      gemm == GEMM_OPENBLAS && openblas_dir ? " -I/usr/include/openblas" : "");
}

const char *driver_extra_flags(Arena *a, int threads, EmitGemm gemm) {
  return arena_printf(a, "%s%s", driver_compile_flags(a, threads, gemm),
                      gemm == GEMM_OPENBLAS ? " -lopenblas" : "");
}

const char *const driver_io_source =
    "static void *load(const char *p, size_t n) {\n"
    "  void *m = calloc(n + 64, 1);\n  FILE *f = fopen(p, \"rb\");\n"
    "  if (!m || !f || fread(m, 1, n, f) != n) { fprintf(stderr, \"cannot read %s\\n\", p); exit(2); }\n"
    "  fclose(f);\n  return m;\n}\n\n"
    "static void save(const char *p, const void *m, size_t n) {\n"
    "  FILE *f = fopen(p, \"wb\");\n"
    "  if (!f || fwrite(m, 1, n, f) != n) { fprintf(stderr, \"cannot write %s\\n\", p); exit(2); }\n"
    "  fclose(f);\n}\n\n";

bool driver_not_decoder(const Graph *g, const char *cmd, Diag *d) {
  if (!g->decoder)
    return true;
  return diag_error(d, "a generative model (decoder{}): its C has NAME_prefill and NAME_step, not the "
                       "NAME_run that kiln %s calls; expected a model without decoder{} (run a decoder "
                       "through an app: examples/generate.c, bench/decode.sh)", cmd);
}
