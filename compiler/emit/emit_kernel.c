/* emit_kernel.c — nodes into kernels, kernels into static functions
 * (emit_kernel.h). */
#include "emit_kernel.h"
#include "pool_rule.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnames.h"
#include "../ir/ops.h"

/* KParam.order = kind * KPARAM_KIND + index */
#define KPARAM_KIND 100000

KernelSet *kernels_new(Arena *a, const int *io_slot) {
  KernelSet *ks = arena_alloc(a, sizeof *ks);
  ks->io_slot = io_slot;
  return ks;
}

void kernel_begin(Emit *e, const Node *n) {
  KernelSet *ks = e->ks;
  KILN_ASSERT(!ks->node);
  ks->node = n;
  ks->nkp = 0;
  ks->body.len = 0;
  if (ks->body.s)
    ks->body.s[0] = 0;
  e->out = &ks->body;
  e->indent = 1;
  e->tmp = 0; /* local names restart: the text must not depend on the node's place */
}

int emit_storage_root(const Emit *e, int v) {
  const Graph *g = e->g;
  while (e->ks->io_slot[v] < 0 && !g->vals[v].data && g->vals[v].alias_of >= 0)
    v = g->vals[v].alias_of;
  return v;
}

/* The storage behind value v: a parameter, a constant or a workspace
 * offset (two values at one offset that both live at a node are one
 * value written in place over the other: plan.c). */
static int64_t storage_of(const Emit *e, int v) {
  const Graph *g = e->g;
  v = emit_storage_root(e, v);
  if (e->ks->io_slot[v] >= 0)
    return (1LL << 48) | e->ks->io_slot[v];
  if (g->vals[v].data)
    return (2LL << 48) | v;
  KILN_ASSERT(g->vals[v].ws_offset >= 0);
  return (3LL << 48) | g->vals[v].ws_offset;
}

static int slot_of(const int *list, int n, int v) {
  for (int i = 0; i < n; i++)
    if (list[i] == v)
      return i;
  return -1;
}

const char *kernel_param(Emit *e, int vid, int arr) {
  KernelSet *ks = e->ks;
  const Node *n = ks->node;
  Arena *a = e->g->arena;
  int64_t loc = arr >= 0 ? (4LL << 48) | arr : storage_of(e, vid);
  int out = arr >= 0 ? -1 : slot_of(n->out, n->nout, vid);
  for (int i = 0; i < ks->nkp; i++)
    if (ks->kp[i].loc == loc) {
      if (out >= 0)
        ks->kp[i].out_vid = vid;
      return ks->kp[i].name;
    }
  /* kind 0 in<slot>, 1 arr<k>, 2 aux<k>, 3 out<j>; arr and aux numbered
   * in order of first use */
  int in = arr >= 0 ? -1 : slot_of(n->in, n->nin, vid);
  int kind = in >= 0 ? 0 : arr >= 0 ? 1 : out < 0 ? 2 : 3, k = in >= 0 ? in : out;
  if (kind == 1 || kind == 2) {
    k = 0;
    for (int i = 0; i < ks->nkp; i++)
      k += ks->kp[i].order / KPARAM_KIND == kind;
  }
  static const char *const stems[] = {"in", "arr", "aux", "out"};
  const char *name = arena_printf(a, "%s%d", stems[kind], k);
  ks->kp = arena_grow(a, ks->kp, &ks->capkp, ks->nkp + 1, sizeof(KParam));
  ks->kp[ks->nkp++] = (KParam){name, arr >= 0 ? -1 : vid, arr, out >= 0 ? vid : -1, loc,
                               arr >= 0 ? e->arrays[arr].dt : e->g->vals[vid].type.dt, kind * KPARAM_KIND + k};
  return name;
}

static int cmp_param(const void *x, const void *y) {
  return ((const KParam *)x)->order - ((const KParam *)y)->order;
}

bool emit_has_token(const char *text, const char *name) {
  size_t k = strlen(name);
  for (const char *p = strstr(text, name); p; p = strstr(p + 1, name)) {
    bool left = p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
    bool right = !(isalnum((unsigned char)p[k]) || p[k] == '_');
    if (left && right)
      return true;
  }
  return false;
}

/* Threads (emit_parallel_for in emit.h): the line after each
 * KILN_PARALLEL_FOR marker is a loop `for (T i = A; i < B; i++)` (or
 * `i += C`); the pair becomes `KILN_PARALLEL_FOR(T, i, A, B, C)` and what
 * followed the loop's `)`, the form kiln_rt.h splits into tiles. A kernel
 * with more parameters than a pool job carries (EMIT_JOB_ARGS) keeps its
 * loops serial. KILN_SHARED arrays must come before the first split loop:
 * the lead publishes their addresses with the job there. Returns the new
 * text; *split: whether any loop is split. */
static char *split_loops(Arena *a, const char *body, bool serial, bool *split) {
  static const char marker[] = "KILN_PARALLEL_FOR\n";
  Buf b = {0};
  *split = false;
  for (const char *p = body; *p;) {
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) + 1 : strlen(p);
    const char *q = p + strspn(p, " ");
    if (strncmp(q, marker, sizeof marker - 1)) {
      KILN_ASSERT(!*split || strncmp(q, "KILN_SHARED(", 12));
      buf_put(&b, p, len);
      p += len;
      continue;
    }
    p += len; /* the marker; then the loop */
    eol = strchr(p, '\n');
    KILN_ASSERT(eol);
    len = (size_t)(eol - p) + 1;
    if (serial) {
      buf_put(&b, p, len);
      p += len;
      continue;
    }
    size_t ind = strspn(p, " ");
    char type[32], var[64];
    int n = 0;
    KILN_ASSERT(sscanf(p + ind, "for (%31[a-z0-9_] %63[A-Za-z0-9_] = %n", type, var, &n) == 2 && n > 0);
    const char *lo = p + ind + n, *semi = strstr(lo, "; ");
    KILN_ASSERT(semi && semi < eol);
    const char *hi = semi + 2;
    size_t vl = strlen(var);
    KILN_ASSERT(!strncmp(hi, var, vl) && !strncmp(hi + vl, " < ", 3));
    hi += vl + 3;
    const char *semi2 = strstr(hi, "; ");
    KILN_ASSERT(semi2 && semi2 < eol && !strncmp(semi2 + 2, var, vl));
    const char *inc = semi2 + 2 + vl, *step, *rest;
    size_t step_len;
    if (!strncmp(inc, "++)", 3)) {
      step = "1";
      step_len = 1;
      rest = inc + 3;
    } else {
      KILN_ASSERT(!strncmp(inc, " += ", 4));
      step = inc + 4;
      int depth = 0;
      const char *r = step;
      for (; r < eol && (depth > 0 || *r != ')'); r++)
        depth += *r == '(' ? 1 : *r == ')' ? -1 : 0;
      KILN_ASSERT(r < eol);
      step_len = (size_t)(r - step);
      rest = r + 1;
    }
    buf_printf(&b, "%.*sKILN_PARALLEL_FOR(%s, %s, %.*s, %.*s, %.*s)%.*s", (int)ind, p, type, var, (int)(semi - lo), lo,
               (int)(semi2 - hi), hi, (int)step_len, step, (int)(eol + 1 - rest), rest);
    *split = true;
    p += len;
  }
  char *r = arena_strdup(a, b.s ? b.s : "");
  buf_free(&b);
  return r;
}

static uint64_t text_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* "AddLayerNorm" -> "add_layer_norm", "QLinearMatMul" -> "qlinear_mat_mul" */
static const char *snake(Arena *a, const char *s) {
  size_t n = strlen(s);
  char *r = arena_alloc(a, 2 * n + 1), *q = r;
  for (size_t i = 0; i < n; i++) {
    if (i && isupper((unsigned char)s[i]) && (islower((unsigned char)s[i - 1]) || isdigit((unsigned char)s[i - 1])))
      *q++ = '_';
    *q++ = (char)tolower((unsigned char)s[i]);
  }
  return r;
}

static const char *kernel_comment(Emit *e, const Node *n, const KParam *kp, int nkp) {
  Graph *g = e->g;
  Buf b = {0};
  char ts[160];
  buf_printf(&b, "%s:", node_op_name(n));
  for (int i = 0; i < n->nin; i++)
    if (n->in[i] >= 0)
      buf_printf(&b, "%s in%d %s", i ? "," : "", i, type_str(&g->vals[n->in[i]].type, ts, sizeof ts));
  buf_puts(&b, " ->");
  for (int i = 0; i < n->nout; i++)
    buf_printf(&b, "%s out%d %s", i ? "," : "", i, type_str(&g->vals[n->out[i]].type, ts, sizeof ts));
  for (int i = 0; i < nkp; i++) /* an output stored over an input */
    for (int j = 0; j < n->nout; j++)
      if (kp[i].out_vid == n->out[j] && strncmp(kp[i].name, "out", 3))
        buf_printf(&b, "; out%d is written over %s", j, kp[i].name);
  char *r = arena_strdup(g->arena, b.s);
  buf_free(&b);
  return r;
}

void kernel_end(Emit *e) {
  KernelSet *ks = e->ks;
  Graph *g = e->g;
  Arena *a = g->arena;
  const Node *n = ks->node;
  ks->node = NULL;
  e->out = NULL;
  ks->calls = arena_grow(a, ks->calls, &ks->capcalls, ks->ncalls + 1, sizeof(KCall));
  KCall *call = &ks->calls[ks->ncalls++];
  *call = (KCall){.node = n, .kernel = -1};
  bool split = false;
  const char *body = ks->body.s ? ks->body.s : "";
  if (strstr(body, "KILN_PARALLEL_FOR"))
    body = split_loops(a, body, ks->nkp > EMIT_JOB_ARGS, &split);
  char why[160];
  if (split && !pool_rule_ok(body, why, sizeof why)) {
    fprintf(stderr, "kiln: internal error: the %s kernel breaks the pool rule (pool_rule.c): %s\n", node_op_name(n),
            why);
    KILN_ASSERT(!"the pool rule");
  }
  if (ks->nkp == 0) { /* nothing read or written: a comment ("no copy: a view") */
    call->text = arena_strdup(a, body);
    return;
  }
  qsort(ks->kp, (size_t)ks->nkp, sizeof(KParam), cmp_param);
  Buf t = {0};
  buf_puts(&t, "(");
  size_t col = strlen(node_op_name(n)) + 20; /* "static void name_N(" */
  for (int i = 0; i < ks->nkp; i++) {
    const KParam *p = &ks->kp[i];
    const char *decl = arena_printf(a, "%s%s *restrict %s", p->out_vid >= 0 ? "" : "const ", dt_ctype(p->dt),
                                    p->name);
    bool wrap = i && col + strlen(decl) + 2 > 100;
    buf_printf(&t, "%s%s", !i ? "" : wrap ? ",\n    " : ", ", decl);
    col = (wrap ? 4 : col + 2) + strlen(decl);
  }
  buf_puts(&t, ") {\n");
  for (int i = 0; i < ks->nkp; i++) /* an _emit may ask for a name it ends up not using */
    if (!emit_has_token(body, ks->kp[i].name))
      buf_printf(&t, "  (void)%s;\n", ks->kp[i].name);
  buf_puts(&t, body);
  buf_puts(&t, "}\n");
  uint64_t h = text_hash(t.s);
  int k;
  for (k = 0; k < ks->nkernels; k++)
    if (ks->kernels[k].hash == h && !strcmp(ks->kernels[k].text, t.s))
      break;
  if (k == ks->nkernels) {
    ks->kernels = arena_grow(a, ks->kernels, &ks->capkernels, ks->nkernels + 1, sizeof(Kernel));
    int same = 0; /* kernels of this op so far: linear_0, linear_1, ... */
    for (int i = 0; i < ks->nkernels; i++)
      same += ks->kernels[i].op == n->op;
    const char *stem = arena_printf(a, "%s_%d", snake(a, node_op_name(n)), same);
    ks->kernels[ks->nkernels++] = (Kernel){cname_unique(e->names, stem, "k"),
                                           kernel_comment(e, n, ks->kp, ks->nkp),
                                           arena_strdup(a, t.s),
                                           h,
                                           0,
                                           n->op,
                                           arena_dup(a, ks->kp, sizeof(KParam) * (size_t)ks->nkp),
                                           ks->nkp,
                                           split};
  }
  buf_free(&t);
  ks->kernels[k].calls++;
  call->kernel = k;
  call->nargs = ks->nkp;
  call->args = arena_dup(a, ks->kp, sizeof(KParam) * (size_t)ks->nkp);
}

void kernel_abort(Emit *e) {
  e->ks->node = NULL;
  e->out = NULL;
}

/* A kernel with split loops is a job for the thread pool (kiln_rt.h):
 * its first statement hands its arguments to KILN_TEAM, and NAME_job, the
 * kernel as a function of that array, is what the pool's workers run. */
static void put_split_kernel(Buf *c, const Kernel *kn, const char *job) {
  const char *open = strstr(kn->text, ") {\n");
  KILN_ASSERT(open);
  open += 4;
  buf_printf(c, "static void %s%.*s  KILN_TEAM(%s", kn->name, (int)(open - kn->text), kn->text, job);
  for (int i = 0; i < kn->nkp; i++)
    buf_printf(c, ", %s", kn->kp[i].name);
  buf_printf(c, ");\n%s", open);
  buf_printf(c, "static void %s(const void *const *a) { /* %s on a thread of the pool */\n  %s(", job, kn->name,
             kn->name);
  for (int i = 0; i < kn->nkp; i++) {
    const KParam *p = &kn->kp[i];
    if (p->out_vid >= 0)
      buf_printf(c, "%s(%s *)(uintptr_t)a[%d]", i ? ", " : "", dt_ctype(p->dt), i);
    else
      buf_printf(c, "%sa[%d]", i ? ", " : "", i);
  }
  buf_puts(c, ");\n}\n\n");
}

void kernels_put(Emit *e, Buf *c) {
  KernelSet *ks = e->ks;
  for (int k = 0; k < ks->nkernels; k++) {
    const Kernel *kn = &ks->kernels[k];
    const char *job = NULL;
    if (kn->split) {
      job = cname_unique(e->names, arena_printf(e->g->arena, "%s_job", kn->name), "k");
      buf_printf(c, "static void %s(const void *const *a);\n", job);
    }
    buf_printf(c, "/* %s", kn->comment);
    if (kn->calls > 1)
      buf_printf(c, " (%d calls)", kn->calls);
    buf_puts(c, " */\n");
    if (kn->split)
      put_split_kernel(c, kn, job);
    else
      buf_printf(c, "static void %s%s\n", kn->name, kn->text);
  }
  buf_free(&ks->body);
}
