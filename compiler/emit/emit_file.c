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
#include "emit_decoder.h"
#include "emit_text.h"
#include "emit_weights.h"
#include "emit_forward.h"
#include "emit_kernel.h"
#include "emit_pack.h"
#include "../ir/ops.h"
#include "tokenizer.h"
#include "weights_blob.h"


/* The .c file's threads block (--threads N > 1): see emit.h and kiln_rt.h.
 * Each entry point leads its run on the pool, with its loops on one thread
 * when that is faster (another process holding a core: kiln_adapt), and
 * NAME_set_threads caps the count at run time. */
static void put_parallel_macro(Buf *c, const Graph *g, const char *prefix, int threads) {
  buf_printf(c, "/* --threads %d: built with -pthread (or -fopenmp), the loops written\n"
                " * KILN_PARALLEL_FOR run on up to %d threads of kiln's pool (kiln_rt.h;\n"
                " * %s_set_threads lowers the count), or on one while that is faster\n"
                " * (another process holding a core: each entry point times its calls,\n"
                " * kiln_adapt); built without, the same code runs serially. */\n"
                "static int kiln_threads_n = %d; /* %s_set_threads: 1..%d */\n"
                "int %s_set_threads(int n) {\n"
                "  if (n < 1 || n > %d)\n"
                "    return KILN_E_ARG;\n"
                "#if defined(KILN_POOL)\n"
                "  __atomic_store_n(&kiln_threads_n, n, __ATOMIC_RELAXED);\n"
                "#else\n"
                "  kiln_threads_n = n;\n"
                "#endif\n"
                "  return KILN_OK;\n"
                "}\n"
                "#if defined(KILN_POOL)\n"
                "KILN_POOL_DEFINE(kiln_threads_pool)\n"
                "#define KILN_ADAPT_BEGIN(a) \\\n"
                "  const int kiln_mode_ = kiln_adapt_begin(&(a)); \\\n"
                "  kiln_team_begin(&kiln_threads_pool, kiln_threads_pool_forked, \\\n"
                "                  kiln_mode_ ? __atomic_load_n(&kiln_threads_n, __ATOMIC_RELAXED) : 1, %d); \\\n"
                "  const unsigned long long kiln_t0_ = kiln_ticks()\n"
                "#define KILN_ADAPT_END(a) \\\n"
                "  kiln_team_end(&kiln_threads_pool); \\\n"
                "  kiln_adapt_end(&(a), kiln_mode_, (double)(kiln_ticks() - kiln_t0_))\n",
             threads, threads, prefix, threads, prefix, threads, prefix, threads, threads);
  for (int k = 0; k < (g->decoder ? g->decoder->nentries : 1); k++)
    buf_printf(c, "static kiln_adapt %s;\n", emit_adapt_name(g, k));
  buf_puts(c, "#else\n#define KILN_ADAPT_BEGIN(a) (void)0\n#define KILN_ADAPT_END(a) (void)0\n#endif\n\n");
}

/* C identifier from an ONNX name: [A-Za-z0-9_], not starting with a digit. */
static const char *c_ident(Arena *a, const char *prefix, const char *s) {
  return arena_printf(a, "%s%s", prefix, c_text(a, CT_IDENT, s));
}

/* Parameter names: unique C identifiers derived from input/output names. */
static const char **param_names(Graph *g) {
  int n = g->ninputs + g->noutputs;
  const char **names = arena_alloc(g->arena, sizeof(char *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) {
    int vid = i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs];
    const char *base = c_ident(g->arena, isdigit((unsigned char)g->vals[vid].name[0]) ? "v" : "",
                               g->vals[vid].name);
    /* with a token count, `rows` and `batch` are parameters of the entry points too */
    if (!*base || cname_reserved(base) || (g->rows && (!strcmp(base, "rows") || !strcmp(base, "batch"))))
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

/* A state field of the header's struct: "  float mems_0[16][64]; /" "* f32[16,64] 'mems.0' *" "/". */
static void put_state_field(Buf *h, const Graph *g, int i, void *pn) {
  const Value *v = &g->vals[g->inputs[i]];
  char ts[160];
  buf_printf(h, "  %s %s%s; /* %s '%s' */\n", dt_ctype(v->type.dt), ((const char **)pn)[i],
             emit_array_dims(g->arena, &v->type), type_str(&v->type, ts, sizeof ts), emit_cm(g->arena, v->name));
}

/* The header's part: the struct, its layout, the init function. */
static void put_state_decls(Buf *h, const Emit *e, const char *prefix, const char **pn) {
  buf_printf(h, "/* The state the model carries from one call to the next (caller-owned):\n"
                " * %s_state_init() sets every field to its initial value; each run reads\n"
                " * the fields as the previous call left them and overwrites them, at its\n"
                " * end, with their values for the next call. */\ntypedef struct %s_state {\n",
             prefix, prefix);
  loops_put_state_fields(h, e, put_state_field, (void *)pn);
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
    const char *f = loops_state_field(e, i, pn[i]);
    if (zeros)
      buf_printf(c, "  memset(state->%s, 0, sizeof state->%s);\n", f, f);
    else
      buf_printf(c, "  memcpy(state->%s, %s, sizeof state->%s);\n", f,
                 emit_const_array(e, v->type.dt, v->state_init, type_numel(&v->type),
                                  arena_printf(g->arena, "%s_init", v->name),
                                  arena_printf(g->arena, "initial value of state '%s'", v->name)),
                 f);
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
      emit_line(e, "memcpy(state->%s, %s, %zu); /* state '%s' for the next call */", loops_state_field(e, i, pn[i]), next,
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
/* With a run-time token count (--rows-axis, g->rows) the body is always
 * SIG_FORWARD's, which then ends with `const int64_t kiln_rows[1]` (and
 * takes weights only with a blob: `blob` says so for it), and
 * SIG_RUN_ROWS / SIG_RUN_ROWS_WS, NAME_run_rows[_ws](..., int rows), check
 * the count and call it. SIG_RUN_BATCH / SIG_RUN_BATCH_WS,
 * NAME_run_batch[_ws](..., const int rows[], int batch), take each
 * parameter as an array of the single run's (`x[][1][128]`), one per
 * sentence, and call it once per sentence with that sentence's count.
 * SIG_FORWARD_PACKS, the body of a model whose batches pack
 * (emit_pack.h), takes each parameter as the batch entries do, the pack's
 * sentences x[0 .. kiln_nseg - 1], and after kiln_rows (their rows in all)
 * `int kiln_nseg, const int64_t kiln_seg_at[], const int64_t
 * kiln_seg_rows[]` (each one's first row in the pack, its count); a single
 * sentence is a pack of one at row 0. */
enum { SIG_RUN, SIG_RUN_WS, SIG_FORWARD, SIG_RUN_ROWS, SIG_RUN_ROWS_WS, SIG_RUN_BATCH, SIG_RUN_BATCH_WS,
       SIG_FORWARD_PACKS };

static void put_signature(Buf *b, Graph *g, const char *prefix, const char **pn, int kind, bool blob) {
  bool first = true;
  bool packs = kind == SIG_FORWARD_PACKS;
  kind = packs ? SIG_FORWARD : kind;
  if (kind == SIG_FORWARD) {
    buf_printf(b, "static void %s_forward(unsigned char *restrict ws", prefix);
    if (blob)
      buf_printf(b, ",\n    const struct %s_weights *restrict weights", prefix);
    first = false;
  } else if (kind == SIG_RUN_ROWS || kind == SIG_RUN_ROWS_WS) {
    buf_printf(b, "int %s_run_rows%s(", prefix, kind == SIG_RUN_ROWS_WS ? "_ws" : "");
  } else if (kind == SIG_RUN_BATCH || kind == SIG_RUN_BATCH_WS) {
    buf_printf(b, "int %s_run_batch%s(", prefix, kind == SIG_RUN_BATCH_WS ? "_ws" : "");
  } else {
    buf_printf(b, "%s %s_run%s(", blob ? "int" : "void", prefix, kind == SIG_RUN_WS ? "_ws" : "");
  }
  bool batch = kind == SIG_RUN_BATCH || kind == SIG_RUN_BATCH_WS || packs;
  if (kind == SIG_RUN_WS || kind == SIG_RUN_ROWS_WS || kind == SIG_RUN_BATCH_WS) {
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
    buf_printf(b, "%s%s%s %s%s%s", first ? "" : ",\n    ", in ? "const " : "", dt_ctype(v->type.dt),
               pn[i], batch ? "[]" : "", emit_array_dims(g->arena, &v->type));
    first = false;
  }
  if (kind == SIG_FORWARD && g->rows)
    buf_printf(b, ",\n    const int64_t kiln_rows[1]%s",
               packs ? ", int kiln_nseg, const int64_t kiln_seg_at[], const int64_t kiln_seg_rows[]" : "");
  else if (kind == SIG_RUN_ROWS || kind == SIG_RUN_ROWS_WS)
    buf_printf(b, "%sint rows", first ? "" : ",\n    ");
  else if (batch)
    buf_printf(b, "%sconst int rows[], int batch", first ? "" : ",\n    ");
  else if (first)
    buf_puts(b, "void");
  buf_puts(b, ")");
}

/* The arguments after the workspace (and weights): the state, the
 * parameters, and `last` (the token count) when not NULL. */
static void put_args(Buf *c, Graph *g, const char **pn, const char *last) {
  if (has_state(g))
    buf_puts(c, ", state");
  for (int i = 0; i < g->ninputs + g->noutputs; i++)
    if (is_param(g, i))
      buf_printf(c, ", %s", pn[i]);
  if (last)
    buf_printf(c, ", %s", last);
}

/* The header's lines about NAME_run_rows (--rows-axis); packs: batches
 * pack (emit_pack.h). */
static void put_rows_doc(Buf *h, const Graph *g, const char *p, const char *P, bool packs) {
  buf_printf(h, " *\n * Token count (compiled with --rows-axis): %s_run_rows(..., rows) and\n"
                " * %s_run_rows_ws(workspace, ..., rows) compute only the first `rows` tokens,\n"
                " * 1 <= rows <= %s_ROWS (%lld, the compiled length), as if the inputs held just\n"
                " * those: every product, norm and attention stops at `rows` (keys from it on\n"
                " * are masked), and the outputs' token rows from `rows` on are 0. The listed\n"
                " * inputs' elements from `rows` on do not change the outputs. They return\n"
                " * KILN_OK, or KILN_E_ARG (nothing written) for a count outside 1..%s_ROWS.\n"
                " * %s_run() is %s_run_rows(..., %s_ROWS). See kiln's docs/rows.md.\n",
             p, p, P, (long long)g->rows->max, P, p, p, P);
  if (!has_state(g))
    buf_printf(h, " *\n * Batches: %s_run_batch(..., rows, batch) and %s_run_batch_ws(workspace,\n"
                  " * ..., rows, batch) take each parameter as an array of `batch` of the\n"
                  " * single run's (x[b] is sentence b's) and `rows[b]` its token count; each\n"
                  " * sentence's outputs are bit for bit those of its own %s_run_rows call\n"
                  " * (%s). KILN_E_ARG (nothing written) for batch < 1, rows NULL or a\n"
                  " * count outside 1..%s_ROWS. See kiln's docs/batch.md.\n",
               p, p, p,
               packs ? "consecutive sentences whose counts fit in ROWS together run as one\n"
                       " * pack, their rows end to end through the products, over the one\n"
                       " * workspace"
                     : "sentences run one after another over the shared weights and the one\n"
                       " * workspace",
               P);
}

/* Did the op that made v (through views and copies) write its token rows
 * past the count as 0 itself: a bounded product or norm (bound_rows'
 * rows_keep=0)? A Mul of such rows makes them 0 too, but -0 where it
 * multiplies by a negative number. */
static bool zero_written(const Graph *g, int v) {
  for (;;) {
    while (g->vals[v].alias_of >= 0)
      v = g->vals[v].alias_of;
    int p = g->vals[v].producer;
    if (p < 0)
      return false;
    const Node *n = &g->nodes[p];
    if (n->op == OP_IDENTITY && n->nin > 0 && n->in[0] >= 0) {
      v = n->in[0];
      continue;
    }
    return n->op == OP_LINEAR || n->op == OP_BLOCKLINEAR || n->op == OP_ADDLAYERNORM;
  }
}

/* At the end of a run with a token count: each output's token rows from
 * kiln_rows[0] on set to 0 (+0, as a pack's sentences get them, emit_pack.h),
 * unless the op that made it wrote them so. */
static void put_rows_zero(Emit *e, const char **pn) {
  Graph *g = e->g;
  const RowsBound *rb = g->rows;
  for (int k = 0; rb && k < g->noutputs; k++) {
    int vid = g->outputs[k];
    if (vid >= rb->naxis || rb->axis[vid] < 0 || (rb->zero[vid] && zero_written(g, vid)) ||
        !is_param(g, g->ninputs + k))
      continue;
    const Type *t = &g->vals[vid].type;
    int a = rb->axis[vid];
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < t->rank; i++)
      *(i < a ? &outer : &inner) *= i == a ? 1 : t->dims[i];
    const char *y = arena_printf(g->arena, "p_%s", pn[g->ninputs + k]);
    emit_line(e, "for (int o = 0; o < %lld; o++) /* output '%s': its token rows from kiln_rows[0] on are 0 */",
              (long long)outer, emit_cm(g->arena, g->vals[vid].name));
    emit_line(e, "  memset(%s + o * %lld + kiln_rows[0] * %lld, 0, (size_t)(%lld - kiln_rows[0]) * %lld * sizeof *%s);",
              y, (long long)(t->dims[a] * inner), (long long)inner, (long long)t->dims[a], (long long)inner, y);
  }
}

static void emit_header(Buf *h, const Emit *e, const EmitOptions *o, const char **pn, const WeightsBlob *blob,
                        const Buf *tok) {
  Graph *g = e->g;
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
  if (g->rows)
    put_rows_doc(h, g, o->prefix, P, e->pack != NULL);
  if (o->threads > 1)
    emit_threads_doc(h, o->prefix, o->threads);
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
  if (g->rows)
    buf_printf(h, "#define %s_ROWS %lld /* most tokens NAME_run_rows takes: the compiled length */\n", P,
               (long long)g->rows->max);
  if (g->rows || o->threads > 1) { /* KILN_E_ARG: NAME_run_rows' count, NAME_set_threads' n */
    if (!blob)
      buf_puts(h, emit_weights_codes);
    buf_puts(h, emit_arg_codes);
  }
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
    put_state_decls(h, e, o->prefix, pn);
  put_signature(h, g, o->prefix, pn, SIG_RUN, blob != NULL);
  buf_puts(h, ";\n");
  put_signature(h, g, o->prefix, pn, SIG_RUN_WS, blob != NULL);
  buf_puts(h, ";\n");
  if (g->rows) {
    put_signature(h, g, o->prefix, pn, SIG_RUN_ROWS, true);
    buf_puts(h, ";\n");
    put_signature(h, g, o->prefix, pn, SIG_RUN_ROWS_WS, true);
    buf_puts(h, ";\n");
    if (!has_state(g)) {
      put_signature(h, g, o->prefix, pn, SIG_RUN_BATCH, true);
      buf_puts(h, ";\n");
      put_signature(h, g, o->prefix, pn, SIG_RUN_BATCH_WS, true);
      buf_puts(h, ";\n");
    }
  }
  if (o->threads > 1)
    emit_threads_decl(h, o->prefix);
  emit_header_end(h, tok);
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

/* The rest of the .c after the preamble: the weights (blob layout, the
 * literals, the bind function), the kernels, then the functions in fn. */
static void put_file_tail(Buf *c, Emit *e, Buf *fn) {
  if (e->blob)
    emit_blob_layout(c, e);
  emit_weight_arrays(c, e);
  if (e->blob)
    emit_bind_weights(c, e);
  kernels_put(e, c);
  buf_puts(c, "\n");
  buf_put(c, fn->s ? fn->s : "", fn->len);
  buf_free(fn);
}

/* The files' end, once the functions are in fn: a GGUF model's tokenizer
 * (--weights FILE.gguf with tokenizer.ggml.*: its tables, in blob mode
 * arrays in the blob, added to e before put_file_tail lays the blob out,
 * and an accessor) after the functions, then the weights, the kernels and
 * fn into c, and the header into h. False (fn freed) if the tokenizer
 * cannot be written. */
static bool put_files_end(Buf *c, Buf *fn, Buf *h, Emit *e, const EmitOptions *o, const char **pn, Diag *d) {
  Buf tok = {0};
  if (o->tokenizer && !tokenizer_emit(o->tokenizer, o->prefix, e, fn, &tok, d)) {
    buf_free(fn);
    buf_free(&tok);
    return false;
  }
  put_file_tail(c, e, fn);
  if (e->g->decoder)
    emit_decoder_header(h, e, o, pn, e->blob, &tok);
  else
    emit_header(h, e, o, pn, e->blob, &tok);
  buf_free(&tok);
  return true;
}

/* ---- packs (emit_pack.h) ---------------------------------------------------- */

/* "(const int64_t (*)[1][128])input_ids": parameter i of a single run as
 * the pointer to its whole array that the body of packs takes. */
static const char *whole(const Graph *g, const char **pn, int i) {
  const Value *v = &g->vals[i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs]];
  return arena_printf(g->arena, "(%s%s (*)%s)%s", i < g->ninputs ? "const " : "", dt_ctype(v->type.dt),
                      emit_array_dims(g->arena, &v->type), pn[i]);
}

/* The body's first lines with several sentences: the pack's token inputs,
 * each sentence's rows end to end (those the body reads). */
static void put_pack_stage(Buf *c, Emit *e, const char **pn, const char *text) {
  Graph *g = e->g;
  bool any = false;
  for (int i = 0; i < g->ninputs; i++) {
    int v = g->inputs[i];
    if (e->pack->stage[i] < 0 || !emit_has_token(text, arena_printf(g->arena, "p_%s", pn[i])))
      continue;
    const char *ct = dt_ctype(g->vals[v].type.dt);
    long long re = (long long)pack_row_elems(e, v);
    if (!any)
      buf_puts(c, "  if (kiln_nseg > 1) /* the pack's token inputs: its sentences' rows end to end */\n"
                  "    for (int kiln_s = 0; kiln_s < kiln_nseg; kiln_s++) {\n");
    any = true;
    buf_printf(c, "      memcpy((%s *)(void *)(ws + %lld) + kiln_seg_at[kiln_s] * %lld, %s[kiln_s], "
                  "(size_t)kiln_seg_rows[kiln_s] * %lld * sizeof(%s));\n",
               ct, (long long)e->pack->stage[i], re, pn[i], re, ct);
  }
  if (any)
    buf_puts(c, "    }\n");
}

/* The body's last lines with several sentences: each sentence's token rows
 * of each token output into its own array, 0 past its count. */
static void put_pack_unstage(Emit *e, const char **pn) {
  Graph *g = e->g;
  bool any = false;
  for (int k = 0; k < g->noutputs; k++) {
    int i = g->ninputs + k, v = g->outputs[k];
    if (e->pack->stage[i] < 0)
      continue;
    const char *ct = dt_ctype(g->vals[v].type.dt);
    long long re = (long long)pack_row_elems(e, v), s = (long long)g->rows->max;
    if (!any) {
      emit_line(e, "if (kiln_nseg > 1) /* each sentence's token rows of the outputs, 0 past its count */");
      emit_line(e, "  for (int kiln_s = 0; kiln_s < kiln_nseg; kiln_s++) {");
    }
    any = true;
    emit_line(e, "    memcpy(%s[kiln_s], p_%s + kiln_seg_at[kiln_s] * %lld, (size_t)kiln_seg_rows[kiln_s] * %lld * "
                 "sizeof(%s));", pn[i], pn[i], re, re, ct);
    emit_line(e, "    memset((%s *)%s[kiln_s] + kiln_seg_rows[kiln_s] * %lld, 0, (size_t)(%lld - kiln_seg_rows[kiln_s]) * "
                 "%lld * sizeof(%s));", ct, pn[i], re, s, re, ct);
  }
  if (any)
    emit_line(e, "  }");
}

/* NAME_packs(x..., rows): may a sentence join a pack? Its inputs that
 * only packs read as token inputs (an attention_mask that NAME_run_rows
 * reads whole) are 0 past its count; one that is not runs alone. */
static bool put_pack_check(Buf *c, Emit *e, const char **pn) {
  Graph *g = e->g;
  Buf args = {0}, body = {0};
  for (int i = 0; i < g->ninputs; i++) {
    if (!e->pack->inferred[i])
      continue;
    const Value *v = &g->vals[g->inputs[i]];
    buf_printf(&args, "%sconst %s %s%s", args.len ? ", " : "", dt_ctype(v->type.dt), pn[i],
               emit_array_dims(g->arena, &v->type));
    buf_printf(&body, "  for (int64_t i = (int64_t)rows * %lld; i < %lld; i++)\n"
                      "    if (((const %s *)%s)[i] != 0)\n      return 0;\n",
               (long long)pack_row_elems(e, g->inputs[i]), (long long)type_numel(&v->type), dt_ctype(v->type.dt),
               pn[i]);
  }
  if (args.len)
    buf_printf(c, "/* May a sentence join a pack? Its inputs that %s_run_rows reads whole are 0\n"
                  " * from its count on (docs/batch.md); one that is not so runs alone. */\n"
                  "static int %s_packs(%s, int rows) {\n%s  return 1;\n}\n\n", e->prefix, e->prefix, args.s,
               body.s);
  bool any = args.len > 0;
  buf_free(&args);
  buf_free(&body);
  return any;
}

/* NAME_run_batch_ws with packs: the sentences from kiln_b on that fit in
 * NAME_ROWS rows together (and may pack) go through the body at once; a
 * sentence alone runs as NAME_run_rows. NAME_run_batch is it on the
 * static workspace. */
static void put_pack_batch_entries(Buf *c, Emit *e, const EmitOptions *o, const char **pn) {
  Graph *g = e->g;
  const char *p = o->prefix, *P = emit_upper(g->arena, p);
  bool check = put_pack_check(c, e, pn);
  put_signature(c, g, p, pn, SIG_RUN_BATCH_WS, true);
  buf_printf(c, " {\n  if (batch < 1 || !rows)\n    return KILN_E_ARG;\n"
                "  for (int kiln_b = 0; kiln_b < batch; kiln_b++)\n"
                "    if (rows[kiln_b] < 1 || rows[kiln_b] > %s_ROWS)\n      return KILN_E_ARG;\n", P);
  if (e->blob)
    buf_puts(c, "  if (!bound_weights)\n    return KILN_E_WEIGHTS_UNBOUND;\n");
  buf_printf(c, "  int64_t kiln_at[%s_ROWS], kiln_n[%s_ROWS]; /* a pack's sentences: first row, rows */\n"
                "  for (int kiln_b = 0; kiln_b < batch;) {\n"
                "    int kiln_k = 0; /* the pack: sentences kiln_b .. kiln_b + kiln_k - 1 */\n"
                "    int64_t kiln_total = 0;\n"
                "    while (kiln_b + kiln_k < batch && kiln_total + rows[kiln_b + kiln_k] <= %s_ROWS", P, P, P);
  if (check) {
    buf_printf(c, " &&\n           %s_packs(", p);
    bool first = true;
    for (int i = 0; i < g->ninputs; i++)
      if (e->pack->inferred[i]) {
        buf_printf(c, "%s%s[kiln_b + kiln_k]", first ? "" : ", ", pn[i]);
        first = false;
      }
    buf_puts(c, ", rows[kiln_b + kiln_k])");
  }
  buf_printf(c, ") {\n      kiln_at[kiln_k] = kiln_total;\n      kiln_n[kiln_k] = rows[kiln_b + kiln_k];\n"
                "      kiln_total += kiln_n[kiln_k++];\n    }\n"
                "    if (kiln_k < 2) { /* a sentence alone */\n      int kiln_rc = %s_run_rows_ws(workspace", p);
  for (int i = 0; i < g->ninputs + g->noutputs; i++)
    buf_printf(c, ", %s[kiln_b]", pn[i]);
  buf_printf(c, ", rows[kiln_b]);\n      if (kiln_rc != KILN_OK)\n        return kiln_rc;\n      kiln_b++;\n"
                "      continue;\n    }\n    const int64_t kiln_count[1] = {kiln_total};\n"
                "    %s_forward((unsigned char *)workspace%s", p, e->blob ? ", bound_weights" : "");
  for (int i = 0; i < g->ninputs + g->noutputs; i++)
    buf_printf(c, ", %s + kiln_b", pn[i]);
  buf_puts(c, ", kiln_count, kiln_k, kiln_at, kiln_n);\n    kiln_b += kiln_k;\n  }\n  return KILN_OK;\n}\n\n");
  put_signature(c, g, p, pn, SIG_RUN_BATCH, true);
  buf_printf(c, " {\n  return %s_run_batch_ws(%s_workspace", p, p);
  put_args(c, g, pn, "rows, batch");
  buf_puts(c, ");\n}\n\n");
}

/* NAME_run_batch[_ws] (ws: with a workspace): every count checked before
 * anything is written, then NAME_run_rows[_ws] once per sentence, in
 * order, on the sentence's slice of each parameter and its count: the
 * batch shares the packed weights and the one workspace, and each
 * sentence's outputs are those of its own NAME_run_rows call. */
static void put_batch_entry(Buf *c, Emit *e, const EmitOptions *o, const char **pn, bool ws) {
  Graph *g = e->g;
  const char *p = o->prefix, *P = emit_upper(g->arena, p);
  put_signature(c, g, p, pn, ws ? SIG_RUN_BATCH_WS : SIG_RUN_BATCH, true);
  buf_printf(c, " {\n  if (batch < 1 || !rows)\n    return KILN_E_ARG;\n"
                "  for (int kiln_b = 0; kiln_b < batch; kiln_b++)\n"
                "    if (rows[kiln_b] < 1 || rows[kiln_b] > %s_ROWS)\n      return KILN_E_ARG;\n", P);
  if (e->blob)
    buf_puts(c, "  if (!bound_weights)\n    return KILN_E_WEIGHTS_UNBOUND;\n");
  buf_printf(c, "  for (int kiln_b = 0; kiln_b < batch; kiln_b++) {\n    int kiln_rc = %s_run_rows%s(%s", p,
             ws ? "_ws" : "", ws ? "workspace, " : "");
  bool first = true;
  for (int i = 0; i < g->ninputs + g->noutputs; i++)
    if (is_param(g, i)) {
      buf_printf(c, "%s%s[kiln_b]", first ? "" : ", ", pn[i]);
      first = false;
    }
  buf_printf(c, "%srows[kiln_b]);\n    if (kiln_rc != KILN_OK)\n      return kiln_rc;\n  }\n"
                "  return KILN_OK;\n}\n\n", first ? "" : ", ");
}

/* With a token count: NAME_run_rows_ws checks it (and the binding) and
 * calls NAME_forward; NAME_run_rows owns the static workspace; NAME_run
 * and NAME_run_ws pass the compiled length; NAME_run_batch[_ws] (not for
 * a model with a state struct) call NAME_run_rows[_ws] per sentence. */
static void put_rows_entries(Buf *c, Emit *e, const EmitOptions *o, const char **pn) {
  Graph *g = e->g;
  const char *p = o->prefix, *P = emit_upper(g->arena, p);
  put_signature(c, g, p, pn, SIG_RUN_ROWS_WS, true);
  buf_printf(c, " {\n  if (rows < 1 || rows > %s_ROWS)\n    return KILN_E_ARG;\n", P);
  if (e->blob)
    buf_puts(c, "  if (!bound_weights)\n    return KILN_E_WEIGHTS_UNBOUND;\n");
  if (e->pack) { /* a pack of one sentence, at row 0 */
    buf_printf(c, "  const int64_t kiln_count[1] = {rows}, kiln_first[1] = {0};\n  %s_forward((unsigned char *)workspace%s",
               p, e->blob ? ", bound_weights" : "");
    for (int i = 0; i < g->ninputs + g->noutputs; i++)
      buf_printf(c, ",\n      %s", whole(g, pn, i));
    buf_puts(c, ", kiln_count, 1, kiln_first, kiln_count);\n  return KILN_OK;\n}\n\n");
    buf_printf(c, "static KILN_ALIGNED(64) unsigned char %s_workspace[%lld]; /* %s_run_rows' and %s_run_batch's */\n\n",
               p, (long long)(g->ws_size ? g->ws_size : 1), p, p);
    put_signature(c, g, p, pn, SIG_RUN_ROWS, true);
    buf_printf(c, " {\n  return %s_run_rows_ws(%s_workspace", p, p);
  } else {
    buf_printf(c, "  const int64_t kiln_count[1] = {rows};\n  %s_forward((unsigned char *)workspace%s", p,
               e->blob ? ", bound_weights" : "");
    put_args(c, g, pn, "kiln_count");
    buf_puts(c, ");\n  return KILN_OK;\n}\n\n");
    put_signature(c, g, p, pn, SIG_RUN_ROWS, true);
    buf_printf(c, " {\n  static KILN_ALIGNED(64) unsigned char workspace[%lld];\n  return %s_run_rows_ws(workspace",
               (long long)(g->ws_size ? g->ws_size : 1), p);
  }
  put_args(c, g, pn, "rows");
  buf_puts(c, ");\n}\n\n");
  for (int k = 0; k < 2; k++) {
    put_signature(c, g, p, pn, k ? SIG_RUN : SIG_RUN_WS, e->blob != NULL);
    buf_printf(c, " {\n  %s%s_run_rows%s(%s", e->blob ? "return " : "(void)", p, k ? "" : "_ws", k ? "" : "workspace");
    Buf args = {0};
    put_args(&args, g, pn, arena_printf(g->arena, "%s_ROWS", P));
    buf_puts(c, k ? args.s + 2 : args.s);
    buf_free(&args);
    buf_puts(c, ");\n}\n");
  }
  if (e->pack) {
    buf_puts(c, "\n");
    put_pack_batch_entries(c, e, o, pn);
  } else if (!has_state(g)) {
    buf_printf(c, "\n/* %s_run_batch: sentence after sentence (no packs: %s) */\n", p,
               emit_cm(g->arena, e->pack_why ? e->pack_why : "?"));
    put_batch_entry(c, e, o, pn, true);
    put_batch_entry(c, e, o, pn, false);
  }
}

bool emit_c(Graph *g, const EmitOptions *o, Buf *c, Buf *h, WeightsBlob *blob, Diag *d) {
  Arena *a = g->arena;
  Emit e = {.g = g, .prefix = o->prefix, .isa = o->isa, .threads = o->threads > 1 ? o->threads : 1,
            .gemm = o->gemm, .precision = o->precision, .profile = o->profile};
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
    static const char *const reserved[] = {"kiln_threads_n", "kiln_threads_pool", "kiln_threads_pool_forked",
                                           "kiln_mode_", "kiln_t0_"};
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
  if (g->rows) { /* the token count: the body function's last parameter */
    io_slot[g->rows->vid] = g->ninputs + g->noutputs;
    e.refs[g->rows->vid] = "kiln_rows";
    nameset_add(e.names, "kiln_rows");
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
  Buf body = {0}, fn = {0};
  int64_t ws_end = 0;
  int *node_entry = NULL;
  Buf *bodies = NULL;
  if (g->decoder) { /* one function per entry point */
    if (!(node_entry = graph_decoder_entries(g, d)))
      return false;
    bodies = arena_alloc(a, sizeof(Buf) * (size_t)g->decoder->nentries);
    if (!o->unroll_layers)
      loops_plan(&e, node_entry, g->decoder->nentries, pn);
    for (int k = 0; k < g->decoder->nentries; k++)
      emit_forward_body(&e, &bodies[k], &ws_end, node_entry, k);
  } else {
    if (!o->unroll_layers)
      loops_plan(&e, NULL, 1, pn);
    if (g->rows && (e.pack = pack_plan(&e, pn, &e.pack_why))) { /* the names its code uses */
      static const char *const reserved[] = {"kiln_nseg", "kiln_seg_at", "kiln_seg_rows", "kiln_s"};
      for (int i = 0; i < KILN_COUNT(reserved); i++)
        nameset_add(e.names, reserved[i]);
      for (int c = 0; c < e.ks->ncalls; c++)
        for (int i = 0; i < e.ks->calls[c].nargs; i++)
          nameset_add(e.names, arena_printf(a, "kiln_f%d", i));
      nameset_add(e.names, arena_printf(a, "%s_workspace", o->prefix));
      nameset_add(e.names, arena_printf(a, "%s_packs", o->prefix));
      g->ws_size = e.pack->ws_size > g->ws_size ? e.pack->ws_size : g->ws_size;
    }
    emit_forward_body(&e, &body, &ws_end, NULL, 0);
  }

  buf_printf(c, "/* %s.c — generated by kiln %s from %s. Do not edit.\n * See %s for the API. */\n",
             o->prefix, KILN_VERSION, emit_cm(a, o->source ? o->source : "a model"), emit_cm(a, o->header));
  buf_printf(c, "#include \"%s\"\n\n#include <math.h>\n#include <string.h>\n\n", c_text(a, CT_HEADER, o->header));
  /* gcc's tuning for recent Intel CPUs prefers 256-bit vectors even where
   * -march enables AVX-512, and then splits the kernels' 16-wide GNU C
   * vectors (the block products ran 3-9x slower): the generated code asks
   * for 512 itself, so that -march=native is all a build needs (DESIGN.md,
   * "Vector width under gcc") */
  buf_puts(c, "#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__) && !defined(KILN_PREFER_256)\n"
              "#pragma GCC target(\"prefer-vector-width=512\") /* -DKILN_PREFER_256: gcc's own choice */\n"
              "#endif\n"
              "#include \"kiln_rt.h\"\n\n");
  if (o->gemm == GEMM_OPENBLAS)
    buf_puts(c, "#include <cblas.h> /* --gemm=openblas: link with -lopenblas */\n\n");
  if (e.uses_bf16_dp)
    buf_puts(c, "#if defined(__AVX512BF16__) && defined(__GNUC__) && !defined(KILN_GEMM_NO_BF16DP)\n"
                "#include <immintrin.h> /* --precision=bf16: vdpbf16ps (_mm512_dpbf16_ps) */\n#endif\n\n");
  if (e.uses_vnni)
    buf_puts(c, "#if defined(__GNUC__) && !defined(KILN_GEMM_SCALAR) && (defined(__AVX2__) || defined(__AVX512F__))\n"
                "#include <immintrin.h> /* --quantize=w8a8, --kquant-act=q8: vpdpbusd, vpmaddwd */\n#endif\n\n");
  if (e.threads > 1)
    put_parallel_macro(c, g, o->prefix, e.threads);
  if (e.profile)
    buf_printf(c, "/* kiln bench --profile: called after each kernel with its IR node's index */\n"
                  "void %s_profile_mark(int node);\n\n", o->prefix);
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
    return put_files_end(wc, &fn, h, &e, o, pn, d);
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
  put_rows_zero(&e, pn);
  if (e.pack)
    put_pack_unstage(&e, pn);
  /* the signature, then the pointers the body reads (only those) */
  const char *text = body.s ? body.s : "";
  bool fwd = e.blob || g->rows; /* the body in NAME_forward, which the entry points call */
  put_signature(c, g, o->prefix, pn, e.pack ? SIG_FORWARD_PACKS : fwd ? SIG_FORWARD : SIG_RUN_WS, e.blob != NULL);
  buf_puts(c, " {\n");
  if (fwd && !emit_has_token(text, "ws"))
    buf_puts(c, "  (void)ws;\n");
  if (e.blob && !emit_has_token(text, "weights"))
    buf_puts(c, "  (void)weights;\n");
  if (g->rows && !emit_has_token(text, "kiln_rows"))
    buf_puts(c, "  (void)kiln_rows;\n");
  if (!fwd)
    buf_printf(c, "  unsigned char *ws = (unsigned char *)workspace;\n%s", emit_has_token(text, "ws") ? "" : "  (void)ws;\n");
  bool state_read = false;
  for (int i = 0; i < g->ninputs + g->noutputs; i++) {
    bool in = i < g->ninputs;
    int vid = in ? g->inputs[i] : g->outputs[i - g->ninputs];
    const char *ct = dt_ctype(g->vals[vid].type.dt);
    if (!in && !is_param(g, i))
      continue;
    const char *local = arena_printf(a, "p_%s", pn[i]);
    if (emit_has_token(text, local) && e.pack && e.pack->stage[i] >= 0) /* a pack's: its sentences end to end */
      buf_printf(c, "  %s%s *%s = kiln_nseg > 1 ? (%s%s *)(void *)(ws + %lld) : (%s%s *)%s;\n", in ? "const " : "",
                 ct, local, in ? "const " : "", ct, (long long)e.pack->stage[i], in ? "const " : "", ct, pn[i]);
    else if (emit_has_token(text, local))
      buf_printf(c, "  %s%s *%s = (%s%s *)%s%s;\n", in ? "const " : "", ct, local, in ? "const " : "", ct,
                 is_param(g, i) ? "" : "state->", is_param(g, i) ? pn[i] : loops_state_field(&e, i, pn[i]));
    else if (is_param(g, i) && !emit_has_token(text, pn[i]))
      buf_printf(c, "  (void)%s; /* not read */\n", pn[i]);
    state_read = state_read || !is_param(g, i);
  }
  if (has_state(g) && !state_read && !emit_has_token(text, "state"))
    buf_puts(c, "  (void)state;\n");
  if (e.pack)
    put_pack_stage(c, &e, pn, text);
  if (e.threads > 1)
    buf_printf(c, "  KILN_ADAPT_BEGIN(%s);\n", emit_adapt_name(g, 0));
  buf_put(c, body.s ? body.s : "", body.len);
  buf_free(&body);
  if (e.threads > 1)
    buf_printf(c, "  KILN_ADAPT_END(%s);\n", emit_adapt_name(g, 0));
  buf_puts(c, "}\n\n");
  if (g->rows) {
    put_rows_entries(c, &e, o, pn);
  } else if (e.blob) {
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
  if (!g->rows) {
  put_signature(c, g, o->prefix, pn, SIG_RUN, e.blob != NULL);
  buf_printf(c, " {\n  static KILN_ALIGNED(64) unsigned char workspace[%lld];\n  %s%s_run_ws(workspace%s",
             (long long)(g->ws_size ? g->ws_size : 1), e.blob ? "return " : "", o->prefix,
             has_state(g) ? ", state" : "");
  for (int i = 0; i < g->ninputs + g->noutputs; i++)
    if (is_param(g, i))
      buf_printf(c, ", %s", pn[i]);
  buf_puts(c, ");\n}\n");
  }
  if (has_state(g))
    put_state_init(c, &e, pn);
  if (!put_files_end(wc, &fn, h, &e, o, pn, d))
    return false;
  if (o->weight_bytes) { /* the weights as stored: packed, bf16 or int8 where the kernels read them so */
    *o->weight_bytes = 0;
    for (int i = 0; i < e.narrays; i++)
      *o->weight_bytes += e.arrays[i].n * (int64_t)dt_size(e.arrays[i].dt);
  }
  return true;
}
