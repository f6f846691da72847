/* weight_files.c — the binding messages shared by the weights readers
 * (weight_files.h). */
#include <stdio.h>

#include "weight_files.h"

void wf_list_names(const WeightFile *w, char *buf, size_t n) {
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < w->n && i < 4 && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s'%s'", i ? ", " : "", w->name(w->file, i));
  if (w->n > 4 && k < n)
    snprintf(buf + k, n - k, ", ... (%d in all)", w->n);
}

bool wf_missing(const WeightFile *w, const char *name, const Type *want, Diag *d) {
  char names[384], wt[96];
  wf_list_names(w, names, sizeof names);
  return diag_error(d, "%s: no tensor '%s' (%s); expected one for each parameter; the file has %s", w->path, name,
                    type_str(want, wt, sizeof wt), w->n ? names : "none");
}

bool wf_check_all_used(const WeightFile *w, Diag *d) {
  int unused = 0, first = -1;
  for (int i = 0; i < w->n; i++)
    if (!w->used(w->file, i) && unused++ == 0)
      first = i;
  if (!unused)
    return true;
  char ty[160];
  return diag_error(d,
                    "%s: tensor '%s' (%s) is not a parameter of the model (%d of %d tensors "
                    "unused); expected every tensor in the file to be bound (--strict-weights)",
                    w->path, w->name(w->file, first), w->label(w->file, first, ty, sizeof ty), unused, w->n);
}

char *wf_unused_list(const WeightFile *w) {
  Buf b = {0};
  int unused = 0;
  for (int i = 0; i < w->n; i++)
    if (!w->used(w->file, i))
      unused++;
  if (!unused)
    return NULL;
  buf_printf(&b, "%s: %d of %d tensors not used by the model:", w->path, unused, w->n);
  int shown = 0;
  for (int i = 0; i < w->n && shown < 8; i++) {
    char ty[160];
    if (!w->used(w->file, i))
      buf_printf(&b, "%s %s (%s)", shown++ ? "," : "", w->name(w->file, i), w->label(w->file, i, ty, sizeof ty));
  }
  if (unused > shown)
    buf_printf(&b, ", and %d more", unused - shown);
  return b.s;
}
