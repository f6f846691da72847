/* tokenizer.c — a byte-level BPE or SentencePiece vocabulary into C
 * tables (tokenizer.h).
 *
 * Three steps: decode every token's stored text to its bytes (normal
 * tokens are GPT-2 byte-level text; control and user-defined tokens are
 * their text as it is, which is how llama.cpp prints them too; a
 * SentencePiece vocabulary's pieces stay as stored, ▁ and <0xNN> included,
 * since its encoder matches them so), resolve
 * every merge to ids through a hash table of the stored texts, then place
 * the tables: in blob mode as weight arrays in the blob (emit_const_array),
 * with an accessor in the .c; else printed. The text table is one string literal in lines of about 100 characters
 * (valid UTF-8 written as it is, other bytes as octal escapes); the
 * integer tables are bare numbers, 16 or 24 to a line, so that gcc reads
 * them quickly: 1.6 MB of C for a 49k vocabulary, about 1 s of gcc -O2. */
#include "tokenizer.h"

#include "../base/c_text.h"
#include "cnames.h"
#include "emit.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- GPT-2's byte <-> unicode map ------------------------------------------ */

/* bytes GPT-2 writes as themselves: '!'..'~', '¡'..'¬', '®'..'ÿ' */
static bool byte_is_printable(int b) {
  return (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
}

uint32_t tokenizer_byte_char(int b) {
  if (byte_is_printable(b))
    return (uint32_t)b;
  int n = 0; /* the others, in order, from U+0100 */
  for (int i = 0; i < b; i++)
    n += !byte_is_printable(i);
  return 256u + (uint32_t)n;
}

/* the byte code point c stands for, or -1 */
static int char_byte(uint32_t c) {
  if (c < 256)
    return byte_is_printable((int)c) ? (int)c : -1;
  for (int b = 0; b < 256; b++)
    if (!byte_is_printable(b) && tokenizer_byte_char(b) == c)
      return b;
  return -1;
}

/* One UTF-8 code point at s[0..n): its length (1-4) and *cp, or 0 when the
 * bytes there are not valid UTF-8 (overlong, surrogate, past U+10FFFF). */
static int utf8_next(const unsigned char *s, size_t n, uint32_t *cp) {
  if (n == 0)
    return 0;
  unsigned c = s[0];
  int len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
  if (len == 0 || (size_t)len > n)
    return 0;
  uint32_t v = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
  for (int i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    v = v << 6 | (s[i] & 0x3f);
  }
  static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < min[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
    return 0;
  *cp = v;
  return len;
}

/* ---- the vocabulary, checked ------------------------------------------------- */

typedef struct Tok {
  const TokVocab *v;
  Diag *d;
  size_t *len;          /* [ntokens] stored text lengths */
  unsigned char *bytes; /* every token's decoded bytes, each + NUL */
  uint32_t *offset;     /* [ntokens + 1] into bytes */
  int32_t *slots;       /* hash table of stored texts: id + 1, 0 empty */
  size_t nslots;
  int32_t *merges;      /* [3 * nmerges] */
} Tok;

/* diag_error with the file's path first, as the weight readers word it */
KILN_PRINTF(3, 4) static bool tok_error(Diag *d, const char *path, const char *fmt, ...) {
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return diag_error(d, "%s: %s", path ? path : "(model)", msg);
}

static const char *const KEY_TOKENS = "tokenizer.ggml.tokens";
static const char *const KEY_MERGES = "tokenizer.ggml.merges";

static uint64_t fnv1a(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

/* id of the token whose stored text is s[0..n), or -1 */
static int32_t lookup(const Tok *t, const char *s, size_t n) {
  for (size_t i = fnv1a(s, n) & (t->nslots - 1);; i = (i + 1) & (t->nslots - 1)) {
    int32_t id = t->slots[i] - 1;
    if (id < 0)
      return -1;
    if (t->len[id] == n && !memcmp(t->v->tokens[id], s, n))
      return id;
  }
}

/* A token's text for a message: at most 40 bytes, control bytes as '?'. */
static const char *shown(char buf[48], const char *s, size_t n) {
  size_t k = n < 40 ? n : 40;
  for (size_t i = 0; i < k; i++)
    buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
  strcpy(buf + k, n > k ? "..." : "");
  return buf;
}

static bool is_spm(const TokVocab *v) { return v->model && !strcmp(v->model, "llama"); }

/* Token id's bytes appended at bytes + at; returns how many, or -1. */
static long decode_token(Tok *t, int id, size_t at) {
  const char *s = t->v->tokens[id];
  size_t n = t->len[id];
  int type = t->v->types ? t->v->types[id] : TOKEN_NORMAL;
  if (type != TOKEN_NORMAL || is_spm(t->v)) { /* control, user-defined, a piece: the text itself */
    memcpy(t->bytes + at, s, n);
    return (long)n;
  }
  size_t out = 0;
  for (size_t i = 0; i < n;) {
    uint32_t cp = 0;
    int k = utf8_next((const unsigned char *)s + i, n - i, &cp);
    int b = k ? char_byte(cp) : -1;
    if (b < 0) {
      char buf[48];
      tok_error(t->d, t->v->path, "key '%s': token %d '%s' is not byte-level BPE text (%s at byte %zu); "
                       "expected GPT-2's byte-to-unicode characters",
                 KEY_TOKENS, id, shown(buf, s, n), k ? "a character no byte maps to" : "invalid UTF-8", i);
      return -1;
    }
    t->bytes[at + out++] = (unsigned char)b;
    i += (size_t)k;
  }
  return (long)out;
}

static bool check_vocab(Tok *t) {
  const TokVocab *v = t->v;
  if (!v->model || (strcmp(v->model, "gpt2") && !is_spm(v)))
    return tok_error(t->d, t->v->path, "key 'tokenizer.ggml.model' is '%s'; expected 'gpt2' (byte-level BPE) or "
                     "'llama' (SentencePiece)", v->model ? v->model : "(absent)");
  if (is_spm(v) && !v->scores)
    return tok_error(t->d, t->v->path, "key 'tokenizer.ggml.scores' is absent; expected a SentencePiece "
                     "vocabulary's score per token");
  if (v->ntokens <= 0 || !v->tokens)
    return tok_error(t->d, t->v->path, "key '%s' is absent or empty; expected the vocabulary", KEY_TOKENS);
  if (v->nmerges < 0 || (v->nmerges > 0 && !v->merges))
    return tok_error(t->d, t->v->path, "key '%s' is absent; expected the BPE merges", KEY_MERGES);
  const int64_t ids[4] = {v->bos, v->eos, v->unk, v->pad};
  static const char *const id_keys[4] = {"bos_token_id", "eos_token_id", "unknown_token_id",
                                         "padding_token_id"};
  for (int i = 0; i < 4; i++)
    if (ids[i] < -1 || ids[i] >= v->ntokens)
      return tok_error(t->d, t->v->path, "key 'tokenizer.ggml.%s' is %lld; expected a token id below %d", id_keys[i],
                        (long long)ids[i], v->ntokens);
  if (v->types)
    for (int i = 0; i < v->ntokens; i++)
      if (v->types[i] < 0 || v->types[i] > TOKEN_BYTE)
        return tok_error(t->d, t->v->path, "key 'tokenizer.ggml.token_type': token %d has type %d; expected 0..6", i,
                          (int)v->types[i]);
  return true;
}

/* lengths, decoded bytes and offsets, and the hash table of stored texts */
static bool decode_all(Tok *t) {
  const TokVocab *v = t->v;
  size_t total = 0;
  t->len = calloc((size_t)v->ntokens, sizeof *t->len);
  t->offset = calloc((size_t)v->ntokens + 1, sizeof *t->offset);
  for (t->nslots = 16; t->nslots < 2 * (size_t)v->ntokens;)
    t->nslots *= 2;
  t->slots = calloc(t->nslots, sizeof *t->slots);
  KILN_ASSERT(t->len && t->offset && t->slots);
  for (int i = 0; i < v->ntokens; i++) {
    if (!v->tokens[i])
      return tok_error(t->d, t->v->path, "key '%s': token %d is missing", KEY_TOKENS, i);
    t->len[i] = v->token_len ? v->token_len[i] : strlen(v->tokens[i]);
    total += t->len[i] + 1; /* decoding never lengthens */
  }
  if (total > UINT32_MAX)
    return tok_error(t->d, t->v->path, "key '%s': %zu bytes of token text; expected at most 4 GiB", KEY_TOKENS, total);
  t->bytes = malloc(total ? total : 1);
  KILN_ASSERT(t->bytes);
  size_t at = 0;
  for (int i = 0; i < v->ntokens; i++) {
    t->offset[i] = (uint32_t)at;
    long n = decode_token(t, i, at);
    if (n < 0)
      return false;
    at += (size_t)n;
    t->bytes[at++] = 0;
    /* first id wins for a text stored twice */
    size_t s = fnv1a(v->tokens[i], t->len[i]) & (t->nslots - 1);
    for (; t->slots[s]; s = (s + 1) & (t->nslots - 1))
      if (t->len[t->slots[s] - 1] == t->len[i] && !memcmp(v->tokens[t->slots[s] - 1], v->tokens[i], t->len[i]))
        break;
    if (!t->slots[s])
      t->slots[s] = i + 1;
  }
  t->offset[v->ntokens] = (uint32_t)at;
  return true;
}

/* "left right" -> ids; the space that splits is the first one after the
 * first byte (llama.cpp's rule: a left part may be a lone space) */
static bool resolve_merges(Tok *t) {
  const TokVocab *v = t->v;
  t->merges = calloc(3 * (size_t)v->nmerges + 1, sizeof *t->merges);
  KILN_ASSERT(t->merges);
  Buf joined = {0};
  bool ok = true;
  for (int r = 0; r < v->nmerges && ok; r++) {
    const char *m = v->merges[r];
    size_t n = !m ? 0 : v->merge_len ? v->merge_len[r] : strlen(m);
    const char *sp = n > 1 ? memchr(m + 1, ' ', n - 1) : NULL;
    char buf[48];
    if (!sp || sp + 1 == m + n) {
      ok = tok_error(t->d, t->v->path, "key '%s': merge %d '%s' is not two tokens split by a space", KEY_MERGES, r,
                      m ? shown(buf, m, n) : "");
      break;
    }
    size_t ln = (size_t)(sp - m), rn = n - ln - 1;
    joined.len = 0;
    buf_put(&joined, m, ln);
    buf_put(&joined, sp + 1, rn);
    int32_t ids[3] = {lookup(t, m, ln), lookup(t, sp + 1, rn), lookup(t, joined.s, joined.len)};
    static const char *const what[3] = {"left part", "right part", "result"};
    for (int k = 0; k < 3 && ok; k++)
      if (ids[k] < 0) {
        char part[48];
        const char *p = k == 0 ? m : k == 1 ? sp + 1 : joined.s;
        size_t pn = k == 0 ? ln : k == 1 ? rn : joined.len;
        ok = tok_error(t->d, t->v->path, "key '%s': merge %d '%s': its %s '%s' is not in the vocabulary; expected "
                              "every merge's parts and result to be tokens",
                        KEY_MERGES, r, shown(buf, m, n), what[k], shown(part, p, pn));
      }
    memcpy(t->merges + 3 * (size_t)r, ids, sizeof ids);
  }
  buf_free(&joined);
  return ok;
}

/* ---- printing ---------------------------------------------------------------- */

/* The C names of the five tables (NAME_token_text, ...): in the .c, static
 * arrays, or in blob mode `weights->MEMBER` of the blob's struct. */
enum { T_TEXT, T_OFFSET, T_TYPE, T_BYTE_TOKEN, T_MERGES, T_SCORE, T_COUNT };
static const char *const table_field[T_COUNT] = {"token_text", "token_offset", "token_type", "byte_token",
                                                 "merges", "token_score"};
static const char *const table_cast[T_COUNT] = {"const char *", "const uint32_t *", "const uint8_t *",
                                                "const int32_t *", "const int32_t *", "const float *"};

/* the tables written: a SentencePiece vocabulary adds the scores */
static int table_count(const TokVocab *v) { return is_spm(v) ? T_COUNT : T_SCORE; }

/* "<0xNN>": the byte it stands for, or -1 */
static int byte_piece(const char *s, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  const char *hi, *lo;
  if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>' || !s[3] || !s[4] || !(hi = strchr(hex, s[3])) ||
      !(lo = strchr(hex, s[4])))
    return -1;
  return (int)((hi - hex) * 16 + (lo - hex));
}

/* the token of each single byte, -1 when none: byte-level BPE's first
 * normal token of that one byte; SentencePiece's byte-fallback <0xNN> */
static void fill_byte_token(const Tok *t, int32_t out[256]) {
  const TokVocab *v = t->v;
  for (int b = 0; b < 256; b++)
    out[b] = -1;
  for (size_t i = (size_t)v->ntokens; i-- > 0;) {
    if (is_spm(v)) {
      int b = v->types && v->types[i] == TOKEN_BYTE ? byte_piece(v->tokens[i], t->len[i]) : -1;
      if (b >= 0)
        out[b] = (int32_t)i;
    } else if (t->offset[i + 1] - t->offset[i] == 2 && (!v->types || v->types[i] == TOKEN_NORMAL)) {
      out[t->bytes[t->offset[i]]] = (int32_t)i;
    }
  }
}

static uint8_t token_type(const TokVocab *v, size_t i) { return (uint8_t)(v->types ? v->types[i] : TOKEN_NORMAL); }

static void put_text(Buf *c, const Tok *t, const char *name, const char *P) {
  int n = t->v->ntokens;
  buf_printf(c, "/* every token's bytes, each followed by a NUL (the last one's is the literal's);\n"
                " * one literal longer than ISO C's 4095 characters, which gcc and clang take */\n"
                "#pragma GCC diagnostic push\n#pragma GCC diagnostic ignored \"-Woverlength-strings\"\n"
                "static const char %s[%s_TOKEN_TEXT_SIZE] =\n  \"",
             name, P);
  size_t line = 0;
  for (int i = 0; i < n; i++) {
    size_t before = c->len;
    c_text_put_n(c, CT_STRING_BYTES, (const char *)t->bytes + t->offset[i], t->offset[i + 1] - t->offset[i] - 1);
    if (i + 1 < n) { /* "\\0", or "\\000" when an octal digit follows */
      unsigned char next = t->bytes[t->offset[i + 1]];
      buf_puts(c, next >= '0' && next <= '7' && t->offset[i + 2] - t->offset[i + 1] > 1 ? "\\000" : "\\0");
    }
    line += c->len - before;
    if (line >= 100 && i + 1 < n) {
      buf_puts(c, "\"\n  \"");
      line = 0;
    }
  }
  buf_puts(c, "\";\n#pragma GCC diagnostic pop\n");
}

/* an integer table, `per` numbers a line */
static void put_ints(Buf *c, const char *decl, const int64_t *x, size_t n, size_t per) {
  buf_printf(c, "%s = {\n", decl);
  for (size_t i = 0; i < n; i++)
    buf_printf(c, "%s%lld,%s", i % per ? "" : "  ", (long long)x[i], (i + 1) % per && i + 1 < n ? "" : "\n");
  buf_puts(c, "};\n");
}

/* Inline: the tables as static arrays of literals in the .c, named name[]. */
static void put_tables(Buf *c, const Tok *t, const char *const name[T_COUNT], const char *P) {
  const TokVocab *v = t->v;
  size_t n = (size_t)v->ntokens, nm = (size_t)v->nmerges;
  int64_t *x = calloc((n + 1 > 3 * nm ? n + 1 : 3 * nm) + 256, sizeof *x);
  int32_t byte_token[256];
  KILN_ASSERT(x);
  put_text(c, t, name[T_TEXT], P);
  for (size_t i = 0; i <= n; i++)
    x[i] = t->offset[i];
  char decl[200];
  snprintf(decl, sizeof decl, "\n/* token i is token_text[offset[i] .. offset[i+1] - 1) */\n"
                              "static const uint32_t %s[%s_TOKENS + 1]", name[T_OFFSET], P);
  put_ints(c, decl, x, n + 1, 16);
  for (size_t i = 0; i < n; i++)
    x[i] = token_type(v, i);
  snprintf(decl, sizeof decl, "\n/* %s_TOKEN_NORMAL, _CONTROL, ... */\nstatic const uint8_t %s[%s_TOKENS]", P,
           name[T_TYPE], P);
  put_ints(c, decl, x, n, 32);
  fill_byte_token(t, byte_token);
  for (int b = 0; b < 256; b++)
    x[b] = byte_token[b];
  snprintf(decl, sizeof decl, "\n/* the token of each byte alone (-1: none) */\nstatic const int32_t %s[256]",
           name[T_BYTE_TOKEN]);
  put_ints(c, decl, x, 256, 16);
  for (size_t i = 0; i < 3 * nm; i++)
    x[i] = t->merges[i];
  snprintf(decl, sizeof decl, "\n/* merge r (rank r, lowest first) is tokens merges[3r] + merges[3r+1] = "
                              "merges[3r+2] */\nstatic const int32_t %s[%s_MERGES * 3 + 1]", name[T_MERGES], P);
  x[3 * nm] = -1;
  put_ints(c, decl, x, 3 * nm + 1, 24);
  free(x);
  if (is_spm(v)) { /* the scores, exactly (%a) */
    buf_printf(c, "\n/* each piece's score: SentencePiece merges the adjacent pair whose join scores highest */\n"
                  "static const float %s[%s_TOKENS] = {\n", name[T_SCORE], P);
    for (size_t i = 0; i < n; i++)
      buf_printf(c, "%s%af,%s", i % 8 ? " " : "  ", (double)v->scores[i], (i + 1) % 8 && i + 1 < n ? "" : "\n");
    buf_puts(c, "};\n");
  }
}

/* Blob mode: the tables as weight arrays (emit_const_array: placed in the
 * blob with the model's weights, or, under EMIT_BLOB_INLINE_MAX bytes,
 * kept as a literal); name[] gets their C expressions. The copies are arena
 * memory, which outlives the blob's writing. */
static void put_blob_tables(Emit *e, const Tok *t, const char *p, const char *name[T_COUNT]) {
  Arena *a = e->g->arena;
  const TokVocab *v = t->v;
  size_t n = (size_t)v->ntokens, nm = (size_t)v->nmerges, size = t->offset[n];
  unsigned char *text = arena_alloc(a, size);
  uint32_t *offset = arena_alloc(a, (n + 1) * sizeof *offset);
  uint8_t *type = arena_alloc(a, n ? n : 1);
  int32_t *byte_token = arena_alloc(a, 256 * sizeof *byte_token);
  int32_t *merges = arena_alloc(a, (3 * nm + 1) * sizeof *merges);
  memcpy(text, t->bytes, size);
  memcpy(offset, t->offset, (n + 1) * sizeof *offset);
  for (size_t i = 0; i < n; i++)
    type[i] = token_type(v, i);
  fill_byte_token(t, byte_token);
  if (nm)
    memcpy(merges, t->merges, 3 * nm * sizeof *merges);
  merges[3 * nm] = -1;
  name[T_TEXT] = emit_const_array(e, DT_U8, text, (int64_t)size, arena_printf(a, "%s_token_text", p),
                                  "tokenizer: every token's bytes, each then a NUL");
  name[T_OFFSET] = emit_const_array(e, DT_U32, offset, (int64_t)n + 1, arena_printf(a, "%s_token_offset", p),
                                    "tokenizer: where each token's bytes start (then the end)");
  name[T_TYPE] = emit_const_array(e, DT_U8, type, (int64_t)n, arena_printf(a, "%s_token_type", p),
                                  "tokenizer: each token's type (GGUF's)");
  name[T_BYTE_TOKEN] = emit_const_array(e, DT_I32, byte_token, 256, arena_printf(a, "%s_byte_token", p),
                                        "tokenizer: the token of each byte alone, -1: none");
  name[T_MERGES] = emit_const_array(e, DT_I32, merges, 3 * (int64_t)nm + 1, arena_printf(a, "%s_merges", p),
                                    "tokenizer: the merges, rank order, as id triples, then -1");
  if (is_spm(v)) {
    float *score = arena_alloc(a, n ? n * sizeof *score : 1);
    memcpy(score, v->scores, n * sizeof *score);
    name[T_SCORE] = emit_const_array(e, DT_F32, score, (int64_t)n, arena_printf(a, "%s_token_score", p),
                                     "tokenizer: each piece's score (SentencePiece)");
  }
}

/* NAME_tokenizer_tables(): in blob mode through the bound blob (NULLs
 * before a bind), else the static arrays. */
static void put_accessor(Buf *c, const char *const name[T_COUNT], const char *p, bool blob, int count) {
  buf_printf(c, "\n/* the tokenizer's tables (%s.h) */\n%s_tokenizer %s_tokenizer_tables(void) {\n", p, p, p);
  if (!blob) {
    buf_printf(c, "  %s_tokenizer t = {%s, %s, %s, %s, %s", p, name[0], name[1], name[2], name[3], name[4]);
    for (int k = T_SCORE; k < count; k++)
      buf_printf(c, ", %s", name[k]);
    buf_puts(c, "};\n  return t;\n}\n");
    return;
  }
  buf_printf(c, "  const struct %s_weights *const weights = bound_weights;\n"
                "  %s_tokenizer t = {NULL, NULL, NULL, NULL, NULL%s};\n"
                "  if (!weights)\n    return t; /* in the blob: nothing before a bind */\n",
             p, p, count > T_SCORE ? ", NULL" : "");
  for (int k = 0; k < count; k++)
    buf_printf(c, "  t.%s = (%s)%s;\n", table_field[k], table_cast[k], name[k]);
  buf_puts(c, "  return t;\n}\n");
}

static void put_header(Buf *h, const Tok *t, const char *p, const char *P, bool blob) {
  const TokVocab *v = t->v;
  bool spm = is_spm(v);
  buf_printf(h, "\n/* The tokenizer: %s, as tables\n"
                " * (README \"Generating text\"; examples/generate.c uses them). */\n"
                "#define %s_TOKENS %d\n#define %s_MERGES %d\n#define %s_TOKEN_TEXT_SIZE %u\n",
             spm ? "SentencePiece (tokenizer.ggml.model \"llama\": ▁ for a space, pieces merged by\n"
                   " * score, <0xNN> byte fallback)"
                 : "byte-level BPE (tokenizer.ggml.model \"gpt2\")",
             P, v->ntokens, P, v->nmerges, P, t->offset[v->ntokens]);
  if (spm)
    buf_printf(h, "#define %s_TOKENIZER_SPM 1 /* SentencePiece: the struct has token_score */\n"
                  "#define %s_ADD_SPACE_PREFIX %d /* tokenizer.ggml.add_space_prefix: a ▁ before the text */\n"
                  "#define %s_HAS_CHAT_TEMPLATE %d /* tokenizer.ggml.chat_template is in the file */\n",
               P, P, v->add_space_prefix, P, v->has_chat_template);
  buf_printf(h, "#define %s_BOS_ID %lld\n#define %s_EOS_ID %lld\n#define %s_UNK_ID %lld\n#define %s_PAD_ID %lld\n",
             P, (long long)v->bos, P, (long long)v->eos, P, (long long)v->unk, P, (long long)v->pad);
  buf_printf(h, "#define %s_ADD_BOS %d /* put BOS first in a prompt */\n#define %s_TOKENIZER_PRE ", P,
             v->add_bos, P);
  c_text_put(h, CT_STRING, v->pre);
  buf_printf(h, " /* the pre-tokenizer's name */\n");
  static const char *const names[] = {"NORMAL", "UNKNOWN", "CONTROL", "USER_DEFINED", "UNUSED", "BYTE"};
  for (int i = 0; i < 6; i++)
    buf_printf(h, "#define %s_TOKEN_%s %d\n", P, names[i], i + 1);
  buf_printf(h, "typedef struct %s_tokenizer {\n"
                "  /* token i's bytes: token_text + token_offset[i], token_offset[i+1] - token_offset[i] - 1\n"
                "   * of them, then a NUL (%s) */\n"
                "  const char *token_text;       /* %s_TOKEN_TEXT_SIZE bytes */\n"
                "  const uint32_t *token_offset; /* [%s_TOKENS + 1] */\n"
                "  const uint8_t *token_type;    /* [%s_TOKENS]: %s_TOKEN_NORMAL, _CONTROL, ... */\n"
                "  const int32_t *byte_token;    /* [256]: the token of each byte alone, -1: none */\n"
                "  /* [%s_MERGES * 3 + 1], rank order: merges[3r] + merges[3r+1] -> merges[3r+2] (then a -1) */\n"
                "  const int32_t *merges;\n"
                "%s"
                "} %s_tokenizer;\n",
             p,
             spm ? "the pieces as stored: ▁ for a space, byte tokens\n"
                   "   * <0xNN>, control tokens such as <start_of_turn> their text"
                 : "normal tokens are decoded from the byte-level form; control\n"
                   "   * and user-defined ones, such as <|im_start|>, are their text",
             P, P, P, P, P,
             spm ? "  const float *token_score;     /* [TOKENS]: each piece's score, the higher merged first */\n" : "",
             p);
  if (blob)
    buf_printf(h, "/* The tables are in the weights blob: every pointer is NULL before a successful\n"
                  " * %s_bind_weights() (or _bind_linked_weights()), and they point into the bound\n"
                  " * blob, so they stay valid while it does. */\n",
               p);
  else
    buf_puts(h, "/* The tables are static arrays in the .c: never NULL. */\n");
  buf_printf(h, "%s_tokenizer %s_tokenizer_tables(void);\n", p, p);
}

static const char *upper_dup(const char *s) {
  char *r = malloc(strlen(s) + 1);
  KILN_ASSERT(r);
  for (size_t i = 0;; i++)
    if (!(r[i] = (char)toupper((unsigned char)s[i])))
      break;
  return r;
}

bool tokenizer_emit_vocab(const TokVocab *v, const char *prefix, Emit *e, Buf *c, Buf *h, Diag *d) {
  Tok t = {.v = v, .d = d};
  bool ok = check_vocab(&t) && decode_all(&t) && resolve_merges(&t);
  if (ok) {
    const char *P = upper_dup(prefix);
    bool blob = e && e->blob;
    const char *name[T_COUNT];
    char fixed[T_COUNT][160];
    int count = table_count(v);
    buf_puts(c, is_spm(v) ? "\n/* ---- the tokenizer (SentencePiece, from " : "\n/* ---- the tokenizer (byte-level BPE, from ");
    c_text_put(c, CT_COMMENT, v->path);
    buf_puts(c, blob ? ", its tables in the weights blob) ---- */\n" : ") ---- */\n\n");
    if (blob) {
      put_blob_tables(e, &t, prefix, name);
    } else {
      for (int k = 0; k < count; k++) { /* clear of the model's own names when there is a model */
        snprintf(fixed[k], sizeof fixed[k], "%s_%s", prefix, table_field[k]);
        name[k] = e ? cname_unique(e->names, fixed[k], "w") : fixed[k];
      }
      put_tables(c, &t, name, P);
    }
    put_accessor(c, name, prefix, blob, count);
    put_header(h, &t, prefix, P, blob);
    free((void *)P);
  }
  free(t.len);
  free(t.bytes);
  free(t.offset);
  free(t.slots);
  free(t.merges);
  return ok;
}

/* ---- from a GGUF file ----------------------------------------------------------- */

bool tokenizer_present(const Gguf *gg) {
  const char *m = gguf_kv_string(gguf_kv(gg, "tokenizer.ggml.model"), NULL);
  return m && (!strcmp(m, "gpt2") || !strcmp(m, "llama"));
}

/* An array of strings: pointers and lengths (heap), or false + d. An absent
 * key is an empty array when optional. */
static bool string_array(const Gguf *gg, const char *key, bool optional, const char ***s, size_t **len, int *n,
                         Diag *d) {
  const GgufKV *kv = gguf_kv(gg, key);
  GgufType elem;
  uint64_t count = 0;
  *n = 0;
  if (!kv && optional)
    return true;
  if (!gguf_kv_array(kv, &elem, &count) || elem != GGUF_STRING)
    return tok_error(d, gg->path, "key '%s' is %s; expected an array of strings", key,
                      kv ? gguf_type_name(kv->v.type) : "absent");
  if (count > INT32_MAX / 3)
    return tok_error(d, gg->path, "key '%s' has %llu items; expected at most %d", key, (unsigned long long)count,
                      INT32_MAX / 3);
  *s = calloc(count + 1, sizeof **s);
  *len = calloc(count + 1, sizeof **len);
  KILN_ASSERT(*s && *len);
  for (uint64_t i = 0; i < count; i++)
    (*s)[i] = gguf_array_string(&kv->v, i, &(*len)[i]);
  *n = (int)count;
  return true;
}

/* an optional token id key: -1 when absent */
static bool id_key(const Gguf *gg, const char *key, int64_t *id, Diag *d) {
  const GgufKV *kv = gguf_kv(gg, key);
  *id = -1;
  if (kv && !gguf_kv_int(kv, id))
    return tok_error(d, gg->path, "key '%s' is %s; expected an integer token id", key, gguf_type_name(kv->v.type));
  return true;
}

bool tokenizer_emit(const Gguf *gg, const char *prefix, Emit *e, Buf *c, Buf *h, Diag *d) {
  TokVocab v = {.path = gg->path};
  v.model = gguf_kv_string(gguf_kv(gg, "tokenizer.ggml.model"), NULL);
  v.pre = gguf_kv_string(gguf_kv(gg, "tokenizer.ggml.pre"), NULL);
  const GgufKV *add_bos = gguf_kv(gg, "tokenizer.ggml.add_bos_token");
  const GgufKV *add_space = gguf_kv(gg, "tokenizer.ggml.add_space_prefix");
  const GgufKV *types = gguf_kv(gg, "tokenizer.ggml.token_type");
  const GgufKV *scores = gguf_kv(gg, "tokenizer.ggml.scores");
  float *score = NULL;
  v.has_chat_template = gguf_kv(gg, "tokenizer.chat_template") != NULL;
  const char **tokens = NULL, **merges = NULL;
  size_t *token_len = NULL, *merge_len = NULL;
  int32_t *type = NULL;
  bool spm = v.model && !strcmp(v.model, "llama");
  v.add_space_prefix = spm; /* SentencePiece's default */
  bool ok = string_array(gg, KEY_TOKENS, false, &tokens, &token_len, &v.ntokens, d) &&
            string_array(gg, KEY_MERGES, spm, &merges, &merge_len, &v.nmerges, d) &&
            id_key(gg, "tokenizer.ggml.bos_token_id", &v.bos, d) &&
            id_key(gg, "tokenizer.ggml.eos_token_id", &v.eos, d) &&
            id_key(gg, "tokenizer.ggml.unknown_token_id", &v.unk, d) &&
            id_key(gg, "tokenizer.ggml.padding_token_id", &v.pad, d);
  if (ok && add_bos && !gguf_kv_bool(add_bos, &v.add_bos))
    ok = tok_error(d, gg->path, "key 'tokenizer.ggml.add_bos_token' is %s; expected a bool", gguf_type_name(add_bos->v.type));
  if (ok && add_space && !gguf_kv_bool(add_space, &v.add_space_prefix))
    ok = tok_error(d, gg->path, "key 'tokenizer.ggml.add_space_prefix' is %s; expected a bool",
                   gguf_type_name(add_space->v.type));
  if (ok && spm && scores) {
    GgufType elem;
    uint64_t n = 0;
    if (!gguf_kv_array(scores, &elem, &n) || n != (uint64_t)v.ntokens)
      ok = tok_error(d, gg->path, "key 'tokenizer.ggml.scores' is %s of %llu items; expected an array of %d numbers",
                     gguf_type_name(scores->v.type), (unsigned long long)n, v.ntokens);
    score = calloc((size_t)v.ntokens + 1, sizeof *score);
    KILN_ASSERT(score);
    for (int i = 0; ok && i < v.ntokens; i++) {
      double x;
      if (!gguf_array_float(&scores->v, (uint64_t)i, &x) || !isfinite(x))
        ok = tok_error(d, gg->path, "key 'tokenizer.ggml.scores': item %d is not a finite number", i);
      score[i] = (float)x;
    }
    v.scores = score;
  }
  if (ok && types) {
    GgufType elem;
    uint64_t n = 0;
    if (!gguf_kv_array(types, &elem, &n) || n != (uint64_t)v.ntokens)
      ok = tok_error(d, gg->path, "key 'tokenizer.ggml.token_type' is %s of %llu items; expected an array of %d integers",
                      gguf_type_name(types->v.type), (unsigned long long)n, v.ntokens);
    type = calloc((size_t)v.ntokens + 1, sizeof *type);
    KILN_ASSERT(type);
    for (int i = 0; ok && i < v.ntokens; i++) {
      int64_t x;
      if (!gguf_array_int(&types->v, (uint64_t)i, &x) || x < INT32_MIN || x > INT32_MAX)
        ok = tok_error(d, gg->path, "key 'tokenizer.ggml.token_type': item %d is not an integer type", i);
      type[i] = (int32_t)x;
    }
    v.types = type;
  }
  v.tokens = tokens;
  v.token_len = token_len;
  v.merges = merges;
  v.merge_len = merge_len;
  ok = ok && tokenizer_emit_vocab(&v, prefix, e, c, h, d);
  free(tokens);
  free(token_len);
  free(merges);
  free(merge_len);
  free(type);
  free(score);
  return ok;
}
