/* translate_app.c — greedy decoding with the encoder–decoder Transformer of
 * examples/transformer.lua, compiled to C by kiln, either way the script
 * builds it:
 *
 * - With --set cache=true (the way to ship it): the encoder runs once per
 *   source (transformer_encode, which also stores each decoder layer's
 *   cross-attention keys and values in the state); then each output token
 *   costs one decoder position (transformer_prefill of [BOS], then
 *   transformer_step of each token chosen), its self-attention keys and
 *   values kept in the state's KV cache.
 * - As it is: one function maps (source ids, target ids) to next-token
 *   logits at every target position, and decoding calls it once per output
 *   token on the target so far ([BOS, PAD, PAD, ...] at first, the arg-max
 *   at the newest position written into the next slot). The decoder's
 *   causal mask means position i never sees the padding after it, so the
 *   logits are the exact-length target's; but each call recomputes the
 *   encoder and the whole target.
 *
 * Both stop at EOS or when the target is full, and choose the same tokens
 * (tests/generate/seq2seq_match.c checks the logits agree at every
 * position).
 *
 *   $ export PATH=$PWD/build:$PATH
 *   $ kiln compile examples/transformer.lua --set cache=true -o out/transformer.c
 *   $ cc -O2 -Iout examples/translate_app.c out/transformer.c out/transformer_weights.S -lm -o out/translate
 *   $ out/translate 5 17 42 8 99 3      # source token ids (default: these)
 *
 * (The model's 2 MB of weights go to out/transformer.weights.bin, which
 * transformer_weights.S links in; with --weights-mode=inline they are C
 * literals in transformer.c and the .S is not made: leave it out.)
 *
 * With the script's random weights the output is a deterministic but
 * meaningless sequence; with trained weights (--weights) it is the
 * translation. examples/train_reverse.py trains the same model in PyTorch
 * on a toy task, reversing the source, and saves its weights:
 *
 *   /usr/bin/python3 examples/train_reverse.py out/reverse.safetensors
 *   kiln compile examples/transformer.lua --set vocab=16 --weights out/reverse.safetensors \
 *       -o out/transformer.c                  # then build as above
 *   out/translate 5 9 12 3 7                  # output: 7 3 12 9 5 2
 *
 * The model must be compiled with batch = 1 (the default). */
#include <stdio.h>
#include <stdlib.h>

#include "transformer.h"

enum { PAD = 0, BOS = 1, EOS = 2 }; /* the script's pad, and the usual conventions */

#define SRC_LEN TRANSFORMER_IN_SRC_SIZE
#ifdef TRANSFORMER_CTX /* --set cache=true: encode, prefill, step */
#define TGT_LEN TRANSFORMER_CTX
#define VOCAB TRANSFORMER_VOCAB
static transformer_state state;        /* stored memory and KV cache (about 100 KB) */
static float logits[VOCAB];            /* the newest position's */
#else
#define TGT_LEN TRANSFORMER_IN_TGT_SIZE
#define VOCAB (TRANSFORMER_OUT_LOGITS_SIZE / TGT_LEN)
static float logits[1][TGT_LEN][VOCAB]; /* [batch, tgt_len, vocab] */
#endif

static int64_t src[1][SRC_LEN];        /* [batch, src_len] token ids */
static int64_t tgt[1][TGT_LEN];        /* [batch, tgt_len] token ids */

/* The source from the command line (ids, then EOS, then padding), or a
 * fixed example sentence. Returns its length, EOS included. */
static int read_source(int argc, char **argv) {
  static const int64_t example[] = {5, 17, 42, 8, 99, 3};
  int n = argc > 1 ? argc - 1 : (int)(sizeof example / sizeof example[0]);
  if (n > SRC_LEN - 1) {
    fprintf(stderr, "translate: %d source tokens; the model takes at most %d (+ EOS)\n", n,
            SRC_LEN - 1);
    exit(1);
  }
  for (int i = 0; i < n; i++) {
    long id = argc > 1 ? strtol(argv[i + 1], NULL, 10) : (long)example[i];
    if (id < 3 || id >= VOCAB) {
      fprintf(stderr, "translate: token id %ld; expected 3..%d (0-2 are PAD, BOS, EOS)\n", id,
              VOCAB - 1);
      exit(1);
    }
    src[0][i] = id;
  }
  src[0][n] = EOS;
  for (int i = n + 1; i < SRC_LEN; i++)
    src[0][i] = PAD;
  return n + 1;
}

static int64_t argmax(const float *x, int n) {
  int best = 0;
  for (int i = 1; i < n; i++)
    if (x[i] > x[best])
      best = i;
  return best;
}

#ifdef TRANSFORMER_CTX
static void check(int rc, const char *what) {
  if (rc != KILN_OK) {
    fprintf(stderr, "translate: %s failed (code %d)\n", what, rc);
    exit(1);
  }
}

/* Fills tgt from BOS on; returns the number of tokens produced. */
static int greedy_decode(void) {
  transformer_state_init(&state);
  check(transformer_encode(&state, (const int64_t(*)[SRC_LEN])src), "encode");
  tgt[0][0] = BOS;
  check(transformer_prefill(&state, tgt[0], 1, logits), "prefill");
  int i = 0;
  for (; i + 1 < TGT_LEN; i++) {
    int64_t next = argmax(logits, VOCAB); /* the token after position i */
    tgt[0][i + 1] = next;
    if (next == EOS)
      return i + 1;
    if (i + 2 < TGT_LEN)
      check(transformer_step(&state, next, logits), "step");
  }
  return i;
}
#else
/* Fills tgt from BOS on; returns the number of tokens produced. */
static int greedy_decode(void) {
  tgt[0][0] = BOS;
  for (int i = 1; i < TGT_LEN; i++)
    tgt[0][i] = PAD;
  int i = 0;
  for (; i + 1 < TGT_LEN; i++) {
    transformer_run((const int64_t(*)[SRC_LEN])src, (const int64_t(*)[TGT_LEN])tgt, logits);
    int64_t next = argmax(logits[0][i], VOCAB);
    tgt[0][i + 1] = next;
    if (next == EOS)
      return i + 1;
  }
  return i;
}
#endif

static void print_ids(const char *label, const int64_t *ids, int n) {
  printf("%s", label);
  for (int i = 0; i < n; i++)
    printf(" %lld", (long long)ids[i]);
  printf("\n");
}

int main(int argc, char **argv) {
#ifdef TRANSFORMER_WEIGHTS_SIZE /* the weights are in a blob: bind the linked-in one */
  int rc = transformer_verify_weights(transformer_weights_blob, TRANSFORMER_WEIGHTS_SIZE); /* every byte against the hash */
  if (rc == KILN_OK)
    rc = transformer_bind_linked_weights();
  if (rc != KILN_OK) {
    fprintf(stderr, "translate: %s\n", transformer_weights_error(rc));
    return 1;
  }
#endif
  int n = read_source(argc, argv);
  print_ids("source:", src[0], n);
  int m = greedy_decode();
  print_ids("output:", tgt[0] + 1, m);
  return 0;
}
