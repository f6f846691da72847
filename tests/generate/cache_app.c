/* cache_app.c — checks a compiled decoder{} model's KV cache through its
 * public API (tests/generate/run_cache.sh builds it against any model as
 * MODEL_H / prefix macro M): for a fixed token sequence,
 *   - reference: for every length i, a fresh state prefilled with tokens
 *     0..i-1 (chunks of PREFILL) gives the logits after token i-1;
 *   - for every split k: prefill tokens 0..k-1 (chunks), then one step per
 *     token, must give the same logits at every position;
 *   - a full cache refuses the next token (KILN_E_CACHE_FULL) and leaves
 *     the state as it was; bad counts give KILN_E_ARG.
 * Prints the largest difference seen, relative to the largest logit,
 * and exits 1 when it is above the tolerance given as argv[1] (0: bit for
 * bit). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder_api.h"

static float ref[CTX][V], got[V];

int main(int argc, char **argv) {
  double tol = argc > 1 ? atof(argv[1]) : 0;
  static API(_state) s;
  int64_t tokens[CTX];
  unsigned seed = 12345;
  for (int i = 0; i < CTX; i++) {
    seed = seed * 1103515245u + 12345u;
    tokens[i] = (int64_t)((seed >> 8) % V);
  }
  for (int i = 1; i <= CTX; i++) {
    API(_state_init)(&s);
    if (feed(&s, tokens, i, ref[i - 1]) != KILN_OK || API(_length)(&s) != i) {
      fprintf(stderr, "prefill of %d tokens failed\n", i);
      return 1;
    }
  }
  double worst = 0;
  for (int k = 1; k <= CTX; k++) {
    API(_state_init)(&s);
    if (feed(&s, tokens, k, got) != KILN_OK)
      return fprintf(stderr, "prefill of %d tokens failed\n", k), 1;
    worst = fmax(worst, diff(got, ref[k - 1]));
    for (int i = k; i < CTX; i++) {
      if (API(_step)(&s, tokens[i], got) != KILN_OK)
        return fprintf(stderr, "step at %d failed\n", i), 1;
      double dd = diff(got, ref[i]);
      if (dd > tol)
        fprintf(stderr, "split %d position %d: %.3g\n", k, i, dd);
      worst = fmax(worst, dd);
    }
  }
  /* the cache is full now: refused, unchanged */
  static API(_state) before;
  memcpy(&before, &s, sizeof s);
  int rc1 = API(_step)(&s, 1, got), rc2 = API(_prefill)(&s, tokens, 1, got);
  bool unchanged = !memcmp(&before, &s, sizeof s);
  API(_state_init)(&s);
  int rc3 = API(_prefill)(&s, tokens, 0, got), rc4 = API(_prefill)(&s, tokens, P + 1, got);
  bool codes = rc1 == KILN_E_CACHE_FULL && rc2 == KILN_E_CACHE_FULL && rc3 == KILN_E_ARG && rc4 == KILN_E_ARG &&
               API(_length)(&s) == 0 && unchanged;
  printf("kv cache: %d positions, prefill chunks of %d: prefill+steps vs prefill, max rel diff %.3g "
         "(tolerance %.3g); full-cache and bad-count codes %s\n",
         CTX, P, worst, tol, codes ? "ok" : "WRONG");
  return worst <= tol && codes ? 0 : 1;
}
