/* seq2seq_match.c — an encoder–decoder decoding with its KV cache gives the
 * logits the same model gives recomputing the whole target. Built against
 * two compilations of one script (tests/generate/run_seq2seq.sh): "full"
 * (src, tgt -> logits [1, TGT_LEN, VOCAB] at every target position) and
 * "cached" (cached_encode once per source, then cached_prefill of the first
 * tokens and cached_step for each next one, logits of the newest).
 *
 *   seq2seq_match PREFILL_N TOLERANCE
 *
 * For two sources (the second reuses the state: encode must empty the
 * cache) with padding at the end, a target of TGT_LEN ids is fed as a
 * prefill of PREFILL_N tokens, then steps; at every position the cached
 * logits must be within TOLERANCE of the full model's, as max|d| / max|ref|
 * over the vocabulary. A step past the cache is refused (KILN_E_CACHE_FULL)
 * and leaves the state as it was. Prints the worst error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cached.h"
#include "full.h"

#define SRC_LEN FULL_IN_SRC_SIZE
#define TGT_LEN FULL_IN_TGT_SIZE
#define VOCAB CACHED_VOCAB

_Static_assert(FULL_OUT_LOGITS_SIZE == TGT_LEN * VOCAB, "full's logits are [1, TGT_LEN, VOCAB]");
_Static_assert(CACHED_CTX == TGT_LEN, "the cache holds the whole target");

static int64_t src[1][SRC_LEN], tgt[1][TGT_LEN];
static float full_logits[1][TGT_LEN][VOCAB], logits[VOCAB];
static cached_state state;

static uint64_t rng = 0x9e3779b97f4a7c15u;
static int64_t next_id(void) { /* 3 .. VOCAB-1: not PAD, BOS, EOS */
  rng = rng * 6364136223846793005u + 1442695040888963407u;
  return 3 + (int64_t)((rng >> 33) % (VOCAB - 3));
}

/* max|a - b| / max|b| */
static double rel_err(const float *a, const float *b) {
  double num = 0, den = 0;
  for (int i = 0; i < VOCAB; i++) {
    num = fmax(num, fabs((double)a[i] - b[i]));
    den = fmax(den, fabs((double)b[i]));
  }
  return den > 0 ? num / den : num;
}

static void fail(const char *what, int source, int pos, int rc) {
  fprintf(stderr, "seq2seq_match: source %d, position %d: %s (code %d)\n", source, pos, what, rc);
  exit(1);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: seq2seq_match PREFILL_N TOLERANCE\n");
    return 2;
  }
  int prefill_n = atoi(argv[1]);
  double tol = atof(argv[2]), worst = 0;
  if (prefill_n < 1 || prefill_n > CACHED_PREFILL || prefill_n > TGT_LEN) {
    fprintf(stderr, "seq2seq_match: PREFILL_N %d; expected 1..%d\n", prefill_n, CACHED_PREFILL);
    return 2;
  }
#ifdef FULL_WEIGHTS_SIZE
  if (full_bind_linked_weights() != KILN_OK || cached_bind_linked_weights() != KILN_OK) {
    fprintf(stderr, "seq2seq_match: binding the weights failed\n");
    return 1;
  }
#endif
  cached_state_init(&state);
  for (int source = 0; source < 2; source++) {
    int real = SRC_LEN - 3 - 5 * source; /* then padding (id 0) */
    for (int i = 0; i < SRC_LEN; i++)
      src[0][i] = i < real ? next_id() : 0;
    tgt[0][0] = 1; /* BOS */
    for (int i = 1; i < TGT_LEN; i++)
      tgt[0][i] = next_id();
    full_run((const int64_t(*)[SRC_LEN])src, (const int64_t(*)[TGT_LEN])tgt, full_logits);

    int rc = cached_encode(&state, (const int64_t(*)[SRC_LEN])src);
    if (rc != KILN_OK || cached_length(&state) != 0)
      fail("encode failed or left the cache non-empty", source, 0, rc);
    if ((rc = cached_prefill(&state, tgt[0], prefill_n, logits)) != KILN_OK)
      fail("prefill failed", source, 0, rc);
    int pos = prefill_n - 1;
    for (;;) {
      double err = rel_err(logits, full_logits[0][pos]);
      worst = fmax(worst, err);
      if (!(err <= tol)) {
        fprintf(stderr, "seq2seq_match: source %d, position %d: error %.3g > %.3g\n", source, pos, err, tol);
        return 1;
      }
      if (++pos == TGT_LEN)
        break;
      if ((rc = cached_step(&state, tgt[0][pos], logits)) != KILN_OK)
        fail("step failed", source, pos, rc);
    }
    if (cached_length(&state) != TGT_LEN)
      fail("the length is not the target's", source, pos, 0);
    rc = cached_step(&state, 3, logits);
    if (rc != KILN_E_CACHE_FULL || cached_length(&state) != TGT_LEN)
      fail("a step past the cache was not refused", source, pos, rc);
  }
  printf("seq2seq_match: %d positions x 2 sources, prefill %d: worst error %.3g (tolerance %.3g)\n", TGT_LEN,
         prefill_n, worst, tol);
  return 0;
}
