#!/bin/sh
# set_threads.sh KILN WORK_DIR [CFLAGS] — NAME_set_threads, the run-time cap
# on a --threads N build's thread count (README, "The generated API"):
# tests/threads/cases/linear_relu_edge compiled with --threads 4 and built
# with -pthread (and CFLAGS: the sanitizer suite passes its -fsanitize
# flags); the app checks that n = 0, -1, 5 return KILN_E_ARG and leave the
# count as it was, that 1..4 return KILN_OK, that the outputs at 4, 1, 2, 3
# threads are bit-identical, and that a split loop runs on a team of
# exactly the cap, or the online CPUs where they are fewer (a kernel the
# app appends to the generated file, led as the file's entry points lead
# theirs).
set -eu
kiln=$1 work=$2 cflags=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
"$kiln" compile -q --threads 4 "$here/cases/linear_relu_edge/model.onnx" --name m -o "$work/m.c"
grep -q 'int m_set_threads(int n);' "$work/m.h" || { echo "FAIL: m.h declares no m_set_threads"; exit 1; }
# the probe: a function appended to m.c that reports the team size its loop ran on
cat >>"$work/m.c" <<'C'

/* set_threads.sh's probe: the team a split loop runs on now */
static void m_probe_job(const void *const *a);
static void m_probe_loop(int *most) {
  KILN_TEAM(m_probe_job, most);
  KILN_PARALLEL_FOR(int, i, 0, 64, 1) {
    const int t = kiln_me.role ? kiln_me.team : 1; /* the largest, by compare-and-swap */
    int m = __atomic_load_n(most, __ATOMIC_RELAXED);
    while (t > m && !__atomic_compare_exchange_n(most, &m, t, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
  }
}
static void m_probe_job(const void *const *a) {
  m_probe_loop((int *)(uintptr_t)a[0]);
}
int m_probe_threads(void);
int m_probe_threads(void) {
  int most = 1;
  KILN_ADAPT_BEGIN(kiln_adapt_run);
  m_probe_loop(&most);
  KILN_ADAPT_END(kiln_adapt_run);
  return __atomic_load_n(&most, __ATOMIC_RELAXED);
}
C
cat >"$work/app.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "m.h"
int m_probe_threads(void);
static float x[M_IN_X_SIZE], y[4][M_OUT_Y_SIZE];
int main(void) {
  int fails = 0;
  for (int i = 0; i < M_IN_X_SIZE; i++)
    x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
  const int bad[] = {0, -1, 5}, order[] = {4, 1, 2, 3};
  for (int k = 0; k < 4; k++) {
    if (m_set_threads(order[k]) != KILN_OK) {
      printf("FAIL: m_set_threads(%d) is not KILN_OK\n", order[k]);
      fails++;
    }
    for (int b = 0; b < 3; b++)
      if (m_set_threads(bad[b]) != KILN_E_ARG) {
        printf("FAIL: m_set_threads(%d) is not KILN_E_ARG\n", bad[b]);
        fails++;
      }
    const int got = m_probe_threads();
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (got != (cpus < order[k] ? cpus : order[k])) {
      printf("FAIL: capped at %d (after refused counts), a loop ran on a team of %d\n", order[k], got);
      fails++;
    }
    m_run((const float(*)[45][91])x, (float(*)[45][77])y[k]);
    if (k && memcmp(y[k], y[0], sizeof y[0])) {
      printf("FAIL: the outputs at %d threads differ from those at 4\n", order[k]);
      fails++;
    }
    printf("cap %d: a loop ran on a team of %d\n", order[k], got);
  }
  return fails != 0;
}
C
# shellcheck disable=SC2086 # CFLAGS is a list of flags
${CC:-cc} -std=c99 -O1 -pthread -DKILN_ADAPT_PROBE=0 -Wall -Wextra -Werror $cflags -I"$work" "$work/app.c" "$work/m.c" -o "$work/app" -lm
"$work/app"
