/* emit_pack.h — NAME_run_batch's packs (docs/batch.md): several short
 * sentences' rows end to end through one call of the forward function, so
 * that each weight panel streams from memory once for all of them.
 *
 * An encoder compiled with --rows-axis computes `rows` tokens of a
 * compiled S. A pack is sentences b .. b + n - 1 whose counts sum to at
 * most S: their token inputs are copied end to end into the workspace
 * (sentence s at row kiln_seg_at[s], kiln_seg_rows[s] rows), and the body
 * runs once with kiln_rows = the sum. What a token's row computes from its
 * own row alone (the products, norms, activations, gathers of token ids:
 * the calls of kind 'P') is the same wherever the row sits, so those calls
 * run once over the pack, the very kernels of NAME_run_rows. The rest runs
 * once per sentence of the pack, inside `for (kiln_s ...)`:
 *
 *   'O'  a kernel that, given a count, touches only its operands' first
 *        `rows` rows (OPF_ROWS_EXACT: Attention) is called in place, its
 *        token operands at the sentence's first row, its count the
 *        sentence's: attention sees the sentence's keys alone;
 *   'F'  any other (a sum over the tokens, an Add of position embeddings,
 *        what reads a per-sentence value) is called on frames: the
 *        sentence's rows copied into workspace buffers of S rows (0 after
 *        them where NAME_run_rows would have 0 there), the kernel run as in
 *        NAME_run_rows, the rows it wrote copied back.
 *
 * Values without a token axis that depend on the sentence ('U': a pooled
 * embedding) live only within one run of the per-sentence loop; a graph
 * output of that kind is written to the sentence's own array. The token
 * outputs are written end to end into the workspace and copied out to each
 * sentence's array (0 past its count) at the end. With one sentence
 * (kiln_nseg 1: NAME_run_rows) every call is the one NAME_run_rows made
 * before packs existed: 'F' calls take their unframed branch, 'O' calls
 * their first row at 0, the inputs are read where the caller has them. So
 * every sentence's outputs are bit for bit its own NAME_run_rows call's,
 * whichever pack it is in (tests/rows/run_batch.sh). */
#ifndef KILN_EMIT_PACK_H
#define KILN_EMIT_PACK_H

#include "emit.h"

typedef struct PackPlan {
  int *ax;          /* per value: its token axis in a pack, -1 none */
  bool *zero;       /* per value: its rows past a sentence's count are 0 in NAME_run_rows */
  char *vkind;      /* per value: 'T' token rows, 'U' per sentence, no token axis, 'C' the same for all */
  char *kind;       /* per call (KernelSet index): 'P', 'O', 'F' (above) or 'V' (a view: no code) */
  bool *open, *close; /* per call: the per-sentence loop opens before it / closes after it */
  int *close_at;    /* per call that opens a loop: the call after which it closes */
  int *grp;         /* per call: the call that opens its per-sentence loop, or -1 */
  int64_t *stage;   /* per graph input, then output: its pack's rows end to end in the workspace
                       (a token input or output), or -1 */
  bool *inferred;   /* per graph input: a token input of packs only (an attention_mask NAME_run_rows
                       reads whole): a sentence packs when it is 0 past its count */
  int64_t frames;   /* the frames' first workspace byte */
  int64_t ws_size;  /* the workspace with the staging and the frames */
  const char **pn;  /* the parameters' names (emit_file.c) */
} PackPlan;

/* Plan the packs once the body's calls and loops are known (after
 * loops_plan, before emit_forward_body): NULL, with the reason in *why,
 * when batches must run sentence after sentence. */
PackPlan *pack_plan(Emit *e, const char **pn, const char **why);

/* Elements of a row of value v along its pack axis (its elements over its
 * token axis's length). */
int64_t pack_row_elems(const Emit *e, int v);

#endif
