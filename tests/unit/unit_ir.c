/* unit_ir.c — unit tests of the IR toolkit: arena and buffers, dtype
 * conversions, broadcasting, topological sort, and the workspace planner's
 * buffer reuse, the names of values the model did not name. Plain C with one CHECK macro; prints "N passed, N failed". */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ir/build.h"
#include "ir/ir.h"
#include "ir/naming.h"
#include "ir/ops.h"
#include "passes/passes.h"

static int passed, failed;
#define CHECK(c)                                                          \
  do {                                                                    \
    if (c)                                                                \
      passed++;                                                           \
    else {                                                                \
      failed++;                                                           \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c); \
    }                                                                     \
  } while (0)

static Type ty(DType dt, int rank, const int64_t *dims) {
  Type t = {.dt = dt, .rank = rank};
  for (int i = 0; i < rank; i++)
    t.dims[i] = dims[i];
  return t;
}

static void test_arena_and_buf(void) {
  Arena *a = arena_new();
  char *s = arena_printf(a, "%s-%d", "x", 42);
  CHECK(strcmp(s, "x-42") == 0);
  void *big = arena_alloc(a, 3u << 20); /* larger than a block */
  CHECK(big != NULL && ((uintptr_t)big & 15) == 0);
  int cap = 0;
  int *arr = arena_grow(a, NULL, &cap, 100, sizeof(int));
  CHECK(cap >= 100 && arr);
  arena_free(a);
  Buf b = {0};
  for (int i = 0; i < 1000; i++)
    buf_printf(&b, "%d,", i);
  CHECK(b.len == strlen(b.s) && strncmp(b.s, "0,1,2,", 6) == 0);
  buf_free(&b);
}

static void test_dtypes(void) {
  float f[1] = {-2.75f};
  int8_t i8[1];
  uint8_t b[1];
  el_convert(DT_I8, i8, 0, DT_F32, f, 0);
  CHECK(i8[0] == -2); /* truncation toward zero, like C */
  el_convert(DT_BOOL, b, 0, DT_F32, f, 0);
  CHECK(b[0] == 1);
  float nan[1] = {NAN};
  int32_t i32[1] = {7};
  el_convert(DT_I32, i32, 0, DT_F32, nan, 0); /* no UB: NaN -> 0 */
  CHECK(i32[0] == 0);
  int64_t big[1] = {INT64_MAX};
  CHECK(el_get_i(DT_I64, big, 0) == INT64_MAX);
  CHECK(dt_from_name("f32") == DT_F32 && strcmp(dt_ctype(DT_U16), "uint16_t") == 0);
  CHECK(dt_supported(DT_F16) && dt_supported(DT_BF16) && !dt_supported(DT_STRING));
}

static void test_broadcast(void) {
  int64_t da[] = {3, 1, 5}, db[] = {4, 1};
  Type a = ty(DT_F32, 3, da), b = ty(DT_F32, 2, db), o;
  CHECK(shape_broadcast(&a, &b, &o));
  CHECK(o.rank == 3 && o.dims[0] == 3 && o.dims[1] == 4 && o.dims[2] == 5);
  /* element (2,3,4) of o reads a[2,0,4] and b[3,0] */
  int64_t i = (2 * 4 + 3) * 5 + 4;
  CHECK(bcast_src(&o, &a, i) == 2 * 5 + 4);
  CHECK(bcast_src(&o, &b, i) == 3);
  int64_t dc[] = {2};
  Type c = ty(DT_F32, 1, dc);
  CHECK(!shape_broadcast(&a, &c, &o));
  int ax;
  CHECK(axis_norm(-1, 3, &ax) && ax == 2);
  CHECK(!axis_norm(3, 3, &ax) && !axis_norm(-4, 3, &ax));
  char s[64];
  CHECK(strcmp(type_str(&a, s, sizeof s), "f32[3,1,5]") == 0);
}

/* y = Relu(t); t = Neg(x) — listed out of order */
static void test_toposort_and_plan(void) {
  Arena *a = arena_new();
  Graph *g = graph_new(a, "unit");
  int x = graph_add_value(g, "x"), t = graph_add_value(g, "t"), u = graph_add_value(g, "u"),
      y = graph_add_value(g, "y");
  int64_t d[] = {4, 8};
  g->vals[x].type = ty(DT_F32, 2, d);
  graph_add_input(g, x);
  graph_add_node(g, op_lookup("Relu"), "second", &u, 1, &y, 1);
  graph_add_node(g, op_lookup("Neg"), "zeroth", &x, 1, &t, 1);
  graph_add_node(g, op_lookup("Abs"), "first", &t, 1, &u, 1);
  graph_add_output(g, y);
  Diag dg = {0};
  CHECK(graph_toposort(g, &dg));
  CHECK(strcmp(g->nodes[0].name, "zeroth") == 0 && strcmp(g->nodes[2].name, "second") == 0);
  PassOptions po = {.fold_limit = 1 << 20};
  CHECK(pass_infer(g, &po, &dg) && graph_verify(g, true, &dg));
  CHECK(pass_plan(g, &po, &dg));
  /* t and u are live at the same step (Abs reads t, writes u), but t dies
   * there and Abs is elementwise: u is written in place over t, and the
   * workspace holds exactly one 128-byte buffer (compiler/passes/plan.c) */
  CHECK(g->vals[t].ws_offset == g->vals[u].ws_offset);
  CHECK(g->ws_size == 128);
  CHECK(g->vals[y].ws_offset == -1); /* outputs live in the caller's array */
  arena_free(a);
}

static void test_cycle_is_an_error(void) {
  Arena *a = arena_new();
  Graph *g = graph_new(a, "unit");
  int p = graph_add_value(g, "p"), q = graph_add_value(g, "q");
  graph_add_node(g, op_lookup("Neg"), "a", &p, 1, &q, 1);
  graph_add_node(g, op_lookup("Neg"), "b", &q, 1, &p, 1);
  Diag dg = {0};
  CHECK(!graph_toposort(g, &dg) && strstr(dg.msg, "cycle"));
  arena_free(a);
}

/* Every ONNX op of the table: its row's since and upto are versions of it
 * (kiln may start past an op's first version: Upsample 7), since <= upto, and op_version_beyond
 * refuses exactly the versions past upto. */
static void test_op_versions(void) {
  CHECK(onnx_opset_newest() >= 25);
  CHECK(onnx_op_version("Split", 17) == 13 && onnx_op_version("Split", 18) == 18);
  CHECK(onnx_op_version("Gelu", 19) == 0 && onnx_op_version("NoSuchOp", 17) == -1);
  for (int op = 0; op < OP_COUNT_; op++) {
    const OpInfo *oi = &op_table[op];
    if (oi->since == 0) {
      CHECK(oi->upto == 0 && op_version_beyond(op, onnx_opset_newest()) == 0);
      continue;
    }
    bool ok = onnx_op_version(oi->name, oi->since) == oi->since &&
              onnx_op_version(oi->name, oi->upto) == oi->upto && oi->upto >= oi->since &&
              op_version_beyond(op, oi->upto) == 0;
    int newest = onnx_op_version(oi->name, onnx_opset_newest());
    ok = ok && op_version_beyond(op, onnx_opset_newest()) == (newest > oi->upto ? newest : 0);
    if (!ok)
      fprintf(stderr, "op %s: since %d, upto %d against onnx_versions.def\n", oi->name, oi->since, oi->upto);
    CHECK(ok);
  }
}

/* naming.c: op-made names, a folded parameter's name, rules 1-3 */
static void test_naming(void) {
  CHECK(name_is_op_made("Transpose_22") && name_is_op_made("MatMul_3090_2"));
  CHECK(name_is_op_made("onnx::MatMul_245") && name_is_op_made("/enc/Transpose_output_0"));
  CHECK(name_is_op_made("/Add_2_output_0") && name_is_op_made("Add"));
  CHECK(!name_is_op_made("blk.0.ffn_gate") && !name_is_op_made("Transpose_t") && !name_is_op_made("Foo_1"));
  CHECK(!name_is_op_made("/bert/layer.0/Mul_1_x") && !name_is_op_made(""));
  Arena *a = arena_new();
  Graph *g = graph_new(a, "t");
  int64_t d2[2] = {3, 4}, d1[1] = {3}; /* W [out, in], as nn.linear */
  int x = ir_value(g, "h");
  g->vals[x].type = ty(DT_F32, 2, (int64_t[]){2, 4});
  graph_add_input(g, x);
  int w = ir_const(g, "blk.0.ffn_gate.weight", DT_F32, 2, d2, NULL);
  int gamma = ir_const(g, "blk.0.attn_norm.weight", DT_F32, 1, d1, NULL);
  /* a folded Transpose of the parameter: "<param>_t" */
  int t = ir_op(g, OP_TRANSPOSE, NULL, &w, 1, 1);
  Diag d = {0};
  CHECK(ir_finish(g, t, &d));
  CHECK(!strcmp(g->vals[ir_out(g, t, 0)].name, "blk.0.ffn_gate.weight_t"));
  /* rule 1: the layer of the parameter read, "_out" when it ends in the tag */
  int mm = ir_op(g, OP_MATMUL, NULL, (int[]){x, ir_out(g, t, 0)}, 2, 1);
  CHECK(ir_finish(g, mm, &d));
  name_node_outputs(g, mm, NULL);
  CHECK(!strcmp(g->vals[ir_out(g, mm, 0)].name, "blk.0.ffn_gate_matmul"));
  int nm = ir_op(g, OP_RMSNORM, NULL, (int[]){ir_out(g, mm, 0), gamma}, 2, 1);
  CHECK(ir_finish(g, nm, &d));
  name_node_outputs(g, nm, "step.");
  CHECK(!strcmp(g->vals[ir_out(g, nm, 0)].name, "step.blk.0.attn_norm_out"));
  /* rule 2: a chain grows one tag, not one per op */
  int s1 = ir_op(g, OP_SIGMOID, NULL, (int[]){ir_out(g, mm, 0)}, 1, 1);
  CHECK(ir_finish(g, s1, &d));
  name_node_outputs(g, s1, NULL);
  int s2 = ir_op(g, OP_MUL, NULL, (int[]){ir_out(g, s1, 0), ir_out(g, mm, 0)}, 2, 1);
  CHECK(ir_finish(g, s2, &d));
  name_node_outputs(g, s2, NULL);
  CHECK(!strcmp(g->vals[ir_out(g, s1, 0)].name, "blk.0.ffn_gate_matmul_sigmoid"));
  CHECK(!strcmp(g->vals[ir_out(g, s2, 0)].name, "blk.0.ffn_gate_matmul_mul"));
  /* rule 3, and unique names */
  int c = ir_op(g, OP_RELU, NULL, (int[]){gamma}, 1, 1);
  g->vals[gamma].name = "Constant_3"; /* no model name to build on */
  CHECK(ir_finish(g, c, &d));
  name_node_outputs(g, c, NULL);
  CHECK(!strcmp(g->vals[ir_out(g, c, 0)].name, "relu"));
  arena_free(a);
}

int main(void) {
  test_naming();
  test_arena_and_buf();
  test_op_versions();
  test_dtypes();
  test_broadcast();
  test_toposort_and_plan();
  test_cycle_is_an_error();
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
