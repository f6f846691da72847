/* info.c — `kiln info`: the model at a glance (inputs, outputs, parameters,
 * FLOPs per op type, node counts before and after the pipeline, the
 * workspace and what is live at its peak, generated-code size), as aligned
 * text or JSON, and the workspace as an SVG picture kiln draws itself. */
#include "info.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../emit/emit_api.h"
#include "../ir/ops.h"
#include "../emit/weights_blob.h"
#include "../lua/lua_frontend.h"

/* ---- FLOPs ---------------------------------------------------------------- */

/* Each op's count is a fact of its row in ops.def (its flops column). */
int64_t node_flops(const Graph *g, const Node *n) { return op_table[n->op].flops(g, n); }

/* ---- workspace peak -------------------------------------------------------- */

typedef struct Peak {
  int step;
  int64_t bytes;
} Peak;

typedef struct Span {
  int64_t lo, hi; /* workspace bytes [lo, hi) */
} Span;

static int by_start(const void *pa, const void *pb) {
  const Span *a = pa, *b = pb;
  return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Bytes covered by the n spans (sorted here): a value written in place over
 * another shares its bytes, so the pair counts once, as the planner placed
 * it. */
static int64_t union_bytes(Span *sp, int n) {
  qsort(sp, (size_t)n, sizeof *sp, by_start);
  int64_t total = 0, end = 0;
  for (int i = 0; i < n; i++) {
    int64_t lo = sp[i].lo > end ? sp[i].lo : end;
    if (sp[i].hi > lo)
      total += sp[i].hi - lo;
    end = sp[i].hi > end ? sp[i].hi : end;
  }
  return total;
}

static Peak find_peak(const Graph *g) {
  Peak pk = {-1, 0};
  Span *sp = malloc(sizeof(Span) * (size_t)(g->nvals + 1));
  KILN_ASSERT(sp);
  for (int s = 0; s < g->nnodes; s++) {
    int n = 0;
    for (int v = 0; v < g->nvals; v++)
      if (g->vals[v].ws_offset >= 0 && g->vals[v].live_first <= s && s <= g->vals[v].live_last)
        sp[n++] = (Span){g->vals[v].ws_offset, g->vals[v].ws_offset + (int64_t)type_bytes(&g->vals[v].type)};
    int64_t live = union_bytes(sp, n);
    if (live > pk.bytes)
      pk = (Peak){s, live};
  }
  free(sp);
  return pk;
}

/* ---- the report ------------------------------------------------------------ */

typedef struct OpCount {
  int before, after;
  int64_t flops;
} OpCount;

static void count_ops(const Graph *g, OpCount *c, bool after) {
  for (int i = 0; i < g->nnodes; i++) {
    if (after) {
      c[g->nodes[i].op].after++;
      c[g->nodes[i].op].flops += node_flops(g, &g->nodes[i]);
    } else {
      c[g->nodes[i].op].before++;
    }
  }
}

static void json_str(Buf *b, const char *s) {
  buf_puts(b, "\"");
  for (const char *p = s; *p; p++) {
    if (*p == '"' || *p == '\\')
      buf_printf(b, "\\%c", *p);
    else if ((unsigned char)*p < 0x20)
      buf_printf(b, "\\u%04x", (unsigned char)*p);
    else
      buf_put(b, p, 1);
  }
  buf_puts(b, "\"");
}

static void io_list(Buf *b, const Graph *g, const int *ids, int n, bool json) {
  char ts[160];
  for (int i = 0; i < n; i++) {
    const Value *v = &g->vals[ids[i]];
    if (json) {
      buf_puts(b, i ? ", {\"name\": " : "{\"name\": ");
      json_str(b, v->name);
      buf_printf(b, ", \"type\": \"%s\"}", type_str(&v->type, ts, sizeof ts));
    } else {
      buf_printf(b, "%s%-24s %s\n", i ? "          " : "", v->name, type_str(&v->type, ts, sizeof ts));
    }
  }
  if (!json && n == 0)
    buf_puts(b, "(none)\n");
}

bool info_report(const Graph *before, Graph *g, const InfoOptions *o, Diag *d) {
  OpCount *c = calloc(OP_COUNT_, sizeof *c);
  count_ops(before, c, false);
  count_ops(g, c, true);
  int64_t params = 0, pbytes = 0, nconst = 0, total = 0;
  bool *seen = calloc((size_t)g->nvals + 1, 1);
  for (int i = 0; i < g->nnodes; i++)
    for (int j = 0; j < g->nodes[i].nin; j++) {
      int v = g->nodes[i].in[j];
      if (v >= 0 && g->vals[v].data && !seen[v]) {
        seen[v] = true;
        nconst++;
        params += type_numel(&g->vals[v].type);
        pbytes += (int64_t)type_bytes(&g->vals[v].type);
      }
    }
  free(seen);
  for (int k = 0; k < OP_COUNT_; k++)
    total += c[k].flops;
  Peak pk = find_peak(g);
  Buf cbuf = {0}, hbuf = {0};
  EmitOptions eo = {.prefix = "model", .source = g->file, .header = "model.h"};
  WeightsBlob blob = {0};
  bool emitted = emit_c(g, &eo, &cbuf, &hbuf, &blob, d);
  size_t blob_bytes = blob.size;
  blob_free(&blob);
  Buf b = {0};
  char ts[160];
  if (o->json) {
    buf_puts(&b, o->gguf_part ? o->gguf_part : "{\n");
    buf_puts(&b, "  \"model\": ");
    json_str(&b, g->file ? g->file : "");
    buf_printf(&b, ",\n  \"opset\": %d,\n  \"inputs\": [", g->opset);
    io_list(&b, g, g->inputs, g->ninputs, true);
    buf_puts(&b, "],\n  \"outputs\": [");
    io_list(&b, g, g->outputs, g->noutputs, true);
    buf_printf(&b, "],\n  \"parameters\": {\"count\": %lld, \"bytes\": %lld, \"constants\": %lld},\n",
               (long long)params, (long long)pbytes, (long long)nconst);
    if (o->quant) {
      const QuantReport *q = o->quant;
      buf_printf(&b, "  \"quantized\": {\"scheme\": \"%s\", \"f32_bytes\": %lld, \"int8_bytes\": %lld, "
                     "\"kept_f32\": %d, ", q->mode == QUANT_W8A8 ? "w8a8" : "int8",
                 (long long)q->f32_bytes, (long long)q->q_bytes, q->kept);
      if (q->mode == QUANT_W8A8) /* Linears with u8 inputs, and those whose K keeps them f32 */
        buf_printf(&b, "\"act_u8\": %d, \"act_f32\": %d, ", q->act_u8, q->act_f32);
      buf_puts(&b, "\"weights\": [");
      for (int i = 0; i < q->n; i++) {
        const QuantLayer *l = &q->layers[i];
        double rms = l->rms ? l->rms : 1;
        buf_puts(&b, i ? ", {\"weight\": " : "{\"weight\": ");
        json_str(&b, l->weight);
        buf_puts(&b, ", \"node\": ");
        json_str(&b, l->node);
        buf_printf(&b, ", \"op\": \"%s\", \"type\": \"%s\", \"scale_per\": \"%s\", \"rms\": %.9g, "
                       "\"max_err_rel\": %.9g, \"rms_err_rel\": %.9g}", l->op, type_str(&l->type, ts, sizeof ts),
                   l->per_row ? "row" : "column", l->rms, l->err_max / rms, l->err_rms / rms);
      }
      buf_puts(&b, "]},\n");
    }
    buf_printf(&b, "  \"flops\": {\"total\": %lld", (long long)total);
    for (int k = 0; k < OP_COUNT_; k++)
      if (c[k].flops)
        buf_printf(&b, ", \"%s\": %lld", op_table[k].name, (long long)c[k].flops);
    buf_puts(&b, "},\n  \"nodes\": {");
    bool first = true;
    for (int k = 0; k < OP_COUNT_; k++)
      if (c[k].before || c[k].after) {
        buf_printf(&b, "%s\"%s\": [%d, %d]", first ? "" : ", ", op_table[k].name, c[k].before, c[k].after);
        first = false;
      }
    buf_printf(&b, "},\n  \"node_total\": [%d, %d],\n", before->nnodes, g->nnodes);
    buf_printf(&b, "  \"workspace\": {\"bytes\": %lld, \"peak_bytes\": %lld, \"peak_step\": %d, \"live_at_peak\": [",
               (long long)g->ws_size, (long long)pk.bytes, pk.step);
    first = true;
    for (int v = 0; v < g->nvals && pk.step >= 0; v++) {
      const Value *val = &g->vals[v];
      if (val->ws_offset < 0 || val->live_first > pk.step || val->live_last < pk.step)
        continue;
      buf_puts(&b, first ? "{\"name\": " : ", {\"name\": ");
      json_str(&b, val->name);
      buf_printf(&b, ", \"type\": \"%s\", \"bytes\": %zu, \"offset\": %lld}",
                 type_str(&val->type, ts, sizeof ts), type_bytes(&val->type), (long long)val->ws_offset);
      first = false;
    }
    buf_printf(&b, "]},\n  \"code\": {\"c_bytes\": %zu, \"h_bytes\": %zu, \"weights_blob_bytes\": %zu}\n}\n",
               cbuf.len, hbuf.len, blob_bytes);
  } else {
    buf_puts(&b, o->gguf_part ? o->gguf_part : "");
    buf_printf(&b, "model     %s (graph %s, opset %d)\n", g->file ? g->file : "?", g->name, g->opset);
    buf_puts(&b, "inputs    ");
    io_list(&b, g, g->inputs, g->ninputs, false);
    buf_puts(&b, "outputs   ");
    io_list(&b, g, g->outputs, g->noutputs, false);
    buf_printf(&b, "params    %lld values, %lld bytes, in %lld constants\n", (long long)params,
               (long long)pbytes, (long long)nconst);
    if (o->quant)
      quant_report_print(&b, o->quant);
    buf_printf(&b, "flops     %lld total (%.3f GFLOP)\n", (long long)total, total / 1e9);
    for (int k = 0; k < OP_COUNT_; k++)
      if (c[k].flops)
        buf_printf(&b, "          %-20s %12lld  %5.1f%%\n", op_table[k].name, (long long)c[k].flops,
                   100.0 * (double)c[k].flops / (double)(total ? total : 1));
    buf_printf(&b, "nodes     %-20s %8s %8s\n", "op", "imported", "compiled");
    for (int k = 0; k < OP_COUNT_; k++)
      if (c[k].before || c[k].after)
        buf_printf(&b, "          %-20s %8d %8d\n", op_table[k].name, c[k].before, c[k].after);
    buf_printf(&b, "          %-20s %8d %8d\n", "total", before->nnodes, g->nnodes);
    buf_printf(&b, "workspace %lld bytes; peak of live tensors %lld bytes", (long long)g->ws_size,
               (long long)pk.bytes);
    if (pk.step >= 0) {
      buf_printf(&b, " at step %d (%s, %s):\n", pk.step, g->nodes[pk.step].name,
                 node_op_name(&g->nodes[pk.step]));
      for (int v = 0; v < g->nvals; v++) {
        const Value *val = &g->vals[v];
        if (val->ws_offset < 0 || val->live_first > pk.step || val->live_last < pk.step)
          continue;
        buf_printf(&b, "          %-16s %10zu bytes at %-8lld %s\n", type_str(&val->type, ts, sizeof ts),
                   type_bytes(&val->type), (long long)val->ws_offset, val->name);
      }
    } else {
      buf_puts(&b, "\n");
    }
    if (emitted)
      buf_printf(&b, "code      %zu bytes of C (model.c), %zu bytes of header%s\n", cbuf.len, hbuf.len,
                 blob_bytes ? arena_printf(g->arena, ", %zu bytes of weights blob", blob_bytes) : "");
  }
  fputs(b.s, stdout);
  buf_free(&b);
  buf_free(&cbuf);
  buf_free(&hbuf);
  free(c);
  return emitted;
}

/* ---- a GGUF file at a glance --------------------------------------------------- */

/* s (len bytes, maybe with NULs or control bytes) as a quoted string, at
 * most max bytes of it: JSON's escapes, which also read well as text. */
static void quoted(Buf *b, const char *s, size_t len, size_t max) {
  buf_puts(b, "\"");
  for (size_t i = 0; i < len && i < max; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"' || ch == '\\')
      buf_printf(b, "\\%c", ch);
    else if (ch == '\n')
      buf_puts(b, "\\n");
    else if (ch < 0x20 || ch == 0x7f)
      buf_printf(b, "\\u%04x", ch);
    else
      buf_put(b, s + i, 1);
  }
  buf_puts(b, len > max ? "...\"" : "\"");
}

/* One metadata value: numbers exact (%.9g for f32 and f64 alike would
 * round f64s: %.17g), strings quoted, arrays as their first items; JSON
 * syntax either way (an array over 8 items ends with "..." in text, is
 * cut to 8 in JSON). */
static void gguf_value_put(Buf *b, const GgufValue *v, bool json) {
  int64_t i;
  double f;
  size_t len;
  const char *str = gguf_value_string(v, &len);
  if (str)
    quoted(b, str, len, json ? (size_t)-1 : 80);
  else if (v->type == GGUF_BOOL)
    buf_puts(b, v->u ? "true" : "false");
  else if (v->type == GGUF_F32)
    buf_printf(b, "%.9g", v->f);
  else if (v->type == GGUF_F64)
    buf_printf(b, "%.17g", v->f);
  else if (gguf_value_int(v, &i))
    buf_printf(b, "%lld", (long long)i);
  else if (v->type != GGUF_ARRAY && gguf_value_float(v, &f))
    buf_printf(b, "%.17g", f);
  else if (v->type == GGUF_ARRAY) {
    buf_puts(b, "[");
    for (uint64_t k = 0; k < v->arr.n && k < 8; k++) {
      GgufValue item;
      gguf_array_value(v, k, &item);
      buf_puts(b, k ? ", " : "");
      gguf_value_put(b, &item, json);
    }
    buf_puts(b, v->arr.n > 8 && !json ? ", ...]" : "]");
    if (!json)
      buf_printf(b, " (%llu %s)", (unsigned long long)v->arr.n, gguf_type_name(v->arr.elem));
  }
}

/* Token id key's value and its text: ' 1 "<|im_start|>"', or " none". */
static void special_token(Buf *b, const Gguf *g, const char *key, bool json) {
  int64_t id;
  if (!gguf_kv_int(gguf_kv(g, key), &id)) {
    buf_puts(b, json ? "null" : " none");
    return;
  }
  const GgufKV *toks = gguf_kv(g, "tokenizer.ggml.tokens");
  size_t len;
  const char *text = toks && id >= 0 ? gguf_array_string(&toks->v, (uint64_t)id, &len) : NULL;
  if (json) {
    buf_printf(b, "{\"id\": %lld, \"text\": ", (long long)id);
    text ? quoted(b, text, len, (size_t)-1) : buf_puts(b, "null");
    buf_puts(b, "}");
  } else {
    buf_printf(b, " %lld ", (long long)id);
    text ? quoted(b, text, len, 40) : buf_puts(b, "(no such token)");
  }
}

bool info_gguf(Buf *out, Arena *a, const char *path, const InfoOptions *o, bool *has_description, Diag *d) {
  Gguf gg, *g = &gg;
  if (!gguf_load(a, path, g, d))
    return false;
  bool json = o->json;
  size_t alen = 0;
  const char *arch = gguf_kv_string(gguf_kv(g, "general.architecture"), &alen);
  if (arch && !dsl_arch_name_ok(arch, alen))
    arch = "(malformed)"; /* and no hyperparameters: no key starts with it */
  const char *name = gguf_kv_string(gguf_kv(g, "general.name"), NULL);
  const char *described = arch && dsl_arch_text(arch) ? arena_printf(a, "arch/%s.lua", arch) : NULL;
  *has_description = described != NULL;
  Buf b = {0};
  /* the tensors: bytes, and count per ggml type in order of first use */
  const char *types[64];
  int counts[64], ntypes = 0;
  int64_t bytes = 0;
  for (int i = 0; i < g->n; i++) {
    int k = 0;
    while (k < ntypes && strcmp(types[k], g->t[i].type_name))
      k++;
    if (k == ntypes && ntypes < 64)
      types[ntypes] = g->t[i].type_name, counts[ntypes++] = 0;
    if (k < ntypes)
      counts[k]++;
    bytes += (int64_t)g->t[i].file_bytes;
  }
  size_t prefix = arch ? strlen(arch) + 1 : 0;
  const GgufKV *toks = gguf_kv(g, "tokenizer.ggml.tokens");
  uint64_t ntok = 0;
  gguf_kv_array(toks, NULL, &ntok);
  const char *tmodel = gguf_kv_string(gguf_kv(g, "tokenizer.ggml.model"), NULL);
  const char *tpre = gguf_kv_string(gguf_kv(g, "tokenizer.ggml.pre"), NULL);
  size_t tlen = 0;
  bool chat = gguf_kv_string(gguf_kv(g, "tokenizer.chat_template"), &tlen) != NULL;
  if (json) {
    buf_puts(&b, "{\n  \"gguf\": {\"file\": ");
    json_str(&b, path);
    buf_printf(&b, ", \"version\": %u, \"metadata_keys\": %d, \"architecture\": ", g->version, g->nkv);
    arch ? json_str(&b, arch) : buf_puts(&b, "null");
    buf_puts(&b, ", \"name\": ");
    name ? json_str(&b, name) : buf_puts(&b, "null");
    buf_puts(&b, ", \"description\": ");
    described ? json_str(&b, described) : buf_puts(&b, "null");
    buf_puts(&b, ",\n    \"hyperparameters\": {");
    bool first = true;
    for (int i = 0; i < g->nkv && arch; i++)
      if (!strncmp(g->kv[i].key, arch, prefix - 1) && g->kv[i].key[prefix - 1] == '.') {
        buf_puts(&b, first ? "" : ", ");
        json_str(&b, g->kv[i].key + prefix);
        buf_puts(&b, ": ");
        gguf_value_put(&b, &g->kv[i].v, true);
        first = false;
      }
    buf_printf(&b, "},\n    \"tensors\": {\"count\": %d, \"bytes\": %lld, \"types\": {", g->n, (long long)bytes);
    for (int k = 0; k < ntypes; k++)
      buf_printf(&b, "%s\"%s\": %d", k ? ", " : "", types[k], counts[k]);
    buf_puts(&b, "}");
    if (o->verbose) {
      buf_puts(&b, ", \"list\": [");
      for (int i = 0; i < g->n; i++) {
        buf_puts(&b, i ? ", {\"name\": " : "{\"name\": ");
        json_str(&b, g->t[i].name);
        buf_printf(&b, ", \"type\": \"%s\", \"shape\": [", g->t[i].type_name);
        for (int k = 0; k < g->t[i].type.rank; k++)
          buf_printf(&b, "%s%lld", k ? ", " : "", (long long)g->t[i].type.dims[k]);
        buf_printf(&b, "], \"bytes\": %zu}", g->t[i].file_bytes);
      }
      buf_puts(&b, "]");
    }
    buf_puts(&b, "},\n    \"tokenizer\": {\"model\": ");
    tmodel ? json_str(&b, tmodel) : buf_puts(&b, "null");
    buf_puts(&b, ", \"pre\": ");
    tpre ? json_str(&b, tpre) : buf_puts(&b, "null");
    buf_printf(&b, ", \"tokens\": %llu, \"bos\": ", (unsigned long long)ntok);
    special_token(&b, g, "tokenizer.ggml.bos_token_id", true);
    buf_puts(&b, ", \"eos\": ");
    special_token(&b, g, "tokenizer.ggml.eos_token_id", true);
    buf_printf(&b, ", \"chat_template\": %s}}", chat ? "true" : "false");
  } else {
    buf_printf(&b, "gguf      %s: GGUF v%u, %d metadata keys, %d tensors\n", path, g->version, g->nkv, g->n);
    buf_printf(&b, "arch      %s", arch ? arch : "none (no general.architecture)");
    if (name) {
      buf_puts(&b, ", ");
      quoted(&b, name, strlen(name), 80);
    }
    if (described)
      buf_printf(&b, "; kiln's description: %s\n", described);
    else
      buf_printf(&b, "; kiln has no description for it (it has: %s)\n", dsl_arch_names(a));
    bool first = true;
    int w = 0;
    for (int i = 0; i < g->nkv && arch; i++)
      if (!strncmp(g->kv[i].key, arch, prefix - 1) && g->kv[i].key[prefix - 1] == '.' && (int)strlen(g->kv[i].key) > w)
        w = (int)strlen(g->kv[i].key);
    for (int i = 0; i < g->nkv && arch; i++)
      if (!strncmp(g->kv[i].key, arch, prefix - 1) && g->kv[i].key[prefix - 1] == '.') {
        buf_printf(&b, "%-10s%-*s ", first ? "hparams" : "", w, g->kv[i].key);
        gguf_value_put(&b, &g->kv[i].v, false);
        buf_puts(&b, "\n");
        first = false;
      }
    buf_printf(&b, "tensors   %d, %.2f MB:", g->n, (double)bytes / 1e6);
    for (int k = 0; k < ntypes; k++)
      buf_printf(&b, "%s %s %d", k ? "," : "", types[k], counts[k]);
    buf_puts(&b, o->verbose || !g->n ? "\n" : " (-v: each tensor)\n");
    for (int i = 0; i < g->n && o->verbose; i++) {
      char ts[160];
      Type t = g->t[i].type; /* the shape param{} binds, row-major */
      t.dt = DT_F32;
      const char *shape = strchr(type_str(&t, ts, sizeof ts), '[');
      buf_printf(&b, "          %-32s %-6s %-16s %zu bytes\n", g->t[i].name, g->t[i].type_name,
                 shape ? shape : "[]", g->t[i].file_bytes);
    }
    buf_printf(&b, "tokenizer %s", tmodel ? tmodel : "none (no tokenizer.ggml.model)");
    if (tpre)
      buf_printf(&b, " (pre %s)", tpre);
    buf_printf(&b, ", %llu tokens; BOS", (unsigned long long)ntok);
    special_token(&b, g, "tokenizer.ggml.bos_token_id", false);
    buf_puts(&b, ", EOS");
    special_token(&b, g, "tokenizer.ggml.eos_token_id", false);
    buf_printf(&b, "; chat template: %s\n", chat ? arena_printf(a, "yes, %zu bytes", tlen) : "none");
  }
  if (json && !described)
    buf_puts(&b, "\n}\n"); /* the whole report: kiln cannot compile the file */
  else if (json)
    buf_puts(&b, ",\n");
  else if (described)
    buf_puts(&b, "\n");
  buf_puts(out, b.s);
  buf_free(&b);
  return true;
}

/* ---- the workspace picture --------------------------------------------------- */

void info_memory_svg(Buf *b, const Graph *g) {
  const int W = 960, H = 540, L = 90, R = 20, T = 40, B = 50;
  int steps = g->nnodes > 0 ? g->nnodes : 1;
  double ws = g->ws_size > 0 ? (double)g->ws_size : 1;
  double sx = (double)(W - L - R) / steps, sy = (double)(H - T - B) / ws;
  Peak pk = find_peak(g);
  buf_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H, W, H);
  buf_printf(b, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
  buf_printf(b, "<text x=\"%d\" y=\"22\" font-size=\"15\">workspace of %s: %lld bytes, %d steps "
                "(x: execution step, y: offset in the arena)</text>\n", L, g->name,
             (long long)g->ws_size, g->nnodes);
  buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n",
             L, T, W - L - R, H - T - B);
  for (int v = 0; v < g->nvals; v++) {
    const Value *val = &g->vals[v];
    if (val->ws_offset < 0)
      continue;
    double x = L + val->live_first * sx, w = (val->live_last - val->live_first + 1) * sx;
    double y = T + (double)val->ws_offset * sy, h = (double)type_bytes(&val->type) * sy;
    unsigned hue = 0;
    for (const char *p = val->name; *p; p++)
      hue = hue * 31 + (unsigned char)*p;
    char ts[160];
    buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"hsl(%u,60%%,70%%)\" "
                  "stroke=\"#333\" stroke-width=\"0.5\"><title>", x, y, w, h < 0.5 ? 0.5 : h, hue % 360);
    for (const char *p = val->name; *p; p++) /* XML-escape the name */
      buf_puts(b, *p == '<' ? "&lt;" : *p == '>' ? "&gt;" : *p == '&' ? "&amp;" : *p == '"' ? "&quot;"
                  : (char[2]){*p, 0});
    buf_printf(b, " %s, %zu bytes at %lld, steps %d-%d</title></rect>\n",
               type_str(&val->type, ts, sizeof ts), type_bytes(&val->type), (long long)val->ws_offset,
               val->live_first, val->live_last);
  }
  if (pk.step >= 0) {
    double x = L + (pk.step + 0.5) * sx;
    buf_printf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"red\" stroke-width=\"2\" "
                  "stroke-dasharray=\"6,3\"/>\n", x, T, x, H - B);
    buf_printf(b, "<text x=\"%.1f\" y=\"%d\" fill=\"red\">peak: %lld bytes live at step %d</text>\n",
               x + 4 > W - 260 ? W - 260.0 : x + 4, T - 4 + 0, (long long)pk.bytes, pk.step);
  }
  buf_printf(b, "<text x=\"%d\" y=\"%d\">0</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">step %d</text>\n",
             L, H - B + 16, W - R, H - B + 16, steps - 1);
  buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text><text x=\"%d\" y=\"%d\" "
                "text-anchor=\"end\">%lld B</text>\n", L - 4, T + 10, L - 4, H - B, (long long)g->ws_size);
  buf_puts(b, "</svg>\n");
}
