/* flip_bits.c BLOB — the weights hash sees every bit (issue 21): links
 * small_blob.lua compiled with --weights-mode=blob as sb.c, reads BLOB, and
 *   - the blob as written binds and verifies (KILN_OK);
 *   - each single bit flipped in the header is refused by bind and verify;
 *   - each single bit flipped in the body is KILN_E_WEIGHTS_MODEL from
 *     sb_verify_weights (bind reads only the header: documented);
 *   - each pair of words with the same one of their top 8 bits flipped
 *     (what cancelled in the FNV-1a step that the hash was) is too.
 * Prints the counts; exits 1 on the first failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb.h"

static unsigned char *blob;

static int fail(const char *what, size_t a, size_t b, int bit, int rc) {
  printf("FAIL %s (bytes %zu and %zu, bit %d): %s\n", what, a, b, bit, sb_weights_error(rc));
  return 1;
}

int main(int argc, char **argv) {
  FILE *f = argc == 2 ? fopen(argv[1], "rb") : NULL;
  blob = aligned_alloc(64, SB_WEIGHTS_SIZE + 64);
  if (!f || !blob || fread(blob, 1, SB_WEIGHTS_SIZE + 1, f) != SB_WEIGHTS_SIZE) {
    printf("FAIL usage: flip_bits SB.weights.bin (of SB_WEIGHTS_SIZE bytes)\n");
    return 1;
  }
  fclose(f);
  const size_t n = SB_WEIGHTS_SIZE;
  int rc;
  if ((rc = sb_verify_weights(blob, n)) != KILN_OK || (rc = sb_bind_weights(blob, n)) != KILN_OK)
    return fail("the blob as written", 0, 0, 0, rc);
  long checks = 0;
  for (size_t i = 0; i < n; i++)
    for (int bit = 0; bit < 8; bit++) {
      blob[i] ^= (unsigned char)(1u << bit);
      rc = sb_verify_weights(blob, n);
      if (i < 64 ? rc == KILN_OK || sb_bind_weights(blob, n) == KILN_OK : rc != KILN_E_WEIGHTS_MODEL)
        return fail("one bit flipped", i, i, bit, rc);
      blob[i] ^= (unsigned char)(1u << bit);
      checks++;
    }
  for (int bit = 56; bit < 64; bit++) /* bit k of a little-endian word: byte k/8 */
    for (size_t a = 64; a < n; a += 8)
      for (size_t b = a + 8; b < n; b += 8) {
        blob[a + bit / 8] ^= (unsigned char)(1u << bit % 8);
        blob[b + bit / 8] ^= (unsigned char)(1u << bit % 8);
        rc = sb_verify_weights(blob, n);
        blob[a + bit / 8] ^= (unsigned char)(1u << bit % 8);
        blob[b + bit / 8] ^= (unsigned char)(1u << bit % 8);
        if (rc != KILN_E_WEIGHTS_MODEL)
          return fail("two words' same high bit flipped", a, b, bit, rc);
        checks++;
      }
  printf("ok   %ld flipped blobs refused (%zu bytes)\n", checks, n);
  free(blob);
  return 0;
}
