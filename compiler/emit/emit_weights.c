/* emit_weights.c — the weights in the generated files (emit_weights.h): the
 * arrays that stay in the .c as exact literals, a blob's layout as a
 * struct (layer groups as arrays of per-layer structs) with its checks, the
 * bind and verify functions, and the header's part about them. Naming a
 * weight (emit_weight_name) is emit.c's: kernels and forward functions
 * read names; this file writes what they name. */
#include "emit_weights.h"

#include <string.h>

#include "emit_text.h"
#include "weights_blob.h"

/* The return codes of the bind functions (and KILN_OK), guarded so that
 * several models' headers can be included together; the entry points'
 * own codes (emit_arg_codes) follow them, every value distinct. */
const char emit_weights_codes[] =
    "#ifndef KILN_WEIGHTS_CODES\n#define KILN_WEIGHTS_CODES\n"
    "enum {\n  KILN_OK = 0,\n  KILN_E_WEIGHTS_SIZE = 1,    /* NULL, or not the size this model's blob has */\n"
    "  KILN_E_WEIGHTS_ALIGN = 2,   /* not 64-byte aligned */\n"
    "  KILN_E_WEIGHTS_MAGIC = 3,   /* not a kiln weights blob */\n"
    "  KILN_E_WEIGHTS_VERSION = 4, /* another blob format version or byte order */\n"
    "  KILN_E_WEIGHTS_MODEL = 5,   /* another model's blob, or other weights */\n"
    "  KILN_E_WEIGHTS_UNBOUND = 6  /* a run before any successful bind: nothing computed */\n};\n#endif\n";

const char emit_arg_codes[] =
    "#ifndef KILN_DECODER_CODES\n#define KILN_DECODER_CODES\n"
    "enum {\n  KILN_E_ARG = 7,        /* a count outside 1..PREFILL (or 1..ROWS), a token outside\n"
    "                            0..VOCAB-1, a NULL pointer, a length outside 0..CTX, a\n"
    "                            thread count outside 1..THREADS, a batch below 1 */\n"
    "  KILN_E_CACHE_FULL = 8  /* the tokens do not fit in the cache */\n};\n#endif\n";

/* The header's part for a model whose weights are in a blob. */
void emit_weights_api(Buf *h, const char *p, const char *P, const WeightsBlob *blob) {
  buf_printf(h, "\n/* Weights: %s.weights.bin (%s_WEIGHTS_SIZE bytes), bound once before any other\n"
                " * call: %s_bind_linked_weights() when the app links %s_weights.S (which\n"
                " * .incbin's the file), or %s_bind_weights(blob, size) for the file's bytes\n"
                " * that the app has read or mapped (64-byte aligned). Both return KILN_OK\n"
                " * or a KILN_E_WEIGHTS_* code (%s_weights_error() says which) and leave the\n"
                " * previous binding in place on error. Before a successful bind, %s_run\n"
                " * (and every other entry point) returns KILN_E_WEIGHTS_UNBOUND and\n"
                " * computes nothing. */\n",
             p, P, p, p, p, p, p);
  buf_printf(h, "#define %s_WEIGHTS_SIZE %zu\n#define %s_WEIGHTS_HASH UINT64_C(0x%016llx)\n", P, blob->size,
             P, (unsigned long long)blob->hash);
  buf_puts(h, emit_weights_codes);
  buf_printf(h, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n"
                "int %s_bind_weights(const void *blob, size_t size);\n"
                "/* Optional: the checks of %s_bind_weights(), then a hash of every byte of\n"
                " * the blob against %s_WEIGHTS_HASH, so that a damaged copy (a flipped\n"
                " * bit, a zeroed page) is KILN_E_WEIGHTS_MODEL; binds nothing. A 90 MB\n"
                " * blob takes about 0.1 s. */\n"
                "int %s_verify_weights(const void *blob, size_t size);\n"
                "const char *%s_weights_error(int code);\n"
                "extern const unsigned char %s_weights_blob[]; /* defined by %s_weights.S */\n"
                "static inline int %s_bind_linked_weights(void) {\n"
                "  return %s_bind_weights(%s_weights_blob, %s_WEIGHTS_SIZE);\n}\n"
                "#ifdef __cplusplus\n}\n#endif\n",
             p, p, p, p, p, p, p, p, p, p, P);
}

/* Inline weights of a layer group: a table of pointers to each layer's
 * arrays, which the loops index (blk[l].attn_q_weight). */
static void emit_group_tables(Buf *c, Emit *e) {
  for (int gi = 0; !e->blob && gi < e->ngroups; gi++) {
    const LayerGroup *gr = &e->groups[gi];
    if (gr->state)
      continue;
    buf_printf(c, "/* each layer's weights, for the loops: %s[l] is layer l's */\nstatic const struct %s {\n", gr->name,
               gr->tag);
    for (int m = 0; m < gr->nmem; m++)
      buf_printf(c, "  const %s *%s;\n", dt_ctype(emit_weight_at(e, gr->item[m][0]).dt), gr->mem[m]);
    buf_printf(c, "} %s[%d] = {\n", gr->name, gr->reps);
    for (int r = 0; r < gr->reps; r++) {
      buf_puts(c, "  {");
      size_t col = 3;
      for (int m = 0; m < gr->nmem; m++) {
        const char *nm = emit_weight_name(e, gr->item[m][r]);
        bool wrap = m && col + strlen(nm) + 2 > 100;
        buf_printf(c, "%s%s", !m ? "" : wrap ? ",\n   " : ", ", nm);
        col = (wrap ? 3 : col + 2) + strlen(nm);
      }
      buf_puts(c, r + 1 < gr->reps ? "},\n" : "}\n");
    }
    buf_puts(c, "};\n\n");
  }
}

/* The weights that stay in the .c: static const arrays of exact literals. */
void emit_weight_arrays(Buf *c, Emit *e) {
  for (int k = 0; k < e->nconsts; k++) {
    if (emit_weight_in_blob(e, k))
      continue;
    Weight w = emit_weight_at(e, k);
    const char *name = e->consts[k].name ? e->consts[k].name : (emit_weight_name(e, k), e->consts[k].name);
    buf_printf(c, "/* %s */\nstatic const %s %s%s[%lld] = {", w.comment, dt_ctype(w.dt),
               w.aligned ? "KILN_ALIGNED(64) " : "", name, (long long)(w.n ? w.n : 1));
    for (int64_t i = 0; i < w.n; i++)
      buf_printf(c, "%s%s", i % 8 ? ", " : (i ? ",\n  " : "\n  "), emit_literal(e, w.dt, w.data, i));
    buf_puts(c, w.n ? "\n};\n\n" : "0};\n\n");
  }
  emit_group_tables(c, e);
}

/* Blob mode: layer group gi's arrays placed in the blob, layer after
 * layer, its struct's definition into defs, its member of the blob's
 * struct into c and their checks into asserts. Returns where it ends. */
static size_t emit_blob_group(Buf *defs, Buf *c, Buf *asserts, Emit *e, int gi, size_t at) {
  const LayerGroup *gr = &e->groups[gi];
  Arena *a = e->g->arena;
  size_t *moff = arena_alloc(a, sizeof(size_t) * (size_t)(gr->nmem + 1));
  size_t base = 0, stride = 0;
  for (int r = 0; r < gr->reps; r++)
    for (int m = 0; m < gr->nmem; m++) {
      Weight w = emit_weight_at(e, gr->item[m][r]);
      size_t off = blob_add(e->blob, w.data, (size_t)w.n * dt_size(w.dt));
      if (r == 0 && m == 0)
        base = off;
      if (r == 0)
        moff[m] = off - base;
      if (r == 1 && m == 0)
        stride = off - base;
      KILN_ASSERT(r == 0 || off == base + (size_t)r * stride + moff[m]);
    }
  size_t end = e->blob->size; /* rounded up: the last layer's tail */
  if (gr->reps == 1)
    stride = end - base;
  buf_printf(defs, "/* layer l's weights in the blob (%s_weights.%s[l]) */\nstruct %s {\n", e->prefix, gr->name, gr->tag);
  size_t in = 0;
  for (int m = 0; m < gr->nmem; m++) {
    Weight w0 = emit_weight_at(e, gr->item[m][0]), w1 = emit_weight_at(e, gr->item[m][gr->reps > 1 ? 1 : 0]);
    if (moff[m] > in)
      buf_printf(defs, "  unsigned char pad%d[%zu];\n", m, moff[m] - in);
    buf_printf(defs, "  %s %s[%lld]; /* @%zu %s */\n", dt_ctype(w0.dt), gr->mem[m], (long long)w0.n, moff[m],
               emit_layer_text(a, w0.comment, w1.comment));
    buf_printf(asserts, "KILN_STATIC_ASSERT(offsetof(struct %s, %s) == %zu, %s_%s_at);\n", gr->tag, gr->mem[m],
               moff[m], gr->name, gr->mem[m]);
    in = moff[m] + (size_t)w0.n * dt_size(w0.dt);
  }
  if (stride > in)
    buf_printf(defs, "  unsigned char tail[%zu];\n", stride - in);
  buf_printf(defs, "};\nKILN_STATIC_ASSERT(sizeof(struct %s) == %zu, %s_size);\n\n", gr->tag, stride, gr->tag);
  if (base > at)
    buf_printf(c, "  unsigned char pad_%s[%zu];\n", gr->name, base - at);
  buf_printf(c, "  struct %s %s[%d]; /* @%zu, %zu bytes a layer */\n", gr->tag, gr->name, gr->reps, base, stride);
  buf_printf(asserts, "KILN_STATIC_ASSERT(offsetof(struct %s_weights, %s) == %zu, %s_at);\n", e->prefix, gr->name,
             base, gr->name);
  return base + stride * (size_t)gr->reps;
}

/* Blob mode: the blob's layout as a struct (explicit padding, checked
 * against the size the blob has), the pointer the code reads it through,
 * and the arrays placed in e->blob. */
void emit_blob_layout(Buf *c, Emit *e) {
  const char *P = emit_upper(e->g->arena, e->prefix);
  Buf defs = {0}, body = {0}, asserts = {0};
  size_t at = WEIGHTS_BLOB_HEADER;
  bool *placed = arena_alloc(e->g->arena, (size_t)e->ngroups + 1);
  for (int k = 0; k < e->nconsts; k++) {
    if (!emit_weight_in_blob(e, k))
      continue;
    int gi = e->consts[k].group;
    if (gi >= 0) { /* the whole group where its first weight is read */
      if (!placed[gi])
        at = emit_blob_group(&defs, &body, &asserts, e, gi, at);
      placed[gi] = true;
      continue;
    }
    Weight w = emit_weight_at(e, k);
    size_t bytes = (size_t)w.n * dt_size(w.dt);
    size_t off = blob_add(e->blob, w.data, bytes);
    if (off > at)
      buf_printf(&body, "  unsigned char pad%d[%zu];\n", k, off - at);
    buf_printf(&body, "  %s %s[%lld]; /* @%zu %s */\n", dt_ctype(w.dt), e->consts[k].name, (long long)w.n, off,
               w.comment);
    buf_printf(&asserts, "KILN_STATIC_ASSERT(offsetof(struct %s_weights, %s) == %zu, %s_at);\n", e->prefix,
               e->consts[k].name, off, e->consts[k].name);
    at = off + bytes;
  }
  blob_finish(e->blob);
  buf_printf(c, "/* The weights blob (%s_WEIGHTS_SIZE bytes, kiln's weights_blob.h): a\n"
                " * 64-byte header, then each array at a 64-byte-aligned offset. */\n%s"
                "struct %s_weights {\n  unsigned char header[%d];\n%s",
             P, defs.s ? defs.s : "", e->prefix, WEIGHTS_BLOB_HEADER, body.s ? body.s : "");
  if (e->blob->size > at)
    buf_printf(c, "  unsigned char tail[%zu];\n", e->blob->size - at);
  /* the C compiler's layout is the blob's: no padding of its own */
  buf_printf(c, "};\nKILN_STATIC_ASSERT(sizeof(struct %s_weights) == %s_WEIGHTS_SIZE, weights_layout);\n%s\n"
                "/* Set by %s_bind_weights(): the only global the code writes, once. */\n"
                "static const struct %s_weights *bound_weights;\n\n",
             e->prefix, P, asserts.s ? asserts.s : "", e->prefix, e->prefix);
  buf_free(&defs);
  buf_free(&body);
  buf_free(&asserts);
}

/* Blob mode: NAME_bind_weights() and NAME_weights_error(). */
void emit_bind_weights(Buf *c, Emit *e) {
  const char *p = e->prefix, *P = emit_upper(e->g->arena, p);
  buf_printf(c,
    "static uint64_t %s_blob_u64(const unsigned char *b) { /* little-endian */\n"
    "  uint64_t v = 0;\n"
    "  for (int i = 7; i >= 0; i--)\n    v = v << 8 | b[i];\n  return v;\n}\n\n"
    "/* the header's checks (size, alignment, magic, version, byte order, hash) */\n"
    "static int %s_check_blob(const unsigned char *b, size_t size) {\n"
    "  uint32_t order = 0x01020304;\n"
    "  if (!b || size != %s_WEIGHTS_SIZE)\n    return KILN_E_WEIGHTS_SIZE;\n"
    "  if ((uintptr_t)b %% 64 != 0)\n    return KILN_E_WEIGHTS_ALIGN;\n"
    "  if (memcmp(b, \"KILNWTS\", 8) != 0)\n    return KILN_E_WEIGHTS_MAGIC;\n"
    "  if (%s_blob_u64(b + 8) != (UINT64_C(64) << 32 | %du) || memcmp(b + 36, &order, 4) != 0)\n"
    "    return KILN_E_WEIGHTS_VERSION;\n"
    "  if (%s_blob_u64(b + 16) != %s_WEIGHTS_SIZE || %s_blob_u64(b + 24) != %s_WEIGHTS_HASH ||\n"
    "      (%s_blob_u64(b + 32) & 0xffffffffu) != %du)\n"
    "    return KILN_E_WEIGHTS_MODEL;\n"
    "  for (int i = 40; i < 64; i++) /* the header's zeros */\n"
    "    if (b[i])\n      return KILN_E_WEIGHTS_MODEL;\n"
    "  return KILN_OK;\n}\n\n"
    "int %s_bind_weights(const void *blob, size_t size) {\n"
    "  int rc = %s_check_blob((const unsigned char *)blob, size);\n"
    "  if (rc == KILN_OK)\n    bound_weights = (const struct %s_weights *)blob;\n"
    "  return rc;\n}\n\n",
    p, p, P, p, WEIGHTS_BLOB_VERSION, p, P, p, P, p, e->blob->n, p, p, p);
  /* the model hash of weights_blob.c (blob_finish), over the whole body */
  buf_printf(c,
    "static uint64_t %s_blob_mix(uint64_t k) { /* murmur3's finalizer */\n"
    "  k ^= k >> 33;\n  k *= UINT64_C(0xff51afd7ed558ccd);\n  k ^= k >> 33;\n"
    "  k *= UINT64_C(0xc4ceb9fe1a85ec53);\n  return k ^ (k >> 33);\n}\n\n"
    "int %s_verify_weights(const void *blob, size_t size) {\n"
    "  const unsigned char *b = (const unsigned char *)blob;\n"
    "  int rc = %s_check_blob(b, size);\n"
    "  if (rc != KILN_OK)\n    return rc;\n"
    "  uint64_t h = UINT64_C(0x%016llx); /* the layout's hash */\n"
    "  for (size_t i = 64; i < size; i += 8) {\n"
    "    uint64_t w;\n    memcpy(&w, b + i, 8);\n"
    "    h ^= %s_blob_mix(w);\n"
    "    h = (h << 29 | h >> 35) * UINT64_C(0x9e3779b97f4a7c15);\n  }\n"
    "  return %s_blob_mix(h ^ (uint64_t)(size - 64)) == %s_WEIGHTS_HASH ? KILN_OK : KILN_E_WEIGHTS_MODEL;\n}\n\n",
    p, p, p, (unsigned long long)e->blob->seed, p, p, P);
  buf_printf(c,
    "const char *%s_weights_error(int code) {\n"
    "  switch (code) {\n"
    "  case KILN_OK: return \"ok\";\n"
    "  case KILN_E_WEIGHTS_SIZE: return \"the weights blob is missing or has the wrong size\";\n"
    "  case KILN_E_WEIGHTS_ALIGN: return \"the weights blob is not 64-byte aligned\";\n"
    "  case KILN_E_WEIGHTS_MAGIC: return \"not a kiln weights blob\";\n"
    "  case KILN_E_WEIGHTS_VERSION: return \"a weights blob of another format version or byte order\";\n"
    "  case KILN_E_WEIGHTS_MODEL: return \"the weights blob of another model (or other weights)\";\n"
    "  case KILN_E_WEIGHTS_UNBOUND: return \"no weights blob bound yet (bind one before running the model)\";\n"
    "  default: return \"unknown error\";\n  }\n}\n",
    p);
}

