/* xl_app.c — Transformer-XL over a stream of tokens, one segment per call:
 * the app links examples/transformer_xl.lua compiled by kiln, keeps the
 * model's memory in the generated state struct, and calls the model on
 * segment after segment. Between calls the app does nothing with the
 * memory: each call reads it as the last one left it and overwrites it
 * with the newest hidden states, so segment k sees segments k-1, k-2, ...
 *
 *   $ export PATH=$PWD/build:$PATH
 *   $ kiln compile examples/transformer_xl.lua --weights-mode=blob -o out/transformer_xl.c
 *   $ cc -O2 -Iout examples/xl_app.c out/transformer_xl.c out/transformer_xl_weights.S -lm -o out/xl_app
 *   $ out/xl_app                    # a made-up stream of 4 segments; prints each one's guesses
 *
 * (with --weights-mode=inline the weights are C literals and there is no .S);
 * out/xl_app IDS.bin LOGITS.bin reads int64 ids (whole segments) and writes
 * f32 logits (raw).
 */
#include <stdio.h>
#include <stdlib.h>

#include "transformer_xl.h"

#define SEG_TOKENS TRANSFORMER_XL_IN_IDS_SIZE      /* batch · seg */
#define SEG_LOGITS TRANSFORMER_XL_OUT_LOGITS_SIZE  /* batch · seg · vocab */
#define VOCAB (SEG_LOGITS / SEG_TOKENS)
#define MAX_SEGMENTS 64

static transformer_xl_state state;     /* the memory, carried between calls */
static int64_t ids[MAX_SEGMENTS][SEG_TOKENS];
static float logits[MAX_SEGMENTS][SEG_LOGITS];

/* One segment through the model: ids [batch, seg] -> logits [batch, seg, vocab]. */
static void run_segment(const int64_t *seg_ids, float *seg_logits) {
  transformer_xl_run(&state, (const void *)seg_ids, (void *)seg_logits);
}

static int argmax(const float *row, int n) {
  int best = 0;
  for (int i = 1; i < n; i++)
    if (row[i] > row[best])
      best = i;
  return best;
}

/* Whole segments of int64 ids from path; returns how many, or -1. */
static int read_ids(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return -1;
  size_t n = fread(ids, sizeof ids[0], MAX_SEGMENTS, f);
  int extra = fgetc(f);
  fclose(f);
  return n > 0 && extra == EOF ? (int)n : -1;
}

int main(int argc, char **argv) {
#ifdef TRANSFORMER_XL_WEIGHTS_SIZE /* the weights are in a blob: bind the linked-in one */
  int rc = transformer_xl_verify_weights(transformer_xl_weights_blob, TRANSFORMER_XL_WEIGHTS_SIZE); /* every byte against the hash */
  if (rc == KILN_OK)
    rc = transformer_xl_bind_linked_weights();
  if (rc != KILN_OK) {
    fprintf(stderr, "xl_app: %s\n", transformer_xl_weights_error(rc));
    return 1;
  }
#endif
  int segments = 4;
  if (argc == 3) {
    segments = read_ids(argv[1]);
    if (segments < 1) {
      fprintf(stderr, "xl_app: %s: expected 1 to %d whole segments of %d int64 ids\n", argv[1],
              MAX_SEGMENTS, SEG_TOKENS);
      return 1;
    }
  } else if (argc == 1) {
    for (int s = 0; s < segments; s++) /* a made-up, slowly repeating stream */
      for (int t = 0; t < SEG_TOKENS; t++)
        ids[s][t] = (s * SEG_TOKENS + t) * 7 % VOCAB;
  } else {
    fprintf(stderr, "usage: xl_app [IDS.bin LOGITS.bin]\n");
    return 1;
  }
  transformer_xl_state_init(&state);
  for (int s = 0; s < segments; s++) {
    run_segment(ids[s], logits[s]);
    printf("segment %d: next-token guesses", s);
    for (int t = 0; t < SEG_TOKENS; t++)
      printf(" %d", argmax(logits[s] + (size_t)t * VOCAB, VOCAB));
    printf("\n");
  }
  if (argc == 3) {
    FILE *f = fopen(argv[2], "wb");
    if (!f || fwrite(logits, sizeof logits[0], (size_t)segments, f) != (size_t)segments) {
      fprintf(stderr, "xl_app: cannot write %s\n", argv[2]);
      return 1;
    }
    fclose(f);
  }
  return 0;
}
