/* bind.c — every dimension must be a number before codegen. A --shape
 * binding names either a graph input (NAME=1x16 sets its whole shape) or a
 * symbolic dim (dim_param NAME=16); a symbol also fixed by an input's full
 * shape must agree with it. The symbolic dims left unbound are one error
 * naming them all, with the flags that set them; a name that is neither an
 * input nor a symbol lists those that are. */
#include "passes.h"

#include <stdio.h>
#include <string.h>

static const char *dims_str(const ShapeBinding *b, char *buf, size_t n) {
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < b->rank && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "x" : "", (long long)b->dims[i]);
  return buf;
}

static bool bind_input(Graph *g, Value *v, ShapeBinding *b, Diag *d) {
  char want[64], got[256];
  if (b->rank != v->type.rank)
    return diag_error(d, "--shape %s=%s has rank %d; the input '%s' has rank %d (%s)", b->name,
                      dims_str(b, got, sizeof got), b->rank, v->name, v->type.rank,
                      type_str(&v->type, want, sizeof want));
  for (int i = 0; i < b->rank; i++) {
    if (v->type.dims[i] >= 0 && v->type.dims[i] != b->dims[i])
      return diag_error(d, "--shape %s=%s: dim %d of input '%s' is fixed to %lld by the model",
                        b->name, dims_str(b, got, sizeof got), i, v->name,
                        (long long)v->type.dims[i]);
    v->type.dims[i] = b->dims[i];
  }
  b->used = true;
  (void)g;
  return true;
}

/* A symbolic dim's binding (--shape NAME=N), or NULL. */
static ShapeBinding *sym_binding(const PassOptions *o, const char *sym) {
  for (int s = 0; s < o->nshapes; s++)
    if (sym && o->shapes[s].rank == 1 && !strcmp(o->shapes[s].name, sym))
      return &o->shapes[s];
  return NULL;
}

/* Every symbolic dim left unbound, all inputs at once: each input with the
 * flags that would bind it (per symbol, or its whole shape of the right
 * rank, the symbols as 1). */
static bool unbound_dims(const Graph *g, Diag *d) {
  Buf b = {0};
  for (int k = 0; k < g->ninputs; k++) {
    const Value *v = gval((Graph *)g, g->inputs[k]);
    Buf flags = {0}, example = {0};
    for (int i = 0; i < v->type.rank; i++) {
      bool sym = v->type.dims[i] < 0;
      if (sym)
        buf_printf(&flags, "--shape %s=N, ", v->sym[i] ? v->sym[i] : "?");
      buf_printf(&example, "%s%lld", i ? "x" : "", (long long)(sym ? 1 : v->type.dims[i]));
    }
    if (flags.len) {
      char t[256];
      buf_printf(&b, "%sinput '%s' %s (%sor --shape %s=%s)", b.len ? "; " : "", v->name,
                 value_type_str(v, t, sizeof t), flags.s, v->name, example.s);
    }
    buf_free(&flags);
    buf_free(&example);
  }
  if (!b.len)
    return true;
  diag_error(d, "symbolic dims need values: %s", b.s);
  buf_free(&b);
  return false;
}

/* An unused --shape NAME: every input and symbol the model has, and the
 * closest one when NAME looks like a typo of it. */
static bool unknown_binding(const Graph *g, const ShapeBinding *b, Diag *d) {
  const char *names[256];
  int n = 0;
  Buf list = {0};
  for (int k = 0; k < g->ninputs; k++) {
    const Value *v = gval((Graph *)g, g->inputs[k]);
    if (n < 256)
      names[n++] = v->name;
    buf_printf(&list, "%s'%s'", list.len ? ", " : "", v->name);
    for (int i = 0; i < v->type.rank; i++)
      if (v->sym[i] && n < 256) {
        bool seen = false;
        for (int j = 0; j < n; j++)
          seen = seen || !strcmp(names[j], v->sym[i]);
        if (!seen) {
          names[n++] = v->sym[i];
          buf_printf(&list, ", symbol '%s'", v->sym[i]);
        }
      }
  }
  const char *near = closest_name(b->name, names, n);
  diag_error(d, "--shape %s: no graph input or symbolic dim has that name%s%s%s; expected one of %s",
             b->name, near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "",
             list.len ? list.s : "(the model has no inputs)");
  buf_free(&list);
  return false;
}

bool pass_bind(Graph *g, const PassOptions *o, Diag *d) {
  for (int k = 0; k < g->ninputs; k++) {
    Value *v = gval(g, g->inputs[k]);
    for (int s = 0; s < o->nshapes; s++)
      if (!strcmp(o->shapes[s].name, v->name) && !bind_input(g, v, &o->shapes[s], d))
        return false;
  }
  /* symbols: bound by value, or checked against an input's full --shape */
  for (int k = 0; k < g->ninputs; k++) {
    Value *v = gval(g, g->inputs[k]);
    for (int i = 0; i < v->type.rank; i++) {
      ShapeBinding *b = sym_binding(o, v->sym[i]);
      if (!b)
        continue;
      char t[128];
      if (v->type.dims[i] >= 0 && v->type.dims[i] != b->dims[0])
        return diag_error(d, "--shape %s=%lld: input '%s' %s has %lld for it (dim %d); expected one "
                          "value per symbol", b->name, (long long)b->dims[0], v->name,
                          type_str(&v->type, t, sizeof t), (long long)v->type.dims[i], i);
      v->type.dims[i] = b->dims[0];
      b->used = true;
    }
  }
  if (!unbound_dims(g, d))
    return false;
  for (int k = 0; k < g->ninputs; k++) {
    Value *v = gval(g, g->inputs[k]);
    char t[128];
    if (!type_size_ok(&v->type))
      return diag_error(d, "input '%s' %s is too large; expected at most %lld elements", v->name,
                        type_str(&v->type, t, sizeof t), (long long)MAX_NUMEL);
  }
  for (int s = 0; s < o->nshapes; s++)
    if (!o->shapes[s].used)
      return unknown_binding(g, &o->shapes[s], d);
  return true;
}
