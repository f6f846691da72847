/* emit_decoder.c — a generative model's entry points in the generated C
 * (Graph.decoder, issue 10; DESIGN.md "Generative models"): one static
 * forward function per entry (NAME_prefill_forward, NAME_step_forward)
 * over the shared workspace, weights and state; the public wrappers that
 * check a request against the cache, pass the position and keep the length
 * in the state struct; and the header that documents them. emit_file.c
 * writes the kernels, weights and names and calls in here. */
#include <string.h>

#include "emit.h"
#include "emit_api.h"
#include "emit_decoder.h"
#include "emit_text.h"
#include "emit_weights.h"
#include "emit_forward.h"
#include "emit_kernel.h"
#include "../ir/ops.h"
#include "weights_blob.h"

/* Is graph input/output i (the inputs-then-outputs list) entry k's? */
static bool entry_io(const Graph *g, int k, int i) {
  const DecoderEntry *en = &g->decoder->entries[k];
  if (i >= g->ninputs)
    return i - g->ninputs == en->logits_out;
  int v = g->inputs[i];
  for (int j = 0; j < en->ninputs; j++)
    if (v == en->inputs[j])
      return true;
  return en->tokens && (v == en->tokens_vid || v == en->start_vid || v == en->count_vid);
}

/* The C name (of pn, the graph inputs' names) of the encode entry's j-th input. */
static const char *encode_input(const Graph *g, const char **pn, const DecoderEntry *en, int j) {
  int i = 0;
  while (g->inputs[i] != en->inputs[j]) /* an entry's inputs are graph inputs */
    i++;
  return pn[i];
}

/* sep and each of the encode entry's input names ("src" -> ", src"). */
static void put_encode_names(Buf *b, const Graph *g, const char **pn, const DecoderEntry *en, const char *sep) {
  for (int j = 0; j < en->ninputs; j++)
    buf_printf(b, "%s%s", sep, encode_input(g, pn, en, j));
}

/* ", const int64_t src[1][16]" for each of the encode entry's inputs. */
static void put_encode_params(Buf *b, const Graph *g, const char **pn, const DecoderEntry *en) {
  for (int j = 0; j < en->ninputs; j++) {
    const Value *v = &g->vals[en->inputs[j]];
    buf_printf(b, ", const %s %s%s", dt_ctype(v->type.dt), encode_input(g, pn, en, j),
               emit_array_dims(g->arena, &v->type));
  }
}

/* static void NAME_ENTRY_forward(ws, [weights,] state, the entry's tensors) */
static void put_entry_signature(Buf *b, Emit *e, const char **pn, int k) {
  Graph *g = e->g;
  buf_printf(b, "static void %s_%s_forward(unsigned char *restrict ws,", e->prefix, g->decoder->entries[k].name);
  if (e->blob)
    buf_printf(b, "\n    const struct %s_weights *restrict weights,", e->prefix);
  buf_printf(b, " %s_state *restrict state", e->prefix);
  for (int i = 0; i < g->ninputs + g->noutputs; i++) {
    bool in = i < g->ninputs;
    const Value *v = &g->vals[in ? g->inputs[i] : g->outputs[i - g->ninputs]];
    if (entry_io(g, k, i))
      buf_printf(b, ",\n    %s%s %s%s", in ? "const " : "", dt_ctype(v->type.dt), pn[i],
                 emit_array_dims(g->arena, &v->type));
  }
  buf_puts(b, ")");
}

void emit_entry_forward(Buf *c, Emit *e, const char **pn, int k, Buf *body) {
  Graph *g = e->g;
  Arena *a = g->arena;
  const DecoderEntry *en = &g->decoder->entries[k];
  if (en->tokens)
    buf_printf(c, "/* The %s entry's forward pass: %lld token%s at positions start[0] .., count[0] of\n"
                  " * them real; the caches' rows start[0] .. start[0]+count[0]-1 are written. */\n",
               en->name, (long long)en->tokens, en->tokens == 1 ? "" : "s");
  else
    buf_printf(c, "/* The %s entry: from its inputs, the values the other entries read back\n"
                  " * (x:get), stored in the state. */\n", en->name);
  Buf out = {0};
  e->out = &out;
  e->indent = 1;
  if (en->logits_out >= 0) {
    int vid = g->outputs[en->logits_out];
    const char *p = arena_printf(a, "p_%s", pn[g->ninputs + en->logits_out]);
    if (strcmp(emit_ref(e, vid), p)) /* the logits live elsewhere (a constant?): copied */
      emit_line(e, "memcpy(%s, %s, %zu); /* output '%s' */", p, e->refs[vid], type_bytes(&g->vals[vid].type),
                emit_cm(a, g->vals[vid].name));
  }
  /* the signature, then the pointers the body reads (only those) */
  const char *text = arena_printf(a, "%s%s", body->s ? body->s : "", out.s ? out.s : "");
  put_entry_signature(c, e, pn, k);
  buf_puts(c, " {\n");
  if (!emit_has_token(text, "ws"))
    buf_puts(c, "  (void)ws;\n");
  if (e->blob && !emit_has_token(text, "weights"))
    buf_puts(c, "  (void)weights;\n");
  bool state_read = emit_has_token(text, "state");
  for (int i = 0; i < g->ninputs + g->noutputs; i++) {
    bool in = i < g->ninputs;
    int vid = in ? g->inputs[i] : g->outputs[i - g->ninputs];
    const char *ct = dt_ctype(g->vals[vid].type.dt);
    bool state = in && g->vals[vid].is_state;
    if (!state && !entry_io(g, k, i))
      continue;
    bool ro = in && !(state && op_state_in_place(g, vid));
    const char *local = arena_printf(a, "p_%s", pn[i]);
    if (emit_has_token(text, local)) {
      buf_printf(c, "  %s%s *%s = (%s%s *)%s%s;\n", ro ? "const " : "", ct, local, ro ? "const " : "", ct,
                 state ? "state->" : "", state ? loops_state_field(e, i, pn[i]) : pn[i]);
      state_read = state_read || state;
    } else if (!state) {
      buf_printf(c, "  (void)%s; /* not read */\n", pn[i]);
    }
  }
  if (!state_read)
    buf_puts(c, "  (void)state;\n");
  if (e->threads > 1)
    buf_printf(c, "  KILN_ADAPT_BEGIN(%s);\n", emit_adapt_name(g, k));
  buf_put(c, body->s ? body->s : "", body->len);
  buf_put(c, out.s ? out.s : "", out.len);
  if (e->threads > 1)
    buf_printf(c, "  KILN_ADAPT_END(%s);\n", emit_adapt_name(g, k));
  buf_free(body);
  buf_free(&out);
  buf_puts(c, "}\n\n");
}

/* Blob mode: an entry point called before a successful bind returns
 * KILN_E_WEIGHTS_UNBOUND (one branch per call) instead of reading NULL. */
static const char *unbound_check(const Emit *e) {
  return e->blob ? "  if (!bound_weights)\n    return KILN_E_WEIGHTS_UNBOUND;\n" : "";
}

/* NAME_encode(_ws): the encode entry, which empties the caches. */
static void put_encode_entry(Buf *c, Emit *e, const char **pn, const DecoderEntry *en) {
  Graph *g = e->g;
  const char *p = e->prefix;
  buf_printf(c, "int %s_%s_ws(void *workspace, %s_state *state", p, en->name, p);
  put_encode_params(c, g, pn, en);
  buf_puts(c, ") {\n  if (!workspace || !state");
  put_encode_names(c, g, pn, en, " || !");
  buf_printf(c, ")\n    return KILN_E_ARG;\n%s  %s_%s_forward((unsigned char *)workspace, %sstate", unbound_check(e), p,
             en->name, e->blob ? "bound_weights, " : "");
  put_encode_names(c, g, pn, en, ", ");
  buf_printf(c, ");\n  state->kiln_length = 0; /* a new source: the caches start empty */\n"
                "  return KILN_OK;\n}\n\nint %s_%s(%s_state *state", p, en->name, p);
  put_encode_params(c, g, pn, en);
  buf_printf(c, ") {\n  return %s_%s_ws(%s_workspace, state", p, en->name, p);
  put_encode_names(c, g, pn, en, ", ");
  buf_puts(c, ");\n}\n\n");
}

/* The public entry points: NAME_encode(_ws), NAME_prefill(_ws), NAME_step(_ws), NAME_length. */
void emit_decoder_entries(Buf *c, Emit *e, const char **pn) {
  Graph *g = e->g;
  const Decoder *dec = g->decoder;
  const char *p = e->prefix, *P = emit_upper(g->arena, p);
  buf_printf(c, "/* The workspace of the entry points (not re-entrant; the _ws variants\n"
                " * take the caller's): one for all, they never run together. */\n"
                "static KILN_ALIGNED(64) unsigned char %s_workspace[%lld];\n\n"
                "/* a length state_init and the entry points can have made */\n"
                "static bool %s_state_ok(const %s_state *state) {\n"
                "  return state->kiln_length >= 0 && state->kiln_length <= %s_CTX;\n}\n\n",
             p, (long long)(g->ws_size ? g->ws_size : 1), p, p, P);
  for (int k = 0; k < dec->nentries; k++) {
    const DecoderEntry *en = &dec->entries[k];
    if (!en->tokens) {
      put_encode_entry(c, e, pn, en);
      continue;
    }
    bool step = en->tokens == 1 && !strcmp(en->name, "step");
    if (step)
      buf_printf(c, "int %s_step_ws(void *workspace, %s_state *state, int64_t token, float logits[%s_VOCAB]) {\n"
                    "  if (!workspace || !state || !logits || !%s_state_ok(state) || token < 0 || token >= %s_VOCAB)\n"
                    "    return KILN_E_ARG;\n"
                    "  if (state->kiln_length >= %s_CTX)\n    return KILN_E_CACHE_FULL;\n"
                    "  const int64_t tokens[1] = {token}, start[1] = {state->kiln_length}, count[1] = {1};\n",
                 p, p, P, p, P, P);
    else
      buf_printf(c, "int %s_%s_ws(void *workspace, %s_state *state, const int64_t tokens[%lld], int n,\n"
                    "    float logits[%s_VOCAB]) {\n"
                    "  if (!workspace || !state || !tokens || !logits || n < 1 || n > %lld || !%s_state_ok(state))\n"
                    "    return KILN_E_ARG;\n"
                    "  for (int i = 0; i < n; i++)\n"
                    "    if (tokens[i] < 0 || tokens[i] >= %s_VOCAB)\n      return KILN_E_ARG;\n"
                    "  if (state->kiln_length > %s_CTX - n)\n    return KILN_E_CACHE_FULL;\n"
                    "  int64_t chunk[%lld] = {0}; /* the real tokens, then zeros: every id read is defined */\n"
                    "  memcpy(chunk, tokens, (size_t)n * sizeof *chunk);\n"
                    "  const int64_t start[1] = {state->kiln_length}, count[1] = {n};\n",
                 p, en->name, p, (long long)en->tokens, P, (long long)en->tokens, p, P, P, (long long)en->tokens);
    buf_printf(c, "%s  %s_%s_forward((unsigned char *)workspace, %sstate, %s, start, count, logits);\n"
                  "  state->kiln_length += %s;\n  return KILN_OK;\n}\n\n",
               unbound_check(e), p, en->name, e->blob ? "bound_weights, " : "", step ? "tokens" : "chunk",
               step ? "1" : "n");
    if (step)
      buf_printf(c, "int %s_step(%s_state *state, int64_t token, float logits[%s_VOCAB]) {\n"
                    "  return %s_step_ws(%s_workspace, state, token, logits);\n}\n\n",
                 p, p, P, p, p);
    else
      buf_printf(c, "int %s_%s(%s_state *state, const int64_t tokens[%lld], int n, float logits[%s_VOCAB]) {\n"
                    "  return %s_%s_ws(%s_workspace, state, tokens, n, logits);\n}\n\n",
                 p, en->name, p, (long long)en->tokens, P, p, en->name, p);
  }
  buf_printf(c, "int64_t %s_length(const %s_state *state) {\n"
                "  return state && %s_state_ok(state) ? state->kiln_length : -KILN_E_ARG;\n}\n", p, p, p);
}

/* Per value: is it a state the encode entry writes (e:set), not a cache? */
static bool *stored_by_encode(Graph *g, const DecoderEntry *enc) {
  bool *stored = arena_alloc(g->arena, sizeof(bool) * (size_t)(g->nvals + 1));
  Diag d = {0}; /* the emitter has mapped the entries already: no error here */
  int *entry = enc ? graph_decoder_entries(g, &d) : NULL;
  for (int i = 0; entry && i < g->nnodes; i++)
    if (g->nodes[i].op == OP_CACHEWRITE && entry[i] >= 0 && &g->decoder->entries[entry[i]] == enc)
      stored[g->nodes[i].in[0]] = true;
  return stored;
}

typedef struct StateDoc {
  const char **pn;
  const bool *stored;
} StateDoc;

/* A cache field of the state struct (one not in a layer group). */
static void put_state_field(Buf *h, const Graph *g, int i, void *ctx) {
  const StateDoc *doc = ctx;
  const Value *v = &g->vals[g->inputs[i]];
  buf_printf(h, "  %s %s%s; /* %s '%s' */\n", dt_ctype(v->type.dt), doc->pn[i], emit_array_dims(g->arena, &v->type),
             doc->stored[g->inputs[i]] ? "stored by encode:" : "cache", emit_cm(g->arena, v->name));
}

/* The header of a generative model: sizes, the state struct with its
 * caches, the entry points and their codes. */
void emit_decoder_header(Buf *h, const Emit *e, const EmitOptions *o, const char **pn, const WeightsBlob *blob,
                                const Buf *tok) {
  Graph *g = e->g;
  Arena *a = g->arena;
  const Decoder *dec = g->decoder;
  const char *p = o->prefix, *P = emit_upper(a, p);
  const Value *logits = &g->vals[g->outputs[dec->entries[0].logits_out]];
  int64_t prefill = dec->entries[0].tokens, vocab = type_numel(&logits->type);
  const DecoderEntry *enc = decoder_find_entry(dec, "encode");
  const bool *stored = stored_by_encode(g, enc);
  char ts[160];
  buf_printf(h, "/* %s.h — generated by kiln %s from %s. Do not edit.\n *\n", p, KILN_VERSION,
             emit_cm(a, o->source ? o->source : "a model"));
  buf_printf(h, " * A generative model (Lua decoder{}, or ONNX with --kv-cache): it reads\n"
                " * tokens and gives the logits of the next one, keeping the keys and values\n"
                " * of every position it has read in a KV cache of %s_CTX positions inside\n"
                " * the caller-owned %s_state:\n *\n"
                " *   %s_state_init(&s);                      empty cache (length 0)\n"
                "%s"
                " *   %s_prefill(&s, tokens, n, logits);      append n <= %s_PREFILL tokens\n"
                " *   %s_step(&s, token, logits);             append one token\n"
                " *   %s_length(&s);                          positions held\n *\n"
                " * Both entry points write logits[%s_VOCAB], the next-token logits after\n"
                " * the last token given, and return KILN_OK, KILN_E_CACHE_FULL (the tokens\n"
                " * do not fit: nothing is written, the state is unchanged) or KILN_E_ARG\n"
                " * (nothing is written either: n outside 1..%s_PREFILL, a token id outside\n"
                " * 0..%s_VOCAB-1, a NULL pointer, workspace included, or a state whose\n"
                " * length is outside 0..%s_CTX, which state_init and the entry points never\n"
                " * make). %s_state_init(NULL) returns KILN_E_ARG, %s_length(NULL) -KILN_E_ARG.\n"
                " * Each call's cost grows with the positions the cache holds, not with\n"
                " * its capacity: attention reads rows 0 .. length-1 only.\n *\n",
             P, p, p, enc ? arena_printf(a, " *   %s_encode(&s, src...);                  a new source: stores what the decoder\n"
                                         " *                                          reads from it, empties the cache\n", p) : "",
             p, P, p, p, P, P, P, P, p, p);
  buf_puts(h, " * State layout: one field per cache, [position][...] row-major (row i is\n"
              " * position i; rows at or past the length are unused),");
  buf_puts(h, enc ? " one per value encode\n * stores, then the length:\n" : " then the length:\n");
  for (int i = 0; i < g->ninputs; i++) {
    const Value *v = &g->vals[g->inputs[i]];
    if (v->is_state)
      buf_printf(h, " *   %-24s %s  (\"%s\"%s)\n", loops_state_field(e, i, pn[i]), type_str(&v->type, ts, sizeof ts),
                 emit_cm(a, v->name), stored[g->inputs[i]] ? ", stored by encode" : "");
  }
  buf_printf(h, " *\n * %s_prefill() and %s_step()%s use one static workspace of %s_WORKSPACE_SIZE\n"
                " * bytes and are not re-entrant; the _ws variants take a caller-owned\n"
                " * workspace of that size (aligned to 64 bytes). Nothing allocates.\n",
             p, p, enc ? arena_printf(a, " (and %s_encode())", p) : "", P);
  if (o->threads > 1)
    emit_threads_doc(h, p, o->threads);
  buf_puts(h, " */\n");
  buf_printf(h, "#ifndef %s_H\n#define %s_H\n\n#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n\n", P, P);
  buf_printf(h, "#define %s_WORKSPACE_SIZE %lld\n#define %s_CTX %lld /* positions the cache holds */\n"
                "#define %s_PREFILL %lld /* most tokens one prefill call takes */\n"
                "#define %s_VOCAB %lld /* logits per call */\n",
             P, (long long)g->ws_size, P, (long long)dec->ctx, P, (long long)prefill, P, (long long)vocab);
  for (int j = 0; enc && j < enc->ninputs; j++) {
    const char *nm = encode_input(g, pn, enc, j);
    buf_printf(h, "#define %s_IN_%s_SIZE %lld /* elements of encode's %s */\n", P, emit_upper(a, nm),
               (long long)type_numel(&g->vals[enc->inputs[j]].type), nm);
  }
  if (blob)
    emit_weights_api(h, p, P, blob);
  else
    buf_puts(h, emit_weights_codes);
  buf_puts(h, emit_arg_codes);
  buf_puts(h, "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
  buf_printf(h, "typedef struct %s_state {\n", p);
  StateDoc doc = {pn, stored};
  loops_put_state_fields(h, e, put_state_field, &doc);
  buf_printf(h, "  int64_t kiln_length; /* positions held: rows 0 .. kiln_length-1 of every cache */\n"
                "} %s_state;\n\n", p);
  if (enc) {
    buf_printf(h, "int %s_encode(%s_state *state", p, p);
    put_encode_params(h, g, pn, enc);
    buf_printf(h, ");\nint %s_encode_ws(void *workspace, %s_state *state", p, p);
    put_encode_params(h, g, pn, enc);
    buf_puts(h, ");\n");
  }
  buf_printf(h, "int %s_state_init(%s_state *state);\n"
                "int %s_prefill(%s_state *state, const int64_t tokens[%s_PREFILL], int n, float logits[%s_VOCAB]);\n"
                "int %s_prefill_ws(void *workspace, %s_state *state, const int64_t tokens[%s_PREFILL], int n,\n"
                "    float logits[%s_VOCAB]);\n"
                "int %s_step(%s_state *state, int64_t token, float logits[%s_VOCAB]);\n"
                "int %s_step_ws(void *workspace, %s_state *state, int64_t token, float logits[%s_VOCAB]);\n"
                "int64_t %s_length(const %s_state *state);\n",
             p, p, p, p, P, P, p, p, P, P, p, p, P, p, p, P, p, p);
  if (o->threads > 1)
    emit_threads_decl(h, p);
  emit_header_end(h, tok);
}

