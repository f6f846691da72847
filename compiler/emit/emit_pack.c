/* emit_pack.c — which calls of an encoder's body run once over a pack of
 * sentences and which once per sentence, and the workspace the packs add
 * (emit_pack.h). The token axes come from bound_rows' second walk
 * (RowsBound.pack_axis); what is not sure to pack leaves batches running
 * sentence after sentence, with the reason. */
#include "emit_pack.h"

#include <string.h>

#include "emit_forward.h"
#include "emit_kernel.h"
#include "../ir/ops.h"

#define PACK_ALIGN 64

static int64_t align_up(int64_t x) { return (x + PACK_ALIGN - 1) / PACK_ALIGN * PACK_ALIGN; }

/* Are v's token rows contiguous: every dim before its token axis 1? */
static bool contiguous(const PackPlan *pp, const Value *v, int vid) {
  for (int a = 0; a < pp->ax[vid]; a++)
    if (v->type.dims[a] != 1)
      return false;
  return pp->ax[vid] >= 0;
}

int64_t pack_row_elems(const Emit *e, int v) {
  const Type *t = &e->g->vals[v].type;
  return type_numel(t) / e->g->rows->max;
}

/* Token axes, and which values vary per sentence, for every value: the
 * walk's, and for a value made after it (equal_layers' copy of an output
 * that later nodes read: x of y = Identity(x)) its copy's. */
static bool value_kinds(Emit *e, PackPlan *pp, const char **why) {
  Graph *g = e->g;
  const RowsBound *rb = g->rows;
  int nv = g->nvals + 1;
  pp->ax = arena_alloc(g->arena, sizeof(int) * (size_t)nv);
  pp->zero = arena_alloc(g->arena, sizeof(bool) * (size_t)nv);
  pp->vkind = arena_alloc(g->arena, (size_t)nv);
  bool *known = arena_alloc(g->arena, (size_t)nv);
  for (int v = 0; v < g->nvals; v++) {
    known[v] = v < rb->naxis;
    pp->ax[v] = known[v] ? rb->pack_axis[v] : -1;
    pp->zero[v] = known[v] && rb->pack_zero[v];
  }
  for (int i = 0; i < g->nnodes; i++) {
    const Node *n = &g->nodes[i];
    if (n->dead || n->op != OP_IDENTITY || n->nin < 1 || n->in[0] < 0 || known[n->in[0]] || !known[n->out[0]])
      continue;
    pp->ax[n->in[0]] = pp->ax[n->out[0]];
    pp->zero[n->in[0]] = pp->zero[n->out[0]];
    known[n->in[0]] = true;
  }
  bool *var = arena_alloc(g->arena, (size_t)nv);
  for (int i = 0; i < g->ninputs; i++)
    var[g->inputs[i]] = !g->vals[g->inputs[i]].is_state;
  for (int i = 0; i < g->nnodes; i++) {
    const Node *n = &g->nodes[i];
    bool vary = false;
    for (int j = 0; j < n->nin && !n->dead; j++)
      vary = vary || (n->in[j] >= 0 && n->in[j] != rb->vid && var[n->in[j]]);
    for (int j = 0; j < n->nout && !n->dead; j++)
      var[n->out[j]] = vary && !g->vals[n->out[j]].data;
  }
  for (int v = 0; v < g->nvals; v++) {
    pp->vkind[v] = !var[v] ? 'C' : pp->ax[v] >= 0 ? 'T' : 'U';
    if (var[v] && !known[v]) {
      *why = arena_printf(g->arena, "'%s' was made after the token axes were found", g->vals[v].name);
      return false;
    }
  }
  return true;
}

/* Does input slot i of n line up with the output's elements (broadcast
 * from the right): an elementwise op's operands, AddLayerNorm's two
 * addends, Linear's residual? Only there can a constant hold one row per
 * position. */
static bool aligned_slot(const Node *n, int i) {
  unsigned f = op_table[n->op].flags;
  return (f & OPF_INPLACE) || n->op == OP_CAST || n->op == OP_CASTLIKE || (n->op == OP_ADDLAYERNORM && i < 2) ||
         (n->op == OP_LINEAR && i == 3);
}

/* Call c's kind (emit_pack.h). */
static char call_kind(const Emit *e, const PackPlan *pp, const KCall *c) {
  const Graph *g = e->g;
  const Node *n = c->node;
  if (c->kernel < 0)
    return 'V';
  int vid = g->rows->vid, oax = -1, orank = 0;
  bool seg = false, rows_in = false;
  for (int j = 0; j < n->nout; j++) {
    seg = seg || pp->vkind[n->out[j]] == 'U';
    if (pp->ax[n->out[j]] >= 0) {
      oax = pp->ax[n->out[j]];
      orank = g->vals[n->out[j]].type.rank;
    }
  }
  for (int i = 0; i < n->nin; i++) {
    int v = n->in[i];
    if (v < 0)
      continue;
    if (v == vid) {
      rows_in = true;
      continue;
    }
    seg = seg || pp->vkind[v] == 'U';
    const Type *t = &g->vals[v].type;
    int at = oax - (orank - t->rank); /* a constant's dim on the output's token axis */
    if (pp->vkind[v] == 'C' && oax >= 0 && aligned_slot(n, i) && at >= 0 && t->dims[at] == g->rows->max)
      seg = true; /* one row per position: position embeddings */
  }
  if ((op_table[n->op].flags & OPF_ROWS_EXACT) && rows_in)
    return 'O';
  return seg ? 'F' : 'P';
}

/* The values a call passes: its parameters' own (an output stored over
 * an input passes both). */
static bool param_value(const KParam *p, int *v) {
  *v = p->out_vid >= 0 ? p->out_vid : p->vid;
  return p->arr < 0 && *v >= 0;
}

/* The per-sentence loops: each run of 'O' and 'F' calls (views between
 * them included) is one loop; its per-sentence values must not outlive it,
 * and it must not cross a layer loop's edge. */
static bool seg_loops(Emit *e, PackPlan *pp, const char **why) {
  Graph *g = e->g;
  const KernelSet *ks = e->ks;
  int n = ks->ncalls, open = -1, last = -1;
  int *grp = pp->grp = arena_alloc(g->arena, sizeof(int) * (size_t)(n + 1));
  pp->open = arena_alloc(g->arena, (size_t)(n + 1));
  pp->close = arena_alloc(g->arena, (size_t)(n + 1));
  pp->close_at = arena_alloc(g->arena, sizeof(int) * (size_t)(n + 1));
  for (int c = 0; c < n; c++)
    grp[c] = -1;
  for (int c = 0; c <= n; c++) {
    char k = c < n ? pp->kind[c] : 'P';
    if (k == 'P' && open >= 0) {
      pp->close[last] = true;
      pp->close_at[open] = last;
      open = -1;
    }
    if (k == 'O' || k == 'F') {
      if (open < 0)
        pp->open[open = c] = true;
      last = c;
    }
    if (c < n && open >= 0)
      grp[c] = open;
  }
  /* the storage of each per-sentence workspace value: one loop's */
  int *owner = arena_alloc(g->arena, sizeof(int) * (size_t)(g->nvals + 1));
  for (int v = 0; v < g->nvals; v++)
    owner[v] = -2;
  for (int c = 0; c < n; c++) {
    const KCall *call = &ks->calls[c];
    for (int i = 0; i < call->nargs; i++) {
      int v;
      if (!param_value(&call->args[i], &v) || v == g->rows->vid)
        continue;
      int root = emit_storage_root(e, v);
      if (pp->vkind[v] != 'U' || ks->io_slot[root] >= 0)
        continue;
      if (grp[c] < 0 || (owner[root] != -2 && owner[root] != grp[c])) {
        *why = arena_printf(g->arena, "'%s', a value per sentence without a token axis, is read outside the "
                            "per-sentence calls that make it", g->vals[v].name);
        return false;
      }
      owner[root] = grp[c];
    }
  }
  for (int k = 0; e->loops && k < e->loops->nloops; k++) {
    const EmitLoop *lo = &e->loops->loops[k];
    int end = lo->first + lo->period * lo->reps;
    for (int c = 0; c < n; c++) {
      if (!pp->open[c])
        continue;
      int a = c, b = pp->close_at[c];
      if (b < lo->first || a >= end)
        continue;
      if (a < lo->first || b >= end || (a - lo->first) / lo->period != (b - lo->first) / lo->period) {
        *why = arena_printf(g->arena, "the per-sentence calls from node '%s' on cross the edge of a layer loop",
                            ks->calls[c].node->name);
        return false;
      }
    }
  }
  return true;
}

/* The workspace after the body's: each token input's and output's pack,
 * then the frames (the most any 'F' call needs at once). */
static bool pack_workspace(Emit *e, PackPlan *pp, const char **why) {
  Graph *g = e->g;
  int nio = g->ninputs + g->noutputs;
  int64_t at = align_up(g->ws_size);
  pp->stage = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(nio + 1));
  pp->inferred = arena_alloc(g->arena, (size_t)(g->ninputs + 1));
  for (int i = 0; i < nio; i++) {
    bool in = i < g->ninputs;
    int v = in ? g->inputs[i] : g->outputs[i - g->ninputs];
    pp->stage[i] = -1;
    if (!in && strcmp(e->refs[v] ? e->refs[v] : "", arena_printf(g->arena, "p_%s", pp->pn[i]))) {
      *why = arena_printf(g->arena, "output '%s' is a copy of another value", g->vals[v].name);
      return false;
    }
    if (pp->vkind[v] != 'T')
      continue;
    if (!contiguous(pp, &g->vals[v], v)) {
      *why = arena_printf(g->arena, "%s '%s' has dims before its token axis", in ? "input" : "output",
                          g->vals[v].name);
      return false;
    }
    if (in)
      pp->inferred[i] = g->rows->axis[v] < 0;
    pp->stage[i] = at;
    at += align_up((int64_t)type_bytes(&g->vals[v].type));
  }
  pp->frames = at;
  int64_t most = 0;
  for (int c = 0; c < e->ks->ncalls; c++) {
    const KCall *call = &e->ks->calls[c];
    if (pp->kind[c] != 'F' && pp->kind[c] != 'O')
      continue;
    int64_t need = 0;
    for (int i = 0; i < call->nargs; i++) {
      int v;
      if (!param_value(&call->args[i], &v) || pp->vkind[v] != 'T')
        continue;
      if (!contiguous(pp, &g->vals[v], v)) {
        *why = arena_printf(g->arena, "node '%s' reads '%s' per sentence, whose token rows are not contiguous",
                            call->node->name, g->vals[v].name);
        return false;
      }
      need += align_up((int64_t)type_bytes(&g->vals[v].type));
    }
    if (pp->kind[c] == 'F' && need > most)
      most = need;
  }
  pp->ws_size = at + most;
  return true;
}

/* The workspace within a per-sentence loop. The plan placed each value
 * for one pass over the calls; the loop passes over its calls once per
 * sentence, so what one sentence's pass writes must not land on what a
 * later sentence's pass still reads: a value the loop reads but does not
 * make (the pack's token rows), which the plan may have handed on to a
 * value the loop makes once it was last read. The per-sentence values
 * ('U', a pooled row) move to a region of their own past the frames, all
 * by one offset, so that they keep the places the plan gave them among
 * themselves; a token value the loop writes over such bytes (not its own
 * input's, in place) leaves batches unpacked. */
static bool loop_storage(Emit *e, PackPlan *pp, const char **why) {
  Graph *g = e->g;
  const KernelSet *ks = e->ks;
  int64_t base = pp->ws_size, most = 0;
  bool *made = arena_alloc(g->arena, (size_t)(g->nvals + 1));
  for (int c0 = 0; c0 < ks->ncalls; c0++) {
    if (!pp->open[c0])
      continue;
    int c1 = pp->close_at[c0];
    memset(made, 0, (size_t)g->nvals);
    for (int c = c0; c <= c1; c++)
      for (int j = 0; j < ks->calls[c].node->nout; j++)
        made[ks->calls[c].node->out[j]] = true;
    int64_t lo = -1, hi = -1;
    for (int c = c0; c <= c1; c++) {
      const Node *n = ks->calls[c].node;
      for (int j = 0; j < n->nout; j++) {
        int w = emit_storage_root(e, n->out[j]);
        const Value *wv = &g->vals[w];
        if (ks->io_slot[w] >= 0 || wv->data || wv->ws_offset < 0)
          continue;
        int64_t w0 = wv->ws_offset, w1 = w0 + (int64_t)type_bytes(&wv->type);
        if (pp->vkind[n->out[j]] == 'U') {
          lo = lo < 0 || w0 < lo ? w0 : lo;
          hi = w1 > hi ? w1 : hi;
          continue;
        }
        for (int c2 = c0; c2 <= c1; c2++) /* what the loop reads and does not make */
          for (int i = 0; i < ks->calls[c2].node->nin; i++) {
            int r = ks->calls[c2].node->in[i];
            if (r < 0 || r == g->rows->vid || made[r])
              continue;
            r = emit_storage_root(e, r);
            const Value *rv = &g->vals[r];
            if (ks->io_slot[r] >= 0 || rv->data || rv->ws_offset < 0)
              continue;
            int64_t r0 = rv->ws_offset, r1 = r0 + (int64_t)type_bytes(&rv->type);
            if (r0 < w1 && w0 < r1 && !(r0 == w0 && r1 == w1)) {
              *why = arena_printf(g->arena, "node '%s' writes '%s' per sentence over bytes of '%s', which the "
                                  "next sentence reads", n->name, wv->name, rv->name);
              return false;
            }
          }
      }
    }
    if (lo < 0)
      continue;
    for (int c = c0; c <= c1; c++) { /* the loop's own values move by one offset */
      const Node *n = ks->calls[c].node;
      for (int j = 0; j < n->nout; j++) {
        Value *uv = &g->vals[n->out[j]];
        if (pp->vkind[n->out[j]] == 'U' && ks->io_slot[n->out[j]] < 0 && !uv->data && uv->ws_offset >= 0 &&
            emit_storage_root(e, n->out[j]) == n->out[j])
          uv->ws_offset += base - lo;
      }
    }
    most = hi - lo > most ? hi - lo : most;
  }
  pp->ws_size = base + align_up(most);
  return true;
}

PackPlan *pack_plan(Emit *e, const char **pn, const char **why) {
  Graph *g = e->g;
  const RowsBound *rb = g->rows;
  *why = NULL;
  if (!rb || g->decoder)
    return NULL;
  for (int i = 0; i < g->ninputs; i++)
    if (g->vals[g->inputs[i]].is_state) {
      *why = "the model has a state";
      return NULL;
    }
  if (!rb->pack_axis) {
    *why = rb->pack_why ? rb->pack_why : "no token axes";
    return NULL;
  }
  PackPlan *pp = arena_alloc(g->arena, sizeof *pp);
  pp->pn = pn;
  if (!value_kinds(e, pp, why))
    return NULL;
  pp->kind = arena_alloc(g->arena, (size_t)(e->ks->ncalls + 1));
  bool some = false;
  for (int c = 0; c < e->ks->ncalls; c++) {
    pp->kind[c] = call_kind(e, pp, &e->ks->calls[c]);
    some = some || pp->kind[c] == 'P';
  }
  if (!some) {
    *why = "no call runs once over several sentences' rows";
    return NULL;
  }
  if (!seg_loops(e, pp, why) || !pack_workspace(e, pp, why) || !loop_storage(e, pp, why))
    return NULL;
  return pp;
}
