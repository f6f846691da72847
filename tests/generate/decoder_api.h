/* decoder_api.h — what the apps that test a compiled decoder through its
 * public API share (cache_app.c, past/torch_match.c): the model's header
 * and prefix chosen when they are built (MODEL_H, M for NAME_..., MU for
 * the macros' NAME_...), chunked prefill, and the relative difference of
 * two logits rows. */
#ifndef KILN_TEST_DECODER_API_H
#define KILN_TEST_DECODER_API_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include MODEL_H

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define API(x) CAT(M, x)
#define UP(x) CAT(MU, x)

enum { CTX = UP(_CTX), P = UP(_PREFILL), V = UP(_VOCAB) };

#ifdef KILN_WEIGHTS_CODES /* a blob's codes beside the decoder's: an app tells them apart */
_Static_assert((int)KILN_E_CACHE_FULL != (int)KILN_E_WEIGHTS_UNBOUND &&
                   (int)KILN_E_ARG != (int)KILN_E_WEIGHTS_UNBOUND && KILN_E_CACHE_FULL != KILN_E_ARG,
               "the generated API's return codes are distinct");
#endif

/* Append tokens[0..n) to s in chunks of at most P (each copied into a
 * full-size, zero-padded chunk, as the API's array parameter says). */
static int feed(API(_state) *s, const int64_t *tokens, int64_t n, float *logits) {
  for (int64_t at = 0; at < n;) {
    int k = n - at < P ? (int)(n - at) : P;
    int64_t chunk[P] = {0};
    memcpy(chunk, tokens + at, (size_t)k * sizeof *chunk);
    int rc = API(_prefill)(s, chunk, k, logits);
    if (rc != KILN_OK)
      return rc;
    at += k;
  }
  return KILN_OK;
}

/* max |a - b| over the row, relative to max |b| (absolute when b is all 0). */
static double diff(const float *a, const float *b) {
  double d = 0, m = 0;
  for (int i = 0; i < V; i++) {
    d = fmax(d, fabs((double)a[i] - b[i]));
    m = fmax(m, fabs((double)b[i]));
  }
  return m > 0 ? d / m : d;
}

#endif
