/* fuzz_pb.c — libFuzzer target: arbitrary bytes as a TensorProto file
 * (`kiln run --input X=FILE.pb`, kiln check's input_K.pb) through
 * tensor_file_read (compiler/frontend/npy.c), which hands a name not ending in .npy
 * to the ONNX reader (onnx_read_tensor: typed fields, raw_data, external
 * data), and what it accepts through the writer and back.
 *
 * The contract under test is STYLE.md's first kind of error: bad input ends
 * in a Diag naming the file and a false return, never a crash, a leak or
 * undefined behaviour (ASan and UBSan report those). On success the tensor
 * must be consistent, and writing it as a .pb and reading that back must
 * give the same type and bytes; any violation aborts. The file lives in an
 * empty private folder, so external-data locations find nothing but the
 * file itself. Build and run with tests/fuzz/run_fuzz.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontend/npy.h"

static char dir[256], path[300], back_path[300];

KILN_NORETURN static void fail(const char *what, const char *detail) {
  fprintf(stderr, "kiln fuzz: pb: %s %s\n", what, detail ? detail : "");
  abort();
}

static void cleanup(void) {
  remove(path);
  remove(back_path);
  rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  snprintf(dir, sizeof dir, "%s/kiln-fuzz-pb-XXXXXX",
           getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) {
    perror("kiln fuzz: mkdtemp");
    abort();
  }
  snprintf(path, sizeof path, "%s/fuzz.pb", dir);
  snprintf(back_path, sizeof back_path, "%s/back.pb", dir);
  atexit(cleanup);
  return 0;
}

static void check_round_trip(Arena *a, const Tensor *t) {
  Diag d = {0};
  Tensor back;
  if (!tensor_file_write(back_path, t, "x", &d))
    fail("cannot write what was read:", d.msg);
  if (!tensor_file_read(a, back_path, &back, &d))
    fail("cannot read what was written:", d.msg);
  if (!type_equal(&back.type, &t->type) || memcmp(back.data, t->data, type_bytes(&t->type)) != 0)
    fail("the round trip changed the tensor", NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
    fail("cannot write the input file", path);
  Arena *a = arena_new();
  Diag d = {0};
  Tensor t;
  if (tensor_file_read(a, path, &t, &d)) {
    if (!type_size_ok(&t.type) || !t.data || !dt_supported(t.type.dt))
      fail("accepted an inconsistent tensor", NULL);
    check_round_trip(a, &t);
  } else if (!d.failed || !d.file || strcmp(d.file, path) != 0) {
    fail("a failure without a message naming the file:", d.msg);
  }
  arena_free(a);
  return 0;
}
