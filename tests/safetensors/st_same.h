/* st_same.h — do two read .safetensors files hold the same tensors (names,
 * types, bytes, in order) and metadata? The round-trip check of the unit
 * test (test_safetensors.c) and of the fuzzer (tests/fuzz/fuzz_safetensors.c). */
#ifndef KILN_ST_SAME_H
#define KILN_ST_SAME_H

#include <string.h>

#include "formats/safetensors.h"

static bool st_same(const SafeTensors *a, const SafeTensors *b) {
  if (a->n != b->n || a->nmeta != b->nmeta)
    return false;
  for (int i = 0; i < a->n; i++) {
    const StTensor *x = &a->t[i], *y = &b->t[i];
    if (strcmp(x->name, y->name) || !type_equal(&x->type, &y->type) || x->bytes != y->bytes ||
        (x->bytes && memcmp(x->data, y->data, x->bytes)))
      return false;
  }
  for (int i = 0; i < a->nmeta; i++)
    if (strcmp(a->meta[i].key, b->meta[i].key) || strcmp(a->meta[i].value, b->meta[i].value))
      return false;
  return true;
}

#endif
