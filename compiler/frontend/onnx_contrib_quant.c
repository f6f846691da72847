/* onnx_contrib_quant.c — ONNX Runtime's com.microsoft quantized products,
 * read as the standard ops they are defined by, so that the interpreter
 * has a reference for them and the passes see one form:
 *
 *   MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zp?, b_zp?, bias?)
 *     = Add(Mul(Cast(MatMulInteger(A, B, a_zp, b_zp), float), Mul(a_scale, b_scale)), bias)
 *   DynamicQuantizeMatMul(A f32, B, b_scale, b_zp?, bias?)
 *     = MatMulIntegerToFloat(DynamicQuantizeLinear(A), B, ...)
 *
 * (ONNX Runtime's order: the sums, their float, times the product of the
 * scales, plus the bias). A product of A from a DynamicQuantizeLinear then
 * becomes a w8a8 Linear in fuse_dynquant, which computes exactly that.
 *
 *   MatMulNBits(A, B u8 [N, blocks, block_size·bits/8], scales, zero_points?, g_idx?, bias?)
 *     {K, N, bits, block_size}  = Add(MatMul(A, W), bias)
 *
 * with W[k,n] = (q[n,k] - zp[n, k / block_size]) · scale[n, k / block_size]
 * made here, at compile time, as a constant of A's type (ONNX Runtime's
 * dequantization: one subtraction, one multiply): bits 2, 4 or 8, the
 * values packed from the low bits of each byte up; zero points packed the
 * same way per row of B (u8), or one per block in A's type; absent, the
 * middle 2^(bits-1). A becomes a plain product by a constant, which every
 * kiln path takes (f32 packed GEMM, --quantize=int8|w8a8). g_idx (an
 * act-order permutation) is refused. ONNX Runtime's accuracy_level 4
 * quantizes A per block to int8; kiln computes in A's type, closer to the
 * float model (the attribute is read and not followed).
 *
 * The intermediate values are unnamed (the importer names them after the
 * whole graph is read, clear of every model name). */
#include <string.h>

#include "../ir/build.h"
#include "onnx_contrib_quant.h"
#include "../ir/ops.h"

bool contrib_quant_op(const char *dom, const char *op_type) {
  return !strcmp(dom, "com.microsoft") &&
         (!strcmp(op_type, "MatMulIntegerToFloat") || !strcmp(op_type, "DynamicQuantizeMatMul") ||
          !strcmp(op_type, "MatMulNBits"));
}

/* The node being read: its inputs' values (-1 absent), outputs, names. */
typedef struct Contrib {
  Graph *g;
  Diag *d;
  const char *name, *op;
  int in[8], nin;
  int out;
} Contrib;

static int add(Contrib *c, int op, const char *what, const int *in, int nin, int out) {
  if (out < 0)
    out = graph_add_value(c->g, "");
  int outs[1] = {out};
  int ni = graph_add_node(c->g, op, arena_printf(c->g->arena, "%s/%s", c->name, what), in, nin, outs, 1);
  c->g->nodes[ni].origin = c->name;
  return out;
}

/* float(acc) · (a_scale · b_scale) (+ bias) into c->out. */
static bool scale_and_bias(Contrib *c, int acc, int a_scale, int b_scale, int bias) {
  int cast = add(c, OP_CAST, "Cast", &acc, 1, -1);
  Node *cn = &c->g->nodes[c->g->vals[cast].producer];
  node_add_attr(c->g, cn, "to", ATTR_INT)->i = DT_F32;
  int s[2] = {a_scale, b_scale};
  int prod = add(c, OP_MUL, "scales_mul", s, 2, -1);
  int m[2] = {cast, prod};
  int y = add(c, OP_MUL, "Mul", m, 2, bias >= 0 ? -1 : c->out);
  if (bias >= 0) {
    int a[2] = {y, bias};
    add(c, OP_ADD, "Add", a, 2, c->out);
  }
  return true;
}

static bool integer_to_float(Contrib *c, int a, int b, int a_scale, int b_scale, int a_zp, int b_zp, int bias) {
  int mm[4] = {a, b, a_zp, b_zp};
  int nin = b_zp >= 0 ? 4 : a_zp >= 0 ? 3 : 2;
  int acc = add(c, OP_MATMULINTEGER, "MatMulInteger", mm, nin, -1);
  return scale_and_bias(c, acc, a_scale, b_scale, bias);
}

static int input(const Contrib *c, int i) { return i < c->nin ? c->in[i] : -1; }

static bool dynamic_quantize_matmul(Contrib *c) {
  int q = graph_add_value(c->g, ""), s = graph_add_value(c->g, ""), z = graph_add_value(c->g, "");
  int outs[3] = {q, s, z};
  int ni = graph_add_node(c->g, OP_DYNAMICQUANTIZELINEAR, arena_printf(c->g->arena, "%s/DynamicQuantizeLinear", c->name),
                          &c->in[0], 1, outs, 3);
  c->g->nodes[ni].origin = c->name;
  return integer_to_float(c, q, input(c, 1), s, input(c, 2), z, input(c, 3), input(c, 4));
}

/* ---- MatMulNBits ------------------------------------------------------------ */

static int64_t attr_of(const Onnx__NodeProto *np, const char *name, int64_t dflt, bool *found) {
  for (size_t i = 0; i < np->n_attribute; i++)
    if (np->attribute[i]->name && !strcmp(np->attribute[i]->name, name) &&
        np->attribute[i]->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) {
      if (found)
        *found = true;
      return np->attribute[i]->i;
    }
  return dflt;
}

/* The value of `bits` bits at element j of packed bytes p. */
static int64_t unpack(const uint8_t *p, int64_t j, int bits) {
  return (p[j * bits / 8] >> (j * bits % 8)) & ((1 << bits) - 1);
}

typedef struct NBits {
  int64_t k, n, bits, block, blocks, blob; /* blob: bytes of one block */
} NBits;

static const Value *const_in(Contrib *c, int i, const char *what) {
  int v = input(c, i);
  if (v < 0 || !c->g->vals[v].data) {
    diag_error(c->d, "node '%s' (com.microsoft %s): %s is not a constant initializer; expected the packed "
               "weights as the model's initializers", c->name, c->op, what);
    return NULL;
  }
  return &c->g->vals[v];
}

static bool nbits_check(Contrib *c, const NBits *nb, const Value *b, const Value *s, const Value *zp) {
  char sb[128];
  if (b->type.dt != DT_U8 || b->type.rank != 3 || b->type.dims[0] != nb->n || b->type.dims[1] != nb->blocks ||
      b->type.dims[2] != nb->blob)
    return diag_error(c->d, "node '%s' (com.microsoft MatMulNBits): B is %s; expected u8 [%lld, %lld, %lld] for "
                      "N %lld, K %lld, block_size %lld, bits %lld", c->name, type_str(&b->type, sb, sizeof sb),
                      (long long)nb->n, (long long)nb->blocks, (long long)nb->blob, (long long)nb->n,
                      (long long)nb->k, (long long)nb->block, (long long)nb->bits);
  if (!dt_is_float(s->type.dt) || type_numel(&s->type) != nb->n * nb->blocks)
    return diag_error(c->d, "node '%s' (com.microsoft MatMulNBits): scales is %s; expected %lld floats (N x "
                      "blocks)", c->name, type_str(&s->type, sb, sizeof sb), (long long)(nb->n * nb->blocks));
  int64_t zrow = (nb->blocks * nb->bits + 7) / 8;
  if (zp && !(zp->type.dt == DT_U8 && type_numel(&zp->type) == nb->n * zrow) &&
      !(zp->type.dt == s->type.dt && type_numel(&zp->type) == nb->n * nb->blocks))
    return diag_error(c->d, "node '%s' (com.microsoft MatMulNBits): zero_points is %s; expected u8 [%lld] "
                      "(packed) or %lld of scales' type", c->name, type_str(&zp->type, sb, sizeof sb),
                      (long long)(nb->n * zrow), (long long)(nb->n * nb->blocks));
  return true;
}

/* W[K,N] of scales' type from the blocks. */
static int nbits_weight(Contrib *c, const NBits *nb, const Value *b, const Value *s, const Value *zp) {
  DType dt = s->type.dt;
  int64_t dims[2] = {nb->k, nb->n}, zrow = (nb->blocks * nb->bits + 7) / 8;
  int w = ir_const(c->g, arena_printf(c->g->arena, "%s_dequantized", b->name), dt, 2, dims, NULL);
  void *wd = c->g->vals[w].data;
  const uint8_t *bd = b->data;
  for (int64_t n = 0; n < nb->n; n++)
    for (int64_t k = 0; k < nb->k; k++) {
      int64_t blk = k / nb->block, sb = n * nb->blocks + blk;
      double z = (double)(1 << (nb->bits - 1));
      if (zp && zp->type.dt == DT_U8)
        z = (double)unpack((const uint8_t *)zp->data + n * zrow, blk, (int)nb->bits);
      else if (zp)
        z = el_get_f(dt, zp->data, sb);
      double q = (double)unpack(bd + sb * nb->blob, k % nb->block, (int)nb->bits);
      /* in scales' type, as ONNX Runtime: (q - zp) then times the scale */
      float v = dt == DT_F32 ? (float)(q - z) * (float)el_get_f(dt, s->data, sb)
                             : (float)((q - z) * el_get_f(dt, s->data, sb));
      el_set_f(dt, wd, k * nb->n + n, v);
    }
  return w;
}

static bool matmul_nbits(Contrib *c, const Onnx__NodeProto *np) {
  bool hk = false, hn = false, hb = false;
  NBits nb = {.k = attr_of(np, "K", 0, &hk), .n = attr_of(np, "N", 0, &hn), .bits = attr_of(np, "bits", 4, NULL),
              .block = attr_of(np, "block_size", 0, &hb)};
  if (!hk || !hn || !hb || nb.k < 1 || nb.n < 1 || nb.k > (1 << 24) || nb.n > (1 << 24))
    return diag_error(c->d, "node '%s' (com.microsoft MatMulNBits): attributes K, N and block_size are %s; "
                      "expected K and N from 1 to 2^24 and block_size", c->name,
                      hk && hn && hb ? "out of range" : "not all given");
  if (nb.bits != 2 && nb.bits != 4 && nb.bits != 8)
    return diag_error(c->d, "node '%s' (com.microsoft MatMulNBits): bits is %lld; expected 2, 4 or 8", c->name,
                      (long long)nb.bits);
  if (nb.block < 16 || nb.block > 4096 || (nb.block & (nb.block - 1)))
    return diag_error(c->d, "node '%s' (com.microsoft MatMulNBits): block_size is %lld; expected a power of 2 "
                      "from 16 to 4096", c->name, (long long)nb.block);
  if (input(c, 4) >= 0)
    return diag_error(c->d, "node '%s' (com.microsoft MatMulNBits): input g_idx is given; expected it absent "
                      "(act-order permutations are not supported)", c->name);
  nb.blocks = (nb.k + nb.block - 1) / nb.block;
  nb.blob = nb.block * nb.bits / 8;
  const Value *b = const_in(c, 1, "B"), *s = b ? const_in(c, 2, "scales") : NULL;
  const Value *zp = input(c, 3) >= 0 ? const_in(c, 3, "zero_points") : NULL;
  if (!b || !s || (input(c, 3) >= 0 && !zp) || !nbits_check(c, &nb, b, s, zp))
    return false;
  int mm[2] = {c->in[0], nbits_weight(c, &nb, b, s, zp)};
  int bias = input(c, 5);
  int y = add(c, OP_MATMUL, "MatMul", mm, 2, bias >= 0 ? -1 : c->out);
  if (bias >= 0) {
    int a[2] = {y, bias};
    add(c, OP_ADD, "Add", a, 2, c->out);
  }
  return true;
}

/* ---- the entry point ---------------------------------------------------------- */

static const struct {
  const char *op;
  int min_in, max_in;
} arity[] = {{"MatMulIntegerToFloat", 4, 7}, {"DynamicQuantizeMatMul", 3, 5}, {"MatMulNBits", 3, 6}};

bool contrib_quant_import(Graph *g, Diag *d, const Onnx__NodeProto *np, const char *nname,
                          ContribValueFn value_for, struct Importer *im) {
  /* the names outlive the protobuf message: the graph's arena */
  Contrib c = {.g = g, .d = d, .name = arena_strdup(g->arena, nname), .op = arena_strdup(g->arena, np->op_type)};
  int nin = (int)np->n_input, nout = (int)np->n_output;
  for (int i = 0; i < KILN_COUNT(arity); i++)
    if (!strcmp(arity[i].op, c.op) && (nin < arity[i].min_in || nin > arity[i].max_in))
      return diag_error(d, "node '%s' (com.microsoft %s): %d inputs; expected %d to %d", nname, c.op, nin,
                        arity[i].min_in, arity[i].max_in);
  if (nout != 1 || !np->output[0] || !*np->output[0])
    return diag_error(d, "node '%s' (com.microsoft %s): %d outputs; expected 1 (Y)", nname, c.op, nout);
  for (int i = 0; i < nin; i++) {
    bool given = np->input[i] && *np->input[i];
    c.in[i] = given ? value_for(im, np->input[i]) : -1;
    bool required = i < 2 || (i < 4 && !strcmp(c.op, "MatMulIntegerToFloat")) ||
                    (i < 3 && strcmp(c.op, "MatMulIntegerToFloat"));
    if (!given && required)
      return diag_error(d, "node '%s' (com.microsoft %s): input %d is empty; expected a value", nname, c.op, i);
  }
  c.nin = nin;
  c.out = value_for(im, np->output[0]);
  if (g->vals[c.out].producer >= 0 || g->vals[c.out].data || g->vals[c.out].is_input)
    return diag_error(d, "node '%s' (com.microsoft %s): output '%s' is already defined; expected SSA form",
                      nname, c.op, np->output[0]);
  if (!strcmp(c.op, "MatMulIntegerToFloat"))
    return integer_to_float(&c, c.in[0], c.in[1], c.in[2], c.in[3], input(&c, 4), input(&c, 5), input(&c, 6));
  if (!strcmp(c.op, "DynamicQuantizeMatMul"))
    return dynamic_quantize_matmul(&c);
  return matmul_nbits(&c, np);
}
