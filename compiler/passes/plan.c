/* plan.c — one static workspace for every intermediate tensor. Each
 * workspace value lives from the step that writes it to the last step that
 * reads it (or reads an alias of it); values are placed greedily, largest
 * first, at the lowest 64-byte-aligned offset that overlaps no placed value
 * whose lifetime intersects. Graph inputs, outputs and constants are not in
 * the workspace (except states' next values, see below); aliases (Reshape
 * and friends) share their root's bytes.
 *
 * In place: an elementwise node (and the row-wise norms, the fused chains:
 * the OPF_INPLACE flags of ops.h) writes its output over an input that dies
 * at that node — same type, so
 * element i is read before element i is written and nothing else reads
 * those bytes later. The two then form one storage group, planned as one
 * buffer from the first member's birth to the last member's death; each
 * value keeps its own live steps for `kiln info`.
 *
 * Repeated layers: plan_layers.c proposes ties between each layer's
 * tensors and the next layer's; a tie joins two storage groups into one
 * class, placed at one offset, when no step of one group's lifetime meets
 * the other's. A class is a list of live spans, so tying never blocks the
 * bytes between two layers' uses of them. Equal layers then get equal
 * offsets, and the emitter can write them as one loop. */
#include <stdlib.h>

#include "../ir/ops.h"
#include "passes.h"
#include "plan_layers.h"

#define WS_ALIGN 64

typedef struct Span {
  int first, last; /* node steps, inclusive */
} Span;

/* A storage class: storage groups tied to one offset. */
typedef struct Live {
  int vid;           /* the first group's first member */
  int first, last;   /* the whole class's steps */
  Span *spans;       /* its members' lifetimes, by first step, apart */
  int nspans;
  int64_t size, off;
} Live;

static int root_of(const Graph *g, int v) {
  while (g->vals[v].alias_of >= 0)
    v = g->vals[v].alias_of;
  return v;
}

/* A state's next value is computed into the workspace while the state's
 * current value is still being read, and copied into the state at the end
 * of the call: it is planned like any workspace value, live to the end. */
static void plan_state_outputs(Graph *g, bool *next_of_state, int *last) {
  for (int k = 0; k < g->noutputs; k++) {
    int v = g->outputs[k];
    const Value *val = &g->vals[v];
    if (graph_state_of_output(g, k) < 0 || val->data || val->is_input)
      continue;
    int r = root_of(g, v); /* an alias keeps its root's bytes alive */
    next_of_state[r] = !g->vals[r].data && !g->vals[r].is_input;
    last[r] = g->nnodes;
  }
}

/* Node n may write output `out` over input slot `slot`: what its op's
 * in-place flag (ops.h) says of its kernels. */
static bool writes_in_place(const Node *n, int out, int slot) {
  unsigned f = op_table[n->op].flags;
  return ((f & OPF_INPLACE) && out == 0) || ((f & OPF_INPLACE_ROW) && out == 0 && slot == 0) ||
         ((f & OPF_INPLACE_PAIR) && slot < 2);
}

/* The storage group of value v (itself unless it took over another's). */
static int group_of(const int *group, int v) {
  while (group[v] != v)
    v = group[v];
  return v;
}

/* v is a plain workspace value: none of input, output, constant, alias,
 * state. */
static bool plain(const Graph *g, const bool *next_of_state, int v) {
  return plan_in_workspace(&g->vals[v]) && !next_of_state[v];
}

/* The root of an input of node n (step i) whose storage output jo can
 * take over, or -1: a plain workspace value of the output's type dying at
 * step i, read through no other slot of n under another shape, not
 * already taken by another output. */
static int in_place_root(const Graph *g, const Node *n, int i, int jo, const int *last,
                         const bool *next_of_state, const bool *taken) {
  const Value *y = &g->vals[n->out[jo]];
  for (int j = 0; j < n->nin; j++) {
    int x = n->in[j], r = x >= 0 ? root_of(g, x) : -1;
    if (r < 0 || last[r] != i || taken[r] || !plain(g, next_of_state, r) || !writes_in_place(n, jo, j) ||
        !type_equal(&g->vals[x].type, &y->type) || type_bytes(&g->vals[r].type) != type_bytes(&y->type))
      continue;
    bool clash = false;
    for (int k = 0; k < n->nin; k++)
      clash |= n->in[k] >= 0 && n->in[k] != x && root_of(g, n->in[k]) == r;
    if (!clash)
      return r;
  }
  return -1;
}

/* Storage groups: each output that can take over a dying input's bytes
 * joins that input's group (group[v] == v: v starts its own). */
static int *plan_in_place(Graph *g, const int *first, const int *last, const bool *next_of_state) {
  int *group = arena_alloc(g->arena, sizeof(int) * (size_t)(g->nvals + 1));
  bool *taken = arena_alloc(g->arena, (size_t)g->nvals + 1);
  for (int v = 0; v < g->nvals; v++)
    group[v] = v;
  for (int i = 0; i < g->nnodes; i++) {
    const Node *n = &g->nodes[i];
    for (int jo = 0; jo < n->nout; jo++) {
      int y = n->out[jo];
      if (y < 0 || first[y] != i || !plain(g, next_of_state, y))
        continue;
      int r = in_place_root(g, n, i, jo, last, next_of_state, taken);
      if (r < 0)
        continue;
      taken[r] = true;
      group[y] = group_of(group, r);
    }
  }
  return group;
}

/* Do two classes' lifetimes share a step? */
static bool spans_meet(const Live *a, const Live *b) {
  if (a->last < b->first || b->last < a->first)
    return false;
  for (int i = 0, j = 0; i < a->nspans && j < b->nspans;) {
    if (a->spans[i].last < b->spans[j].first)
      i++;
    else if (b->spans[j].last < a->spans[i].first)
      j++;
    else
      return true;
  }
  return false;
}

/* Class b joins class a (their spans apart). */
static void join_classes(Arena *arena, Live *a, const Live *b) {
  Span *m = arena_alloc(arena, sizeof *m * (size_t)(a->nspans + b->nspans));
  int n = 0;
  for (int i = 0, j = 0; i < a->nspans || j < b->nspans;)
    m[n++] = j == b->nspans || (i < a->nspans && a->spans[i].first < b->spans[j].first) ? a->spans[i++] : b->spans[j++];
  a->spans = m;
  a->nspans = n;
  a->first = a->first < b->first ? a->first : b->first;
  a->last = a->last > b->last ? a->last : b->last;
  a->size = a->size > b->size ? a->size : b->size;
  if (b->vid < a->vid)
    a->vid = b->vid;
}

static int class_of(int *cls, int c) {
  while (cls[c] != c)
    c = cls[c] = cls[cls[c]];
  return c;
}

/* Join the classes of each proposed tie whose lifetimes are apart. */
static void tie_layers(Graph *g, Live *lv, int *cls, const int *slot, const int *group, const bool *planned) {
  int nt;
  PlanTie *t = plan_layer_ties(g, &nt);
  for (int k = 0; k < nt; k++) {
    if (!planned[t[k].a] || !planned[t[k].b])
      continue;
    int a = class_of(cls, slot[group_of(group, t[k].a)]), b = class_of(cls, slot[group_of(group, t[k].b)]);
    if (a == b || spans_meet(&lv[a], &lv[b]))
      continue;
    join_classes(g->arena, &lv[a], &lv[b]);
    cls[b] = a;
  }
}

static int by_size_desc(const void *a, const void *b) {
  const Live *x = *(Live *const *)a, *y = *(Live *const *)b;
  if (x->size != y->size)
    return x->size < y->size ? 1 : -1;
  return x->first != y->first ? x->first - y->first : x->vid - y->vid; /* deterministic */
}

/* Each class at the lowest offset that clears every class placed before
 * it (largest first) whose lifetime meets its own; the workspace size. */
static int64_t place_classes(Live **order, int n) {
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    Live *c = order[i];
    int64_t off = 0;
    for (bool moved = true; moved;) { /* retry after each collision */
      moved = false;
      for (int j = 0; j < i; j++) {
        const Live *p = order[j];
        if (off < p->off + p->size && p->off < off + c->size && spans_meet(c, p)) {
          off = p->off + p->size;
          moved = true;
        }
      }
    }
    c->off = off;
    if (off + c->size > total)
      total = off + c->size;
  }
  return total;
}

bool pass_plan(Graph *g, const PassOptions *o, Diag *d) {
  (void)o;
  (void)d;
  int *first = arena_alloc(g->arena, sizeof(int) * (size_t)g->nvals);
  int *last = arena_alloc(g->arena, sizeof(int) * (size_t)g->nvals);
  for (int v = 0; v < g->nvals; v++) {
    first[v] = -1;
    last[v] = -1;
    g->vals[v].ws_offset = -1;
  }
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = &g->nodes[i];
    for (int j = 0; j < n->nout; j++)
      if (n->out[j] >= 0) {
        int r = root_of(g, n->out[j]);
        if (first[r] < 0)
          first[r] = i;
        if (last[r] < i)
          last[r] = i;
      }
    for (int j = 0; j < n->nin; j++)
      if (n->in[j] >= 0) {
        int r = root_of(g, n->in[j]);
        if (last[r] < i)
          last[r] = i;
      }
  }
  bool *next_of_state = arena_alloc(g->arena, (size_t)g->nvals + 1);
  plan_state_outputs(g, next_of_state, last);
  int *group = plan_in_place(g, first, last, next_of_state);
  bool *planned = arena_alloc(g->arena, (size_t)g->nvals + 1);
  for (int v = 0; v < g->nvals; v++)
    planned[v] = first[v] >= 0 && (plan_in_workspace(&g->vals[v]) || next_of_state[v]);
  /* one Live per storage group, at its first member (the earliest) */
  Live *lv = arena_alloc(g->arena, sizeof(Live) * (size_t)(g->nvals + 1));
  int *slot = arena_alloc(g->arena, sizeof(int) * (size_t)(g->nvals + 1));
  int nl = 0;
  for (int pass = 0; pass < 2; pass++) /* 0: the groups' first members; 1: the others */
    for (int v = 0; v < g->nvals; v++) {
      if (!planned[v])
        continue;
      int64_t sz = ((int64_t)type_bytes(&g->vals[v].type) + WS_ALIGN - 1) / WS_ALIGN * WS_ALIGN;
      int gr = group_of(group, v);
      if (pass == 0 && gr == v) {
        slot[v] = nl;
        lv[nl++] = (Live){v, first[v], last[v], NULL, 1, sz, 0};
      } else if (pass == 1 && gr != v) {
        Live *l = &lv[slot[gr]];
        l->last = last[v] > l->last ? last[v] : l->last;
        l->size = sz > l->size ? sz : l->size;
      }
    }
  int *cls = arena_alloc(g->arena, sizeof(int) * (size_t)(nl + 1));
  for (int i = 0; i < nl; i++) {
    lv[i].spans = arena_alloc(g->arena, sizeof(Span));
    lv[i].spans[0] = (Span){lv[i].first, lv[i].last};
    cls[i] = i;
  }
  tie_layers(g, lv, cls, slot, group, planned);
  Live **order = arena_alloc(g->arena, sizeof(Live *) * (size_t)(nl + 1));
  int nc = 0;
  for (int i = 0; i < nl; i++)
    if (cls[i] == i)
      order[nc++] = &lv[i];
  qsort(order, (size_t)nc, sizeof *order, by_size_desc);
  g->ws_size = place_classes(order, nc);
  for (int v = 0; v < g->nvals; v++) {
    if (!planned[v])
      continue;
    g->vals[v].ws_offset = lv[class_of(cls, slot[group_of(group, v)])].off;
    g->vals[v].live_first = first[v];
    g->vals[v].live_last = last[v];
  }
  g->planned = true;
  return true;
}
