/* rotary.c — RotaryEmbedding (ONNX opset 23; family `rotary`): rotary
 * position embedding, the pairs of each head's row rotated by the angle of
 * the token's position, read from cos and sin tables (rotary.h has the
 * operands, both pairings and the two ONNX Runtime extensions).
 *
 * _eval computes each pair in double from the tables' elements and rounds
 * y1 and y2 once. _emit writes one pass over X: per token its table rows,
 * per head the pair loop (contiguous for the half split, stride 2 for the
 * interleaved pairs; both vectorise) and a copy of the dims past R. */
#include "rotary.h"

#include <math.h>
#include <stdio.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

/* ---- geometry ---------------------------------------------------------------- */

/* The heads of X: [B, S, H*D] split by num_heads (or by the caches' last
 * dim when num_heads is 0), or [B, H, S, D]. */
static bool rope_heads(const Node *n, const Type *x, const Type *cos, RopeGeom *r, char *err, size_t errn) {
  int64_t nh = attr_int(n, "num_heads", 0), rd = attr_int(n, "rotary_embedding_dim", 0);
  if (x->rank == 4) {
    r->b = x->dims[0], r->h = x->dims[1], r->s = x->dims[2], r->d = x->dims[3];
    return true;
  }
  if (x->rank != 3) {
    snprintf(err, errn, "X has rank %d; expected [B, S, H*D] or [B, H, S, D]", x->rank);
    return false;
  }
  r->b = x->dims[0], r->s = x->dims[1];
  if (nh == 0 && rd == 0 && cos->rank >= 1 && cos->dims[cos->rank - 1] > 0)
    nh = x->dims[2] / (2 * cos->dims[cos->rank - 1]); /* ONNX Runtime: D = 2 * the caches' last dim */
  if (nh <= 0 || x->dims[2] % nh) {
    snprintf(err, errn, "X [B, S, %lld] with num_heads %lld; expected num_heads > 0 dividing the hidden size",
             (long long)x->dims[2], (long long)nh);
    return false;
  }
  r->h = nh;
  r->d = x->dims[2] / nh;
  return true;
}

/* The caches and position_ids against the geometry. */
static bool rope_caches(const Type *cos, const Type *sin, const Type *pos, RopeGeom *r, char *err, size_t errn) {
  char a[128], b[128];
  if (!type_equal(cos, sin) || cos->dt != r->dt) {
    snprintf(err, errn, "cos_cache is %s and sin_cache %s; expected the same shape, of X's dtype %s",
             type_str(cos, a, sizeof a), type_str(sin, b, sizeof b), dt_name(r->dt));
    return false;
  }
  if (pos && (pos->dt != DT_I64 || !((pos->rank == 2 && (pos->dims[0] == r->b || pos->dims[0] == 1) &&
                                      pos->dims[1] == r->s) || (pos->rank == 1 && pos->dims[0] == 1)))) {
    if (r->b > 1)
      snprintf(b, sizeof b, "or [1, %lld], ", (long long)r->s);
    snprintf(err, errn, "position_ids is %s; expected i64 [%lld, %lld] (%sor [1]: a start offset)",
             type_str(pos, a, sizeof a), (long long)r->b, (long long)r->s, r->b > 1 ? b : "");
    return false;
  }
  r->pos = !pos ? ROPE_POS_NONE : pos->rank == 1 ? ROPE_POS_START : ROPE_POS_IDS;
  r->bcast = pos ? pos->dims[0] == 1 && r->b > 1 && pos->rank == 2 : cos->rank == 3 && cos->dims[0] == 1 && r->b > 1;
  bool ok = pos ? cos->rank == 2 && cos->dims[0] > 0 && cos->dims[1] == r->half
                : cos->rank == 3 && (cos->dims[0] == r->b || cos->dims[0] == 1) && cos->dims[1] == r->s &&
                      cos->dims[2] == r->half;
  if (!ok) {
    if (pos)
      snprintf(err, errn, "cos_cache is %s; expected [max_pos, %lld] (R/2) with position_ids",
               type_str(cos, a, sizeof a), (long long)r->half);
    else
      snprintf(err, errn, "cos_cache is %s; expected [%lld, %lld, %lld] ([B, S, R/2]) without position_ids",
               type_str(cos, a, sizeof a), (long long)r->b, (long long)r->s, (long long)r->half);
    return false;
  }
  r->max_pos = pos ? cos->dims[0] : 0;
  return true;
}

bool rope_geom(const Node *n, const Type *x, const Type *cos, const Type *sin, const Type *pos, RopeGeom *r,
               char *err, size_t errn) {
  *r = (RopeGeom){.dt = x->dt, .rank = x->rank};
  if (x->dt != DT_F32 && x->dt != DT_F64) {
    snprintf(err, errn, "X is %s; expected f32 or f64", dt_name(x->dt));
    return false;
  }
  int64_t il = attr_int(n, "interleaved", 0), rd = attr_int(n, "rotary_embedding_dim", 0);
  if (il != 0 && il != 1) {
    snprintf(err, errn, "interleaved is %lld; expected 0 or 1", (long long)il);
    return false;
  }
  r->interleaved = il == 1;
  if (!rope_heads(n, x, cos, r, err, errn))
    return false;
  r->rot = rd ? rd : r->d;
  if (rd < 0 || r->rot > r->d || r->rot % 2) {
    snprintf(err, errn, "rotary_embedding_dim is %lld with heads of %lld; expected an even number <= the "
             "head size (0: all of it)", (long long)rd, (long long)r->d);
    return false;
  }
  r->half = r->rot / 2;
  return rope_caches(cos, sin, pos, r, err, errn);
}

static bool node_geom(const Graph *g, const Node *n, RopeGeom *r, char *err, size_t errn) {
  const Value *p = node_in(g, n, 3);
  return rope_geom(n, &node_in(g, n, 0)->type, &node_in(g, n, 1)->type, &node_in(g, n, 2)->type,
                   p ? &p->type : NULL, r, err, errn);
}

void rope_tables(double theta, int64_t rot, int64_t max_pos, DType dt, void *cos_out, void *sin_out) {
  int64_t half = rot / 2;
  for (int64_t i = 0; i < half; i++) {
    double inv_freq = pow(theta, -2.0 * (double)i / (double)rot);
    for (int64_t p = 0; p < max_pos; p++) {
      double angle = (double)p * inv_freq;
      el_set_f(dt, cos_out, p * half + i, cos(angle));
      el_set_f(dt, sin_out, p * half + i, sin(angle));
    }
  }
}

/* ---- _infer ------------------------------------------------------------------- */

bool rotary_infer(Graph *g, Node *n, Diag *d) {
  RopeGeom r;
  char err[256];
  if (!node_in(g, n, 0) || !node_in(g, n, 1) || !node_in(g, n, 2))
    return diag_node(d, g, n, "X, cos_cache or sin_cache is absent; expected all three");
  if (!node_geom(g, n, &r, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  node_out(g, n, 0)->type = node_in(g, n, 0)->type;
  return true;
}

/* ---- _eval ---------------------------------------------------------------------- */

/* Element offset of (b, s, h, 0) in X. */
static int64_t x_at(const RopeGeom *r, int64_t b, int64_t s, int64_t h) {
  return r->rank == 3 ? ((b * r->s + s) * r->h + h) * r->d : ((b * r->h + h) * r->s + s) * r->d;
}

/* The caches' row of token (b, s); false when its position is out of range. */
static bool cache_row(const RopeGeom *r, const Tensor *pos, int64_t b, int64_t s, int64_t *row) {
  int64_t bb = r->bcast ? 0 : b;
  if (r->pos == ROPE_POS_NONE) {
    *row = bb * r->s + s;
    return true;
  }
  int64_t p = r->pos == ROPE_POS_START ? el_get_i(DT_I64, pos->data, 0) + s : el_get_i(DT_I64, pos->data, bb * r->s + s);
  if (p < -r->max_pos || p >= r->max_pos)
    return false;
  *row = p < 0 ? p + r->max_pos : p;
  return true;
}

bool rotary_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  RopeGeom r;
  char err[256];
  KILN_ASSERT(rope_geom(n, &in[0].type, &in[1].type, &in[2].type, n->nin > 3 && in[3].data ? &in[3].type : NULL,
                        &r, err, sizeof err));
  DType dt = r.dt;
  for (int64_t b = 0; b < r.b; b++)
    for (int64_t s = 0; s < r.s; s++) {
      int64_t row;
      if (!cache_row(&r, &in[3], b, s, &row))
        return diag_error(d, "RotaryEmbedding '%s': the position of token (%lld, %lld) is out of range; expected "
                          "[%lld, %lld) (the tables' rows)", n->name, (long long)b, (long long)s,
                          (long long)-r.max_pos, (long long)r.max_pos);
      for (int64_t h = 0; h < r.h; h++) {
        int64_t x0 = x_at(&r, b, s, h);
        for (int64_t i = 0; i < r.half; i++) {
          int64_t i1 = r.interleaved ? 2 * i : i, i2 = r.interleaved ? 2 * i + 1 : i + r.half;
          double x1 = el_get_f(dt, in[0].data, x0 + i1), x2 = el_get_f(dt, in[0].data, x0 + i2);
          double c = el_get_f(dt, in[1].data, row * r.half + i), sn = el_get_f(dt, in[2].data, row * r.half + i);
          el_set_f(dt, out[0].data, x0 + i1, x1 * c - x2 * sn);
          el_set_f(dt, out[0].data, x0 + i2, x1 * sn + x2 * c);
        }
        for (int64_t j = r.rot; j < r.d; j++)
          el_set_f(dt, out[0].data, x0 + j, el_get_f(dt, in[0].data, x0 + j));
      }
    }
  return true;
}

/* ---- _emit ---------------------------------------------------------------------- */

/* Does a token's row depend on its batch index b? */
static bool row_reads_b(const RopeGeom *r) { return !r->bcast && r->b > 1 && r->pos != ROPE_POS_START; }

/* The C lines that set `row`, the caches' row of token (b, s). */
static void emit_row(Emit *e, const RopeGeom *r, const char *pos) {
  const char *bs = !row_reads_b(r) ? "s" : arena_printf(e->g->arena, "b * %lld + s", (long long)r->s);
  if (r->pos == ROPE_POS_NONE) {
    emit_line(e, "const int64_t row = %s; /* the caches hold a row per token */", bs);
    return;
  }
  if (r->pos == ROPE_POS_START)
    emit_line(e, "int64_t row = %s[0] + s; /* position: the start offset plus s */", pos);
  else
    emit_line(e, "int64_t row = %s[%s]; /* position_ids[b, s] */", pos, bs);
  emit_line(e, "if (row < 0)");
  emit_line(e, "  row += %lld;", (long long)r->max_pos);
  emit_line(e, "row = row < 0 ? 0 : row > %lld ? %lld : row; /* out of range is undefined: never read outside "
               "the tables */", (long long)(r->max_pos - 1), (long long)(r->max_pos - 1));
}

/* One head's row: the pairs, then the dims past R copied. */
static void emit_head(Emit *e, const RopeGeom *r) {
  long long hf = (long long)r->half;
  emit_line(e, "for (int i = 0; i < %lld; i++) {", hf);
  if (r->interleaved) {
    emit_line(e, "  const %s x1 = x[2 * i], x2 = x[2 * i + 1];", dt_ctype(r->dt));
    emit_line(e, "  y[2 * i] = x1 * c[i] - x2 * sn[i];");
    emit_line(e, "  y[2 * i + 1] = x1 * sn[i] + x2 * c[i];");
  } else {
    emit_line(e, "  const %s x1 = x[i], x2 = x[i + %lld];", dt_ctype(r->dt), hf);
    emit_line(e, "  y[i] = x1 * c[i] - x2 * sn[i];");
    emit_line(e, "  y[i + %lld] = x1 * sn[i] + x2 * c[i];", hf);
  }
  emit_line(e, "}");
  if (r->rot < r->d) {
    emit_line(e, "for (int i = %lld; i < %lld; i++) /* past R: unrotated */", (long long)r->rot, (long long)r->d);
    emit_line(e, "  y[i] = x[i];");
  }
}

/* Rank 3: tokens outside, heads inside (one table row per token); rank 4:
 * (batch, head) outside, tokens inside. The outer loop is the one
 * --threads splits. */
bool rotary_emit(Emit *e, const Node *n) {
  RopeGeom r;
  char err[256];
  KILN_ASSERT(node_geom(e->g, n, &r, err, sizeof err));
  if (r.b * r.s * r.h * r.d == 0)
    return true;
  const char *x = emit_ref(e, n->in[0]), *cs = emit_ref(e, n->in[1]), *sn = emit_ref(e, n->in[2]);
  const char *pos = r.pos != ROPE_POS_NONE ? emit_ref(e, n->in[3]) : NULL, *y = emit_ref(e, n->out[0]);
  const char *T = dt_ctype(r.dt);
  long long B = (long long)r.b, S = (long long)r.s, H = (long long)r.h, D = (long long)r.d;
  emit_line(e, "/* RotaryEmbedding: %s, %lld heads of %lld, the first %lld rotated as %s pairs */",
            r.rank == 3 ? "X [B, S, H*D]" : "X [B, H, S, D]", H, D, (long long)r.rot,
            r.interleaved ? "interleaved (2i, 2i+1)" : "half-split (i, i + R/2)");
  double ns = 0.5 * (double)(r.b * r.s * r.h * r.d);
  if (r.rank == 3) {
    emit_parallel_for(e, r.b * r.s, ns);
    emit_line(e, "for (int bs = 0; bs < %lld; bs++) {", B * S);
    e->indent++;
    if (row_reads_b(&r))
      emit_line(e, "const int b = bs / %lld;", S);
    emit_line(e, "const int s = bs %% %lld;", S);
    emit_row(e, &r, pos);
    emit_line(e, "const %s *c = %s + row * %lld, *sn = %s + row * %lld;", T, cs, (long long)r.half, sn,
              (long long)r.half);
    emit_line(e, "for (int h = 0; h < %lld; h++) {", H);
    e->indent++;
    emit_line(e, "const %s *x = %s + (bs * %lld + h) * %lld;", T, x, H, D);
    emit_line(e, "%s *y = %s + (bs * %lld + h) * %lld;", T, y, H, D);
  } else {
    emit_parallel_for(e, r.b * r.h, ns);
    emit_line(e, "for (int bh = 0; bh < %lld; bh++) {", B * H);
    e->indent++;
    if (row_reads_b(&r))
      emit_line(e, "const int b = bh / %lld;", H);
    emit_line(e, "for (int s = 0; s < %lld; s++) {", S);
    e->indent++;
    emit_row(e, &r, pos);
    emit_line(e, "const %s *c = %s + row * %lld, *sn = %s + row * %lld;", T, cs, (long long)r.half, sn,
              (long long)r.half);
    emit_line(e, "const %s *x = %s + (bh * %lld + s) * %lld;", T, x, S, D);
    emit_line(e, "%s *y = %s + (bh * %lld + s) * %lld;", T, y, S, D);
  }
  emit_head(e, &r);
  e->indent--;
  emit_line(e, "}");
  e->indent--;
  emit_line(e, "}");
  return true;
}

/* ---- FLOP count (ops.def's flops column) ------------------------------------------- */

/* Per rotated pair: 4 multiplies and 2 adds. */
int64_t rotary_flops(const Graph *g, const Node *n) {
  RopeGeom r;
  char err[256];
  KILN_ASSERT(node_geom(g, n, &r, err, sizeof err));
  return 6 * r.b * r.s * r.h * r.half;
}
