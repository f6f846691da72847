/* onnx_export.c — kiln's IR out as an ONNX model (protobuf-c), for
 * `kiln export`: a model from any frontend can then be checked against ONNX
 * Runtime and looked at in Netron.
 *
 * The graph must hold standard ops only (decompose_kiln_ops lowers kiln's
 * own). Graph inputs become inputs with their shapes (symbolic dims as
 * dim_param), constants that no live node produces become initializers
 * (raw_data, little-endian like the host), every node keeps its name and
 * attributes and carries its origin ("MatMul_12 + Add_13", "model.lua:14")
 * as doc_string, every other typed value gets a value_info so viewers show
 * shapes; a state input (Transformer-XL memory) is a plain input whose
 * doc_string names the output it takes at the next call. A value folded to
 * a constant whose node is still in the graph is written as that node's
 * output, never also as an initializer, so each name is defined once. Names stay as they are unless two values (or two nodes)
 * share one; then the later gets a _2, _3 suffix (inputs and outputs keep
 * theirs). All messages are built in the graph's arena; nothing is freed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../frontend/onnx.h"
#include "onnx.pb-c.h"
#include "../ir/ops.h"

/* ---- unique names --------------------------------------------------------- */

/* An open-addressing set of strings (the names already given out). */
typedef struct NameSet {
  const char **slot;
  size_t cap; /* a power of two, at least twice the names it will hold */
} NameSet;

static NameSet nameset_new(Arena *a, size_t max_names) {
  size_t cap = 16;
  while (cap < 2 * max_names)
    cap *= 2;
  return (NameSet){.slot = arena_alloc(a, sizeof(char *) * cap), .cap = cap};
}

static size_t name_hash(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return (size_t)h;
}

/* Adds s; false if it was there already. */
static bool nameset_add(NameSet *ns, const char *s) {
  size_t i = name_hash(s) & (ns->cap - 1);
  for (; ns->slot[i]; i = (i + 1) & (ns->cap - 1))
    if (!strcmp(ns->slot[i], s))
      return false;
  ns->slot[i] = s;
  return true;
}

/* want, or want_2, want_3, ... : the first not yet given out. */
static const char *claim_name(Arena *a, NameSet *ns, const char *want) {
  if (nameset_add(ns, want))
    return want;
  for (int k = 2;; k++) {
    const char *s = arena_printf(a, "%s_%d", want, k);
    if (nameset_add(ns, s))
      return s;
  }
}

/* ---- the export's view of the graph ---------------------------------------- */

typedef enum { ROLE_UNUSED, ROLE_INPUT, ROLE_NODE_OUTPUT, ROLE_INITIALIZER } Role;

typedef struct Exporter {
  Graph *g;
  Arena *a;
  Diag *d;
  Role *role;           /* [nvals] how each value is defined in the file */
  bool *is_output;      /* [nvals] listed in g->outputs */
  const char **name;    /* [nvals] its name in the file */
} Exporter;

/* How a value no node defines can be defined in the file. */
static Role source_role(const Value *v) {
  return v->is_input ? ROLE_INPUT : v->data ? ROLE_INITIALIZER : ROLE_UNUSED;
}

/* Value v is read (by a node or as a graph output): it must be defined. */
static bool read_value(Exporter *ex, int v) {
  if (ex->role[v] == ROLE_UNUSED)
    ex->role[v] = source_role(gval(ex->g, v));
  return ex->role[v] != ROLE_UNUSED;
}

static bool node_roles(Exporter *ex, const Node *n) {
  Graph *g = ex->g;
  for (int j = 0; j < n->nin; j++)
    if (n->in[j] >= 0 && !read_value(ex, n->in[j]))
      return diag_node(ex->d, g, n, "export: input '%s' is not defined by an earlier node, an "
                       "input or a constant; expected a complete, sorted graph",
                       gval(g, n->in[j])->name);
  for (int j = 0; j < n->nout; j++) {
    int v = n->out[j];
    if (v < 0)
      continue;
    if (ex->role[v] == ROLE_INPUT || ex->role[v] == ROLE_NODE_OUTPUT)
      return diag_node(ex->d, g, n, "export: output '%s' is already defined; expected SSA form",
                       gval(g, v)->name);
    ex->role[v] = ROLE_NODE_OUTPUT; /* a folded value whose node stays: the node writes it */
  }
  return true;
}

/* A role for every value the file refers to, in topological order; false +
 * diag for a value read before anything defines it. */
static bool assign_roles(Exporter *ex) {
  Graph *g = ex->g;
  for (int i = 0; i < g->ninputs; i++)
    ex->role[g->inputs[i]] = ROLE_INPUT;
  for (int i = 0; i < g->nnodes; i++)
    if (!node_roles(ex, &g->nodes[i]))
      return false;
  for (int i = 0; i < g->noutputs; i++) {
    ex->is_output[g->outputs[i]] = true;
    if (!read_value(ex, g->outputs[i]))
      return diag_error(ex->d, "export: graph output '%s' is never defined; expected a complete "
                        "graph", gval(g, g->outputs[i])->name);
  }
  return true;
}

/* Inputs, then outputs, keep their names; the rest follow in id order. */
static void assign_names(Exporter *ex) {
  Graph *g = ex->g;
  NameSet ns = nameset_new(ex->a, (size_t)g->nvals);
  for (int pass = 0; pass < 3; pass++)
    for (int v = 0; v < g->nvals; v++) {
      const Value *val = gval(g, v);
      int want = ex->role[v] == ROLE_INPUT ? 0 : ex->is_output[v] ? 1 : 2;
      if (want == pass && ex->role[v] != ROLE_UNUSED && !ex->name[v])
        ex->name[v] = claim_name(ex->a, &ns, val->name && *val->name ? val->name : "v");
    }
}

/* Every node's op must be a standard one at the graph's opset. */
static bool check_ops(Exporter *ex) {
  Graph *g = ex->g;
  if (g->opset < 1 || g->opset > onnx_opset_newest())
    return diag_error(ex->d, "export: the graph imports opset %d; expected 1 to %d", g->opset,
                      onnx_opset_newest());
  for (int i = 0; i < g->nnodes; i++) {
    const Node *n = &g->nodes[i];
    int since = op_table[n->op].since;
    if (since == 0 || since > g->opset)
      return diag_node(ex->d, g, n, "export: op %s is not an ONNX op at opset %d; expected kiln "
                       "ops lowered first (decompose_kiln_ops)", node_op_name(n), g->opset);
  }
  return true;
}

static bool typed(const Value *v) { return v->type.rank >= 0 && dt_supported(v->type.dt); }

/* Graph inputs and outputs must have types (the checker requires them). */
static bool check_io_types(Exporter *ex) {
  Graph *g = ex->g;
  const int *ids[2] = {g->inputs, g->outputs};
  int counts[2] = {g->ninputs, g->noutputs};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < counts[k]; i++) {
      const Value *v = gval(g, ids[k][i]);
      if (!typed(v))
        return diag_error(ex->d, "export: graph %s '%s' has no inferred type; expected the infer "
                          "pass in --passes", k ? "output" : "input", v->name);
    }
  return true;
}

/* ---- messages --------------------------------------------------------------- */

#define NEW(ex, T, init) (arena_dup((ex)->a, &(T)init, sizeof(T)))

static Onnx__TensorProto *tensor_proto(Exporter *ex, const char *name, const Type *t, const void *data) {
  Onnx__TensorProto *tp = NEW(ex, Onnx__TensorProto, ONNX__TENSOR_PROTO__INIT);
  tp->name = (char *)name;
  tp->n_dims = (size_t)t->rank;
  tp->dims = arena_dup(ex->a, t->dims, sizeof(int64_t) * (size_t)(t->rank ? t->rank : 1));
  tp->has_data_type = 1;
  tp->data_type = (int32_t)t->dt;
  tp->has_raw_data = 1;
  tp->raw_data.len = data ? type_bytes(t) : 0; /* little-endian host, as onnx_import assumes */
  tp->raw_data.data = (uint8_t *)data;
  return tp;
}

static Onnx__TypeProto *type_proto(Exporter *ex, const Value *v) {
  Onnx__TensorShapeProto *shape = NEW(ex, Onnx__TensorShapeProto, ONNX__TENSOR_SHAPE_PROTO__INIT);
  shape->n_dim = (size_t)v->type.rank;
  shape->dim = arena_alloc(ex->a, sizeof(void *) * (size_t)(v->type.rank + 1));
  for (int i = 0; i < v->type.rank; i++) {
    Onnx__TensorShapeProto__Dimension *dim =
        NEW(ex, Onnx__TensorShapeProto__Dimension, ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT);
    if (v->type.dims[i] >= 0) {
      dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      dim->dim_value = v->type.dims[i];
    } else if (v->sym[i]) { /* symbolic, not bound yet; else left unknown */
      dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      dim->dim_param = (char *)v->sym[i];
    }
    shape->dim[i] = dim;
  }
  Onnx__TypeProto__Tensor *tt = NEW(ex, Onnx__TypeProto__Tensor, ONNX__TYPE_PROTO__TENSOR__INIT);
  tt->has_elem_type = 1;
  tt->elem_type = (int32_t)v->type.dt;
  tt->shape = shape;
  Onnx__TypeProto *tp = NEW(ex, Onnx__TypeProto, ONNX__TYPE_PROTO__INIT);
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  return tp;
}

static Onnx__ValueInfoProto *value_info(Exporter *ex, int v) {
  Onnx__ValueInfoProto *vi = NEW(ex, Onnx__ValueInfoProto, ONNX__VALUE_INFO_PROTO__INIT);
  vi->name = (char *)ex->name[v];
  vi->type = type_proto(ex, gval(ex->g, v));
  return vi;
}

static ProtobufCBinaryData bytes_of(const char *s) {
  s = s ? s : "";
  return (ProtobufCBinaryData){.len = strlen(s), .data = (uint8_t *)s};
}

/* The list kinds of an attribute: ints as they are, floats narrowed to
 * float (the proto's type), strings as bytes. */
static void attr_lists(Exporter *ex, const Attr *at, Onnx__AttributeProto *ap) {
  size_t n = (size_t)(at->n > 0 ? at->n : 0);
  if (at->kind == ATTR_INTS) {
    ap->n_ints = n;
    ap->ints = arena_dup(ex->a, at->ints ? at->ints : (int64_t[1]){0}, sizeof(int64_t) * (n ? n : 1));
  } else if (at->kind == ATTR_FLOATS) {
    ap->n_floats = n;
    ap->floats = arena_alloc(ex->a, sizeof(float) * (n + 1));
    for (size_t i = 0; i < n; i++)
      ap->floats[i] = (float)at->floats[i];
  } else {
    ap->n_strings = n;
    ap->strings = arena_alloc(ex->a, sizeof(ProtobufCBinaryData) * (n + 1));
    for (size_t i = 0; i < n; i++)
      ap->strings[i] = bytes_of(at->strings[i]);
  }
}

static Onnx__AttributeProto *attr_proto(Exporter *ex, const Attr *at) {
  static const Tensor no_tensor = {{DT_F32, 1, {0}}, NULL}; /* f32[0], for a tensor attr without one */
  static const Onnx__AttributeProto__AttributeType kinds[] = {
      [ATTR_INT] = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT,
      [ATTR_FLOAT] = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT,
      [ATTR_STRING] = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING,
      [ATTR_INTS] = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS,
      [ATTR_FLOATS] = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS,
      [ATTR_STRINGS] = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS,
      [ATTR_TENSOR] = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR};
  Onnx__AttributeProto *ap = NEW(ex, Onnx__AttributeProto, ONNX__ATTRIBUTE_PROTO__INIT);
  ap->name = (char *)at->name;
  ap->has_type = 1;
  ap->type = kinds[at->kind];
  switch (at->kind) {
  case ATTR_INT: ap->has_i = 1, ap->i = at->i; break;
  case ATTR_FLOAT: ap->has_f = 1, ap->f = (float)at->f; break;
  case ATTR_STRING: ap->has_s = 1, ap->s = bytes_of(at->s); break;
  case ATTR_TENSOR: ap->t = tensor_proto(ex, "", &(at->t ? at->t : &no_tensor)->type, at->t ? at->t->data : NULL); break;
  default: attr_lists(ex, at, ap); break;
  }
  return ap;
}

/* Names of value ids v[0..n), absent ones (-1) as "", trailing ones dropped. */
static char **value_names(Exporter *ex, const int *v, int n, size_t *count) {
  while (n > 0 && v[n - 1] < 0)
    n--;
  char **names = arena_alloc(ex->a, sizeof(char *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++)
    names[i] = (char *)(v[i] >= 0 ? ex->name[v[i]] : "");
  *count = (size_t)n;
  return names;
}

static Onnx__NodeProto *node_proto(Exporter *ex, const Node *n, NameSet *node_names) {
  Onnx__NodeProto *np = NEW(ex, Onnx__NodeProto, ONNX__NODE_PROTO__INIT);
  np->name = (char *)claim_name(ex->a, node_names, n->name && *n->name ? n->name : node_op_name(n));
  np->op_type = (char *)node_op_name(n);
  np->domain = "";
  np->input = value_names(ex, n->in, n->nin, &np->n_input);
  np->output = value_names(ex, n->out, n->nout, &np->n_output);
  np->n_attribute = (size_t)n->nattr;
  np->attribute = arena_alloc(ex->a, sizeof(void *) * (size_t)(n->nattr + 1));
  for (int i = 0; i < n->nattr; i++)
    np->attribute[i] = attr_proto(ex, &n->attrs[i]);
  if (n->origin && *n->origin && (!n->name || strcmp(n->origin, n->name)))
    np->doc_string = (char *)n->origin;
  return np;
}

/* ---- the graph and the model -------------------------------------------------- */

/* Initializers and value_info, each in value-id order. */
static void add_values(Exporter *ex, Onnx__GraphProto *gp) {
  Graph *g = ex->g;
  gp->initializer = arena_alloc(ex->a, sizeof(void *) * (size_t)(g->nvals + 1));
  gp->value_info = arena_alloc(ex->a, sizeof(void *) * (size_t)(g->nvals + 1));
  for (int v = 0; v < g->nvals; v++) {
    const Value *val = gval(g, v);
    if (ex->role[v] == ROLE_INITIALIZER)
      gp->initializer[gp->n_initializer++] = tensor_proto(ex, ex->name[v], &val->type, val->data);
    else if (ex->role[v] == ROLE_NODE_OUTPUT && !ex->is_output[v] && typed(val))
      gp->value_info[gp->n_value_info++] = value_info(ex, v);
  }
}

static Onnx__GraphProto *graph_proto(Exporter *ex) {
  Graph *g = ex->g;
  Onnx__GraphProto *gp = NEW(ex, Onnx__GraphProto, ONNX__GRAPH_PROTO__INIT);
  gp->name = (char *)(g->name && *g->name ? g->name : "kiln");
  gp->n_input = (size_t)g->ninputs;
  gp->input = arena_alloc(ex->a, sizeof(void *) * (size_t)(g->ninputs + 1));
  for (int i = 0; i < g->ninputs; i++) {
    gp->input[i] = value_info(ex, g->inputs[i]);
    const Value *v = gval(g, g->inputs[i]);
    if (v->is_state && v->state_next >= 0 && v->state_next < g->noutputs) /* ONNX has no state */
      gp->input[i]->doc_string = arena_printf(ex->a, "state: the previous call's output '%s'",
                                              ex->name[g->outputs[v->state_next]]);
  }
  gp->n_output = (size_t)g->noutputs;
  gp->output = arena_alloc(ex->a, sizeof(void *) * (size_t)(g->noutputs + 1));
  for (int i = 0; i < g->noutputs; i++)
    gp->output[i] = value_info(ex, g->outputs[i]);
  NameSet node_names = nameset_new(ex->a, (size_t)g->nnodes);
  gp->n_node = (size_t)g->nnodes;
  gp->node = arena_alloc(ex->a, sizeof(void *) * (size_t)(g->nnodes + 1));
  for (int i = 0; i < g->nnodes; i++)
    gp->node[i] = node_proto(ex, &g->nodes[i], &node_names);
  add_values(ex, gp);
  return gp;
}

/* The IR version of the ONNX release that brought each opset (ONNX's
 * docs/Versioning.md), but at least 4: from IR 4 on, initializers need not
 * be repeated as graph inputs. */
static int64_t ir_version_for(int opset) {
  static const int64_t by_opset[26] = {[10] = 5, [11] = 6, [12] = 7, [13] = 7, [14] = 7, [15] = 8,
                                       [16] = 8, [17] = 8, [18] = 8, [19] = 9, [20] = 9, [21] = 10,
                                       [22] = 10, [23] = 11, [24] = 12, [25] = 13};
  return opset < 10 || opset >= KILN_COUNT(by_opset) ? 4 : by_opset[opset];
}

static Onnx__ModelProto *model_proto(Exporter *ex) {
  Onnx__OperatorSetIdProto *opset = NEW(ex, Onnx__OperatorSetIdProto, ONNX__OPERATOR_SET_ID_PROTO__INIT);
  opset->domain = "";
  opset->has_version = 1;
  opset->version = ex->g->opset;
  Onnx__ModelProto *m = NEW(ex, Onnx__ModelProto, ONNX__MODEL_PROTO__INIT);
  m->has_ir_version = 1;
  m->ir_version = ir_version_for(ex->g->opset);
  m->n_opset_import = 1;
  m->opset_import = arena_dup(ex->a, &opset, sizeof opset);
  m->producer_name = "kiln";
  m->producer_version = KILN_VERSION;
  if (ex->g->file)
    m->doc_string = arena_printf(ex->a, "exported by kiln from %s", ex->g->file);
  m->graph = graph_proto(ex);
  return m;
}

static bool write_model(Exporter *ex, const Onnx__ModelProto *m, const char *path) {
  size_t n = onnx__model_proto__get_packed_size(m);
  if (n > (size_t)INT32_MAX)
    return diag_error(ex->d, "export: the model is %zu bytes; expected at most 2 GiB (ONNX files "
                      "without external data cannot be larger)", n);
  unsigned char *buf = malloc(n ? n : 1);
  if (!buf)
    return diag_error(ex->d, "export: out of memory for a %zu-byte model", n);
  onnx__model_proto__pack(m, buf);
  bool ok = write_file_atomic(path, buf, n, ex->d);
  free(buf);
  return ok;
}

bool onnx_export(Graph *g, const char *path, Diag *d) {
  Exporter ex = {.g = g, .a = g->arena, .d = d};
  ex.role = arena_alloc(g->arena, sizeof(Role) * (size_t)(g->nvals + 1));
  ex.is_output = arena_alloc(g->arena, (size_t)g->nvals + 1);
  ex.name = arena_alloc(g->arena, sizeof(char *) * (size_t)(g->nvals + 1));
  if (!check_ops(&ex) || !check_io_types(&ex) || !assign_roles(&ex))
    return false;
  assign_names(&ex);
  return write_model(&ex, model_proto(&ex), path);
}
