/* fuzz_safetensors.c — libFuzzer target: arbitrary bytes through the
 * .safetensors reader (compiler/formats/safetensors.c), and what it accepts through
 * the writer and back.
 *
 * The contract under test is STYLE.md's first kind of error: bad input ends
 * in a Diag and a false return, never a crash, a leak, an out-of-bounds
 * access or undefined behaviour (ASan and UBSan report those). On success
 * the result must be consistent — each tensor's byte count matches its
 * shape, its data is 16-byte aligned, every tensor binds by name to its own
 * type — and writing it out and reading that back must give the same
 * tensors and metadata; any violation aborts, which the fuzzer reports.
 * Build and run with tests/fuzz/run_fuzz.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/safetensors.h"
#include "../safetensors/st_same.h"

KILN_NORETURN static void fail(const char *what, const char *detail) {
  fprintf(stderr, "kiln fuzz: safetensors: %s %s\n", what, detail ? detail : "");
  abort();
}

static void check_consistent(SafeTensors *st) {
  for (int i = 0; i < st->n; i++) {
    StTensor *t = &st->t[i];
    if (t->bytes != type_bytes(&t->type) || ((uintptr_t)t->data & 15) != 0)
      fail("size or alignment wrong for", t->name);
    if (safetensors_find(st, t->name) != t)
      fail("two tensors share the name", t->name);
    Type want = t->type;
    Diag d = {0};
    if (!safetensors_take(st, t->name, &want, &d))
      fail("a tensor does not bind to its own type:", d.msg);
  }
  Diag d = {0};
  if (!safetensors_check_all_used(st, &d))
    fail("unused after binding every tensor:", d.msg);
}

static void check_round_trip(Arena *a, const SafeTensors *st) {
  Buf out = {0};
  Diag d = {0};
  if (!safetensors_serialize(st->t, st->n, st->meta, st->nmeta, &out, &d))
    fail("cannot write what was read:", d.msg);
  SafeTensors back;
  if (!safetensors_parse(a, out.s, out.len, "fuzz-roundtrip.safetensors", &back, &d))
    fail("cannot read what was written:", d.msg);
  if (!st_same(st, &back))
    fail("the round trip changed the tensors", NULL);
  buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Arena *a = arena_new();
  Diag d = {0};
  SafeTensors st;
  if (safetensors_parse(a, data, size, "fuzz.safetensors", &st, &d)) {
    check_consistent(&st);
    check_round_trip(a, &st);
  } else if (!d.failed || strncmp(d.msg, "fuzz.safetensors: ", 18) != 0) {
    fail("a failure without a message naming the file:", d.msg);
  }
  arena_free(a);
  return 0;
}
