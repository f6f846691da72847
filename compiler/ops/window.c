/* window.c — helpers shared by the sliding-window ops (see window.h). */
#include "window.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool window_fail(char *why, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, WHY, fmt, ap);
  va_end(ap);
  return false;
}

/* Optional ints attribute of len values (dflt when absent or empty), each
 * in [lo, ATTR_MAX]. */
bool window_ints_attr(const Node *n, const char *name, int len, int64_t dflt, int64_t lo, int64_t *v,
                      char *why) {
  const Attr *a = attr_get(n, name);
  for (int i = 0; i < len; i++)
    v[i] = dflt;
  if (!a || (a->kind == ATTR_INTS && a->n == 0))
    return true;
  if (a->kind != ATTR_INTS || a->n != len)
    return window_fail(why, "attribute %s has %d values; expected %d (%s)", name, a->kind == ATTR_INTS ? a->n : 1,
                len, strcmp(name, "pads") ? "one per spatial dim" : "begin and end per spatial dim");
  for (int i = 0; i < len; i++) {
    if (a->ints[i] < lo || a->ints[i] > ATTR_MAX)
      return window_fail(why, "attribute %s[%d] is %lld; expected %lld..%lld", name, i, (long long)a->ints[i],
                  (long long)lo, (long long)ATTR_MAX);
    v[i] = a->ints[i];
  }
  return true;
}

int64_t window_prod(const int64_t *v, int n) {
  int64_t p = 1;
  for (int i = 0; i < n; i++)
    p *= v[i];
  return p;
}

/* "a * 8 + b": row-major offset of coordinates terms[] in dims[] (dims of
 * size 1 contribute nothing); col: column-major instead. */
const char *window_flat(Arena *a, int n, const char **terms, const int64_t *dims, bool col) {
  const char *s = NULL;
  for (int jj = 0; jj < n; jj++) {
    int j = col ? n - 1 - jj : jj;
    if (dims[j] == 1)
      continue;
    if (!s)
      s = terms[j];
    else
      s = arena_printf(a, strpbrk(s, "+-") ? "(%s) * %lld + %s" : "%s * %lld + %s", s, (long long)dims[j],
                       terms[j]);
  }
  return s ? s : "0";
}

void window_unflatten(int64_t i, const int64_t *dims, int n, int64_t *at) {
  for (int j = n - 1; j >= 0; j--) {
    at[j] = i % dims[j];
    i /= dims[j];
  }
}

const char *window_dim_sfx(Arena *a, int ns, int j) {
  static const char *dhw[] = {"d", "h", "w"};
  return ns <= 3 ? dhw[3 - ns + j] : arena_printf(a, "%d", j);
}

/* static const int NAME[n] = {...}; 16 values a line. */
void window_emit_table(Emit *e, const char *name, const int64_t *v, int64_t n, const char *what) {
  Buf b = {0};
  for (int64_t i = 0; i < n && i < 16; i++)
    buf_printf(&b, "%s%lld", i ? ", " : "", (long long)v[i]);
  if (n <= 16) {
    emit_line(e, "static const int %s[%lld] = {%s}; /* %s */", name, (long long)n, b.s, what);
    buf_free(&b);
    return;
  }
  emit_line(e, "static const int %s[%lld] = { /* %s */", name, (long long)n, what);
  for (int64_t r = 0; r < n; r += 16) {
    b.len = 0;
    for (int64_t i = r; i < n && i < r + 16; i++)
      buf_printf(&b, "%s%lld%s", i > r ? " " : "", (long long)v[i], i + 1 < n ? "," : "");
    emit_line(e, "  %s", b.s);
  }
  emit_line(e, "};");
  buf_free(&b);
}

Type window_permute_last(const Type *x, bool to_last) {
  Type t = *x;
  int r = x->rank;
  if (r < 3)
    return t;
  if (to_last) {
    for (int j = 1; j < r - 1; j++)
      t.dims[j] = x->dims[j + 1];
    t.dims[r - 1] = x->dims[1];
  } else {
    t.dims[1] = x->dims[r - 1];
    for (int j = 2; j < r; j++)
      t.dims[j] = x->dims[j - 1];
  }
  return t;
}

void window_last_outputs(Emit *e, const WindowWalk *w, int64_t nb, int64_t ch, const char *y) {
  Arena *a = e->g->arena;
  int ns = w->ns;
  emit_line(e, "for (int n = 0; n < %lld; n++) {", (long long)nb);
  e->indent++;
  const char *pos = "o0";
  for (int j = 0; j < ns; j++) {
    if (j == 0) /* --threads: the outer output dim split (an FMA or a max: about 0.25 ns an element and tap) */
      emit_parallel_for(e, w->out[0], 0.25 * (double)(window_prod(w->out, ns) * ch * window_prod(w->k, ns)));
    emit_line(e, "for (int o%d = 0; o%d < %lld; o%d++) {", j, j, (long long)w->out[j], j);
    e->indent++;
    if (j)
      pos = arena_printf(a, "(%s) * %lld + o%d", pos, (long long)w->out[j], j);
  }
  emit_line(e, "float *yp = %s + ((int64_t)n * %lld + %s) * %lld;", y, (long long)window_prod(w->out, ns), pos,
            (long long)ch);
}

const char *window_last_taps(Emit *e, const WindowWalk *w, const char **tap) {
  Arena *a = e->g->arena;
  const char *ipos = "i0", *t = "k0";
  for (int j = 0; j < w->ns; j++) {
    emit_line(e, "for (int k%d = 0; k%d < %lld; k%d++) {", j, j, (long long)w->k[j], j);
    e->indent++;
    emit_line(e, "const int i%d = o%d * %lld + k%d * %lld - %lld;", j, j, (long long)w->stride[j], j,
              (long long)w->dil[j], (long long)w->pad[j]);
    emit_line(e, "if ((unsigned)i%d >= %lldu)", j, (long long)w->in[j]);
    emit_line(e, "  continue;");
    if (j) {
      ipos = arena_printf(a, "(%s) * %lld + i%d", ipos, (long long)w->in[j], j);
      t = arena_printf(a, "(%s) * %lld + k%d", t, (long long)w->k[j], j);
    }
  }
  if (tap)
    *tap = t;
  return ipos;
}

void window_last_close(Emit *e, int ns) {
  for (int j = 0; j < 2 * ns + 1; j++) {
    e->indent--;
    emit_line(e, "}");
  }
}

void window_channel_loop(Emit *e, int64_t ch, const char *stmt) {
  int64_t body = ch / 16 * 16;
  if (body > 0) {
    emit_line(e, "for (int c = 0; c < %lld; c++)", (long long)body);
    emit_line(e, "  %s", stmt);
  }
  if (body < ch) {
    emit_line(e, "for (int c = %lld; c < %lld; c++)", (long long)body, (long long)ch);
    emit_line(e, "  %s", stmt);
  }
}

bool window_epilogue_infer(const Graph *g, const Node *n, int bias_in, int res_in, const Type *yt, Diag *d) {
  const char *act = attr_str(n, "act", "none");
  if (strcmp(act, "none") && strcmp(act, "relu"))
    return diag_node(d, g, n, "act is '%s'; expected none or relu", act);
  int64_t m = yt->dims[yt->rank - 1];
  if (node_has_in(n, bias_in)) {
    const Type *b = &gval(g, n->in[bias_in])->type;
    if (b->dt != DT_F32 || type_numel(b) != m || b->dims[b->rank - 1] != m)
      return diag_node(d, g, n, "bias is %s with %lld elements; expected f32 [%lld]", dt_name(b->dt),
                       (long long)type_numel(b), (long long)m);
  }
  if (node_has_in(n, res_in) && !type_equal(&gval(g, n->in[res_in])->type, yt)) {
    char ts[96], rs[96];
    return diag_node(d, g, n, "residual is %s; expected %s", type_str(&gval(g, n->in[res_in])->type, rs, sizeof rs),
                     type_str(yt, ts, sizeof ts));
  }
  return true;
}
