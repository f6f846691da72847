/* emit_text.c — small text helpers shared by the writers of the generated
 * files (emit_text.h). */
#include "emit_text.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "../base/c_text.h"

/* The name of entry point k's kiln_adapt (a decoder's entries, or run). */
const char *emit_adapt_name(const Graph *g, int k) {
  return arena_printf(g->arena, "kiln_adapt_%s", g->decoder ? g->decoder->entries[k].name : "run");
}

/* Text from the model made safe inside a C comment (c_text.h). */
const char *emit_cm(Arena *a, const char *s) { return c_text(a, CT_COMMENT, s); }

const char *emit_upper(Arena *a, const char *s) {
  char *r = arena_strdup(a, s);
  for (char *p = r; *p; p++)
    *p = (char)toupper((unsigned char)*p);
  return r;
}

/* "[2][16][64]" (or "[1]" for a scalar, "[]" when a dim is zero) */
const char *emit_array_dims(Arena *a, const Type *t) {
  if (type_numel(t) == 0)
    return "[]";
  if (t->rank == 0)
    return "[1]";
  if (dt_is_packed(t->dt)) /* 4- and 2-bit elements: their bytes, element 0 in the low bits */
    return arena_printf(a, "[%zu]", type_bytes(t));
  Buf b = {0};
  for (int i = 0; i < t->rank; i++)
    buf_printf(&b, "[%lld]", (long long)t->dims[i]);
  char *r = arena_strdup(a, b.s);
  buf_free(&b);
  return r;
}

/* The header's end: the tokenizer's declarations (if any), then the
 * extern "C" block and the include guard closed. */
void emit_header_end(Buf *h, const Buf *tok) {
  if (tok && tok->len)
    buf_printf(h, "\n%s", tok->s);
  buf_puts(h, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
}

void emit_threads_doc(Buf *h, const char *prefix, int threads) {
  buf_printf(h, " *\n * Threads: compiled with --threads %d. Build %s.c with -pthread (or\n"
                " * -fopenmp, which implies it) to run its large loops on up to %d threads of\n"
                " * kiln's pool (kiln_rt.h: started on the first threaded call, kept until\n"
                " * the process exits); built without, or with -DKILN_SERIAL, the same code\n"
                " * runs on the calling thread alone. %s_set_threads(n) caps the count at n\n"
                " * from the next call on (process-wide: every workspace, every entry point),\n"
                " * 1 <= n <= %d; it returns KILN_OK, or KILN_E_ARG for an n outside 1..%d\n"
                " * (the count then stays as it was). The results are the same at every count.\n",
             threads, prefix, threads, prefix, threads, threads);
}

void emit_threads_decl(Buf *h, const char *prefix) {
  buf_printf(h, "int %s_set_threads(int n);\n", prefix);
}

/* s0 and s1 (layer 0's and layer 1's text) compared run by run: the same
 * but for runs of digits (the layer numbers)? Then *out gets s0 with each
 * differing run replaced by `hole` ("" drops it, with the '_' or '.'
 * before it), *first the value of the first such run in s0. */
bool emit_layer_pattern(Arena *a, const char *s0, const char *s1, const char *hole, const char **out, long *first) {
  Buf b = {0};
  bool differs = false;
  *first = -1;
  while (*s0 || *s1) {
    if (isdigit((unsigned char)*s0) && isdigit((unsigned char)*s1)) {
      size_t n0 = strspn(s0, "0123456789"), n1 = strspn(s1, "0123456789");
      if (n0 == n1 && !strncmp(s0, s1, n0)) {
        buf_put(&b, s0, n0);
      } else {
        if (!differs)
          *first = strtol(s0, NULL, 10);
        differs = true;
        if (!*hole && b.len && (b.s[b.len - 1] == '_' || b.s[b.len - 1] == '.'))
          b.s[--b.len] = 0;
        buf_puts(&b, hole);
      }
      s0 += n0;
      s1 += n1;
      continue;
    }
    if (*s0 != *s1)
      break;
    buf_put(&b, s0, 1);
    s0++;
    s1++;
  }
  bool ok = differs && !*s0 && !*s1;
  *out = ok ? arena_strdup(a, b.s ? b.s : "") : NULL;
  buf_free(&b);
  return ok;
}

const char *emit_layer_text(Arena *a, const char *c0, const char *c1) {
  const char *r;
  long n;
  return emit_layer_pattern(a, c0, c1, "l", &r, &n) ? r : c0;
}

