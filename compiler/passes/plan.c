/* plan.c — one static workspace for every intermediate tensor. Each
 * workspace value lives from the step that writes it to the last step that
 * reads it (or reads an alias of it); values are placed greedily, largest
 * first, at the lowest 64-byte-aligned offset that overlaps no placed value
 * whose lifetime intersects. Graph inputs, outputs and constants are not in
 * the workspace; aliases (Reshape and friends) share their root's bytes. */
#include <stdlib.h>

#include "../passes.h"

#define WS_ALIGN 64

typedef struct Live {
  int vid;
  int first, last;   /* node steps */
  int64_t size, off;
} Live;

static int root_of(const Graph *g, int v) {
  while (g->vals[v].alias_of >= 0)
    v = g->vals[v].alias_of;
  return v;
}

static bool in_workspace(const Value *v) {
  return !v->data && !v->is_input && !v->is_output && v->alias_of < 0;
}

static int by_size_desc(const void *a, const void *b) {
  const Live *x = a, *y = b;
  if (x->size != y->size)
    return x->size < y->size ? 1 : -1;
  return x->first - y->first; /* deterministic tie-break */
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
  Live *lv = arena_alloc(g->arena, sizeof(Live) * (size_t)(g->nvals + 1));
  int nl = 0;
  for (int v = 0; v < g->nvals; v++) {
    if (first[v] < 0 || !in_workspace(&g->vals[v]))
      continue;
    int64_t sz = (int64_t)type_bytes(&g->vals[v].type);
    lv[nl++] = (Live){v, first[v], last[v], (sz + WS_ALIGN - 1) / WS_ALIGN * WS_ALIGN, 0};
  }
  qsort(lv, (size_t)nl, sizeof *lv, by_size_desc);
  int64_t total = 0;
  for (int i = 0; i < nl; i++) {
    /* lowest offset that clears every overlapping, already placed value:
     * retry after each collision (placed values are few per step) */
    int64_t off = 0;
    for (bool moved = true; moved;) {
      moved = false;
      for (int j = 0; j < i; j++) {
        if (lv[j].last < lv[i].first || lv[i].last < lv[j].first)
          continue;
        if (off < lv[j].off + lv[j].size && lv[j].off < off + lv[i].size) {
          off = lv[j].off + lv[j].size;
          moved = true;
        }
      }
    }
    lv[i].off = off;
    g->vals[lv[i].vid].ws_offset = off;
    g->vals[lv[i].vid].live_first = lv[i].first;
    g->vals[lv[i].vid].live_last = lv[i].last;
    if (off + lv[i].size > total)
      total = off + lv[i].size;
  }
  g->ws_size = total;
  g->planned = true;
  return true;
}
