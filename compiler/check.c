/* check.c — `kiln check DIR`: verify a compiled model against reference
 * data in the ONNX backend-test layout (model.onnx, test_data_set_N/
 * input_K.pb and output_K.pb). For each data set: import, bind the input
 * shapes, lower, emit C, build it with the system compiler, run it on the
 * inputs, and compare every output (numpy's allclose rule:
 * |got - want| <= atol + rtol * |want|, NaN equal to NaN). With --interp the
 * reference interpreter runs instead of the generated C. This is both a
 * user command and the engine of the conformance suite. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver.h"
#include "onnx.h"
#include "ops.h"

typedef struct DataSet {
  int nin, nout;
  Tensor in[64], out[64];
} DataSet;

static bool exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

static bool load_set(Arena *a, const char *dir, DataSet *ds, Diag *d) {
  ds->nin = ds->nout = 0;
  for (int k = 0; k < 64; k++) {
    char *p = arena_printf(a, "%s/input_%d.pb", dir, k);
    if (!exists(p))
      break;
    if (!onnx_read_tensor(a, p, &ds->in[ds->nin++], NULL, d))
      return false;
  }
  for (int k = 0; k < 64; k++) {
    char *p = arena_printf(a, "%s/output_%d.pb", dir, k);
    if (!exists(p))
      break;
    if (!onnx_read_tensor(a, p, &ds->out[ds->nout++], NULL, d))
      return false;
  }
  return true;
}

/* Graph inputs that fix shapes (Reshape's shape, TopK's K, ...), directly
 * or through arithmetic on them, cannot be run-time inputs of fixed-shape C:
 * take their values from the data set and compile them in as constants. */
static void freeze_shape_inputs(Graph *g, DataSet *ds) {
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
    for (int j = 0; any && j < nd->nin; j++)
      if (nd->in[j] >= 0)
        feeds[nd->in[j]] = true;
  }
  int k = 0;
  for (int i = 0; i < g->ninputs; i++) {
    int vid = g->inputs[i];
    if (feeds[vid] && i < ds->nin) {
      g->vals[vid].data = ds->in[i].data;
      g->vals[vid].type = ds->in[i].type;
      g->vals[vid].is_input = false;
      continue;
    }
    g->inputs[k] = vid;
    if (i < ds->nin)
      ds->in[k] = ds->in[i];
    k++;
  }
  free(feeds);
  ds->nin -= g->ninputs - k;
  g->ninputs = k;
}

static bool compare(const char *set, const char *name, const Tensor *got, const Tensor *want,
                    const CheckOptions *o) {
  char a[128], b[128];
  if (!type_equal(&got->type, &want->type)) {
    printf("  %s  %-20s FAIL: got %s, expected %s\n", set, name,
           type_str(&got->type, a, sizeof a), type_str(&want->type, b, sizeof b));
    return false;
  }
  int64_t n = type_numel(&got->type), bad = 0, worst = -1;
  double max_abs = 0, max_rel = 0, max_tol = 0; /* max_tol: worst |err| / allowed */
  DType dt = got->type.dt;
  for (int64_t i = 0; i < n; i++) {
    bool ok;
    double ea = 0, er = 0;
    if (dt_is_float(dt)) {
      double x = el_get_f(dt, got->data, i), y = el_get_f(dt, want->data, i);
      if (isnan(x) || isnan(y) || isinf(x) || isinf(y)) {
        ok = (isnan(x) && isnan(y)) || x == y;
      } else {
        ea = fabs(x - y);
        er = y != 0 ? ea / fabs(y) : (ea != 0 ? INFINITY : 0);
        double allowed = o->atol + o->rtol * fabs(y);
        ok = ea <= allowed;
        if (allowed > 0 && ea / allowed > max_tol)
          max_tol = ea / allowed;
      }
    } else {
      ok = dt_is_signed_int(dt) ? el_get_i(dt, got->data, i) == el_get_i(dt, want->data, i)
                                : el_get_u(dt, got->data, i) == el_get_u(dt, want->data, i);
      ea = ok ? 0 : 1;
    }
    if (ea > max_abs)
      max_abs = ea;
    if (er > max_rel && isfinite(er))
      max_rel = er;
    if (!ok && bad++ == 0)
      worst = i;
  }
  if (!o->quiet || bad)
    printf("  %s  %-20s %-16s max_abs_err %.3g  max_rel_err %.3g  (%.0f%% of tolerance)  %s\n",
           set, name, type_str(&got->type, a, sizeof a), max_abs, max_rel, 100 * max_tol,
           bad ? "FAIL" : "ok");
  if (bad && dt_is_float(dt))
    printf("    %lld of %lld elements differ; first at %lld: got %.9g, expected %.9g\n",
           (long long)bad, (long long)n, (long long)worst, el_get_f(dt, got->data, worst),
           el_get_f(dt, want->data, worst));
  else if (bad)
    printf("    %lld of %lld elements differ; first at %lld: got %lld, expected %lld\n",
           (long long)bad, (long long)n, (long long)worst,
           (long long)el_get_i(dt, got->data, worst), (long long)el_get_i(dt, want->data, worst));
  return bad == 0;
}

static bool write_raw(const char *path, const Tensor *t, Diag *d) {
  return write_file_atomic(path, t->data, type_bytes(&t->type), d);
}

static const char *driver_source(Arena *a, Graph *g) {
  Buf b = {0};
  buf_puts(&b, "/* check driver generated by kiln check */\n#include <stdio.h>\n#include <stdlib.h>\n"
               "#include \"model.h\"\n\n"
               "static void *load(const char *p, size_t n) {\n"
               "  void *m = calloc(n + 64, 1);\n  FILE *f = fopen(p, \"rb\");\n"
               "  if (!m || !f || fread(m, 1, n, f) != n) { fprintf(stderr, \"cannot read %s\\n\", p); exit(2); }\n"
               "  fclose(f);\n  return m;\n}\n\n"
               "static void save(const char *p, const void *m, size_t n) {\n"
               "  FILE *f = fopen(p, \"wb\");\n"
               "  if (!f || fwrite(m, 1, n, f) != n) { fprintf(stderr, \"cannot write %s\\n\", p); exit(2); }\n"
               "  fclose(f);\n}\n\nint main(int argc, char **argv) {\n");
  buf_printf(&b, "  (void)load; /* a model may have no inputs */\n  if (argc != %d) return 2;\n",
             1 + g->ninputs + g->noutputs);
  for (int i = 0; i < g->ninputs; i++)
    buf_printf(&b, "  void *in%d = load(argv[%d], %zu);\n", i, 1 + i,
               type_bytes(&g->vals[g->inputs[i]].type));
  for (int i = 0; i < g->noutputs; i++)
    buf_printf(&b, "  void *out%d = calloc(%zu, 1);\n", i, type_bytes(&g->vals[g->outputs[i]].type) + 64);
  buf_puts(&b, "  model_run(");
  for (int i = 0; i < g->ninputs + g->noutputs; i++)
    buf_printf(&b, "%s%s%d", i ? ", " : "", i < g->ninputs ? "in" : "out",
               i < g->ninputs ? i : i - g->ninputs);
  buf_puts(&b, ");\n");
  for (int i = 0; i < g->noutputs; i++)
    buf_printf(&b, "  save(argv[%d], out%d, %zu);\n", 1 + g->ninputs + i, i,
               type_bytes(&g->vals[g->outputs[i]].type));
  for (int i = 0; i < g->ninputs; i++)
    buf_printf(&b, "  free(in%d);\n", i);
  for (int i = 0; i < g->noutputs; i++)
    buf_printf(&b, "  free(out%d);\n", i);
  buf_puts(&b, "  return 0;\n}\n");
  char *r = arena_strdup(a, b.s);
  buf_free(&b);
  return r;
}

/* Compile g to C in tmp, build, run on ds; outputs land in got[]. */
static bool run_compiled(Arena *a, Graph *g, DataSet *ds, const char *tmp, const CheckOptions *o,
                         Tensor *got, Diag *d) {
  EmitOptions eo = {.prefix = "model", .source = g->file, .header = "model.h"};
  char *cpath = arena_printf(a, "%s/model.c", tmp);
  if (!driver_write_c(g, &eo, cpath, d))
    return false;
  const char *drv = driver_source(a, g);
  char *dpath = arena_printf(a, "%s/driver.c", tmp);
  if (!write_file_atomic(dpath, drv, strlen(drv), d))
    return false;
  char *cmd = arena_printf(a, "%s -std=c99 %s -Wall -Wextra -Werror -o '%s/prog' '%s' '%s' -lm",
                           o->cc, o->cflags, tmp, cpath, dpath);
  if (system(cmd) != 0)
    return diag_error(d, "the generated C did not build (command: %s)", cmd);
  Buf run = {0};
  buf_printf(&run, "'%s/prog'", tmp);
  for (int i = 0; i < g->ninputs; i++) {
    char *p = arena_printf(a, "%s/in%d.bin", tmp, i);
    if (!write_raw(p, &ds->in[i], d)) {
      buf_free(&run);
      return false;
    }
    buf_printf(&run, " '%s'", p);
  }
  for (int i = 0; i < g->noutputs; i++)
    buf_printf(&run, " '%s/out%d.bin'", tmp, i);
  int rc = system(run.s);
  buf_free(&run);
  if (rc != 0)
    return diag_error(d, "the generated program failed (status %d)", rc);
  for (int i = 0; i < g->noutputs; i++) {
    size_t len;
    got[i].type = g->vals[g->outputs[i]].type;
    got[i].data = read_file(arena_printf(a, "%s/out%d.bin", tmp, i), &len, d);
    if (!got[i].data)
      return false;
    void *copy = arena_dup(a, got[i].data, len);
    free(got[i].data);
    got[i].data = copy;
  }
  return true;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool check_set(const char *dir, const char *set, const char *tmp, const CheckOptions *o,
                      Diag *d) {
  Arena *a = arena_new();
  bool ok = false;
  DataSet *ds = arena_alloc(a, sizeof *ds);
  const char *model = arena_printf(a, "%s/model.onnx", dir);
  Graph *g = NULL;
  if (!load_set(a, arena_printf(a, "%s/%s", dir, set), ds, d) || !(g = driver_load(a, model, d)))
    goto done;
  if (ds->nin != g->ninputs) {
    diag_error(d, "%s has %d inputs; the model has %d", set, ds->nin, g->ninputs);
    goto done;
  }
  freeze_shape_inputs(g, ds);
  PipelineOptions po = o->pipe;
  ShapeBinding *sb = arena_alloc(a, sizeof(ShapeBinding) * (size_t)(g->ninputs + 1));
  for (int i = 0; i < g->ninputs; i++) {
    sb[i].name = g->vals[g->inputs[i]].name;
    sb[i].rank = ds->in[i].type.rank;
    memcpy(sb[i].dims, ds->in[i].type.dims, sizeof sb[i].dims);
  }
  po.pass.shapes = sb;
  po.pass.nshapes = g->ninputs;
  po.stop_before_plan = o->interp;
  if (!driver_lower(g, &po, d))
    goto done;
  if (ds->nout != g->noutputs) {
    diag_error(d, "%s has %d outputs; the model has %d", set, ds->nout, g->noutputs);
    goto done;
  }
  Tensor *got = arena_alloc(a, sizeof(Tensor) * (size_t)(g->noutputs + 1));
  if (o->interp ? !interp_run(g, ds->in, got, d) : !run_compiled(a, g, ds, tmp, o, got, d))
    goto done;
  ok = true;
  for (int i = 0; i < g->noutputs; i++)
    ok = compare(set, g->vals[g->outputs[i]].name, &got[i], &ds->out[i], o) && ok;
done:
  d->file = dir; /* the model path lived in the arena */
  arena_free(a);
  return ok;
}

int check_dir(const char *dir, const CheckOptions *o) {
  Diag d = {0};
  DIR *dp = opendir(dir);
  if (!dp) {
    d.file = dir;
    diag_error(&d, "cannot open the folder; expected a folder with model.onnx and test_data_set_N/");
    diag_print(&d);
    return 1;
  }
  char *sets[256];
  int nsets = 0;
  for (struct dirent *de; (de = readdir(dp)) != NULL && nsets < 256;)
    if (!strncmp(de->d_name, "test_data_set_", 14))
      sets[nsets++] = strdup(de->d_name);
  closedir(dp);
  qsort(sets, (size_t)nsets, sizeof *sets, cmp_str);
  if (nsets == 0) {
    d.file = dir;
    diag_error(&d, "no test_data_set_N folders; expected the ONNX backend-test layout");
    diag_print(&d);
    return 1;
  }
  char tmp[] = "/tmp/kiln-check-XXXXXX";
  if (!o->interp && !mkdtemp(tmp)) {
    fprintf(stderr, "kiln: cannot create a temporary folder\n");
    return 1;
  }
  if (!o->quiet)
    printf("kiln check %s (%s)\n", dir, o->interp ? "interpreter" : "generated C");
  bool all = true;
  for (int i = 0; i < nsets; i++) {
    Diag sd = {0};
    if (!check_set(dir, sets[i], tmp, o, &sd)) {
      all = false;
      if (sd.failed)
        diag_print(&sd);
    }
    free(sets[i]);
  }
  if (!o->interp && !o->keep) {
    char *cmd = malloc(strlen(tmp) + 16);
    sprintf(cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
      fprintf(stderr, "kiln: could not remove %s\n", tmp);
    free(cmd);
  } else if (o->keep) {
    printf("  build folder kept: %s\n", tmp);
  }
  printf("%s %s\n", all ? "PASS" : "FAIL", dir);
  return all ? 0 : 1;
}
