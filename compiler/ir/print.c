/* print.c — the IR as text (.kir), one line per node:
 *
 *   graph @main opset 14 (%x: f32[1,16]) -> (%y) {
 *     const %w: f32[16,16] = bin(0)
 *     const %b: f32[16] = [0.5, -1.25, ...all 16 values...]
 *     %y = Gemm %x, %w, %b {transB=1} : f32[1,16]  # from: Gemm_3
 *   }
 *
 * Everything that matters to a later pass prints, and prints exactly, so the
 * parser (kir_parse.c) rebuilds the same graph: floats in the shortest form
 * that reads back bit-identical, names quoted when they are not plain. */
#include "print.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

static void put_quoted(Buf *b, const char *s) {
  buf_puts(b, "\"");
  for (const char *p = s; *p; p++) {
    if (*p == '"' || *p == '\\')
      buf_printf(b, "\\%c", *p);
    else if (*p == '\n')
      buf_puts(b, "\\n");
    else if ((unsigned char)*p < 0x20)
      buf_printf(b, "\\x%02x", (unsigned char)*p);
    else
      buf_put(b, p, 1);
  }
  buf_puts(b, "\"");
}

/* a value name is "%name"; the graph's name reuses this after '@' */
static void put_ident(Buf *b, const char *s) {
  bool plain = *s != 0;
  for (const char *p = s; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.')
      plain = false;
  if (plain)
    buf_puts(b, s);
  else
    put_quoted(b, s);
}

static void put_name(Buf *b, const char *s) {
  buf_puts(b, "%");
  put_ident(b, s);
}

static void put_type(Buf *b, const Type *t, const char *const *sym) {
  if (t->dt == DT_UNDEF) { /* not inferred yet */
    buf_puts(b, "?");
    return;
  }
  buf_printf(b, "%s[", dt_name(t->dt));
  if (t->rank < 0)
    buf_puts(b, "*");
  for (int i = 0; i < t->rank; i++) {
    if (i)
      buf_puts(b, ",");
    if (t->dims[i] >= 0)
      buf_printf(b, "%lld", (long long)t->dims[i]);
    else if (sym && sym[i])
      buf_puts(b, sym[i]);
    else
      buf_puts(b, "?");
  }
  buf_puts(b, "]");
}

/* Shortest decimal that parses back to the same value (of type dt); always
 * with a '.', 'e', "inf" or "nan" so it never reads as an integer. */
static void put_float(Buf *b, double v, bool single) {
  if (isnan(v)) {
    buf_puts(b, "nan");
    return;
  }
  if (isinf(v)) {
    buf_puts(b, v > 0 ? "inf" : "-inf");
    return;
  }
  char s[40];
  for (int prec = single ? 6 : 15; prec <= 17; prec++) {
    snprintf(s, sizeof s, "%.*g", prec, v);
    double back = strtod(s, NULL);
    if (single ? (float)back == (float)v : back == v)
      break;
  }
  buf_puts(b, s);
  if (!strpbrk(s, ".e"))
    buf_puts(b, ".0");
}

static void put_elem(Buf *b, DType dt, const void *p, int64_t i) {
  if (dt_is_float(dt))
    put_float(b, el_get_f(dt, p, i), dt == DT_F32);
  else if (dt == DT_BOOL)
    buf_puts(b, el_get_u(dt, p, i) ? "true" : "false");
  else if (dt_is_signed_int(dt))
    buf_printf(b, "%lld", (long long)el_get_i(dt, p, i));
  else
    buf_printf(b, "%llu", (unsigned long long)el_get_u(dt, p, i));
}

static void put_data(Buf *b, const Type *t, const void *data, Buf *bin) {
  int64_t n = type_numel(t);
  if (n > KIR_INLINE_MAX && bin) {
    while (bin->len % 64)
      buf_put(bin, "", 1);
    buf_printf(b, "bin(%zu)", bin->len);
    buf_put(bin, data, type_bytes(t));
    return;
  }
  if (n > KIR_INLINE_MAX) {
    buf_puts(b, "elided(");
    for (int64_t i = 0; i < 4; i++) {
      put_elem(b, t->dt, data, i);
      buf_puts(b, ", ");
    }
    buf_printf(b, "... %lld values)", (long long)n);
    return;
  }
  buf_puts(b, "[");
  for (int64_t i = 0; i < n; i++) {
    if (i)
      buf_puts(b, ", ");
    put_elem(b, t->dt, data, i);
  }
  buf_puts(b, "]");
}

static void put_attr(Buf *b, const Attr *a, Buf *bin) {
  buf_printf(b, "%s=", a->name);
  switch (a->kind) {
  case ATTR_INT: buf_printf(b, "%lld", (long long)a->i); break;
  case ATTR_FLOAT: put_float(b, a->f, false); break;
  case ATTR_STRING: put_quoted(b, a->s); break;
  case ATTR_INTS:
    buf_puts(b, a->n ? "[" : "ints[");
    for (int i = 0; i < a->n; i++)
      buf_printf(b, "%s%lld", i ? "," : "", (long long)a->ints[i]);
    buf_puts(b, "]");
    break;
  case ATTR_FLOATS:
    buf_puts(b, "floats[");
    for (int i = 0; i < a->n; i++) {
      if (i)
        buf_puts(b, ",");
      put_float(b, a->floats[i], false);
    }
    buf_puts(b, "]");
    break;
  case ATTR_STRINGS:
    buf_puts(b, "strings[");
    for (int i = 0; i < a->n; i++) {
      if (i)
        buf_puts(b, ",");
      put_quoted(b, a->strings[i]);
    }
    buf_puts(b, "]");
    break;
  case ATTR_TENSOR:
    buf_puts(b, "tensor ");
    put_type(b, &a->t->type, NULL);
    buf_puts(b, " ");
    put_data(b, &a->t->type, a->t->data, bin);
    break;
  }
}

static void put_node(Buf *b, const Graph *g, const Node *n, Buf *bin) {
  buf_puts(b, "  ");
  for (int j = 0; j < n->nout; j++) {
    if (j)
      buf_puts(b, ", ");
    put_name(b, g->vals[n->out[j]].name);
  }
  buf_printf(b, " = %s", node_op_name(n));
  for (int j = 0; j < n->nin; j++) {
    buf_puts(b, j ? ", " : " ");
    if (n->in[j] < 0)
      buf_puts(b, "_");
    else
      put_name(b, g->vals[n->in[j]].name);
  }
  if (n->nattr) {
    buf_puts(b, " {");
    for (int k = 0; k < n->nattr; k++) {
      if (k)
        buf_puts(b, ", ");
      put_attr(b, &n->attrs[k], bin);
    }
    buf_puts(b, "}");
  }
  buf_puts(b, " :");
  for (int j = 0; j < n->nout; j++) {
    const Value *v = &g->vals[n->out[j]];
    buf_puts(b, j ? ", " : " ");
    put_type(b, &v->type, NULL);
    if (v->alias_of >= 0)
      buf_puts(b, " alias");
    if (v->ws_offset >= 0)
      buf_printf(b, " @ws %lld", (long long)v->ws_offset);
  }
  buf_puts(b, "  # from: ");
  for (const char *p = n->origin ? n->origin : n->name; *p; p++)
    buf_put(b, *p == '\n' ? " " : p, 1);
  buf_puts(b, "\n");
}

/* " state(next=%mem.next, init=[0.0, ...])": what makes input v a state. */
static void put_state(Buf *b, const Graph *g, const Value *v, Buf *bin) {
  buf_puts(b, " state(next=");
  if (v->state_next < 0 && op_state_in_place(g, (int)(v - g->vals)))
    buf_puts(b, "in_place"); /* a KV cache: CacheWrite changes it where it lives */
  else if (v->state_next >= 0 && v->state_next < g->noutputs)
    put_name(b, g->vals[g->outputs[v->state_next]].name);
  else
    buf_puts(b, "_"); /* not linked yet: the verifier reports it */
  buf_puts(b, ", init=");
  put_data(b, &v->type, v->state_init, bin);
  buf_puts(b, ")");
}

/* "  decoder ctx=N prefill(%tokens, %start, %count -> %logits) step(...)
 * [encode(%src, ...)]": a generative model's entry points (ir.h, Decoder). */
static void put_decoder(Buf *b, const Graph *g) {
  buf_printf(b, "  decoder ctx=%lld", (long long)g->decoder->ctx);
  for (int k = 0; k < g->decoder->nentries; k++) {
    const DecoderEntry *en = &g->decoder->entries[k];
    buf_printf(b, " %s(", en->name);
    if (!en->tokens) { /* encode: its inputs, no output */
      for (int j = 0; j < en->ninputs; j++) {
        buf_puts(b, j ? ", " : "");
        put_name(b, g->vals[en->inputs[j]].name);
      }
      buf_puts(b, ")");
      continue;
    }
    put_name(b, g->vals[en->tokens_vid].name);
    buf_puts(b, ", ");
    put_name(b, g->vals[en->start_vid].name);
    buf_puts(b, ", ");
    put_name(b, g->vals[en->count_vid].name);
    buf_puts(b, " -> ");
    put_name(b, g->vals[g->outputs[en->logits_out]].name);
    buf_puts(b, ")");
  }
  buf_puts(b, "\n");
}

/* A value prints as a `const` line when it has data, something reads it,
 * and no live node produces it. */
static bool is_const_line(const Graph *g, const bool *used, int v) {
  const Value *val = &g->vals[v];
  return val->data && used[v] && !(val->producer >= 0 && val->producer < g->nnodes &&
                                   !g->nodes[val->producer].dead);
}

void ir_print(Buf *b, const Graph *g, Buf *bin) {
  buf_puts(b, "graph @");
  put_ident(b, g->name);
  buf_printf(b, " opset %d (", g->opset);
  for (int i = 0; i < g->ninputs; i++) {
    const Value *v = &g->vals[g->inputs[i]];
    if (i)
      buf_puts(b, ", ");
    put_name(b, v->name);
    buf_puts(b, ": ");
    put_type(b, &v->type, v->sym);
    if (v->is_state)
      put_state(b, g, v, bin);
  }
  buf_puts(b, ") -> (");
  for (int i = 0; i < g->noutputs; i++) {
    if (i)
      buf_puts(b, ", ");
    put_name(b, g->vals[g->outputs[i]].name);
  }
  buf_puts(b, ") {\n");
  if (g->decoder)
    put_decoder(b, g);
  bool *used = calloc((size_t)g->nvals + 1, 1);
  for (int i = 0; i < g->nnodes; i++)
    for (int j = 0; j < g->nodes[i].nin; j++)
      if (!g->nodes[i].dead && g->nodes[i].in[j] >= 0)
        used[g->nodes[i].in[j]] = true;
  for (int i = 0; i < g->noutputs; i++)
    used[g->outputs[i]] = true;
  for (int v = 0; v < g->nvals; v++) {
    if (!is_const_line(g, used, v))
      continue;
    const Value *val = &g->vals[v];
    buf_puts(b, "  const ");
    put_name(b, val->name);
    buf_puts(b, ": ");
    put_type(b, &val->type, NULL);
    buf_puts(b, " = ");
    put_data(b, &val->type, val->data, bin);
    buf_puts(b, "\n");
  }
  free(used);
  for (int i = 0; i < g->nnodes; i++)
    if (!g->nodes[i].dead)
      put_node(b, g, &g->nodes[i], bin);
  buf_puts(b, "}\n");
}
