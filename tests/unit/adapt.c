/* adapt.c — kiln_adapt (runtime/kiln_rt.h), the controller that lets a
 * --threads N build run its loops on one thread while that is faster:
 * fed made-up call times, it must warm up on N threads, alternate one
 * thread and N for KILN_ADAPT_SAMPLES pairs, keep the faster mode, probe
 * the other every KILN_ADAPT_PROBE-th call, follow a change of the machine
 * both ways, and not be swayed by one odd call.
 * Built with -pthread (tests/tests.cmake: kiln_adapt is defined where the
 * thread pool is). Prints one line per check;
 * exits 1 on a failure. */
#include <stdio.h>

#include "kiln_rt.h"

static int fails;

static void check(int ok, const char *what) {
  printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  fails += !ok;
}

/* Runs `calls` calls, each taking t_one on one thread and t_many on N;
 * returns how many ran on N threads. */
static int run(kiln_adapt *a, int calls, double t_one, double t_many) {
  int many = 0;
  for (int i = 0; i < calls; i++) {
    int mode = kiln_adapt_begin(a);
    many += mode;
    kiln_adapt_end(a, mode, mode ? t_many : t_one);
  }
  return many;
}

int main(void) {
  kiln_adapt a = {0};
  int m0 = kiln_adapt_begin(&a);
  kiln_adapt_end(&a, m0, 100.0); /* a cold first call: not counted */
  int order = 0; /* the modes of calls 1..6, a bit each */
  for (int i = 0; i < 2 * KILN_ADAPT_SAMPLES; i++) {
    int m = kiln_adapt_begin(&a);
    order |= m << i;
    /* N threads take 1.0 but for one slow call (a thread waking): the
     * median must not let it decide */
    kiln_adapt_end(&a, m, m ? (i == 1 ? 5.0 : 1.0) : 2.0);
  }
  check(m0 == 1 && order == 0x2a, "the first call runs on N threads, then one thread and N alternate");
  /* quiet: N threads take 1.0, one thread 2.0 */
  int many = run(&a, 2 * KILN_ADAPT_PROBE, 2.0, 1.0);
  check(many == 2 * KILN_ADAPT_PROBE - 2,
        "quiet, one slow N-thread call among the first: N threads, but for one probe of one thread every "
        "KILN_ADAPT_PROBE calls");
  /* one probe of one thread that happens to be fast must not switch */
  int fast_probe = 0;
  for (int i = 0; i < KILN_ADAPT_PROBE; i++) {
    int m = kiln_adapt_begin(&a);
    fast_probe += m;
    kiln_adapt_end(&a, m, m ? 1.0 : 0.5);
  }
  many = run(&a, KILN_ADAPT_PROBE, 2.0, 1.0);
  check(fast_probe == KILN_ADAPT_PROBE - 1 && many == KILN_ADAPT_PROBE - 1,
        "one fast probe of one thread does not switch");
  /* contended: N threads now take 3.0; the median turns within two calls */
  int early = run(&a, 4, 2.0, 3.0);
  check(early == 2, "contended: one thread after two slow N-thread calls");
  int late = run(&a, 2 * KILN_ADAPT_PROBE, 2.0, 3.0);
  check(late == 2, "contended: one thread, with one probe of N threads every KILN_ADAPT_PROBE calls");
  /* quiet again: two fast probes of N threads (a median of three) switch back */
  run(&a, 2 * KILN_ADAPT_PROBE, 2.0, 1.0);
  int back = run(&a, KILN_ADAPT_PROBE, 2.0, 1.0);
  check(back == KILN_ADAPT_PROBE - 1, "quiet again: back to N threads");
  return fails ? 1 : 0;
}
