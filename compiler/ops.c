/* ops.c — the op table, expanded from ops.def. */
#include "ops.h"

#include <string.h>

const OpInfo op_table[OP_COUNT_] = {
#define OP(id, name, fn, a, b, c, d, k, since) \
  [OP_##id] = {name, fn##_infer, fn##_eval, fn##_emit, a, b, c, d, k, since},
#include "ops.def"
#undef OP
};

int op_lookup(const char *onnx_name) {
  for (int i = 0; i < OP_COUNT_; i++)
    if (strcmp(op_table[i].name, onnx_name) == 0)
      return i;
  return -1;
}
