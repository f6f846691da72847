/* emit_kernel.c — nodes into kernels, kernels into static functions
 * (emit_kernel.h). */
#include "emit_kernel.h"

#include <ctype.h>
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
  const char *body = ks->body.s ? ks->body.s : "";
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
    ks->kernels[ks->nkernels++] = (Kernel){cname_unique(e->names, stem, "k"), kernel_comment(e, n, ks->kp, ks->nkp),
                                           arena_strdup(a, t.s), h, 0, n->op};
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

void kernels_put(Emit *e, Buf *c) {
  KernelSet *ks = e->ks;
  for (int k = 0; k < ks->nkernels; k++) {
    const Kernel *kn = &ks->kernels[k];
    buf_printf(c, "/* %s", kn->comment);
    if (kn->calls > 1)
      buf_printf(c, " (%d calls)", kn->calls);
    buf_printf(c, " */\nstatic void %s%s\n", kn->name, kn->text);
  }
  buf_free(&ks->body);
}
