/* periodic.c — the maximal periodic stretches of a sequence (periodic.h):
 * one scan per period, each stretch as long as the elements keep
 * repeating one period on, the next scan position past it. */
#include "periodic.h"

PeriodicRun *periodic_runs(Arena *a, int n, RepeatsFn repeats, void *ctx, int *count) {
  int nruns = 0, cap = 1;
  PeriodicRun *runs = arena_alloc(a, sizeof *runs); /* never NULL: callers may qsort none */
  for (int p = 2; p <= n / 2; p++)
    for (int s = 0; s + p < n;) {
      int len = 0;
      while (s + len + p < n && repeats(ctx, s + len, s + len + p))
        len++;
      if (len >= p) {
        runs = arena_grow(a, runs, &cap, nruns + 1, sizeof *runs);
        runs[nruns++] = (PeriodicRun){p, s, len};
      }
      s += len > 0 ? len : 1;
    }
  *count = nruns;
  return runs;
}
