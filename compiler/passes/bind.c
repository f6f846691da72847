/* bind.c — every dimension must be a number before codegen. A --shape
 * binding names either a graph input (NAME=1x16 sets its whole shape) or a
 * symbolic dim (dim_param NAME=16). An unbound symbolic dim is an error that
 * names it and the flag to set it. */
#include "../passes.h"

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

bool pass_bind(Graph *g, const PassOptions *o, Diag *d) {
  for (int k = 0; k < g->ninputs; k++) {
    Value *v = gval(g, g->inputs[k]);
    for (int s = 0; s < o->nshapes; s++)
      if (!strcmp(o->shapes[s].name, v->name) && !bind_input(g, v, &o->shapes[s], d))
        return false;
    for (int i = 0; i < v->type.rank; i++) {
      if (v->type.dims[i] >= 0)
        continue;
      for (int s = 0; s < o->nshapes; s++) {
        ShapeBinding *b = &o->shapes[s];
        if (v->sym[i] && !strcmp(b->name, v->sym[i]) && b->rank == 1) {
          v->type.dims[i] = b->dims[0];
          b->used = true;
        }
      }
      if (v->type.dims[i] < 0) {
        char t[128];
        return diag_error(d, "input '%s' %s: dim %d ('%s') is symbolic; expected a value: pass "
                          "--shape %s=N or --shape %s=<full shape, e.g. 1x16>",
                          v->name, type_str(&v->type, t, sizeof t), i, v->sym[i], v->sym[i],
                          v->name);
      }
    }
  }
  for (int k = 0; k < g->ninputs; k++) {
    Value *v = gval(g, g->inputs[k]);
    char t[128];
    if (!type_size_ok(&v->type))
      return diag_error(d, "input '%s' %s is too large; expected at most %lld elements", v->name,
                        type_str(&v->type, t, sizeof t), (long long)MAX_NUMEL);
  }
  for (int s = 0; s < o->nshapes; s++)
    if (!o->shapes[s].used)
      return diag_error(d, "--shape %s: no graph input or symbolic dim has that name; expected one "
                        "of the model's input names", o->shapes[s].name);
  return true;
}
