/* rows_match.c — a decoder built with the bound_rows pass (prefix dec_,
 * header DEC_HEADER) against the same model built without it (prefix ref_,
 * header REF_HEADER; tests/decode/rows_match.sh builds both): for every prompt
 * length n = 1 .. P, a prefill of n tokens into an empty cache, then a
 * second prefill of a few more and one step, must give bit-identical
 * logits and caches. Rows past n are padding in both builds (the bounded
 * one zeroes them, the other computes them), and nothing real reads them.
 * Exits 1 at the first difference. */
#include <stdio.h>
#include <string.h>

#include DEC_HEADER
#include REF_HEADER

enum { P = DEC_PREFILL, V = DEC_VOCAB };

static dec_state ds;
static ref_state rs;

/* 0 when the two logits rows and the two states are the same bytes. */
static int same(const char *what, int n, const float *a, const float *b) {
  if (sizeof ds != sizeof rs) {
    fprintf(stderr, "rows_match: the states differ in size (%zu, %zu)\n", sizeof ds, sizeof rs);
    return 1;
  }
  if (memcmp(a, b, sizeof(float) * V) || memcmp(&ds, &rs, sizeof ds)) {
    for (int i = 0; i < V; i++)
      if (memcmp(&a[i], &b[i], sizeof a[i])) {
        fprintf(stderr, "rows_match: %s, n = %d: logit %d is %a bounded, %a unbounded\n", what, n, i, a[i], b[i]);
        return 1;
      }
    fprintf(stderr, "rows_match: %s, n = %d: the caches differ\n", what, n);
    return 1;
  }
  return 0;
}

int main(void) {
  static float la[V], lb[V];
  int64_t tokens[2 * P + 1];
  unsigned seed = 2024;
  for (int i = 0; i < 2 * P + 1; i++) {
    seed = seed * 1103515245u + 12345u;
    tokens[i] = (int64_t)((seed >> 8) % V);
  }
  int checked = 0;
  for (int n = 1; n <= P; n++) {
    int64_t chunk[P];
    memset(chunk, 0, sizeof chunk);
    memcpy(chunk, tokens, sizeof(int64_t) * (size_t)n);
    dec_state_init(&ds);
    ref_state_init(&rs);
    if (dec_prefill(&ds, chunk, n, la) != KILN_OK || ref_prefill(&rs, chunk, n, lb) != KILN_OK)
      return fprintf(stderr, "rows_match: prefill of %d tokens failed\n", n), 1;
    if (same("first prefill", n, la, lb))
      return 1;
    int m = P + 1 - n; /* a second chunk: 1 .. P tokens from position n */
    if (n + m + 1 > DEC_CTX)
      m = DEC_CTX - n - 1;
    if (m >= 1) {
      memset(chunk, 0, sizeof chunk);
      memcpy(chunk, tokens + n, sizeof(int64_t) * (size_t)m);
      if (dec_prefill(&ds, chunk, m, la) != KILN_OK || ref_prefill(&rs, chunk, m, lb) != KILN_OK)
        return fprintf(stderr, "rows_match: second prefill of %d tokens failed\n", m), 1;
      if (same("second prefill", m, la, lb))
        return 1;
      if (dec_step(&ds, tokens[2 * P], la) != KILN_OK || ref_step(&rs, tokens[2 * P], lb) != KILN_OK)
        return fprintf(stderr, "rows_match: step failed\n"), 1;
      if (same("step after both", n, la, lb))
        return 1;
    }
    checked++;
  }
  printf("rows_match: prefill of n = 1 .. %d tokens (chunks of %d) bounded == unbounded, logits and caches bit "
         "for bit\n", checked, P);
  return 0;
}
