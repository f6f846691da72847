/* blob_app.c — the weights blob's API, exercised: the same encoder compiled
 * twice into one app, `enc` with its weights in a blob (enc.weights.bin,
 * linked in by enc_weights.S) and `ref` with them inline as C literals.
 *
 *   blob_app BLOB_FILE OTHER_BLOB
 *
 * Checks, each printing one line: the linked-in blob binds and gives the
 * inline build's outputs bit for bit; the same bytes read from BLOB_FILE
 * into an aligned buffer bind too; every kind of bad blob is refused with
 * its own code and leaves the previous binding working; OTHER_BLOB (the
 * blob of another model) is refused. Exit 0 when all hold. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "enc.h"
#include "ref.h"

static float src[2][16][64], want[2][16][64], got[2][16][64];
static int failures;

static void check(int ok, const char *what) {
  printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  failures += !ok;
}

/* n bytes at a 64-byte boundary (C99 has no aligned_alloc; never freed). */
static unsigned char *alloc64(size_t n) {
  unsigned char *p = malloc(n + 64);
  if (!p) {
    fprintf(stderr, "blob_app: out of memory\n");
    exit(2);
  }
  return p + (64 - (uintptr_t)p % 64) % 64;
}

/* A file's bytes in a 64-byte-aligned heap buffer (with 64 spare bytes
 * after them, so a copy shifted by one byte fits). */
static unsigned char *read_aligned(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f || fseek(f, 0, SEEK_END) != 0) {
    fprintf(stderr, "blob_app: cannot read %s\n", path);
    exit(2);
  }
  long n = ftell(f);
  rewind(f);
  unsigned char *p = alloc64((size_t)n + 64);
  if (fread(p, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "blob_app: cannot read %s\n", path);
    exit(2);
  }
  fclose(f);
  *size = (size_t)n;
  return p;
}

static int same_as_ref(void) {
  memset(got, 0, sizeof got);
  enc_run(src, got);
  return memcmp(got, want, sizeof got) == 0;
}

/* Bind a copy of blob with byte `at` changed; returns the code. */
static int bind_patched(const unsigned char *blob, size_t size, size_t at) {
  static unsigned char *copy;
  if (!copy)
    copy = alloc64(size);
  memcpy(copy, blob, size);
  copy[at] ^= 0x5a;
  return enc_bind_weights(copy, size);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: blob_app BLOB_FILE OTHER_BLOB\n");
    return 2;
  }
  for (int i = 0; i < 2 * 16 * 64; i++)
    (&src[0][0][0])[i] = (float)((i * 7919) % 2001 - 1000) / 1000.0f;
  ref_run(src, want);

  check(enc_bind_linked_weights() == KILN_OK, "linked-in blob binds");
  check(same_as_ref(), "blob build = inline build, bit for bit");

  size_t size, other_size;
  unsigned char *blob = read_aligned(argv[1], &size);
  unsigned char *other = read_aligned(argv[2], &other_size);
  check(size == ENC_WEIGHTS_SIZE, "the file has ENC_WEIGHTS_SIZE bytes");
  check(enc_bind_weights(blob, size) == KILN_OK && same_as_ref(), "loaded blob binds and runs");

  check(enc_bind_weights(NULL, size) == KILN_E_WEIGHTS_SIZE, "NULL refused (SIZE)");
  check(enc_bind_weights(blob, size - 64) == KILN_E_WEIGHTS_SIZE, "short blob refused (SIZE)");
  memmove(blob + 1, blob, size);
  check(enc_bind_weights(blob + 1, size) == KILN_E_WEIGHTS_ALIGN, "misaligned blob refused (ALIGN)");
  memmove(blob, blob + 1, size);
  check(bind_patched(blob, size, 0) == KILN_E_WEIGHTS_MAGIC, "bad magic refused (MAGIC)");
  check(bind_patched(blob, size, 8) == KILN_E_WEIGHTS_VERSION, "other version refused (VERSION)");
  check(bind_patched(blob, size, 36) == KILN_E_WEIGHTS_VERSION, "other byte order refused (VERSION)");
  check(bind_patched(blob, size, 24) == KILN_E_WEIGHTS_MODEL, "other hash refused (MODEL)");
  check(bind_patched(blob, size, 16) == KILN_E_WEIGHTS_MODEL, "wrong size field refused (MODEL)");
  int rc = enc_bind_weights(other, other_size);
  check(rc == KILN_E_WEIGHTS_SIZE || rc == KILN_E_WEIGHTS_MODEL, "another model's blob refused");
  check(same_as_ref(), "a refused bind leaves the previous binding working");
  check(strcmp(enc_weights_error(KILN_E_WEIGHTS_MODEL), enc_weights_error(KILN_E_WEIGHTS_SIZE)) != 0,
        "enc_weights_error names each code");
  return failures ? 1 : 0;
}
