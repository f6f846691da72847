/* fuzz_npy.c — libFuzzer target: arbitrary bytes through the .npy reader
 * (compiler/frontend/npy.c), and what it accepts through the writer and back.
 *
 * The contract under test is STYLE.md's first kind of error: bad input ends
 * in a Diag naming the file and a false return, never a crash, a leak, an
 * out-of-bounds access or undefined behaviour (ASan and UBSan report
 * those). On success the tensor must be consistent (a type within
 * MAX_NUMEL, its data there), and writing it and reading that back must
 * give the same type and bytes, with the header padded so the data starts
 * at a multiple of 64; any violation aborts, which the fuzzer reports.
 * Build and run with tests/fuzz/run_fuzz.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/npy.h"

KILN_NORETURN static void fail(const char *what, const char *detail) {
  fprintf(stderr, "kiln fuzz: npy: %s %s\n", what, detail ? detail : "");
  abort();
}

static void check_round_trip(Arena *a, const Tensor *t) {
  Buf out = {0};
  Diag d = {0};
  if (!npy_serialize(t, &out, &d))
    fail("cannot write what was read:", d.msg);
  if (out.len % 64 != 0)
    fail("the header is not padded to 64 bytes", NULL);
  buf_put(&out, t->data, type_bytes(&t->type));
  Tensor back;
  if (!npy_parse(a, out.s, out.len, "fuzz-roundtrip.npy", &back, &d))
    fail("cannot read what was written:", d.msg);
  if (!type_equal(&back.type, &t->type) || memcmp(back.data, t->data, type_bytes(&t->type)) != 0)
    fail("the round trip changed the tensor", NULL);
  buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Arena *a = arena_new();
  Diag d = {0};
  Tensor t;
  if (npy_parse(a, data, size, "fuzz.npy", &t, &d)) {
    if (!type_size_ok(&t.type) || !t.data || !dt_supported(t.type.dt))
      fail("accepted an inconsistent tensor", NULL);
    check_round_trip(a, &t);
  } else if (!d.failed || !d.file || strcmp(d.file, "fuzz.npy") != 0) {
    fail("a failure without a message naming the file:", d.msg);
  }
  arena_free(a);
  return 0;
}
