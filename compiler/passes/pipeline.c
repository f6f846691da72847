/* pipeline.c — the one list of passes, in the order `kiln compile` runs
 * them. `kiln passes` prints this table; --passes= picks from it. */
#include <string.h>

#include "../passes.h"

const Pass pass_list[] = {
    {"bind", pass_bind, "give symbolic input dims their --shape values"},
    {"infer", pass_infer, "infer every dtype and shape, evaluating constant nodes on the way"},
    {"fold", pass_fold, "drop nodes whose outputs are all constants"},
    {"simplify", pass_simplify, "remove Identity/Dropout, make Reshape-like ops free aliases"},
    {"fuse", pass_fuse, "fuse MatMul+bias+activation, GELU and LayerNorm patterns into single ops"},
    {"quantize", pass_quantize, "with --quantize=int8: constant f32 weights of Linear and MatMul to int8 "
                                "with a scale per output column, Gather tables with one per row"},
    {"dce", pass_dce, "remove nodes whose results nobody uses"},
    {"plan", pass_plan, "place intermediate tensors in one workspace by liveness"},
};
const int pass_count = KILN_COUNT(pass_list);

const Pass *pass_find(const char *name) {
  for (int i = 0; i < pass_count; i++)
    if (strcmp(pass_list[i].name, name) == 0)
      return &pass_list[i];
  return NULL;
}
