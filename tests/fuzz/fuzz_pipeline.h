/* fuzz_pipeline.h — what the model fuzzers (fuzz_onnx.c, fuzz_kir.c) do to
 * a graph once it has been read: driver_lower's loop with the verifier's
 * verdict kept apart from the passes' own diagnostics (a pass may reject bad
 * input, but the IR it leaves on success must always verify), then C
 * emission into memory, with inline weights and with a weights blob. Header-only: each fuzzer is one translation unit. */
#ifndef KILN_FUZZ_PIPELINE_H
#define KILN_FUZZ_PIPELINE_H

#include <stdio.h>
#include <stdlib.h>

#include "cmd/driver.h"
#include "emit/weights_blob.h"

/* Lower g and emit C; false (with d set) where the input is rejected.
 * Aborts — a fuzzer finding — when a pass leaves IR that does not verify
 * or a stage fails without a message. */
static bool fuzz_compile(Graph *g, const char *source, Diag *d) {
  PassOptions po = {.fold_limit = 1u << 16}; /* keep each run fast */
  bool ok = true;
  int typed_after = (int)(pass_find("bind") - pass_list); /* as driver_lower: infer types every value */
  for (int i = 0; ok && i < pass_count; i++) {
    if (!pass_runs(&pass_list[i], &po))
      continue; /* kv_cache: only with --kv-cache */
    ok = pass_list[i].fn(g, &po, d);
    Diag vd = {0};
    if (ok && !graph_verify(g, i > typed_after, &vd)) {
      fprintf(stderr, "kiln fuzz: after pass %s: %s\n", pass_list[i].name, vd.msg);
      abort();
    }
  }
  /* weights inline, then in a blob: both emitters see every input */
  for (int blob_mode = 0; ok && blob_mode < 2; blob_mode++) {
    Buf c = {0}, h = {0};
    WeightsBlob blob = {0};
    EmitOptions eo = {.prefix = "model", .source = source, .header = "model.h",
                      .weights = blob_mode ? WEIGHTS_BLOB : WEIGHTS_INLINE};
    ok = emit_c(g, &eo, &c, &h, &blob, d);
    blob_free(&blob);
    buf_free(&c);
    buf_free(&h);
  }
  if (!ok && !d->failed) {
    fprintf(stderr, "kiln fuzz: a stage failed without a message\n");
    abort();
  }
  return ok;
}

#endif
