/* emit_forward.c — the forward functions' bodies (emit_forward.h): a call
 * per node, each workspace tensor declared where it is first written and
 * named after the model's tensor, and runs of repeated layers found and
 * written as loops over per-layer weight (and state) structs. */
#include "emit_forward.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "../base/periodic.h"
#include "cnames.h"
#include "emit_text.h"
#include "emit_kernel.h"
#include "emit_pack.h"
#include "../ir/ops.h"

/* ---- names ----------------------------------------------------------------- */

/* A workspace tensor's name: the model's, without ONNX export's
 * "_output_0" tail. */
static const char *tensor_name(Arena *a, const Value *v) {
  const char *nm = v->name ? v->name : "";
  size_t n = strlen(nm);
  const char *tail = "_output_0";
  if (n > strlen(tail) && !strcmp(nm + n - strlen(tail), tail))
    nm = arena_printf(a, "%.*s", (int)(n - strlen(tail)), nm);
  return nm;
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

/* The name a value of every layer goes by, from layer 0's and layer 1's:
 * the layer number left out ("prefill_blk_0_attn_q" -> "prefill_blk_attn_q"). */
static const char *layer_name(Arena *a, const char *s0, const char *s1) {
  const char *r;
  long n;
  return emit_layer_pattern(a, s0, s1, "", &r, &n) && *r ? r : s0;
}

/* The layer number a call's comment holds: the first run of digits that
 * differs from the next layer's (c1), or -1. */
static long layer_number(Arena *a, const char *c0, const char *c1) {
  const char *r;
  long n;
  return emit_layer_pattern(a, c0, c1, "l", &r, &n) ? n : -1;
}

/* Do s0 and s1 differ in one run of digits only ("blk.0.attn_q",
 * "blk.1.attn_q")? Then *pre and *suf are the lengths of the text before
 * and after that run (in both). */
static bool split_index(const char *s0, const char *s1, size_t *pre, size_t *suf) {
  size_t n0 = strlen(s0), n1 = strlen(s1), p = 0, q = 0;
  while (p < n0 && p < n1 && s0[p] == s1[p])
    p++;
  if (p == n0 && p == n1)
    return false; /* the same text */
  while (q < n0 - p && q < n1 - p && s0[n0 - 1 - q] == s1[n1 - 1 - q])
    q++;
  while (p > 0 && isdigit((unsigned char)s0[p - 1]))
    p--;
  while (q > 0 && isdigit((unsigned char)s0[n0 - q]))
    q--;
  for (size_t i = p; i < n0 - q; i++)
    if (!isdigit((unsigned char)s0[i]))
      return false;
  for (size_t i = p; i < n1 - q; i++)
    if (!isdigit((unsigned char)s1[i]))
      return false;
  *pre = p;
  *suf = q;
  return n0 - q > p && n1 - q > p;
}

/* ---- what a call's arguments are ------------------------------------------- */

typedef enum ArgKind { ARG_FIXED, ARG_WEIGHT, ARG_STATE } ArgKind;

typedef struct ArgInfo {
  ArgKind kind;
  int item;     /* ARG_WEIGHT: its consts index; ARG_STATE: its graph input index */
  uint64_t key; /* what must agree between layers: storage (fixed), dtype and size (others) */
} ArgInfo;

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull + (h >> 29); }

/* The value a call's argument stands for, as its storage root: the first
 * value the kernel took through it (for an output written over an input,
 * the input: what a layer reads from the one before), or -1 for a derived
 * array. */
static int arg_root(const Emit *e, const KParam *p) {
  return p->arr >= 0 ? -1 : emit_storage_root(e, p->vid >= 0 ? p->vid : p->out_vid);
}

static ArgInfo arg_info(const Emit *e, const KParam *p) {
  const Graph *g = e->g;
  if (p->arr >= 0) {
    const EmitArray *x = &e->arrays[p->arr];
    return (ArgInfo){ARG_WEIGHT, x->k, mix(mix(4, (uint64_t)x->dt), (uint64_t)x->n)};
  }
  int root = emit_storage_root(e, p->out_vid >= 0 ? p->out_vid : p->vid);
  const Value *v = &g->vals[root];
  int io = e->ks->io_slot[root];
  if (io >= 0 && io < g->ninputs && v->is_state)
    return (ArgInfo){ARG_STATE, io, mix(mix(5, (uint64_t)v->type.dt), type_bytes(&v->type))};
  if (v->data && io < 0)
    return (ArgInfo){ARG_WEIGHT, e->const_of[root], mix(mix(2, (uint64_t)v->type.dt), type_bytes(&v->type))};
  return (ArgInfo){ARG_FIXED, -1, mix((uint64_t)p->loc, (uint64_t)p->dt)};
}

/* A call's shape: its kernel and every argument's key. Two calls of one
 * shape differ at most in which weights and state fields they pass. */
static uint64_t call_hash(const Emit *e, const KCall *c) {
  uint64_t h = mix(0xcbf29ce484222325ull, (uint64_t)(int64_t)c->kernel);
  if (c->kernel < 0)
    return mix(h, (uint64_t)c->node->op);
  for (int i = 0; i < c->nargs; i++) {
    ArgInfo ai = arg_info(e, &c->args[i]);
    h = mix(mix(h, (uint64_t)ai.kind), ai.key);
  }
  return h;
}

static bool same_shape(const Emit *e, const KCall *a, const KCall *b) {
  if (a->kernel != b->kernel || a->nargs != b->nargs || (a->kernel < 0 && a->node->op != b->node->op))
    return false;
  for (int i = 0; i < a->nargs; i++) {
    ArgInfo x = arg_info(e, &a->args[i]), y = arg_info(e, &b->args[i]);
    if (x.kind != y.kind || x.key != y.key)
      return false;
  }
  return true;
}

static int *entry_calls(Emit *e, const int *node_entry, int entry, int *n) {
  const Graph *g = e->g;
  int *list = arena_alloc(g->arena, sizeof(int) * (size_t)(e->ks->ncalls + 1));
  *n = 0;
  for (int c = 0; c < e->ks->ncalls; c++) {
    int ne = node_entry ? node_entry[e->ks->calls[c].node - g->nodes] : entry;
    if (ne == entry || ne == DECODER_ENTRY_ALL)
      list[(*n)++] = c;
  }
  return list;
}

/* ---- layer groups ------------------------------------------------------------ */

static int new_group(Emit *e, bool state, int reps) {
  e->groups = arena_grow(e->g->arena, e->groups, &e->capgroups, e->ngroups + 1, sizeof(LayerGroup));
  e->groups[e->ngroups] = (LayerGroup){.state = state, .reps = reps};
  return e->ngroups++;
}

/* A weight's (consts index) or a state field's (graph input index) layer
 * group, layer and member, as the loops see them. */
static int group_of(const Emit *e, bool state, int item) {
  return state ? e->loops->state_group[item] : e->consts[item].group;
}
static int rep_of(const Emit *e, bool state, int item) {
  return state ? e->loops->state_rep[item] : e->consts[item].rep;
}


/* Member m of group gi: items[r] for each layer r, named after the layers'
 * own names (names[r]: "blk.0.attn_q.weight" -> attn_q_weight, in array blk). */
static void add_member(Emit *e, int gi, const int *items, const char *const *names, const char **state_names) {
  LoopPlan *lp = e->loops;
  Arena *a = e->g->arena;
  LayerGroup *gr = &e->groups[gi];
  size_t pre = 0, suf = 0;
  const char *array = NULL, *member = names[0];
  if (split_index(names[0], names[1], &pre, &suf)) {
    array = arena_printf(a, "%.*s", (int)pre, names[0]);
    member = suf ? names[0] + strlen(names[0]) - suf : arena_printf(a, "%.*s", (int)pre, names[0]);
  }
  member = cname_sanitize(a, member, "w");
  const char *m = member;
  for (int k = 2;; k++) { /* unique among the struct's members */
    bool taken = cname_reserved(m);
    for (int i = 0; i < gr->nmem && !taken; i++)
      taken = !strcmp(gr->mem[i], m);
    if (!taken)
      break;
    m = arena_printf(a, "%s_%d", member, k);
  }
  if (!gr->name) { /* the group is named after its first member's prefix */
    const char *stem = array ? cname_sanitize(a, array, "layer") : "layer";
    if (!*stem || cname_reserved(stem))
      stem = "layer";
    if (gr->state) { /* a member of the state struct: unique among its fields */
      const char *nm = stem;
      for (int k = 2;; k++) {
        bool taken = false;
        for (int i = 0; i < e->g->ninputs && !taken; i++)
          taken = e->g->vals[e->g->inputs[i]].is_state && !strcmp(state_names[i], nm);
        for (int i = 0; i < e->ngroups && !taken; i++)
          taken = e->groups[i].state && e->groups[i].name && !strcmp(e->groups[i].name, nm);
        if (!taken)
          break;
        nm = arena_printf(a, "%s_%d", stem, k);
      }
      gr->name = nm;
    } else { /* a file-scope table (inline weights) or a member of the blob's struct */
      gr->name = cname_unique(e->names, stem, "layer");
    }
    gr->tag = cname_unique(e->names, arena_printf(a, "%s_%s_%s", e->prefix, gr->name, gr->state ? "state" : "weights"),
                           "layer");
  }
  gr->local = arena_grow(a, gr->local, &gr->caplocal, gr->nmem + 1, sizeof(char *));
  gr->local[gr->nmem] = gr->state ? cname_unique(e->names, m, "s") : NULL;
  gr->mem = arena_grow(a, gr->mem, &gr->capmem, gr->nmem + 1, sizeof(char *));
  gr->item = arena_grow(a, gr->item, &gr->capitem, gr->nmem + 1, sizeof(int *));
  gr->mem[gr->nmem] = m;
  gr->item[gr->nmem] = arena_dup(a, items, sizeof(int) * (size_t)gr->reps);
  for (int r = 0; r < gr->reps; r++) {
    if (gr->state) {
      lp->state_group[items[r]] = gi;
      lp->state_rep[items[r]] = r;
      lp->state_mem[items[r]] = gr->nmem;
    } else {
      e->consts[items[r]].group = gi;
      e->consts[items[r]].rep = r;
      e->consts[items[r]].mem = gr->nmem;
    }
  }
  gr->nmem++;
}

/* The C name a weight or state is known by, for naming its member. */
static const char *item_name(const Emit *e, bool state, int item, const char **state_names) {
  if (state)
    return state_names[item];
  int id = e->consts[item].id;
  return id < 0 ? e->arrays[-1 - id].stem : e->g->vals[id].name;
}

/* Check the run calls[first .. first + period * reps - 1] (an entry's list)
 * and, when its changing arguments are per-layer weights and state fields
 * that can be grouped (each belongs to one layer; one already grouped is at
 * the same layer of the same group), group them and record the loop. */
static bool try_loop(Emit *e, const int *calls, int first, int period, int reps, long base, int entry,
                     const char **state_names) {
  LoopPlan *lp = e->loops;
  const Graph *g = e->g;
  Arena *a = g->arena;
  const KCall *kc = e->ks->calls;
  int ng = g->ninputs;
  /* per item, the layer it was seen at in this run (-1 none, -2 shared) */
  int *wseen = arena_alloc(a, sizeof(int) * (size_t)(lp->nconsts + 1));
  int *sseen = arena_alloc(a, sizeof(int) * (size_t)(ng + 1));
  for (int k = 0; k < lp->nconsts; k++)
    wseen[k] = -1;
  for (int i = 0; i < ng; i++)
    sseen[i] = -1;
  int group[2] = {-1, -1}; /* the existing weight and state groups it joins */
  bool changes = false;
  for (int i = 0; i < period; i++) {
    const KCall *c0 = &kc[calls[first + i]];
    for (int j = 0; j < c0->nargs; j++) {
      ArgInfo x0 = arg_info(e, &c0->args[j]);
      if (x0.kind == ARG_FIXED)
        continue;
      bool st = x0.kind == ARG_STATE;
      int *seen = st ? sseen : wseen;
      if (!st && x0.item >= lp->nconsts)
        return false;
      bool shared = true;
      for (int r = 1; r < reps; r++)
        shared = shared && arg_info(e, &kc[calls[first + r * period + i]].args[j]).item == x0.item;
      for (int r = 0; r < reps; r++) {
        int it = arg_info(e, &kc[calls[first + r * period + i]].args[j]).item;
        if (!st && it >= lp->nconsts)
          return false;
        int want = shared ? -2 : r;
        if (seen[it] != -1 && seen[it] != want)
          return false; /* one weight at two layers, or shared and per-layer */
        seen[it] = want;
        if (shared)
          break;
        int gi = group_of(e, st, it), at = rep_of(e, st, it);
        if (gi >= 0 && (at != r || (group[st] >= 0 && group[st] != gi) || e->groups[gi].reps != reps))
          return false;
        if (gi >= 0)
          group[st] = gi;
      }
      if (!shared) {
        changes = true;
        if (group_of(e, st, x0.item) < 0) /* an already grouped item stays; a new one must be new in every layer */
          for (int r = 1; r < reps; r++)
            if (group_of(e, st, arg_info(e, &kc[calls[first + r * period + i]].args[j]).item) >= 0)
              return false;
      }
      /* a shared item must not be a grouped one (it would be read at one layer's place) */
      if (shared && group_of(e, st, x0.item) >= 0)
        return false;
    }
  }
  if (!changes)
    return false; /* the same calls again: nothing per layer, not a layer loop */
  /* group the new per-layer items */
  int *items = arena_alloc(a, sizeof(int) * (size_t)reps);
  const char **names = arena_alloc(a, sizeof(char *) * (size_t)reps);
  for (int i = 0; i < period; i++) {
    const KCall *c0 = &kc[calls[first + i]];
    for (int j = 0; j < c0->nargs; j++) {
      ArgInfo x0 = arg_info(e, &c0->args[j]);
      if (x0.kind == ARG_FIXED)
        continue;
      bool st = x0.kind == ARG_STATE;
      if ((st ? sseen : wseen)[x0.item] == -2 || group_of(e, st, x0.item) >= 0)
        continue;
      for (int r = 0; r < reps; r++) {
        items[r] = arg_info(e, &kc[calls[first + r * period + i]].args[j]).item;
        names[r] = item_name(e, st, items[r], state_names);
      }
      if (group[st] < 0)
        group[st] = new_group(e, st, reps);
      add_member(e, group[st], items, names, state_names);
    }
  }
  lp->loops = arena_grow(a, lp->loops, &lp->caploops, lp->nloops + 1, sizeof(EmitLoop));
  lp->loops[lp->nloops++] = (EmitLoop){entry, first, period, reps, group[0], group[1], base};
  return true;
}

/* The layer number of call i, against call j one period on: the number in
 * its comment (an ONNX node's scope, "/bert/layer.3/..."), else in the name
 * of what it writes (a Lua model's comments are source lines, its tensors
 * are named per layer: "encoder.layer.3.attention.context"); -1 none. */
static long call_layer_number(Emit *e, const int *calls, const char *const *origin, int i, int j) {
  Arena *a = e->g->arena;
  long n = layer_number(a, origin[i], origin[j]);
  const Node *ni = e->ks->calls[calls[i]].node, *nj = e->ks->calls[calls[j]].node;
  if (n >= 0 || ni->nout < 1 || nj->nout < 1 || ni->out[0] < 0 || nj->out[0] < 0)
    return n;
  const char *vi = e->g->vals[ni->out[0]].name, *vj = e->g->vals[nj->out[0]].name;
  return vi && vj ? layer_number(a, vi, vj) : -1;
}

typedef struct Run {
  int first, period, reps;
  long base; /* the model's number of the first layer, or 0 */
} Run;

/* Where a run of period p (calls s .. s + len + p - 1 repeat) starts its
 * loop: at the phase whose calls all belong to one layer of the model, by
 * the layer numbers in their comments ("/bert/layer.3/..."; origin[i] is
 * call i's), so the loop body reads as a layer, not as the end of one and
 * the start of the next (even at one layer fewer in the loop); else at s,
 * where the most fit. */
static Run best_phase(Emit *e, const int *calls, const char *const *origin, int s, int p, int len) {
  Arena *a = e->g->arena;
  const KCall *kc = e->ks->calls;
  /* each call's layer number against the next period's, once: -1 none,
   * -2 a view (no call to read) */
  int span = len < 2 * p - 1 ? len : 2 * p - 1;
  long *num = arena_alloc(a, sizeof(long) * (size_t)(span + 1));
  for (int i = 0; i < span; i++)
    num[i] = kc[calls[s + i]].kernel < 0 ? -2 : call_layer_number(e, calls, origin, s + i, s + i + p);
  Run best = {s, p, 1 + len / p, 0};
  int best_score = -1;
  for (int f = 0; f < p && f + p <= len; f++) {
    int score = 0;
    long first = -2;
    for (int i = f; i < f + p; i++) {
      if (num[i] == -2)
        continue;
      if (first == -2)
        first = num[i];
      score += num[i] >= 0 && num[i] == first;
    }
    if (score > best_score) {
      best_score = score;
      best = (Run){s + f, p, 1 + (len - f) / p, score == 0 || first < 0 || first > 100000 ? 0 : first};
    }
  }
  return best;
}

static int cmp_run(const void *x, const void *y) {
  const Run *a = x, *b = y;
  int64_t ga = (int64_t)(a->reps - 1) * a->period, gb = (int64_t)(b->reps - 1) * b->period;
  if (ga != gb)
    return ga > gb ? -1 : 1;
  if (a->period != b->period)
    return a->period - b->period;
  return a->first - b->first;
}

static bool hashes_repeat(void *h, int i, int j) {
  return ((const uint64_t *)h)[i] == ((const uint64_t *)h)[j];
}

/* The loops of one entry: every maximal run of a period, the longest
 * first (most calls saved; then the shortest period), each taken when it
 * overlaps none taken before and its weights group. */
static void plan_entry(Emit *e, const int *calls, int n, int entry, const char **state_names) {
  Arena *a = e->g->arena;
  uint64_t *h = arena_alloc(a, sizeof(uint64_t) * (size_t)(n + 1));
  const char **origin = arena_alloc(a, sizeof(char *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) {
    h[i] = call_hash(e, &e->ks->calls[calls[i]]);
    origin[i] = origin_comment(a, e->ks->calls[calls[i]].node);
  }
  int nruns;
  PeriodicRun *pr = periodic_runs(a, n, hashes_repeat, h, &nruns);
  Run *runs = arena_alloc(a, sizeof(Run) * (size_t)(nruns + 1));
  for (int i = 0; i < nruns; i++)
    runs[i] = best_phase(e, calls, origin, pr[i].start, pr[i].period, pr[i].len);
  if (nruns)
    qsort(runs, (size_t)nruns, sizeof(Run), cmp_run);
  bool *taken = arena_alloc(a, (size_t)(n + 1));
  for (int i = 0; i < nruns; i++) {
    Run r = runs[i];
    int end = r.first + r.period * r.reps;
    bool free = true, same = true;
    for (int c = r.first; c < end && free; c++)
      free = !taken[c];
    for (int c = r.first + r.period; c < end && same; c++) /* the hashes agree; the shapes must too */
      same = same_shape(e, &e->ks->calls[calls[c]], &e->ks->calls[calls[c - r.period]]);
    if (free && same && try_loop(e, calls, r.first, r.period, r.reps, r.base, entry, state_names))
      for (int c = r.first; c < end; c++)
        taken[c] = true;
  }
}

void loops_plan(Emit *e, const int *node_entry, int nentries, const char **state_names) {
  Graph *g = e->g;
  Arena *a = g->arena;
  LoopPlan *lp = e->loops = arena_alloc(a, sizeof *lp);
  lp->nconsts = e->nconsts;
  lp->state_group = arena_alloc(a, sizeof(int) * (size_t)(3 * g->ninputs + 1));
  lp->state_rep = lp->state_group + g->ninputs;
  lp->state_mem = lp->state_rep + g->ninputs;
  for (int i = 0; i < g->ninputs; i++)
    lp->state_group[i] = -1;
  /* the loop counter: "l" unless a parameter (a file-scope name) has it;
   * the kernels' own locals named l are in functions of their own */
  lp->index = "l";
  for (int i = 0; i < g->ninputs + g->noutputs; i++)
    if (!strcmp(state_names[i], "l"))
      lp->index = cname_unique(e->names, "l", "i");
  nameset_add(e->names, lp->index);
  for (int k = 0; k < nentries; k++) {
    int n;
    int *calls = entry_calls(e, node_entry, k, &n);
    plan_entry(e, calls, n, k, state_names);
  }
}

const char *loops_state_field(const Emit *e, int i, const char *fallback) {
  const LoopPlan *lp = e->loops;
  if (!lp || lp->state_group[i] < 0)
    return fallback;
  const LayerGroup *gr = &e->groups[lp->state_group[i]];
  return arena_printf(e->g->arena, "%s[%d].%s", gr->name, lp->state_rep[i], gr->mem[lp->state_mem[i]]);
}

void loops_put_state_fields(Buf *h, const Emit *e, StateFieldFn put_field, void *ctx) {
  const Graph *g = e->g;
  const LoopPlan *lp = e->loops;
  for (int i = 0; i < g->ninputs; i++) {
    if (!g->vals[g->inputs[i]].is_state)
      continue;
    int gi = lp ? lp->state_group[i] : -1;
    if (gi < 0) {
      put_field(h, g, i, ctx);
      continue;
    }
    const LayerGroup *gr = &e->groups[gi];
    if (lp->state_rep[i] != 0 || lp->state_mem[i] != 0)
      continue; /* the group is written at its first field */
    char ts[160];
    buf_printf(h, "  struct %s { /* layer l's fields */\n", gr->tag);
    for (int m = 0; m < gr->nmem; m++) {
      const Value *v = &g->vals[g->inputs[gr->item[m][0]]];
      const Value *v1 = &g->vals[g->inputs[gr->item[m][1]]];
      buf_printf(h, "    %s %s%s; /* %s '%s' */\n", dt_ctype(v->type.dt), gr->mem[m], emit_array_dims(g->arena, &v->type),
                 type_str(&v->type, ts, sizeof ts),
                 emit_cm(g->arena, emit_layer_text(g->arena, v->name, v1->name)));
    }
    buf_printf(h, "  } %s[%d];\n", gr->name, gr->reps);
  }
}

/* ---- the body ------------------------------------------------------------------ */

/* Declare workspace tensor vid (its pointer into ws) named nm. */
static void declare(Emit *e, int vid, const char *nm, int64_t *ws_end, const char *note) {
  const Value *v = &e->g->vals[vid];
  char ts[160];
  int64_t end = v->ws_offset + (int64_t)type_bytes(&v->type);
  *ws_end = end > *ws_end ? end : *ws_end;
  /* through void *: the planner aligns every offset (clang -Wcast-align) */
  emit_line(e, "%s *%s = (%s *)(void *)(ws + %lld); /* %s%s */", dt_ctype(v->type.dt), nm, dt_ctype(v->type.dt),
            (long long)v->ws_offset, type_str(&v->type, ts, sizeof ts), note ? note : "");
}

/* The outputs of call c that the body must declare: workspace tensors not
 * yet named (views take their root's name). Returns false for none. */
static bool new_tensor(Emit *e, int vid) {
  const Value *v = &e->g->vals[vid];
  if (e->refs[vid] || v->data)
    return false;
  int root = emit_storage_root(e, vid);
  if (root != vid) {
    e->refs[vid] = emit_ref(e, root);
    return false;
  }
  KILN_ASSERT(v->ws_offset >= 0);
  return true;
}

/* The name of value vid in the body: its own, or its storage's (a view of
 * a tensor of a loop). */
static const char *ref_of(Emit *e, int vid) {
  if (!e->refs[vid] && !e->g->vals[vid].data) {
    int root = emit_storage_root(e, vid);
    if (root != vid && e->refs[root])
      return e->refs[vid] = e->refs[root];
  }
  return emit_ref(e, vid);
}

/* Argument i of a call: arg_name[i] when set (a layer's weight), else the
 * weight's or the value's name. */
static const char *call_arg(Emit *e, const KCall *call, const char **arg_name, int i) {
  const KParam *p = &call->args[i];
  return arg_name && arg_name[i] ? arg_name[i]
         : p->arr >= 0           ? emit_weight_name(e, e->arrays[p->arr].k)
                                 : ref_of(e, p->out_vid >= 0 ? p->out_vid : p->vid);
}

/* "kernel(args); /" "* comment *" "/", then the profile mark. */
static void put_call_line(Emit *e, const KCall *call, const char **arg, const char *comment) {
  Buf line = {0};
  buf_printf(&line, "%s(", e->ks->kernels[call->kernel].name);
  for (int i = 0; i < call->nargs; i++)
    buf_printf(&line, "%s%s", i ? ", " : "", arg[i]);
  emit_line(e, "%s); /* %s */", line.s, comment);
  buf_free(&line);
  if (e->profile)
    emit_line(e, "%s_profile_mark(%d);", e->prefix, (int)(call->node - e->g->nodes));
}

/* Do values a and b live in the same bytes (one written over the other)? */
static bool same_storage(const Emit *e, int a, int b) {
  a = emit_storage_root(e, a);
  b = emit_storage_root(e, b);
  const Value *x = &e->g->vals[a], *y = &e->g->vals[b];
  return a == b || (e->ks->io_slot[a] < 0 && e->ks->io_slot[b] < 0 && !x->data && !y->data &&
                    x->ws_offset >= 0 && x->ws_offset == y->ws_offset);
}

/* A call of NAME_run_batch's packs that runs per sentence (emit_pack.h),
 * inside the loop over the pack's sentences (opened before the first such
 * call of a run, closed after the last): its token operands at the
 * sentence's first row ('O'), or copied into frames ('F'); its count the
 * sentence's; a per-sentence input or output the sentence's own array. */
static void put_seg_call(Emit *e, const KCall *call, const char **arg_name, const char *comment) {
  const PackPlan *pp = e->pack;
  Graph *g = e->g;
  Arena *a = g->arena;
  int ci = (int)(call - e->ks->calls), n = call->nargs;
  char kind = pp->kind[ci];
  if (pp->open[ci]) {
    emit_line(e, "for (int kiln_s = 0; kiln_s < kiln_nseg; kiln_s++) { /* each sentence of the pack */");
    e->indent++;
  }
  const char **arg = arena_alloc(a, sizeof(char *) * (size_t)(n + 1));
  const char **plain = arena_alloc(a, sizeof(char *) * (size_t)(n + 1));
  Buf in = {0}, out = {0};
  int64_t frame = pp->frames;
  for (int i = 0; i < n; i++) {
    const KParam *p = &call->args[i];
    int v = p->out_vid >= 0 ? p->out_vid : p->vid;
    arg[i] = plain[i] = call_arg(e, call, arg_name, i);
    if (p->arr >= 0 || v < 0)
      continue;
    int io = e->ks->io_slot[emit_storage_root(e, v)];
    const char *ct = dt_ctype(p->dt);
    if (v == g->rows->vid) {
      arg[i] = "kiln_seg_rows + kiln_s";
    } else if (pp->vkind[v] == 'U' && io >= 0) { /* the sentence's own array */
      arg[i] = plain[i] = arena_printf(a, "(%s%s *)%s[kiln_s]", p->out_vid >= 0 ? "" : "const ", ct, pp->pn[io]);
    } else if (pp->vkind[v] == 'T' && kind == 'O') {
      arg[i] = arena_printf(a, "%s + kiln_seg_at[kiln_s] * %lld", plain[i], (long long)pack_row_elems(e, v));
    } else if (pp->vkind[v] == 'T') { /* a frame: the sentence's rows, as if alone */
      long long re = (long long)pack_row_elems(e, v), s = (long long)g->rows->max;
      const char *f = arena_printf(a, "kiln_f%d", i), *at = arena_printf(a, "%s + kiln_seg_at[kiln_s] * %lld", plain[i], re);
      bool read = false;
      for (int j = 0; j < call->node->nin && !read; j++)
        read = call->node->in[j] >= 0 && same_storage(e, call->node->in[j], v);
      buf_printf(&in, "%s *%s = (%s *)(void *)(ws + %lld); /* %s's rows */\n", ct, f, ct, (long long)frame, plain[i]);
      if (read)
        buf_printf(&in, "memcpy(%s, %s, (size_t)kiln_seg_rows[kiln_s] * %lld * sizeof *%s);\n", f, at, re, f);
      if (read && pp->zero[v])
        buf_printf(&in, "memset(%s + kiln_seg_rows[kiln_s] * %lld, 0, (size_t)(%lld - kiln_seg_rows[kiln_s]) * %lld * "
                   "sizeof *%s); /* 0 past the count, as alone */\n", f, re, s, re, f);
      if (p->out_vid >= 0)
        buf_printf(&out, "memcpy(%s, %s, (size_t)kiln_seg_rows[kiln_s] * %lld * sizeof *%s);\n", at, f, re, f);
      arg[i] = f;
      frame += (int64_t)((type_bytes(&g->vals[v].type) + 63) / 64 * 64);
    }
  }
  if (kind == 'O' || !in.len) { /* in place, or nothing per token to frame */
    put_call_line(e, call, arg, comment);
  } else {
    emit_line(e, "if (kiln_nseg == 1) { /* one sentence: as it is */");
    e->indent++;
    put_call_line(e, call, plain, comment);
    e->indent--;
    emit_line(e, "} else { /* the sentence's rows in frames of their own */");
    e->indent++;
    for (const char *t = in.s ? in.s : ""; *t;) {
      const char *nl = strchr(t, '\n');
      emit_line(e, "%.*s", (int)(nl - t), t);
      t = nl + 1;
    }
    put_call_line(e, call, arg, comment);
    for (const char *t = out.s ? out.s : ""; *t;) {
      const char *nl = strchr(t, '\n');
      emit_line(e, "%.*s", (int)(nl - t), t);
      t = nl + 1;
    }
    e->indent--;
    emit_line(e, "}");
  }
  buf_free(&in);
  buf_free(&out);
  if (pp->close[ci]) {
    e->indent--;
    emit_line(e, "}");
  }
}

/* A call's text: "kernel(a, b, c); /" "* comment *" "/". arg_name, when set,
 * gives argument i's name in place of the value's. */
static void put_call(Emit *e, const KCall *call, const char **arg_name, const char *comment) {
  if (e->pack && e->pack->kind[call - e->ks->calls] != 'P') {
    put_seg_call(e, call, arg_name, comment);
    return;
  }
  const char **arg = arena_alloc(e->g->arena, sizeof(char *) * (size_t)(call->nargs + 1));
  for (int i = 0; i < call->nargs; i++)
    arg[i] = call_arg(e, call, arg_name, i);
  put_call_line(e, call, arg, comment);
}

/* A view's comment line (kernel -1), with the node's origin in front. */
static void put_view(Emit *e, Buf *body, const KCall *call, const char *origin) {
  const char *t = call->text;
  while (*t == ' ')
    t++;
  if (!strncmp(t, "/* ", 3) && strchr(t, '\n') == t + strlen(t) - 1)
    emit_line(e, "/* %s (%s): %.*s", origin, node_op_name(call->node), (int)strlen(t + 4), t + 3);
  else
    buf_puts(body, call->text);
}

static void put_one(Emit *e, Buf *body, const KCall *call, int64_t *ws_end) {
  Graph *g = e->g;
  const Node *n = call->node;
  int ci = (int)(call - e->ks->calls);
  /* a pack's per-sentence loop: what its calls write is declared before it */
  for (int c = ci + 1; e->pack && e->pack->open[ci] && c <= e->pack->close_at[ci]; c++)
    for (int j = 0; j < e->ks->calls[c].node->nout; j++)
      if (new_tensor(e, e->ks->calls[c].node->out[j])) {
        int v = e->ks->calls[c].node->out[j];
        const char *nm = cname_unique(e->names, tensor_name(g->arena, &g->vals[v]), "t");
        declare(e, v, nm, ws_end, NULL);
        e->refs[v] = nm;
      }
  for (int j = 0; j < n->nout; j++)
    if (new_tensor(e, n->out[j])) {
      const char *nm = cname_unique(e->names, tensor_name(g->arena, &g->vals[n->out[j]]), "t");
      declare(e, n->out[j], nm, ws_end, NULL);
      e->refs[n->out[j]] = nm;
    }
  if (call->kernel < 0)
    put_view(e, body, call, origin_comment(g->arena, n));
  else
    put_call(e, call, NULL, origin_comment(g->arena, n));
}

/* The loop lp over calls (an entry's list): the tensors a layer hands to
 * the next (or to the code after the loop) declared before it, the others
 * inside, and layer 1's calls written with each per-layer argument read
 * through the loop counter. */
static void put_loop(Emit *e, Buf *body, const int *calls, int ncalls, const EmitLoop *lo, int64_t *ws_end) {
  Graph *g = e->g;
  Arena *a = g->arena;
  const LoopPlan *lp = e->loops;
  const KCall *kc = e->ks->calls;
  int end = lo->first + lo->period * lo->reps;
  /* a layer's places: output j of its i-th call is place place[i] + j
   * (every layer's calls have layer 0's outputs: same kernels, same ops) */
  int *place = arena_alloc(a, sizeof(int) * (size_t)(lo->period + 1));
  for (int i = 0; i < lo->period; i++)
    place[i + 1] = place[i] + kc[calls[lo->first + i]].node->nout;
  int nplaces = place[lo->period];
  /* the layer (rep) and place in it where each tensor of the loop is written */
  int *def_rep = arena_alloc(a, sizeof(int) * (size_t)(g->nvals + 1));
  int *def_pos = arena_alloc(a, sizeof(int) * (size_t)(g->nvals + 1));
  for (int v = 0; v < g->nvals; v++)
    def_rep[v] = -1;
  for (int c = lo->first; c < end; c++) {
    const Node *n = kc[calls[c]].node;
    for (int j = 0; j < n->nout; j++) {
      int v = n->out[j];
      if (e->ks->io_slot[v] < 0 && !g->vals[v].data) /* named by another entry: again here */
        e->refs[v] = NULL;
      def_rep[v] = (c - lo->first) / lo->period;
      def_pos[v] = place[(c - lo->first) % lo->period] + j;
    }
  }
  /* carried: read in another layer than its own, after the loop, or an output */
  bool *carried = arena_alloc(a, (size_t)(nplaces + 1));
  for (int c = lo->first; c < ncalls; c++) {
    const KCall *call = &kc[calls[c]];
    int rep = c < end ? (c - lo->first) / lo->period : lo->reps;
    for (int i = 0; i < call->nargs; i++) {
      int v = arg_root(e, &call->args[i]);
      if (v >= 0 && def_rep[v] >= 0 && def_rep[v] != rep)
        carried[def_pos[v]] = true;
    }
    if (call->kernel < 0) /* a view of a tensor read later is read later */
      for (int j = 0; j < call->node->nin; j++) {
        int v = call->node->in[j];
        if (v >= 0 && def_rep[v] >= 0 && def_rep[v] != rep)
          carried[def_pos[v]] = true;
      }
  }
  for (int k = 0; k < g->noutputs; k++) {
    int v = emit_storage_root(e, g->outputs[k]);
    if (def_rep[v] >= 0)
      carried[def_pos[v]] = true;
  }
  /* names: one per place in the layer, from layer 0's and layer 1's tensors */
  const char **pname = arena_alloc(a, sizeof(char *) * (size_t)(nplaces + 1));
  for (int i = 0; i < lo->period; i++) {
    const Node *n0 = kc[calls[lo->first + i]].node, *n1 = kc[calls[lo->first + lo->period + i]].node;
    for (int j = 0; j < n0->nout; j++) {
      int v0 = n0->out[j], v1 = n1->out[j];
      if (g->vals[v0].data || emit_storage_root(e, v0) != v0 || e->ks->io_slot[v0] >= 0)
        continue;
      pname[place[i] + j] = cname_unique(e->names, layer_name(a, tensor_name(a, &g->vals[v0]), tensor_name(a, &g->vals[v1])), "t");
    }
  }
  const LayerGroup *wg = lo->wgroup >= 0 ? &e->groups[lo->wgroup] : NULL;
  const LayerGroup *sg = lo->sgroup >= 0 ? &e->groups[lo->sgroup] : NULL;
  /* what layer 0 reads where the others read the layer before's tensor */
  const char **before = arena_alloc(a, sizeof(char *) * (size_t)(nplaces + 1));
  for (int i = 0; i < lo->period; i++) {
    const KCall *c0 = &kc[calls[lo->first + i]], *c1 = &kc[calls[lo->first + lo->period + i]];
    for (int k = 0; k < c1->nargs; k++) {
      int v1 = arg_root(e, &c1->args[k]), v0 = arg_root(e, &c0->args[k]);
      if (v1 >= 0 && v0 >= 0 && def_rep[v1] == 0 && def_rep[v0] < 0 && e->refs[v0])
        before[def_pos[v1]] = e->refs[v0];
    }
  }
  /* the counter runs over the model's layer numbers; the arrays from 0 */
  const char *at = lo->base ? arena_printf(a, "%s - %ld", lp->index, lo->base) : lp->index;
  emit_line(e, "/* layers %ld .. %ld: the same calls on layer %s's %s%s%s */", lo->base, lo->base + lo->reps - 1,
            lp->index, wg ? arena_printf(a, "weights (%s%s[%s])", e->blob ? "weights->" : "", wg->name, at) : "",
            wg && sg ? " and " : "", sg ? arena_printf(a, "state (state->%s[%s])", sg->name, at) : "");
  /* tensors handed from layer to layer, declared before the loop */
  for (int i = 0; i < lo->period; i++) {
    const KCall *c0 = &kc[calls[lo->first + i]];
    for (int j = 0; j < c0->node->nout; j++)
      if (carried[place[i] + j] && pname[place[i] + j])
        declare(e, c0->node->out[j], pname[place[i] + j], ws_end,
                before[place[i] + j] ? arena_printf(a, "; before layer 0: %s", before[place[i] + j]) : NULL);
  }
  emit_line(e, "for (int %s = %ld; %s < %ld; %s++) {", lp->index, lo->base, lp->index, lo->base + lo->reps, lp->index);
  e->indent++;
  /* the state fields a layer reads, as locals */
  const char **sname = NULL;
  if (sg) {
    sname = arena_alloc(a, sizeof(char *) * (size_t)(sg->nmem + 1));
    bool *used = arena_alloc(a, (size_t)sg->nmem + 1);
    for (int i = 0; i < lo->period; i++) {
      const KCall *c0 = &kc[calls[lo->first + i]], *c1 = &kc[calls[lo->first + lo->period + i]];
      for (int k = 0; k < c1->nargs; k++) {
        ArgInfo x0 = arg_info(e, &c0->args[k]), x1 = arg_info(e, &c1->args[k]);
        if (x1.kind == ARG_STATE && x0.item != x1.item && lp->state_group[x1.item] == lo->sgroup)
          used[lp->state_mem[x1.item]] = true;
      }
    }
    for (int m = 0; m < sg->nmem; m++) {
      if (!used[m])
        continue; /* a field of the group another loop reads */
      int vid = g->inputs[sg->item[m][0]];
      bool ro = !op_state_in_place(g, vid);
      const char *ct = dt_ctype(g->vals[vid].type.dt);
      sname[m] = sg->local[m];
      emit_line(e, "%s%s *%s = (%s%s *)state->%s[%s].%s;", ro ? "const " : "", ct, sname[m], ro ? "const " : "", ct,
                sg->name, at, sg->mem[m]);
    }
  }
  /* every layer's tensors take the place's name */
  for (int c = lo->first; c < end; c++) {
    const Node *n = kc[calls[c]].node;
    int i = (c - lo->first) % lo->period;
    for (int j = 0; j < n->nout; j++)
      if (pname[place[i] + j] && carried[place[i] + j])
        e->refs[n->out[j]] = pname[place[i] + j];
  }
  /* layer 1's calls, the per-layer arguments through the counter */
  for (int i = 0; i < lo->period; i++) {
    const KCall *c0 = &kc[calls[lo->first + i]], *c1 = &kc[calls[lo->first + lo->period + i]];
    const Node *n1 = c1->node;
    int c1i = calls[lo->first + lo->period + i], last = i; /* a pack's per-sentence loop: its calls' tensors first */
    if (e->pack && e->pack->open[c1i])
      last = i + e->pack->close_at[c1i] - c1i;
    for (int i2 = i; i2 <= last; i2++) {
      const Node *nd = kc[calls[lo->first + lo->period + i2]].node;
      for (int j = 0; j < nd->nout; j++) {
        int v1 = nd->out[j];
        if (pname[place[i2] + j] && !carried[place[i2] + j] && !e->refs[v1]) {
          declare(e, v1, pname[place[i2] + j], ws_end, NULL);
          /* the same place in every layer */
          for (int r = 0; r < lo->reps; r++)
            e->refs[kc[calls[lo->first + r * lo->period + i2]].node->out[j]] = pname[place[i2] + j];
        } else if (!pname[place[i2] + j]) {
          new_tensor(e, v1); /* a view, or a parameter */
        }
      }
    }
    const char *comment = emit_layer_text(a, origin_comment(a, c0->node), origin_comment(a, n1));
    if (c1->kernel < 0) {
      put_view(e, body, c1, comment);
      continue;
    }
    const char **arg = arena_alloc(a, sizeof(char *) * (size_t)(c1->nargs + 1));
    for (int k = 0; k < c1->nargs; k++) {
      ArgInfo x0 = arg_info(e, &c0->args[k]), x1 = arg_info(e, &c1->args[k]);
      if (x0.kind == ARG_FIXED || x0.item == x1.item)
        continue;
      if (x0.kind == ARG_STATE) {
        arg[k] = sname[lp->state_mem[x1.item]];
      } else {
        const LayerGroup *gr = &e->groups[e->consts[x1.item].group];
        arg[k] = arena_printf(a, "%s%s[%s].%s", e->blob ? "weights->" : "", gr->name, at, gr->mem[e->consts[x1.item].mem]);
      }
    }
    put_call(e, c1, arg, comment);
  }
  e->indent--;
  emit_line(e, "}");
  /* the views of the loop's tensors name their roots */
  for (int c = lo->first; c < end; c++) {
    const Node *n = kc[calls[c]].node;
    for (int j = 0; j < n->nout; j++)
      if (!e->refs[n->out[j]] && !g->vals[n->out[j]].data && emit_storage_root(e, n->out[j]) != n->out[j])
        e->refs[n->out[j]] = e->refs[emit_storage_root(e, n->out[j])];
  }
}

void emit_forward_body(Emit *e, Buf *body, int64_t *ws_end, const int *node_entry, int entry) {
  Graph *g = e->g;
  e->out = body;
  e->indent = 1;
  int n;
  int *calls = entry_calls(e, node_entry, entry, &n);
  const LoopPlan *lp = e->loops;
  for (int c = 0; c < n; c++) {
    const KCall *call = &e->ks->calls[calls[c]];
    const EmitLoop *lo = NULL;
    for (int k = 0; lp && k < lp->nloops && !lo; k++)
      if (lp->loops[k].entry == entry && lp->loops[k].first == c)
        lo = &lp->loops[k];
    if (lo) {
      put_loop(e, body, calls, n, lo, ws_end);
      c += lo->period * lo->reps - 1;
      continue;
    }
    const Node *nd = call->node;
    if (node_entry && node_entry[nd - g->nodes] == DECODER_ENTRY_ALL)
      for (int j = 0; j < nd->nout; j++)
        e->refs[nd->out[j]] = NULL; /* declared again in this entry's function */
    put_one(e, body, call, ws_end);
  }
}
