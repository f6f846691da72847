/* torch_match.c — a compiled ONNX decoder with a past (kiln compile
 * --kv-cache) against torch's own logits for the same tokens
 * (reference.bin from tools/make_past_decoder.py: int64 n, vocab,
 * prefill, tokens[n], then float logits[n][vocab], logits[i] after token
 * i). Two ways through the cache must both match at every position,
 * relative to the row's largest logit:
 *   - a prompt of `prefill` tokens (in chunks of MODEL_PREFILL), then one
 *     step per token (how torch made the reference);
 *   - for every length i, a fresh state fed tokens 0..i-1 in chunks of
 *     MODEL_PREFILL (each prefill's last row).
 * Built by run_past.sh as MODEL_H / prefix M, like cache_app.c. Usage:
 * torch_match REFERENCE.bin TOLERANCE; prints the largest difference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../decoder_api.h"

int main(int argc, char **argv) {
  if (argc != 3)
    return fprintf(stderr, "usage: torch_match REFERENCE.bin TOLERANCE\n"), 2;
  double tol = atof(argv[2]);
  FILE *f = fopen(argv[1], "rb");
  int64_t head[3];
  if (!f || fread(head, sizeof head, 1, f) != 1)
    return fprintf(stderr, "%s: cannot read the header\n", argv[1]), 2;
  int64_t n = head[0], vocab = head[1], first = head[2];
  if (vocab != V || n < 1 || n > CTX || first < 1 || first > n)
    return fprintf(stderr, "%s: n %lld, vocab %lld, prefill %lld; expected vocab %d, n <= %d, 1 <= prefill <= n\n",
                   argv[1], (long long)n, (long long)vocab, (long long)first, V, CTX), 2;
  int64_t *tokens = malloc(sizeof *tokens * (size_t)n);
  float *ref = malloc(sizeof *ref * (size_t)(n * V)), got[V];
  if (fread(tokens, sizeof *tokens, (size_t)n, f) != (size_t)n || fread(ref, sizeof *ref, (size_t)(n * V), f) != (size_t)(n * V))
    return fprintf(stderr, "%s: truncated\n", argv[1]), 2;
  fclose(f);
  static API(_state) s;
  double worst_step = 0, worst_chunk = 0;
  API(_state_init)(&s);
  if (feed(&s, tokens, first, got) != KILN_OK)
    return fprintf(stderr, "prefill of %lld tokens failed\n", (long long)first), 1;
  worst_step = diff(got, ref + (first - 1) * V);
  for (int64_t i = first; i < n; i++) {
    if (API(_step)(&s, tokens[i], got) != KILN_OK)
      return fprintf(stderr, "step at %lld failed\n", (long long)i), 1;
    double d = diff(got, ref + i * V);
    if (d > tol)
      fprintf(stderr, "step at position %lld: %.3g\n", (long long)i, d);
    worst_step = fmax(worst_step, d);
  }
  for (int64_t i = 1; i <= n; i++) {
    API(_state_init)(&s);
    if (feed(&s, tokens, i, got) != KILN_OK)
      return fprintf(stderr, "prefill of %lld tokens failed\n", (long long)i), 1;
    double d = diff(got, ref + (i - 1) * V);
    if (d > tol)
      fprintf(stderr, "chunks of %d, %lld tokens: %.3g\n", P, (long long)i, d);
    worst_chunk = fmax(worst_chunk, d);
  }
  printf("vs torch, %lld positions: prefill %lld + steps max rel diff %.3g, chunks of %d max rel diff %.3g "
         "(tolerance %.3g)\n", (long long)n, (long long)first, worst_step, P, worst_chunk, tol);
  free(tokens);
  free(ref);
  return worst_step <= tol && worst_chunk <= tol ? 0 : 1;
}
