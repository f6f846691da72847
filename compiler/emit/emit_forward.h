/* emit_forward.h — the body of each forward function: per node, the
 * workspace tensors it defines and the call of its kernel; repeated layers
 * written as loops (DESIGN.md, "A model reads as the model"; issue 22).
 *
 * A transformer's layers are the same kernels called on each layer's
 * weights: the planner gives every layer the same workspace offsets, so
 * layer l's calls differ from layer 0's only in the weights (and cache
 * fields) they pass. The emitter finds such runs in each entry point's list
 * of calls and writes them as
 *
 *   for (int l = 0; l < 30; l++) {
 *     rmsnormalization_0(x, weights->blk[l].attn_norm_weight, attn_norm);
 *     ...
 *   }
 *
 * with the layers' weights gathered into an array of structs (a layer
 * group): in blob mode a member of the blob's struct, laid out layer after
 * layer; with inline weights a table of pointers to the literal arrays. A
 * caching model's per-layer state fields are grouped the same way in its
 * state struct (state->blk[l].k_cache).
 *
 * Nothing about "layers" is assumed: a run is any stretch of calls that
 * repeats with period P, call for call the same kernel with the same
 * workspace pointers, entry-point parameters and shared weights, where
 * the only arguments that change from one repetition to the next are
 * weights (or state fields) each of which belongs to one repetition. The
 * loop then makes the very calls the unrolled code made, in the same
 * order, on the same bytes: its results are bit-identical. */
#ifndef KILN_EMIT_FORWARD_H
#define KILN_EMIT_FORWARD_H

#include "emit.h"

/* A loop: calls first .. first + period * reps - 1 of an entry's list. */
typedef struct EmitLoop {
  int entry;
  int first, period, reps;
  int wgroup, sgroup; /* the layer groups it indexes, or -1 */
  long base;          /* the model's number of its first layer (the counter
                         runs base .. base + reps - 1), from its comments; 0 */
} EmitLoop;

typedef struct LoopPlan {
  EmitLoop *loops;
  int nloops, caploops;
  int nconsts;             /* consts known when planned */
  int *state_group, *state_rep, *state_mem; /* per graph input (a weight's are in its EmitConst) */
  const char *index;       /* the loop counter's C name ("l") */
} LoopPlan;

/* Find the loops of every entry (nentries; node_entry as graph_decoder_entries
 * gives it, or NULL for a model with one run function) and the layer
 * groups they index. Called once the kernels are made, before any weight
 * is named. state_names: the state fields' C names (per graph input). */
void loops_plan(Emit *e, const int *node_entry, int nentries, const char **state_names);
/* The state struct's field of graph input i, as `state->FIELD` reads it:
 * "blk[3].k_cache" for a grouped one, else fallback. */
const char *loops_state_field(const Emit *e, int i, const char *fallback);
/* The header's state fields: each grouped field once, inside its group's
 * struct, the others as `put_field` writes them (called for graph inputs
 * i with is_state, in order). */
typedef void (*StateFieldFn)(Buf *h, const Graph *g, int i, void *ctx);
void loops_put_state_fields(Buf *h, const Emit *e, StateFieldFn put_field, void *ctx);

/* The body of entry `entry`'s forward function (node_entry NULL: the run
 * function, every call) into body: the calls in order, each workspace
 * tensor declared where it is first written, loops where loops_plan found
 * them. *ws_end grows to the end of the last workspace byte used. */
void emit_forward_body(Emit *e, Buf *body, int64_t *ws_end, const int *node_entry, int entry);

#endif
