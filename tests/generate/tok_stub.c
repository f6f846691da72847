/* tok_stub.c — test only: a GGUF's tokenizer tables (compiler/emit/tokenizer.c)
 * plus a stub model behind the generative API of README "Generating text",
 * so examples/generate.c compiles, links and runs before kiln compiles the
 * real model. The stub's logits put all the weight on (token + 1) modulo
 * the vocabulary, so its greedy output is predictable.
 *
 *   tok_stub FILE.gguf PREFIX DIR   writes DIR/PREFIX.h and DIR/PREFIX.c
 * Exit 0, or 1 with kiln's message (the tokenizer's errors are what the
 * bad-vocabulary tests check). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "emit/tokenizer.h"

static const char *api_h =
    "#define P_CTX 512\n#define P_PREFILL 64\n#define P_VOCAB P_TOKENS\n"
    "typedef struct p_state { int64_t len; int64_t last; } p_state;\n"
    "void p_state_init(p_state *state);\n"
    "int p_prefill(p_state *state, const int64_t tokens[P_PREFILL], int n, float logits[P_VOCAB]);\n"
    "int p_step(p_state *state, int64_t token, float logits[P_VOCAB]);\n"
    "int64_t p_length(const p_state *state);\n"
    "#define KILN_OK 0\n#define KILN_E_ARG 7\n#define KILN_E_CACHE_FULL 8\n"
    "#define P_WEIGHTS_SIZE 64 /* a stub: nothing to bind */\n"
    "#define p_weights_blob ((const unsigned char *)0)\n"
    "static inline int p_verify_weights(const void *blob, unsigned long size) { (void)blob; (void)size; return KILN_OK; }\n"
    "static inline int p_bind_linked_weights(void) { return KILN_OK; }\n"
    "const char *p_weights_error(int code);\n";

static const char *api_c =
    "void p_state_init(p_state *state) { state->len = 0; state->last = 0; }\n"
    "int64_t p_length(const p_state *state) { return state->len; }\n"
    "const char *p_weights_error(int code) { return code ? \"error\" : \"ok\"; }\n"
    "static void stub_logits(int64_t token, float *logits) {\n"
    "  for (int i = 0; i < P_VOCAB; i++) logits[i] = (float)(i % 7) * 0.01f;\n"
    "  logits[(token + 1) % P_VOCAB] = 10.0f;\n}\n"
    "static int append(p_state *state, const int64_t *tokens, int n, float *logits) {\n"
    "  if (state->len + n > P_CTX) return KILN_E_CACHE_FULL;\n"
    "  state->len += n; state->last = tokens[n - 1]; stub_logits(tokens[n - 1], logits);\n"
    "  return KILN_OK;\n}\n"
    "int p_prefill(p_state *state, const int64_t tokens[P_PREFILL], int n, float logits[P_VOCAB]) {\n"
    "  if (n < 1 || n > P_PREFILL) return KILN_E_ARG;\n"
    "  return append(state, tokens, n, logits);\n}\n"
    "int p_step(p_state *state, int64_t token, float logits[P_VOCAB]) {\n"
    "  return append(state, &token, 1, logits);\n}\n";

/* text with every "p_" / "P_" replaced by prefix_ / PREFIX_ */
static void put_prefixed(Buf *b, const char *text, const char *p, const char *P) {
  for (const char *s = text; *s; s++)
    if ((s[0] == 'p' || s[0] == 'P') && s[1] == '_' && (s == text || s[-1] == ' ' || s[-1] == '(' ||
                                                         s[-1] == '\n' || s[-1] == '[' || s[-1] == '{' || s[-1] == '*'))
      buf_puts(b, s[0] == 'p' ? p : P);
    else
      buf_put(b, s, 1);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: tok_stub FILE.gguf PREFIX DIR\n");
    return 2;
  }
  const char *p = argv[2];
  char P[64];
  snprintf(P, sizeof P, "%s", p);
  for (char *q = P; *q; q++)
    *q = (char)(*q >= 'a' && *q <= 'z' ? *q - 32 : *q);
  Arena *a = arena_new();
  Diag d = {0};
  Gguf g;
  Buf c = {0}, h = {0}, tc = {0}, th = {0};
  if (!gguf_load(a, argv[1], &g, &d) || !tokenizer_emit(&g, p, NULL, &tc, &th, &d)) {
    diag_print(&d);
    return 1;
  }
  buf_printf(&h, "#ifndef %s_H\n#define %s_H\n#include <stdint.h>\n", P, P);
  buf_put(&h, th.s, th.len);
  put_prefixed(&h, api_h, p, P);
  buf_puts(&h, "#endif\n");
  buf_printf(&c, "#include \"%s.h\"\n", p);
  buf_put(&c, tc.s, tc.len);
  put_prefixed(&c, api_c, p, P);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.h", argv[3], p);
  bool ok = write_file_atomic(path, h.s, h.len, &d);
  snprintf(path, sizeof path, "%s/%s.c", argv[3], p);
  ok = ok && write_file_atomic(path, c.s, c.len, &d);
  if (!ok)
    diag_print(&d);
  fprintf(stderr, "tok_stub: tables %zu bytes of C, %zu of header\n", tc.len, th.len);
  return ok ? 0 : 1;
}
