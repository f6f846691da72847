/* tfidf.c — TfIdfVectorizer (opset 9) on integer tokens: counts of the
 * n-grams of a pool (pool_int64s; ngram_counts[i] is where the grams of
 * length i + 1 start), taken with gaps of up to max_skip_count tokens
 * between their items, weighted as TF (the count), IDF (weights[i], or 1,
 * where the count is nonzero) or TFIDF (weights[i] times the count).
 *
 * The pool becomes a compile-time table of grams (items, length, output
 * slot); the C slides over each row with every skip distance and compares
 * the tokens with each gram of a length in [min_gram_length,
 * max_gram_length]. As in ONNX's reference, unigrams count once (at skip
 * distance 1, not again for each distance), and a gram listed twice
 * counts in its last slot. String pools are out of kiln's scope. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

/* gram g: its items are pool[off[g] .. off[g] + len[g]), its count goes to
 * output slot slot[g]; grams sorted by nothing (the C tries them all). */
typedef struct TfIdf {
  int ngrams;
  int64_t *off, *len, *slot;
  const int64_t *pool;
  int64_t slots, rows, cols;
  int64_t min_n, max_n, max_skip;
  int mode; /* 0 TF, 1 IDF, 2 TFIDF */
  const Attr *weights;
} TfIdf;

static bool tfidf_plan(Arena *a, const Node *n, const Type *x, TfIdf *p, char *err, size_t errn) {
  const Attr *pool = attr_get(n, "pool_int64s"), *counts = attr_get(n, "ngram_counts");
  const Attr *idx = attr_get(n, "ngram_indexes");
  const char *mode = attr_str(n, "mode", "");
  memset(p, 0, sizeof *p);
  if (attr_get(n, "pool_strings")) {
    snprintf(err, errn, "has pool_strings; expected pool_int64s (strings are out of kiln's scope)");
    return false;
  }
  if (!pool || !counts || !idx || pool->kind != ATTR_INTS || counts->kind != ATTR_INTS ||
      idx->kind != ATTR_INTS) {
    snprintf(err, errn, "pool_int64s, ngram_counts or ngram_indexes is missing; expected all three "
             "as lists of ints");
    return false;
  }
  p->mode = !strcmp(mode, "TF") ? 0 : !strcmp(mode, "IDF") ? 1 : !strcmp(mode, "TFIDF") ? 2 : -1;
  if (p->mode < 0) {
    snprintf(err, errn, "mode is '%s'; expected \"TF\", \"IDF\" or \"TFIDF\"", mode);
    return false;
  }
  p->min_n = attr_int(n, "min_gram_length", 0);
  p->max_n = attr_int(n, "max_gram_length", 0);
  p->max_skip = attr_int(n, "max_skip_count", 0);
  if (p->min_n < 1 || p->max_n < p->min_n || p->max_n > counts->n || p->max_skip < 0 ||
      p->max_skip > (1 << 20)) {
    snprintf(err, errn, "min_gram_length %lld, max_gram_length %lld, max_skip_count %lld; expected "
             "1 <= min <= max <= %d (the lengths ngram_counts lists), skips >= 0",
             (long long)p->min_n, (long long)p->max_n, (long long)p->max_skip, counts->n);
    return false;
  }
  if (x->rank > 2 || (x->rank == 2 && x->dims[0] < 1)) {
    snprintf(err, errn, "input has rank %d; expected [C] or [B, C] with B >= 1", x->rank);
    return false;
  }
  p->rows = x->rank == 2 ? x->dims[0] : 1;
  p->cols = x->rank == 0 ? 1 : x->dims[x->rank - 1];
  p->pool = pool->ints;
  size_t cap = (size_t)pool->n + 1;
  p->off = a ? arena_alloc(a, 3 * cap * sizeof(int64_t)) : calloc(3 * cap, sizeof(int64_t));
  if (!p->off) {
    snprintf(err, errn, "out of memory");
    return false;
  }
  p->len = p->off + cap, p->slot = p->off + 2 * cap;
  int64_t id = 0; /* the gram's position in the pool, what ngram_indexes is indexed by */
  for (int i = 0; i < counts->n; i++) {
    int64_t start = counts->ints[i], end = i + 1 < counts->n ? counts->ints[i + 1] : pool->n;
    int64_t size = i + 1;
    if (start < 0 || end < start || end > pool->n) {
      snprintf(err, errn, "ngram_counts[%d] = %lld; expected non-decreasing starts within the pool "
               "of %d", i, (long long)start, pool->n);
      return false;
    }
    for (int64_t k = 0; k < (end - start) / size; k++, id++) {
      if (id >= idx->n || idx->ints[id] < 0 || idx->ints[id] > (1 << 24)) {
        snprintf(err, errn, "n-gram %lld has no ngram_indexes entry in 0 to 2^24; expected one per "
                 "pooled n-gram", (long long)id);
        return false;
      }
      if (idx->ints[id] + 1 > p->slots)
        p->slots = idx->ints[id] + 1;
      if (size < p->min_n || size > p->max_n)
        continue;
      int64_t off = start + k * size;
      int g = 0; /* a gram listed again replaces the earlier one */
      while (g < p->ngrams && !(p->len[g] == size &&
                                !memcmp(p->pool + p->off[g], p->pool + off, sizeof(int64_t) * (size_t)size)))
        g++;
      p->off[g] = off, p->len[g] = size, p->slot[g] = idx->ints[id];
      if (g == p->ngrams)
        p->ngrams++;
    }
  }
  p->weights = attr_get(n, "weights");
  if (p->weights && (p->weights->kind != ATTR_FLOATS || p->weights->n < p->slots)) {
    snprintf(err, errn, "weights has %d entries; expected one per output slot, %lld",
             p->weights->n, (long long)p->slots);
    return false;
  }
  return true;
}

bool tfidf_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  if (x->type.dt != DT_I32 && x->type.dt != DT_I64)
    return diag_node(d, g, n, "input '%s' is %s; expected i32 or i64 tokens (strings are out of "
                     "kiln's scope)", x->name, dt_name(x->type.dt));
  TfIdf p;
  char err[256];
  if (!tfidf_plan(g->arena, n, &x->type, &p, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  Type y = {.dt = DT_F32, .rank = x->type.rank == 2 ? 2 : 1};
  if (y.rank == 2)
    y.dims[0] = p.rows;
  y.dims[y.rank - 1] = p.slots;
  node_out(g, n, 0)->type = y;
  return true;
}

/* The smallest gram length counted at skip distance sd (1-based). */
static int64_t first_len(const TfIdf *p, int64_t sd) {
  return sd > 1 && p->min_n == 1 ? 2 : p->min_n;
}

bool tfidf_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  TfIdf p;
  char err[256];
  if (!tfidf_plan(NULL, n, &in[0].type, &p, err, sizeof err)) {
    free(p.off);
    return diag_error(d, "node '%s' (TfIdfVectorizer): %s", n->name, err);
  }
  float *y = out[0].data;
  DType dt = in[0].type.dt;
  memset(y, 0, sizeof(float) * (size_t)(p.rows * p.slots));
  for (int64_t r = 0; r < p.rows; r++)
    for (int64_t sd = 1; sd <= p.max_skip + 1 && first_len(&p, sd) <= p.max_n; sd++)
      for (int64_t s = 0; s + sd * (first_len(&p, sd) - 1) < p.cols; s++)
        for (int g = 0; g < p.ngrams; g++) {
          if (p.len[g] < first_len(&p, sd) || s + sd * (p.len[g] - 1) >= p.cols)
            continue;
          int64_t k = 0;
          while (k < p.len[g] && el_get_i(dt, in[0].data, r * p.cols + s + k * sd) == p.pool[p.off[g] + k])
            k++;
          if (k == p.len[g])
            y[r * p.slots + p.slot[g]] += 1;
        }
  for (int64_t i = 0; i < p.rows * p.slots; i++) {
    double w = p.weights ? p.weights->floats[i % p.slots] : 1;
    y[i] = p.mode == 0 ? y[i] : p.mode == 1 ? (y[i] > 0 ? (float)w : 0) : (float)(w * y[i]);
  }
  free(p.off);
  return true;
}

bool tfidf_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Value *x = node_in(g, n, 0);
  TfIdf p;
  char err[256];
  if (!tfidf_plan(g->arena, n, &x->type, &p, err, sizeof err))
    return false;
  const char *X = emit_ref(e, n->in[0]), *Y = emit_ref(e, n->out[0]);
  long long slots = (long long)p.slots, cols = (long long)p.cols;
  emit_line(e, "memset(%s, 0, %lld);", Y, (long long)(p.rows * p.slots * 4));
  if (p.ngrams > 0) {
    int64_t *tab = arena_alloc(g->arena, sizeof(int64_t) * 3 * (size_t)p.ngrams);
    for (int k = 0; k < p.ngrams; k++)
      tab[3 * k] = p.off[k], tab[3 * k + 1] = p.len[k], tab[3 * k + 2] = p.slot[k];
    const char *G = emit_const_array(e, DT_I64, tab, 3 * p.ngrams, "tfidf_grams",
                                     "TfIdfVectorizer: per n-gram its start in the pool, length, "
                                     "output slot");
    const char *P = emit_const_array(e, DT_I64, p.pool, p.off[p.ngrams - 1] + p.len[p.ngrams - 1],
                                     "tfidf_pool", "TfIdfVectorizer: the pooled n-grams' items");
    emit_line(e, "/* n-gram counts: every skip distance sd, start s and gram of a length from "
              "first (unigrams only at sd = 1) */");
    emit_line(e, "for (int64_t r = 0; r < %lld; r++)", (long long)p.rows);
    /* unigrams alone: one skip distance; else 2-grams and up at sd > 1 */
    int64_t sds = p.min_n == 1 && p.max_n == 1 ? 1 : p.max_skip + 1;
    emit_line(e, "  for (int64_t sd = 1; sd <= %lld; sd++) {", (long long)sds);
    if (p.min_n == 1 && sds > 1)
      emit_line(e, "    int64_t first = sd > 1 ? 2 : 1;");
    else
      emit_line(e, "    const int64_t first = %lld;", (long long)p.min_n);
    emit_line(e, "    for (int64_t s = 0; s + sd * (first - 1) < %lld; s++)", cols);
    emit_line(e, "      for (int g = 0; g < %d; g++) {", p.ngrams);
    emit_line(e, "        int64_t off = %s[3 * g], len = %s[3 * g + 1], k = 0;", G, G);
    emit_line(e, "        if (len < first || s + sd * (len - 1) >= %lld)", cols);
    emit_line(e, "          continue;");
    emit_line(e, "        while (k < len && (int64_t)%s[r * %lld + s + k * sd] == %s[off + k])", X, cols, P);
    emit_line(e, "          k++;");
    emit_line(e, "        if (k == len)");
    emit_line(e, "          %s[r * %lld + %s[3 * g + 2]] += 1;", Y, slots, G);
    emit_line(e, "      }");
    emit_line(e, "  }");
  }
  if (p.mode == 0 || (p.mode == 2 && !p.weights))
    return true;
  const char *W = NULL;
  if (p.weights) {
    float *w = arena_alloc(g->arena, sizeof(float) * (size_t)p.slots);
    for (int64_t i = 0; i < p.slots; i++)
      w[i] = (float)p.weights->floats[i];
    W = emit_const_array(e, DT_F32, w, p.slots, "tfidf_weights",
                         "TfIdfVectorizer: the weights of the output slots");
  }
  emit_line(e, "/* %s weighting */", p.mode == 1 ? "IDF" : "TFIDF");
  emit_line(e, "for (int64_t i = 0; i < %lld; i++)", (long long)(p.rows * p.slots));
  if (p.mode == 1)
    emit_line(e, "  %s[i] = %s[i] > 0 ? %s : 0;", Y, Y, W ? arena_printf(g->arena, "%s[i %% %lld]", W, slots) : "1");
  else
    emit_line(e, "  %s[i] = (float)((double)%s[i %% %lld] * %s[i]);", Y, W, slots, Y);
  return true;
}
