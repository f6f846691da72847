/* weight_files.h — what binding params by name from a weights file says,
 * written once for every format kiln reads (safetensors.c, gguf.c): the
 * hint when a name is missing, the strict check that every tensor was
 * bound, and the note listing the ones that were not. A reader describes
 * its tensors through a WeightFile view; the messages are the same words
 * whatever the format. */
#ifndef KILN_WEIGHT_FILES_H
#define KILN_WEIGHT_FILES_H

#include "../base/base.h"
#include "../ir/ir.h"

typedef struct WeightFile {
  const char *path;
  int n;                  /* tensors */
  const void *file;       /* the reader's own struct, passed back below */
  const char *(*name)(const void *file, int i);
  bool (*used)(const void *file, int i);
  /* tensor i's type as a list shows it ("f32[3,4]"), written into buf */
  const char *(*label)(const void *file, int i, char *buf, size_t n);
} WeightFile;

/* "'a', 'b', 'c', 'd', ... (12 in all)": a hint when a name is not found. */
void wf_list_names(const WeightFile *w, char *buf, size_t n);
/* False + d: the file has no tensor `name` for a parameter of type want
 * (the first few names it has, as a hint). */
bool wf_missing(const WeightFile *w, const char *name, const Type *want, Diag *d);
/* False + d naming the first tensor that no param bound (--strict-weights). */
bool wf_check_all_used(const WeightFile *w, Diag *d);
/* "FILE: 2 of 104 tensors not used by the model: a (f32[3]), b (...)", at
 * most eight named, heap-allocated; NULL when every tensor was bound. */
char *wf_unused_list(const WeightFile *w);

#endif
