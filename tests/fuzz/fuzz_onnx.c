/* fuzz_onnx.c — libFuzzer target: arbitrary bytes through the whole
 * compiler front to back (ONNX import, every pass, C emission into memory).
 *
 * The contract under test is STYLE.md's first kind of error: bad input ends
 * in a Diag and a false return, never a crash, an assert, an out-of-bounds
 * access or undefined behaviour. ASan and UBSan turn any of those into a
 * fuzzer finding, and so does a verifier complaint after a pass that
 * succeeded. Build and run with tests/fuzz/run_fuzz.sh.
 *
 * The bytes go to onnx_import_bytes directly. The model's nominal path is
 * in an empty private folder, so external-data locations in mutated models
 * find nothing. Symbolic input dims are bound to small sizes, as --shape
 * would, so mutated models get past the bind pass and reach the ops. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/driver.h"
#include "fuzz_pipeline.h"
#include "frontend/onnx.h"

static char model_dir[256], model_path[300];

static void cleanup(void) { rmdir(model_dir); }

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  snprintf(model_dir, sizeof model_dir, "%s/kiln-fuzz-XXXXXX",
           getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(model_dir)) {
    perror("kiln fuzz: mkdtemp");
    abort();
  }
  snprintf(model_path, sizeof model_path, "%s/fuzz.onnx", model_dir);
  atexit(cleanup);
  return 0;
}

/* What `--shape` would do for a user: every symbolic dim becomes 2. */
static void bind_symbols(Graph *g) {
  for (int k = 0; k < g->ninputs; k++) {
    Value *v = gval(g, g->inputs[k]);
    for (int i = 0; i < v->type.rank; i++)
      if (v->type.dims[i] < 0)
        v->type.dims[i] = 2;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Arena *a = arena_new();
  Diag d = {.file = model_path};
  Graph *g = onnx_import_bytes(a, data, size, model_path, &d);
  if (g) {
    bind_symbols(g);
    fuzz_compile(g, "fuzz.onnx", &d);
  } else if (!d.failed) {
    fprintf(stderr, "kiln fuzz: the importer failed without a message\n");
    abort();
  }
  arena_free(a);
  return 0;
}
