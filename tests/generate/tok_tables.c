/* tok_tables.c — test only: a compiled model's NAME_tokenizer_tables()
 * (compiler/tokenizer.c) through the public API. With -DKILN_MODEL_BLOB=1
 * (the tables in the weights blob) it first checks that every pointer is
 * NULL before a bind and after a refused one, then binds the linked blob;
 * with 0 (--weights=inline) the tables must be there from the start. Then
 * it writes the five tables to stdout (text, offsets, types, byte tokens,
 * merges, native byte order) so that the two builds can be compared byte
 * for byte, after checking what the header promises of them. Exit 0, or 1
 * with a message. Built against smol.h (kiln compile ... -o DIR/smol.c). */
#include <stdio.h>
#include <string.h>

#include "smol.h"

#ifndef KILN_MODEL_BLOB
#define KILN_MODEL_BLOB 1
#endif

static int fail(const char *what) {
  fprintf(stderr, "tok_tables: FAIL: %s\n", what);
  return 1;
}

#if KILN_MODEL_BLOB
static int none(smol_tokenizer t) {
  return !t.token_text && !t.token_offset && !t.token_type && !t.byte_token && !t.merges;
}
#endif

int main(void) {
#if KILN_MODEL_BLOB
  if (!none(smol_tokenizer_tables()))
    return fail("tables before a bind");
  static _Alignas(64) unsigned char zeros[64];
  if (smol_bind_weights(zeros, sizeof zeros) == KILN_OK)
    return fail("a blob of zeros was bound");
  if (!none(smol_tokenizer_tables()))
    return fail("tables after a refused bind");
  int rc = smol_bind_linked_weights();
  if (rc != KILN_OK)
    return fail(smol_weights_error(rc));
#endif
  smol_tokenizer t = smol_tokenizer_tables();
  if (!t.token_text || !t.token_offset || !t.token_type || !t.byte_token || !t.merges)
    return fail("a NULL table");
  if (t.token_offset[0] != 0 || t.token_offset[SMOL_TOKENS] != SMOL_TOKEN_TEXT_SIZE ||
      t.token_text[SMOL_TOKEN_TEXT_SIZE - 1] != 0 || t.merges[3 * SMOL_MERGES] != -1)
    return fail("the tables' ends are not as smol.h says");
  for (int i = 0; i < SMOL_TOKENS; i++)
    if (t.token_offset[i + 1] <= t.token_offset[i] || t.token_text[t.token_offset[i + 1] - 1] != 0)
      return fail("a token's bytes do not end in a NUL");
  if (fwrite(t.token_text, 1, SMOL_TOKEN_TEXT_SIZE, stdout) != SMOL_TOKEN_TEXT_SIZE ||
      fwrite(t.token_offset, sizeof *t.token_offset, SMOL_TOKENS + 1, stdout) != SMOL_TOKENS + 1 ||
      fwrite(t.token_type, 1, SMOL_TOKENS, stdout) != SMOL_TOKENS ||
      fwrite(t.byte_token, sizeof *t.byte_token, 256, stdout) != 256 ||
      fwrite(t.merges, sizeof *t.merges, 3 * SMOL_MERGES + 1, stdout) != 3 * SMOL_MERGES + 1)
    return fail("cannot write stdout");
  return 0;
}
