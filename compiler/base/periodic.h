/* periodic.h — the maximal periodic stretches of a sequence: the search
 * that finds repeated layers, made by the workspace planner over nodes
 * (passes/plan_layers.c) and by the emitter over kernel calls
 * (emit/emit_forward.c), each with its own idea of "the same". */
#ifndef KILN_PERIODIC_H
#define KILN_PERIODIC_H

#include "base.h"

/* Elements start .. start+len-1 each equal the element one period on
 * (len >= period: two repetitions or more, the last ending at element
 * start+len+period-1). */
typedef struct PeriodicRun {
  int period, start, len;
} PeriodicRun;

/* Does element j repeat element i (j = i + period)? */
typedef bool (*RepeatsFn)(void *ctx, int i, int j);

/* Every maximal stretch of each period 2 .. n/2 over elements 0 .. n-1,
 * by period, then start (arena memory, never NULL; *count of them). O(n^2) calls of
 * `repeats`: sequences are a graph's nodes or an entry's calls. */
PeriodicRun *periodic_runs(Arena *a, int n, RepeatsFn repeats, void *ctx, int *count);

#endif
