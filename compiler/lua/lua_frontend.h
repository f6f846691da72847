/* lua_frontend.h — the second way into kiln: a Lua 5.4 model description,
 * run in a sandbox, builds the same IR the ONNX importer does (docs/lua.md
 * is the DSL reference). */
#ifndef KILN_LUA_FRONTEND_H
#define KILN_LUA_FRONTEND_H

#include "../formats/gguf.h"
#include "../ir/ir.h"

typedef struct LuaOptions {
  const char *const *sets;   /* --set KEY=VALUE, for config{} */
  int nsets;
  const char *weights;       /* --weights FILE (.safetensors or .gguf; overrides the script's weights()) */
  bool strict_weights;       /* --strict-weights: a tensor the model does not use is an error */
  bool quiet;                /* -q: no note about unused tensors */
  int64_t max_steps;         /* instruction budget (0: the default, 10^9) */
  int64_t max_mem;           /* bytes the script may allocate (0: the default, 512 MiB) */
  bool traceback;            /* add the Lua traceback to errors (-v) */
  /* When not NULL, receives the GGUF file the model bound (weights() or
   * --weights), or NULL when it bound none: its metadata (the tokenizer's
   * vocabulary, say) for the rest of the compiler. It lives in the arena
   * dsl_load_model was given; its tensors' data are the graph's constants. */
  const Gguf **bound_gguf;
  /* A GGUF file read already (kiln compile FILE.gguf: dsl_load_gguf), bound
   * as --weights FILE would be, without reading it again; NULL otherwise. */
  const Gguf *gguf;
} LuaOptions;

/* Run the script at path and return the graph it built (inputs, outputs,
 * params as constants, every node inferred), or NULL with d set: the
 * message then starts with the script's "file:line:". */
Graph *dsl_load_model(Arena *a, const char *path, const LuaOptions *o, Diag *d);
/* The same for a script held in memory; name is its file name in messages
 * ("arch/llama.lua:72: ..."). */
Graph *dsl_load_text(Arena *a, const char *name, const char *text, const LuaOptions *o, Diag *d);

/* ---- GGUF files as models (arch.c) ------------------------------------------
 * A GGUF file names its architecture (general.architecture); kiln carries
 * a Lua description for each one it compiles (compiler/arch/README.md),
 * embedded as arch/ARCH.lua and installed to share/kiln/arch/. */

/* Whether arch (len bytes) can be an architecture's name, safe to print:
 * 1 to 64 of [A-Za-z0-9_.-] ("llama", "qwen2", "command-r"). */
bool dsl_arch_name_ok(const char *arch, size_t len);
/* The bundled description of architecture arch, or NULL. */
const char *dsl_arch_text(const char *arch);
/* The architectures kiln has descriptions for, "llama, qwen2" (arena). */
const char *dsl_arch_names(Arena *a);
/* Whether path is a GGUF file: named *.gguf, or starting with its magic. */
bool dsl_is_gguf(const char *path);
/* Read the GGUF at path and run the description for its architecture with
 * the file bound as its weights (o's --set and limits apply; o->weights
 * must be NULL). NULL + d when the file has no general.architecture or
 * kiln has no description for it ("... expected one of: llama, qwen2"). */
Graph *dsl_load_gguf(Arena *a, const char *path, const LuaOptions *o, Diag *d);

#endif
