/* logits_dump.c — writes every logits row a compiled decoder gives for a
 * fixed token sequence to the file argv[1] (f32, raw): a prompt of 13
 * tokens prefilled in chunks, then one step per token until the cache is
 * full. tests/decode/f16_match.sh compares the files of builds that differ
 * only in their C compiler flags, byte for byte. Built against any model
 * as tests/generate/decoder_api.h says (MODEL_H, M, MU). */
#include <stdio.h>

#include "../generate/decoder_api.h"

int main(int argc, char **argv) {
  (void)diff; /* decoder_api.h's comparison: not needed here */
  static API(_state) s;
  static float logits[V];
  int64_t tokens[CTX];
  unsigned seed = 777;
  for (int i = 0; i < CTX; i++) {
    seed = seed * 1103515245u + 12345u;
    tokens[i] = (int64_t)((seed >> 8) % V);
  }
  FILE *f = argc > 1 ? fopen(argv[1], "wb") : NULL;
  if (!f)
    return fprintf(stderr, "usage: logits_dump OUT.bin\n"), 1;
  int prompt = 13 < CTX ? 13 : CTX;
  API(_state_init)(&s);
  if (feed(&s, tokens, prompt, logits) != KILN_OK)
    return fprintf(stderr, "logits_dump: prefill failed\n"), 1;
  fwrite(logits, sizeof logits, 1, f);
  for (int i = prompt; i < CTX; i++) {
    if (API(_step)(&s, tokens[i], logits) != KILN_OK)
      return fprintf(stderr, "logits_dump: step at %d failed\n", i), 1;
    fwrite(logits, sizeof logits, 1, f);
  }
  return fclose(f) ? 1 : 0;
}
