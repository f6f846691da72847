/* onnx_import.c — ONNX (protobuf-c) into kiln's IR.
 *
 * Reads the ModelProto, checks the opset imports, turns initializers (typed
 * fields, raw_data, external data files) into constant Values, graph inputs
 * into input Values (symbolic dims kept by name until the bind pass), and
 * nodes into IR nodes with typed attributes. Constant nodes stay nodes; the
 * infer pass evaluates them like any other. Nodes are sorted topologically
 * at the end because ONNX does not promise a sorted list. Every length, rank
 * and size read from the file is checked before use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.h"
#include "onnx.pb-c.h"
#include "onnx_ort_lstm.h"
#include "onnx_attention.h"
#include "onnx_contrib_quant.h"
#include "onnx_contrib_norm.h"
#include "../ir/naming.h"
#include "../ir/ops.h"

typedef struct Importer {
  Arena *a;
  Graph *g;
  Diag *d;
  const char *dir; /* folder of the model, for external data */
} Importer;

/* ---- tensors -------------------------------------------------------------- */

/* "../x", "a/../../x": a location that climbs out of the model's folder */
static bool escapes_folder(const char *loc) {
  for (const char *p = loc; *p;) {
    const char *slash = strchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : strlen(p);
    if (n == 2 && p[0] == '.' && p[1] == '.')
      return true;
    p += n + (slash ? 1 : 0);
  }
  return false;
}

static bool read_external(Importer *im, const Onnx__TensorProto *t, size_t want, void **dst,
                          const char *what) {
  const char *loc = NULL;
  long long off = 0, len = -1;
  for (size_t i = 0; i < t->n_external_data; i++) {
    const char *k = t->external_data[i]->key, *v = t->external_data[i]->value;
    if (!k || !v)
      continue;
    char *end = NULL;
    if (!strcmp(k, "location"))
      loc = v;
    else if (!strcmp(k, "offset"))
      off = strtoll(v, &end, 10);
    else if (!strcmp(k, "length"))
      len = strtoll(v, &end, 10);
    if (end && (end == v || *end || off < 0 || (!strcmp(k, "length") && len < 0)))
      return diag_error(im->d, "%s: external data %s is '%s'; expected a non-negative integer",
                        what, k, v);
  }
  if (!loc || !*loc || loc[0] == '/' || escapes_folder(loc))
    return diag_error(im->d, "%s: external data has no valid 'location' (got '%s'); expected a "
                      "file name relative to the model's folder", what, loc ? loc : "");
  if (len >= 0 && (size_t)len != want)
    return diag_error(im->d, "%s: external data length %lld; expected %zu bytes for its shape",
                      what, len, want);
  char *path = arena_printf(im->a, "%s/%s", im->dir ? im->dir : ".", loc);
  const char *real = path_outside(im->a, im->dir ? im->dir : ".", path);
  if (real) /* a link in the folder that points out of it, as '..' would */
    return diag_error(im->d, "%s: external data file '%s' is '%s', outside the model's folder; expected a "
                      "file inside it (links are followed)", what, path, real);
  const char *why = "";
  FILE *f = open_regular_file(path, &why);
  if (!f)
    return diag_error(im->d, "%s: cannot open external data file '%s': %s", what, path, why);
  /* the file's size first: a lying shape must not size an allocation */
  long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  bool ok = off >= 0 && size >= 0 && (unsigned long long)size >= (unsigned long long)off &&
            (unsigned long long)size - (unsigned long long)off >= want;
  if (ok) {
    *dst = arena_alloc(im->a, want ? want : 1);
    ok = fseek(f, (long)off, SEEK_SET) == 0 && fread(*dst, 1, want, f) == want;
  }
  fclose(f);
  if (!ok)
    return diag_error(im->d, "%s: external data file '%s' is too short; expected %zu bytes at "
                      "offset %lld", what, path, want, off);
  return true;
}

/* Decode a TensorProto into t (data in arena). `what` names it in errors. */
static bool decode_tensor(Importer *im, const Onnx__TensorProto *tp, Tensor *t, const char *what) {
  memset(t, 0, sizeof *t);
  DType dt = (DType)tp->data_type;
  if (!dt_supported(dt))
    return diag_error(im->d, "%s: element type %s (%d) is not supported; expected a numeric or "
                      "bool type (strings are out of kiln's scope)",
                      what, dt_name(dt), (int)tp->data_type);
  if (tp->n_dims > MAX_RANK)
    return diag_error(im->d, "%s: rank %zu; expected at most %d", what, tp->n_dims, MAX_RANK);
  t->type.dt = dt;
  t->type.rank = (int)tp->n_dims;
  int64_t numel = 1;
  for (size_t i = 0; i < tp->n_dims; i++) {
    if (tp->dims[i] < 0 || tp->dims[i] > MAX_NUMEL)
      return diag_error(im->d, "%s: dim %zu is %lld; expected a non-negative size", what, i,
                        (long long)tp->dims[i]);
    t->type.dims[i] = tp->dims[i];
    if (tp->dims[i] && numel > MAX_NUMEL / tp->dims[i])
      return diag_error(im->d, "%s: more than %lld elements is too large", what,
                        (long long)MAX_NUMEL);
    numel *= tp->dims[i];
  }
  size_t bytes = type_bytes(&t->type); /* packed types: ceil(numel * bits / 8) */
  int64_t nfield = dt_is_packed(dt) ? (int64_t)bytes : numel; /* packed: int32_data holds bytes */
  bool external =
      tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  /* sizes are checked before allocating, so a lying header costs nothing */
  if (!external && tp->has_raw_data && tp->raw_data.len != bytes)
    return diag_error(im->d, "%s: raw_data has %zu bytes; expected %zu (%lld x %s)", what,
                      tp->raw_data.len, bytes, (long long)numel, dt_name(dt));
  size_t have;
  const char *field;
  switch (dt) {
  case DT_F32: have = tp->n_float_data; field = "float_data"; break;
  case DT_F64: have = tp->n_double_data; field = "double_data"; break;
  case DT_I64: have = tp->n_int64_data; field = "int64_data"; break;
  case DT_U32: case DT_U64: have = tp->n_uint64_data; field = "uint64_data"; break;
  default: have = tp->n_int32_data; field = "int32_data"; break;
  }
  if (!external && !tp->has_raw_data && have != (size_t)nfield)
    return diag_error(im->d, "%s: %s has %zu values; expected %lld for its shape%s", what, field,
                      have, (long long)nfield, dt_is_packed(dt) ? " (packed bytes)" : "");
  if (external) /* allocated once the file is known to hold the bytes */
    return read_external(im, tp, bytes, &t->data, what);
  t->data = arena_alloc(im->a, bytes ? bytes : 1);
  if (tp->has_raw_data) {
    if (bytes)
      memcpy(t->data, tp->raw_data.data, bytes); /* little-endian host assumed */
    return true;
  }
  if (dt_is_packed(dt) || dt_is_minifloat(dt)) { /* the codes, a byte each */
    for (int64_t i = 0; i < nfield; i++)
      ((uint8_t *)t->data)[i] = (uint8_t)tp->int32_data[i];
    return true;
  }
  for (int64_t i = 0; i < numel; i++) {
    switch (dt) {
    case DT_F32: ((float *)t->data)[i] = tp->float_data[i]; break;
    case DT_F64: ((double *)t->data)[i] = tp->double_data[i]; break;
    case DT_I64: ((int64_t *)t->data)[i] = tp->int64_data[i]; break;
    case DT_U32: case DT_U64: el_set_u(dt, t->data, i, tp->uint64_data[i]); break;
    case DT_F16: case DT_BF16: ((uint16_t *)t->data)[i] = (uint16_t)tp->int32_data[i]; break; /* bits */
    default: el_set_i(dt, t->data, i, tp->int32_data[i]); break;
    }
  }
  return true;
}

static bool decode_sparse(Importer *im, const Onnx__SparseTensorProto *sp, Tensor *t,
                          const char *what) {
  Tensor vals, idx;
  if (!sp->values || !sp->indices)
    return diag_error(im->d, "%s: sparse tensor without values or indices", what);
  if (!decode_tensor(im, sp->values, &vals, what) || !decode_tensor(im, sp->indices, &idx, what))
    return false;
  if (sp->n_dims > MAX_RANK || !dt_is_int(idx.type.dt))
    return diag_error(im->d, "%s: bad sparse tensor; expected rank <= %d and integer indices",
                      what, MAX_RANK);
  if (dt_is_packed(vals.type.dt))
    return diag_error(im->d, "%s: sparse tensor of %s; expected a type of whole bytes (a packed "
                      "sparse tensor is not supported)", what, dt_name(vals.type.dt));
  memset(t, 0, sizeof *t);
  t->type.dt = vals.type.dt;
  t->type.rank = (int)sp->n_dims;
  for (size_t i = 0; i < sp->n_dims; i++) {
    if (sp->dims[i] < 0 || sp->dims[i] > MAX_NUMEL)
      return diag_error(im->d, "%s: bad sparse dim %lld", what, (long long)sp->dims[i]);
    t->type.dims[i] = sp->dims[i];
  }
  if (!type_size_ok(&t->type))
    return diag_error(im->d, "%s: sparse tensor too large", what);
  int64_t numel = type_numel(&t->type), nnz = type_numel(&vals.type);
  size_t es = dt_size(t->type.dt);
  t->data = arena_alloc(im->a, (size_t)numel * es + 1);
  int64_t st[MAX_RANK];
  type_strides(&t->type, st);
  bool coo = idx.type.rank == 2; /* [nnz, rank] coordinates, else [nnz] linear */
  if ((coo && (idx.type.dims[0] != nnz || idx.type.dims[1] != t->type.rank)) ||
      (!coo && type_numel(&idx.type) != nnz))
    return diag_error(im->d, "%s: sparse indices shape does not match %lld values", what,
                      (long long)nnz);
  for (int64_t k = 0; k < nnz; k++) {
    int64_t lin = 0;
    if (coo) {
      for (int r = 0; r < t->type.rank; r++) {
        int64_t c = el_get_i(idx.type.dt, idx.data, k * t->type.rank + r);
        if (c < 0 || c >= t->type.dims[r])
          return diag_error(im->d, "%s: sparse index out of range", what);
        lin += c * st[r];
      }
    } else {
      lin = el_get_i(idx.type.dt, idx.data, k);
    }
    if (lin < 0 || lin >= numel)
      return diag_error(im->d, "%s: sparse index %lld out of range [0, %lld)", what,
                        (long long)lin, (long long)numel);
    memcpy((char *)t->data + lin * (int64_t)es, (char *)vals.data + k * (int64_t)es, es);
  }
  return true;
}

/* ---- graph pieces ---------------------------------------------------------- */

static int value_for(Importer *im, const char *name) {
  int v = graph_find_value(im->g, name);
  return v >= 0 ? v : graph_add_value(im->g, name);
}

static bool import_value_info(Importer *im, const Onnx__ValueInfoProto *vi, Value *v) {
  const char *what = arena_printf(im->a, "graph input '%s'", v->name);
  if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
    return diag_error(im->d, "%s is not a tensor (sequence, map or optional); expected a tensor",
                      what);
  const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
  DType dt = (DType)tt->elem_type;
  if (!dt_supported(dt))
    return diag_error(im->d, "%s has element type %s; expected a numeric or bool type", what,
                      dt_name(dt));
  v->type.dt = dt;
  if (!tt->shape)
    return diag_error(im->d, "%s has no shape; expected a tensor shape (kiln needs every rank)",
                      what);
  if (tt->shape->n_dim > MAX_RANK)
    return diag_error(im->d, "%s has rank %zu; expected at most %d", what, tt->shape->n_dim,
                      MAX_RANK);
  v->type.rank = (int)tt->shape->n_dim;
  for (size_t i = 0; i < tt->shape->n_dim; i++) {
    const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[i];
    /* dim_value -1 is an older exporters' "unknown" (paddle2onnx's PP-OCR
     * classifier): a symbolic dim, as if no value were set */
    bool unknown = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dim->dim_value == -1;
    if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && !unknown) {
      if (dim->dim_value < 0 || dim->dim_value > MAX_NUMEL)
        return diag_error(im->d, "%s: dim %zu is %lld; expected a non-negative size", what, i,
                          (long long)dim->dim_value);
      v->type.dims[i] = dim->dim_value;
    } else {
      v->type.dims[i] = -1;
      v->sym[i] = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                          dim->dim_param && *dim->dim_param
                      ? arena_strdup(im->a, dim->dim_param)
                      : arena_printf(im->a, "%s[%zu]", v->name, i);
    }
  }
  Type fixed = v->type; /* symbolic dims count as 1 until bound */
  for (int i = 0; i < fixed.rank; i++)
    if (fixed.dims[i] < 0)
      fixed.dims[i] = 1;
  if (!type_size_ok(&fixed))
    return diag_error(im->d, "%s is too large; expected at most %lld elements", what,
                      (long long)MAX_NUMEL);
  return true;
}

/* A graph input with an initializer declares the initializer's type: its
 * element type, rank and every fixed dim (symbolic dims match any size). */
static bool check_default_input(Importer *im, const Onnx__ValueInfoProto *vi, const Value *init) {
  if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
    return true; /* nothing declared to clash with */
  const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
  bool same = !tt->elem_type || (DType)tt->elem_type == init->type.dt;
  if (same && tt->shape) {
    same = (int)tt->shape->n_dim == init->type.rank;
    for (int i = 0; same && i < init->type.rank; i++)
      same = tt->shape->dim[i]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
             tt->shape->dim[i]->dim_value == init->type.dims[i];
  }
  if (same)
    return true;
  Buf b = {0};
  buf_printf(&b, "%s", tt->elem_type ? dt_name((DType)tt->elem_type) : "?");
  for (size_t i = 0; tt->shape && i < tt->shape->n_dim && i <= MAX_RANK; i++) {
    const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[i];
    if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
      buf_printf(&b, "%s%lld", i ? "," : "[", (long long)dim->dim_value);
    else
      buf_printf(&b, "%s%s", i ? "," : "[", dim->dim_param && *dim->dim_param ? dim->dim_param : "?");
  }
  if (tt->shape)
    buf_puts(&b, tt->shape->n_dim ? "]" : "[]");
  char ts[160];
  diag_error(im->d, "graph input '%s' declares %s, but its initializer is %s; expected the same type "
             "and shape", init->name, b.s, type_str(&init->type, ts, sizeof ts));
  buf_free(&b);
  return false;
}

static bool import_attr(Importer *im, Node *n, const Onnx__AttributeProto *ap) {
  Graph *g = im->g;
  const char *name = ap->name ? ap->name : "";
  const char *what = arena_printf(im->a, "node '%s' (%s): attribute '%s'", n->name,
                                  node_op_name(n), name);
  if (ap->ref_attr_name && *ap->ref_attr_name) /* only a function body has attributes to refer to */
    return diag_error(im->d, "%s refers to an attribute '%s' of an enclosing function (ref_attr_name), "
                      "but the main graph is no function body; expected the attribute's value",
                      what, ap->ref_attr_name);
  switch (ap->type) {
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
    node_add_attr(g, n, name, ATTR_FLOAT)->f = ap->f;
    return true;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
    node_add_attr(g, n, name, ATTR_INT)->i = ap->i;
    return true;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
    char *s = arena_alloc(im->a, ap->s.len + 1);
    if (ap->s.len)
      memcpy(s, ap->s.data, ap->s.len);
    node_add_attr(g, n, name, ATTR_STRING)->s = s;
    return true;
  }
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: {
    Attr *a = node_add_attr(g, n, name, ATTR_INTS);
    a->n = (int)ap->n_ints;
    a->ints = arena_dup(im->a, ap->ints, sizeof(int64_t) * ap->n_ints);
    return true;
  }
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
    Attr *a = node_add_attr(g, n, name, ATTR_FLOATS);
    a->n = (int)ap->n_floats;
    a->floats = arena_alloc(im->a, sizeof(double) * (ap->n_floats + 1));
    for (size_t i = 0; i < ap->n_floats; i++)
      a->floats[i] = ap->floats[i];
    return true;
  }
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {
    Attr *a = node_add_attr(g, n, name, ATTR_STRINGS);
    a->n = (int)ap->n_strings;
    a->strings = arena_alloc(im->a, sizeof(char *) * (ap->n_strings + 1));
    for (size_t i = 0; i < ap->n_strings; i++) {
      char *s = arena_alloc(im->a, ap->strings[i].len + 1);
      if (ap->strings[i].len)
        memcpy(s, ap->strings[i].data, ap->strings[i].len);
      a->strings[i] = s;
    }
    return true;
  }
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR: {
    Tensor *t = arena_alloc(im->a, sizeof *t);
    bool ok = ap->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR
                  ? (ap->t ? decode_tensor(im, ap->t, t, what)
                           : diag_error(im->d, "%s has no tensor", what))
                  : (ap->sparse_tensor ? decode_sparse(im, ap->sparse_tensor, t, what)
                                       : diag_error(im->d, "%s has no sparse tensor", what));
    if (!ok)
      return false;
    node_add_attr(g, n, name, ATTR_TENSOR)->t = t;
    return true;
  }
  default:
    return diag_error(im->d, "%s has type %d (graph, type proto or tensor list); kiln supports "
                      "int, float, string, tensor and lists of int, float and string",
                      what, (int)ap->type);
  }
}

static int default_opset(const Onnx__ModelProto *m, Importer *im, bool *ok) {
  int v = -1;
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = m->opset_import[i];
    const char *dom = o->domain ? o->domain : "";
    if (!*dom || !strcmp(dom, "ai.onnx"))
      v = (int)o->version;
  }
  *ok = true;
  if (v < 0) {
    *ok = diag_error(im->d, "the model imports no version of the default ONNX domain; expected an "
                     "opset_import entry with domain \"\"");
  } else if (v < 1) {
    *ok = diag_error(im->d, "the model uses ONNX opset %d; expected an opset from 1 on", v);
  }
  return v;
}

static const char *arity_str(Arena *a, int lo, int hi) {
  if (lo == hi)
    return arena_printf(a, "%d", lo);
  if (hi < 0)
    return arena_printf(a, "at least %d", lo);
  return arena_printf(a, "%d to %d", lo, hi);
}

/* ONNX Runtime's contrib SimplifiedLayerNormalization (which it registers
 * in the default domain, opset 1 on; what its transformer optimizer writes
 * for T5 and Llama norms) is RMSNormalization under another name, with the
 * same inputs, attributes and first output. */
static bool is_ort_rmsnorm(const char *dom, const char *op_type) {
  return !strcmp(op_type, "SimplifiedLayerNormalization") && (!*dom || !strcmp(dom, "ai.onnx"));
}

/* ONNX Runtime's contrib com.microsoft RotaryEmbedding is RotaryEmbedding
 * (compiler/ops/rotary.h) with its inputs in another order, (X,
 * position_ids, cos_cache, sin_cache), and two attributes of its own that
 * must keep their defaults: scale 1 and is_packed_batching 0. */
static bool is_ort_rotary(const char *dom, const char *op_type) {
  return !strcmp(op_type, "RotaryEmbedding") && !strcmp(dom, "com.microsoft");
}

/* The contrib node's inputs in the standard order, and its own two
 * attributes checked and dropped. */
static bool ort_rotary_fixup(Importer *im, Node *n, const char *nname) {
  if (n->nin != 4)
    return diag_error(im->d, "node '%s' (com.microsoft RotaryEmbedding): %d inputs; expected 4 (X, "
                      "position_ids, cos_cache, sin_cache)", nname, n->nin);
  int pos = n->in[1];
  n->in[1] = n->in[2];
  n->in[2] = n->in[3];
  n->in[3] = pos;
  int k = 0;
  for (int i = 0; i < n->nattr; i++) {
    const Attr *a = &n->attrs[i];
    bool own = !strcmp(a->name, "scale") || !strcmp(a->name, "is_packed_batching");
    if (own && ((a->kind == ATTR_FLOAT && a->f != 1) || (a->kind == ATTR_INT && a->i != 0) ||
                (a->kind != ATTR_FLOAT && a->kind != ATTR_INT)))
      return diag_error(im->d, "node '%s' (com.microsoft RotaryEmbedding): attribute '%s' is not its default; "
                        "expected scale 1 and is_packed_batching 0", nname, a->name);
    if (!own)
      n->attrs[k++] = *a;
  }
  n->nattr = k;
  return true;
}

/* ---- what ONNX says of attributes and inputs, checked where kiln reads them -- */

static bool check_attr_types(Importer *im, const Node *n) {
  AttrKind want;
  const Attr *a = attr_mistyped(n, &want);
  if (a)
    return diag_error(im->d, "node '%s' (%s): attribute '%s' is %s; expected %s (its type in ONNX)", n->name,
                      node_op_name(n), a->name, attr_kind_name(a->kind), attr_kind_name(want));
  return true;
}

/* Ops whose later opsets made an attribute an input: before opset `since`
 * they take one input, and the extra input of a newer model would be read
 * in place of the attribute. */
static const struct {
  const char *op, *attr;
  int since;
} attr_became_input[] = {
    {"Reshape", "shape", 5}, {"Slice", "starts, ends and axes", 10}, {"TopK", "k", 10},
    {"Pad", "pads and value", 11}, {"Clip", "min and max", 11}, {"Dropout", "ratio", 12},
    {"Squeeze", "axes", 13}, {"Unsqueeze", "axes", 13}, {"ReduceSum", "axes", 13},
    {"Split", "split", 13}, {"ReduceMean", "axes", 18}, {"ReduceMax", "axes", 18},
    {"ReduceMin", "axes", 18}, {"ReduceProd", "axes", 18}, {"ReduceL1", "axes", 18},
    {"ReduceL2", "axes", 18}, {"ReduceLogSum", "axes", 18}, {"ReduceLogSumExp", "axes", 18},
    {"ReduceSumSquare", "axes", 18},
};

static bool check_opset_arity(Importer *im, const char *op_type, const char *nname, int nin) {
  for (int i = 0; i < KILN_COUNT(attr_became_input); i++) {
    const char *attr = attr_became_input[i].attr;
    bool plural = strchr(attr, ' ') != NULL;
    if (!strcmp(op_type, attr_became_input[i].op) && im->g->opset < attr_became_input[i].since && nin > 1)
      return diag_error(im->d, "node '%s' (%s): %d inputs at opset %d; expected 1 (%s %s attribute%s "
                        "before opset %d, input%s from then on)", nname, op_type, nin, im->g->opset, attr,
                        plural ? "are" : "is an", plural ? "s" : "", attr_became_input[i].since,
                        plural ? "s" : "");
  }
  return true;
}

/* The op's version at the model's opset (compiler/ir/onnx_versions.def) must
 * exist and be one whose semantics kiln implements (ops.def's upto). An
 * opset newer than the table knows leaves the version unknown: refused at
 * the first node, naming its op, since any op may have changed there. */
static int next_change(const char *op_type, int ver) {
  int o = ver + 1;
  while (o <= onnx_opset_newest() && onnx_op_version(op_type, o) == ver)
    o++;
  return o;
}

static bool check_op_version(Importer *im, const OpInfo *oi, const char *op_type, const char *nname) {
  int opset = im->g->opset, newest = onnx_opset_newest();
  if (opset > newest)
    return diag_error(im->d, "node '%s' (%s): the model imports ONNX opset %d, newer than the newest "
                      "kiln knows (%d), so the version of %s it means is unknown; expected opset %d or "
                      "older", nname, op_type, opset, newest, op_type, newest);
  int ver = onnx_op_version(op_type, opset);
  if (ver <= 0)
    return diag_error(im->d, "node '%s' (%s): %s exists from opset %d; the model imports opset %d",
                      nname, op_type, op_type, oi->since, opset);
  if (ver < oi->since)
    return diag_error(im->d, "node '%s' (%s): opset %d means %s version %d, which kiln does not "
                      "implement; expected versions %d to %d (opsets %d to %d)", nname, op_type, opset,
                      op_type, ver, oi->since, oi->upto, oi->since, next_change(op_type, oi->upto) - 1);
  if (ver > oi->upto)
    return diag_error(im->d, "node '%s' (%s): opset %d means %s version %d, which kiln does not "
                      "implement yet; expected a model whose opset gives %s version %d or older "
                      "(opsets up to %d)", nname, op_type, opset, op_type, ver, op_type, oi->upto,
                      next_change(op_type, oi->upto) - 1);
  return true;
}

/* The name of a node's first graph-valued attribute (If's then_branch,
 * Loop's body), or NULL. */
static const char *subgraph_attr(const Onnx__NodeProto *np) {
  for (size_t i = 0; i < np->n_attribute; i++)
    if (np->attribute[i]->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH ||
        np->attribute[i]->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS)
      return np->attribute[i]->name ? np->attribute[i]->name : "";
  return NULL;
}

static bool import_node(Importer *im, const Onnx__NodeProto *np, int idx) {
  Graph *g = im->g;
  const char *op_type = np->op_type ? np->op_type : "";
  const char *nname = np->name && *np->name ? np->name : arena_printf(im->a, "%s_%d", op_type, idx);
  const char *dom = np->domain ? np->domain : "";
  bool ort_rms = is_ort_rmsnorm(dom, op_type), ort_rope = is_ort_rotary(dom, op_type);
  if (ort_lstm_is(dom, op_type)) return ort_lstm_import(g, np, nname, im->d); /* compiler/frontend/onnx_ort_lstm.c */
  if (onnx_attention_handles(dom, op_type)) /* a chain of standard ops: compiler/frontend/onnx_attention.c */
    return onnx_attention_import(g, np, nname, im->d);
  if (contrib_quant_op(dom, op_type)) /* com.microsoft quantized products: compiler/frontend/onnx_contrib_quant.c */
    return contrib_quant_import(g, im->d, np, nname, value_for, im);
  if (contrib_norm_known(dom, op_type, g->opset)) /* SkipLayerNormalization, BiasGelu, ...: onnx_contrib_norm.c */
    return contrib_norm_import(g, np, nname, im->d);
  if (*dom && strcmp(dom, "ai.onnx") != 0 && !ort_rope)
    return diag_error(im->d, "node '%s' (%s): domain '%s' is not supported; expected the default "
                      "ONNX domain", nname, op_type, dom);
  int op = ort_rms ? OP_RMSNORM : op_lookup(op_type);
  if (op >= 0 && op_table[op].since == 0)
    op = -1; /* a kiln op, not an ONNX one */
  if (op < 0 && subgraph_attr(np))
    return diag_error(im->d, "node '%s' (%s): control flow is not supported (attribute '%s' is a "
                      "subgraph); expected a graph of the ops `kiln ops` lists, without If, Loop or Scan",
                      nname, op_type, subgraph_attr(np));
  if (op < 0)
    return diag_error(im->d, "node '%s' (%s): unsupported op '%s'; expected one of the ops "
                      "`kiln ops` lists", nname, op_type, op_type);
  const OpInfo *oi = &op_table[op];
  if (!ort_rms && !ort_rope && !check_op_version(im, oi, op_type, nname))
    return false;
  int nin = (int)np->n_input, nout = (int)np->n_output;
  /* trailing empty outputs are the same as absent ones */
  while (nout > 0 && (!np->output[nout - 1] || !*np->output[nout - 1]))
    nout--;
  if (nin < oi->min_in || (oi->max_in >= 0 && nin > oi->max_in))
    return diag_error(im->d, "node '%s' (%s): %d inputs; expected %s", nname, op_type, nin,
                      arity_str(im->a, oi->min_in, oi->max_in));
  if (!ort_rms && !ort_rope && !check_opset_arity(im, op_type, nname, nin))
    return false;
  if (nout < oi->min_out || (oi->max_out >= 0 && nout > oi->max_out))
    return diag_error(im->d, "node '%s' (%s): %d outputs; expected %s", nname, op_type, nout,
                      arity_str(im->a, oi->min_out, oi->max_out));
  for (int i = 0; i < oi->min_in; i++)
    if (!np->input[i] || !*np->input[i])
      return diag_error(im->d, "node '%s' (%s): input %d is empty; expected a value (only "
                        "optional inputs may be omitted)", nname, op_type, i);
  int *in = arena_alloc(im->a, sizeof(int) * (size_t)(nin + 1));
  int *out = arena_alloc(im->a, sizeof(int) * (size_t)(nout + 1));
  for (int i = 0; i < nin; i++)
    in[i] = np->input[i] && *np->input[i] ? value_for(im, np->input[i]) : -1;
  for (int i = 0; i < nout; i++) {
    if (!np->output[i] || !*np->output[i]) {
      /* unnamed optional output: a private value, named "" until the whole
       * graph is read (no ONNX name is "", so no later name can bind to it) */
      out[i] = graph_add_value(g, "");
      continue;
    }
    out[i] = value_for(im, np->output[i]);
    if (g->vals[out[i]].producer >= 0 || g->vals[out[i]].data || g->vals[out[i]].is_input)
      return diag_error(im->d, "node '%s' (%s): output '%s' is already defined; expected SSA form "
                        "(each value produced once)", nname, op_type, np->output[i]);
  }
  int ni = graph_add_node(g, op, nname, in, nin, out, nout);
  Node *n = &g->nodes[ni];
  for (size_t i = 0; i < np->n_attribute; i++)
    if (!import_attr(im, n, np->attribute[i]))
      return false;
  return check_attr_types(im, n) && (!ort_rope || ort_rotary_fixup(im, n, nname));
}

/* Names for the unnamed values ("" while importing), unlike every name the
 * model uses: "unused_<id>" for an unnamed optional output, and the name
 * of its node for a value a node reads (between the nodes a contrib op
 * became, onnx_contrib_norm.c), with a suffix if taken. */
static void name_private_values(Graph *g) {
  bool *read = arena_alloc(g->arena, (size_t)g->nvals + 1);
  for (int i = 0; i < g->nnodes; i++)
    for (int j = 0; j < g->nodes[i].nin; j++)
      if (g->nodes[i].in[j] >= 0)
        read[g->nodes[i].in[j]] = true;
  for (int vid = 0; vid < g->nvals; vid++) {
    if (*g->vals[vid].name)
      continue;
    int p = g->vals[vid].producer;
    const char *base = read[vid] && p >= 0 ? g->nodes[p].name : arena_printf(g->arena, "unused_%d", vid);
    const char *name = base;
    for (int k = 2; graph_find_value(g, name) >= 0; k++)
      name = arena_printf(g->arena, "%s_%d", base, k);
    g->vals[vid].name = name;
  }
}

static bool import_graph(Importer *im, const Onnx__GraphProto *gp) {
  Graph *g = im->g;
  if (gp->name && *gp->name)
    g->name = arena_strdup(im->a, gp->name);
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *tp = gp->initializer[i];
    const char *nm = tp->name ? tp->name : "";
    if (!*nm)
      return diag_error(im->d, "initializer %zu has no name; expected a named tensor", i);
    if (graph_find_value(g, nm) >= 0)
      return diag_error(im->d, "initializer '%s' is defined twice", nm);
    Tensor t;
    if (!decode_tensor(im, tp, &t, arena_printf(im->a, "initializer '%s'", nm)))
      return false;
    int vid = graph_add_value(g, nm); /* may move g->vals */
    Value *v = &g->vals[vid];
    v->type = t.type;
    v->data = t.data;
  }
  for (size_t i = 0; i < gp->n_input; i++) {
    const char *nm = gp->input[i]->name ? gp->input[i]->name : "";
    int vid = graph_find_value(g, nm);
    if (vid >= 0 && g->vals[vid].data) { /* a default value: kiln compiles it as the constant */
      if (!check_default_input(im, gp->input[i], &g->vals[vid]))
        return false;
      continue;
    }
    if (vid >= 0)
      return diag_error(im->d, "graph input '%s' is listed twice", nm);
    vid = graph_add_value(g, nm);
    if (!import_value_info(im, gp->input[i], &g->vals[vid]))
      return false;
    graph_add_input(g, vid);
  }
  for (size_t i = 0; i < gp->n_node; i++)
    if (!import_node(im, gp->node[i], (int)i))
      return false;
  if (gp->n_output == 0)
    return diag_error(im->d, "the graph has no outputs; expected at least one");
  for (size_t i = 0; i < gp->n_output; i++) {
    const char *nm = gp->output[i]->name ? gp->output[i]->name : "";
    int vid = graph_find_value(g, nm);
    if (vid < 0)
      return diag_error(im->d, "graph output '%s' is not produced by any node, input or "
                        "initializer", nm);
    for (int k = 0; k < g->noutputs; k++)
      if (g->outputs[k] == vid) /* the C would take two buffers for one tensor */
        return diag_error(im->d, "graph output '%s' is listed twice; expected each output once", nm);
    graph_add_output(g, vid);
  }
  name_private_values(g);
  name_onnx_values(g);
  /* every used value needs a definition */
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = &g->nodes[i];
    for (int j = 0; j < n->nin; j++) {
      Value *v = node_in(g, n, j);
      if (v && !v->data && !v->is_input && v->producer < 0)
        return diag_node(im->d, g, n, "input '%s' is not defined by any node, graph input or "
                         "initializer; expected a defined value (missing initializer?)", v->name);
    }
  }
  return graph_toposort(g, im->d);
}

static const char *dirname_of(Arena *a, const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    return ".";
  char *d = arena_strdup(a, path);
  d[slash - path] = 0;
  return *d ? d : "/";
}

static Onnx__ModelProto *unpack_model(const void *bytes, size_t len, Diag *d) {
  if (len == 0) {
    diag_error(d, "the file is empty; expected an ONNX model (a ModelProto)");
    return NULL;
  }
  Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, bytes);
  if (!m)
    diag_error(d, "not a valid ONNX protobuf (truncated or not a ModelProto)");
  return m;
}

/* Import and free m. */
static Graph *import_model(Arena *a, Onnx__ModelProto *m, const char *path, Diag *d) {
  Importer im = {.a = a, .d = d, .dir = dirname_of(a, path)};
  Graph *g = NULL;
  bool ok = true;
  if (!m->graph) {
    ok = diag_error(d, "the model has no graph; expected a ModelProto with a graph");
  } else {
    g = graph_new(a, path);
    im.g = g;
    g->opset = default_opset(m, &im, &ok);
    ok = ok && import_graph(&im, m->graph);
  }
  onnx__model_proto__free_unpacked(m, NULL);
  return ok ? g : NULL;
}

Graph *onnx_import_bytes(Arena *a, const void *bytes, size_t len, const char *path, Diag *d) {
  Onnx__ModelProto *m = unpack_model(bytes, len, d);
  return m ? import_model(a, m, path, d) : NULL;
}

/* The file's bytes are freed as soon as they are unpacked: with the
 * message and the graph's constants, a large model's weights are held
 * twice at most, never three times (MiniLM: 267 -> 180 MB peak). */
Graph *onnx_import(Arena *a, const char *path, Diag *d) {
  size_t len;
  unsigned char *bytes = read_file(path, &len, d);
  if (!bytes)
    return NULL;
  Onnx__ModelProto *m = unpack_model(bytes, len, d);
  free(bytes);
  return m ? import_model(a, m, path, d) : NULL;
}

/* ---- TensorProto files ---------------------------------------------------- */

static bool read_tensor_proto(Arena *a, const char *path, Tensor *t, const char **name, Diag *d) {
  size_t len;
  unsigned char *bytes = read_file(path, &len, d);
  if (!bytes)
    return false;
  Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, bytes);
  free(bytes);
  if (!tp)
    return diag_error(d, "not a serialized TensorProto (truncated, or another format?); expected "
                      "an ONNX TensorProto (.pb) or a .npy file");
  Importer im = {.a = a, .d = d, .dir = dirname_of(a, path)};
  bool ok = decode_tensor(&im, tp, t, "the TensorProto");
  if (name)
    *name = arena_strdup(a, tp->name ? tp->name : "");
  onnx__tensor_proto__free_unpacked(tp, NULL);
  return ok;
}

/* Errors name the file (d->file = path), as every tensor file's do. */
bool onnx_read_tensor(Arena *a, const char *path, Tensor *t, const char **name, Diag *d) {
  bool first = !d->failed;
  if (read_tensor_proto(a, path, t, name, d))
    return true;
  if (first)
    d->file = path;
  return false;
}

bool onnx_write_tensor(const char *path, const Tensor *t, const char *name, Diag *d) {
  Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
  int64_t dims[MAX_RANK];
  for (int i = 0; i < t->type.rank; i++)
    dims[i] = t->type.dims[i];
  tp.n_dims = (size_t)t->type.rank;
  tp.dims = dims;
  tp.has_data_type = 1;
  tp.data_type = (int32_t)t->type.dt;
  tp.name = (char *)(name ? name : "");
  tp.has_raw_data = 1;
  tp.raw_data.len = type_bytes(&t->type);
  tp.raw_data.data = t->data;
  size_t n = onnx__tensor_proto__get_packed_size(&tp);
  unsigned char *buf = malloc(n ? n : 1);
  if (!buf)
    return diag_error(d, "out of memory");
  onnx__tensor_proto__pack(&tp, buf);
  bool ok = write_file_atomic(path, buf, n, d);
  free(buf);
  return ok;
}
