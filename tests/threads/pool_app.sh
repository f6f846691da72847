#!/bin/sh
# pool_app.sh KILN WORK_DIR [CFLAGS] — kiln's thread pool (runtime/kiln_rt.h)
# as an application uses it: tests/models/encoder_2l_op14 compiled with
# --threads 3 and built with -pthread; the app computes each of two inputs'
# outputs at one thread, then
#  - two application threads call m_run_ws at once, 200 times each, each
#    with its own workspace and input: every output bit-identical to its
#    one-thread reference (one of the two leads the pool, the other finds
#    it held and runs alone; README, "The generated API", Threads);
#  - the process forks, and the child (which has no workers: the pool is
#    reset by its fork handler) runs the model and gets the same bits.
# Then the same app again on one core, 50 runs a caller (taskset -c 0,
# where taskset exists): the lead and its worker take turns there, so the
# worker's waits end in its yield probe or in sleeping, and a lost wake-up
# of the pool's sleep protocol (kiln_pool_wake, kiln_pool_wait) hangs the
# test.
set -eu
kiln=$1 work=$2 cflags=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
"$kiln" compile -q --threads 3 "$here/../models/encoder_2l_op14/model.onnx" --name m -o "$work/m.c"
cat >"$work/app.c" <<'C'
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "m.h"

typedef float In[2][16][64];
typedef float Out[2][16][64];
static In x[2];
static Out ref[2];

typedef struct { int which, bad; } Job;
static int runs = 200; /* each caller's; argv[1] */

static void *workspace(void) {
  void *p = NULL;
  return posix_memalign(&p, 64, M_WORKSPACE_SIZE) == 0 ? p : NULL;
}

static void *caller(void *arg) {
  Job *j = arg;
  void *ws = workspace();
  Out *y = malloc(sizeof *y);
  for (int r = 0; r < runs; r++) {
    memset(y, 0x7f, sizeof *y);
    m_run_ws(ws, (const float(*)[16][64])x[j->which], *y);
    j->bad += memcmp(y, ref[j->which], sizeof *y) != 0;
  }
  free(y);
  free(ws);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1)
    runs = atoi(argv[1]);
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < M_IN_SRC_SIZE; i++)
      (&x[k][0][0][0])[i] = (float)(((i + 17 * k) * 37) % 101) / 50.0f - 1.0f;
  void *ws = workspace();
  m_set_threads(1);
  for (int k = 0; k < 2; k++)
    m_run_ws(ws, (const float(*)[16][64])x[k], ref[k]);
  m_set_threads(3);
  Job jobs[2] = {{0, 0}, {1, 0}};
  pthread_t t[2];
  for (int k = 0; k < 2; k++)
    pthread_create(&t[k], NULL, caller, &jobs[k]);
  for (int k = 0; k < 2; k++)
    pthread_join(t[k], NULL);
  int fails = 0;
  for (int k = 0; k < 2; k++) {
    printf("%s caller %d: %d of %d runs differ from one thread's\n", jobs[k].bad ? "FAIL" : "ok  ", k, jobs[k].bad, runs);
    fails += jobs[k].bad != 0;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    static Out y;
    m_run_ws(ws, (const float(*)[16][64])x[1], y);
    _exit(memcmp(y, ref[1], sizeof y) != 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  const int child_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  printf("%s a forked child runs the model alone, same bits\n", child_ok ? "ok  " : "FAIL");
  free(ws);
  return fails || !child_ok;
}
C
# shellcheck disable=SC2086 # CFLAGS is a list of flags
${CC:-cc} -std=c99 -O1 -pthread -Wall -Wextra -Werror $cflags -I"$work" "$work/app.c" "$work/m.c" -o "$work/app" -lm
"$work/app"
if command -v taskset >/dev/null 2>&1 && taskset -c 0 true 2>/dev/null; then
  echo "on one core:"
  taskset -c 0 "$work/app" 50
fi
