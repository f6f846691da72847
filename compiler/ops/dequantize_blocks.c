/* dequantize_blocks.c — DequantizeBlocks {format, shape}: ggml's block-
 * quantized weights (compiler/ir/blockquant.h) to the f32 tensor they stand
 * for. Input: the raw blocks, u8 [rows, row_bytes], each row cols/32
 * blocks of `format` ("q8_0", "q4_0", "q4_1"). Output: f32 `shape`
 * ([..., cols]; the product of all but its last dim is rows), or
 * [rows, cols] without the attribute.
 *
 * The op is OPF_NOFOLD: folding it would store the weights 4-8x larger.
 * fuse_blocks turns the products and gathers reading it into
 * BlockLinear and BlockGather, which read the blocks themselves; a node
 * left over (another reader) runs here, into the workspace, plainly. */
#include <stdio.h>
#include <string.h>

#include "../ir/blockquant.h"
#include "../emit/emit.h"
#include "../kernels/qgemm_kernel.h"
#include "../ir/ops.h"

/* The node's format and logical shape, checked against raw's type [rows,
 * row_bytes]; false with the message in err. */
static bool blocks_shape(const Node *n, const Type *raw, BqFormat *fmt, Type *y, char *err, size_t errn) {
  const char *f = attr_str(n, "format", NULL);
  char rs[128];
  if (!bq_format_from_name(f, fmt)) {
    snprintf(err, errn, "format '%s' is unknown; expected " BQ_FORMAT_NAMES, f ? f : "");
    return false;
  }
  if (raw->dt != DT_U8 || raw->rank != 2) {
    snprintf(err, errn, "raw blocks are %s; expected u8[rows, row_bytes]", type_str(raw, rs, sizeof rs));
    return false;
  }
  int bb = bq_formats[*fmt].block_bytes;
  if (raw->dims[1] % bb) {
    snprintf(err, errn, "rows of %lld bytes are not a whole number of %s blocks; expected a multiple of %d",
             (long long)raw->dims[1], f, bb);
    return false;
  }
  int64_t cols = raw->dims[1] / bb * bq_formats[*fmt].block_values;
  const Attr *sh = attr_get(n, "shape");
  *y = (Type){.dt = DT_F32, .rank = 2, .dims = {raw->dims[0], cols}};
  if (sh) {
    if (sh->kind != ATTR_INTS || sh->n < 1 || sh->n > MAX_RANK) {
      snprintf(err, errn, "attribute 'shape' has %d entries; expected 1 to %d ints", sh->n, MAX_RANK);
      return false;
    }
    y->rank = sh->n;
    int64_t rows = 1;
    for (int i = 0; i < sh->n; i++) {
      if (sh->ints[i] < 0 || sh->ints[i] > MAX_NUMEL) {
        snprintf(err, errn, "shape dim %d is %lld; expected a size", i, (long long)sh->ints[i]);
        return false;
      }
      y->dims[i] = sh->ints[i];
      if (i + 1 < sh->n) /* never overflows: both factors <= MAX_NUMEL, capped past it */
        rows = sh->ints[i] && rows > MAX_NUMEL / sh->ints[i] ? MAX_NUMEL + 1 : rows * sh->ints[i];
    }
    if (y->dims[y->rank - 1] != cols || rows != raw->dims[0]) {
      snprintf(err, errn, "shape %s does not match %lld rows of %lld values (%s); expected [..., %lld] with "
               "%lld rows", type_str(y, rs, sizeof rs), (long long)raw->dims[0], (long long)cols, f,
               (long long)cols, (long long)raw->dims[0]);
      return false;
    }
  }
  if (!type_size_ok(y)) {
    snprintf(err, errn, "%s is too large; expected at most %lld values", type_str(y, rs, sizeof rs),
             (long long)MAX_NUMEL);
    return false;
  }
  return true;
}

bool dequantize_blocks_infer(Graph *g, Node *n, Diag *d) {
  Value *raw = node_in(g, n, 0);
  BqFormat fmt;
  Type y;
  char err[384];
  if (!blocks_shape(n, &raw->type, &fmt, &y, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  node_out(g, n, 0)->type = y;
  return true;
}

bool dequantize_blocks_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  BqFormat fmt;
  KILN_ASSERT(bq_format_from_name(attr_str(n, "format", NULL), &fmt));
  int64_t rows = in[0].type.dims[0], rb = in[0].type.dims[1], cols = rb / bq_formats[fmt].block_bytes * bq_formats[fmt].block_values;
  for (int64_t r = 0; r < rows; r++)
    bq_dequantize_row(fmt, (const uint8_t *)in[0].data + r * rb, (float *)out[0].data + r * cols, cols);
  return true;
}

bool dequantize_blocks_emit(Emit *e, const Node *n) {
  BqFormat fmt;
  if (!bq_format_from_name(attr_str(n, "format", NULL), &fmt))
    return false;
  const Type *rt = &gval(e->g, n->in[0])->type;
  int64_t rows = rt->dims[0], rb = rt->dims[1], nb = rb / bq_formats[fmt].block_bytes;
  int bv = bq_formats[fmt].block_values;
  if (rows == 0 || nb == 0) {
    emit_line(e, "/* empty: nothing to dequantize */");
    return true;
  }
  emit_line(e, "/* y[%lld,%lld] = the %s blocks x[%lld,%lld] dequantized */", (long long)rows,
            (long long)(nb * bv), bq_formats[fmt].name, (long long)rows, (long long)rb);
  emit_line(e, "for (int64_t r = 0; r < %lld; r++) {", (long long)(rows * nb));
  e->indent++;
  emit_line(e, "const uint8_t *b = %s + r * %d;", emit_ref(e, n->in[0]), bq_formats[fmt].block_bytes);
  emit_line(e, "float *yb = %s + r * %d;", emit_ref(e, n->out[0]), bv);
  qgemm_emit_block(e, fmt, "b", "yb");
  e->indent--;
  emit_line(e, "}");
  return true;
}
