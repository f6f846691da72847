/* decoder_api.c BLOB — every documented error path of a generative
 * model's API is what its header says (issue 21), run under ASan and
 * UBSan by check_decoder_api.sh: the model is compiled with --name dec
 * and --weights-mode=blob; -DENCODE when it has an encode entry (an
 * encoder-decoder). Each refused call must return its code and write
 * nothing: neither the logits nor the state. Prints one line per check
 * and "N passed, N failed". */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dec.h"

static int passed, failed;
static void check(int ok, const char *what) {
  printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  ok ? passed++ : failed++;
}

static float logits[DEC_VOCAB], sentinel[DEC_VOCAB];
static dec_state s, before;
static _Alignas(64) unsigned char ws[DEC_WORKSPACE_SIZE];

/* the call was refused with rc == want and wrote nothing */
static void refused(int rc, int want, const char *what) {
  check(rc == want && !memcmp(logits, sentinel, sizeof logits) && !memcmp(&s, &before, sizeof s), what);
}

static void arm(void) { /* remember the state and mark the logits */
  memcpy(&before, &s, sizeof s);
  memcpy(logits, sentinel, sizeof logits);
}

static unsigned char *read_blob(const char *path) {
  FILE *f = fopen(path, "rb");
  unsigned char *b = aligned_alloc(64, (DEC_WEIGHTS_SIZE + 63) / 64 * 64);
  if (!f || !b || fread(b, 1, DEC_WEIGHTS_SIZE, f) != DEC_WEIGHTS_SIZE) {
    printf("FAIL cannot read %s\n", path);
    exit(1);
  }
  fclose(f);
  return b;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    printf("usage: decoder_api DEC.weights.bin\n");
    return 2;
  }
  unsigned char *blob = read_blob(argv[1]);
  for (int i = 0; i < DEC_VOCAB; i++)
    sentinel[i] = (float)i + 0.5f;
  /* weights */
  check(dec_bind_weights(NULL, DEC_WEIGHTS_SIZE) == KILN_E_WEIGHTS_SIZE, "bind_weights(NULL) is _SIZE");
  check(dec_verify_weights(NULL, DEC_WEIGHTS_SIZE) == KILN_E_WEIGHTS_SIZE, "verify_weights(NULL) is _SIZE");
  check(dec_verify_weights(blob, DEC_WEIGHTS_SIZE) == KILN_OK, "verify_weights(the blob) is KILN_OK");
  blob[DEC_WEIGHTS_SIZE / 2] ^= 0x80;
  check(dec_verify_weights(blob, DEC_WEIGHTS_SIZE) == KILN_E_WEIGHTS_MODEL, "a flipped body bit is _MODEL");
  blob[DEC_WEIGHTS_SIZE / 2] ^= 0x80;
  check(dec_bind_weights(blob, DEC_WEIGHTS_SIZE) == KILN_OK, "bind_weights(the blob) is KILN_OK");
  /* the state */
  check(dec_state_init(NULL) == KILN_E_ARG, "state_init(NULL) is KILN_E_ARG");
  check(dec_length(NULL) == -KILN_E_ARG, "length(NULL) is -KILN_E_ARG");
  check(dec_state_init(&s) == KILN_OK && dec_length(&s) == 0, "state_init(&s): length 0");
  int64_t toks[DEC_PREFILL];
  for (int i = 0; i < DEC_PREFILL; i++)
    toks[i] = (i * 7 + 1) % DEC_VOCAB;
#ifdef ENCODE
  static int64_t src[DEC_IN_SRC_SIZE];
  for (int i = 0; i < DEC_IN_SRC_SIZE; i++)
    src[i] = (i * 5 + 3) % DEC_VOCAB;
  arm();
  refused(dec_encode(NULL, (void *)src), KILN_E_ARG, "encode(NULL state)");
  refused(dec_encode(&s, NULL), KILN_E_ARG, "encode(NULL source)");
  refused(dec_encode_ws(NULL, &s, (void *)src), KILN_E_ARG, "encode_ws(NULL workspace)");
  check(dec_encode(&s, (void *)src) == KILN_OK, "encode(&s, src) is KILN_OK");
#endif
  /* NULL anywhere */
  arm();
  refused(dec_prefill(NULL, toks, 1, logits), KILN_E_ARG, "prefill(NULL state)");
  refused(dec_prefill(&s, NULL, 1, logits), KILN_E_ARG, "prefill(NULL tokens)");
  refused(dec_prefill(&s, toks, 1, NULL), KILN_E_ARG, "prefill(NULL logits)");
  refused(dec_prefill_ws(NULL, &s, toks, 1, logits), KILN_E_ARG, "prefill_ws(NULL workspace)");
  refused(dec_step(NULL, 1, logits), KILN_E_ARG, "step(NULL state)");
  refused(dec_step(&s, 1, NULL), KILN_E_ARG, "step(NULL logits)");
  refused(dec_step_ws(NULL, &s, 1, logits), KILN_E_ARG, "step_ws(NULL workspace)");
  /* counts */
  refused(dec_prefill(&s, toks, 0, logits), KILN_E_ARG, "prefill n = 0");
  refused(dec_prefill(&s, toks, -1, logits), KILN_E_ARG, "prefill n = -1");
  refused(dec_prefill(&s, toks, DEC_PREFILL + 1, logits), KILN_E_ARG, "prefill n = PREFILL + 1");
  /* token ids outside 0..VOCAB-1, first or last of a chunk */
  const int64_t bad_ids[] = {-1, DEC_VOCAB, INT64_MIN, INT64_MAX};
  for (int b = 0; b < 4; b++)
    for (int at = 0; at < 2; at++) {
      char what[96];
      int64_t t[DEC_PREFILL];
      memcpy(t, toks, sizeof t);
      t[at ? DEC_PREFILL - 1 : 0] = bad_ids[b];
      snprintf(what, sizeof what, "prefill with token %lld at %s", (long long)bad_ids[b], at ? "the end" : "0");
      refused(dec_prefill(&s, t, DEC_PREFILL, logits), KILN_E_ARG, what);
      snprintf(what, sizeof what, "step with token %lld", (long long)bad_ids[b]);
      refused(dec_step(&s, bad_ids[b], logits), KILN_E_ARG, what);
    }
  /* a working call, then the cache filled to the brim */
  check(dec_prefill(&s, toks, DEC_PREFILL, logits) == KILN_OK && dec_length(&s) == DEC_PREFILL &&
            isfinite(logits[0]) && isfinite(logits[DEC_VOCAB - 1]), "prefill of PREFILL tokens");
  check(dec_step_ws(ws, &s, 3, logits) == KILN_OK && dec_length(&s) == DEC_PREFILL + 1, "step_ws(ws, ...)");
  while (dec_length(&s) < DEC_CTX)
    if (dec_step(&s, 5, logits) != KILN_OK)
      break;
  check(dec_length(&s) == DEC_CTX, "steps fill the cache");
  arm();
  refused(dec_step(&s, 1, logits), KILN_E_CACHE_FULL, "step on a full cache");
  refused(dec_prefill(&s, toks, 1, logits), KILN_E_CACHE_FULL, "prefill on a full cache");
  /* lengths no state_init or entry point makes */
  const int64_t bad_len[] = {-1, -64, DEC_CTX + 1, INT64_MIN, INT64_MAX};
  for (int b = 0; b < 5; b++) {
    char what[96];
    s.kiln_length = bad_len[b];
    arm();
    snprintf(what, sizeof what, "state length %lld: prefill", (long long)bad_len[b]);
    refused(dec_prefill(&s, toks, 1, logits), KILN_E_ARG, what);
    snprintf(what, sizeof what, "state length %lld: step", (long long)bad_len[b]);
    refused(dec_step(&s, 1, logits), KILN_E_ARG, what);
    snprintf(what, sizeof what, "state length %lld: length() is -KILN_E_ARG", (long long)bad_len[b]);
    check(dec_length(&s) == -KILN_E_ARG, what);
  }
  memset(&s, 0xff, sizeof s); /* the case: a state of 0xFF bytes */
  arm();
  refused(dec_prefill(&s, toks, 1, logits), KILN_E_ARG, "a state of 0xFF bytes: prefill");
  free(blob);
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
