/* check.c — `kiln check DIR`: verify a compiled model against reference
 * data in the ONNX backend-test layout (model.onnx or model.kir, test_data_set_N/
 * input_K.pb and output_K.pb, or .npy files). For each data set: import, bind the input
 * shapes, lower, emit C, build it with the system compiler, run it on the
 * inputs, and compare every output (numpy's allclose rule:
 * |got - want| <= atol + rtol * |want|, NaN equal to NaN; for f16/bf16
 * outputs at least one ulp of the type, see half_ulp). With --interp the
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
#include "../frontend/npy.h"
#include "../ir/ops.h"

typedef struct DataSet {
  int nin, nout;
  Tensor in[64], out[64];
  const char *in_path[64], *out_path[64]; /* the files, for errors */
} DataSet;

static bool exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

/* dir/STEM_K.pb or dir/STEM_K.npy into *path (NULL when neither is
 * there); false + d when both are. */
static bool data_file(Arena *a, const char *dir, const char *stem, int k, const char **path, Diag *d) {
  const char *pb = arena_printf(a, "%s/%s_%d.pb", dir, stem, k);
  const char *npy = arena_printf(a, "%s/%s_%d.npy", dir, stem, k);
  bool has_pb = exists(pb), has_npy = exists(npy);
  *path = has_pb ? pb : has_npy ? npy : NULL;
  if (has_pb && has_npy) {
    d->file = npy;
    return diag_error(d, "%s_%d.pb is there too; expected one file per %s", stem, k, stem);
  }
  return true;
}

/* The data set's files input_K and output_K, each .pb or .npy, counted
 * from 0 to the first gap. */
static bool load_set(Arena *a, const char *dir, DataSet *ds, Diag *d) {
  ds->nin = ds->nout = 0;
  for (int k = 0; k < 64; k++) {
    const char *p;
    if (!data_file(a, dir, "input", k, &p, d))
      return false;
    if (!p)
      break;
    ds->in_path[ds->nin] = p;
    if (!tensor_file_read(a, p, &ds->in[ds->nin++], d))
      return false;
  }
  for (int k = 0; k < 64; k++) {
    const char *p;
    if (!data_file(a, dir, "output", k, &p, d))
      return false;
    if (!p)
      break;
    ds->out_path[ds->nout] = p;
    if (!tensor_file_read(a, p, &ds->out[ds->nout++], d))
      return false;
  }
  return true;
}

/* Each reference output has the type the model gives that output, before
 * anything is built: a wrong file is bad input, not a numerical FAIL. */
static bool outputs_fit(const Graph *g, const DataSet *ds, Diag *d) {
  for (int i = 0; i < g->noutputs; i++) {
    const Value *v = gval(g, g->outputs[i]);
    char x[160], y[160];
    if (!type_equal(&ds->out[i].type, &v->type)) {
      d->file = ds->out_path[i];
      return diag_error(d, "%s for output '%s'; expected %s (the model's output %d)",
                        type_str(&ds->out[i].type, x, sizeof x), v->name,
                        type_str(&v->type, y, sizeof y), i);
    }
  }
  return true;
}

/* One unit in the last place of y in the half type dt: references differ
 * in how they round to a half (ONNX 1.12's test data truncates f32 to
 * bf16; kiln, PyTorch and ONNX Runtime round to nearest even), and a half
 * has fewer digits than rtol 1e-4 asks of it. */
static double half_ulp(DType dt, double y) {
  int e;
  frexp(y, &e); /* |y| = m * 2^e, m in [0.5, 1): the binade is 2^(e-1) */
  if (dt == DT_BF16)
    return ldexp(1, (e - 1 < -126 ? -126 : e - 1) - 7);
  return ldexp(1, (e - 1 < -14 ? -14 : e - 1) - 10);
}

/* The cosine of got and want and the RMS of their difference (float
 * outputs): what int8 rounding is judged by, since two engines' roundings
 * of a quantized model differ in a few elements by a step each. */
static void cosine_rms(const Tensor *got, const Tensor *want, double *cosine, double *rms) {
  int64_t n = type_numel(&want->type);
  double se = 0, sw = 0, sg = 0, dot = 0;
  for (int64_t i = 0; i < n; i++) {
    double x = el_get_f(got->type.dt, got->data, i), y = el_get_f(want->type.dt, want->data, i);
    se += (x - y) * (x - y), sw += y * y, sg += x * x, dot += x * y;
  }
  *rms = sqrt(se / (double)(n ? n : 1));
  *cosine = sw > 0 && sg > 0 ? dot / sqrt(sw * sg) : (sw == sg ? 1 : 0);
}

/* With quant (a quantized model, or --min-cosine), float outputs also get
 * their cosine and RMS error, and --min-cosine is a condition. */
static bool compare(const char *set, const char *name, const Tensor *got, const Tensor *want,
                    const CheckOptions *o, bool quant) {
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
        if (dt_is_half(dt) && allowed < half_ulp(dt, y))
          allowed = half_ulp(dt, y);
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
  double cosine = 1, rms = 0;
  bool cos_low = false;
  char qs[96] = "";
  if (quant && dt_is_float(dt)) {
    cosine_rms(got, want, &cosine, &rms);
    cos_low = o->min_cosine != 0 && !(cosine >= o->min_cosine);
    snprintf(qs, sizeof qs, "  rms_err %.3g  cosine %.7f%s", rms, cosine, cos_low ? " (below --min-cosine)" : "");
  }
  if (!o->quiet || bad || cos_low)
    printf("  %s  %-20s %-16s max_abs_err %.3g  max_rel_err %.3g%s  (%.0f%% of tolerance)  %s\n",
           set, name, type_str(&got->type, a, sizeof a), max_abs, max_rel, qs, 100 * max_tol,
           bad || cos_low ? "FAIL" : "ok");
  if (bad && dt_is_float(dt))
    printf("    %lld of %lld elements differ; first at %lld: got %.9g, expected %.9g\n",
           (long long)bad, (long long)n, (long long)worst, el_get_f(dt, got->data, worst),
           el_get_f(dt, want->data, worst));
  else if (bad)
    printf("    %lld of %lld elements differ; first at %lld: got %lld, expected %lld\n",
           (long long)bad, (long long)n, (long long)worst,
           (long long)el_get_i(dt, got->data, worst), (long long)el_get_i(dt, want->data, worst));
  return bad == 0 && !cos_low;
}

/* g computes with quantized numbers: an 8-bit value (an int8 weight, a
 * DynamicQuantizeLinear's u8) or ggml blocks, beside float outputs. */
static bool graph_quantized(const Graph *g) {
  for (int v = 0; v < g->nvals; v++)
    if (!g->vals[v].is_input && (g->vals[v].type.dt == DT_I8 || g->vals[v].type.dt == DT_U8))
      return true;
  return false;
}

static bool write_raw(const char *path, const Tensor *t, Diag *d) {
  return write_file_atomic(path, t->data, type_bytes(&t->type), d);
}

static const char *driver_source(Arena *a, Graph *g, const char *dir) {
  Buf b = {0};
  buf_puts(&b, "/* check driver generated by kiln check */\n#include <stdio.h>\n#include <stdlib.h>\n"
               "#include <string.h>\n#include \"model.h\"\n\n");
  buf_puts(&b, driver_io_source);
  buf_puts(&b, "int main(int argc, char **argv) {\n");
  buf_printf(&b, "  (void)load; /* a model may have no inputs */\n  if (argc != %d) return 2;\n",
             1 + g->ninputs + g->noutputs);
  buf_puts(&b, driver_blob_bind(a, dir));
  for (int i = 0; i < g->ninputs; i++)
    buf_printf(&b, "  void *in%d = load(argv[%d], %zu);\n", i, 1 + i,
               type_bytes(&g->vals[g->inputs[i]].type));
  for (int i = 0; i < g->noutputs; i++)
    buf_printf(&b, "  void *out%d = calloc(%zu, 1);\n", i, type_bytes(&g->vals[g->outputs[i]].type) + 64);
  buf_printf(&b, "  %s\n", emit_run_call(g, "model"));
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
  EmitOptions eo = {.prefix = "model", .source = g->file, .header = "model.h", .isa = o->isa,
                    .threads = o->threads, .gemm = o->gemm, .precision = o->precision, .weights = o->weights,
                    .unroll_layers = o->unroll_layers};
  char *cpath = arena_printf(a, "%s/model.c", tmp);
  if (!driver_write_c(g, &eo, cpath, d))
    return false;
  const char *drv = driver_source(a, g, tmp);
  char *dpath = arena_printf(a, "%s/driver.c", tmp);
  if (!write_file_atomic(dpath, drv, strlen(drv), d))
    return false;
  char *cmd = arena_printf(a, "%s -std=c99 %s -Wall -Wextra -Werror -o '%s/prog' '%s' '%s'%s -lm%s",
                           o->cc, o->cflags, tmp, cpath, dpath, driver_blob_sources(a, tmp),
                           driver_extra_flags(a, o->threads, o->gemm));
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

/* --model FILE, else DIR/model.onnx, else DIR/model.kir (text IR, which
 * can hold kiln's own ops), else DIR/model.lua; the .onnx name when none
 * exists, for the error. */
static const char *model_path(Arena *a, const char *dir, const CheckOptions *o) {
  if (o->model)
    return o->model;
  static const char *const names[] = {"model.onnx", "model.kir", "model.lua"};
  for (int i = 0; i < KILN_COUNT(names); i++) {
    const char *p = arena_printf(a, "%s/%s", dir, names[i]);
    if (exists(p))
      return p;
  }
  return arena_printf(a, "%s/model.onnx", dir);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- ONNX 1.12's bfloat16 test data ----------------------------------------
 * numpy has no bfloat16, so ONNX 1.12's generator wrote bfloat16 tensors as
 * uint16 (the same bit patterns), and for CastLike it declared the 'like'
 * input with the data input's shape while writing a 1-element tensor. kiln
 * check reads such data as what the model declares: a u16 tensor where the
 * model has bf16 is taken as bf16, and an input whose values no node reads
 * (unused, or only CastLike's type operand) takes the model's declared
 * shape, zero-filled, when its data disagrees. */
static void bf16_as_stored(Tensor *t, DType model_dt) {
  if (t->type.dt == DT_U16 && model_dt == DT_BF16)
    t->type.dt = DT_BF16;
}

static bool values_read(const Graph *g, int vid) {
  for (int i = 0; i < g->nnodes; i++)
    for (int j = 0; j < g->nodes[i].nin; j++)
      if (g->nodes[i].in[j] == vid && !(g->nodes[i].op == OP_CASTLIKE && j == 1))
        return true;
  return false;
}

static void adapt_inputs(Arena *a, const Graph *g, DataSet *ds) {
  for (int i = 0; i < g->ninputs && i < ds->nin; i++) {
    const Value *v = gval(g, g->inputs[i]);
    Tensor *t = &ds->in[i];
    bf16_as_stored(t, v->type.dt);
    if (values_read(g, g->inputs[i]) || type_equal(&t->type, &v->type) || v->type.rank < 0 ||
        !type_size_ok(&v->type))
      continue;
    t->type = v->type;
    t->data = arena_alloc(a, type_bytes(&v->type) + 1); /* zeroed */
  }
}


/* ---- --quantize: errors against the f32 model ------------------------------- */

/* got against want (same type, f32): max |diff| and RMS diff, both over
 * want's RMS, and the cosine of the two. */
typedef struct Err {
  double max, rms, cosine;
} Err;

static Err rel_err(const Tensor *got, const Tensor *want) {
  int64_t n = type_numel(&want->type);
  double se = 0, sw = 0, sg = 0, dot = 0, emax = 0;
  for (int64_t i = 0; i < n; i++) {
    double x = el_get_f(got->type.dt, got->data, i), y = el_get_f(want->type.dt, want->data, i);
    emax = fmax(emax, fabs(x - y));
    se += (x - y) * (x - y), sw += y * y, sg += x * x, dot += x * y;
  }
  double rms = sqrt(sw / (double)(n ? n : 1));
  rms = rms > 0 ? rms : 1;
  return (Err){emax / rms, sqrt(se / (double)(n ? n : 1)) / rms,
               sw > 0 && sg > 0 ? dot / sqrt(sw * sg) : (sw == sg ? 1 : 0)};
}

/* Quantized node `qn` of gq evaluated on the f32 model's values of its
 * inputs (its own error, without what earlier layers added), into *out. */
static bool eval_on_f32(Graph *gq, const Node *qn, Graph *gf, const Tensor *fv, Tensor *out, Diag *d) {
  Tensor in[8];
  for (int j = 0; j < qn->nin && j < 8; j++) {
    int v = qn->in[j];
    in[j] = (Tensor){{0}, NULL};
    if (v < 0)
      continue;
    int f = gval(gq, v)->data ? -1 : graph_find_value(gf, gval(gq, v)->name);
    if (!gval(gq, v)->data && f < 0)
      return false;
    in[j] = f < 0 ? (Tensor){gval(gq, v)->type, gval(gq, v)->data} : fv[f];
  }
  out->type = gval(gq, qn->out[0])->type;
  out->data = arena_alloc(gq->arena, type_bytes(&out->type) + 1);
  return op_table[qn->op].eval(qn, in, out, d);
}

/* The report of --quantize: per quantized layer, its output against the
 * f32 model's same output on this data (own: on the f32 model's inputs of
 * the layer; cumulative: in the int8 model, earlier layers' errors
 * included), then each model output, got (the generated C or the
 * interpreter, int8) against the f32 model's. Both models run in the
 * interpreter; `in` are the data set's inputs before any were frozen. */
static bool quant_errors(Arena *a, const char *model, const char *set, Graph *gq, const QuantReport *qr,
                         const Tensor *in0, int nin0, const Tensor *got, const CheckOptions *o, Diag *d) {
  Tensor *in = arena_dup(a, in0, sizeof(Tensor) * (size_t)(nin0 + 1));
  int nin = nin0;
  Graph *gf = driver_load_opts(a, model, o->pipe.lua, d);
  if (!gf)
    return false;
  driver_freeze_shape_inputs(gf, in, &nin);
  PipelineOptions po = o->pipe;
  ShapeBinding *sb = arena_alloc(a, sizeof(ShapeBinding) * (size_t)(gf->ninputs + 1));
  for (int i = 0; i < gf->ninputs; i++) {
    sb[i].name = gval(gf, gf->inputs[i])->name;
    sb[i].rank = in[i].type.rank;
    memcpy(sb[i].dims, in[i].type.dims, sizeof sb[i].dims);
  }
  po.pass.shapes = sb, po.pass.nshapes = gf->ninputs;
  po.pass.quantize = QUANT_NONE, po.pass.quant_report = NULL, po.pass.verbose = false;
  po.stop_before_plan = true, po.dump_after = po.dump_before = po.dump_dir = NULL;
  Tensor *fv, *qv;
  if (!driver_lower(gf, &po, d) || !interp_values(gf, in, &fv, d) || !interp_values(gq, in, &qv, d))
    return false;
  printf("  %s  int8 layers: output error against the f32 model, over the f32 output's RMS\n", set);
  printf("        %-10s %-10s %-10s %-10s  %s\n", "own max", "own RMS", "cum max", "cum RMS", "layer");
  for (int i = 0; i < qr->n; i++) {
    const QuantLayer *l = &qr->layers[i];
    int vq = graph_find_value(gq, l->out), vf = graph_find_value(gf, l->out);
    if (vq < 0 || vf < 0 || gval(gq, vq)->producer < 0 || !type_equal(&qv[vq].type, &fv[vf].type))
      continue;
    Tensor own;
    Diag ed = {0};
    Err c = rel_err(&qv[vq], &fv[vf]), w = {NAN, NAN, NAN};
    if (eval_on_f32(gq, &gq->nodes[gval(gq, vq)->producer], gf, fv, &own, &ed))
      w = rel_err(&own, &fv[vf]);
    printf("        %-10.3g %-10.3g %-10.3g %-10.3g  %s %s\n", w.max, w.rms, c.max, c.rms, l->op, l->node);
  }
  printf("  %s  outputs (%s, int8) against the f32 model\n", set, o->interp ? "interpreter" : "generated C");
  for (int k = 0; k < gq->noutputs && k < gf->noutputs; k++) {
    const Tensor *want = &fv[gf->outputs[k]];
    if (!dt_is_float(want->type.dt) || !type_equal(&got[k].type, &want->type))
      continue;
    Err e = rel_err(&got[k], want);
    printf("        %-20s max %.3g  RMS %.3g (of its RMS)  cosine %.6f\n", gval(gq, gq->outputs[k])->name,
           e.max, e.rms, e.cosine);
  }
  return true;
}

/* The heading, once, before the first result (a data set that is bad
 * input ends kiln check with one error line and nothing on stdout). */
static void say_heading(const char *dir, const CheckOptions *o, bool *said) {
  if (!*said && !o->quiet)
    printf("kiln check %s (%s)\n", dir, o->interp ? "interpreter" : "generated C");
  *said = true;
}

/* One data set; false + d (its file in a buffer that outlives the set's
 * arena) for bad input or a failed build, false alone for a mismatch. */
static bool check_set(const char *dir, const char *set, const char *tmp, const CheckOptions *o,
                      bool *said, Diag *d) {
  Arena *a = arena_new();
  bool ok = false;
  DataSet *ds = arena_alloc(a, sizeof *ds);
  const char *model = model_path(a, dir, o);
  const char *setdir = arena_printf(a, "%s/%s", dir, set);
  Graph *g = NULL;
  /* the model first: a model kiln refuses (a sequence or optional input,
   * say) is the error to report, not its data files, which are then
   * SequenceProto or OptionalProto messages that no TensorProto reading
   * can make sense of */
  if (!(g = driver_load_opts(a, model, o->pipe.lua, d)) || !driver_not_decoder(g, "check", d) ||
      !load_set(a, setdir, ds, d))
    goto done;
  if (ds->nin != g->ninputs) {
    d->file = setdir;
    diag_error(d, "%d input files (input_K.pb or .npy); expected %d, one per model input",
               ds->nin, g->ninputs);
    goto done;
  }
  adapt_inputs(a, g, ds);
  for (int i = 0; i < g->ninputs; i++)
    if (values_read(g, g->inputs[i]) &&
        !tensor_file_fits_input(ds->in_path[i], &ds->in[i], gval(g, g->inputs[i]), d))
      goto done;
  Tensor *in0 = arena_dup(a, ds->in, sizeof ds->in); /* before freezing, for quant_errors */
  int nin0 = ds->nin;
  driver_freeze_shape_inputs(g, ds->in, &ds->nin);
  PipelineOptions po = o->pipe;
  QuantReport qr = {0};
  if (po.pass.quantize)
    po.pass.quant_report = &qr;
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
    d->file = setdir;
    diag_error(d, "%d output files (output_K.pb or .npy); expected %d, one per model output",
               ds->nout, g->noutputs);
    goto done;
  }
  for (int i = 0; i < g->noutputs; i++)
    bf16_as_stored(&ds->out[i], g->vals[g->outputs[i]].type.dt);
  if (!outputs_fit(g, ds, d))
    goto done;
  Tensor *got = arena_alloc(a, sizeof(Tensor) * (size_t)(g->noutputs + 1));
  if (o->interp ? !interp_run(g, ds->in, got, d) : !run_compiled(a, g, ds, tmp, o, got, d))
    goto done;
  ok = true;
  say_heading(dir, o, said);
  bool quant = po.pass.quantize || o->min_cosine != 0 || graph_quantized(g);
  for (int i = 0; i < g->noutputs; i++)
    ok = compare(set, g->vals[g->outputs[i]].name, &got[i], &ds->out[i], o, quant) && ok;
  if (po.pass.quantize && !o->quiet) {
    Buf b = {0};
    quant_report_print(&b, &qr);
    printf("  %s  %s", set, b.s ? b.s : "\n");
    buf_free(&b);
    if (!quant_errors(a, model, set, g, &qr, in0, nin0, got, o, d))
      ok = false;
  }
done:
  if (d->failed) { /* the file lived in the arena */
    static char file[4096];
    snprintf(file, sizeof file, "%s", d->file ? d->file : dir);
    d->file = file;
  }
  arena_free(a);
  return ok;
}

int check_dir(const char *dir, const CheckOptions *o) {
  Diag d = {0};
  DIR *dp = opendir(dir);
  if (!dp) {
    d.file = dir;
    diag_error(&d, "cannot open the folder; expected a folder with model.onnx (or model.kir) and "
                   "test_data_set_N/");
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
  bool all = true, said = false, bad_input = false;
  for (int i = 0; i < nsets; i++) {
    Diag sd = {0};
    if (!bad_input && !check_set(dir, sets[i], tmp, o, &said, &sd)) {
      all = false;
      if (sd.failed) { /* bad input: one line, no verdict, no more sets */
        fflush(stdout);
        diag_print(&sd);
        bad_input = true;
      }
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
  if (bad_input)
    return 1;
  printf("%s %s\n", all ? "PASS" : "FAIL", dir);
  return all ? 0 : 1;
}
