/* emit_file.c — a planned Graph into model.h (the documented API) and
 * model.c: weights, then the kernels (emit_kernel.h), then one run function
 * that reads like a hand-written forward pass — a call per node, every
 * buffer named after the model's own tensors, its shape beside it. This
 * file owns naming, the weights (inline or blob), the workspace layout and
 * a stateful model's state struct. Output is deterministic: same graph,
 * same bytes. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/c_text.h"
#include "cnames.h"
#include "emit.h"
#include "emit_api.h"
#include "emit_file.h"
#include "emit_kernel.h"
#include "../ir/ops.h"
#include "tokenizer.h"
#include "weights_blob.h"


/* The name of entry point k's kiln_adapt (a decoder's entries, or run). */
const char *emit_adapt_name(const Graph *g, int k) {
  return arena_printf(g->arena, "kiln_adapt_%s", g->decoder ? g->decoder->entries[k].name : "run");
}

/* The .c file's threads block (--threads N > 1): see emit.h. Each entry
 * point times its calls and runs its loops on one thread when that is
 * faster (another process holding a core: kiln_rt.h, kiln_adapt). */
static void put_parallel_macro(Buf *c, const Graph *g, int threads) {
  buf_printf(c, "/* --threads %d: built with -fopenmp, each loop marked KILN_PARALLEL_FOR runs\n"
                " * on %d OpenMP threads, its iterations split into %d equal chunks, or on one\n"
                " * while that is faster (another process holding a core: each entry point\n"
                " * times its calls, kiln_adapt in kiln_rt.h); built without it, the same\n"
                " * code runs serially. */\n"
                "#ifdef _OPENMP\n"
                "static int kiln_threads_on = 1; /* the loops' `if`, set by each entry point */\n"
                "#define KILN_PARALLEL_FOR \\\n"
                "  _Pragma(\"omp parallel for num_threads(%d) schedule(static) if(kiln_adapt_on(&kiln_threads_on))\")\n"
                "#define KILN_ADAPT_BEGIN(a) \\\n"
                "  const int kiln_mode_ = kiln_adapt_begin(&(a), &kiln_threads_on); \\\n"
                "  const double kiln_t0_ = omp_get_wtime()\n"
                "#define KILN_ADAPT_END(a) kiln_adapt_end(&(a), &kiln_threads_on, kiln_mode_, omp_get_wtime() - kiln_t0_)\n",
             threads, threads, threads, threads);
  for (int k = 0; k < (g->decoder ? g->decoder->nentries : 1); k++)
    buf_printf(c, "static kiln_adapt %s;\n", emit_adapt_name(g, k));
  buf_puts(c, "#else\n#define KILN_PARALLEL_FOR\n#define KILN_ADAPT_BEGIN(a) (void)0\n#define KILN_ADAPT_END(a) (void)0\n"
              "#endif\n\n");
}

/* Text from the model made safe inside a C comment (c_text.h). */
const char *emit_cm(Arena *a, const char *s) { return c_text(a, CT_COMMENT, s); }

/* C identifier from an ONNX name: [A-Za-z0-9_], not starting with a digit. */
static const char *c_ident(Arena *a, const char *prefix, const char *s) {
  return arena_printf(a, "%s%s", prefix, c_text(a, CT_IDENT, s));
}

const char *emit_upper(Arena *a, const char *s) {
  char *r = arena_strdup(a, s);
  for (char *p = r; *p; p++)
    *p = (char)toupper((unsigned char)*p);
  return r;
}

/* "[2][16][64]" (or "[1]" for a scalar, "[]" when a dim is zero) */
const char *emit_array_dims(Arena *a, const Type *t) {
  if (type_numel(t) == 0)
    return "[]";
  if (t->rank == 0)
    return "[1]";
  if (dt_is_packed(t->dt)) /* 4- and 2-bit elements: their bytes, element 0 in the low bits */
    return arena_printf(a, "[%zu]", type_bytes(t));
  Buf b = {0};
  for (int i = 0; i < t->rank; i++)
    buf_printf(&b, "[%lld]", (long long)t->dims[i]);
  char *r = arena_strdup(a, b.s);
  buf_free(&b);
  return r;
}

/* Parameter names: unique C identifiers derived from input/output names. */
static const char **param_names(Graph *g) {
  int n = g->ninputs + g->noutputs;
  const char **names = arena_alloc(g->arena, sizeof(char *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) {
    int vid = i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs];
    const char *base = c_ident(g->arena, isdigit((unsigned char)g->vals[vid].name[0]) ? "v" : "",
                               g->vals[vid].name);
    if (!*base || cname_reserved(base))
      base = arena_printf(g->arena, "%s_", base);
    const char *nm = base;
    for (int k = 2;; k++) {
      bool clash = false;
      for (int j = 0; j < i; j++)
        if (!strcmp(names[j], nm))
          clash = true;
      if (!clash)
        break;
      nm = arena_printf(g->arena, "%s_%d", base, k);
    }
    names[i] = nm;
  }
  return names;
}

/* ---- state ----------------------------------------------------------------
 * A stateful model (Transformer-XL's memory) keeps each state input in a
 * caller-owned struct, <prefix>_state, instead of a parameter; the output
 * that is its next value is computed into the workspace and copied into
 * the struct at the end of the call. */

/* Entry i of the inputs-then-outputs list is a parameter of the run
 * functions: states and their next values are not. */
static bool is_param(const Graph *g, int i) {
  return i < g->ninputs ? !g->vals[g->inputs[i]].is_state
                        : graph_state_of_output(g, i - g->ninputs) < 0;
}

static bool has_state(const Graph *g) {
  for (int i = 0; i < g->ninputs; i++)
    if (g->vals[g->inputs[i]].is_state)
      return true;
  return false;
}

/* Bad state links in the input (.kir) are errors, not bad C. */
static bool check_states(Graph *g, Diag *d) {
  for (int i = 0; i < g->ninputs; i++) {
    const Value *v = &g->vals[g->inputs[i]];
    if (!v->is_state)
      continue;
    if (v->state_next < 0 && v->state_init && op_state_in_place(g, g->inputs[i]))
      continue; /* a KV cache: CacheWrite changes it where it lives */
    if (g->decoder)
      return diag_error(d, "state '%s' has a next value; expected a decoder's state to be its KV caches "
                        "only (x:cache), which its entry points update in place", v->name);
    if (v->state_next < 0 || v->state_next >= g->noutputs || !v->state_init)
      return diag_error(d, "state '%s' has no next value or no initial value", v->name);
    const Value *next = &g->vals[g->outputs[v->state_next]];
    char a[160], b[160];
    if (!type_equal(&v->type, &next->type) || type_numel(&v->type) == 0)
      return diag_error(d, "state '%s' is %s and its next value '%s' is %s; expected the same "
                        "non-empty type", v->name, type_str(&v->type, a, sizeof a), next->name,
                        type_str(&next->type, b, sizeof b));
    if (next->is_state && next != v)
      return diag_error(d, "state '%s': its next value is the state '%s' itself; expected a "
                        "value computed from it (states are updated in place)", v->name, next->name);
  }
  return true;
}

/* The header's part: the struct, its layout, the init function. */
static void put_state_decls(Buf *h, Graph *g, const char *prefix, const char **pn) {
  Arena *a = g->arena;
  buf_printf(h, "/* The state the model carries from one call to the next (caller-owned):\n"
                " * %s_state_init() sets every field to its initial value; each run reads\n"
                " * the fields as the previous call left them and overwrites them, at its\n"
                " * end, with their values for the next call. */\ntypedef struct %s_state {\n",
             prefix, prefix);
  for (int i = 0; i < g->ninputs; i++) {
    const Value *v = &g->vals[g->inputs[i]];
    char ts[160];
    if (v->is_state)
      buf_printf(h, "  %s %s%s; /* %s '%s' */\n", dt_ctype(v->type.dt), pn[i],
                 emit_array_dims(a, &v->type), type_str(&v->type, ts, sizeof ts), emit_cm(a, v->name));
  }
  buf_printf(h, "} %s_state;\n\nvoid %s_state_init(%s_state *state);\n", prefix, prefix, prefix);
}

/* <prefix>_state_init: zeros by memset, other initial values from a
 * constant array. */
static void put_state_init(Buf *c, Emit *e, const char **pn) {
  Graph *g = e->g;
  /* a decoder's returns its codes (KILN_E_ARG for NULL); a stateful run's has none */
  buf_printf(c, "\n%s %s_state_init(%s_state *state) {\n  if (!state)\n    return%s;\n",
             g->decoder ? "int" : "void", e->prefix, e->prefix, g->decoder ? " KILN_E_ARG" : "");
  if (e->blob)
    buf_printf(c, "  const struct %s_weights *const weights = bound_weights;\n  (void)weights;\n", e->prefix);
  for (int i = 0; i < g->ninputs; i++) {
    const Value *v = &g->vals[g->inputs[i]];
    if (!v->is_state)
      continue;
    size_t bytes = type_bytes(&v->type);
    bool zeros = true;
    for (size_t k = 0; k < bytes && zeros; k++)
      zeros = ((const unsigned char *)v->state_init)[k] == 0;
    if (zeros)
      buf_printf(c, "  memset(state->%s, 0, sizeof state->%s);\n", pn[i], pn[i]);
    else
      buf_printf(c, "  memcpy(state->%s, %s, sizeof state->%s);\n", pn[i],
                 emit_const_array(e, v->type.dt, v->state_init, type_numel(&v->type),
                                  arena_printf(g->arena, "%s_init", v->name),
                                  arena_printf(g->arena, "initial value of state '%s'", v->name)),
                 pn[i]);
  }
  if (g->decoder)
    buf_puts(c, "  state->kiln_length = 0;\n  return KILN_OK;\n");
  buf_puts(c, "}\n");
}

/* At the end of a run: each state takes its next value. */
static void put_state_updates(Emit *e, const char **pn) {
  Graph *g = e->g;
  for (int i = 0; i < g->ninputs; i++) {
    const Value *v = &g->vals[g->inputs[i]];
    const char *next = v->is_state ? emit_ref(e, g->outputs[v->state_next]) : NULL;
    if (next && strcmp(next, e->refs[g->inputs[i]]))
      emit_line(e, "memcpy(state->%s, %s, %zu); /* state '%s' for the next call */", pn[i], next,
                type_bytes(&v->type), emit_cm(g->arena, v->name));
  }
}

const char *emit_run_call(Graph *g, const char *prefix) {
  const char **pn = param_names(g);
  Buf b = {0};
  if (has_state(g))
    buf_printf(&b, "{ %s_state st; ", prefix);
  for (int i = 0; i < g->ninputs; i++)
    if (!is_param(g, i))
      buf_printf(&b, "memcpy(st.%s, in%d, sizeof st.%s); ", pn[i], i, pn[i]);
  buf_printf(&b, "%s_run(%s", prefix, has_state(g) ? "&st" : "");
  bool first = !has_state(g);
  for (int i = 0; i < g->ninputs + g->noutputs; i++) {
    if (!is_param(g, i))
      continue;
    buf_printf(&b, "%s%s%d", first ? "" : ", ", i < g->ninputs ? "in" : "out",
               i < g->ninputs ? i : i - g->ninputs);
    first = false;
  }
  buf_puts(&b, ");");
  for (int k = 0; k < g->noutputs; k++) {
    int s = graph_state_of_output(g, k);
    for (int i = 0; s >= 0 && i < g->ninputs; i++)
      if (g->inputs[i] == s)
        buf_printf(&b, " memcpy(out%d, st.%s, sizeof st.%s);", k, pn[i], pn[i]);
  }
  if (has_state(g))
    buf_puts(&b, " }");
  char *r = arena_strdup(g->arena, b.s);
  buf_free(&b);
  return r;
}

/* SIG_RUN: NAME_run(params); SIG_RUN_WS: NAME_run_ws(workspace, params);
 * SIG_FORWARD (blob mode): the static function run_ws calls, whose
 * restrict workspace and weights tell the C compiler that no store into
 * the workspace changes a weight — which it knew of static const arrays
 * but cannot know of a blob, and gcc -O2 does not vectorise a loop that
 * would need a run-time overlap check (LayerNorm's gamma/beta loop ran 8x
 * the instructions before this). */
enum { SIG_RUN, SIG_RUN_WS, SIG_FORWARD };

static void put_signature(Buf *b, Graph *g, const char *prefix, const char **pn, int kind, bool blob) {
  bool first = true;
  if (kind == SIG_FORWARD) {
    buf_printf(b, "static void %s_forward(unsigned char *restrict ws,\n    const struct %s_weights *restrict weights",
               prefix, prefix);
    first = false;
  } else {
    buf_printf(b, "%s %s_run%s(", blob ? "int" : "void", prefix, kind == SIG_RUN_WS ? "_ws" : "");
  }
  if (kind == SIG_RUN_WS) {
    buf_puts(b, "void *workspace");
    first = false;
  }
  if (has_state(g)) {
    buf_printf(b, "%s%s_state *state", first ? "" : ", ", prefix);
    first = false;
  }
  for (int i = 0; i < g->ninputs + g->noutputs; i++) {
    bool in = i < g->ninputs;
    const Value *v = &g->vals[in ? g->inputs[i] : g->outputs[i - g->ninputs]];
    if (!is_param(g, i))
      continue;
    buf_printf(b, "%s%s%s %s%s", first ? "" : ",\n    ", in ? "const " : "", dt_ctype(v->type.dt),
               pn[i], emit_array_dims(g->arena, &v->type));
    first = false;
  }
  if (first)
    buf_puts(b, "void");
  buf_puts(b, ")");
}

/* The return codes of the bind functions (and KILN_OK), guarded so that
 * several models' headers can be included together. */
const char emit_weights_codes[] =
    "#ifndef KILN_WEIGHTS_CODES\n#define KILN_WEIGHTS_CODES\n"
    "enum {\n  KILN_OK = 0,\n  KILN_E_WEIGHTS_SIZE = 1,    /* NULL, or not the size this model's blob has */\n"
    "  KILN_E_WEIGHTS_ALIGN = 2,   /* not 64-byte aligned */\n"
    "  KILN_E_WEIGHTS_MAGIC = 3,   /* not a kiln weights blob */\n"
    "  KILN_E_WEIGHTS_VERSION = 4, /* another blob format version or byte order */\n"
    "  KILN_E_WEIGHTS_MODEL = 5,   /* another model's blob, or other weights */\n"
    "  KILN_E_WEIGHTS_UNBOUND = 6  /* a run before any successful bind: nothing computed */\n};\n#endif\n";

/* The header's end: the tokenizer's declarations (if any), then the
 * extern "C" block and the include guard closed. */
void emit_header_end(Buf *h, const Buf *tok) {
  if (tok && tok->len)
    buf_printf(h, "\n%s", tok->s);
  buf_puts(h, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
}

/* The header's part for a model whose weights are in a blob. */
void emit_weights_api(Buf *h, const char *p, const char *P, const WeightsBlob *blob) {
  buf_printf(h, "\n/* Weights: %s.weights.bin (%s_WEIGHTS_SIZE bytes), bound once before any other\n"
                " * call: %s_bind_linked_weights() when the app links %s_weights.S (which\n"
                " * .incbin's the file), or %s_bind_weights(blob, size) for the file's bytes\n"
                " * that the app has read or mapped (64-byte aligned). Both return KILN_OK\n"
                " * or a KILN_E_WEIGHTS_* code (%s_weights_error() says which) and leave the\n"
                " * previous binding in place on error. Before a successful bind, %s_run\n"
                " * (and every other entry point) returns KILN_E_WEIGHTS_UNBOUND and\n"
                " * computes nothing. */\n",
             p, P, p, p, p, p, p);
  buf_printf(h, "#define %s_WEIGHTS_SIZE %zu\n#define %s_WEIGHTS_HASH UINT64_C(0x%016llx)\n", P, blob->size,
             P, (unsigned long long)blob->hash);
  buf_puts(h, emit_weights_codes);
  buf_printf(h, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n"
                "int %s_bind_weights(const void *blob, size_t size);\n"
                "/* Optional: the checks of %s_bind_weights(), then a hash of every byte of\n"
                " * the blob against %s_WEIGHTS_HASH, so that a damaged copy (a flipped\n"
                " * bit, a zeroed page) is KILN_E_WEIGHTS_MODEL; binds nothing. A 90 MB\n"
                " * blob takes about 0.1 s. */\n"
                "int %s_verify_weights(const void *blob, size_t size);\n"
                "const char *%s_weights_error(int code);\n"
                "extern const unsigned char %s_weights_blob[]; /* defined by %s_weights.S */\n"
                "static inline int %s_bind_linked_weights(void) {\n"
                "  return %s_bind_weights(%s_weights_blob, %s_WEIGHTS_SIZE);\n}\n"
                "#ifdef __cplusplus\n}\n#endif\n",
             p, p, p, p, p, p, p, p, p, p, P);
}

static void emit_header(Buf *h, Graph *g, const EmitOptions *o, const char **pn, const WeightsBlob *blob,
                        const Buf *tok) {
  Arena *a = g->arena;
  const char *P = emit_upper(a, o->prefix);
  char ts[160];
  buf_printf(h, "/* %s.h — generated by kiln %s from %s. Do not edit.\n *\n", o->prefix,
             KILN_VERSION, emit_cm(a, o->source ? o->source : "a model"));
  buf_puts(h, " * Every tensor is a dense row-major C array with the fixed shape below.\n");
  buf_puts(h, " * Inputs:\n");
  for (int i = 0; i < g->ninputs; i++)
    if (is_param(g, i))
      buf_printf(h, " *   %-24s %s  (\"%s\")\n", pn[i],
                 type_str(&g->vals[g->inputs[i]].type, ts, sizeof ts), emit_cm(a, g->vals[g->inputs[i]].name));
  buf_puts(h, " * Outputs:\n");
  for (int i = 0; i < g->noutputs; i++)
    if (is_param(g, g->ninputs + i))
      buf_printf(h, " *   %-24s %s  (\"%s\")\n", pn[g->ninputs + i],
                 type_str(&g->vals[g->outputs[i]].type, ts, sizeof ts),
                 emit_cm(a, g->vals[g->outputs[i]].name));
  if (has_state(g)) {
    buf_puts(h, " * State (struct below), each field with the output that is its next value:\n");
    for (int i = 0; i < g->ninputs; i++) {
      const Value *v = &g->vals[g->inputs[i]];
      if (v->is_state)
        buf_printf(h, " *   %-24s %s  (\"%s\", next: \"%s\")\n", pn[i], type_str(&v->type, ts, sizeof ts),
                   emit_cm(a, v->name), emit_cm(a, g->vals[g->outputs[v->state_next]].name));
    }
  }
  buf_printf(h, " *\n * %s_run() uses a static workspace of %s_WORKSPACE_SIZE bytes and is not\n"
                " * re-entrant; %s_run_ws() takes a caller-owned workspace of that size\n"
                " * (aligned to 64 bytes) and is safe to call from several threads with\n"
                " * distinct workspaces. Neither allocates.\n",
             o->prefix, P, o->prefix);
  if (o->threads > 1)
    buf_printf(h, " *\n * Threads: compiled with --threads %d. Build %s.c with -fopenmp (and link\n"
                  " * with -fopenmp) to run its large loops on %d OpenMP threads; built without\n"
                  " * it, the same code runs on the calling thread alone.\n",
               o->threads, o->prefix, o->threads);
  if (o->gemm == GEMM_OPENBLAS)
    buf_printf(h, " *\n * GEMM: compiled with --gemm=openblas. The f32 matrix products call\n"
                  " * cblas_sgemm: %s.c includes <cblas.h> (add -I/usr/include/openblas where it\n"
                  " * lives there) and the app links with -lopenblas. OpenBLAS chooses its own\n"
                  " * thread count (OPENBLAS_NUM_THREADS).\n",
               o->prefix);
  buf_puts(h, " */\n");
  buf_printf(h, "#ifndef %s_H\n#define %s_H\n\n#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n\n", P, P);
  buf_printf(h, "#define %s_WORKSPACE_SIZE %lld\n", P, (long long)g->ws_size);
  if (blob)
    emit_weights_api(h, o->prefix, P, blob);
  for (int i = 0; i < g->ninputs + g->noutputs; i++) {
    bool in = i < g->ninputs;
    const Type *t = &g->vals[in ? g->inputs[i] : g->outputs[i - g->ninputs]].type;
    if (is_param(g, i) || in)
      buf_printf(h, "#define %s_%s_%s_SIZE %lld /* elements%s */\n", P,
                 !is_param(g, i) ? "STATE" : in ? "IN" : "OUT", emit_upper(a, pn[i]),
                 (long long)type_numel(t),
                 dt_is_packed(t->dt) ? arena_printf(a, ", %s packed in %zu bytes", dt_name(t->dt), type_bytes(t)) : "");
  }
  buf_puts(h, "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
  if (has_state(g))
    put_state_decls(h, g, o->prefix, pn);
  put_signature(h, g, o->prefix, pn, SIG_RUN, blob != NULL);
  buf_puts(h, ";\n");
  put_signature(h, g, o->prefix, pn, SIG_RUN_WS, blob != NULL);
  buf_puts(h, ";\n");
  emit_header_end(h, tok);
}

/* Weight k (in order of first use): a graph constant or an array of
 * emit_const_array, with the comment that goes above it. */
typedef struct Weight {
  DType dt;
  const void *data;
  int64_t n;
  const char *comment;
  bool aligned; /* emit_const_array's arrays are 64-byte aligned */
} Weight;

static Weight weight_at(Emit *e, int k) {
  Graph *g = e->g;
  int id = e->consts[k].id;
  if (id < 0) {
    const EmitArray *x = &e->arrays[-1 - id];
    return (Weight){x->dt, x->data, x->n, emit_cm(g->arena, x->comment), true};
  }
  const Value *v = &g->vals[id];
  char ts[160];
  if (dt_is_narrow(v->type.dt)) /* float8 codes, packed 4- and 2-bit elements: their bytes */
    return (Weight){DT_U8, v->data, (int64_t)type_bytes(&v->type),
                    arena_printf(g->arena, "%s: %s", emit_cm(g->arena, v->name), type_str(&v->type, ts, sizeof ts)),
                    false};
  return (Weight){v->type.dt, v->data, type_numel(&v->type),
                  arena_printf(g->arena, "%s: %s", emit_cm(g->arena, v->name), type_str(&v->type, ts, sizeof ts)),
                  false};
}

/* In blob mode, an array of this many bytes is read from the blob. */
static bool in_blob(const Emit *e, size_t bytes) { return e->blob && bytes > EMIT_BLOB_INLINE_MAX; }

const char *emit_weight_name(Emit *e, int k) {
  EmitConst *c = &e->consts[k];
  if (!c->name)
    c->name = cname_unique(e->names, c->id < 0 ? e->arrays[-1 - c->id].stem : e->g->vals[c->id].name, "w");
  Weight w = weight_at(e, k);
  if (in_blob(e, (size_t)w.n * dt_size(w.dt)))
    return arena_printf(e->g->arena, "weights->%s", c->name);
  return c->name;
}

/* The weights that stay in the .c: static const arrays of exact literals. */
static void emit_weights(Buf *c, Emit *e) {
  for (int k = 0; k < e->nconsts; k++) {
    Weight w = weight_at(e, k);
    if (in_blob(e, (size_t)w.n * dt_size(w.dt)))
      continue;
    buf_printf(c, "/* %s */\nstatic const %s %s%s[%lld] = {", w.comment, dt_ctype(w.dt),
               w.aligned ? "KILN_ALIGNED(64) " : "", e->consts[k].name, (long long)(w.n ? w.n : 1));
    for (int64_t i = 0; i < w.n; i++)
      buf_printf(c, "%s%s", i % 8 ? ", " : (i ? ",\n  " : "\n  "), emit_literal(e, w.dt, w.data, i));
    buf_puts(c, w.n ? "\n};\n\n" : "0};\n\n");
  }
}

/* Blob mode: the blob's layout as a struct (explicit padding, checked
 * against the size the blob has), the pointer the code reads it through,
 * and the arrays placed in e->blob. */
static void emit_blob_layout(Buf *c, Emit *e) {
  const char *P = emit_upper(e->g->arena, e->prefix);
  buf_printf(c, "/* The weights blob (%s_WEIGHTS_SIZE bytes, kiln's weights_blob.h): a\n"
                " * 64-byte header, then each array at a 64-byte-aligned offset. */\n"
                "struct %s_weights {\n  unsigned char header[%d];\n",
             P, e->prefix, WEIGHTS_BLOB_HEADER);
  size_t at = WEIGHTS_BLOB_HEADER;
  Buf asserts = {0};
  for (int k = 0; k < e->nconsts; k++) {
    Weight w = weight_at(e, k);
    size_t bytes = (size_t)w.n * dt_size(w.dt);
    if (!in_blob(e, bytes))
      continue;
    size_t off = blob_add(e->blob, w.data, bytes);
    if (off > at)
      buf_printf(c, "  unsigned char pad%d[%zu];\n", k, off - at);
    buf_printf(c, "  %s %s[%lld]; /* @%zu %s */\n", dt_ctype(w.dt), e->consts[k].name, (long long)w.n, off,
               w.comment);
    buf_printf(&asserts, "KILN_STATIC_ASSERT(offsetof(struct %s_weights, %s) == %zu, %s_at);\n", e->prefix,
               e->consts[k].name, off, e->consts[k].name);
    at = off + bytes;
  }
  blob_finish(e->blob);
  if (e->blob->size > at)
    buf_printf(c, "  unsigned char tail[%zu];\n", e->blob->size - at);
  /* the C compiler's layout is the blob's: no padding of its own */
  buf_printf(c, "};\nKILN_STATIC_ASSERT(sizeof(struct %s_weights) == %s_WEIGHTS_SIZE, weights_layout);\n%s\n"
                "/* Set by %s_bind_weights(): the only global the code writes, once. */\n"
                "static const struct %s_weights *bound_weights;\n\n",
             e->prefix, P, asserts.s ? asserts.s : "", e->prefix, e->prefix);
  buf_free(&asserts);
}

/* Blob mode: NAME_bind_weights() and NAME_weights_error(). */
static void emit_bind_weights(Buf *c, Emit *e) {
  const char *p = e->prefix, *P = emit_upper(e->g->arena, p);
  buf_printf(c,
    "static uint64_t %s_blob_u64(const unsigned char *b) { /* little-endian */\n"
    "  uint64_t v = 0;\n"
    "  for (int i = 7; i >= 0; i--)\n    v = v << 8 | b[i];\n  return v;\n}\n\n"
    "/* the header's checks (size, alignment, magic, version, byte order, hash) */\n"
    "static int %s_check_blob(const unsigned char *b, size_t size) {\n"
    "  uint32_t order = 0x01020304;\n"
    "  if (!b || size != %s_WEIGHTS_SIZE)\n    return KILN_E_WEIGHTS_SIZE;\n"
    "  if ((uintptr_t)b %% 64 != 0)\n    return KILN_E_WEIGHTS_ALIGN;\n"
    "  if (memcmp(b, \"KILNWTS\", 8) != 0)\n    return KILN_E_WEIGHTS_MAGIC;\n"
    "  if (%s_blob_u64(b + 8) != (UINT64_C(64) << 32 | %du) || memcmp(b + 36, &order, 4) != 0)\n"
    "    return KILN_E_WEIGHTS_VERSION;\n"
    "  if (%s_blob_u64(b + 16) != %s_WEIGHTS_SIZE || %s_blob_u64(b + 24) != %s_WEIGHTS_HASH ||\n"
    "      (%s_blob_u64(b + 32) & 0xffffffffu) != %du)\n"
    "    return KILN_E_WEIGHTS_MODEL;\n"
    "  for (int i = 40; i < 64; i++) /* the header's zeros */\n"
    "    if (b[i])\n      return KILN_E_WEIGHTS_MODEL;\n"
    "  return KILN_OK;\n}\n\n"
    "int %s_bind_weights(const void *blob, size_t size) {\n"
    "  int rc = %s_check_blob((const unsigned char *)blob, size);\n"
    "  if (rc == KILN_OK)\n    bound_weights = (const struct %s_weights *)blob;\n"
    "  return rc;\n}\n\n",
    p, p, P, p, WEIGHTS_BLOB_VERSION, p, P, p, P, p, e->blob->n, p, p, p);
  /* the model hash of weights_blob.c (blob_finish), over the whole body */
  buf_printf(c,
    "static uint64_t %s_blob_mix(uint64_t k) { /* murmur3's finalizer */\n"
    "  k ^= k >> 33;\n  k *= UINT64_C(0xff51afd7ed558ccd);\n  k ^= k >> 33;\n"
    "  k *= UINT64_C(0xc4ceb9fe1a85ec53);\n  return k ^ (k >> 33);\n}\n\n"
    "int %s_verify_weights(const void *blob, size_t size) {\n"
    "  const unsigned char *b = (const unsigned char *)blob;\n"
    "  int rc = %s_check_blob(b, size);\n"
    "  if (rc != KILN_OK)\n    return rc;\n"
    "  uint64_t h = UINT64_C(0x%016llx); /* the layout's hash */\n"
    "  for (size_t i = 64; i < size; i += 8) {\n"
    "    uint64_t w;\n    memcpy(&w, b + i, 8);\n"
    "    h ^= %s_blob_mix(w);\n"
    "    h = (h << 29 | h >> 35) * UINT64_C(0x9e3779b97f4a7c15);\n  }\n"
    "  return %s_blob_mix(h ^ (uint64_t)(size - 64)) == %s_WEIGHTS_HASH ? KILN_OK : KILN_E_WEIGHTS_MODEL;\n}\n\n",
    p, p, p, (unsigned long long)e->blob->seed, p, p, P);
  buf_printf(c,
    "const char *%s_weights_error(int code) {\n"
    "  switch (code) {\n"
    "  case KILN_OK: return \"ok\";\n"
    "  case KILN_E_WEIGHTS_SIZE: return \"the weights blob is missing or has the wrong size\";\n"
    "  case KILN_E_WEIGHTS_ALIGN: return \"the weights blob is not 64-byte aligned\";\n"
    "  case KILN_E_WEIGHTS_MAGIC: return \"not a kiln weights blob\";\n"
    "  case KILN_E_WEIGHTS_VERSION: return \"a weights blob of another format version or byte order\";\n"
    "  case KILN_E_WEIGHTS_MODEL: return \"the weights blob of another model (or other weights)\";\n"
    "  case KILN_E_WEIGHTS_UNBOUND: return \"no weights blob bound yet (bind one before running the model)\";\n"
    "  default: return \"unknown error\";\n  }\n}\n",
    p);
}

/* The source nodes a node stands for, short: "MatMul_12" or, for a fused
 * node (origins joined by " + "), "MatMul_12 .. Add_13 (2 nodes)". */
static const char *origin_comment(Arena *a, const Node *n) {
  const char *o = n->origin && *n->origin ? n->origin : n->name;
  int count = 1;
  const char *last = o;
  for (const char *p = strstr(o, " + "); p; p = strstr(p + 3, " + ")) {
    count++;
    last = p + 3;
  }
  if (count == 1)
    return emit_cm(a, o);
  return emit_cm(a, arena_printf(a, "%.*s .. %s (%d nodes)", (int)(strstr(o, " + ") - o), o, last, count));
}

/* Bytes of the constants the nodes read (what --weights=auto weighs). */
static size_t const_bytes(const Graph *g) {
  bool *seen = calloc((size_t)g->nvals + 1, 1);
  size_t total = 0;
  for (int i = 0; i < g->nnodes; i++)
    for (int j = 0; j < g->nodes[i].nin; j++) {
      int v = g->nodes[i].in[j];
      if (v >= 0 && g->vals[v].data && !seen[v]) {
        seen[v] = true;
        total += type_bytes(&g->vals[v].type);
      }
    }
  free(seen);
  return total;
}

/* A workspace tensor's name: the model's, without ONNX export's
 * "_output_0" tail. */
static const char *temp_name(Emit *e, const Value *v) {
  const char *nm = v->name ? v->name : "";
  size_t n = strlen(nm);
  const char *tail = "_output_0";
  if (n > strlen(tail) && !strcmp(nm + n - strlen(tail), tail))
    nm = arena_printf(e->g->arena, "%.*s", (int)(n - strlen(tail)), nm);
  return cname_unique(e->names, nm, "t");
}

/* The run function's body: per node, the workspace tensors it defines,
 * then the call of its kernel. */
static void put_calls(Emit *e, Buf *body, int64_t *ws_end, const int *node_entry, int entry) {
  Graph *g = e->g;
  Arena *a = g->arena;
  e->out = body;
  e->indent = 1;
  for (int c = 0; c < e->ks->ncalls; c++) {
    const KCall *call = &e->ks->calls[c];
    const Node *n = call->node;
    if (node_entry && node_entry[n - g->nodes] != entry && node_entry[n - g->nodes] != DECODER_ENTRY_ALL)
      continue; /* another entry point's */
    if (node_entry && node_entry[n - g->nodes] == DECODER_ENTRY_ALL)
      for (int j = 0; j < n->nout; j++)
        e->refs[n->out[j]] = NULL; /* declared again in this entry's function */
    for (int j = 0; j < n->nout; j++) {
      int vid = n->out[j];
      Value *v = &g->vals[vid];
      if (e->refs[vid] || v->data) /* a parameter, or a constant */
        continue;
      int root = emit_storage_root(e, vid);
      if (root != vid) { /* a view: the root's name */
        e->refs[vid] = emit_ref(e, root);
        continue;
      }
      KILN_ASSERT(v->ws_offset >= 0);
      const char *nm = temp_name(e, v);
      char ts[160];
      int64_t end = v->ws_offset + (int64_t)type_bytes(&v->type);
      *ws_end = end > *ws_end ? end : *ws_end;
      /* through void *: the planner aligns every offset (clang -Wcast-align) */
      emit_line(e, "%s *%s = (%s *)(void *)(ws + %lld); /* %s */", dt_ctype(v->type.dt), nm,
                dt_ctype(v->type.dt), (long long)v->ws_offset, type_str(&v->type, ts, sizeof ts));
      e->refs[vid] = nm;
    }
    if (call->kernel < 0) { /* a one-line comment gets the node's origin in front */
      const char *t = call->text;
      while (*t == ' ')
        t++;
      if (!strncmp(t, "/* ", 3) && strchr(t, '\n') == t + strlen(t) - 1)
        emit_line(e, "/* %s (%s): %.*s", origin_comment(a, n), node_op_name(n), (int)strlen(t + 4), t + 3);
      else
        buf_puts(body, call->text);
      continue;
    }
    Buf line = {0};
    buf_printf(&line, "%s(", e->ks->kernels[call->kernel].name);
    for (int i = 0; i < call->nargs; i++) {
      const KParam *p = &call->args[i];
      const char *arg = p->arr >= 0 ? emit_weight_name(e, e->arrays[p->arr].k)
                                    : emit_ref(e, p->out_vid >= 0 ? p->out_vid : p->vid);
      buf_printf(&line, "%s%s", i ? ", " : "", arg);
    }
    emit_line(e, "%s); /* %s */", line.s, origin_comment(a, n));
    buf_free(&line);
  }
}

/* A GGUF model's tokenizer (--weights FILE.gguf with tokenizer.ggml.*):
 * its tables at the end of the .c, their declarations into tok for the
 * header. */
static bool put_tokenizer(Buf *c, Buf *tok, const EmitOptions *o, Diag *d) {
  if (!o->tokenizer)
    return true;
  buf_puts(c, "\n");
  return tokenizer_emit(o->tokenizer, o->prefix, c, tok, d);
}

/* The rest of the .c after the preamble: the weights (blob layout, the
 * literals, the bind function), the kernels, then the functions in fn. */
static void put_file_tail(Buf *c, Emit *e, Buf *fn) {
  if (e->blob)
    emit_blob_layout(c, e);
  emit_weights(c, e);
  if (e->blob)
    emit_bind_weights(c, e);
  kernels_put(e, c);
  buf_puts(c, "\n");
  buf_put(c, fn->s ? fn->s : "", fn->len);
  buf_free(fn);
}

bool emit_c(Graph *g, const EmitOptions *o, Buf *c, Buf *h, WeightsBlob *blob, Diag *d) {
  Arena *a = g->arena;
  Emit e = {.g = g, .prefix = o->prefix, .isa = o->isa, .threads = o->threads > 1 ? o->threads : 1,
            .gemm = o->gemm, .precision = o->precision};
  if (blob && (o->weights == WEIGHTS_BLOB || (o->weights == WEIGHTS_AUTO && const_bytes(g) > EMIT_BLOB_AUTO)))
    e.blob = blob;
  e.refs = arena_alloc(a, sizeof(char *) * (size_t)(g->nvals + 1));
  e.const_of = arena_alloc(a, sizeof(int) * (size_t)(g->nvals + 1));
  const char **pn = param_names(g);
  if (!check_states(g, d))
    return false;
  /* every name the run function declares, so that no kernel or weight
   * takes one (a run-function parameter named like a kernel would hide it) */
  e.names = nameset_new(a);
  if (g->decoder) /* the entry points' shared workspace (put_decoder_entries) */
    nameset_add(e.names, arena_printf(a, "%s_workspace", o->prefix));
  if (e.threads > 1) { /* the threads block's names (put_parallel_macro) */
    static const char *const reserved[] = {"kiln_threads_on", "kiln_mode_", "kiln_t0_"};
    for (int i = 0; i < KILN_COUNT(reserved); i++)
      nameset_add(e.names, reserved[i]);
    for (int k = 0; k < (g->decoder ? g->decoder->nentries : 1); k++)
      nameset_add(e.names, emit_adapt_name(g, k));
  }
  int *io_slot = arena_alloc(a, sizeof(int) * (size_t)(g->nvals + 1));
  for (int v = 0; v < g->nvals; v++)
    io_slot[v] = e.const_of[v] = -1;
  /* graph inputs first so that an output which is also an input is read
   * from the input parameter */
  for (int i = 0; i < g->ninputs + g->noutputs; i++) {
    bool in = i < g->ninputs;
    int vid = in ? g->inputs[i] : g->outputs[i - g->ninputs];
    nameset_add(e.names, pn[i]);
    nameset_add(e.names, arena_printf(a, "p_%s", pn[i]));
    if (!in && !is_param(g, i))
      continue; /* a state's next value: in the workspace until the end */
    if (io_slot[vid] < 0 && !g->vals[vid].data) { /* a constant output is copied at the end */
      io_slot[vid] = i;
      e.refs[vid] = arena_printf(a, "p_%s", pn[i]);
    }
  }
  e.ks = kernels_new(a, io_slot);

  /* 1: each node's code, as a kernel */
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = &g->nodes[i];
    bool all_const = true; /* left by a pipeline without fold: nothing to run */
    for (int j = 0; j < n->nout; j++)
      all_const = all_const && g->vals[n->out[j]].data;
    if (all_const)
      continue;
    kernel_begin(&e, n);
    if (!op_check_half(g, n, d) || !op_table[n->op].emit(&e, n)) {
      kernel_abort(&e);
      return diag_node(d, g, n, "cannot generate C for this node");
    }
    kernel_end(&e);
  }
  /* 2: names for weights and workspace tensors, clear of every identifier
   * the kernels use (no shadowing, even under -Wshadow) */
  for (int k = 0; k < e.ks->nkernels; k++)
    nameset_add_tokens(e.names, e.ks->kernels[k].text);
  Buf body = {0}, fn = {0}, tok = {0};
  int64_t ws_end = 0;
  int *node_entry = NULL;
  Buf *bodies = NULL;
  if (g->decoder) { /* one function per entry point */
    if (!(node_entry = graph_decoder_entries(g, d)))
      return false;
    bodies = arena_alloc(a, sizeof(Buf) * (size_t)g->decoder->nentries);
    for (int k = 0; k < g->decoder->nentries; k++)
      put_calls(&e, &bodies[k], &ws_end, node_entry, k);
  } else {
    put_calls(&e, &body, &ws_end, NULL, 0);
  }

  buf_printf(c, "/* %s.c — generated by kiln %s from %s. Do not edit.\n * See %s for the API. */\n",
             o->prefix, KILN_VERSION, emit_cm(a, o->source ? o->source : "a model"), emit_cm(a, o->header));
  buf_printf(c, "#include \"%s\"\n\n#include <math.h>\n#include <string.h>\n\n"
                "#include \"kiln_rt.h\"\n\n", c_text(a, CT_HEADER, o->header));
  if (o->gemm == GEMM_OPENBLAS)
    buf_puts(c, "#include <cblas.h> /* --gemm=openblas: link with -lopenblas */\n\n");
  if (e.uses_bf16_dp)
    buf_puts(c, "#if defined(__AVX512BF16__) && defined(__GNUC__) && !defined(KILN_GEMM_NO_BF16DP)\n"
                "#include <immintrin.h> /* --precision=bf16: vdpbf16ps (_mm512_dpbf16_ps) */\n#endif\n\n");
  if (e.uses_vnni)
    buf_puts(c, "#if defined(__GNUC__) && !defined(KILN_GEMM_SCALAR) && (defined(__AVX2__) || defined(__AVX512F__))\n"
                "#include <immintrin.h> /* --quantize=w8a8: vpdpbusd, vpmaddwd */\n#endif\n\n");
  if (e.threads > 1)
    put_parallel_macro(c, g, e.threads);
  const char *P = emit_upper(a, o->prefix);
  buf_printf(c, "/* every workspace tensor below ends within the workspace */\n"
                "KILN_STATIC_ASSERT(%s_WORKSPACE_SIZE >= %lld, workspace_size);\n\n", P, (long long)ws_end);

  /* the run function, into fn: the weights it reads are known after it */
  Buf *wc = c;
  c = &fn;
  if (g->decoder) {
    for (int k = 0; k < g->decoder->nentries; k++)
      emit_entry_forward(c, &e, pn, k, &bodies[k]);
    emit_decoder_entries(c, &e, pn);
    put_state_init(c, &e, pn);
    put_file_tail(wc, &e, &fn);
    if (!put_tokenizer(wc, &tok, o, d))
      return false;
    emit_decoder_header(h, g, o, pn, e.blob, &tok);
    buf_free(&tok);
    return true;
  }
  put_signature(c, g, o->prefix, pn, e.blob ? SIG_FORWARD : SIG_RUN_WS, false);
  buf_puts(c, " {\n");
  if (e.blob)
    buf_puts(c, "  (void)ws;\n  (void)weights;\n");
  else
    buf_printf(c, "  unsigned char *ws = (unsigned char *)workspace;\n  (void)ws;\n");
  for (int i = 0; i < g->ninputs + g->noutputs; i++) {
    bool in = i < g->ninputs;
    int vid = in ? g->inputs[i] : g->outputs[i - g->ninputs];
    const char *ct = dt_ctype(g->vals[vid].type.dt);
    if (!in && !is_param(g, i))
      continue;
    buf_printf(c, "  %s%s *p_%s = (%s%s *)%s%s;\n  (void)p_%s;\n", in ? "const " : "", ct, pn[i],
               in ? "const " : "", ct, is_param(g, i) ? "" : "state->", pn[i], pn[i]);
  }
  e.out = &body;
  e.indent = 1;
  /* outputs whose value lives elsewhere (a constant, an input, or an output
   * listed twice) are copied into their parameter */
  for (int k = 0; k < g->noutputs; k++) {
    int vid = g->outputs[k];
    const char *p = arena_printf(a, "p_%s", pn[g->ninputs + k]);
    size_t bytes = type_bytes(&g->vals[vid].type);
    if (bytes == 0 || !is_param(g, g->ninputs + k) || !strcmp(emit_ref(&e, vid), p))
      continue;
    emit_line(&e, "memcpy(%s, %s, %zu); /* output '%s' */", p, e.refs[vid], bytes,
                emit_cm(a, g->vals[vid].name));
  }
  put_state_updates(&e, pn);
  if (e.threads > 1)
    buf_printf(c, "  KILN_ADAPT_BEGIN(%s);\n", emit_adapt_name(g, 0));
  buf_put(c, body.s ? body.s : "", body.len);
  buf_free(&body);
  if (e.threads > 1)
    buf_printf(c, "  KILN_ADAPT_END(%s);\n", emit_adapt_name(g, 0));
  buf_puts(c, "}\n\n");
  if (e.blob) {
    /* one branch per call: a run before a successful bind computes nothing */
    put_signature(c, g, o->prefix, pn, SIG_RUN_WS, true);
    buf_printf(c, " {\n  if (!bound_weights)\n    return KILN_E_WEIGHTS_UNBOUND;\n"
                  "  %s_forward((unsigned char *)workspace, bound_weights%s", o->prefix,
               has_state(g) ? ", state" : "");
    for (int i = 0; i < g->ninputs + g->noutputs; i++)
      if (is_param(g, i))
        buf_printf(c, ", %s", pn[i]);
    buf_puts(c, ");\n  return KILN_OK;\n}\n\n");
  }
  put_signature(c, g, o->prefix, pn, SIG_RUN, e.blob != NULL);
  buf_printf(c, " {\n  static KILN_ALIGNED(64) unsigned char workspace[%lld];\n  %s%s_run_ws(workspace%s",
             (long long)(g->ws_size ? g->ws_size : 1), e.blob ? "return " : "", o->prefix,
             has_state(g) ? ", state" : "");
  for (int i = 0; i < g->ninputs + g->noutputs; i++)
    if (is_param(g, i))
      buf_printf(c, ", %s", pn[i]);
  buf_puts(c, ");\n}\n");
  if (has_state(g))
    put_state_init(c, &e, pn);
  put_file_tail(wc, &e, &fn);
  if (!put_tokenizer(wc, &tok, o, d))
    return false;
  emit_header(h, g, o, pn, e.blob, &tok);
  buf_free(&tok);
  if (o->weight_bytes) { /* the weights as stored: packed, bf16 or int8 where the kernels read them so */
    *o->weight_bytes = 0;
    for (int i = 0; i < e.narrays; i++)
      *o->weight_bytes += e.arrays[i].n * (int64_t)dt_size(e.arrays[i].dt);
  }
  return true;
}
