/* fuzz_lua.c — libFuzzer target: arbitrary bytes as a Lua model
 * description (compiler/lua/: the sandbox, the DSL, nn.lua) with small
 * budgets, and the graph a script builds through every pass and C
 * emission (fuzz_pipeline.h).
 *
 * The contract under test is STYLE.md's first kind of error: a bad script
 * (a syntax error, a runaway loop, a memory bomb, a wrong shape, a call the
 * sandbox forbids) ends in a Diag and a false return, never a crash, a
 * hang, an assert or undefined behaviour; ASan and UBSan turn any of those
 * into a finding, and so does a verifier complaint after a pass. The
 * budgets are the --lua-steps and --lua-mem options turned down (10^6
 * steps, 64 MiB, which also caps each param{}'s initial values), so one
 * input costs milliseconds. The script lives in an empty private folder:
 * weights() and require of a file find nothing. Build and run with
 * tests/fuzz/run_fuzz.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/driver.h"
#include "fuzz_pipeline.h"

static char dir[256], path[300];

static void cleanup(void) {
  remove(path);
  rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  snprintf(dir, sizeof dir, "%s/kiln-fuzz-lua-XXXXXX",
           getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) {
    perror("kiln fuzz: mkdtemp");
    abort();
  }
  snprintf(path, sizeof path, "%s/fuzz.lua", dir);
  atexit(cleanup);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
    perror("kiln fuzz: writing the script");
    abort();
  }
  Arena *a = arena_new();
  Diag d = {.file = path};
  LuaOptions lo = {.max_steps = 1000000, .max_mem = 64 << 20, .quiet = true};
  Graph *g = dsl_load_model(a, path, &lo, &d);
  if (g) {
    fuzz_compile(g, "fuzz.lua", &d);
  } else if (!d.failed) {
    fprintf(stderr, "kiln fuzz: the Lua frontend failed without a message\n");
    abort();
  }
  arena_free(a);
  return 0;
}
