/* fuzz_kir.c — libFuzzer target: arbitrary text through the .kir parser
 * and, when it parses, the whole pipeline and C emission. The parser must
 * answer every input with a graph or a "line:col: message", never a crash;
 * what it accepts must survive the passes like any imported model.
 * Seeds: the tests/passes .kir files. Build and run with tests/fuzz/run_fuzz.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/driver.h"
#include "fuzz_pipeline.h"
#include "ir/print.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  memcpy(text, data, size);
  text[size] = 0; /* the parser reads NUL-terminated text, as driver_load gives it */
  Arena *a = arena_new();
  Diag d = {0};
  Graph *g = kir_parse(a, "fuzz.kir", text, NULL, 0, &d);
  if (g) {
    fuzz_compile(g, "fuzz.kir", &d);
  } else if (!d.failed) {
    fprintf(stderr, "kiln fuzz: the parser failed without a message\n");
    abort();
  }
  arena_free(a);
  free(text);
  return 0;
}
