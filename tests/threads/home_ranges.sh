#!/bin/sh
# home_ranges.sh KILN WORK_DIR [CFLAGS] — the pool's home ranges
# (runtime/kiln_rt.h, "threads"): each thread claims its own share of a
# split loop's tiles first (thread i of T: tiles [nt·i/T, nt·(i+1)/T)),
# from the front, and takes the others' from their back once its own are
# gone. A kernel appended to tests/threads/cases/linear_relu_edge compiled
# with --threads 2 records which thread ran each iteration of a loop of 64
# (8 tiles of 8; the lead's home 0-3, the worker's 4-7), each iteration
# ~10 us of spinning so that the worker joins in time. Every run: each
# iteration ran once, each tile on one thread. In one run of 20 the worker
# spins ~30 ms in the first tile it takes, so the app can check, whatever
# the timing: the lead ran all of its own home, and the worker at most
# that one tile, from its own home (its first claim is its home's front;
# the lead took the rest of it from the back). A first-come claim from one
# counter fails that (the worker takes tile 1). How many of the other runs
# split 4 + 4 by home is printed, not checked (a late thread's tiles go to
# the other). Needs 2 online CPUs (else skipped: exit 77).
set -eu
kiln=$1 work=$2 cflags=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
[ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ] || { echo "SKIP: one online CPU, no worker thread"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
"$kiln" compile -q --threads 2 "$here/cases/linear_relu_edge/model.onnx" --name m -o "$work/m.c"
cat >>"$work/m.c" <<'C'

/* home_ranges.sh's probe: who[i], the team index of the thread that ran
 * iteration i (the lead 0); with *stall the worker spins in its first tile */
static int m_home_stalled;
static void m_home_job(const void *const *a);
static void m_home_loop(int *who, const int *stall) {
  KILN_TEAM(m_home_job, who, stall);
  KILN_PARALLEL_FOR(int, i, 0, 64, 1) {
    const int me = kiln_me.role ? kiln_me.index : 0;
    if (*stall && me == 1 && !__atomic_exchange_n(&m_home_stalled, 1, __ATOMIC_RELAXED))
      for (const unsigned long long t0 = kiln_ticks(); kiln_ticks() - t0 < 100000000ull;)
        kiln_relax();
    for (const unsigned long long t0 = kiln_ticks(); kiln_ticks() - t0 < 30000ull;) /* ~10 us an iteration */
      kiln_relax();
    who[i] = me;
  }
}
static void m_home_job(const void *const *a) {
  m_home_loop((int *)(uintptr_t)a[0], a[1]);
}
void m_home_probe(int *who, int stall);
void m_home_probe(int *who, int stall) {
  m_home_stalled = 0;
  KILN_ADAPT_BEGIN(kiln_adapt_run);
  m_home_loop(who, &stall);
  KILN_ADAPT_END(kiln_adapt_run);
}
C
cat >"$work/app.c" <<'C'
#include <stdio.h>
#include "m.h"
void m_home_probe(int *who, int stall);
int main(void) {
  int fails = 0, home = 0, worker_tiles = 0;
  for (int run = 0; run < 200; run++) {
    int who[64];
    for (int i = 0; i < 64; i++)
      who[i] = -1;
    const int stall = run % 20 == 19;
    m_home_probe(who, stall);
    int bad = 0, lead_home = 1, by_worker = 0, own = 1;
    for (int i = 0; i < 64; i++) {
      bad += (who[i] != 0 && who[i] != 1) || who[i] != who[i / 8 * 8]; /* once, by one thread a tile */
      lead_home &= i >= 32 || who[i] == 0;
      by_worker += who[i] == 1;
      own &= who[i] != 1 || i >= 32;
    }
    if (bad || (stall && (!lead_home || !own || by_worker > 8))) {
      printf("FAIL: run %d%s: who =", run, stall ? " (the worker stalls)" : "");
      for (int i = 0; i < 64; i += 8)
        printf(" %d", who[i]);
      printf(" (each tile's first iteration)\n");
      fails++;
    }
    home += !stall && by_worker == 32 && !bad && lead_home;
    worker_tiles += stall ? by_worker / 8 : 0;
  }
  printf("%d of 190 runs split 4 + 4 tiles by home; the stalled worker ran %d tiles in 10 runs\n", home,
         worker_tiles);
  return fails != 0;
}
C
# shellcheck disable=SC2086 # CFLAGS is a list of flags
${CC:-cc} -std=c99 -O1 -pthread -DKILN_ADAPT_PROBE=0 -Wall -Wextra -Werror $cflags -I"$work" "$work/app.c" "$work/m.c" -o "$work/app" -lm
"$work/app"
