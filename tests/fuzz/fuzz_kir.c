/* fuzz_kir.c — libFuzzer target: arbitrary text through the .kir parser
 * and, when it parses, the whole pipeline and C emission. The parser must
 * answer every input with a graph or a "line:col: message", never a crash;
 * what it accepts must survive the passes like any imported model.
 * Seeds: tests/passes/*.kir. Build and run with tests/fuzz/run_fuzz.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "print.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  memcpy(text, data, size);
  text[size] = 0; /* the parser reads NUL-terminated text, as driver_load gives it */
  Arena *a = arena_new();
  Diag d = {0};
  Graph *g = kir_parse(a, "fuzz.kir", text, NULL, 0, &d);
  bool ok = g != NULL;
  if (ok) {
    PassOptions po = {.fold_limit = 1u << 16};
    for (int i = 0; ok && i < pass_count; i++) {
      ok = pass_list[i].fn(g, &po, &d);
      Diag vd = {0};
      if (ok && !graph_verify(g, i > 0, &vd)) {
        fprintf(stderr, "kiln fuzz: after pass %s: %s\n", pass_list[i].name, vd.msg);
        abort();
      }
    }
  }
  if (ok) {
    Buf c = {0}, h = {0};
    EmitOptions eo = {.prefix = "model", .source = "fuzz.kir", .header = "model.h"};
    ok = emit_c(g, &eo, &c, &h, &d);
    buf_free(&c);
    buf_free(&h);
  }
  if (!ok && !d.failed) {
    fprintf(stderr, "kiln fuzz: a stage failed without a message\n");
    abort();
  }
  arena_free(a);
  free(text);
  return 0;
}
